"""Qr, Svd and SelfAdjointEigV2 against TensorFlow's recorded outputs, by what determines them.

A decomposition's vectors are unique only up to a sign (a phase for complex types) per vector,
and within a repeated singular value or eigenvalue only their span is; LAPACK and Eigen choose
differently. So each case checks: values equal to TensorFlow's; the factors' shapes and types;
orthonormal factors that reproduce the input (q r, u diag(s) v^H, v diag(e) v^H); and every
vector equal to TensorFlow's up to a unit factor where its value is simple.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from google.protobuf import text_format

from conftest import DATA
from savedmodel.protos import node_def_pb2
from savedmodel.runtime import dtypes, registry
from savedmodel.runtime.attrs import decode_attrs

RECORDS = DATA / "linalg" / "decompositions.json"
TOLERANCE = {"float16": 2e-2, "float32": 2e-4, "complex64": 2e-4, "float64": 1e-10,
             "complex128": 1e-10}
"""Allowed error relative to the input's largest element, by the input's type."""


def _cases():
    arrays = np.load(RECORDS.with_suffix(".npz"))
    return [pytest.param(record, arrays, id=record["id"])
            for record in json.loads(RECORDS.read_text())]


def _array(stored: dict, arrays) -> np.ndarray:
    return arrays[stored["key"]].view(dtypes.from_name(stored["dtype"]).numpy).reshape(
        stored["shape"])


def _adjoint(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _close(actual, expected, tolerance: float, what: str) -> None:
    np.testing.assert_allclose(np.asarray(actual, np.complex128), np.asarray(expected, np.complex128),
                               rtol=0, atol=tolerance, err_msg=what)


def _orthonormal_columns(x: np.ndarray, tolerance: float, what: str) -> None:
    wide = x.astype(np.complex128)
    _close(_adjoint(wide) @ wide, np.broadcast_to(np.eye(x.shape[-1]), wide.shape[:-2]
                                                  + (x.shape[-1],) * 2), tolerance, what)


def _simple(values: np.ndarray, tolerance: float) -> np.ndarray:
    """Which values (along the last axis) are apart from every other one."""
    gaps = np.where(np.eye(values.shape[-1], dtype=bool), np.inf,
                    np.abs(values[..., :, None] - values[..., None, :]))
    return gaps.min(axis=-1) > 100 * tolerance if values.shape[-1] > 1 else np.ones(
        values.shape, bool)


def _same_up_to_phase(ours: np.ndarray, theirs: np.ndarray, simple: np.ndarray,
                      tolerance: float, what: str) -> None:
    """Column j of `ours` is a unit multiple of column j of `theirs` where `simple[j]`."""
    count = simple.shape[-1]
    overlap = np.abs(np.einsum("...ij,...ij->...j", np.conj(ours[..., :count]).astype(np.complex128),
                               theirs[..., :count].astype(np.complex128)))
    _close(np.where(simple, overlap, 1.0), np.ones(overlap.shape), 10 * tolerance, what)


def _run(record, arrays):
    node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
    attrs = decode_attrs(node.attr, node.name)
    inputs = [_array(stored, arrays) for stored in record["inputs"]]
    outputs = registry.lookup(node.op).fn(*inputs, **attrs)
    expected = [_array(stored, arrays) for stored in record["outputs"]]
    return node.op, attrs, inputs[0], outputs, expected


@pytest.mark.parametrize("record, arrays", _cases())
def test_decomposition_matches_tensorflow(record, arrays):
    op, attrs, x, outputs, expected = _run(record, arrays)
    scale = max(1.0, float(np.abs(x).max())) if x.size else 1.0
    tolerance = TOLERANCE[x.dtype.name] * scale * max(1, x.shape[-1])
    where = record["id"]
    assert len(outputs) == len(expected), where
    for ours, theirs in zip(outputs, expected):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype, where
    {"Qr": _check_qr, "Svd": _check_svd, "SelfAdjointEigV2": _check_eig,
     "Eig": _check_general_eig}[op](
        x, attrs, outputs, expected, tolerance, where)


def _check_qr(x, attrs, outputs, expected, tolerance, where) -> None:
    (q, r), (tf_q, tf_r) = outputs, expected
    assert q.shape == tf_q.shape and r.shape == tf_r.shape, where
    if x.size == 0:
        return
    wide = x.astype(np.complex128)
    _orthonormal_columns(q, tolerance, f"{where}: q is not orthonormal")
    _close(q.astype(np.complex128) @ r, wide, tolerance, f"{where}: q r != input")
    _close(r, np.triu(r), 0, f"{where}: r is not upper triangular")
    _close(np.abs(r), np.abs(tf_r), tolerance, f"{where}: |r| differs from TensorFlow's")
    diagonal = np.abs(np.diagonal(tf_r, axis1=-2, axis2=-1))
    _same_up_to_phase(q, tf_q, diagonal > 100 * tolerance, tolerance,
                      f"{where}: q's columns differ from TensorFlow's beyond a unit factor")


def _check_svd(x, attrs, outputs, expected, tolerance, where) -> None:
    (s, u, v), (tf_s, tf_u, tf_v) = outputs, expected
    assert s.shape == tf_s.shape, where
    _close(s, tf_s, tolerance, f"{where}: singular values differ")
    if not attrs.get("compute_uv", True):
        assert u.shape == tf_u.shape and v.shape == tf_v.shape, where
        return
    assert u.shape == tf_u.shape and v.shape == tf_v.shape, where
    if x.size == 0:
        return
    _orthonormal_columns(u, tolerance, f"{where}: u is not orthonormal")
    _orthonormal_columns(v, tolerance, f"{where}: v is not orthonormal")
    count = s.shape[-1]
    product = (u[..., :count].astype(np.complex128) * s[..., None, :]) @ _adjoint(v[..., :count])
    _close(product, x, tolerance, f"{where}: u diag(s) v^H != input")
    simple = _simple(tf_s, tolerance) & (tf_s > 100 * tolerance)
    _same_up_to_phase(u, tf_u, simple, tolerance, f"{where}: u differs beyond a unit factor")
    _same_up_to_phase(v, tf_v, simple, tolerance, f"{where}: v differs beyond a unit factor")


def _check_eig(x, attrs, outputs, expected, tolerance, where) -> None:
    (e, v), (tf_e, tf_v) = outputs, expected
    assert e.shape == tf_e.shape and v.shape == tf_v.shape, where
    _close(e, tf_e, tolerance, f"{where}: eigenvalues differ")
    if not attrs.get("compute_v", True) or x.size == 0:
        return
    lower = np.tril(x.astype(np.complex128))
    hermitian = lower + _adjoint(np.tril(lower, -1))
    _orthonormal_columns(v, tolerance, f"{where}: v is not orthonormal")
    _close(hermitian @ v, v * e[..., None, :], tolerance, f"{where}: A v != v diag(e)")
    _same_up_to_phase(v, tf_v, _simple(tf_e.real, tolerance), tolerance,
                      f"{where}: v differs beyond a unit factor")


def _check_general_eig(x, attrs, outputs, expected, tolerance, where) -> None:
    """Eig's eigenvalues come in no defined order: ours are matched to TensorFlow's by value."""
    (e, v), (tf_e, tf_v) = outputs, expected
    assert e.shape == tf_e.shape and v.shape == tf_v.shape, where
    if x.size == 0:
        return
    flat_e, flat_tf = e.reshape(-1, e.shape[-1]), tf_e.reshape(-1, e.shape[-1])
    matches = [np.argmin(np.abs(ours[:, None] - theirs[None, :]), axis=0)
               for ours, theirs in zip(flat_e, flat_tf)]
    for order, ours, theirs in zip(matches, flat_e, flat_tf):
        assert sorted(order.tolist()) == list(range(len(order))), f"{where}: eigenvalues differ"
        _close(ours[order], theirs, tolerance, f"{where}: eigenvalues differ")
    if not attrs.get("compute_v", True):
        return
    wide = x.astype(np.complex128)
    _close(wide @ v, v * e[..., None, :], tolerance, f"{where}: A v != v diag(e)")
    _close(np.linalg.norm(v, axis=-2), np.ones(e.shape), tolerance, f"{where}: |v| != 1")
    flat_v, flat_tf_v = v.reshape((-1,) + v.shape[-2:]), tf_v.reshape((-1,) + v.shape[-2:])
    for order, ours, theirs, values in zip(matches, flat_v, flat_tf_v, flat_tf):
        _same_up_to_phase(ours[:, order], theirs, _simple(values, tolerance), tolerance,
                          f"{where}: v differs beyond a unit factor")
