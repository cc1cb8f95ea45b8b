"""Kernels for ops that build, reshape, combine and slice tensors without computing on values.

Shape-like inputs (shapes, permutations, paddings, slice bounds) arrive as int32 or int64 tensors
and are validated the way TensorFlow validates them at run time, so a graph fed bad values fails
with a KernelError here where TensorFlow fails with InvalidArgument. Index arithmetic that depends
only on shapes and attrs is cached, since graphs mostly run with the same shapes again and again.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import kernel

_CACHE = 256


def _int_vector(value, what: str) -> tuple[int, ...]:
    """A 1-D integer tensor as ints: how ops take shapes, axes lists and bounds."""
    array = np.asarray(value)
    check(array.ndim == 1 and array.dtype.kind in "iu",
          f"{what} must be a 1-D integer tensor, got shape {list(array.shape)} of {array.dtype}")
    return tuple(array.tolist())


def _scalar(value, what: str, legacy: bool = False) -> np.ndarray:
    """A 0-d array from a tensor that must hold one value. Some TensorFlow kernels also accept a
    1-element vector there (`legacy`); the others reject it, and so do these kernels."""
    array = np.asarray(value)
    check(array.ndim == 0 or legacy and array.shape == (1,),
          f"{what} must be a scalar, got shape {list(array.shape)}")
    return array.reshape(())


def _int(value, what: str, legacy: bool = False) -> int:
    array = _scalar(value, what, legacy)
    check(array.dtype.kind in "iu", f"{what} must be an integer, got {array.dtype}")
    return int(array)


def _axis(axis: int, rank: int, what: str) -> int:
    """A non-negative axis of a tensor of `rank`; unlike reductions, these ops have no axis 0 on
    a scalar."""
    check(-rank <= axis < rank, f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


def _empty_of(dtype: np.dtype) -> object:
    """The value TensorFlow fills with when it pads or zeroes: 0, False or the empty string."""
    return b"" if dtype.kind == "O" else np.zeros((), dtype)


# Shapes ---------------------------------------------------------------------------------------

@kernel("Shape")
def shape(input, *, out_type=None, **_) -> tuple[np.ndarray]:
    return (_shape_array(np.shape(input), out_type),)


@kernel("ShapeN")
def shape_n(*inputs, out_type=None, **_) -> tuple[np.ndarray, ...]:
    return tuple(_shape_array(np.shape(x), out_type) for x in inputs)


@kernel("Size")
def size(input, *, out_type=None, **_) -> tuple[np.ndarray]:
    return (np.array(np.size(input), _index_dtype(out_type)),)


@kernel("Rank")
def rank(input, **_) -> tuple[np.ndarray]:
    return (np.array(np.ndim(input), np.int32),)


def _index_dtype(out_type) -> np.dtype:
    """Shape, ShapeN and Size default to int32 when the attr is absent."""
    return np.dtype(np.int32) if out_type is None else out_type.numpy


def _shape_array(dims: tuple[int, ...], out_type) -> np.ndarray:
    dtype = _index_dtype(out_type)
    check(dtype != np.int32 or all(d <= np.iinfo(np.int32).max for d in dims),
          f"shape {list(dims)} cannot be represented as int32; use out_type=int64")
    return np.array(dims, dtype)


@kernel("Reshape")
def reshape(tensor, shape, **_) -> tuple[np.ndarray]:
    tensor = np.asarray(tensor)
    sizes = np.asarray(shape)
    check(sizes.ndim <= 1 and sizes.dtype.kind in "iu",
          f"Reshape: shape must be a 1-D integer tensor, got shape {list(sizes.shape)}")
    return (tensor.reshape(_reshape_dims(tensor.shape, tuple(sizes.reshape(-1).tolist()))),)


@functools.lru_cache(maxsize=_CACHE)
def _reshape_dims(source: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Resolve the one -1 the way TensorFlow does: zero-size dimensions are left out of both
    products when the requested shape has one, so that `[0, -1]` still infers the other size."""
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise KernelError(f"Reshape: only one input size may be -1, not both {unknown[0]} and "
                          f"{unknown[1]}")
    for i, s in enumerate(sizes):
        check(s >= -1, f"Reshape: size {i} must be non-negative, not {s}")
    dims = list(sizes)
    if unknown:
        wants_zero = 0 in sizes
        known = math.prod(s for s in sizes if s > 0)
        available = math.prod(d for d in source if d > 0 or not wants_zero)
        dims[unknown[0]] = available // known
        check(0 in source and wants_zero or dims[unknown[0]] * known == available,
              f"Reshape: input to reshape is a tensor with {math.prod(source)} values, but the "
              f"requested shape requires a multiple of {known}")
    check(math.prod(dims) == math.prod(source),
          f"Reshape: input to reshape is a tensor with {math.prod(source)} values, but the "
          f"requested shape {list(sizes)} has {math.prod(dims)}")
    return tuple(dims)


