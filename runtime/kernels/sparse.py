"""Kernels of sparse-tensor ops (tf.sparse).

A sparse tensor travels as three tensors: `indices` (n x rank int64, one row per stored value),
`values` (n) and `dense_shape` (rank). TensorFlow's "canonical" order is row-major (indices
sorted lexicographically): ops that merge or group entries walk them in the order given, as
TensorFlow's do, and ops that need the order (SparseToDense) reject indices out of order or
repeated. Each entry's position is handled as a row-major flat index (`_flat`), so sorting,
grouping and scattering are single numpy calls.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check, normalize_axis
from savedmodel.runtime.registry import kernel


def _components(op: str, indices, values, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sparse tensor's components with TensorFlow's shape checks."""
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    check(indices.ndim == 2, f"{op}: indices must be a matrix, got shape {list(indices.shape)}")
    check(values.ndim == 1, f"{op}: values must be a vector, got shape {list(values.shape)}")
    check(shape.ndim == 1, f"{op}: dense_shape must be a vector, got shape {list(shape.shape)}")
    check(len(indices) == len(values), f"{op}: {len(indices)} indices for {len(values)} values")
    check(indices.shape[1] == len(shape), f"{op}: indices have {indices.shape[1]} columns for a dense "
                                          f"shape of rank {len(shape)}")
    return indices.astype(np.int64), values, shape.astype(np.int64)


