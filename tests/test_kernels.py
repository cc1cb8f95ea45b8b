"""Every kernel against TensorFlow's outputs on the same inputs.

Fixtures in tests/data/ops were recorded with TensorFlow by make_op_fixtures.py: the NodeDef
TensorFlow built (so attrs, defaults included, are TensorFlow's), the inputs and the outputs.
Each case runs the NodeDef's kernel with attrs decoded as the runtime decodes them.
"""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from google.protobuf import text_format

from conftest import DATA
from savedmodel.protos import node_def_pb2
from savedmodel.runtime import dtypes, registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.errors import SavedModelError

OPS = DATA / "ops"
TOLERANCE = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6), "float16": (2e-3, 1e-3),
             "bfloat16": (1e-2, 1e-2), "complex64": (1e-5, 1e-6), "complex128": (1e-10, 1e-12)}


def _cases():
    found = []
    for path in sorted(OPS.glob("*.json")):
        arrays = np.load(path.with_suffix(".npz"))
        for record in json.loads(path.read_text()):
            found.append(pytest.param(record, arrays, id=record["id"]))
    return found


def _array(stored: dict, arrays) -> np.ndarray:
    if stored["dtype"] == "string":
        flat = np.empty(len(stored["b64"]), dtype=object)
        flat[:] = [base64.b64decode(s) for s in stored["b64"]]
        return flat.reshape(stored["shape"])
    dtype = dtypes.from_name(stored["dtype"]).numpy
    return arrays[stored["key"]].view(dtype).reshape(stored["shape"])


def _assert_close(actual, expected: np.ndarray, record: dict, index: int) -> None:
    actual = np.asarray(actual)
    where = f"{record['id']} output {index}"
    assert actual.shape == expected.shape, where
    if expected.dtype == object:
        assert actual.dtype == object and actual.tolist() == expected.tolist(), where
        return
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    name = dtypes.from_numpy(expected.dtype).name
    if name not in TOLERANCE:
        np.testing.assert_array_equal(actual, expected, err_msg=where)
        return
    rtol, atol = TOLERANCE[name]
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(actual.astype(wide), expected.astype(wide), equal_nan=True,
                               rtol=record["rtol"] or rtol, atol=record["atol"] or atol, err_msg=where)


@pytest.mark.parametrize("record, arrays", _cases())
def test_kernel_matches_tensorflow(record, arrays):
    node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
    kernel = registry.lookup(node.op, node.name)
    attrs = decode_attrs(node.attr, node.name)
    inputs = [_array(stored, arrays) for stored in record["inputs"]]
    # The run loop silences floating-point warnings once per run; kernels rely on it.
    with np.errstate(all="ignore"):
        if record.get("error"):
            with pytest.raises(SavedModelError):
                kernel.fn(*inputs, **attrs)
            return
        outputs = kernel.fn(*inputs, **attrs)
    assert isinstance(outputs, tuple), f"{record['id']}: kernels return a tuple"
    expected = [_array(stored, arrays) for stored in record["outputs"]]
    assert len(outputs) == len(expected), record["id"]
    for i, (actual, want) in enumerate(zip(outputs, expected)):
        assert isinstance(actual, np.ndarray), (
            f"{record['id']} output {i}: kernels return arrays, not {type(actual).__name__}")
        _assert_close(actual, want, record, i)


def test_fixtures_exist():
    assert len(_cases()) > 0
