"""Segment reductions, partitions and stitches: the ops behind embedding combiners, ragged
reductions and `tf.dynamic_partition`.

Rows of `data` go to segments by id and each segment reduces its rows with one ufunc, applied
by `ufunc.at` (unbuffered, so repeated ids accumulate) over all rows at once. The identity of an
empty segment is TensorFlow's: sorted Segment* ops give 0 for every reduction but the product (1);
the unsorted ones give their reduction's identity (0, 1, the dtype's lowest for max, its highest
for min). Unsorted ops drop rows whose id is negative, as TensorFlow's CPU kernels do, and reject
ids >= num_segments; sorted ops reject ids that are negative or decrease.

Max and min follow TensorFlow's fold `acc = max(row, acc)` with C++'s `std::max` (and `min`): a
NaN row makes the accumulator NaN and the next row replaces it, so a segment's result is NaN
when its last row is NaN and otherwise the extremum of the rows after its last NaN (without the
identity, so -inf after a NaN stays -inf). Sorted segments with more than one element per row
reduce NaN rows the way Eigen's vectorization happens to, which is not reproduced.

float16 and bfloat16 accumulate in float32 and round once at the end.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_NARROW = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})
_UFUNCS = {"Sum": np.add, "Mean": np.add, "Prod": np.multiply, "Max": np.maximum,
           "Min": np.minimum}


def _ids(value, what: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise KernelError(f"{what} must be an integer tensor, got {array.dtype}")
    return array.astype(np.int64, copy=False)


def _scalar_count(value, what: str) -> int:
    array = np.asarray(value)
    check(array.ndim == 0 and array.dtype.kind in "iu",
          f"{what} should be a scalar, got shape {list(array.shape)}")
    count = int(array)
    check(count >= 0, f"Input {what} == {count} must not be negative.")
    return count


def _wide(data: np.ndarray) -> np.ndarray:
    return data.astype(np.float32) if data.dtype in _NARROW else data


def _extreme(dtype: np.dtype, kind: str, lowest: bool):
    """The dtype's lowest (or highest) value, or -inf (+inf) for floats when `kind` is inf."""
    if dtype.kind == "f" and kind == "inf":
        return dtype.type(-np.inf if lowest else np.inf)
    info = np.iinfo(dtype) if dtype.kind in "iu" else ml_dtypes.finfo(dtype)
    return dtype.type(info.min if lowest else info.max)


def _identity(reduction: str, dtype: np.dtype):
    if reduction == "Prod":
        return dtype.type(1)
    if reduction in ("Max", "Min"):
        return _extreme(dtype, "finite", reduction == "Max")
    return dtype.type(0)


def _populated(ids: np.ndarray, count: int, rank: int) -> np.ndarray:
    """Which segments have rows, shaped to broadcast against the output."""
    return (np.bincount(ids, minlength=count) > 0).reshape((count,) + (1,) * (rank - 1))


def _reduce(reduction: str, rows: np.ndarray, ids: np.ndarray, count: int,
            sorted_ids: bool) -> np.ndarray:
    """Rows (n, ...) reduced into `count` segments by ids (n,), all ids in [0, count)."""
    dtype = rows.dtype
    wide = _wide(rows)
    out_shape = (count,) + rows.shape[1:]
    if reduction in ("Max", "Min") and wide.dtype.kind in "fc":
        out = _extremum(reduction, wide, ids, count, sorted_ids, dtype)
    else:
        out = np.full(out_shape, _identity(reduction, wide.dtype), wide.dtype)
        _UFUNCS[reduction].at(out, ids, wide)
        if sorted_ids and reduction in ("Max", "Min"):
            out = np.where(_populated(ids, count, rows.ndim), out, wide.dtype.type(0))
        if reduction == "Mean":
            counts = np.bincount(ids, minlength=count).reshape((count,) + (1,) * (rows.ndim - 1))
            out = _divide(out, np.maximum(counts, 1).astype(wide.dtype))
    return out.astype(dtype, copy=False)


