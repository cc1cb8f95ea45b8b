"""Keras 3's random augmentation layers in SavedModels (tests/data/models/
make_models_keras_augment.py): calls in a row on one loaded model give TensorFlow's numbers,
the layers' seed states moving on between calls as TensorFlow moves them."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import DATA
from savedmodel.runtime import load

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


@pytest.mark.parametrize("name", ["keras_augment", "keras_augment_training"])
def test_calls_in_a_row_give_tensorflows_numbers(name):
    model = load(MODELS / name, engine="numpy")
    for signature, calls in _calls(name).items():
        previous = None
        for index, (feeds, expected) in enumerate(calls):
            outputs = model.signatures[signature](**feeds)
            for key, want in expected.items():
                # rotations' sin/cos and the bilinear weights: float32 rounding, not other pixels
                np.testing.assert_allclose(outputs[key], want, rtol=1e-5, atol=1e-3,
                                           err_msg=f"{name}:{signature} call {index}: {key}")
            if previous is not None:
                assert any(not np.array_equal(outputs[k], previous[k]) for k in outputs), \
                    f"{name}: call {index} drew the same numbers as the call before"
            previous = outputs
