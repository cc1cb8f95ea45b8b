"""Ragged-tensor ops: RaggedTensorToTensor and DenseBincount, which Keras' TextVectorization
emits when it pads token ids to a fixed length (`RowPartition.from_value_rowids` counts the
values of each row); RaggedTensorToSparse, RaggedGather, RaggedRange, RaggedBincount,
SparseBincount and Bincount; the variant encoding tf.map_fn uses to carry ragged rows through
a loop (RaggedTensorToVariant / FromVariant, see RaggedVariant); and feature crosses
(RaggedCross, and SparseCross / SparseCrossV2 of TensorFlow 1 feature columns, which share
its rows-of-features model).

A ragged tensor is flat `values` plus row partitions, outermost first: ROW_SPLITS (row i is
values[splits[i]:splits[i+1]]), or FIRST_DIM_SIZE followed by VALUE_ROWIDS (the row of each
value, sorted). Each partition is turned into row splits, then every value's position in the
dense result is found by walking the partitions from the inside out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.farmhash import fingerprint64
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.structure import RaggedTensor


@kernel("DenseBincount")
def dense_bincount(input, size, weights, *, binary_output: bool = False, **_):
    """How often each of 0..size-1 occurs in `input` (per row when it is a matrix), each
    occurrence counting its weight; values >= size are not counted."""
    values = np.asarray(input)
    weights = np.asarray(weights)
    bins = scalar_int(size, "DenseBincount: size")
    check(bins >= 0, f"DenseBincount: size ({bins}) must be non-negative")
    check(values.ndim in (1, 2), f"DenseBincount: input must be a vector or a matrix, got shape "
                                 f"{list(values.shape)}")
    check(weights.size == 0 or weights.shape == values.shape,
          f"DenseBincount: weights must have the input's shape {list(values.shape)} or be empty, "
          f"got {list(weights.shape)}")
    check(values.dtype in (np.int32, np.int64), f"DenseBincount: input must be int32 or int64, got {values.dtype}")
    check(values.size == 0 or values.min() >= 0, "DenseBincount: input must be non-negative")
    rows = values if values.ndim == 2 else values.reshape(1, -1)
    kept = rows < bins
    flat = (np.arange(rows.shape[0])[:, None] * bins + rows)[kept]
    weight = None if weights.size == 0 or binary_output else weights.reshape(rows.shape)[kept]
    counts = np.bincount(flat, weights=weight, minlength=rows.shape[0] * bins)
    if binary_output:
        counts = counts > 0
    out = counts.astype(weights.dtype).reshape(rows.shape[0], bins)
    return (out if values.ndim == 2 else out[0],)


@kernel("RaggedTensorToTensor")
def ragged_tensor_to_tensor(shape, values, default_value, *row_partition_tensors,
                            row_partition_types, **_):
    values = np.asarray(values)
    check(values.ndim >= 1, "RaggedTensorToTensor: values must have at least one dimension")
    splits = _row_splits(list(row_partition_types), [np.asarray(t) for t in row_partition_tensors])
    check(splits[-1][-1] == len(values), f"RaggedTensorToTensor: the row partitions cover "
                                         f"{splits[-1][-1]} values, but there are {len(values)}")
    out_shape = _dense_shape(shape, splits, values.shape[1:])
    try:
        out = np.broadcast_to(np.asarray(default_value, dtype=values.dtype), out_shape).copy()
    except ValueError:
        raise KernelError(f"RaggedTensorToTensor: default_value of shape {list(np.shape(default_value))} "
                          f"does not broadcast to the values' inner shape {list(values.shape[1:])}") from None
    coordinates = _coordinates(splits, len(values))
    inside = np.all([c < n for c, n in zip(coordinates, out_shape)], axis=0)
    out[tuple(c[inside] for c in coordinates)] = values[inside]
    return (out,)


@kernel("RaggedTensorToSparse")
def ragged_tensor_to_sparse(*inputs, RAGGED_RANK: int, **_):
    """The sparse form of a ragged tensor: one entry per scalar of its values, at its row,
    column(s) and inner position; the dense shape has each ragged dimension's longest row."""
    *splits, values = (np.asarray(a) for a in inputs)
    check(len(splits) == RAGGED_RANK >= 1, f"RaggedTensorToSparse: {len(splits)} row splits for "
                                           f"RAGGED_RANK {RAGGED_RANK}")
    parents = None
    for level in splits:
        check(level.ndim == 1 and len(level) >= 1 and level[0] == 0 and bool(np.all(np.diff(level) >= 0))
              and (parents is None or len(level) == parents + 1),
              "RaggedTensorToSparse: invalid row splits (each must start at 0, not decrease, and have one "
              "more entry than the rows above it have values)")
        parents = int(level[-1])
    check(values.ndim >= 1 and parents == len(values),
          f"RaggedTensorToSparse: the row splits cover {parents} values, but there are {len(values)}")
    outer = np.stack(_coordinates([s.astype(np.int64) for s in splits], len(values)), axis=1)
    inner_shape = values.shape[1:]
    inner = np.indices(inner_shape).reshape(len(inner_shape), -1).T if inner_shape else np.zeros((1, 0), np.int64)
    indices = np.concatenate([np.repeat(outer, len(inner), axis=0), np.tile(inner, (len(values), 1))], axis=1)
    dense_shape = (len(splits[0]) - 1, *(int(np.diff(s).max(initial=0)) for s in splits), *values.shape[1:])
    return indices.astype(np.int64), values.reshape(-1), np.array(dense_shape, np.int64)