def _check_bounds(op: str, indices: np.ndarray, shape: np.ndarray) -> None:
    bad = np.any((indices < 0) | (indices >= shape), axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise KernelError(f"{op}: index {indices[i].tolist()} (entry {i}) is out of bounds of the "
                          f"dense shape {shape.tolist()}")


def _flat(indices: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """Each entry's row-major position in the dense tensor (indices within bounds)."""
    strides = np.cumprod(np.concatenate([shape[1:], [1]])[::-1])[::-1]
    return indices @ strides if len(shape) else np.zeros(len(indices), np.int64)


def _check_ordered(op: str, flat: np.ndarray, indices: np.ndarray) -> None:
    step = np.diff(flat)
    if np.any(step <= 0):
        i = int(np.argmax(step <= 0)) + 1
        what = "repeated" if step[i - 1] == 0 else "out of order"
        raise KernelError(f"{op}: index {indices[i].tolist()} (entry {i}) is {what}; many sparse ops "
                          "require sorted indices (use tf.sparse.reorder)")


@kernel("SparseToDense")
def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value, *,
                    validate_indices: bool = True, **_):
    """Scatter values (one, or one per index) into a tensor of `default_value`; indices may be
    a scalar, a vector (positions in a vector) or a matrix (one row per value)."""
    op = "SparseToDense"
    indices, shape, values = np.asarray(sparse_indices), np.asarray(output_shape), np.asarray(sparse_values)
    check(indices.ndim <= 2, f"{op}: sparse_indices must have rank <= 2, got {indices.ndim}")
    check(shape.ndim <= 1, f"{op}: output_shape must have rank <= 1, got {shape.ndim}")
    shape = shape.reshape(-1).astype(np.int64)
    indices = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    count = len(indices)
    check(values.ndim == 0 or values.shape == (count,),
          f"{op}: sparse_values must be a scalar or a vector of {count}, got shape {list(values.shape)}")
    check(np.ndim(default_value) == 0, f"{op}: default_value must be a scalar")
    check(indices.shape[1] == len(shape), f"{op}: indices have {indices.shape[1]} columns for an output "
                                          f"of rank {len(shape)}")
    check(bool(np.all(shape >= 0)), f"{op}: output_shape {shape.tolist()} has a negative dimension")
    indices = indices.astype(np.int64)
    _check_bounds(op, indices, shape)
    flat = _flat(indices, shape)
    if validate_indices:
        _check_ordered(op, flat, indices)
    out = np.full(int(np.prod(shape)), np.asarray(default_value, values.dtype), values.dtype)
    out[flat] = values
    return (out.reshape(shape),)


@kernel("SparseReorder")
def sparse_reorder(input_indices, input_values, input_shape, **_):
    """The same entries in row-major order: sorted lexicographically by index (TensorFlow does
    not check the indices against the shape here)."""
    indices, values, _ = _components("SparseReorder", input_indices, input_values, input_shape)
    order = np.lexsort(indices.T[::-1]) if indices.shape[1] else np.arange(len(indices))
    return indices[order], values[order]


@kernel("SparseReshape")
def sparse_reshape(input_indices, input_shape, new_shape, **_):
    """Entries keep their row-major position in a tensor of `new_shape` (one -1 dimension is
    inferred)."""
    op = "SparseReshape"
    indices, shape = np.asarray(input_indices, np.int64), np.asarray(input_shape, np.int64)
    target = np.asarray(new_shape, np.int64)
    check(indices.ndim == 2 and shape.ndim == 1 and target.ndim == 1 and indices.shape[1] == len(shape),
          f"{op}: indices {list(indices.shape)} do not match a dense shape of {list(shape.shape)}")
    size = int(np.prod(shape))
    unknown = np.flatnonzero(target == -1)
    check(len(unknown) <= 1, f"{op}: only one output dimension may be -1, got {target.tolist()}")
    check(bool(np.all(target >= -1)), f"{op}: size {target.tolist()} has a dimension below -1")
    known = int(np.prod(target[target != -1]))
    out_shape = target.copy()
    if len(unknown):
        check(known > 0, f"{op}: reshaping a tensor of {size} values to {target.tolist()}: the known "
                         "dimensions multiply to zero")
        check(size % known == 0, f"{op}: input to reshape is a tensor with {size} dense values, but "
                                 f"the requested shape requires a multiple of {known}")
        out_shape[unknown[0]] = size // known
    check(int(np.prod(out_shape)) == size, f"{op}: input to reshape is a tensor with {size} dense values, "
                                           f"but the requested shape has {int(np.prod(out_shape))}")
    flat = _flat(indices, shape)
    if len(out_shape) == 0:
        return np.zeros((len(indices), 0), np.int64), out_shape
    return np.stack(np.unravel_index(flat, tuple(out_shape)), axis=1).astype(np.int64), out_shape


@kernel("SparseTensorDenseMatMul")
def sparse_tensor_dense_mat_mul(a_indices, a_values, a_shape, b, *, adjoint_a: bool = False,
                                adjoint_b: bool = False, **_):
    """A (sparse matrix, optionally adjoint) times B (dense matrix, optionally adjoint)."""
    op = "SparseTensorDenseMatMul"
    indices, values, shape = _components(op, a_indices, a_values, a_shape)
    b = np.asarray(b)
    check(len(shape) == 2 and b.ndim == 2, f"{op}: both operands must be matrices, got a of rank "
                                           f"{len(shape)} and b of rank {b.ndim}")
    rows, cols = (indices[:, 1], indices[:, 0]) if adjoint_a else (indices[:, 0], indices[:, 1])
    out_rows, inner = (shape[1], shape[0]) if adjoint_a else (shape[0], shape[1])
    if adjoint_a:
        values = np.conj(values)
    b = np.conj(b.T) if adjoint_b else b
    check(b.shape[0] == inner, f"{op}: cannot multiply a with {inner} columns by b with {b.shape[0]} rows "
                               f"(adjoint_a={adjoint_a}, adjoint_b={adjoint_b})")
    _check_index(op, rows, out_rows, "row" if not adjoint_a else "column")
    _check_index(op, cols, inner, "column" if not adjoint_a else "row")
    out = np.zeros((int(out_rows), b.shape[1]), np.result_type(values, b))
    np.add.at(out, rows, values[:, None] * b[cols])
    return (out.astype(b.dtype),)


def _check_index(op: str, column: np.ndarray, limit: int, what: str) -> None:
    bad = (column < 0) | (column >= limit)
    if bad.any():
        i = int(np.argmax(bad))
        raise KernelError(f"{op}: {what} index {int(column[i])} of entry {i} is out of bounds [0, {int(limit)})")


@kernel("SparseTensorDenseAdd")
def sparse_tensor_dense_add(a_indices, a_values, a_shape, b, **_):
    """b plus the sparse tensor a of b's shape (repeated indices add up)."""
    op = "SparseTensorDenseAdd"
    indices, values, shape = _components(op, a_indices, a_values, a_shape)
    b = np.asarray(b)
    check(tuple(shape.tolist()) == b.shape, f"{op}: a has dense shape {shape.tolist()}, b has shape "
                                            f"{list(b.shape)}")
    _check_bounds(op, indices, shape)
    out = b.copy().reshape(-1)
    np.add.at(out, _flat(indices, shape), values)
    return (out.reshape(b.shape),)


@kernel("SparseFillEmptyRows")
def sparse_fill_empty_rows(indices, values, dense_shape, default_value, **_):
    """Every row without entries gets one, [row, 0, ...] = default_value; entries are grouped
    by row (in row order, keeping their order within a row). Also returns which rows were
    empty and where each input entry went."""
    op = "SparseFillEmptyRows"
    indices, values, shape = _components(op, indices, values, dense_shape)
    check(np.ndim(default_value) == 0, f"{op}: default_value must be a scalar")
    check(len(shape) >= 1, f"{op}: dense_shape must have at least one dimension")
    nrows = int(shape[0])
    rows = indices[:, 0]
    bad = (rows < 0) | (rows >= nrows)
    if bad.any():
        i = int(np.argmax(bad))
        raise KernelError(f"{op}: indices({i}, 0) is invalid: {int(rows[i])} is not in [0, {nrows})")
    counts = np.bincount(rows, minlength=nrows)
    empty = counts == 0
    filled = np.flatnonzero(empty)
    extra = np.zeros((len(filled), len(shape)), np.int64)
    extra[:, 0] = filled
    all_rows = np.concatenate([rows, filled])
    order = np.argsort(all_rows, kind="stable")
    out_indices = np.concatenate([indices, extra])[order]
    out_values = np.concatenate([values, np.full(len(filled), default_value, values.dtype)])[order]
    reverse = np.empty(len(order), np.int64)
    reverse[order] = np.arange(len(order))
    return out_indices, out_values, empty, reverse[:len(rows)]


@kernel("SparseSlice")
def sparse_slice(indices, values, shape, start, size, **_):
    """The entries inside [start, start + size) of every dimension, shifted by -start; the
    slice's shape is clipped to the tensor's."""
    op = "SparseSlice"
    indices, values, shape = _components(op, indices, values, shape)
    start, size = np.asarray(start, np.int64).reshape(-1), np.asarray(size, np.int64).reshape(-1)
    check(len(start) == len(shape) and len(size) == len(shape),
          f"{op}: start ({len(start)}) and size ({len(size)}) must have the rank {len(shape)} of the tensor")
    end = np.minimum(start + size, shape)
    inside = np.all((indices >= start) & (indices < end), axis=1)
    return indices[inside] - start, values[inside], np.maximum(end - start, 0)


def _reduce(op: str, indices, values, shape, axes, keep_dims: bool, fold):
    """The reduced dense shape, and per distinct position of the kept dimensions (sorted): its
    flat position in that shape and the fold of its values (positions without values: none)."""
    indices, values, shape = _components(op, indices, values, shape)
    rank = len(shape)
    reduced = sorted({normalize_axis(int(a), rank, f"{op}: reduction axis") for a in np.asarray(axes).reshape(-1)})
    kept = [d for d in range(rank) if d not in reduced]
    out_shape = np.array([1 if d in reduced else shape[d] for d in range(rank)] if keep_dims
                         else [shape[d] for d in kept], np.int64)
    keys = _flat(indices[:, kept], shape[kept])
    groups, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(len(groups)))
    folded = fold.reduceat(values[order], starts) if len(values) else values[:0]
    return out_shape, kept, shape, groups, folded.astype(values.dtype)


