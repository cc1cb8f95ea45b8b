"""Kernels for ops that read or write tensor elements at computed positions.

TensorFlow's CPU kernels reject an index outside its dimension (negative ones included) instead
of wrapping or clamping it; these kernels do the same and name the first bad index, because a
silently wrapped index is the kind of bug a model never reports.
"""
from __future__ import annotations

import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check, normalize_axis
from savedmodel.runtime.registry import kernel

_IGNORE = "IGNORE"
_UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
             8: np.dtype(np.uint64)}
_WHERE_MAX_RANK = 8
"""TensorFlow's Where kernel handles ranks 1 to 8 only."""


def _indices(value, what: str) -> np.ndarray:
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.dtype.kind not in "iu":
        raise KernelError(f"{what} must be an integer tensor, got {array.dtype}")
    return array


def _scalar_int(value, what: str) -> int:
    """An int from a 0-d integer tensor; these kernels reject a 1-element vector, as TF's do."""
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.ndim != 0 or array.dtype.kind not in "iu":
        raise KernelError(f"{what} must be an integer scalar, got shape {list(array.shape)} of "
                          f"{array.dtype}")
    return int(array)


def _first_bad(bad: np.ndarray) -> tuple[int, ...]:
    """Position of the first True in `bad`, for error messages."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape))


# Gather ---------------------------------------------------------------------------------------

@kernel("GatherV2")
def gather_v2(params, indices, axis, *, batch_dims: int = 0, **_) -> tuple[np.ndarray]:
    indices = _indices(indices, "GatherV2: indices")
    if params.ndim < 1:
        raise KernelError("GatherV2: params must be at least 1 dimensional")
    where = normalize_axis(_scalar_int(axis, "GatherV2: axis"), params.ndim, "GatherV2: axis")
    batch = _batch_dims(batch_dims, where, params.shape, indices.shape) if batch_dims else 0
    return (_gather(params, indices, where, batch),)


@kernel("Gather")
def gather(params, indices, **_) -> tuple[np.ndarray]:
    params = np.asarray(params)
    check(params.ndim >= 1, "Gather: params must be at least 1 dimensional")
    return (_gather(params, _indices(indices, "Gather: indices"), 0, 0),)


def _batch_dims(batch_dims: int, axis: int, params_shape: tuple[int, ...],
                indices_shape: tuple[int, ...]) -> int:
    """Validate batch_dims (negative counts from the indices' rank) against axis and shapes."""
    rank = len(indices_shape)
    check(-rank <= batch_dims <= rank, f"GatherV2: expected batch_dims in the range [{-rank}, "
          f"{rank}], but got {batch_dims}")
    batch = batch_dims + rank if batch_dims < 0 else batch_dims
    check(batch <= axis, f"GatherV2: batch_dims ({batch}) must be less than or equal to axis "
          f"({axis})")
    for i in range(batch):
        check(params_shape[i] == indices_shape[i], f"GatherV2: params.shape[{i}]: "
              f"{params_shape[i]} should be equal to indices.shape[{i}]: {indices_shape[i]}")
    return batch


def _gather(params: np.ndarray, indices: np.ndarray, axis: int, batch: int) -> np.ndarray:
    """Gather along `axis` with the first `batch` dimensions shared by params and indices. An
    empty result is returned before any index is checked, as TensorFlow does."""
    lead = params.shape[:batch]
    outer = params.shape[batch:axis]
    inner = params.shape[axis + 1:]
    out_shape = lead + outer + indices.shape[batch:] + inner
    if math.prod(out_shape) == 0:
        return np.empty(out_shape, params.dtype)
    size = params.shape[axis]
    # Negative indices read as unsigned are larger than any size: one reduction checks both ends.
    unsigned = indices.view(_UNSIGNED[indices.dtype.itemsize]) if indices.dtype.kind == "i" \
        else indices
    if np.maximum.reduce(unsigned, axis=None) >= size:
        bad = (indices < 0) | (indices >= size)
        at = _first_bad(bad)
        raise KernelError(f"indices{list(at)} = {indices[at]} is not in [0, {size})")
    if batch == 0:
        taken = params.take(indices, axis=axis)
        return taken if type(taken) is np.ndarray else np.asarray(taken)
    count = math.prod(lead)
    blocks = params.reshape((count, math.prod(outer), size, math.prod(inner)))
    picks = indices.reshape((count, math.prod(indices.shape[batch:])))
    taken = blocks[np.arange(count)[:, None], :, picks]
    return taken.transpose(0, 2, 1, 3).reshape(out_shape)


# N-dimensional indices ------------------------------------------------------------------------

def _nd_positions(indices: np.ndarray, shape: tuple[int, ...], op: str,
                  ignore_bad: bool) -> tuple[np.ndarray, np.ndarray]:
    """Flat offsets into the leading `indices.shape[-1]` dimensions of `shape`, and which index
    rows are out of range (an error unless the op's bad_indices_policy is IGNORE)."""
    check(indices.ndim >= 1, f"{op}: indices must be at least a vector, got a scalar")
    depth = indices.shape[-1]
    check(depth <= len(shape), f"{op}: index depth {depth} (indices.shape[-1]) is greater than "
          f"the rank {len(shape)} of shape {list(shape)}")
    outer = np.array(shape[:depth], np.int64)
    rows = indices.reshape(math.prod(indices.shape[:-1]), depth).astype(np.int64)
    bad = ((rows < 0) | (rows >= outer)).any(axis=1)
    if bad.any() and not ignore_bad:
        at = _first_bad(bad.reshape(indices.shape[:-1]))
        raise KernelError(f"{op}: indices{list(at)} = {indices[at].tolist()} does not index "
                          f"into shape {list(shape)}")
    strides = np.array([math.prod(shape[i + 1:depth]) for i in range(depth)], np.int64)
    return np.where(bad, 0, rows @ strides), bad


def _policy(bad_indices_policy: str, op: str) -> bool:
    """True when out-of-range indices are to be skipped; the default (CPU) policy is an error."""
    check(bad_indices_policy in ("", "DEFAULT", "ERROR", _IGNORE),
          f"{op}: unknown bad_indices_policy {bad_indices_policy!r}")
    return bad_indices_policy == _IGNORE


@kernel("GatherNd")
def gather_nd(params, indices, *, bad_indices_policy: str = "", **_) -> tuple[np.ndarray]:
    params = np.asarray(params)
    indices = _indices(indices, "GatherNd: indices")
    check(params.ndim >= 1, "GatherNd: params must be at least a vector")
    flat, bad = _nd_positions(indices, params.shape, "GatherNd",
                              _policy(bad_indices_policy, "GatherNd"))
    check(params.size > 0 or flat.size == 0, f"GatherNd: requested {flat.size} entries, but "
          f"params of shape {list(params.shape)} is empty")
    depth = indices.shape[-1]
    inner = params.shape[depth:]
    out_shape = indices.shape[:-1] + inner
    if flat.size == 0 or params.size == 0:
        return (np.full(out_shape, b"" if params.dtype.kind == "O" else 0, params.dtype),)
    taken = params.reshape((-1,) + inner)[flat]
    if bad.any():
        taken[bad] = b"" if params.dtype.kind == "O" else 0
    return (taken.reshape(out_shape),)


def _check_scatter(indices: np.ndarray, updates: np.ndarray, shape: tuple[int, ...],
                   op: str) -> None:
    """TensorFlow's scatter kernels take a matrix of index rows, of depth at least 1 unless the
    output is empty (GatherNd also takes a single index vector, and depth 0)."""
    check(indices.ndim >= 2, f"{op}: indices must have rank at least 2 (a batch of index rows), "
          f"got shape {list(indices.shape)}")
    depth = indices.shape[-1]
    want = indices.shape[:-1] + shape[depth:]
    check(updates.shape == want, f"{op}: updates must have shape {list(want)} (indices.shape[:-1] "
          f"+ shape[{depth}:]) for indices of shape {list(indices.shape)} and shape "
          f"{list(shape)}, got {list(updates.shape)}")
    if math.prod(shape) == 0:
        check(indices.size == 0, f"{op}: indices of shape {list(indices.shape)} and updates "
              f"specified for empty output shape {list(shape)}")
    else:
        check(depth >= 1, f"{op}: index rows must not be empty (indices.shape[-1] is 0)")


def _scatter(out: np.ndarray, indices, updates, op: str, policy: str,
             combine: np.ufunc | None) -> np.ndarray:
    """Write `updates` into `out` in place (a later duplicate index wins), or combine them with
    `combine` (np.add, np.subtract, np.fmin, np.fmax: duplicates accumulate), and return out."""
    indices = _indices(indices, f"{op}: indices")
    updates = np.asarray(updates)
    _check_scatter(indices, updates, out.shape, op)
    flat, bad = _nd_positions(indices, out.shape, op, _policy(policy, op))
    depth = indices.shape[-1]
    if flat.size == 0 or out.size == 0:
        return out
    rows = updates.reshape((-1,) + out.shape[depth:])
    if bad.any():
        flat, rows = flat[~bad], rows[~bad]
    target = out.reshape((-1,) + out.shape[depth:])
    if combine is not None:
        combine.at(target, flat, rows)
    else:
        positions, last = np.unique(flat[::-1], return_index=True)
        target[positions] = rows[flat.size - 1 - last]
    return out


@kernel("ScatterNd")
def scatter_nd(indices, updates, shape, *, bad_indices_policy: str = "",
               **_) -> tuple[np.ndarray]:
    updates = np.asarray(updates)
    dims = np.asarray(shape)
    check(dims.ndim == 1 and bool((dims >= 0).all()), f"ScatterNd: shape must be a vector of "
          f"non-negative sizes, got {dims.tolist()}")
    base = np.full(tuple(dims.tolist()), b"" if updates.dtype.kind == "O" else 0, updates.dtype)
    return (_scatter(base, indices, updates, "ScatterNd", bad_indices_policy, np.add),)


def _tensor_scatter(op: str, tensor, indices, updates, policy: str,
                    combine: np.ufunc | None) -> tuple[np.ndarray]:
    base = np.array(tensor, copy=True, order="C")
    return (_scatter(base, indices, updates, op, policy, combine),)


@kernel("TensorScatterUpdate")
def tensor_scatter_update(tensor, indices, updates, *, bad_indices_policy: str = "",
                          **_) -> tuple[np.ndarray]:
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, bad_indices_policy,
                           None)