def _row_splits(types: list[str], tensors: list[np.ndarray]) -> list[np.ndarray]:
    """Row splits for each ragged dimension, outermost first."""
    check(len(types) == len(tensors), f"RaggedTensorToTensor: {len(types)} row partition types "
                                      f"for {len(tensors)} row partition tensors")
    nrows = None
    if types and types[0] == "FIRST_DIM_SIZE":
        nrows = scalar_int(tensors[0], "RaggedTensorToTensor: FIRST_DIM_SIZE")
        types, tensors = types[1:], tensors[1:]
    check(bool(types), "RaggedTensorToTensor: needs at least one row partition")
    splits = []
    for kind, tensor in zip(types, tensors):
        parents = nrows if not splits else int(splits[-1][-1])
        if kind == "ROW_SPLITS":
            check(tensor.ndim == 1 and len(tensor) >= 1 and tensor[0] == 0 and np.all(np.diff(tensor) >= 0),
                  "RaggedTensorToTensor: row splits must be a non-decreasing vector starting at 0")
            check(parents is None or len(tensor) == parents + 1,
                  f"RaggedTensorToTensor: {len(tensor) - 1} rows in row splits, expected {parents}")
            splits.append(tensor.astype(np.int64))
        elif kind == "VALUE_ROWIDS":
            check(parents is not None, "RaggedTensorToTensor: VALUE_ROWIDS needs FIRST_DIM_SIZE first")
            splits.append(_splits_from_rowids(tensor, parents))
        else:
            raise KernelError(f"RaggedTensorToTensor: unsupported row partition type {kind!r}")
    return splits


def _splits_from_rowids(rowids: np.ndarray, nrows: int) -> np.ndarray:
    check(rowids.ndim == 1, f"RaggedTensorToTensor: value_rowids must be a vector, got shape "
                            f"{list(rowids.shape)}")
    check(rowids.size == 0 or (rowids.min() >= 0 and rowids.max() < nrows),
          f"RaggedTensorToTensor: value_rowids must be in [0, {nrows})")
    check(np.all(np.diff(rowids) >= 0), "RaggedTensorToTensor: value_rowids must be sorted")
    counts = np.bincount(rowids.astype(np.int64), minlength=nrows)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _dense_shape(shape, splits: list[np.ndarray], inner: tuple) -> tuple[int, ...]:
    """The requested shape, with its unknown (-1) dimensions (or all, for an unknown rank)
    taken from the data: the number of rows, the longest row of each ragged dimension."""
    natural = (len(splits[0]) - 1, *(int(np.diff(s).max(initial=0)) for s in splits), *inner)
    requested = np.asarray(shape).reshape(-1).tolist()
    if requested in ([], [-1]):
        return natural
    check(len(requested) == len(natural), f"RaggedTensorToTensor: shape {requested} has rank "
                                          f"{len(requested)}, the ragged tensor has rank {len(natural)}")
    check(all(r == -1 or r == n for r, n in zip(requested[len(splits) + 1:], natural[len(splits) + 1:])),
          f"RaggedTensorToTensor: shape {requested} does not match the values' inner shape {list(inner)}")
    return tuple(n if r == -1 else r for r, n in zip(requested, natural))


