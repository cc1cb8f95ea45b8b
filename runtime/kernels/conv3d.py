"""Volumetric (3-D) convolution and pooling: Conv3D, Conv3DBackpropInputV2 (Keras's
Conv3DTranspose), MaxPool3D and AvgPool3D.

The same scheme as the 2-D kernels in nn.py, over three spatial axes: a convolution copies every
receptive field into one patch matrix (im2col) and contracts it with the filter by one matrix
product; the transposed convolution multiplies first and adds each filter tap's products back
into place (col2im); pooling combines one strided view per window tap over the whole output.
Window geometry (output sizes, SAME padding) is nn.py's, which follows TensorFlow's
GetWindowedOutputSize. Tensors are computed in NDHWC; NCDHW ones are transposed in and out.
TensorFlow's own CPU kernels refuse NCDHW and dilated convolutions, which its GPU kernels accept;
these kernels compute them, as nn.py does for 2-D, so that graphs exported on GPU machines run.
float16 and bfloat16 are computed in float32 and rounded once.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.nn import _Axis, _axis, _cached_lowest, _compute_dtype
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_SPATIAL = 3


def _layout(data_format: str, op: str) -> bool:
    """Whether data_format puts channels first (NCDHW)."""
    check(data_format in ("NDHWC", "NCDHW"), f"{op}: unsupported data_format {data_format!r}")
    return data_format == "NCDHW"


def _split(values, channels_first: bool, what: str, op: str) -> tuple[int, list[int], int]:
    """A 5-element attr in data_format order as (batch, [depth, height, width], channels)."""
    values = [int(v) for v in values]
    check(len(values) == 5, f"{op}: {what} must specify 5 dimensions, got {values}")
    if channels_first:
        return values[0], values[2:], values[1]
    return values[0], values[1:4], values[4]


def _to_last(x: np.ndarray, channels_first: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 4, 1) if channels_first else x


def _from_last(x: np.ndarray, channels_first: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3)) if channels_first else x


def _check_rank(x: np.ndarray, what: str, op: str) -> None:
    if x.ndim != 5:
        raise KernelError(f"{op}: {what} must be 5-dimensional, got shape {list(x.shape)}")


def _pad(x: np.ndarray, axes: list[_Axis], value=0) -> np.ndarray:
    """x (N, D, H, W, C) with each axis's padding, filled with `value`."""
    widths = [(0, 0)] + [(a.before, a.after) for a in axes] + [(0, 0)]
    if not any(before or after for before, after in widths):
        return np.ascontiguousarray(x)
    return np.pad(x, widths, constant_values=value)


def _tap(padded: np.ndarray, taps: tuple[int, ...], axes: list[_Axis]) -> np.ndarray:
    """A view (N, OD, OH, OW, C) of what window tap `taps` reads for every output position."""
    index = [slice(None)]
    for t, a in zip(taps, axes):
        start = t * a.dilation
        index.append(slice(start, start + (a.out - 1) * a.stride + 1, a.stride))
    return padded[tuple(index)]


def _conv_attrs(op: str, strides, dilations, padding: str,
                data_format: str) -> tuple[bool, list[int], list[int]]:
    channels_first = _layout(data_format, op)
    check(padding in ("SAME", "VALID"), f"{op}: unknown padding {padding!r}")
    sn, stride, sc = _split(strides, channels_first, "strides", op)
    dn, dilation, dc = _split(dilations or [1] * 5, channels_first, "dilations", op)
    check(sn == 1 and sc == 1, f"{op}: Current implementation does not yet support strides in "
                               "the batch and depth dimensions.")
    check(dn == 1 and dc == 1, f"{op}: Current implementation does not yet support dilations "
                               "in the batch and depth dimensions.")
    check(min(stride) > 0 and min(dilation) > 0,
          f"{op}: strides and dilations must be positive, got {list(strides)} and "
          f"{list(dilations)}")
    return channels_first, stride, dilation


def _window(spatial, window, stride, dilation, padding: str) -> list[_Axis]:
    return [_axis(size, k, s, d, padding, (0, 0))
            for size, k, s, d in zip(spatial, window, stride, dilation)]


