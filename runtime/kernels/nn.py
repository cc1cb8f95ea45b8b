"""Convolution, pooling and batch normalization: the ops of convolutional Keras models.

Convolutions gather every receptive field into one patch matrix (im2col) and contract it with
the filter by matrix product, so the work is BLAS's, not a Python loop over pixels (narrow
products run in blocks of rows on the calling thread, see `_blocked_matmul`). The patch matrix
is one copy out of a strided view of the padded input: row by row, or, for inputs with few
channels (where a row's innermost runs would be too short to copy quickly), column by column
into a column-major matrix; a 1x1 convolution is a plain matrix product. Depthwise
convolutions and pooling loop over the filter taps (pooling separably: along the height, then
the width), each tap one vectorized multiply-add or maximum over the whole output. The
transposed convolution multiplies first and then scatters the products back (col2im), one
vectorized add per filter tap, which wastes no work on the zeros a strided transposed
convolution would otherwise insert.

Everything is computed in NHWC; NCHW tensors are transposed in and out. TensorFlow's CPU kernels
refuse some attrs that its GPU kernels accept (NCHW convolutions and pooling, dilated or
non-square-strided depthwise convolutions, dilated or grouped Conv2DBackpropInput); these kernels
compute them, so that graphs exported on GPU machines run here. float16 and bfloat16 are
computed in float32 and rounded once at the end, as TensorFlow's CPU kernels accumulate.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.math import channel_tiled
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_NARROW_FLOATS = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})
_FLOAT32 = np.dtype(np.float32)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype arithmetic runs in: narrow floats widen to float32, as TensorFlow's CPU does."""
    return _FLOAT32 if dtype in _NARROW_FLOATS else dtype


def _ctrunc_div(a: int, b: int) -> int:
    """C++ integer division (toward zero): TensorFlow's output sizes depend on it for VALID
    windows larger than the input, where floor division would report a negative size."""
    quotient = abs(a) // b
    return quotient if a >= 0 else -quotient


# ---------------------------------------------------------------------------------------------
# Window geometry


@dataclass(frozen=True)
class _Axis:
    """A sliding window along one spatial axis: padding on each side and the output size."""

    window: int
    stride: int
    dilation: int
    before: int
    after: int
    out: int

    @property
    def extent(self) -> int:
        return (self.window - 1) * self.dilation + 1


def _axis(size: int, window: int, stride: int, dilation: int, padding: str,
          explicit: tuple[int, int]) -> _Axis:
    """Output size and padding as TensorFlow's GetWindowedOutputSize computes them."""
    extent = (window - 1) * dilation + 1
    if padding == "SAME":
        out = _ctrunc_div(size + stride - 1, stride)
        needed = max(0, (out - 1) * stride + extent - size)
        before, after = needed // 2, needed - needed // 2
    else:
        before, after = explicit if padding == "EXPLICIT" else (0, 0)
        out = _ctrunc_div(size + before + after - extent + stride, stride)
    check(out >= 0, f"Computed output size would be negative: {out} [input_size: {size}, "
                    f"effective_filter_size: {extent}, stride: {stride}]")
    return _Axis(window, stride, dilation, before, after, out)


@dataclass(frozen=True)
class _Spec:
    """The attrs of a 2-D windowed op, validated and reduced to NHWC order."""

    channels_first: bool
    strides: tuple[int, int]
    dilations: tuple[int, int]
    padding: str
    explicit: tuple[tuple[int, int], tuple[int, int]]

    def axes(self, height: int, width: int, window: tuple[int, int]) -> tuple[_Axis, _Axis]:
        return _window_axes(self, height, width, window)


@functools.lru_cache(maxsize=1024)
def _window_axes(spec: _Spec, height: int, width: int,
                 window: tuple[int, int]) -> tuple[_Axis, _Axis]:
    """Both spatial axes of a windowed op; cached, since a node sees the same shapes on every
    call."""
    return tuple(_axis(size, k, s, d, spec.padding, pads) for size, k, s, d, pads in zip(
        (height, width), window, spec.strides, spec.dilations, spec.explicit))


def _layout(data_format: str, op: str) -> bool:
    """Whether `data_format` puts channels first (NCHW) rather than last (NHWC)."""
    check(data_format in ("NHWC", "NCHW"), f"{op}: unsupported data_format {data_format!r}")
    return data_format == "NCHW"


def _split(values, channels_first: bool, what: str, op: str) -> tuple[int, int, int, int]:
    """A 4-element attr in data_format order as (batch, height, width, channels)."""
    values = tuple(int(v) for v in values)
    check(len(values) == 4, f"{op}: {what} must specify 4 dimensions, got {list(values)}")
    n, a, b, c = values
    return (n, b, c, a) if channels_first else (n, a, b, c)


