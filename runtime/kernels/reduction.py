"""Reductions, arg-reductions, scans and top-k.

Results keep the input's dtype as TensorFlow does: numpy's habit of summing small integers in
int64 is overridden with `dtype=`, so int8 sums wrap like TensorFlow's. float16 and bfloat16
sums, products and means accumulate in float32 and round once (TensorFlow accumulates in half
precision in an order set by Eigen's vectorisation, which cannot be reproduced; the float32
result is the more accurate one). Scans accumulate in the input type, sequentially, exactly as
TensorFlow does.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from math import prod as product

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.math import HALF_TYPES, shape_text, widened
from savedmodel.runtime.kernels.util import scalar_int
from savedmodel.runtime.registry import kernel

Array = np.ndarray


def _reduction_axes(axis, rank: int) -> tuple[int, ...]:
    """Axes from a scalar or vector tensor: negative ones count from the end, and out-of-range
    or repeated axes are errors, as in TensorFlow."""
    if axis.dtype.kind not in "iu":
        raise KernelError("reduction axes must be integers")
    values = axis.tolist() if axis.ndim <= 1 else axis.reshape(-1).tolist()
    return _checked_axes(tuple(values) if type(values) is list else (values,), rank)


@functools.lru_cache(maxsize=256)
def _checked_axes(values: tuple[int, ...], rank: int) -> tuple[int, ...]:
    axes = []
    for value in values:
        if not -rank <= value < rank:
            raise KernelError(f"Invalid reduction dimension ({value} for input with {rank} "
                              "dimension(s)")
        axes.append(value + rank if value < 0 else value)
    if len(set(axes)) != len(axes):
        repeated = next(a for a in axes if axes.count(a) > 1)
        raise KernelError("Invalid reduction arguments: Axes contains duplicate dimension: "
                          f"{repeated}")
    return tuple(axes)


def _reduce(ufunc: np.ufunc, x, axis, keep_dims: bool, **options) -> tuple[Array]:
    """ufunc.reduce over the axes in x's dtype, half types through float32 (calling the ufunc
    directly, as np.sum would, minus its Python wrapper)."""
    axes = _reduction_axes(axis, x.ndim)
    result = ufunc.reduce(x if x.dtype.kind in "iub" else widened(x), axis=axes,
                          keepdims=keep_dims, **options)
    if type(result) is not np.ndarray:
        result = np.asarray(result)
    return (result if result.dtype == x.dtype else result.astype(x.dtype),)


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype= for sums and products: the input's own (numpy would widen small integers,
    where TensorFlow wraps), float32 for half types."""
    return np.dtype(np.float32) if dtype in HALF_TYPES else dtype


_ROW_SUM_TYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_ROW_SUM_MIN_WIDTH = 8


def _row_sum(x: Array, axes: tuple[int, ...], keep_dims: bool) -> Array | None:
    """The sum over `axes` when they are a run of middle axes of a C-contiguous float array
    whose trailing block is at least _ROW_SUM_MIN_WIDTH wide (global pooling over height and
    width, for one): einsum adds the rows of each (middle, trailing) block one after another,
    as numpy's reduction does, several times faster than the reduction's iteration over short
    rows. None when that does not apply."""
    if len(axes) == 0 or x.dtype not in _ROW_SUM_TYPES or not x.flags.c_contiguous:
        return None
    first, last = min(axes), max(axes)
    if first == 0 or last == x.ndim - 1 or last - first + 1 != len(axes):
        return None
    shape = x.shape
    trailing = product(shape[last + 1:])
    if trailing < _ROW_SUM_MIN_WIDTH:
        return None
    sums = np.einsum("abc->ac", x.reshape(product(shape[:first]), -1, trailing))
    kept = shape[:first] + ((1,) * len(axes) if keep_dims else ()) + shape[last + 1:]
    return sums.reshape(kept)