def _divide(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A mean: integer means truncate toward zero, as C++ division does."""
    if total.dtype.kind in "iu":
        return (np.sign(total) * (np.abs(total) // counts)).astype(total.dtype)
    return total / counts


def _extremum(reduction: str, rows: np.ndarray, ids: np.ndarray, count: int,
              sorted_ids: bool, dtype: np.dtype) -> np.ndarray:
    """Float max/min with TensorFlow's NaN handling (see the module docstring); an unsorted
    segment without NaN starts from the lowest (highest) value of `dtype`, the data's type."""
    is_max = reduction == "Max"
    ufunc = np.maximum if is_max else np.minimum
    position = np.arange(rows.shape[0]).reshape((-1,) + (1,) * (rows.ndim - 1))
    shape = (count,) + rows.shape[1:]
    last_nan = np.full(shape, -1, np.int64)
    np.maximum.at(last_nan, ids, np.where(np.isnan(rows), position, -1))
    after = position > last_nan[ids]
    neutral = _extreme(rows.dtype, "inf", is_max)
    out = np.full(shape, neutral, rows.dtype)
    ufunc.at(out, ids, np.where(after, rows, neutral))
    rows_after = np.zeros(shape, np.int64)
    np.add.at(rows_after, ids, after.astype(np.int64))
    no_nan = last_nan < 0
    if sorted_ids:
        out = np.where(_populated(ids, count, rows.ndim), out, rows.dtype.type(0))
    else:
        start = rows.dtype.type(_extreme(dtype, "finite", is_max))
        out = np.where(no_nan, ufunc(out, start), out)
    return np.where(~no_nan & (rows_after == 0), rows.dtype.type(np.nan), out)


def _sorted_count(ids: np.ndarray, op: str, num_segments: int | None) -> int:
    """Output rows of a sorted segment op, after TensorFlow's checks on the ids."""
    if ids.size == 0:
        return num_segments or 0
    count = int(ids[-1]) + 1 if num_segments is None else num_segments
    if num_segments is not None and int(ids.max()) >= num_segments:
        raise KernelError(f"{op}: segment ids must be < num_segments")
    if ids.min() < 0:
        raise KernelError(f"{op}: Segment id {int(ids.min())} out of range [0, {count}), "
                          "possibly because 'segment_ids' input is not sorted.")
    if (np.diff(ids) < 0).any():
        raise KernelError(f"{op}: segment ids are not increasing")
    return count


def _segment(reduction: str, data, segment_ids) -> tuple[np.ndarray]:
    op = f"Segment{reduction}"
    data = np.asarray(data)
    ids = _ids(segment_ids, f"{op}: segment_ids")
    check(ids.ndim == 1, f"{op}: segment_ids should be a vector, got shape {list(ids.shape)}")
    check(data.ndim >= 1 and data.shape[0] == ids.size,
          f"{op}: segment_ids should be the same size as dimension 0 of input, got "
          f"{ids.size} ids for data of shape {list(data.shape)}")
    count = _sorted_count(ids, op, None)
    return (_reduce(reduction, data, ids, count, True),)


@kernel("SegmentSum")
def segment_sum(data, segment_ids, **_) -> tuple[np.ndarray]:
    return _segment("Sum", data, segment_ids)


@kernel("SegmentMean")
def segment_mean(data, segment_ids, **_) -> tuple[np.ndarray]:
    return _segment("Mean", data, segment_ids)


@kernel("SegmentProd")
def segment_prod(data, segment_ids, **_) -> tuple[np.ndarray]:
    return _segment("Prod", data, segment_ids)


@kernel("SegmentMax")
def segment_max(data, segment_ids, **_) -> tuple[np.ndarray]:
    return _segment("Max", data, segment_ids)


@kernel("SegmentMin")
def segment_min(data, segment_ids, **_) -> tuple[np.ndarray]:
    return _segment("Min", data, segment_ids)


def _unsorted(reduction: str, data, segment_ids, num_segments) -> tuple[np.ndarray]:
    op = f"UnsortedSegment{reduction}"
    data = np.asarray(data)
    ids = _ids(segment_ids, f"{op}: segment_ids")
    count = _scalar_count(num_segments, f"{op}: num_segments")
    check(data.shape[:ids.ndim] == ids.shape,
          f"{op}: data.shape = {list(data.shape)} does not start with segment_ids.shape = "
          f"{list(ids.shape)}")
    flat = ids.reshape(-1)
    rows = data.reshape((flat.size,) + data.shape[ids.ndim:])
    bad = flat >= count
    if bad.any():
        at = int(np.argmax(bad))
        raise KernelError(f"{op}: segment_ids[{at}] = {int(flat[at])} is out of range "
                          f"[0, {count})")
    keep = flat >= 0
    return (_reduce(reduction, rows[keep], flat[keep], count, False),)


@kernel("UnsortedSegmentSum")
def unsorted_segment_sum(data, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _unsorted("Sum", data, segment_ids, num_segments)


@kernel("UnsortedSegmentProd")
def unsorted_segment_prod(data, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _unsorted("Prod", data, segment_ids, num_segments)


@kernel("UnsortedSegmentMax")
def unsorted_segment_max(data, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _unsorted("Max", data, segment_ids, num_segments)


@kernel("UnsortedSegmentMin")
def unsorted_segment_min(data, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _unsorted("Min", data, segment_ids, num_segments)


# Sparse segments: rows picked by `indices`, then a sorted segment reduction ---------------------

def _sparse_segment(scale: str, data, indices, segment_ids,
                    num_segments=None) -> tuple[np.ndarray]:
    op = f"SparseSegment{scale}" + ("WithNumSegments" if num_segments is not None else "")
    data = np.asarray(data)
    picks = _ids(indices, f"{op}: indices")
    ids = _ids(segment_ids, f"{op}: segment_ids")
    check(picks.ndim == 1, f"{op}: indices should be a vector, got shape {list(picks.shape)}")
    check(ids.ndim == 1, f"{op}: segment_ids should be a vector, got shape {list(ids.shape)}")
    check(picks.size == ids.size, f"{op}: segment_ids and indices should have same size, got "
          f"{ids.size} and {picks.size}")
    check(data.ndim >= 1, f"{op}: data must be at least 1-D")
    count = _sorted_count(ids, op, None if num_segments is None
                          else _scalar_count(num_segments, f"{op}: num_segments"))
    bad = (picks < 0) | (picks >= data.shape[0])
    if bad.any():
        at = int(np.argmax(bad))
        raise KernelError(f"{op}: Bad: indices[{at}] == {int(picks[at])} out of range "
                          f"[0, {data.shape[0]})")
    total = _reduce("Sum", data[picks], ids, count, True)
    if scale == "Sum":
        return (total,)
    counts = np.bincount(ids, minlength=count).astype(np.float64)
    divisor = counts if scale == "Mean" else np.sqrt(counts)
    divisor = np.maximum(divisor, 1).reshape((count,) + (1,) * (data.ndim - 1))
    return ((_wide(total) / divisor.astype(_wide(total).dtype)).astype(data.dtype),)


@kernel("SparseSegmentSum")
def sparse_segment_sum(data, indices, segment_ids, **_) -> tuple[np.ndarray]:
    return _sparse_segment("Sum", data, indices, segment_ids)


@kernel("SparseSegmentMean")
def sparse_segment_mean(data, indices, segment_ids, **_) -> tuple[np.ndarray]:
    return _sparse_segment("Mean", data, indices, segment_ids)


@kernel("SparseSegmentSqrtN")
def sparse_segment_sqrt_n(data, indices, segment_ids, **_) -> tuple[np.ndarray]:
    return _sparse_segment("SqrtN", data, indices, segment_ids)


@kernel("SparseSegmentSumWithNumSegments")
def sparse_segment_sum_n(data, indices, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _sparse_segment("Sum", data, indices, segment_ids, num_segments)


@kernel("SparseSegmentMeanWithNumSegments")
def sparse_segment_mean_n(data, indices, segment_ids, num_segments, **_) -> tuple[np.ndarray]:
    return _sparse_segment("Mean", data, indices, segment_ids, num_segments)


@kernel("SparseSegmentSqrtNWithNumSegments")
def sparse_segment_sqrt_n_n(data, indices, segment_ids, num_segments,
                            **_) -> tuple[np.ndarray]:
    return _sparse_segment("SqrtN", data, indices, segment_ids, num_segments)


# Partition and stitch ---------------------------------------------------------------------------

@kernel("DynamicPartition")
def dynamic_partition(data, partitions, *, num_partitions: int, **_) -> tuple[np.ndarray, ...]:
    """Rows of data (as many leading dimensions as partitions has) by partition, in order."""
    data = np.asarray(data)
    parts = _ids(partitions, "DynamicPartition: partitions")
    check(data.shape[:parts.ndim] == parts.shape,
          f"DynamicPartition: data.shape must start with partitions.shape, got data.shape = "
          f"{list(data.shape)}, partitions.shape = {list(parts.shape)}")
    flat = parts.reshape(-1)
    bad = (flat < 0) | (flat >= num_partitions)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), parts.shape)
        raise KernelError(f"DynamicPartition: partitions{list(map(int, at))} = "
                          f"{int(flat[np.argmax(bad)])} is not in [0, {num_partitions})")
    rows = data.reshape((flat.size,) + data.shape[parts.ndim:])
    return tuple(np.ascontiguousarray(rows[flat == p]) for p in range(num_partitions))


def _stitch(op: str, values: list, count: int | None) -> tuple[np.ndarray]:
    """merged[indices[m][i]] = data[m][i]; a later (m, i) wins over an earlier one. `count` is
    the N attr: how many indices tensors (and data tensors) there are."""
    count = len(values) // 2 if count is None else count
    check(len(values) == 2 * count, f"{op}: expected {count} indices and {count} data "
          f"tensors, got {len(values)} inputs")
    indices = [_ids(v, f"{op}: indices") for v in values[:count]]
    data = [np.asarray(v) for v in values[count:]]
    inner = None
    for m, (index, piece) in enumerate(zip(indices, data)):
        check(piece.shape[:index.ndim] == index.shape,
              f"{op}: data[{m}].shape = {list(piece.shape)} does not start with "
              f"indices[{m}].shape = {list(index.shape)}")
        tail = piece.shape[index.ndim:]
        check(inner is None or tail == inner, f"{op}: Need data[0].shape[{indices[0].ndim}:] = "
              f"{list(inner or ())} to match data[{m}].shape[{index.ndim}:] = {list(tail)}")
        inner = tail
    flat = np.concatenate([i.reshape(-1) for i in indices]) if indices else np.zeros(0, np.int64)
    check(not (flat < 0).any(), f"{op}: indices must be non-negative, got "
          f"{int(flat.min()) if flat.size else 0}")
    size = int(flat.max()) + 1 if flat.size else 0
    dtype = data[0].dtype if data else np.dtype(np.float32)
    rows = np.concatenate([d.reshape((i.size,) + tuple(inner or ()))
                           for i, d in zip(indices, data)])
    out = np.full((size,) + tuple(inner or ()), b"" if dtype.kind == "O" else 0, dtype)
    if flat.size:
        targets, last = np.unique(flat[::-1], return_index=True)
        out[targets] = rows[flat.size - 1 - last]
    return (out,)


@kernel("DynamicStitch")
def dynamic_stitch(*values, N: int | None = None, **_) -> tuple[np.ndarray]:
    return _stitch("DynamicStitch", list(values), N)


@kernel("ParallelDynamicStitch")
def parallel_dynamic_stitch(*values, N: int | None = None, **_) -> tuple[np.ndarray]:
    return _stitch("ParallelDynamicStitch", list(values), N)