@kernel("ExpandDims")
def expand_dims(input, dim, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    axis = scalar_int(dim, "ExpandDims: dim")
    check(-input.ndim - 1 <= axis <= input.ndim,
          f"ExpandDims: dim {axis} is out of range for a tensor of rank {input.ndim}")
    return (np.expand_dims(input, axis if axis >= 0 else axis + input.ndim + 1),)


@kernel("Squeeze")
def squeeze(input, *, squeeze_dims=(), **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    if not squeeze_dims:
        return (input.reshape(tuple(d for d in input.shape if d != 1)),)
    axes = {_axis(a, input.ndim, "Squeeze: squeeze_dims") for a in squeeze_dims}
    for axis in sorted(axes):
        check(input.shape[axis] == 1, f"Squeeze: can not squeeze dim[{axis}], expected a "
              f"dimension of 1, got {input.shape[axis]} (input shape {list(input.shape)})")
    return (input.reshape(tuple(d for i, d in enumerate(input.shape) if i not in axes)),)


@kernel("BroadcastTo")
def broadcast_to(input, shape, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    target = _int_vector(shape, "BroadcastTo: shape")
    check(all(d >= 0 for d in target), f"BroadcastTo: shape {list(target)} has a negative size")
    check(_broadcast_shape(input.shape, target) == target,
          f"BroadcastTo: unable to broadcast tensor of shape {list(input.shape)} to tensor of "
          f"shape {list(target)}")
    return (np.array(np.broadcast_to(input, target)),)


@kernel("BroadcastArgs")
def broadcast_args(s0, s1, **_) -> tuple[np.ndarray]:
    first = _int_vector(s0, "BroadcastArgs: s0")
    second = _int_vector(s1, "BroadcastArgs: s1")
    return (np.array(_broadcast_shape(first, second), np.asarray(s0).dtype),)


def _broadcast_shape(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(first, second))
    except ValueError:
        raise KernelError(f"Incompatible shapes: {list(first)} vs. {list(second)}") from None


# Transposes and reversal ----------------------------------------------------------------------

@kernel("Transpose")
def transpose(x, perm, **_) -> tuple[np.ndarray]:
    x = np.asarray(x)
    return (np.transpose(x, _permutation(perm, x.ndim)),)


@kernel("ConjugateTranspose")
def conjugate_transpose(x, perm, **_) -> tuple[np.ndarray]:
    x = np.asarray(x)
    moved = np.transpose(x, _permutation(perm, x.ndim))
    return (np.asarray(np.conj(moved)) if x.dtype.kind == "c" else moved,)


def _permutation(perm, rank: int) -> tuple[int, ...]:
    axes = _int_vector(perm, "Transpose: perm")
    check(len(axes) == rank, f"Transpose: perm {list(axes)} has {len(axes)} entries for a "
          f"tensor of rank {rank}")
    check(sorted(a + rank if a < 0 else a for a in axes) == list(range(rank)),
          f"Transpose: {list(axes)} is not a valid permutation of {rank} dimensions")
    return tuple(a + rank if a < 0 else a for a in axes)


@kernel("ReverseV2")
def reverse_v2(tensor, axis, **_) -> tuple[np.ndarray]:
    """A scalar comes back unchanged whatever `axis` says, as in TensorFlow."""
    tensor = np.asarray(tensor)
    if tensor.ndim == 0:
        return (tensor,)
    axes = [_axis(a, tensor.ndim, "ReverseV2: axis")
            for a in _int_vector(axis, "ReverseV2: axis")]
    check(len(set(axes)) == len(axes), f"ReverseV2: an axis is specified more than once in "
          f"{list(_int_vector(axis, 'axis'))}")
    return (np.flip(tensor, tuple(axes)) if axes else tensor,)


# Joining and splitting ------------------------------------------------------------------------

@kernel("ConcatV2")
def concat_v2(*args, N: int, **_) -> tuple[np.ndarray]:
    return (_concat(args[:N], args[N]),)


@kernel("Concat")
def concat(concat_dim, *values, **_) -> tuple[np.ndarray]:
    return (_concat(values, concat_dim),)


def _concat(values, axis_value) -> np.ndarray:
    values = [np.asarray(v) for v in values]
    first = values[0]
    check(first.ndim > 0, "ConcatOp: can't concatenate scalars (use tf.stack instead)")
    axis = _axis(_int(axis_value, "ConcatOp: axis", legacy=True), first.ndim, "ConcatOp: axis")
    for i, value in enumerate(values[1:], 1):
        check(value.ndim == first.ndim and all(
            a == b for d, (a, b) in enumerate(zip(first.shape, value.shape)) if d != axis),
              f"ConcatOp: dimensions of inputs should match on all axes but {axis}: shape[0] = "
              f"{list(first.shape)} vs. shape[{i}] = {list(value.shape)}")
    return np.concatenate(values, axis=axis)


@kernel("Pack")
def pack(*values, axis: int = 0, **_) -> tuple[np.ndarray]:
    values = [np.asarray(v) for v in values]
    first = values[0]
    where = _axis(axis, first.ndim + 1, "Pack: axis")
    for i, value in enumerate(values[1:], 1):
        check(value.shape == first.shape, f"Pack: shapes of all inputs must match: values[0]."
              f"shape = {list(first.shape)} != values[{i}].shape = {list(value.shape)}")
    return (np.stack(values, axis=where),)


@kernel("Unpack")
def unpack(value, *, num: int, axis: int = 0, **_) -> tuple[np.ndarray, ...]:
    value = np.asarray(value)
    check(value.ndim > 0, "Unpack: can not unpack a scalar")
    where = _axis(axis, value.ndim, "Unpack: axis")
    check(value.shape[where] == num, f"Unpack: input shape {list(value.shape)} has "
          f"{value.shape[where]} entries along axis {axis}, but num is {num}")
    moved = np.moveaxis(value, where, 0)
    return tuple(moved[i, ...] for i in range(num))


@kernel("Split")
def split(split_dim, value, *, num_split: int, **_) -> tuple[np.ndarray, ...]:
    """One piece is the input itself: TensorFlow then checks neither split_dim nor the shape."""
    value = np.asarray(value)
    if num_split == 1:
        return (value,)
    axis = _axis(_int(split_dim, "Split: split_dim"), value.ndim, "Split: split_dim")
    check(value.shape[axis] % num_split == 0, f"Split: number of ways to split should evenly "
          f"divide the split dimension, but got split_dim {axis} (size = {value.shape[axis]}) "
          f"and num_split {num_split}")
    return tuple(np.split(value, num_split, axis=axis))


@kernel("SplitV")
def split_v(value, size_splits, split_dim, *, num_split: int, **_) -> tuple[np.ndarray, ...]:
    """One piece is the input itself: TensorFlow then checks neither split_dim nor the sizes."""
    value = np.asarray(value)
    if num_split == 1:
        return (value,)
    axis = _axis(_int(split_dim, "SplitV: split_dim", legacy=True), value.ndim,
                 "SplitV: split_dim")
    sizes = _split_sizes(_int_vector(size_splits, "SplitV: size_splits"), value.shape[axis],
                         num_split)
    return tuple(np.split(value, np.cumsum(sizes[:-1]).tolist(), axis=axis))


def _split_sizes(sizes: tuple[int, ...], total: int, count: int) -> list[int]:
    """Resolve the one -1 in `size_splits` to what the others leave of the dimension."""
    check(len(sizes) == count, f"SplitV: size_splits has {len(sizes)} entries, but num_split "
          f"is {count}")
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    check(len(unknown) <= 1, "SplitV: there can only be one -1 in size_splits")
    check(all(s >= -1 for s in sizes), f"SplitV: size_splits {list(sizes)} has a negative size")
    known = sum(s for s in sizes if s != -1)
    resolved = list(sizes)
    if unknown:
        check(known <= total, f"SplitV: size_splits {list(sizes)} add up to more than the size "
              f"{total} of the split dimension")
        resolved[unknown[0]] = total - known
    check(sum(resolved) == total, f"SplitV: size_splits {list(sizes)} must add up to the size "
          f"{total} of the split dimension")
    return resolved


@kernel("Tile")
def tile(input, multiples, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    reps = _int_vector(multiples, "Tile: multiples")
    check(len(reps) == input.ndim, f"Tile: multiples {list(reps)} must have one entry per "
          f"dimension of the input of shape {list(input.shape)}")
    check(all(r >= 0 for r in reps), f"Tile: multiples {list(reps)} must be non-negative")
    return (np.tile(input, reps) if reps else input.copy(),)


# Slicing --------------------------------------------------------------------------------------

@kernel("Slice")
def slice_(input, begin, size, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    starts = _int_vector(begin, "Slice: begin")
    sizes = _int_vector(size, "Slice: size")
    check(len(starts) == input.ndim and len(sizes) == input.ndim,
          f"Slice: begin {list(starts)} and size {list(sizes)} must have one entry per "
          f"dimension of the input of shape {list(input.shape)}")
    index = []
    for i, (start, count, dim) in enumerate(zip(starts, sizes, input.shape)):
        count = dim - start if count == -1 else count
        check(0 <= start <= dim, f"Slice: expected begin[{i}] in [0, {dim}], but got {start}")
        check(0 <= count <= dim - start,
              f"Slice: expected size[{i}] in [0, {dim - start}], but got {sizes[i]}")
        index.append(slice(start, start + count))
    return (input[tuple(index) + (Ellipsis,)],)


@kernel("StridedSlice")
def strided_slice(input, begin, end, strides, *, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    bounds = [np.asarray(v) for v in (begin, end, strides)]
    check(all(b.ndim == 1 and b.dtype.kind in "iu" for b in bounds)
          and bounds[0].shape == bounds[1].shape == bounds[2].shape,
          f"StridedSlice: expected begin, end, and strides to be 1-D integer tensors of equal "
          f"size, but got shapes {[list(b.shape) for b in bounds]}")
    index, final_shape = _strided_plan(input.shape, *(tuple(b.tolist()) for b in bounds),
                                       begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                       shrink_axis_mask)
    return (input[index].reshape(final_shape),)


_NEW_AXIS = -1
_SHRUNK = -2


@functools.lru_cache(maxsize=_CACHE)
def _strided_plan(shape: tuple[int, ...], begin: tuple[int, ...], end: tuple[int, ...],
                  strides: tuple[int, ...], begin_mask: int, end_mask: int, ellipsis_mask: int,
                  new_axis_mask: int, shrink_axis_mask: int) -> tuple[tuple, tuple[int, ...]]:
    """The numpy index and the output shape of a strided slice of a tensor of `shape`.

    TensorFlow first maps the sparse spec (which may hold an ellipsis and new axes) onto one
    entry per input dimension, then clamps each dimension's bounds; `_dense_spec` and
    `_dense_slice` do those two steps."""
    check(ellipsis_mask & (ellipsis_mask - 1) == 0,
          "StridedSlice: multiple ellipses in slice spec not allowed")
    dense, gather = _dense_spec(len(shape), begin, end, strides, begin_mask, end_mask,
                                ellipsis_mask, new_axis_mask, shrink_axis_mask)
    index, sizes = [], []
    for i, (dim, spec) in enumerate(zip(shape, dense)):
        piece, count = _dense_slice(i, dim, *spec)
        index.append(piece)
        sizes.append(count)
    final = tuple(1 if g == _NEW_AXIS else sizes[g] for g in gather if g != _SHRUNK)
    return tuple(index) + (Ellipsis,), final


def _dense_spec(rank: int, begin, end, strides, begin_mask: int, end_mask: int,
                ellipsis_mask: int, new_axis_mask: int, shrink_axis_mask: int):
    """One (begin, end, stride, begin masked, end masked, shrink) per input dimension, and for
    every output dimension the input dimension it comes from (or new axis / shrunk)."""
    sparse = len(begin)
    ellipsis_mask &= (1 << sparse) - 1
    if not ellipsis_mask:
        ellipsis_mask = 1 << sparse
        sparse += 1
    ellipsis_at = ellipsis_mask.bit_length() - 1
    new_after_ellipsis = sum(1 for i in range(ellipsis_at + 1, sparse) if new_axis_mask >> i & 1)
    dense = [(0, 0, 1, True, True, False)] * rank
    gather = []
    full = 0
    for i in range(sparse):
        if ellipsis_mask >> i & 1:
            stop = min(rank - (sparse - i) + 1 + new_after_ellipsis, rank)
            gather += range(full, max(full, stop))
            full = max(full, stop)
        elif new_axis_mask >> i & 1:
            gather.append(_NEW_AXIS)
        else:
            check(full < rank, f"StridedSlice: index out of range using input dim {full}; "
                  f"input has only {rank} dims")
            shrink = bool(shrink_axis_mask >> i & 1)
            dense[full] = (begin[i], end[i], strides[i], bool(begin_mask >> i & 1),
                           bool(end_mask >> i & 1), shrink)
            gather.append(_SHRUNK if shrink else full)
            full += 1
    return dense, gather


def _dense_slice(i: int, dim: int, begin: int, end: int, stride: int, begin_masked: bool,
                 end_masked: bool, shrink: bool) -> tuple[slice, int]:
    """The python slice and element count of one input dimension, clamped as TensorFlow does:
    out-of-range bounds clamp to the ends, masked bounds take the whole range in the stride's
    direction, and a shrunk index must lie inside the dimension."""
    check(stride != 0, f"StridedSlice: strides[{i}] must be non-zero")
    if shrink:
        check(stride > 0, "StridedSlice: only stride 1 allowed on non-range indexing")
        at = begin + dim if begin < 0 else begin
        check(0 <= at < dim, f"StridedSlice: slice index {begin} of dimension {i} out of bounds")
        return slice(at, at + 1), 1
    low, high = (0, dim) if stride > 0 else (-1, dim - 1)

    def clamp(value: int, masked: bool, is_begin: bool) -> int:
        if masked:
            return low if (stride > 0) == is_begin else high
        value = value + dim if value < 0 else value
        return min(max(value, low), high)

    start, stop = clamp(begin, begin_masked, True), clamp(end, end_masked, False)
    span = stop - start
    if span == 0 or (span < 0) != (stride < 0):
        return slice(0, 0), 0
    count = -(-span // stride)
    return slice(start, None if stop < 0 else stop, stride), count


# Padding --------------------------------------------------------------------------------------

@kernel("Pad")
def pad(input, paddings, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    return (_pad_constant(input, _paddings(paddings, input.ndim, "Pad"), _empty_of(input.dtype)),)


@kernel("PadV2")
def pad_v2(input, paddings, constant_values, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    value = _scalar(constant_values, "PadV2: constant_values")
    return (_pad_constant(input, _paddings(paddings, input.ndim, "PadV2"), value),)


@kernel("MirrorPad")
def mirror_pad(input, paddings, *, mode: str, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    check(mode in ("REFLECT", "SYMMETRIC"), f"MirrorPad: unknown mode {mode!r}")
    widths = _paddings(paddings, input.ndim, "MirrorPad")
    reflect = mode == "REFLECT"
    for dim, (before, after) in zip(input.shape, widths):
        check(max(before, after) < dim if reflect else max(before, after) <= dim,
              f"MirrorPad: paddings must be {'less than' if reflect else 'no greater than'} "
              f"the dimension size {dim} in {mode} mode, got {before}, {after}")
    if not any(before or after for before, after in widths):
        return (input.copy(),)
    return (np.pad(input, widths, mode="reflect" if reflect else "symmetric"),)


def _paddings(paddings, rank: int, op: str) -> tuple[tuple[int, int], ...]:
    array = np.asarray(paddings)
    check(array.ndim == 2 and array.shape[1] == 2 and array.dtype.kind in "iu",
          f"{op}: paddings must be an integer matrix with 2 columns, got shape "
          f"{list(array.shape)}")
    check(array.shape[0] == rank, f"{op}: the first dimension of paddings must be the rank of "
          f"the input ({rank}), got paddings of shape {list(array.shape)}")
    check(bool((array >= 0).all()), f"{op}: paddings must be non-negative, got "
          f"{array.tolist()}")
    return tuple((int(a), int(b)) for a, b in array.tolist())


def _pad_constant(input: np.ndarray, widths, value) -> np.ndarray:
    out_shape = tuple(d + a + b for d, (a, b) in zip(input.shape, widths))
    out = np.full(out_shape, value, dtype=input.dtype)
    out[tuple(slice(a, a + d) for d, (a, _) in zip(input.shape, widths)) + (Ellipsis,)] = input
    return out


# Creating tensors -----------------------------------------------------------------------------

@kernel("Fill")
def fill(dims, value, **_) -> tuple[np.ndarray]:
    shape_ = _int_vector(dims, "Fill: dims")
    check(all(d >= 0 for d in shape_), f"Fill: dims {list(shape_)} must be non-negative")
    value = _scalar(value, "Fill: value", legacy=True)
    return (np.full(shape_, value, dtype=value.dtype),)


@kernel("ZerosLike")
def zeros_like(x, **_) -> tuple[np.ndarray]:
    x = np.asarray(x)
    return (np.full(x.shape, _empty_of(x.dtype), dtype=x.dtype),)


@kernel("OnesLike")
def ones_like(x, **_) -> tuple[np.ndarray]:
    x = np.asarray(x)
    return (np.ones(x.shape, dtype=x.dtype),)


@kernel("Range")
def range_(start, limit, delta, **_) -> tuple[np.ndarray]:
    first, stop, step = (_scalar(v, f"Range: {n}", legacy=True) for v, n in
                         ((start, "start"), (limit, "limit"), (delta, "delta")))
    check(step != 0, "Range: requires delta != 0")
    check(step < 0 or first <= stop,
          f"Range: requires start <= limit when delta > 0: {first}/{stop}")
    check(step > 0 or first >= stop,
          f"Range: requires start >= limit when delta < 0: {first}/{stop}")
    dtype = first.dtype
    if dtype.kind in "iu":
        count = -(-abs(int(stop) - int(first)) // abs(int(step)))
        return ((int(first) + int(step) * np.arange(count, dtype=np.int64)).astype(dtype),)
    span = float(np.ceil(np.abs((stop - first) / step)))
    check(math.isfinite(span) and span < 2 ** 63, f"Range: requires (limit - start) / delta "
          f"to be finite and below 2**63: {first}/{stop}/{step}")
    count = int(span)
    return (first + np.arange(count).astype(dtype) * step,)


@kernel("LinSpace")
def lin_space(start, stop, num, **_) -> tuple[np.ndarray]:
    first = _scalar(start, "LinSpace: start")
    last = _scalar(stop, "LinSpace: stop")
    count = _int(num, "LinSpace: num")
    check(count > 0, f"LinSpace: requires num > 0, got {count}")
    if count == 1:
        return (first.reshape(1).copy(),)
    step = (last - first) / np.array(count - 1, first.dtype)
    out = first + step * np.arange(count).astype(first.dtype)
    out[-1] = last
    return (out,)


# Matrices -------------------------------------------------------------------------------------

@kernel("MatrixBandPart")
def matrix_band_part(input, num_lower, num_upper, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    check(input.ndim >= 2, f"MatrixBandPart: input must be at least 2-dim, got shape "
          f"{list(input.shape)}")
    rows, cols = input.shape[-2:]
    lower = _int(num_lower, "MatrixBandPart: num_lower")
    upper = _int(num_upper, "MatrixBandPart: num_upper")
    check(lower <= rows, f"MatrixBandPart: num_lower must be negative or less or equal to "
          f"number of rows ({rows}) got: {lower}")
    check(upper <= cols, f"MatrixBandPart: num_upper must be negative or less or equal to "
          f"number of columns ({cols}) got: {upper}")
    return (np.where(_band(rows, cols, lower, upper), input, _empty_of(input.dtype)),)


@functools.lru_cache(maxsize=_CACHE)
def _band(rows: int, cols: int, lower: int, upper: int) -> np.ndarray:
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    return _frozen(((lower < 0) | (-offset <= lower)) & ((upper < 0) | (offset <= upper)))


_ALIGNMENTS = {"RIGHT_LEFT": (False, True), "LEFT_RIGHT": (True, False),
               "LEFT_LEFT": (True, True), "RIGHT_RIGHT": (False, False)}
"""align attr -> (superdiagonals left-aligned, subdiagonals left-aligned)."""


@kernel("MatrixDiagV3")
def matrix_diag_v3(diagonal, k, num_rows, num_cols, padding_value, *,
                   align: str = "RIGHT_LEFT", **_) -> tuple[np.ndarray]:
    diagonal = np.asarray(diagonal)
    lower, upper = _diag_range(k, "MatrixDiagV3")
    count = upper - lower + 1
    check(diagonal.ndim >= (1 if count == 1 else 2), f"MatrixDiagV3: diagonal of shape "
          f"{list(diagonal.shape)} has too few dimensions for {count} diagonals")
    if count > 1 and diagonal.shape[-2] != count:
        raise KernelError(f"MatrixDiagV3: the number of diagonals provided in the input "
                          f"({diagonal.shape[-2]}) does not match the range [{lower}, {upper}]")
    length = diagonal.shape[-1]
    rows, cols = _diag_matrix_size(length, lower, upper, _int(num_rows, "MatrixDiagV3: num_rows"),
                                   _int(num_cols, "MatrixDiagV3: num_cols"))
    batch = diagonal.shape[:-1] if count == 1 else diagonal.shape[:-2]
    padding = _scalar(padding_value, "MatrixDiagV3: padding_value")
    inside, source = _diag_scatter(rows, cols, lower, upper, length, _alignment(align))
    if diagonal.size == 0 or not inside.any():
        return (np.full(batch + (rows, cols), padding, dtype=diagonal.dtype),)
    packed = diagonal.reshape(batch + (count * length,))
    return (np.where(inside, packed[..., source], padding),)


@kernel("MatrixDiagPartV3")
def matrix_diag_part_v3(input, k, padding_value, *, align: str = "RIGHT_LEFT",
                        **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    check(input.ndim >= 2, f"MatrixDiagPartV3: input must be at least 2-dim, got shape "
          f"{list(input.shape)}")
    rows, cols = input.shape[-2:]
    lower, upper = _diag_range(k, "MatrixDiagPartV3")
    _check_diag_bounds(lower, upper, rows, cols, "MatrixDiagPartV3")
    padding = _scalar(padding_value, "MatrixDiagPartV3: padding_value", legacy=True)
    inside, source = _diag_gather(rows, cols, lower, upper, _alignment(align))
    batch = input.shape[:-2]
    if input.size == 0 or not inside.any():
        out = np.full(batch + inside.shape, padding, dtype=input.dtype)
    else:
        flat = input.reshape(batch + (rows * cols,))
        out = np.where(inside, flat[..., source], padding)
    return (out.reshape(batch + inside.shape[1:]) if lower == upper else out,)


@kernel("MatrixSetDiagV3")
def matrix_set_diag_v3(input, diagonal, k, *, align: str = "RIGHT_LEFT",
                       **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    diagonal = np.asarray(diagonal)
    check(input.ndim >= 2, f"MatrixSetDiagV3: input must be at least 2-dim, got shape "
          f"{list(input.shape)}")
    rows, cols = input.shape[-2:]
    lower, upper = _diag_range(k, "MatrixSetDiagV3")
    _check_diag_bounds(lower, upper, rows, cols, "MatrixSetDiagV3")
    count = upper - lower + 1
    length = max(0, min(rows + min(upper, 0), cols - max(lower, 0)))
    want = input.shape[:-2] + ((length,) if count == 1 else (count, length))
    check(diagonal.shape == want, f"MatrixSetDiagV3: diagonal must have shape {list(want)} for "
          f"input of shape {list(input.shape)} and diagonals [{lower}, {upper}], got "
          f"{list(diagonal.shape)}")
    inside, source = _diag_scatter(rows, cols, lower, upper, length, _alignment(align))
    if diagonal.size == 0 or not inside.any():
        return (input.copy(),)
    packed = diagonal.reshape(input.shape[:-2] + (count * length,))
    return (np.where(inside, packed[..., source], input),)


def _check_diag_bounds(lower: int, upper: int, rows: int, cols: int, op: str) -> None:
    for name, index in (("lower_diag_index", lower), ("upper_diag_index", upper)):
        check(-rows < index < cols or index == 0, f"{op}: {name} is out of bound: {index}. It "
              f"must be between {-rows} and {cols}")


def _alignment(align: str) -> tuple[bool, bool]:
    check(align in _ALIGNMENTS, f"unknown diagonal alignment {align!r}; expected one of "
          f"{', '.join(_ALIGNMENTS)}")
    return _ALIGNMENTS[align]


def _diag_range(k, op: str) -> tuple[int, int]:
    """`k` is one diagonal offset or a [lower, upper] pair."""
    values = np.asarray(k)
    check(values.ndim <= 1 and 1 <= values.size <= 2, f"{op}: k must be a scalar or a vector "
          f"with at most 2 elements, got shape {list(values.shape)}")
    lower, upper = int(values.reshape(-1)[0]), int(values.reshape(-1)[-1])
    check(lower <= upper, f"{op}: lower_diag_index {lower} must not be greater than "
          f"upper_diag_index {upper}")
    return lower, upper


def _diag_matrix_size(length: int, lower: int, upper: int, rows: int,
                      cols: int) -> tuple[int, int]:
    """Infer the matrix size left as -1: the smallest matrix that holds every diagonal."""
    min_rows = length - min(upper, 0)
    min_cols = length + max(lower, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    check(rows >= min_rows, f"MatrixDiagV3: the number of rows ({rows}) is too small for the "
          f"diagonal range [{lower}, {upper}] and diagonal length {length}")
    check(cols >= min_cols, f"MatrixDiagV3: the number of columns ({cols}) is too small for the "
          f"diagonal range [{lower}, {upper}] and diagonal length {length}")
    check(rows == min_rows or cols == min_cols, f"MatrixDiagV3: the number of rows ({rows}) or "
          f"columns ({cols}) is not consistent with the diagonal range [{lower}, {upper}] and "
          f"diagonal length {length}")
    return rows, cols


def _diag_offsets(offsets: np.ndarray, rows: int, cols: int, length: int,
                  alignment: tuple[bool, bool]) -> tuple[np.ndarray, np.ndarray]:
    """Each diagonal's length and where its values start in a packed row of `length`: a
    right-aligned diagonal shorter than the longest one is padded on the left."""
    lengths = np.minimum(rows + np.minimum(offsets, 0), cols - np.maximum(offsets, 0))
    left_super, left_sub = alignment
    left = ((offsets >= 0) & left_super) | ((offsets <= 0) & left_sub)
    return lengths, np.where(left, 0, length - lengths)


@functools.lru_cache(maxsize=_CACHE)
def _diag_scatter(rows: int, cols: int, lower: int, upper: int, length: int,
                  alignment: tuple[bool, bool]) -> tuple[np.ndarray, np.ndarray]:
    """For every matrix element: whether a packed diagonal holds it, and its flat position in
    the packed [diagonals, length] block (row `upper - offset`)."""
    row = np.arange(rows)[:, None]
    col = np.arange(cols)[None, :]
    offset = col - row
    inside = (offset >= lower) & (offset <= upper)
    _, starts = _diag_offsets(offset, rows, cols, length, alignment)
    source = np.where(inside, (upper - offset) * length + np.minimum(row, col) + starts, 0)
    return _frozen(inside), _frozen(source)


@functools.lru_cache(maxsize=_CACHE)
def _diag_gather(rows: int, cols: int, lower: int, upper: int,
                 alignment: tuple[bool, bool]) -> tuple[np.ndarray, np.ndarray]:
    """For every element of the packed [diagonals, length] output: whether it lies in the
    matrix, and the flat matrix position it comes from."""
    length = max(0, min(rows + min(upper, 0), cols - max(lower, 0)))
    offsets = np.arange(upper, lower - 1, -1)[:, None]
    lengths, starts = _diag_offsets(offsets, rows, cols, length, alignment)
    along = np.arange(length)[None, :] - starts
    inside = (along >= 0) & (along < lengths)
    row = along + np.maximum(-offsets, 0)
    col = along + np.maximum(offsets, 0)
    source = np.where(inside, row * cols + col, 0)
    return _frozen(inside), _frozen(source)


def _frozen(array: np.ndarray) -> np.ndarray:
    """Cached index arrays are shared between calls, so nothing may write to them."""
    array.flags.writeable = False
    return array