@kernel("TensorScatterAdd")
def tensor_scatter_add(tensor, indices, updates, *, bad_indices_policy: str = "",
                       **_) -> tuple[np.ndarray]:
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, bad_indices_policy,
                           np.add)


@kernel("TensorScatterSub")
def tensor_scatter_sub(tensor, indices, updates, *, bad_indices_policy: str = "",
                       **_) -> tuple[np.ndarray]:
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, bad_indices_policy,
                           np.subtract)


def _scatter_extremum(op: str, tensor, indices, updates, policy: str,
                      combine: np.ufunc) -> tuple[np.ndarray]:
    """TensorFlow updates an element with `update < element ? update : element` (`>` for
    max): a NaN update never replaces an element and a NaN element is never replaced, which is
    np.fmin (np.fmax) with the tensor's NaNs put back."""
    (out,) = _tensor_scatter(op, tensor, indices, updates, policy, combine)
    if out.dtype.kind in "fc":
        was_nan = np.isnan(np.asarray(tensor))
        out[was_nan] = np.asarray(tensor)[was_nan]
    return (out,)


@kernel("TensorScatterMin")
def tensor_scatter_min(tensor, indices, updates, *, bad_indices_policy: str = "",
                       **_) -> tuple[np.ndarray]:
    return _scatter_extremum("TensorScatterMin", tensor, indices, updates, bad_indices_policy,
                             np.fmin)