def _dense_reduce(op: str, fold):
    def reduce_dense(input_indices, input_values, input_shape, reduction_axes, *, keep_dims: bool = False, **_):
        out_shape, _, _, groups, folded = _reduce(op, input_indices, input_values, input_shape,
                                                  reduction_axes, keep_dims, fold)
        out = np.zeros(int(np.prod(out_shape)), folded.dtype)
        out[groups] = folded
        return (out.reshape(out_shape),)
    return reduce_dense


def _sparse_reduce(op: str, fold):
    def reduce_sparse(input_indices, input_values, input_shape, reduction_axes, *, keep_dims: bool = False,
                      **_):
        out_shape, kept, shape, groups, folded = _reduce(op, input_indices, input_values, input_shape,
                                                         reduction_axes, keep_dims, fold)
        columns = np.unravel_index(groups, tuple(shape[kept])) if kept else ()
        out = np.zeros((len(groups), len(out_shape)), np.int64)
        positions = kept if keep_dims else range(len(kept))
        for position, column in zip(positions, columns):
            out[:, position] = column
        return out, folded, out_shape
    return reduce_sparse


kernel("SparseReduceSum")(_dense_reduce("SparseReduceSum", np.add))
kernel("SparseReduceMax")(_dense_reduce("SparseReduceMax", np.maximum))
kernel("SparseReduceSumSparse")(_sparse_reduce("SparseReduceSumSparse", np.add))
kernel("SparseReduceMaxSparse")(_sparse_reduce("SparseReduceMaxSparse", np.maximum))