@functools.lru_cache(maxsize=512)
def _conv_spec(op: str, strides: tuple, dilations: tuple, padding: str, explicit: tuple,
               data_format: str) -> _Spec:
    """Validated convolution attrs; cached because a node's attrs never change between calls."""
    channels_first = _layout(data_format, op)
    sn, sh, sw, sc = _split(strides, channels_first, "strides", op)
    dn, dh, dw, dc = _split(dilations or (1, 1, 1, 1), channels_first, "dilations", op)
    check(sn == 1 and sc == 1, f"{op}: Current implementation does not yet support strides in "
                               "the batch and depth dimensions.")
    check(dn == 1 and dc == 1, f"{op}: Current implementation does not yet support dilations "
                               "in the batch and depth dimensions.")
    check(sh > 0 and sw > 0, f"{op}: strides must be positive, got {list(strides)}")
    check(dh > 0 and dw > 0, f"{op}: dilations must be positive, got {list(dilations)}")
    return _Spec(channels_first, (sh, sw), (dh, dw), padding,
                 _explicit_paddings(explicit, padding, channels_first, op))


def _explicit_paddings(explicit: tuple, padding: str, channels_first: bool,
                       op: str) -> tuple[tuple[int, int], tuple[int, int]]:
    check(padding in ("SAME", "VALID", "EXPLICIT"), f"{op}: unknown padding {padding!r}")
    if padding != "EXPLICIT":
        check(not explicit, f"{op}: explicit_paddings must be empty unless padding is EXPLICIT")
        return ((0, 0), (0, 0))
    check(len(explicit) == 8, f"{op}: explicit_paddings must have 8 elements, got {len(explicit)}")
    check(all(p >= 0 for p in explicit),
          f"{op}: All elements of explicit_paddings must be nonnegative")
    pairs = [tuple(explicit[i:i + 2]) for i in range(0, 8, 2)]
    n, h, w, c = _split(range(4), channels_first, "explicit_paddings", op)
    check(pairs[n] == (0, 0) and pairs[c] == (0, 0),
          f"{op}: Nonzero explicit padding in the batch or depth dimensions is not supported")
    return (pairs[h], pairs[w])