def _coordinates(splits: list[np.ndarray], count: int) -> list[np.ndarray]:
    """Each value's index in every ragged dimension and in the first: walking from the inner
    partition out, a value's column is its offset in its row, and its row is an element of the
    partition above."""
    element = np.arange(count)
    columns = []
    for row_splits in reversed(splits):
        row = np.searchsorted(row_splits, element, side="right") - 1
        columns.append(element - row_splits[row])
        element = row
    return [element, *reversed(columns)]


@kernel("Bincount")
def bincount(arr, size, weights, **_):
    """How often each of 0..size-1 occurs in `arr` (any shape), each occurrence counting its
    weight (an empty `weights` counts 1); values >= size are not counted."""
    values = np.asarray(arr).reshape(-1)
    weights = np.asarray(weights)
    check(np.ndim(size) == 0, f"Bincount: size must be a scalar, got shape {list(np.shape(size))}")
    bins = scalar_int(size, "Bincount: size")
    check(bins >= 0, f"Bincount: size ({bins}) must be non-negative")
    check(weights.size == 0 or weights.shape == np.shape(arr),
          f"Bincount: weights must have the shape of arr {list(np.shape(arr))} or be empty, got "
          f"{list(weights.shape)}")
    check(values.size == 0 or values.min() >= 0, "Bincount: input arr must be non-negative")
    kept = values < bins
    weight = None if weights.size == 0 else weights.reshape(-1)[kept]
    return (np.bincount(values[kept], weights=weight, minlength=bins).astype(weights.dtype),)


@kernel("RaggedBincount")
def ragged_bincount(splits, values, size, weights, *, binary_output: bool = False, **_):
    """DenseBincount of each row of a ragged matrix (row i: values[splits[i]:splits[i+1]])."""
    splits, values, weights = np.asarray(splits), np.asarray(values), np.asarray(weights)
    bins = scalar_int(size, "RaggedBincount: size")
    check(bins >= 0, f"RaggedBincount: size ({bins}) must be non-negative")
    check(splits.ndim == 1 and len(splits) >= 1 and splits[0] == 0 and splits[-1] == len(values)
          and bool(np.all(np.diff(splits) >= 0)),
          f"RaggedBincount: splits must be non-decreasing, start at 0 and end at the number of "
          f"values ({len(values)})")
    nrows = len(splits) - 1
    rows = np.repeat(np.arange(nrows), np.diff(splits))
    return (_row_counts("RaggedBincount", rows, nrows, values, bins, weights, binary_output),)


@kernel("SparseBincount")
def sparse_bincount(indices, values, dense_shape, size, weights, *, binary_output: bool = False, **_):
    """DenseBincount of a sparse vector, or of each row of a sparse matrix (where negative
    values are not counted, as values >= size are not)."""
    indices, values, weights = np.asarray(indices), np.asarray(values), np.asarray(weights)
    shape = np.asarray(dense_shape).reshape(-1)
    bins = scalar_int(size, "SparseBincount: size")
    check(bins >= 0, f"SparseBincount: size ({bins}) must be non-negative")
    check(len(shape) in (1, 2) and indices.shape == (len(values), len(shape)),
          f"SparseBincount: indices of shape {list(indices.shape)} do not fit {len(values)} values of a "
          f"sparse vector or matrix of shape {shape.tolist()}")
    nrows = int(shape[0]) if len(shape) == 2 else 1
    rows = indices[:, 0].astype(np.int64) if len(shape) == 2 else np.zeros(len(values), np.int64)
    check(rows.size == 0 or (rows.min() >= 0 and rows.max() < nrows),
          f"SparseBincount: a row index is outside [0, {nrows})")
    if len(shape) == 2:  # TensorFlow's matrix kernel skips negative values; its vector one rejects them
        kept = values >= 0
        rows, values, weights = rows[kept], values[kept], weights[kept] if weights.size else weights
    counts = _row_counts("SparseBincount", rows, nrows, values, bins, weights, binary_output)
    return (counts if len(shape) == 2 else counts[0],)