@kernel("SparseSoftmax")
def sparse_softmax(sp_indices, sp_values, sp_shape, **_):
    """Softmax over each run of consecutive entries that share all but the last index (the
    rows of the innermost dimension, when the indices are in row-major order)."""
    op = "SparseSoftmax"
    indices, values, shape = _components(op, sp_indices, sp_values, sp_shape)
    check(len(shape) >= 2, f"{op}: the sparse tensor must have rank >= 2, got {len(shape)}")
    if not len(values):
        return (values.copy(),)
    outer = indices[:, :-1]
    new_run = np.concatenate([[True], np.any(outer[1:] != outer[:-1], axis=1)])
    starts = np.flatnonzero(new_run)
    run = np.cumsum(new_run) - 1
    shifted = np.exp(values - np.maximum.reduceat(values, starts)[run])
    return ((shifted / np.add.reduceat(shifted, starts)[run]).astype(values.dtype),)


def _union(op: str, a_indices, a_values, a_shape, b_indices, b_values, b_shape):
    """The entries of a and b merged in row-major order: indices, each side's value (zero
    where a side has none), and which entries both sides have."""
    a_indices, a_values, a_shape = _components(op, a_indices, a_values, a_shape)
    b_indices, b_values, b_shape = _components(op, b_indices, b_values, b_shape)
    check(np.array_equal(a_shape, b_shape), f"{op}: operands' shapes do not match: "
                                            f"{a_shape.tolist()} and {b_shape.tolist()}")
    check(a_values.dtype == b_values.dtype, f"{op}: values of {a_values.dtype} and {b_values.dtype}")
    _check_bounds(op, a_indices, a_shape)
    _check_bounds(op, b_indices, b_shape)
    a_flat, b_flat = _flat(a_indices, a_shape), _flat(b_indices, b_shape)
    flat, first = np.unique(np.concatenate([a_flat, b_flat]), return_index=True)
    indices = np.concatenate([a_indices, b_indices])[first]
    a_side = np.zeros(len(flat), a_values.dtype)
    b_side = np.zeros(len(flat), a_values.dtype)
    a_at, b_at = np.searchsorted(flat, a_flat), np.searchsorted(flat, b_flat)
    a_side[a_at] = a_values
    b_side[b_at] = b_values
    both = np.zeros(len(flat), bool)
    both[np.intersect1d(a_at, b_at)] = True
    return indices, a_side, b_side, both


@kernel("SparseSparseMaximum")
def sparse_sparse_maximum(a_indices, a_values, a_shape, b_indices, b_values, b_shape, **_):
    indices, a, b, _ = _union("SparseSparseMaximum", a_indices, a_values, a_shape, b_indices, b_values, b_shape)
    return indices, np.maximum(a, b)


@kernel("SparseSparseMinimum")
def sparse_sparse_minimum(a_indices, a_values, a_shape, b_indices, b_values, b_shape, **_):
    indices, a, b, _ = _union("SparseSparseMinimum", a_indices, a_values, a_shape, b_indices, b_values, b_shape)
    return indices, np.minimum(a, b)


@kernel("SparseAdd")
def sparse_add(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh, **_):
    """a + b as a sparse tensor; where both have an entry, a sum whose magnitude is below
    `thresh` is dropped (entries of one side only are kept as they are)."""
    indices, a, b, both = _union("SparseAdd", a_indices, a_values, a_shape, b_indices, b_values, b_shape)
    check(np.ndim(thresh) == 0, "SparseAdd: thresh must be a scalar")
    total = a + b
    keep = ~both | (np.abs(total) >= thresh)
    return indices[keep], total[keep], np.asarray(a_shape, np.int64)