@kernel("Conv3D")
def conv3d(input, filter, *, strides, padding: str, data_format: str = "NDHWC",
           dilations=(), **_) -> tuple[np.ndarray]:
    op = "Conv3D"
    channels_first, stride, dilation = _conv_attrs(op, strides, dilations, padding, data_format)
    _check_rank(input, "input", op)
    _check_rank(filter, "filter", op)
    x = _to_last(input, channels_first)
    n, channels = x.shape[0], x.shape[4]
    *window, depth, out = filter.shape
    check(channels == depth, f"{op}: input and filter must have the same depth: {channels} vs "
                             f"{depth}")
    axes = _window(x.shape[1:4], window, stride, dilation, padding)
    dtype = _compute_dtype(x.dtype)
    outs = tuple(a.out for a in axes)
    if min(n, out, *outs) == 0 or channels == 0:
        y = np.zeros((n, *outs, out), dtype)
    else:
        patches = _patches(_pad(x.astype(dtype, copy=False), axes), axes, window)
        y = (patches @ filter.astype(dtype, copy=False).reshape(-1, out)).reshape(n, *outs, out)
    return (_from_last(y.astype(x.dtype, copy=False), channels_first),)


def _patches(padded: np.ndarray, axes: list[_Axis], window) -> np.ndarray:
    """The im2col matrix (positions, KD * KH * KW * C), one copy out of a strided view."""
    n, c = padded.shape[0], padded.shape[4]
    sn, *spatial, sc = padded.strides
    shape = (n, *(a.out for a in axes), *window, c)
    steps = (sn, *(s * a.stride for s, a in zip(spatial, axes)),
             *(s * a.dilation for s, a in zip(spatial, axes)), sc)
    view = np.ndarray(shape, padded.dtype, padded, 0, steps)
    return view.reshape(n * math.prod(a.out for a in axes), math.prod(window) * c)


def _backprop_input(op: str, sizes: tuple[int, ...], filter: np.ndarray,
                    out_backprop: np.ndarray, strides, padding: str, data_format: str,
                    dilations) -> np.ndarray:
    """The gradient of Conv3D with respect to an input of `sizes` (data_format order)."""
    channels_first, stride, dilation = _conv_attrs(op, strides, dilations, padding, data_format)
    _check_rank(filter, "filter", op)
    _check_rank(out_backprop, "out_backprop", op)
    check(len(sizes) == 5 and min(sizes) >= 0, f"{op}: input_sizes must be 5 non-negative "
          f"sizes, got {list(sizes)}")
    n, spatial, channels = _split(sizes, channels_first, "input_sizes", op)
    grad = _to_last(out_backprop, channels_first)
    *window, depth, out = filter.shape
    check(channels == depth, f"{op}: input and filter must have the same depth: {channels} vs "
                             f"{depth}")
    axes = _window(spatial, window, stride, dilation, padding)
    want = (n, *(a.out for a in axes), out)
    if grad.shape != want:
        raise KernelError(f"{op}: out_backprop has shape {list(grad.shape)} in NDHWC, but a "
                          f"convolution of an input of {[n, *spatial, channels]} gives "
                          f"{list(want)}")
    dtype = _compute_dtype(out_backprop.dtype)
    x = np.zeros((n, *spatial, channels), dtype)
    if min(grad.size, x.size) > 0:
        products = grad.astype(dtype, copy=False).reshape(-1, out) @ \
            filter.astype(dtype, copy=False).reshape(-1, out).T
        products = products.reshape(*want[:4], *window, channels)
        x = _scatter_taps(products, axes, spatial)
    return _from_last(x.astype(out_backprop.dtype, copy=False), channels_first)


def _scatter_taps(products: np.ndarray, axes: list[_Axis], spatial) -> np.ndarray:
    """col2im: each tap's products (N, OD, OH, OW, [tap], C) added back where the tap read."""
    n, c = products.shape[0], products.shape[-1]
    lengths = [a.before + max(size + a.after, (a.out - 1) * a.stride + a.extent - a.before)
               for size, a in zip(spatial, axes)]
    padded = np.zeros((n, *lengths, c), products.dtype)
    for taps in itertools.product(*(range(a.window) for a in axes)):
        _tap(padded, taps, axes)[...] += products[(slice(None),) * 4 + taps]
    index = (slice(None),) + tuple(slice(a.before, a.before + size)
                                   for size, a in zip(spatial, axes))
    return np.ascontiguousarray(padded[index])