def _row_counts(op: str, rows: np.ndarray, nrows: int, values: np.ndarray, bins: int, weights: np.ndarray,
                binary_output: bool) -> np.ndarray:
    """For each row, how often each of 0..bins-1 occurs among its values (each counting its
    weight, unless binary_output); values >= bins are not counted."""
    check(weights.size == 0 or weights.shape == values.shape,
          f"{op}: weights must have the shape of values {list(values.shape)} or be empty")
    check(values.size == 0 or values.min() >= 0, f"{op}: input must be non-negative")
    kept = values < bins
    weight = None if weights.size == 0 or binary_output else weights[kept]
    counts = np.bincount(rows[kept] * bins + values[kept], weights=weight, minlength=nrows * bins)
    if binary_output:
        counts = counts > 0
    return counts.astype(weights.dtype).reshape(nrows, bins)


@kernel("RaggedRange")
def ragged_range(starts, limits, deltas, *, Tsplits=None, **_):
    """One row per (start, limit, delta) (scalars broadcast): start, start + delta, ... up to
    limit (exclusive)."""
    starts, limits, deltas = (np.asarray(a) for a in (starts, limits, deltas))
    check(all(a.ndim <= 1 for a in (starts, limits, deltas)),
          "RaggedRange: starts, limits and deltas must be scalars or vectors")
    sizes = {len(a) for a in (starts, limits, deltas) if a.ndim == 1}
    check(len(sizes) <= 1, "RaggedRange: starts, limits and deltas must have the same length")
    nrows = sizes.pop() if sizes else 1
    start, limit, delta = (np.broadcast_to(a, (nrows,)) for a in (starts, limits, deltas))
    check(not np.any(delta == 0), "RaggedRange: requires delta != 0")
    empty = ((delta > 0) & (limit < start)) | ((delta < 0) & (limit > start))
    if starts.dtype.kind in "iu":
        span = np.abs(limit.astype(np.int64) - start) + np.abs(delta.astype(np.int64)) - 1
        size = span // np.abs(delta.astype(np.int64))
    else:
        size = np.ceil(np.abs((limit - start) / delta)).astype(np.int64)
    size = np.where(empty, 0, size)
    splits = np.concatenate([[0], np.cumsum(size)])
    rows = np.repeat(np.arange(nrows), size)
    offset = np.arange(splits[-1]) - splits[rows]
    values = (start[rows] + offset.astype(starts.dtype) * delta[rows]).astype(starts.dtype)
    return splits.astype(_splits_dtype(Tsplits)), values


def _splits_dtype(attr) -> np.dtype:
    return np.dtype(np.int64) if attr is None else attr.numpy