@kernel("SparseConcat")
def sparse_concat(*inputs, concat_dim: int, N: int, **_):
    """Sparse tensors of one shape but along `concat_dim` joined along it: each input's entries
    shift by the sizes of the inputs before it, and the result is in row-major order (inputs
    joined along the first dimension already are)."""
    op = "SparseConcat"
    check(len(inputs) == 3 * N and N >= 2, f"{op}: needs at least two sparse tensors, got {len(inputs) // 3}")
    parts = [_components(op, *triple) for triple in zip(inputs[:N], inputs[N:2 * N], inputs[2 * N:])]
    shapes = [shape for _, _, shape in parts]
    rank = len(shapes[0])
    check(rank >= 1 and all(len(s) == rank for s in shapes), f"{op}: inputs must have one rank >= 1, got "
                                                             f"shapes {[s.tolist() for s in shapes]}")
    axis = normalize_axis(concat_dim, rank, f"{op}: concat_dim")
    others = [np.delete(s, axis) for s in shapes]
    check(all(np.array_equal(o, others[0]) for o in others),
          f"{op}: inputs' shapes must match except along dimension {axis}, got {[s.tolist() for s in shapes]}")
    check(len({v.dtype for _, v, _ in parts}) == 1, f"{op}: inputs' values have different dtypes")
    offsets = np.cumsum([0] + [int(s[axis]) for s in shapes[:-1]])
    shifted = []
    for (indices, _, _), offset in zip(parts, offsets):
        moved = indices.copy()
        moved[:, axis] += offset
        shifted.append(moved)
    indices = np.concatenate(shifted)
    values = np.concatenate([v for _, v, _ in parts])
    out_shape = shapes[0].copy()
    out_shape[axis] = sum(int(s[axis]) for s in shapes)
    if axis:
        order = np.lexsort(indices.T[::-1])
        indices, values = indices[order], values[order]
    return indices, values, out_shape


def _cwise(op: str, combine):
    def sparse_dense_cwise(sp_indices, sp_values, sp_shape, dense, **_):
        """Each stored value combined with the dense operand's element at its position (the
        dense operand broadcasts to the sparse shape, not the other way round)."""
        indices, values, shape = _components(op, sp_indices, sp_values, sp_shape)
        dense = np.asarray(dense)
        check(dense.ndim <= len(shape), f"{op}: the dense operand of shape {list(dense.shape)} has a "
                                        f"higher rank than the sparse shape {shape.tolist()}")
        try:
            spread = np.broadcast_to(dense, tuple(shape.tolist()))
        except ValueError:
            raise KernelError(f"{op}: the dense operand of shape {list(dense.shape)} does not broadcast "
                              f"to the sparse shape {shape.tolist()}") from None
        _check_bounds(op, indices, shape)
        return (combine(values, spread[tuple(indices.T)]).astype(values.dtype),)
    return sparse_dense_cwise


def _divide(values: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    """C division: integers truncate toward zero (a zero divisor is an error)."""
    if values.dtype.kind not in "iu":
        return values / divisors
    check(not np.any(divisors == 0), "SparseDenseCwiseDiv: integer division by zero")
    quotient = np.abs(values) // np.abs(divisors)
    return np.where((values < 0) != (divisors < 0), -quotient, quotient)


kernel("SparseDenseCwiseMul")(_cwise("SparseDenseCwiseMul", np.multiply))
kernel("SparseDenseCwiseDiv")(_cwise("SparseDenseCwiseDiv", _divide))
kernel("SparseDenseCwiseAdd")(_cwise("SparseDenseCwiseAdd", np.add))


@kernel("SparseSplit")
def sparse_split(split_dim, indices, values, shape, *, num_split: int, **_):
    """`num_split` slices along `split_dim`, the first (size % num_split) one longer, as
    tf.sparse.split cuts them; returns all indices, then all values, then all shapes."""
    op = "SparseSplit"
    indices, values, shape = _components(op, indices, values, shape)
    axis = normalize_axis(int(np.asarray(split_dim).reshape(-1)[0]), len(shape), f"{op}: split_dim")
    size = int(shape[axis])
    check(num_split >= 1 and num_split <= max(size, 1),
          f"{op}: num_split ({num_split}) must be in [1, {max(size, 1)}] for a dimension of {size}")
    lengths = [size // num_split + (i < size % num_split) for i in range(num_split)]
    starts = np.cumsum([0] + lengths[:-1])
    parts = []
    for start, length in zip(starts, lengths):
        inside = (indices[:, axis] >= start) & (indices[:, axis] < start + length)
        moved = indices[inside].copy()
        moved[:, axis] -= start
        part_shape = shape.copy()
        part_shape[axis] = length
        parts.append((moved, values[inside], part_shape))
    return tuple(p[0] for p in parts) + tuple(p[1] for p in parts) + tuple(p[2] for p in parts)