@kernel("TensorScatterMax")
def tensor_scatter_max(tensor, indices, updates, *, bad_indices_policy: str = "",
                       **_) -> tuple[np.ndarray]:
    return _scatter_extremum("TensorScatterMax", tensor, indices, updates, bad_indices_policy,
                             np.fmax)


# Encoding and searching -----------------------------------------------------------------------

@kernel("OneHot")
def one_hot(indices, depth, on_value, off_value, *, axis: int = -1, **_) -> tuple[np.ndarray]:
    indices = _indices(indices, "OneHot: indices")
    count = _scalar_int(depth, "OneHot: depth")
    check(count >= 0, f"OneHot: depth must be non-negative, got: {count}")
    check(axis == -1 or 0 <= axis <= indices.ndim, f"OneHot: expected axis to be -1 or between "
          f"[0, {indices.ndim + 1}), but received: {axis}")
    on, off = np.asarray(on_value), np.asarray(off_value)
    check(on.ndim == 0 and off.ndim == 0, "OneHot: on_value and off_value must be scalars")
    hot = indices[..., None] == np.arange(count)
    out = np.where(hot, on, off)
    return (out if axis == -1 else np.ascontiguousarray(np.moveaxis(out, -1, axis)),)


@kernel("Where")
def where(input, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    check(1 <= input.ndim <= _WHERE_MAX_RANK, f"Where: input must have rank 1 to "
          f"{_WHERE_MAX_RANK}, got shape {list(input.shape)}")
    truth = input if input.dtype == np.bool_ else input != np.zeros((), input.dtype)
    return (np.argwhere(truth).astype(np.int64, copy=False),)


@kernel("Unique")
def unique(x, *, out_idx=None, **_) -> tuple[np.ndarray, np.ndarray]:
    values, positions, _ = _unique(x, "Unique", out_idx)
    return values, positions


@kernel("UniqueWithCounts")
def unique_with_counts(x, *, out_idx=None, **_) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _unique(x, "UniqueWithCounts", out_idx)


def _unique(x, op: str, out_idx) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values in order of first occurrence, as TensorFlow's hash-table kernel yields them (numpy
    sorts); every NaN is distinct because NaN never equals itself."""
    x = np.asarray(x)
    check(x.ndim == 1, f"{op}: unique expects a 1D vector, got shape {list(x.shape)}")
    index_type = np.int32 if out_idx is None else out_idx.numpy
    if x.size == 0:
        return x.copy(), np.zeros(0, index_type), np.zeros(0, index_type)
    kwargs = {} if x.dtype.kind == "O" else {"equal_nan": False}
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, **kwargs)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return (x[first[order]], rank[inverse.reshape(-1)].astype(index_type),
            counts[order].astype(index_type))


@kernel("InvertPermutation")
def invert_permutation(x, **_) -> tuple[np.ndarray]:
    x = _indices(x, "InvertPermutation: x")
    check(x.ndim == 1, f"InvertPermutation: invert_permutation expects a 1D vector, got shape "
          f"{list(x.shape)}")
    count = x.size
    bad = (x < 0) | (x >= count)
    if bad.any():
        raise KernelError(f"InvertPermutation: {x[bad][0]} is not between 0 and {count}")
    seen = np.bincount(x, minlength=count)
    if (seen > 1).any():
        raise KernelError(f"InvertPermutation: {np.flatnonzero(seen > 1)[0]} is duplicated in "
                          f"the input")
    out = np.empty(count, x.dtype)
    out[x] = np.arange(count, dtype=x.dtype)
    return (out,)