@kernel("RaggedGather")
def ragged_gather(*inputs, PARAMS_RAGGED_RANK: int, OUTPUT_RAGGED_RANK: int, **_):
    """Rows of a ragged tensor (nested splits, then values) picked by `indices`; an indices
    tensor of rank k adds k - 1 uniform outer ragged dimensions."""
    *params_splits, params_values, indices = inputs
    params_splits = [np.asarray(s) for s in params_splits]
    params_values, indices = np.asarray(params_values), np.asarray(indices)
    check(len(params_splits) == PARAMS_RAGGED_RANK >= 1,
          f"RaggedGather: {len(params_splits)} row splits for PARAMS_RAGGED_RANK {PARAMS_RAGGED_RANK}")
    check(indices.ndim >= 1 and OUTPUT_RAGGED_RANK == PARAMS_RAGGED_RANK + indices.ndim - 1,
          f"RaggedGather: indices of rank {indices.ndim} do not give OUTPUT_RAGGED_RANK {OUTPUT_RAGGED_RANK}")
    nrows = len(params_splits[0]) - 1
    flat = indices.reshape(-1).astype(np.int64)
    bad = (flat < 0) | (flat >= nrows)
    if bad.any():
        raise KernelError(f"RaggedGather: indices[{int(np.argmax(bad))}] = {int(flat[bad][0])} is not "
                          f"in [0, {nrows})")
    dtype = params_splits[0].dtype
    outer = [np.arange(int(np.prod(indices.shape[:d + 1])) + 1, dtype=dtype) * indices.shape[d + 1]
             for d in range(indices.ndim - 1)]
    picked, out_splits = flat, []
    for splits in params_splits:
        begin, lengths = splits[picked].astype(np.int64), np.diff(splits)[picked].astype(np.int64)
        out_splits.append(np.concatenate([[0], np.cumsum(lengths)]).astype(dtype))
        picked = _expand_ranges(begin, lengths)
    return (*outer, *out_splits, params_values[picked])


