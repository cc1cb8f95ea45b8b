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
from savedmodel.runtime.executor import Context
from savedmodel.runtime.resources import ResourceManager

OPS = DATA / "ops"
TOLERANCE = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6), "float16": (2e-3, 1e-3),
             "bfloat16": (1e-2, 1e-2), "complex64": (1e-5, 1e-6), "complex128": (1e-10, 1e-12)}
"""(rtol, atol) by dtype for element-wise kernels; sums get summation_bound on top."""
SUMMING_OPS = frozenset({
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "Conv2D",
    "Conv2DBackpropInput", "DepthwiseConv2dNative", "Sum", "Mean", "AvgPool", "Cumsum", "L2Loss"})
"""Ops whose outputs are sums of terms linear in each float input (products of input elements,
or the elements themselves), rounded in an order that depends on the BLAS build and on the
kernel OpenBLAS picks for the CPU (see summation_bound)."""


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


def summation_bound(kernel, inputs: list, attrs: dict, index: int, dtype: np.dtype) -> np.ndarray:
    """How far two float sums of the same terms may be apart, per output element.

    A sum of K terms computed in any order (one by one, pairwise, blocked, with FMA) is within
    gamma_K * sum|terms| of the exact sum, gamma_K ~ K*u with u the unit roundoff; rounding
    errors of independent order are typically within sqrt(K)*u*sum|terms|. Our kernel and
    TensorFlow's each round once, so they may differ by twice that. sum|terms| per element is
    the kernel run on |inputs| (the terms are linear in each input, see SUMMING_OPS); K is at
    most the size of the largest float input. A cancelling sum of large terms near zero (a
    Conv2D output of 1e-6 from terms of 40) needs this; a fixed atol passes on one CPU only.
    """
    magnitudes = [np.abs(a).astype(a.dtype) if a.dtype.kind in "fc" else a for a in inputs]
    with np.errstate(all="ignore"):
        terms = np.abs(np.asarray(kernel.fn(*magnitudes, **attrs)[index])).astype(np.float64)
    terms_count = max(a.size for a in inputs if a.dtype.kind in "fc")
    unit_roundoff = np.finfo(dtype).eps / 2
    return 2 * np.sqrt(terms_count) * unit_roundoff * terms


def _assert_close(actual, expected: np.ndarray, record: dict, index: int,
                  bound: np.ndarray | float = 0.0) -> None:
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
    got, want = actual.astype(wide), expected.astype(wide)
    limit = (record["atol"] or atol) + bound + (record["rtol"] or rtol) * np.abs(want)
    with np.errstate(invalid="ignore"):
        close = (got == want) | (np.abs(got - want) <= limit) | (np.isnan(got) & np.isnan(want))
    if not close.all():
        worst = np.unravel_index(np.argmax(np.where(close, -np.inf, np.abs(got - want) - limit)), got.shape)
        raise AssertionError(f"{where}: {np.count_nonzero(~close)} of {close.size} elements differ beyond "
                             f"the tolerance; at {tuple(map(int, worst))}: {got[worst]} != {want[worst]} "
                             f"(allowed {limit[worst] if np.ndim(limit) else limit:.3g})")


@pytest.mark.parametrize("record, arrays", _cases())
def test_kernel_matches_tensorflow(record, arrays):
    node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
    kernel = registry.lookup(node.op, node.name)
    attrs = decode_attrs(node.attr, node.name)
    inputs = [_array(stored, arrays) for stored in record["inputs"]]
    if kernel.context:  # a fresh model's state: a stateful random op's first run
        inputs.insert(0, Context(None, ResourceManager()))
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
        summed = node.op in SUMMING_OPS and want.dtype.kind in "fc"
        bound = summation_bound(kernel, inputs, attrs, i, want.dtype) if summed else 0.0
        _assert_close(actual, want, record, i, bound)


def test_fixtures_exist():
    assert len(_cases()) > 0