@kernel("Sum")
def sum_(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    if input.dtype in _ROW_SUM_TYPES:
        sums = _row_sum(input, _reduction_axes(axis, input.ndim), keep_dims)
        if sums is not None:
            return (sums,)
    return _reduce(np.add, input, axis, keep_dims, dtype=_accumulator(input.dtype))


@kernel("Prod")
def prod(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    return _reduce(np.multiply, input, axis, keep_dims, dtype=_accumulator(input.dtype))


@functools.lru_cache(maxsize=64)
def _lowest(dtype: np.dtype):
    """Max's identity, which TensorFlow returns for an empty reduction (-inf, INT_MIN...)."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


@functools.lru_cache(maxsize=64)
def _highest(dtype: np.dtype):
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


@kernel("Max")
def max_(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    """NaN wins, as in TensorFlow."""
    return _reduce(np.maximum, input, axis, keep_dims, initial=_lowest(input.dtype))


@kernel("Min")
def min_(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    return _reduce(np.minimum, input, axis, keep_dims, initial=_highest(input.dtype))


@kernel("All")
def all_(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    return _reduce(np.logical_and, input, axis, keep_dims)


@kernel("Any")
def any_(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    return _reduce(np.logical_or, input, axis, keep_dims)


def _count(x: Array, axes: tuple[int, ...]) -> int:
    """How many elements each output of a reduction over `axes` combines."""
    return product(x.shape[a] for a in axes)


def _integer_mean(x: Array, axes: tuple[int, ...], keep_dims: bool) -> Array:
    """TensorFlow sums integers in 64 bits (so int8 means do not overflow, but int64 sums wrap),
    divides toward zero, and gives 0 for an empty reduction."""
    wide = np.uint64 if x.dtype.kind == "u" else np.int64
    total = np.add.reduce(x, axis=axes, keepdims=keep_dims, dtype=wide)
    count = _count(x, axes)
    if count == 0:
        return np.zeros(total.shape, x.dtype)
    divisor = wide(count)
    quotient = total // divisor
    if wide is np.int64:
        quotient += (total % divisor != 0) & (total < 0)
    return np.asarray(quotient).astype(x.dtype)


@kernel("Mean")
def mean(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    """Integer means truncate toward zero; an empty float mean is NaN."""
    x = input
    axes = _reduction_axes(axis, x.ndim)
    if x.dtype.kind in "iu":
        return (_integer_mean(x, axes, keep_dims),)
    total = _row_sum(x, axes, keep_dims)
    if total is None:
        total = np.add.reduce(widened(x), axis=axes, keepdims=keep_dims)
    return (np.asarray(total / _count(x, axes)).astype(x.dtype, copy=False),)


def _scalar_axis(axis, x: Array, what: str) -> int:
    """A non-negative axis from a 0-d tensor; unlike the reductions' axes, TensorFlow rejects a
    1-element vector here, and any axis of a scalar."""
    if np.ndim(axis) != 0:
        raise KernelError(f"{what} must be a scalar")
    value = scalar_int(axis, what)
    if not -x.ndim <= value < x.ndim:
        raise KernelError(f"Expected {what} in the range [{-x.ndim}, {x.ndim}), but got {value}")
    return value + x.ndim if value < 0 else value


def _arg_axis(dimension, x: Array) -> int:
    axis = _scalar_axis(dimension, x, "dimension")
    if x.shape[axis] == 0:
        raise KernelError(f"Reduction axis {axis} is empty in shape {shape_text(x)}")
    return axis


def _arg_reduce(fn: Callable, x, dimension, output_type, nan_as: float) -> tuple[Array]:
    """TensorFlow's arg-reductions skip NaN (NaN compares false against everything); a slice
    of NaN alone answers index 0, as does a slice of NaN and the opposite infinity."""
    x = np.asarray(x)
    axis = _arg_axis(dimension, x)
    if x.dtype.kind == "f" or x.dtype in HALF_TYPES:
        nan = np.isnan(x)
        if nan.any():
            x = np.where(nan, x.dtype.type(nan_as), x)
    dtype = output_type.numpy if output_type is not None else np.dtype(np.int64)
    return (np.asarray(fn(x, axis=axis)).astype(dtype),)


@kernel("ArgMax")
def arg_max(input: Array, dimension: Array, *, output_type=None, **_) -> tuple[Array]:
    return _arg_reduce(np.argmax, input, dimension, output_type, -np.inf)


@kernel("ArgMin")
def arg_min(input: Array, dimension: Array, *, output_type=None, **_) -> tuple[Array]:
    return _arg_reduce(np.argmin, input, dimension, output_type, np.inf)


def _scan(ufunc: np.ufunc, x, axis, exclusive: bool, reverse: bool) -> tuple[Array]:
    """Sequential accumulation in x's own dtype along one axis; `exclusive` starts from the
    identity, `reverse` runs from the end."""
    x = np.asarray(x)
    axis = _scalar_axis(axis, x, "scan axis")
    if x.shape[axis] == 0:
        return (x.copy(),)
    if reverse:
        x = np.flip(x, axis)
    if exclusive:
        first = np.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], ufunc.identity, x.dtype)
        x = np.concatenate([first, np.delete(x, -1, axis=axis)], axis=axis)
    result = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    if reverse:
        result = np.flip(result, axis)
    return (np.ascontiguousarray(result),)


@kernel("Cumsum")
def cumsum(x: Array, axis: Array, *, exclusive: bool = False, reverse: bool = False,
           **_) -> tuple[Array]:
    return _scan(np.add, x, axis, exclusive, reverse)


@kernel("Cumprod")
def cumprod(x: Array, axis: Array, *, exclusive: bool = False, reverse: bool = False,
            **_) -> tuple[Array]:
    return _scan(np.multiply, x, axis, exclusive, reverse)


@kernel("CumulativeLogsumexp")
def cumulative_logsumexp(x: Array, axis: Array, *, exclusive: bool = False,
                         reverse: bool = False, **_) -> tuple[Array]:
    """log(cumsum(exp(x))) without overflow (np.logaddexp, whose identity -inf starts an
    exclusive scan); float16 and bfloat16 accumulate in float32."""
    x = np.asarray(x)
    if x.dtype.kind != "f" and x.dtype not in HALF_TYPES:
        raise KernelError(f"CumulativeLogsumexp: x must be a float tensor, got {x.dtype}")
    if x.dtype not in HALF_TYPES:
        return _scan(np.logaddexp, x, axis, exclusive, reverse)
    return (_scan(np.logaddexp, widened(x), axis, exclusive, reverse)[0].astype(x.dtype),)


@kernel("TopKV2")
def top_k(input: Array, k, *, sorted: bool = True, index_type=None, **_) -> tuple[Array, Array]:
    """The k largest entries of each last-axis row, largest first, equal values in index
    order. TensorFlow's unsorted order (sorted=False) is an artefact of its heap; the sorted
    order is returned instead, which callers asking for no order must accept. NaN sorts above
    every number here; TensorFlow's order for rows holding NaN is inconsistent (its comparator
    is not a strict weak order) and is not reproduced."""
    x = np.asarray(input)
    count = scalar_int(k, "k")
    if count < 0 or x.ndim < 1 or x.shape[-1] < count:
        raise KernelError(f"TopK needs 0 <= k <= the last dimension of an input of rank >= 1: "
                          f"k = {count}, input shape {shape_text(x)}")
    # A stable ascending sort of the reversed row, read backwards, orders values descending and
    # ties by ascending index, without negating (which would overflow integer minima).
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :count]
    indices = (x.shape[-1] - 1) - order
    values = np.take_along_axis(x, indices, axis=-1)
    dtype = index_type.numpy if index_type is not None else np.dtype(np.int32)
    return values, indices.astype(dtype)


@kernel("L2Loss")
def l2_loss(t: Array, **_) -> tuple[Array]:
    """sum(t^2) / 2 as a scalar, half types accumulated in float32."""
    t = np.asarray(t)
    wide = widened(t)
    return (np.asarray(np.sum(wide * wide) / 2).astype(t.dtype),)