def _to_nhwc(x: np.ndarray, channels_first: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if channels_first else x


def _from_nhwc(x: np.ndarray, channels_first: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if channels_first else x


def _check_rank(x: np.ndarray, rank: int, what: str, op: str) -> None:
    if x.ndim != rank:
        raise KernelError(f"{op}: {what} must be {rank}-dimensional, got shape {list(x.shape)}")


# ---------------------------------------------------------------------------------------------
# Convolution


def _pad(x: np.ndarray, rows: _Axis, cols: _Axis, value=0) -> np.ndarray:
    """x with the axes' padding around its height and width, filled with `value`: a new
    C-contiguous array, or x itself when there is no padding."""
    if not (rows.before or rows.after or cols.before or cols.after):
        return x
    n, h, w, c = x.shape
    shape = (n, rows.before + h + rows.after, cols.before + w + cols.after, c)
    out = np.zeros(shape, x.dtype) if value == 0 else np.full(shape, value, x.dtype)
    out[:, rows.before:rows.before + h, cols.before:cols.before + w] = x
    return out


def _windows(padded: np.ndarray, rows: _Axis, cols: _Axis) -> np.ndarray:
    """A view (N, out_h, out_w, window_h, window_w, C) of every window of an already padded
    input, in filter order, so that reshaping it to (pixels, kh * kw * C) is the im2col copy.
    Built from strides directly: numpy's sliding_window_view spends more time in Python than
    the copy of a small convolution's patches takes."""
    padded = np.ascontiguousarray(padded)
    n, _, _, c = padded.shape
    sn, sh, sw, sc = padded.strides
    return np.ndarray((n, rows.out, cols.out, rows.window, cols.window, c), padded.dtype, padded,
                      0, (sn, sh * rows.stride, sw * cols.stride, sh * rows.dilation,
                          sw * cols.dilation, sc))


def _tap(padded: np.ndarray, i: int, j: int, rows: _Axis, cols: _Axis) -> np.ndarray:
    """A view (N, out_h, out_w, C) of what filter tap (i, j) reads for every output pixel."""
    top, left = i * rows.dilation, j * cols.dilation
    return padded[:, top:top + (rows.out - 1) * rows.stride + 1:rows.stride,
                  left:left + (cols.out - 1) * cols.stride + 1:cols.stride]


_COLUMN_MAJOR_MAX_CHANNELS = 3
"""Up to this many input channels, the patch matrix is copied column by column (each column's
copy runs along whole rows of the input); with more, row by row (each row's copy runs along
the channels of a window)."""


def _patches(x: np.ndarray, rows: _Axis, cols: _Axis, kh: int, kw: int) -> np.ndarray:
    """The im2col matrix (pixels, kh * kw * C): a row per output pixel (n, oh, ow), columns in
    filter order (kh, kw, C), made by one copy out of a strided view of the padded input.
    Column-major for few channels, which BLAS reads as well."""
    n, c = x.shape[0], x.shape[3]
    pixels = n * rows.out * cols.out
    padded = np.ascontiguousarray(_pad(x, rows, cols))
    if kh == kw == 1:
        return _tap(padded, 0, 0, rows, cols).reshape(pixels, c)
    if c <= _COLUMN_MAJOR_MAX_CHANNELS:
        sn, sh, sw, sc = padded.strides
        columns = np.ndarray((kh, kw, c, n, rows.out, cols.out), padded.dtype, padded, 0,
                             (sh * rows.dilation, sw * cols.dilation, sc, sn, sh * rows.stride,
                              sw * cols.stride))
        return np.ascontiguousarray(columns).reshape(kh * kw * c, pixels).T
    return _windows(padded, rows, cols).reshape(pixels, kh * kw * c)


def _convolve(x: np.ndarray, filt: np.ndarray, rows: _Axis, cols: _Axis,
              groups: int) -> np.ndarray:
    """NHWC convolution of x with an HWIO filter whose I is x's channels per group."""
    n = x.shape[0]
    kh, kw, group_in, out = filt.shape
    group_out = out // groups
    dtype = _compute_dtype(x.dtype)
    if min(n, rows.out, cols.out, out) == 0:
        return np.zeros((n, rows.out, cols.out, out), dtype)
    x = x.astype(dtype, copy=False)
    weights = filt.astype(dtype, copy=False)
    if group_in == 1 and groups > 1:
        return _depthwise(x, weights.reshape(kh, kw, groups * group_out), group_out, rows, cols)
    if groups == 1:
        product = _blocked_matmul(_patches(x, rows, cols, kh, kw),
                                  weights.reshape(kh * kw * group_in, out))
        return product.reshape(n, rows.out, cols.out, out)
    pixels = n * rows.out * cols.out
    patches = _windows(_pad(x, rows, cols), rows, cols)  # (N, OH, OW, KH, KW, C)
    patches = patches.reshape(n, rows.out, cols.out, kh, kw, groups, group_in)
    patches = patches.transpose(5, 0, 1, 2, 3, 4, 6).reshape(groups, pixels, kh * kw * group_in)
    weights = weights.reshape(kh * kw * group_in, groups, group_out)
    product = np.matmul(patches, weights.transpose(1, 0, 2))  # (G, pixels, group_out)
    return product.transpose(1, 0, 2).reshape(n, rows.out, cols.out, out)


_BLOCK_PRODUCT = 262144
"""Rows x columns x depth of one block of `_blocked_matmul`: OpenBLAS runs products up to this
size on the calling thread (its GEMM threading threshold)."""
_BLOCK_MIN_ROWS = 128


def _blocked_matmul(patches: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """patches @ weights, for the tall and narrow products of convolutions with few channels,
    in blocks of rows that BLAS computes on the calling thread. Threading such a product gains
    little even on an idle machine (it moves about as much memory as it computes), and when
    another process holds a core, OpenBLAS's threads wait for each other for milliseconds; the
    blocks also keep each slice of the patch matrix in cache. Wider products, where threads pay
    off, go to BLAS whole."""
    pixels, depth = patches.shape
    columns = weights.shape[1]
    block = _BLOCK_PRODUCT // max(depth * columns, 1)
    if block < _BLOCK_MIN_ROWS or pixels <= block:
        return np.matmul(patches, weights)
    out = np.empty((pixels, columns), np.result_type(patches, weights))
    for start in range(0, pixels, block):
        np.matmul(patches[start:start + block], weights, out=out[start:start + block])
    return out


def _depthwise(x: np.ndarray, weights: np.ndarray, multiplier: int, rows: _Axis,
               cols: _Axis) -> np.ndarray:
    """One input channel per group, `weights` (KH, KW, C * multiplier): a multiply-accumulate
    per filter tap over the whole output. Each input channel is first repeated `multiplier`
    times, so output channel c * multiplier + m reads input channel c. With unit column stride a
    tap's rows are contiguous runs of out_w * channels values, and the weights are tiled to
    match, so numpy's inner loop runs along whole rows instead of a few channels."""
    padded = _pad(x, rows, cols)
    if multiplier > 1:
        padded = np.repeat(padded, multiplier, axis=3)
    n, channels = x.shape[0], padded.shape[3]
    kh, kw = weights.shape[:2]
    shape = (n, rows.out, cols.out, channels)
    if cols.stride == 1:
        weights = np.tile(weights, (1, 1, cols.out))
        shape = (n, rows.out, cols.out * channels)
    out = np.empty(shape, x.dtype)
    product = np.empty(shape, x.dtype)
    for i in range(kh):
        for j in range(kw):
            tap = _tap(padded, i, j, rows, cols).reshape(shape)
            if i == j == 0:
                np.multiply(tap, weights[i, j], out=out)
            else:
                np.multiply(tap, weights[i, j], out=product)
                out += product
    return out.reshape(n, rows.out, cols.out, channels)


def _conv2d(op: str, x: np.ndarray, filt: np.ndarray, spec: _Spec, groups_from) -> np.ndarray:
    _check_rank(x, 4, "input", op)
    _check_rank(filt, 4, "filter", op)
    x = _to_nhwc(x, spec.channels_first)
    filt, groups = groups_from(x.shape[3], filt)
    rows, cols = spec.axes(x.shape[1], x.shape[2], filt.shape[:2])
    if filt.size == 0 and min(x.shape[0], rows.out, cols.out, filt.shape[3]) != 0:
        raise KernelError(f"{op}: filter must not have zero elements (i.e. all dimensions must "
                          "be non-zero)")
    y = _convolve(x, filt, rows, cols, groups).astype(x.dtype, copy=False)
    return _from_nhwc(y, spec.channels_first)


def _conv2d_groups(channels: int, filt: np.ndarray) -> tuple[np.ndarray, int]:
    """Conv2D's grouping: the filter's in-depth divides the input's depth into groups."""
    group_in, out = filt.shape[2], filt.shape[3]
    if group_in <= 0:
        raise KernelError(f"Conv2D: filter depth must be stricly positive, got {group_in}")
    if channels % group_in:
        raise KernelError(f"Conv2D: input depth must be evenly divisible by filter depth: "
                          f"{channels} vs {group_in}")
    groups = channels // group_in
    if out % groups:
        raise KernelError(f"Conv2D: output depth must be evenly divisible by number of groups: "
                          f"{out} vs {groups}")
    return filt, groups


def _depthwise_groups(channels: int, filt: np.ndarray) -> tuple[np.ndarray, int]:
    """A depthwise filter (H, W, C, M) is a grouped one (H, W, 1, C*M) with C groups: output
    channel c*M + m is input channel c convolved with filter[..., c, m]."""
    if filt.shape[2] != channels:
        raise KernelError(f"DepthwiseConv2dNative: input and filter must have the same depth: "
                          f"{channels} vs {filt.shape[2]}")
    kh, kw, c, m = filt.shape
    return filt.reshape(kh, kw, 1, c * m), c


@kernel("Conv2D")
def conv2d(input: np.ndarray, filter: np.ndarray, *, strides, padding: str,
           explicit_paddings=(), data_format: str = "NHWC", dilations=(1, 1, 1, 1),
           **_) -> tuple[np.ndarray]:
    spec = _conv_spec("Conv2D", tuple(strides), tuple(dilations), padding,
                      tuple(explicit_paddings), data_format)
    return (_conv2d("Conv2D", input, filter, spec, _conv2d_groups),)


@kernel("DepthwiseConv2dNative")
def depthwise_conv2d(input: np.ndarray, filter: np.ndarray, *, strides, padding: str,
                     explicit_paddings=(), data_format: str = "NHWC", dilations=(1, 1, 1, 1),
                     **_) -> tuple[np.ndarray]:
    spec = _conv_spec("DepthwiseConv2dNative", tuple(strides), tuple(dilations), padding,
                      tuple(explicit_paddings), data_format)
    return (_conv2d("DepthwiseConv2dNative", input, filter, spec, _depthwise_groups),)


# ---------------------------------------------------------------------------------------------
# Transposed convolution


def _backprop_input_shape(input_sizes: np.ndarray, filt: np.ndarray, grad: np.ndarray,
                          channels_first: bool) -> tuple[int, int, int, int]:
    """The NHWC shape of the gradient: input_sizes holds all 4 dims, or only the spatial two
    (batch and depth then come from out_backprop and the filter)."""
    sizes = np.asarray(input_sizes)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu":
        raise KernelError(f"Conv2DBackpropInput: input_sizes must be a 1-D integer tensor, got "
                          f"shape {list(sizes.shape)} of {sizes.dtype}")
    values = sizes.tolist()
    if len(values) == 2:
        return grad.shape[0], values[0], values[1], filt.shape[2]
    if len(values) != 4:
        raise KernelError(f"Conv2DBackpropInput: input_sizes must have 2 or 4 elements, got "
                          f"{len(values)}")
    n, h, w, c = _split(values, channels_first, "input_sizes", "Conv2DBackpropInput")
    if min(n, h, w, c) < 0:
        raise KernelError(f"Conv2DBackpropInput: input_sizes must be non-negative, got {values}")
    return n, h, w, c


def _scatter_taps(cols: np.ndarray, rows: _Axis, cols_axis: _Axis, height: int,
                  width: int) -> np.ndarray:
    """col2im: add each tap's products (N, OH, OW, KH, KW, C) into the padded input grid it
    was read from, then drop the padding."""
    n, oh, ow, kh, kw, c = cols.shape
    grid_h = max(rows.before + height, (kh - 1) * rows.dilation + (oh - 1) * rows.stride + 1)
    grid_w = max(cols_axis.before + width,
                 (kw - 1) * cols_axis.dilation + (ow - 1) * cols_axis.stride + 1)
    grid = np.zeros((n, grid_h, grid_w, c), cols.dtype)
    for i in range(kh):
        top = i * rows.dilation
        for j in range(kw):
            left = j * cols_axis.dilation
            bottom = top + (oh - 1) * rows.stride + 1
            right = left + (ow - 1) * cols_axis.stride + 1
            grid[:, top:bottom:rows.stride, left:right:cols_axis.stride] += cols[:, :, :, i, j]
    return grid[:, rows.before:rows.before + height, cols_axis.before:cols_axis.before + width]


@kernel("Conv2DBackpropInput")
def conv2d_backprop_input(input_sizes: np.ndarray, filter: np.ndarray, out_backprop: np.ndarray,
                          *, strides, padding: str, explicit_paddings=(),
                          data_format: str = "NHWC", dilations=(1, 1, 1, 1),
                          **_) -> tuple[np.ndarray]:
    op = "Conv2DBackpropInput"
    spec = _conv_spec(op, tuple(strides), tuple(dilations), padding, tuple(explicit_paddings),
                      data_format)
    _check_rank(filter, 4, "filter", op)
    _check_rank(out_backprop, 4, "out_backprop", op)
    grad = _to_nhwc(out_backprop, spec.channels_first)
    n, height, width, channels = _backprop_input_shape(input_sizes, filter, grad,
                                                       spec.channels_first)
    kh, kw, group_in, out = filter.shape
    if not (group_in > 0 and channels % group_in == 0):
        raise KernelError(f"{op}: input depth {channels} must be evenly divisible by filter "
                          f"depth {group_in}")
    groups = channels // group_in
    if not (out % groups == 0 and out == grad.shape[3]):
        raise KernelError(f"{op}: filter out depth {out} must match out_backprop depth "
                          f"{grad.shape[3]} and be divisible by the {groups} groups")
    rows, cols = spec.axes(height, width, (kh, kw))
    if grad.shape[:3] != (n, rows.out, cols.out):
        raise KernelError(f"{op}: out_backprop has shape {list(grad.shape)} in NHWC, but a "
                          f"convolution of an input of {[n, height, width, channels]} gives "
                          f"{[n, rows.out, cols.out, out]}")
    dtype = _compute_dtype(out_backprop.dtype)
    x = np.zeros((n, height, width, channels), dtype)
    if min(n, rows.out, cols.out, height, width, channels) > 0:
        products = _products(grad.astype(dtype, copy=False), filter.astype(dtype, copy=False),
                             groups)
        x = _scatter_taps(products, rows, cols, height, width)
    return (_from_nhwc(x.astype(out_backprop.dtype, copy=False), spec.channels_first),)


def _products(grad: np.ndarray, filt: np.ndarray, groups: int) -> np.ndarray:
    """Every output gradient times every filter tap: (N, OH, OW, KH, KW, C), one matmul."""
    n, oh, ow, out = grad.shape
    kh, kw, group_in, _ = filt.shape
    group_out = out // groups
    grad = grad.reshape(n * oh * ow, groups, group_out).transpose(1, 0, 2)
    weights = filt.reshape(kh * kw, group_in, groups, group_out).transpose(2, 3, 0, 1)
    cols = np.matmul(grad, weights.reshape(groups, group_out, kh * kw * group_in))
    cols = cols.reshape(groups, n, oh, ow, kh, kw, group_in).transpose(1, 2, 3, 4, 5, 0, 6)
    return cols.reshape(n, oh, ow, kh, kw, groups * group_in)


# ---------------------------------------------------------------------------------------------
# Pooling


@dataclass(frozen=True)
class _PoolSpec:
    """Validated pooling attrs: either a spatial window or a window across channels."""

    conv: _Spec
    window: tuple[int, int]
    depth: int


@functools.lru_cache(maxsize=512)
def _pool_spec(op: str, ksize: tuple, strides: tuple, padding: str, explicit: tuple,
               data_format: str) -> _PoolSpec:
    channels_first = _layout(data_format, op)
    kn, kh, kw, kc = _split(ksize, channels_first, "ksize", op)
    sn, sh, sw, sc = _split(strides, channels_first, "strides", op)
    check(min(kn, kh, kw, kc) > 0, f"{op}: Sliding window ksize must be positive. The specified "
                                   f"or inferred ksize is: {list(ksize)}")
    check(min(sn, sh, sw, sc) > 0, f"{op}: Stride must be > 0, but got {list(strides)}")
    check(kn == 1 and sn == 1, f"{op}: Pooling is not yet supported on the batch dimension.")
    explicit_pairs = _explicit_paddings(explicit, padding, channels_first, op)
    if kc == 1 and sc == 1:
        return _PoolSpec(_Spec(channels_first, (sh, sw), (1, 1), padding, explicit_pairs),
                         (kh, kw), 1)
    check(op.startswith("MaxPool"), f"{op}: Non-spatial pooling is not yet supported.")
    check(kh == kw == sh == sw == 1, f"{op}: MaxPooling supports exactly one of pooling across "
                                     "depth or pooling across width/height.")
    check(kc == sc, f"{op}: Depthwise max pooling requires the depth window to equal the "
                    "depth stride.")
    return _PoolSpec(_Spec(channels_first, (1, 1), (1, 1), padding, explicit_pairs), (1, 1), kc)


def _lowest(dtype: np.dtype):
    info = np.iinfo(dtype) if dtype.kind in "iu" else ml_dtypes.finfo(dtype)
    return dtype.type(info.min)


_LOWEST: dict[np.dtype, object] = {}


def _cached_lowest(dtype: np.dtype):
    lowest = _LOWEST.get(dtype)
    if lowest is None:
        lowest = _LOWEST[dtype] = _lowest(dtype)
    return lowest


def _max_windows(windows: np.ndarray, dtype: np.dtype, axis) -> np.ndarray:
    """TensorFlow's max pooling starts from the dtype's lowest value and keeps the running
    maximum unless an element compares greater, so NaNs are skipped and -inf (or an all-NaN
    window) yields the lowest finite value."""
    if dtype.kind in "iu":
        return windows.max(axis=axis)
    return np.fmax(np.fmax.reduce(windows, axis=axis), _cached_lowest(dtype))


def _separable(padded: np.ndarray, rows: _Axis, cols: _Axis, combine: np.ufunc) -> np.ndarray:
    """`combine` (a ufunc such as np.fmax or np.add) reduced over every window of the padded
    input, as a new C-contiguous (N, out_h, out_w, C) array: first over the window's rows, one
    vectorized call per row offset, then over its columns the same way."""
    span_h = (rows.out - 1) * rows.stride + 1
    span_w = (cols.out - 1) * cols.stride + 1
    if rows.window == 1 and cols.window == 1:
        return padded[:, :span_h:rows.stride, :span_w:cols.stride].copy()
    tall = padded[:, :span_h:rows.stride]
    if rows.window > 1:
        tall = combine(tall, padded[:, 1:1 + span_h:rows.stride])
        for i in range(2, rows.window):
            combine(tall, padded[:, i:i + span_h:rows.stride], out=tall)
    if cols.window == 1:
        return np.ascontiguousarray(tall[:, :, :span_w:cols.stride])
    out = combine(tall[:, :, :span_w:cols.stride], tall[:, :, 1:1 + span_w:cols.stride])
    for j in range(2, cols.window):
        combine(out, tall[:, :, j:j + span_w:cols.stride], out=out)
    return out


def _max_pool(op: str, x: np.ndarray, spec: _PoolSpec) -> np.ndarray:
    _check_rank(x, 4, "input", op)
    x = _to_nhwc(x, spec.conv.channels_first)
    if spec.depth > 1:
        return _from_nhwc(_depth_max_pool(op, x, spec.depth), spec.conv.channels_first)
    rows, cols = spec.conv.axes(x.shape[1], x.shape[2], spec.window)
    if min(x.shape[0], x.shape[3], rows.out, cols.out) == 0:
        y = np.zeros((x.shape[0], rows.out, cols.out, x.shape[3]), x.dtype)
    else:
        lowest = _cached_lowest(x.dtype)
        padded = _pad(x, rows, cols, lowest)
        if x.dtype.kind in "iu":
            y = _separable(padded, rows, cols, np.maximum)
        else:
            y = _separable(padded, rows, cols, np.fmax)
            np.fmax(y, lowest, out=y)
    return _from_nhwc(y, spec.conv.channels_first)


def _depth_max_pool(op: str, x: np.ndarray, depth: int) -> np.ndarray:
    if x.shape[3] % depth:
        raise KernelError(f"{op}: Depthwise max pooling requires the depth window to evenly "
                          f"divide the input depth {x.shape[3]}")
    n, h, w, c = x.shape
    if x.size == 0:
        return np.zeros((n, h, w, c // depth), x.dtype)
    return _max_windows(x.reshape(n, h, w, c // depth, depth), x.dtype, 4)


@kernel("MaxPool")
def max_pool(input: np.ndarray, *, ksize, strides, padding: str, explicit_paddings=(),
             data_format: str = "NHWC", **_) -> tuple[np.ndarray]:
    spec = _pool_spec("MaxPool", tuple(ksize), tuple(strides), padding, tuple(explicit_paddings),
                      data_format)
    return (_max_pool("MaxPool", input, spec),)


@kernel("MaxPoolV2")
def max_pool_v2(input: np.ndarray, ksize: np.ndarray, strides: np.ndarray, *, padding: str,
                data_format: str = "NHWC", **_) -> tuple[np.ndarray]:
    for name, value in (("ksize", ksize), ("strides", strides)):
        if np.ndim(value) != 1 or np.size(value) != 4:
            raise KernelError(f"MaxPoolV2: Sliding window {name} field must specify 4 "
                              "dimensions")
    spec = _pool_spec("MaxPoolV2", tuple(ksize.tolist()), tuple(strides.tolist()), padding, (),
                      data_format)
    return (_max_pool("MaxPoolV2", input, spec),)


def _valid_counts(size: int, axis: _Axis) -> np.ndarray:
    """How many input (not padding) elements each output window covers along one axis."""
    starts = np.arange(axis.out) * axis.stride - axis.before
    return np.minimum(starts + axis.window, size) - np.maximum(starts, 0)


@functools.lru_cache(maxsize=256)
def _avg_divisors(height: int, width: int, rows: _Axis, cols: _Axis,
                  dtype: np.dtype) -> np.ndarray:
    """(out_h, out_w, 1): how many input elements each window averages; cached per shape."""
    counts = np.outer(_valid_counts(height, rows), _valid_counts(width, cols))
    divisors = counts[:, :, None].astype(dtype)
    divisors.flags.writeable = False
    return divisors


@kernel("AvgPool")
def avg_pool(value: np.ndarray, *, ksize, strides, padding: str, data_format: str = "NHWC",
             **_) -> tuple[np.ndarray]:
    spec = _pool_spec("AvgPool", tuple(ksize), tuple(strides), padding, (), data_format)
    _check_rank(value, 4, "value", "AvgPool")
    x = _to_nhwc(value, spec.conv.channels_first)
    rows, cols = spec.conv.axes(x.shape[1], x.shape[2], spec.window)
    dtype = _compute_dtype(x.dtype)
    if min(x.shape[0], x.shape[3], rows.out, cols.out) == 0:
        y = np.zeros((x.shape[0], rows.out, cols.out, x.shape[3]), dtype)
    else:
        y = _separable(_pad(x.astype(dtype, copy=False), rows, cols), rows, cols, np.add)
        np.divide(y, _avg_divisors(x.shape[1], x.shape[2], rows, cols, dtype), out=y)
    return (_from_nhwc(y.astype(x.dtype, copy=False), spec.conv.channels_first),)


# ---------------------------------------------------------------------------------------------
# Batch normalization


def _channel_axis(x: np.ndarray, data_format: str, op: str) -> int:
    if data_format not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise KernelError(f"{op}: unsupported data_format {data_format!r}")
    if x.ndim not in (4, 5):
        raise KernelError(f"{op}: input must be 4 or 5-dimensional, got shape {list(x.shape)}")
    return x.ndim - 1 if data_format.endswith("C") else 1


def _check_channels(values: dict, channels: int, op: str) -> None:
    for name, value in values.items():
        if np.ndim(value) != 1:
            raise KernelError(f"{op}: {name} must be 1-dimensional, got shape "
                              f"{list(np.shape(value))}")
        if np.size(value) != channels:
            raise KernelError(f"{op}: {name} must have the same number of elements as the "
                              f"channels of x, got {np.size(value)} and {channels}")


def _scale_and_shift(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                     axis: int) -> np.ndarray:
    """x * multiplier + shift, both per channel along `axis`. With channels last, a few
    channels repeat along rows of at least a few hundred values, and numpy's loops run along
    those rows with the per-channel values tiled to match (the same products and sums)."""
    if axis == x.ndim - 1:
        y = channel_tiled(np.multiply, x, multiplier, True)
        if y is not None:
            return channel_tiled(np.add, y, shift, True)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return x * multiplier.reshape(shape) + shift.reshape(shape)


def _batch_norm(op: str, x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray,
                variance: np.ndarray, epsilon: float, exponential_avg_factor: float,
                data_format: str, is_training: bool) -> tuple[np.ndarray, ...]:
    """y, batch_mean, batch_variance, reserve_space_1, reserve_space_2.

    In inference TensorFlow passes mean and variance through as batch_mean and batch_variance
    and leaves the reserve spaces uninitialized on the CPU (arbitrary memory); they are zeros
    here. In training the reserve spaces hold the batch mean and biased variance, as on the CPU.
    An empty x gives NaN batch statistics, as TensorFlow's do."""
    axis = _channel_axis(x, data_format, op)
    channels = x.shape[axis]
    _check_channels({"scale": scale, "offset": offset}, channels, op)
    if not is_training or exponential_avg_factor != 1.0:
        for name, value in (("mean", mean), ("variance", variance)):
            if np.size(value) != channels:
                mode = "false" if not is_training else "true and exponential_avg_factor != 1"
                raise KernelError(f"{op}: When is_training={mode}, {name} must have the same "
                                  f"number of elements as the channels of x, got "
                                  f"{np.size(value)} and {channels}")
    stat_dtype = scale.dtype
    if is_training:
        batch_mean, batch_var, saved_mean, saved_var = _batch_moments(
            x, axis, mean, variance, exponential_avg_factor, stat_dtype)
        use_mean, use_var = saved_mean, saved_var
    else:
        batch_mean, batch_var = mean.astype(stat_dtype), variance.astype(stat_dtype)
        use_mean, use_var = batch_mean, batch_var
        saved_mean = saved_var = np.zeros(channels, stat_dtype)
    if x.size == 0:
        batch_mean = batch_var = np.full(channels, np.nan, stat_dtype)
    multiplier = scale * (1 / np.sqrt(use_var + stat_dtype.type(epsilon)))
    shift = offset - use_mean * multiplier
    y = _scale_and_shift(x.astype(stat_dtype, copy=False), multiplier, shift, axis)
    return y.astype(x.dtype, copy=False), batch_mean, batch_var, saved_mean, saved_var


def _batch_moments(x: np.ndarray, axis: int, running_mean: np.ndarray,
                   running_var: np.ndarray, factor: float, dtype: np.dtype):
    """Training-mode statistics: the batch's mean and biased variance normalize; the outputs are
    the unbiased variance (n / (n - 1), n - 1 at least 1), blended into the running values by
    exponential_avg_factor."""
    reduce_axes = tuple(a for a in range(x.ndim) if a != axis)
    wide = x.astype(np.float64)
    count = x.size // max(x.shape[axis], 1)
    mean = wide.mean(axis=reduce_axes) if count else np.zeros(x.shape[axis])
    var = ((wide - mean.reshape([-1 if a == axis else 1 for a in range(x.ndim)])) ** 2).mean(
        axis=reduce_axes) if count else np.zeros(x.shape[axis])
    unbiased = var * count / max(count - 1, 1)
    if factor != 1.0:
        blended_mean = (1 - factor) * running_mean + factor * mean
        blended_var = (1 - factor) * running_var + factor * unbiased
    else:
        blended_mean, blended_var = mean, unbiased
    return (blended_mean.astype(dtype), blended_var.astype(dtype), mean.astype(dtype),
            var.astype(dtype))


@kernel("FusedBatchNorm", "FusedBatchNormV2")
def fused_batch_norm(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray,
                     variance: np.ndarray, *, epsilon: float = 1e-4,
                     exponential_avg_factor: float = 1.0, data_format: str = "NHWC",
                     is_training: bool = True, **_) -> tuple[np.ndarray, ...]:
    return _batch_norm("FusedBatchNorm", x, scale, offset, mean, variance, epsilon,
                       exponential_avg_factor, data_format, is_training)


@kernel("FusedBatchNormV3")
def fused_batch_norm_v3(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray,
                        variance: np.ndarray, *, epsilon: float = 1e-4,
                        exponential_avg_factor: float = 1.0, data_format: str = "NHWC",
                        is_training: bool = True, **_) -> tuple[np.ndarray, ...]:
    outputs = _batch_norm("FusedBatchNormV3", x, scale, offset, mean, variance, epsilon,
                          exponential_avg_factor, data_format, is_training)
    return outputs + (np.zeros((), scale.dtype),)


# ---------------------------------------------------------------------------------------------
# Local response normalization and max pooling with argmax


@kernel("LRN")
def lrn(input: np.ndarray, *, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
        beta: float = 0.5, **_) -> tuple[np.ndarray]:
    """input / (bias + alpha * sqr_sum) ** beta, sqr_sum the sum of squares over the channels
    within depth_radius of each channel (a difference of two cumulative sums)."""
    _check_rank(input, 4, "input", "LRN")
    check(depth_radius >= 0, f"LRN: depth_radius = {depth_radius} must be non-negative")
    dtype = _compute_dtype(input.dtype)
    x = input.astype(dtype, copy=False)
    channels = x.shape[3]
    sums = np.concatenate([np.zeros(x.shape[:3] + (1,), dtype), np.cumsum(x * x, axis=3)], 3)
    top = np.minimum(np.arange(channels) + depth_radius + 1, channels)
    bottom = np.maximum(np.arange(channels) - depth_radius, 0)
    square_sum = sums[..., top] - sums[..., bottom]
    scale = dtype.type(bias) + dtype.type(alpha) * square_sum
    return ((x / scale ** dtype.type(beta)).astype(input.dtype, copy=False),)


@kernel("MaxPoolWithArgmax")
def max_pool_with_argmax(input: np.ndarray, *, ksize, strides, padding: str, Targmax=None,
                         include_batch_in_index: bool = False,
                         **_) -> tuple[np.ndarray, np.ndarray]:
    """Each window's maximum and where it is, flattened as ((b * height + y) * width + x) *
    channels + c (without the b term unless include_batch_in_index). As TensorFlow's CPU kernel
    visits a window's input positions in order, the first position is always taken and a later
    one only when strictly greater: ties keep the first, a NaN is kept only in first place."""
    op = "MaxPoolWithArgmax"
    spec = _pool_spec(op, tuple(ksize), tuple(strides), padding, (), "NHWC")
    check(spec.depth == 1, f"{op}: pooling across depth is not supported")
    _check_rank(input, 4, "input", op)
    n, height, width, channels = input.shape
    rows, cols = spec.conv.axes(height, width, spec.window)
    index_type = np.dtype(np.int64) if Targmax is None else Targmax.numpy
    shape = (n, rows.out, cols.out, channels)
    if min(shape) == 0:
        return np.zeros(shape, input.dtype), np.zeros(shape, index_type)
    padded = _pad(input, rows, cols)
    positions = np.arange(input.size, dtype=np.int64).reshape(input.shape)
    if not include_batch_in_index:
        positions = positions - (np.arange(n, dtype=np.int64) * (height * width * channels)
                                 ).reshape(n, 1, 1, 1)
    padded_positions = _pad(positions + 1, rows, cols)  # 0 marks padding
    best = np.zeros(shape, input.dtype)
    where = np.zeros(shape, np.int64)
    for i in range(rows.window):
        for j in range(cols.window):
            value = _tap(padded, i, j, rows, cols)
            at = _tap(padded_positions, i, j, rows, cols)
            take = (at > 0) & ((where == 0) | (best < value))
            best = np.where(take, value, best)
            where = np.where(take, at, where)
    return best, (where - 1).astype(index_type)
