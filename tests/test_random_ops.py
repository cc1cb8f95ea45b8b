"""Random ops in SavedModels give TensorFlow's numbers call after call.

Stateful random ops keep a generator per node that each run moves on, and a
tf.random.Generator keeps its state in a variable; so calls 1, 2, 3 of one loaded model give
different numbers, each TensorFlow's (recorded by tests/data/models/make_models_random.py).
Stateless ops give the same numbers on every call.
"""
from __future__ import annotations

import base64
import functools
import json

import numpy as np
import pytest
from google.protobuf import text_format

from conftest import DATA
from savedmodel.protos import node_def_pb2
from savedmodel.runtime import load, native, registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.dtypes import from_name
from savedmodel.runtime.executor import Context
from savedmodel.runtime.resources import ResourceManager

MODELS = DATA / "models"
ENGINES = ["numpy", pytest.param("native", marks=pytest.mark.skipif(
    not native.available(), reason="the native engine is not built in this installation"))]


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
            # arithmetic on the random numbers (x + u * (max - min) + min) may be fused by
            # TensorFlow's graph optimizer: within a unit in the last place
            np.testing.assert_allclose(actual, expected, rtol=2e-7, atol=1e-7, err_msg=f"{where}: {key}")
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=f"{where}: {key}")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["random_stateful", "random_generator"])
def test_calls_in_a_row_give_tensorflows_numbers(name, engine):
    model = load(MODELS / name, engine=engine)
    assert model.engine == engine
    for signature, calls in _calls(name).items():
        for index, (feeds, expected) in enumerate(calls):
            outputs = model.signatures[signature](**feeds)
            _assert_equal(outputs, expected, f"{name}:{signature} call {index}")


def test_stateful_outputs_change_between_calls():
    calls = _calls("random_stateful")["draw"]
    assert not np.array_equal(calls[0][1]["normal"], calls[1][1]["normal"])


@pytest.mark.parametrize("engine", ENGINES)
def test_each_loaded_model_starts_its_generators_afresh(engine):
    first = load(MODELS / "random_stateful", engine=engine).signatures["half"]()
    again = load(MODELS / "random_stateful", engine=engine).signatures["half"]()
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


@functools.lru_cache(maxsize=1)
def _fixture_arrays() -> dict:
    return dict(np.load(DATA / "ops" / "random.npz"))


def _stored(stored: dict) -> np.ndarray:
    if stored["dtype"] == "string":
        return np.array([base64.b64decode(s) for s in stored["b64"]], object).reshape(stored["shape"])
    raw = _fixture_arrays()[stored["key"]]
    return raw.view(from_name(stored["dtype"]).numpy).reshape(stored["shape"])


def _records() -> list[dict]:
    return json.loads((DATA / "ops" / "random.json").read_text())


def _recorded(case_id: str) -> np.ndarray:
    """Output 0 of an op fixture case (tests/data/ops/random.json, recorded by TensorFlow)."""
    return _stored(next(r for r in _records() if r["id"] == case_id)["outputs"][0])


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype == object:
        return got.shape == want.shape and got.tolist() == want.tolist()
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def test_every_random_fixture_is_matched_bit_for_bit():
    """test_kernels compares floats within a tolerance; random numbers are TensorFlow's exactly
    (normals too, on the C library TensorFlow uses: glibc here)."""
    differing = []
    for record in _records():
        if record.get("error"):
            continue
        node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
        found = registry.lookup(node.op)
        inputs = [_stored(stored) for stored in record["inputs"]]
        if found.context:
            inputs.insert(0, Context(None, ResourceManager()))
        outputs = found.fn(*inputs, **decode_attrs(node.attr, node.name))
        if any(not _same_bits(got, _stored(want)) for got, want in zip(outputs, record["outputs"])):
            differing.append(record["id"])
    assert differing == []


def test_seeded_authoring_ops_give_tensorflows_numbers(monkeypatch):
    """sm.random.uniform(seed=42) is TensorFlow's RandomUniform with seeds (87654321, 42) (no
    global seed), eagerly and traced; eagerly, the next call gives the next numbers."""
    import savedmodel as sm
    from savedmodel.runtime.kernels import random

    monkeypatch.setattr(random, "_EAGER_STATES", {})
    expected = _recorded("RandomUniform/seed_both")
    first = sm.random.uniform([7], seed=42).numpy()
    np.testing.assert_array_equal(first, expected)
    assert not np.array_equal(sm.random.uniform([7], seed=42).numpy(), first)
    traced = sm.function(lambda: sm.random.uniform([7], seed=42))
    np.testing.assert_array_equal(traced().numpy(), expected)


def test_without_a_c_math_library_normals_are_within_a_unit_in_the_last_place(monkeypatch):
    """Where ctypes cannot load the C library, Box-Muller's functions are the correctly rounded
    ones: TensorFlow's values but for the last bit of a few."""
    from savedmodel.runtime.kernels import random

    monkeypatch.setattr(random, "_c_library_function", lambda name: None)
    for case_id in ("StatelessRandomNormal/float32_long", "StatelessTruncatedNormalV2/float64_long"):
        record = next(r for r in _records() if r["id"] == case_id)
        node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
        inputs = [_stored(stored) for stored in record["inputs"]]
        got = registry.lookup(node.op).fn(*inputs, **decode_attrs(node.attr, node.name))[0]
        want = _stored(record["outputs"][0])
        np.testing.assert_array_max_ulp(got, want, maxulp=4)
