"""Where values fall: LowerBound/UpperBound (tf.searchsorted), Bucketize, HistogramFixedWidth,
InTopKV2 and UnravelIndex.

Comparisons are C++'s, as TensorFlow's kernels make them with std::lower_bound and
std::upper_bound: a NaN compares false with everything, so a NaN value's lower bound is 0 and its
upper bound the end of the row (numpy, which sorts NaN last, would put both at the first NaN).
"""
from __future__ import annotations

import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel


def _bounds(op: str, sorted_inputs, values, out_type, side: str) -> tuple[np.ndarray]:
    """Per row b, the insertion point of each values[b, j] in sorted_inputs[b] (assumed sorted
    ascending, as TensorFlow assumes): one searchsorted per row."""
    rows, wanted = np.asarray(sorted_inputs), np.asarray(values)
    check(rows.ndim == 2 and wanted.ndim == 2, f"{op}: sorted_inputs and values must be 2-D, "
          f"got shapes {list(rows.shape)} and {list(wanted.shape)}")
    check(rows.shape[0] == wanted.shape[0], f"{op}: Leading dim_size of both tensors must "
          f"match, got {rows.shape[0]} and {wanted.shape[0]}")
    dtype = np.dtype(np.int32) if out_type is None else out_type.numpy
    check(rows.shape[1] <= np.iinfo(dtype).max, f"{op}: trailing dim_size must be less than "
          f"{np.iinfo(dtype).max} for {dtype} output type")
    out = np.empty(wanted.shape, np.int64)
    for b in range(rows.shape[0]):
        out[b] = np.searchsorted(rows[b], wanted[b], side=side)
    if wanted.dtype.kind in "fc":
        out[np.isnan(wanted)] = 0 if side == "left" else rows.shape[1]
    return (out.astype(dtype),)


@kernel("LowerBound")
def lower_bound(sorted_inputs, values, *, out_type=None, **_) -> tuple[np.ndarray]:
    return _bounds("LowerBound", sorted_inputs, values, out_type, "left")


@kernel("UpperBound")
def upper_bound(sorted_inputs, values, *, out_type=None, **_) -> tuple[np.ndarray]:
    return _bounds("UpperBound", sorted_inputs, values, out_type, "right")


@kernel("Bucketize")
def bucketize(input, *, boundaries, **_) -> tuple[np.ndarray]:
    """The number of boundaries <= each value. Boundaries are float32 (the attr's type); a
    float64 input is compared in float64, any other converted to float32, as C++ converts the
    two sides of `value < boundary`."""
    x = np.asarray(input)
    edges = np.asarray(boundaries, np.float32)
    check(bool((np.diff(edges) >= 0).all()), "Bucketize: Expected sorted boundaries")
    compared = x if x.dtype == np.float64 else x.astype(np.float32)
    return (np.searchsorted(edges.astype(compared.dtype), compared, side="right")
            .astype(np.int32),)


@kernel("HistogramFixedWidth")
def histogram_fixed_width(values, value_range, nbins, *, dtype=None,
                          **_) -> tuple[np.ndarray]:
    """Counts of values in nbins equal bins over value_range; values below the range count in
    the first bin, values above it in the last. The bin is (v - lo) / step in double precision,
    clamped to [0, nbins - 1] and truncated, as TensorFlow computes it."""
    x = np.asarray(values)
    limits = np.asarray(value_range)
    check(limits.shape == (2,), f"HistogramFixedWidth: value_range should be a vector of 2 "
          f"elements, got shape {list(limits.shape)}")
    count = np.asarray(nbins)
    check(count.ndim == 0, f"HistogramFixedWidth: nbins should be a scalar, got shape "
          f"{list(count.shape)}")
    bins = int(count)
    check(bins > 0, f"HistogramFixedWidth: nbins should be a positive number, but got '{bins}'")
    low, high = limits.tolist()
    check(low < high, f"HistogramFixedWidth: value_range should satisfy value_range[0] < "
          f"value_range[1], but got '[{low}, {high}]'")
    step = (float(high) - float(low)) / bins
    with np.errstate(invalid="ignore"):
        position = np.clip((x.astype(np.float64) - float(low)) / step, 0, bins - 1)
    index = position[~np.isnan(position)].astype(np.int64)
    out_dtype = np.dtype(np.int32) if dtype is None else dtype.numpy
    return (np.bincount(index.reshape(-1), minlength=bins).astype(out_dtype),)


@kernel("InTopKV2", "InTopK")
def in_top_k(predictions, targets, k=None, **attrs) -> tuple[np.ndarray]:
    """Whether each row's target class is among its k largest predictions: fewer than k
    predictions are strictly greater than it. With an out-of-range target or a non-finite
    prediction anywhere in its row, a target is never in the top k. (InTopK takes k as an
    attr.)"""
    scores, target = np.asarray(predictions), np.asarray(targets)
    limit = np.asarray(attrs.get("k") if k is None else k)
    check(limit.ndim == 0 and limit.dtype.kind in "iu",
          f"InTopK: k must be an integer scalar, got shape {list(limit.shape)} of {limit.dtype}")
    check(target.dtype.kind in "iu", f"InTopK: targets must be integers, got {target.dtype}")
    check(scores.ndim == 2, f"InTopK: predictions must be 2-dimensional, got shape "
          f"{list(scores.shape)}")
    check(target.ndim == 1, f"InTopK: targets must be 1-dimensional, got shape "
          f"{list(target.shape)}")
    check(scores.shape[0] == target.size, f"InTopK: First dimension of predictions "
          f"{scores.shape[0]} must match length of targets {target.size}")
    batch, classes = scores.shape
    valid = (target >= 0) & (target < classes)
    picked = scores[np.arange(batch), np.where(valid, target, 0)] if classes else \
        np.zeros(batch, scores.dtype)
    valid &= np.isfinite(scores).all(axis=1)
    greater = (scores > picked[:, None]).sum(axis=1)
    return (valid & (greater < int(limit)),)


@kernel("UnravelIndex")
def unravel_index(indices, dims, **_) -> tuple[np.ndarray]:
    """Coordinates in a tensor of shape dims of each flat index: shape [len(dims)] for a scalar
    index, [len(dims), n] for a vector. Computed as TensorFlow does, with C++'s truncating
    division and remainder, which it also applies to (unchecked) negative indices."""
    flat, shape = np.asarray(indices), np.asarray(dims)
    check(flat.ndim <= 1, f"UnravelIndex: The indices can only be scalar or vector, got "
          f"{list(flat.shape)}")
    check(flat.size > 0, "UnravelIndex: received empty tensor indices")
    check(shape.ndim == 1 and shape.size > 0, f"UnravelIndex: dims must be a non-empty 1-D "
          f"vector, got shape {list(shape.shape)}")
    check(bool((shape > 0).all()), f"UnravelIndex: Input dims must be > 0, got "
          f"{shape.tolist()}")
    size = math.prod(shape.tolist())
    check(size <= np.iinfo(shape.dtype).max, "UnravelIndex: Input dims product is causing "
          "integer overflow")
    if (flat >= size).any():
        raise KernelError(f"UnravelIndex: index {int(flat[flat >= size].reshape(-1)[0])} is out "
                          f"of bound as with dims {shape.tolist()}")
    sizes = shape.astype(np.int64)
    strides = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]]).astype(np.int64)
    wide = flat.astype(np.int64)[None, ...]
    steps = strides.reshape((-1,) + (1,) * flat.ndim)
    quotient = np.sign(wide) * (np.abs(wide) // steps)
    return (np.fmod(quotient, sizes.reshape(steps.shape)).astype(shape.dtype),)