@kernel("Conv3DBackpropInputV2")
def conv3d_backprop_input_v2(input_sizes, filter, out_backprop, *, strides, padding: str,
                             data_format: str = "NDHWC", dilations=(),
                             **_) -> tuple[np.ndarray]:
    sizes = np.asarray(input_sizes)
    check(sizes.ndim == 1 and sizes.dtype.kind in "iu", "Conv3DBackpropInputV2: input_sizes "
          f"must be a 1-D integer tensor, got shape {list(sizes.shape)}")
    return (_backprop_input("Conv3DBackpropInputV2", tuple(sizes.tolist()), filter,
                            out_backprop, strides, padding, data_format, dilations),)


# Pooling -------------------------------------------------------------------------------------

def _pool_axes(op: str, x: np.ndarray, ksize, strides, padding: str,
               channels_first: bool) -> list[_Axis]:
    """The window of each spatial axis of x (NDHWC)."""
    check(padding in ("SAME", "VALID"), f"{op}: unknown padding {padding!r}")
    kn, window, kc = _split(ksize, channels_first, "ksize", op)
    sn, stride, sc = _split(strides, channels_first, "strides", op)
    check(min(kn, kc, *window) > 0 and min(sn, sc, *stride) > 0,
          f"{op}: ksize and strides must be positive, got {list(ksize)} and {list(strides)}")
    check(kn == 1 and sn == 1, f"{op}: Pooling is not yet supported on the batch dimension.")
    check(kc == 1 and sc == 1, f"{op}: Pooling is not yet supported on the depth dimension.")
    return _window(x.shape[1:4], window, stride, [1] * _SPATIAL, padding)


def _combine(padded: np.ndarray, axes: list[_Axis], ufunc: np.ufunc) -> np.ndarray:
    out = None
    for taps in itertools.product(*(range(a.window) for a in axes)):
        view = _tap(padded, taps, axes)
        out = view.copy() if out is None else ufunc(out, view, out=out)
    return out


def _pool_input(op: str, input, ksize, strides, padding: str, data_format: str):
    """What both 3-D pools start from: the input channels-last, its window axes, the layout,
    and the (empty) result when there is nothing to pool, else None."""
    channels_first = _layout(data_format, op)
    _check_rank(input, "input", op)
    x = _to_last(input, channels_first)
    axes = _pool_axes(op, x, ksize, strides, padding, channels_first)
    outs = tuple(a.out for a in axes)
    n, c = x.shape[0], x.shape[4]
    empty = None
    if min(n, c, *outs) == 0:
        empty = _from_last(np.zeros((n, *outs, c), x.dtype), channels_first)
    return x, axes, channels_first, empty


@kernel("MaxPool3D")
def max_pool3d(input, *, ksize, strides, padding: str, data_format: str = "NDHWC",
               **_) -> tuple[np.ndarray]:
    """NaN elements are skipped and the result is at least the dtype's lowest value, as in
    TensorFlow's MaxPool."""
    op = "MaxPool3D"
    x, axes, channels_first, empty = _pool_input(op, input, ksize, strides, padding, data_format)
    if empty is not None:
        return (empty,)
    dtype = _compute_dtype(x.dtype)
    lowest = _cached_lowest(x.dtype)
    y = _combine(_pad(x.astype(dtype, copy=False), axes, lowest), axes, np.fmax)
    y = np.fmax(y, dtype.type(lowest)).astype(x.dtype, copy=False)
    return (_from_last(y, channels_first),)


@kernel("AvgPool3D")
def avg_pool3d(input, *, ksize, strides, padding: str, data_format: str = "NDHWC",
               **_) -> tuple[np.ndarray]:
    """The mean of each window's input elements; padding is not counted."""
    op = "AvgPool3D"
    x, axes, channels_first, empty = _pool_input(op, input, ksize, strides, padding, data_format)
    if empty is not None:
        return (empty,)
    dtype = _compute_dtype(x.dtype)
    total = _combine(_pad(x.astype(dtype, copy=False), axes), axes, np.add)
    counts = np.ones((1,) * 5, dtype)
    for i, (size, a) in enumerate(zip(x.shape[1:4], axes)):
        starts = np.arange(a.out) * a.stride - a.before
        valid = np.minimum(starts + a.window, size) - np.maximum(starts, 0)
        counts = counts * valid.astype(dtype).reshape([-1 if j == i + 1 else 1 for j in range(5)])
    return (_from_last((total / counts).astype(x.dtype, copy=False), channels_first),)
