"""Random ops in SavedModels give TensorFlow's numbers call after call.

Stateful random ops keep a generator per node that each run moves on, and a
tf.random.Generator keeps its state in a variable; so calls 1, 2, 3 of one loaded model give
different numbers, each TensorFlow's (recorded by tests/data/models/make_models_random.py).
Stateless ops give the same numbers on every call.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import DATA
from savedmodel.runtime import load, registry
from savedmodel.runtime.dtypes import from_name
from savedmodel.runtime.executor import Context
from savedmodel.runtime.resources import ResourceManager

MODELS = DATA / "models"


def _calls(name: str) -> dict[str, list[tuple[dict, dict]]]:
    """signature -> [(inputs, outputs) of call 0, 1, ...]."""
    arrays = np.load(MODELS / f"{name}.calls.npz")
    found: dict[str, dict[int, tuple[dict, dict]]] = {}
    for key in arrays.files:
        signature, call, role, arg = key.split("/")
        feeds, outputs = found.setdefault(signature, {}).setdefault(int(call), ({}, {}))
        (feeds if role == "in" else outputs)[arg] = arrays[key]
    return {s: [calls[i] for i in sorted(calls)] for s, calls in found.items()}


def _assert_equal(got: dict, want: dict, where: str) -> None:
    assert sorted(got) == sorted(want), where
    for key, expected in want.items():
        actual = np.asarray(got[key])
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, f"{where}: {key}"
        if expected.dtype.kind == "f":
            # Box-Muller's log/sin/cos are the C library's in TensorFlow: equal but for the last bit
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7, err_msg=f"{where}: {key}")
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=f"{where}: {key}")


@pytest.mark.parametrize("name", ["random_stateful", "random_generator"])
def test_calls_in_a_row_give_tensorflows_numbers(name):
    model = load(MODELS / name, engine="numpy")
    for signature, calls in _calls(name).items():
        for index, (feeds, expected) in enumerate(calls):
            outputs = model.signatures[signature](**feeds)
            _assert_equal(outputs, expected, f"{name}:{signature} call {index}")


def test_stateful_outputs_change_between_calls():
    calls = _calls("random_stateful")["draw"]
    assert not np.array_equal(calls[0][1]["normal"], calls[1][1]["normal"])


def test_each_loaded_model_starts_its_generators_afresh():
    first = load(MODELS / "random_stateful", engine="numpy").signatures["half"]()
    again = load(MODELS / "random_stateful", engine="numpy").signatures["half"]()
    np.testing.assert_array_equal(first["values"], again["values"])


def _uniform(ctx, seed: int, seed2: int, node_name: str = "u") -> np.ndarray:
    uniform = registry.lookup("RandomUniform").fn
    return uniform(ctx, np.array([6], np.int32), dtype=from_name("float32"), seed=seed, seed2=seed2,
                   node_name=node_name, node_function="f")[0]


def test_a_node_without_seeds_is_seeded_at_random():
    first = _uniform(Context(None, ResourceManager()), 0, 0)
    second = _uniform(Context(None, ResourceManager()), 0, 0)
    assert not np.array_equal(first, second)


def test_nodes_keep_their_own_generators():
    ctx = Context(None, ResourceManager())
    first = _uniform(ctx, 5, 6, "a")
    assert np.array_equal(_uniform(ctx, 5, 6, "b"), first)
    assert not np.array_equal(_uniform(ctx, 5, 6, "a"), first)