def _expand_ranges(begin: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(begin[i], begin[i] + lengths[i]) for every i."""
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(begin - offsets, lengths) + np.arange(int(lengths.sum()))


@dataclass(frozen=True, eq=False)
class RaggedVariant:
    """A DT_VARIANT tensor of encoded ragged tensors, as RaggedTensorToVariant makes them (for
    tf.map_fn over a ragged tensor, and tf.data): its `shape` and its elements in row-major
    order, each a RaggedTensor. It is a runtime value, not a numpy array: only the ops that
    encode, decode or carry variants (TensorLists) accept it."""

    shape: tuple[int, ...]
    items: tuple[RaggedTensor, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def rows(self) -> tuple[RaggedVariant, ...]:
        """The sub-tensors along the first axis, as TensorListFromTensor splits a tensor."""
        check(self.ndim >= 1, "a scalar variant has no rows")
        size = int(np.prod(self.shape[1:], dtype=np.int64))
        return tuple(RaggedVariant(self.shape[1:], self.items[i * size:(i + 1) * size])
                     for i in range(self.shape[0]))

    @staticmethod
    def stack(parts: list[RaggedVariant]) -> RaggedVariant:
        """Variants of one shape stacked along a new first axis (TensorListStack)."""
        shapes = {p.shape for p in parts}
        check(len(shapes) == 1, f"cannot stack variant tensors of shapes {sorted(shapes)}")
        return RaggedVariant((len(parts), *shapes.pop()), tuple(i for p in parts for i in p.items))


@kernel("RaggedTensorToVariant")
def ragged_tensor_to_variant(*inputs, RAGGED_RANK: int, batched_input: bool, **_):
    """Encode a ragged tensor as a scalar variant, or (batched_input) each of its rows as one
    element of a variant vector."""
    *splits, values = (np.asarray(a) for a in inputs)
    check(len(splits) == RAGGED_RANK, f"RaggedTensorToVariant: {len(splits)} row splits for "
                                      f"RAGGED_RANK {RAGGED_RANK}")
    _check_nested_splits(splits, values)
    whole = RaggedTensor(values, tuple(splits))
    if not batched_input:
        return (RaggedVariant((), (whole,)),)
    if not splits:
        check(values.ndim >= 1, "RaggedTensorToVariant: batched input must have at least one dimension")
        return (RaggedVariant((len(values),), tuple(RaggedTensor(row, ()) for row in values)),)
    return (RaggedVariant((len(splits[0]) - 1,), tuple(_row(whole, i) for i in range(len(splits[0]) - 1))),)


def _check_nested_splits(nested: list[np.ndarray], values: np.ndarray) -> None:
    """TensorFlow's checks of the row splits an op encodes: each starts at 0, never decreases,
    and ends at the length of the level inside it (the next splits' rows, or the values)."""
    for level, splits in enumerate(nested):
        inner = len(nested[level + 1]) - 1 if level + 1 < len(nested) else values.shape[0] if values.ndim else 0
        check(splits.ndim == 1 and len(splits) >= 1, "Invalid ragged splits: ragged splits must be a "
                                                     f"non-empty vector, got shape {splits.shape}")
        check(splits[0] == 0, f"Invalid ragged splits: first element of ragged splits must be 0 but is {splits[0]}")
        drops = np.flatnonzero(np.diff(splits) < 0)
        if drops.size:
            i = int(drops[0]) + 1
            raise KernelError(f"Invalid ragged splits: ragged splits must be monotonically increasing, but "
                              f"ragged_splits[{i}]={splits[i]} is smaller than row_splits[{i - 1}]={splits[i - 1]}")
        check(splits[-1] == inner, "Invalid ragged splits: last element of ragged splits must be the number "
                                   f"of ragged values({inner}) but is {splits[-1]}")


def _row(ragged: RaggedTensor, i: int) -> RaggedTensor:
    """Row i of a ragged tensor, as a ragged tensor of one ragged dimension less."""
    begin, end = int(ragged.nested_row_splits[0][i]), int(ragged.nested_row_splits[0][i + 1])
    inner = []
    for splits in ragged.nested_row_splits[1:]:
        inner.append(splits[begin:end + 1] - splits[begin])
        begin, end = int(splits[begin]), int(splits[end])
    return RaggedTensor(ragged.flat_values[begin:end], tuple(inner))


@kernel("RaggedTensorFromVariant")
def ragged_tensor_from_variant(encoded_ragged, *, input_ragged_rank: int, output_ragged_rank: int,
                               Tvalues, Tsplits, **_):
    """Decode a variant tensor of ragged tensors (each of ragged rank input_ragged_rank; -1:
    output_ragged_rank minus the variant's rank) into one ragged tensor whose outer dimensions
    are the variant's."""
    op = "RaggedTensorFromVariant"
    check(isinstance(encoded_ragged, RaggedVariant), f"{op}: the input is not a variant tensor of "
                                                     "encoded ragged tensors")
    variant = encoded_ragged
    inner_rank = output_ragged_rank - variant.ndim if input_ragged_rank == -1 else input_ragged_rank
    check(inner_rank >= 0 and inner_rank + variant.ndim == output_ragged_rank,
          f"{op}: output_ragged_rank ({output_ragged_rank}) must be input_ragged_rank ({inner_rank}) "
          f"plus the rank of the encoded tensor ({variant.ndim})")
    for item in variant.items:
        check(len(item.nested_row_splits) == inner_rank, f"{op}: an encoded ragged tensor has ragged rank "
                                                         f"{len(item.nested_row_splits)}, expected {inner_rank}")
        check(item.flat_values.dtype == Tvalues.numpy or Tvalues.is_string and item.flat_values.dtype == object,
              f"{op}: an encoded ragged tensor holds {item.flat_values.dtype}, expected {Tvalues.name}")
    splits_dtype = Tsplits.numpy
    if variant.ndim == 0:
        item = variant.items[0]
        return (*(s.astype(splits_dtype) for s in item.nested_row_splits), item.flat_values)
    outer = [np.arange(int(np.prod(variant.shape[:d + 1])) + 1, dtype=splits_dtype) * variant.shape[d + 1]
             for d in range(variant.ndim - 1)]
    nrows = [len(i.nested_row_splits[0]) - 1 if inner_rank else len(i.flat_values) for i in variant.items]
    levels = [np.concatenate([[0], np.cumsum(nrows, dtype=np.int64)]).astype(splits_dtype)]
    for level in range(inner_rank):
        parts = [i.nested_row_splits[level] for i in variant.items]
        offsets = np.cumsum([0] + [int(p[-1]) for p in parts[:-1]])
        levels.append(np.concatenate([[0]] + [p[1:] + o for p, o in zip(parts, offsets)]).astype(splits_dtype))
    values = [i.flat_values for i in variant.items]
    empty = np.zeros(0, Tvalues.numpy if not Tvalues.is_string else object)
    return (*outer, *levels, np.concatenate(values) if values else empty)


_CAT_MUL = np.uint64(0xC6A4A7935BD1E995)
_INT64_MAX = np.uint64(2 ** 63 - 1)


@kernel("RaggedCross")
def ragged_cross(*inputs, Nsparse: int, input_order: str, hashed_output: bool, num_buckets: int,
                 hash_key: int, ragged_values_types: list, dense_types: list, out_row_splits_type, **_):
    """tf.ragged.cross: per batch row, every combination of one feature from each input (the
    last input varying fastest), as the features joined by "_X_" or (hashed_output) their
    FingerprintCat64-combined fingerprints. Inputs are ragged (values, splits), sparse (one row
    per first index) or dense matrices, taken in `input_order` ('R', 'S', 'D' per input)."""
    columns = _cross_columns(list(inputs), len(ragged_values_types), Nsparse, len(dense_types), input_order)
    values, lengths = _cross("RaggedCross", columns, hashed_output, hash_key, num_buckets)
    return values, np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(out_row_splits_type.numpy)


@kernel("SparseCross")
def sparse_cross(*inputs, N: int, hashed_output: bool, num_buckets: int, hash_key: int, **_):
    """tf.sparse.cross(_hashed) of TensorFlow 1 feature columns: RaggedCross of the sparse
    inputs, then the dense ones, as a sparse matrix (one row per batch row)."""
    return _sparse_cross("SparseCross", list(inputs), N, hashed_output, hash_key, num_buckets, b"_X_")


@kernel("SparseCrossV2")
def sparse_cross_v2(*inputs, N: int, **_):
    """SparseCross of strings joined by the `sep` input."""
    *inputs, sep = inputs
    check(np.ndim(sep) == 0, "SparseCrossV2: sep must be a scalar string")
    separator = np.asarray(sep).item()
    separator = separator if isinstance(separator, bytes) else str(separator).encode()
    return _sparse_cross("SparseCrossV2", inputs, N, False, 0, 0, separator)


def _sparse_cross(op: str, inputs: list, n_sparse: int, hashed: bool, hash_key: int, num_buckets: int,
                  separator: bytes) -> tuple:
    sparse = [_sparse_column(*triple) for triple in zip(inputs[:n_sparse], inputs[n_sparse:2 * n_sparse],
                                                        inputs[2 * n_sparse:3 * n_sparse])]
    columns = sparse + [_dense_column(d) for d in inputs[3 * n_sparse:]]
    values, lengths = _cross(op, columns, hashed, hash_key, num_buckets, separator)
    rows = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    starts = np.cumsum(lengths, dtype=np.int64) - lengths
    indices = np.stack([rows, np.arange(len(rows), dtype=np.int64) - starts[rows]], axis=1)
    return indices, values, np.array([len(lengths), max(lengths, default=0)], np.int64)


def _cross(op: str, columns: list, hashed: bool, hash_key: int, num_buckets: int,
           separator: bytes = b"_X_") -> tuple[np.ndarray, list[int]]:
    """Per batch row, every combination of one feature from each column (the last varying
    fastest), joined by `separator` or hashed: the flat crosses and each row's count."""
    nrows = {len(splits) - 1 for _, splits in columns}
    check(len(nrows) <= 1, f"{op}: inputs have different batch sizes {sorted(nrows)}")
    rows = nrows.pop() if nrows else 0
    if hashed:
        columns = [(_feature_hashes(values), splits) for values, splits in columns]
    pieces, lengths = [], []
    for row in range(rows):
        counts = [int(splits[row + 1] - splits[row]) for _, splits in columns]
        picks = np.indices(counts).reshape(len(counts), -1)
        features = [values[splits[row] + pick] for (values, splits), pick in zip(columns, picks)]
        pieces.append(_hash_cross(features, hash_key, num_buckets) if hashed else _join_cross(features, separator))
        lengths.append(picks.shape[1])
    empty = np.zeros(0, np.int64) if hashed else np.zeros(0, object)
    return (np.concatenate(pieces) if pieces else empty), lengths


def _cross_columns(inputs: list, n_ragged: int, n_sparse: int, n_dense: int, order: str) -> list:
    """Each input as (flat features, row splits), in `order`."""
    op = "RaggedCross"
    check(len(order) == n_ragged + n_sparse + n_dense and set(order) <= set("DRS")
          and order.count("R") == n_ragged and order.count("S") == n_sparse and order.count("D") == n_dense,
          f"{op}: input_order {order!r} does not match {n_ragged} ragged, {n_sparse} sparse and "
          f"{n_dense} dense inputs")
    ragged = [(np.asarray(values), np.asarray(splits).astype(np.int64))
              for values, splits in zip(inputs[:n_ragged], inputs[n_ragged:2 * n_ragged])]
    sparse = inputs[2 * n_ragged:2 * n_ragged + 3 * n_sparse]
    sparse = [_sparse_column(*triple) for triple in zip(sparse[:n_sparse], sparse[n_sparse:2 * n_sparse],
                                                        sparse[2 * n_sparse:])]
    dense = [_dense_column(d) for d in inputs[2 * n_ragged + 3 * n_sparse:]]
    by_kind = {"R": iter(ragged), "S": iter(sparse), "D": iter(dense)}
    columns = [next(by_kind[kind]) for kind in order]
    for values, splits in columns:
        check(splits.ndim == 1 and len(splits) >= 1 and splits[0] == 0 and splits[-1] == len(values)
              and bool(np.all(np.diff(splits) >= 0)), f"{op}: invalid row splits for {len(values)} values")
    return columns


def _sparse_column(indices, values, shape) -> tuple[np.ndarray, np.ndarray]:
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    check(indices.ndim == 2 and indices.shape[1] == 2 and values.shape == (len(indices),) and shape.shape == (2,),
          "a sparse input of a cross must be a matrix (indices n x 2, values n, shape 2)")
    rows = indices[:, 0]
    check(rows.size == 0 or (rows.min() >= 0 and rows.max() < shape[0]),
          "a sparse input of a cross has a row index outside its shape")
    order = np.argsort(rows, kind="stable")
    counts = np.bincount(rows, minlength=int(shape[0]))
    return values[order], np.concatenate([[0], np.cumsum(counts)])


def _dense_column(dense) -> tuple[np.ndarray, np.ndarray]:
    dense = np.asarray(dense)
    check(dense.ndim == 2, f"a dense input of a cross must be a matrix, got shape {list(dense.shape)}")
    return dense.reshape(-1), np.arange(len(dense) + 1, dtype=np.int64) * dense.shape[1]


def _feature_hashes(values: np.ndarray) -> np.ndarray:
    """A feature's hash: Fingerprint64 of a string, an int64's own bits."""
    if values.dtype == object:
        return np.array([fingerprint64(v if isinstance(v, bytes) else str(v).encode()) for v in values],
                        np.uint64).reshape(values.shape)
    return values.astype(np.int64).view(np.uint64)


def _hash_cross(features: list[np.ndarray], hash_key: int, num_buckets: int) -> np.ndarray:
    hashed = np.full(len(features[0]) if features else 0, hash_key & (2 ** 64 - 1), np.uint64)
    for feature in features:
        hashed = _fingerprint_cat64(hashed, feature)
    return (hashed % (np.uint64(num_buckets) if num_buckets > 0 else _INT64_MAX)).astype(np.int64)


def _fingerprint_cat64(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """farmhash.fingerprint_cat64 on arrays (uint64 arithmetic wraps as the C++ does)."""
    result = first ^ _CAT_MUL
    result ^= _shift_mix(second * _CAT_MUL) * _CAT_MUL
    result = _shift_mix(result * _CAT_MUL) * _CAT_MUL
    return _shift_mix(result)


def _shift_mix(value: np.ndarray) -> np.ndarray:
    return value ^ (value >> np.uint64(47))


def _join_cross(features: list[np.ndarray], separator: bytes) -> np.ndarray:
    """The features of each combination joined by `separator` (integers as decimal text)."""
    texts = [[v if isinstance(v, bytes) else str(int(v)).encode() for v in feature] for feature in features]
    out = np.empty(len(texts[0]) if texts else 0, object)
    out[:] = [separator.join(parts) for parts in zip(*texts)]
    return out
