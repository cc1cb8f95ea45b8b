"""Image ops: resizing, cropping, patches, projective transforms, colour adjustments, boxes.

Every kernel follows the arithmetic of TensorFlow's CPU kernel, in float32 where TensorFlow's
is, so results match bit for bit (all recorded cases but the Lanczos filters, whose sine comes
from another libm, and AdjustContrastv2, whose mean sums in another order): sampling positions are
computed per output row and column (`(x + 0.5) * scale - 0.5` with half-pixel centers,
`x * scale` in the legacy mode, scale `(in - 1) / (out - 1)` with align_corners), then applied
to the whole image with index arrays, one vectorized multiply-add per filter tap. Resizes
work along the height first and then the width, as TensorFlow's do, so that NaN and infinity
reach exactly the pixels they reach there. Loops in Python run over taps, boxes or batches,
never over pixels.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_F32 = np.float32
_TINY = 1000 * np.finfo(np.float32).tiny
"""Weight sums smaller than this leave the weights unnormalized (TensorFlow's guard)."""


# ---------------------------------------------------------------------------------------------
# Shared checks and sampling helpers


def _output_size(size, what: str = "size") -> tuple[int, int]:
    size = np.asarray(size)
    check(size.ndim == 1, f"{what} must be 1-dimensional, got shape {list(size.shape)}")
    check(size.size == 2, f"{what} must have two elements, got {size.size}")
    return int(size[0]), int(size[1])


def _resize_geometry(images: np.ndarray, size, align_corners: bool,
                     half_pixel_centers: bool) -> tuple[int, int]:
    """TensorFlow's ImageResizerState checks; returns the output height and width."""
    check(not (half_pixel_centers and align_corners),
          "If half_pixel_centers is True, align_corners must be False.")
    check(images.ndim == 4, f"input must be 4-dimensional, got shape {list(images.shape)}")
    check(images.shape[3] > 0, "image must have at least one channel")
    check(images.shape[1] > 0 and images.shape[2] > 0, "input image must be of non-zero size")
    height, width = _output_size(size)
    check(height > 0 and width > 0, f"output dimensions must be positive, got {height}x{width}")
    return height, width


def _resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and in_size > 1 and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def _positions(out_size: int, scale: np.float32, half_pixel: bool, shift: bool = True) -> np.ndarray:
    """Sampling positions of the output pixels in input coordinates, float32. `shift` subtracts
    the half pixel again (bilinear and bicubic do, nearest neighbor floors instead)."""
    x = np.arange(out_size, dtype=_F32)
    if not half_pixel:
        return x * scale
    centers = (x + _F32(0.5)) * scale
    return centers - _F32(0.5) if shift else centers


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's roundf: halves away from zero (numpy's round goes to even)."""
    return np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x)


def _taps(x: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray,
          valid: np.ndarray | None = None) -> np.ndarray:
    """sum_k weight[o, k] * x[..., index[o, k], ...] along `axis`, in float32 and tap order,
    skipping taps where `valid` is False (TensorFlow never reads them)."""
    shape = [1] * x.ndim
    shape[axis] = index.shape[0]
    total = None
    for k in range(index.shape[1]):
        term = np.take(x, index[:, k], axis=axis) * weight[:, k].reshape(shape)
        if valid is not None:
            term = np.where(valid[:, k].reshape(shape), term, _F32(0))
        total = term if total is None else total + term
    if total is None:
        out_shape = list(x.shape)
        out_shape[axis] = index.shape[0]
        return np.zeros(out_shape, _F32)
    return total.astype(_F32, copy=False)


# ---------------------------------------------------------------------------------------------
# Resizes


@kernel("ResizeBilinear")
def resize_bilinear(images, size, *, align_corners: bool = False, half_pixel_centers: bool = False,
                    **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    height, width = _resize_geometry(images, size, align_corners, half_pixel_centers)
    y_lo, y_hi, y_lerp = _bilinear_axis(height, images.shape[1], align_corners, half_pixel_centers)
    x_lo, x_hi, x_lerp = _bilinear_axis(width, images.shape[2], align_corners, half_pixel_centers)
    pixels = images.astype(_F32)

    def across(rows: np.ndarray) -> np.ndarray:
        left = np.take(rows, x_lo, axis=2)
        return left + (np.take(rows, x_hi, axis=2) - left) * x_lerp[:, None]

    top = across(np.take(pixels, y_lo, axis=1))
    bottom = across(np.take(pixels, y_hi, axis=1))
    return ((top + (bottom - top) * y_lerp[:, None, None]).astype(_F32),)


def _bilinear_axis(out_size: int, in_size: int, align_corners: bool,
                   half_pixel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper source indices and the interpolation weight of each output index."""
    position = _positions(out_size, _resize_scale(in_size, out_size, align_corners), half_pixel)
    floor = np.floor(position)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(position).astype(np.int64), in_size - 1)
    return lower, upper, (position - floor).astype(_F32)


@kernel("ResizeNearestNeighbor")
def resize_nearest_neighbor(images, size, *, align_corners: bool = False,
                            half_pixel_centers: bool = False, **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    height, width = _resize_geometry(images, size, align_corners, half_pixel_centers)
    rows = _nearest_axis(height, images.shape[1], align_corners, half_pixel_centers)
    cols = _nearest_axis(width, images.shape[2], align_corners, half_pixel_centers)
    return (images[:, rows][:, :, cols],)


def _nearest_axis(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    position = _positions(out_size, _resize_scale(in_size, out_size, align_corners), half_pixel,
                          shift=False)
    index = _round_half_away(position) if align_corners else np.floor(position)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


_CUBIC_TABLE_SIZE = 1024


def _cubic_table(a: float) -> np.ndarray:
    """TensorFlow's table of Keys cubic weights (coefficient a) at 1/1024 steps, float32:
    row i holds the weights of the near tap (distance i/1024) and the far one (1 + i/1024)."""
    x = (np.arange(_CUBIC_TABLE_SIZE + 1) / _CUBIC_TABLE_SIZE).astype(_F32)
    near = (((a + 2) * x.astype(np.float64) - (a + 3)) * x * x + 1).astype(_F32)
    x1 = (x + _F32(1)).astype(np.float64)
    far = (((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a).astype(_F32)
    return np.stack([near, far], axis=1)


_LEGACY_CUBIC = _cubic_table(-0.75)
_HALF_PIXEL_CUBIC = _cubic_table(-0.5)


@kernel("ResizeBicubic")
def resize_bicubic(images, size, *, align_corners: bool = False, half_pixel_centers: bool = False,
                   **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    height, width = _resize_geometry(images, size, align_corners, half_pixel_centers)
    rows = _bicubic_axis(height, images.shape[1], align_corners, half_pixel_centers)
    cols = _bicubic_axis(width, images.shape[2], align_corners, half_pixel_centers)
    across_rows = _taps(images.astype(_F32), 1, *rows)
    return (_taps(across_rows, 2, *cols),)


def _bicubic_axis(out_size: int, in_size: int, align_corners: bool,
                  half_pixel: bool) -> tuple[np.ndarray, np.ndarray]:
    """The 4 source indices and weights of each output index (TensorFlow's
    GetWeightsAndIndices): the legacy mode clamps taps to the edge and keeps their weights,
    the half-pixel mode zeroes taps outside the image and renormalizes."""
    scale = _resize_scale(in_size, out_size, align_corners)
    if half_pixel:
        position = _positions(out_size, scale, True)
        start = np.floor(position).astype(np.int64)
    else:
        position = np.arange(out_size, dtype=_F32) * scale
        start = np.trunc(position).astype(np.int64)
    delta = position - start.astype(_F32)
    offset = np.rint(delta * _F32(_CUBIC_TABLE_SIZE)).astype(np.int64)
    table = _HALF_PIXEL_CUBIC if half_pixel else _LEGACY_CUBIC
    rest = _CUBIC_TABLE_SIZE - offset
    weights = np.stack([table[offset, 1], table[offset, 0], table[rest, 0], table[rest, 1]], axis=1)
    raw = start[:, None] + np.arange(-1, 3)
    index = np.clip(raw, 0, in_size - 1)
    if half_pixel:
        weights = np.where(index == raw, weights, _F32(0))
        total = ((weights[:, 0] + weights[:, 1]) + weights[:, 2]) + weights[:, 3]
        scaled = weights * (_F32(1) / np.where(total == 0, _F32(1), total))[:, None]
        weights = np.where((np.abs(total) >= _TINY)[:, None], scaled, weights)
    return index, weights.astype(_F32)


@kernel("ResizeArea")
def resize_area(images, size, *, align_corners: bool = False, **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    height, width = _resize_geometry(images, size, align_corners, False)
    row_scale = _resize_scale(images.shape[1], height, align_corners)
    col_scale = _resize_scale(images.shape[2], width, align_corners)
    across_cols = _taps(images.astype(_F32), 2, *_area_axis(width, images.shape[2], col_scale))
    summed = _taps(across_cols, 1, *_area_axis(height, images.shape[1], row_scale))
    return ((summed * _F32(1.0 / np.float64(row_scale * col_scale))).astype(_F32),)


def _area_axis(out_size: int, in_size: int, scale: np.float32) -> tuple[np.ndarray, ...]:
    """Source indices (clamped to the image), weights and validity of the input cells each
    output cell covers: the covered fraction of each cell, in input pixels."""
    start_f = np.arange(out_size, dtype=np.int64).astype(_F32) * scale
    end_f = np.arange(1, out_size + 1, dtype=np.int64).astype(_F32) * scale
    start = np.floor(start_f).astype(np.int64)
    end = np.ceil(end_f).astype(np.int64)
    cells = start[:, None] + np.arange(int((end - start).max()))
    lo, hi = start_f[:, None], end_f[:, None]
    first = cells.astype(_F32)
    after = (cells + 1).astype(_F32)
    weight = np.where(first < lo, np.where(after > hi, scale, after - lo),
                      np.where(after > hi, hi - first, _F32(1)))
    return np.clip(cells, 0, in_size - 1), weight.astype(_F32), cells < end[:, None]


# ---------------------------------------------------------------------------------------------
# ScaleAndTranslate: resampling with a filter kernel (tf.image.resize with antialias)


def _lanczos(radius: float):
    def weight(x: np.ndarray) -> np.ndarray:
        pi = _F32(3.14159265359)
        with np.errstate(all="ignore"):
            value = (_F32(radius) * np.sin(pi * x) * np.sin(pi * x / _F32(radius))
                     / (pi * pi * x * x))
        return np.where(x > radius, _F32(0), np.where(x <= _F32(1e-3), _F32(1), value))
    return radius, weight


def _gaussian(x: np.ndarray) -> np.ndarray:
    sigma = _F32(1.5) / _F32(3)
    value = np.exp((-x * x).astype(np.float64) / (2.0 * np.float64(sigma) * np.float64(sigma)))
    return np.where(x >= _F32(1.5), _F32(0), value.astype(_F32))


def _box(x: np.ndarray) -> np.ndarray:
    return np.where(x < _F32(0.5), _F32(1), np.where(x == _F32(0.5), _F32(0.5), _F32(0)))


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.where(x < _F32(1), _F32(1) - x, _F32(0))


def _keys_cubic(x: np.ndarray) -> np.ndarray:
    far = ((_F32(-0.5) * x + _F32(2.5)) * x - _F32(4)) * x + _F32(2)
    near = ((_F32(1.5) * x - _F32(2.5)) * x) * x + _F32(1)
    return np.where(x >= 2, _F32(0), np.where(x >= 1, far, near))


def _mitchell_cubic(x: np.ndarray) -> np.ndarray:
    far = (((_F32(-7 / 18) * x + _F32(2)) * x - _F32(10 / 3)) * x + _F32(16 / 9))
    near = ((_F32(7 / 6) * x - _F32(2)) * x) * x + _F32(8 / 9)
    return np.where(x >= 2, _F32(0), np.where(x >= 1, far, near))


_SAMPLING_KERNELS = {
    "lanczos1": _lanczos(1.0), "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0),
    "gaussian": (1.5, _gaussian), "box": (1.0, _box), "triangle": (1.0, _triangle),
    "keyscubic": (2.0, _keys_cubic), "mitchellcubic": (2.0, _mitchell_cubic),
}


@kernel("ScaleAndTranslate")
def scale_and_translate(images, size, scale, translation, *, kernel_type: str = "lanczos3",
                        antialias: bool = True, **_) -> tuple[np.ndarray]:
    check(kernel_type in _SAMPLING_KERNELS, f"Unrecognized kernel type: {kernel_type}")
    images = np.asarray(images)
    check(images.ndim == 4, f"input must be 4-dimensional, got shape {list(images.shape)}")
    height, width = _output_size(size, "output_shape_t")
    check(height > 0 and width > 0, f"output dimensions must be positive, got {height}x{width}")
    check(images.shape[3] > 0, "image must have at least one channel")
    check(images.shape[1] > 0 and images.shape[2] > 0, "input image must be of non-zero size")
    row_scale, col_scale = _pair(scale, "scale")
    check(row_scale > 0 and col_scale > 0, "Scale must be greater than zero.")
    row_shift, col_shift = _pair(translation, "translation")
    if images.shape[0] == 0:
        return (np.zeros((0, height, width, images.shape[3]), _F32),)
    rows = _spans(kernel_type, height, images.shape[1], row_scale, row_shift, antialias)
    cols = _spans(kernel_type, width, images.shape[2], col_scale, col_shift, antialias)
    return (_taps(_taps(images.astype(_F32), 1, *rows), 2, *cols),)


def _pair(value, what: str) -> tuple[np.float32, np.float32]:
    value = np.asarray(value)
    check(value.ndim == 1 and value.size == 2,
          f"{what} must be a 1-dimensional tensor of two elements, got shape {list(value.shape)}")
    return _F32(value[0]), _F32(value[1])


def _spans(kernel_type: str, out_size: int, in_size: int, scale: np.float32,
           translate: np.float32, antialias: bool) -> tuple[np.ndarray, ...]:
    """TensorFlow's ComputeSpansCore: for each output pixel, the first source pixel, and the
    normalized filter weights of `span` consecutive source pixels (clamped to the image;
    none at all when the sample falls outside it)."""
    radius, func = _SAMPLING_KERNELS[kernel_type]
    inv_scale = _F32(1.0 / np.float64(scale))
    inv_translate = -inv_scale * translate
    kernel_scale = max(inv_scale, _F32(1)) if antialias else _F32(1)
    reach = _F32(radius) * kernel_scale
    span = min(2 * int(np.ceil(reach)) + 1, in_size)
    sample = (np.arange(out_size, dtype=_F32) + _F32(0.5)) * inv_scale + inv_translate
    inside = ~((sample < 0) | (sample > _F32(in_size)))
    first = np.clip(np.ceil(sample - reach - _F32(0.5)), 0, in_size - 1).astype(np.int64)
    last = np.clip(np.floor(sample + reach - _F32(0.5)), 0, in_size - 1).astype(np.int64) + 1
    source = first[:, None] + np.arange(span)
    in_span = source < last[:, None]
    position = source.astype(_F32) + _F32(0.5) - sample[:, None]
    weight = np.where(in_span, func(np.abs(position * (_F32(1) / kernel_scale))), _F32(0))
    total = np.zeros(out_size, _F32)
    for k in range(span):
        total = total + weight[:, k]
    good = inside & (np.abs(total) >= _TINY)
    normalized = weight * (_F32(1) / np.where(good, total, _F32(1)))[:, None]
    weight = np.where(good[:, None], normalized, _F32(0)).astype(_F32)
    start = np.where(inside, first, 0)
    source = start[:, None] + np.arange(span)
    return np.minimum(source, in_size - 1), weight, source < in_size


# ---------------------------------------------------------------------------------------------
# Crops, patches and projective transforms


@kernel("CropAndResize")
def crop_and_resize(image, boxes, box_ind, crop_size, *, method: str = "bilinear",
                    extrapolation_value: float = 0.0, **_) -> tuple[np.ndarray]:
    image, boxes, box_ind = np.asarray(image), np.asarray(boxes, _F32), np.asarray(box_ind)
    check(image.ndim == 4, f"input image must be 4-D, got shape {list(image.shape)}")
    batch, in_height, in_width, _ = image.shape
    check(in_height > 0 and in_width > 0, "image dimensions must be positive")
    check(boxes.ndim == 2 and boxes.shape[1] == 4,
          f"boxes must be 2-D [num_boxes, 4], got shape {list(boxes.shape)}")
    check(box_ind.ndim == 1 and box_ind.shape[0] == boxes.shape[0],
          f"box_index has incompatible shape {list(box_ind.shape)} for {boxes.shape[0]} boxes")
    height, width = _output_size(crop_size, "crop_size")
    check(height > 0 and width > 0, "crop dimensions must be positive")
    check(bool(np.all((box_ind >= 0) & (box_ind < batch))),
          f"box_index has values outside [0, {batch})")
    check(method in ("bilinear", "nearest"), f"method must be bilinear or nearest, got {method!r}")
    ys = _crop_positions(boxes[:, 0], boxes[:, 2], height, in_height)
    xs = _crop_positions(boxes[:, 1], boxes[:, 3], width, in_width)
    fill = _F32(extrapolation_value)
    inside_y = (ys >= 0) & (ys <= _F32(in_height - 1))
    inside_x = (xs >= 0) & (xs <= _F32(in_width - 1))
    ys, xs = np.where(inside_y, ys, _F32(0)), np.where(inside_x, xs, _F32(0))
    pick = box_ind.astype(np.int64)[:, None, None]

    def read(y_index: np.ndarray, x_index: np.ndarray) -> np.ndarray:
        return image[pick, y_index[:, :, None], x_index[:, None, :]].astype(_F32)

    if method == "nearest":
        crops = read(_round_half_away(ys).astype(np.int64), _round_half_away(xs).astype(np.int64))
    else:
        y_floor, x_floor = np.floor(ys), np.floor(xs)
        top, bottom = y_floor.astype(np.int64), np.ceil(ys).astype(np.int64)
        left, right = x_floor.astype(np.int64), np.ceil(xs).astype(np.int64)
        y_lerp = (ys - y_floor)[:, :, None, None]
        x_lerp = (xs - x_floor)[:, None, :, None]
        top_left, bottom_left = read(top, left), read(bottom, left)
        upper = top_left + (read(top, right) - top_left) * x_lerp
        lower = bottom_left + (read(bottom, right) - bottom_left) * x_lerp
        crops = upper + (lower - upper) * y_lerp
    inside = inside_y[:, :, None, None] & inside_x[:, None, :, None]
    return (np.where(inside, crops, fill).astype(_F32),)


def _crop_positions(start: np.ndarray, end: np.ndarray, out_size: int, in_size: int) -> np.ndarray:
    """Input coordinates of the crop's rows (or columns), one row per box, float32. A
    non-finite coordinate is moved outside the image (it gets the extrapolation value)."""
    if out_size > 1:
        step = (end - start) * _F32(in_size - 1) / _F32(out_size - 1)
        position = (start * _F32(in_size - 1))[:, None] + np.arange(out_size, dtype=_F32) * step[:, None]
    else:
        centre = (0.5 * (start.astype(np.float64) + end.astype(np.float64)) * (in_size - 1))
        position = centre.astype(_F32)[:, None]
    return np.where(np.isfinite(position), position, _F32(-1)).astype(_F32)


@kernel("ExtractImagePatches")
def extract_image_patches(images, *, ksizes, strides, rates, padding: str, **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    for name, value in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        check(len(value) == 4 and value[0] == 1 and value[3] == 1,
              f"Only support {name} across space, got {list(value)}")
    check(images.ndim == 4, f"input must be 4-dimensional, got shape {list(images.shape)}")
    rows = _window(images.shape[1], ksizes[1], strides[1], rates[1], padding)
    cols = _window(images.shape[2], ksizes[2], strides[2], rates[2], padding)
    out_rows, out_cols = rows[0], cols[0]
    depth = ksizes[1] * ksizes[2] * images.shape[3]
    if out_rows == 0 or out_cols == 0:
        return (np.zeros((images.shape[0], out_rows, out_cols, depth), images.dtype),)
    padded = np.pad(images, [(0, 0), rows[1], cols[1], (0, 0)])
    taps = []
    for i in range(ksizes[1]):
        for j in range(ksizes[2]):
            top, left = i * rates[1], j * rates[2]
            taps.append(padded[:, top:top + (out_rows - 1) * strides[1] + 1:strides[1],
                               left:left + (out_cols - 1) * strides[2] + 1:strides[2]])
    patches = np.stack(taps, axis=3)
    return (patches.reshape(images.shape[0], out_rows, out_cols, depth),)


def _window(size: int, window: int, stride: int, rate: int, padding: str) -> tuple[int, tuple[int, int]]:
    """Output size and (before, after) zero padding of one spatial axis."""
    reach = (window - 1) * rate + 1
    if padding == "VALID":
        numerator = size - reach + stride
        out = abs(numerator) // stride * (1 if numerator >= 0 else -1)
        check(out >= 0, f"Computed output size would be negative: {out} "
                        f"[input_size: {size}, effective_filter_size: {reach}, stride: {stride}]")
        return out, (0, 0)
    check(padding == "SAME", f"padding must be SAME or VALID, got {padding!r}")
    out = (size + stride - 1) // stride
    needed = max(0, (out - 1) * stride + reach - size)
    return out, (needed // 2, needed - needed // 2)


@kernel("ImageProjectiveTransformV2")
def image_projective_transform_v2(images, transforms, output_shape, *, interpolation: str,
                                  fill_mode: str = "CONSTANT", **_) -> tuple[np.ndarray]:
    return _projective(images, transforms, output_shape, interpolation, fill_mode, 0.0)


@kernel("ImageProjectiveTransformV3")
def image_projective_transform_v3(images, transforms, output_shape, fill_value, *,
                                  interpolation: str, fill_mode: str = "CONSTANT",
                                  **_) -> tuple[np.ndarray]:
    fill = np.asarray(fill_value)
    check(fill.size == 1, f"fill_value must be a scalar, got shape {list(fill.shape)}")
    return _projective(images, transforms, output_shape, interpolation, fill_mode, float(fill.item()))


def _projective(images, transforms, output_shape, interpolation: str, fill_mode: str,
                fill_value: float) -> tuple[np.ndarray]:
    check(interpolation in ("NEAREST", "BILINEAR"), f"Invalid interpolation {interpolation}")
    check(fill_mode in _FILL_MODES, f"Invalid fill_mode {fill_mode}")
    images, transforms = np.asarray(images), np.asarray(transforms, _F32)
    check(images.ndim == 4, f"Input images must have rank 4, got shape {list(images.shape)}")
    check(transforms.ndim == 2 and transforms.shape[0] in (1, images.shape[0])
          and transforms.shape[1] == 8, "Input transform should be num_images x 8 or 1 x 8, got "
          f"shape {list(transforms.shape)}")
    height, width = _output_size(output_shape, "output_shape")
    check(height > 0 and width > 0, f"output dimensions must be positive, got {height}x{width}")
    ys = np.arange(height, dtype=_F32)[None, :, None]
    xs = np.arange(width, dtype=_F32)[None, None, :]
    t = [transforms[:, k][:, None, None] for k in range(8)]
    projection = t[6] * xs + t[7] * ys + _F32(1)
    with np.errstate(all="ignore"):
        in_x = (t[0] * xs + t[1] * ys + t[2]) / projection
        in_y = (t[3] * xs + t[4] * ys + t[5]) / projection
    in_x = _FILL_MODES[fill_mode](in_x.astype(_F32), images.shape[2])
    in_y = _FILL_MODES[fill_mode](in_y.astype(_F32), images.shape[1])
    fill = _cast(np.asarray([fill_value], _F32), images.dtype)[0]
    batch = np.arange(images.shape[0])[:, None, None]
    if interpolation == "NEAREST":
        out = _read(images, batch, _round_half_away(in_y), _round_half_away(in_x), fill)
    else:
        out = _cast(_bilinear_sample(images, batch, in_y, in_x, fill), images.dtype)
    return (np.where((projection == 0)[..., None], fill, out),)


def _read(images: np.ndarray, batch: np.ndarray, y: np.ndarray, x: np.ndarray, fill) -> np.ndarray:
    """images[b, y, x] where (y, x) is inside the image (float coordinates, already whole
    numbers), `fill` elsewhere; shape [batch, out_height, out_width, channels]."""
    height, width = images.shape[1], images.shape[2]
    with np.errstate(invalid="ignore"):
        inside = (y >= 0) & (y < height) & (x >= 0) & (x < width)
    row = np.where(inside, y, 0).astype(np.int64)
    col = np.where(inside, x, 0).astype(np.int64)
    return np.where(inside[..., None], images[batch, row, col], fill)


def _bilinear_sample(images, batch, y, x, fill) -> np.ndarray:
    y_floor, x_floor = np.floor(y), np.floor(x)
    y_ceil, x_ceil = y_floor + _F32(1), x_floor + _F32(1)

    def value(row, col):
        return _read(images, batch, row, col, fill).astype(_F32)

    def weight(w):
        return w[..., None]

    upper = weight(x_ceil - x) * value(y_floor, x_floor) + weight(x - x_floor) * value(y_floor, x_ceil)
    lower = weight(x_ceil - x) * value(y_ceil, x_floor) + weight(x - x_floor) * value(y_ceil, x_ceil)
    return weight(y_ceil - y) * upper + weight(y - y_floor) * lower


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 -> dtype as C++'s static_cast does: integers truncate toward zero."""
    if dtype.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(np.nan_to_num(values, nan=0.0)).astype(dtype)
    return values.astype(dtype)


def _reflect(coord: np.ndarray, size: int) -> np.ndarray:
    if size <= 1:
        return np.where(np.isnan(coord), coord, _F32(0))
    period = 2 * size
    with np.errstate(invalid="ignore"):
        turns = np.trunc(-coord / _F32(period))
        low = np.where(np.isfinite(turns), turns, 0).astype(np.int64) * period
        low = low.astype(_F32) + coord
        low = np.where(low < -size, low + _F32(period), -low - _F32(1))
        turns = np.trunc(coord / _F32(period))
        high = coord - (np.where(np.isfinite(turns), turns, 0).astype(np.int64) * period).astype(_F32)
        high = np.where(high >= size, _F32(period) - high - _F32(1), high)
        mapped = np.where(coord < 0, low, np.where(coord > size - 1, high, coord))
    return _clamp(mapped, size)


def _wrap(coord: np.ndarray, size: int) -> np.ndarray:
    if size <= 1:
        return np.where(np.isnan(coord), coord, _F32(0))
    period = size - 1
    with np.errstate(invalid="ignore"):
        turns = np.trunc(-coord / _F32(period))
        low = coord + ((np.where(np.isfinite(turns), turns, 0).astype(np.int64) + 1) * size).astype(_F32)
        turns = np.trunc(coord / _F32(period))
        high = coord - (np.where(np.isfinite(turns), turns, 0).astype(np.int64) * size).astype(_F32)
        mapped = np.where(coord < 0, low, np.where(coord > size - 1, high, coord))
    return _clamp(mapped, size)


def _clamp(coord: np.ndarray, size: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(coord < 0, _F32(0), np.where(coord > size - 1, _F32(size - 1), coord))


_FILL_MODES = {
    "REFLECT": _reflect, "WRAP": _wrap, "CONSTANT": lambda coord, size: coord, "NEAREST": _clamp,
}


# ---------------------------------------------------------------------------------------------
# Colour


def _rgb(images: np.ndarray, least_rank: int = 1) -> tuple[np.ndarray, ...]:
    check(images.ndim >= least_rank,
          f"input must be at least {least_rank}-D, got shape {list(images.shape)}")
    check(images.shape[-1] == 3,
          f"input must have 3 channels but input only has {images.shape[-1]} channels.")
    return images[..., 0], images[..., 1], images[..., 2]


@kernel("RGBToHSV")
def rgb_to_hsv(images, **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    r, g, b = _rgb(images)
    t = images.dtype.type
    value = images.max(axis=-1)
    spread = value - images.min(axis=-1)
    with np.errstate(all="ignore"):
        saturation = np.where(value > 0, spread / value, t(0))
        norm = (t(1) / spread) * (t(1) / t(6))
        hue = np.where(r == value, norm * (g - b),
                       np.where(g == value, norm * (b - r) + t(2) / t(6), norm * (r - g) + t(4) / t(6)))
    hue = np.where(spread > 0, hue, t(0))
    hue = np.where(hue < 0, hue + t(1), hue)
    return (np.stack([hue, saturation, value], axis=-1).astype(images.dtype),)


@kernel("HSVToRGB")
def hsv_to_rgb(images, **_) -> tuple[np.ndarray]:
    images = np.asarray(images)
    h, s, v = _rgb(images)
    t = images.dtype.type
    dh = h * t(6)

    def unit(x):
        return np.minimum(np.maximum(x, t(0)), t(1))

    dr = unit(np.abs(dh - t(3)) - t(1))
    dg = unit(-np.abs(dh - t(2)) + t(2))
    db = unit(-np.abs(dh - t(4)) + t(2))
    one_s = -s + t(1)
    channels = [(one_s + s * d) * v for d in (dr, dg, db)]
    return (np.stack(channels, axis=-1).astype(images.dtype),)


@kernel("AdjustContrastv2")
def adjust_contrast_v2(images, contrast_factor, **_) -> tuple[np.ndarray]:
    images, factor = np.asarray(images), np.asarray(contrast_factor)
    check(images.ndim >= 3, f"input must be at least 3-D, got shape {list(images.shape)}")
    check(factor.ndim == 0, f"contrast_factor must be scalar, got shape {list(factor.shape)}")
    mean = images.astype(np.float64).mean(axis=(-3, -2), keepdims=True).astype(images.dtype)
    return (((images - mean) * factor.astype(images.dtype) + mean).astype(images.dtype),)


def _hue_range(r, g, b) -> tuple[np.ndarray, ...]:
    """TensorFlow's rgb_to_hv_range: hue in [0, 6) from the order of the channels, and the
    smallest and largest channel."""
    r_lt_g = r < g
    cases = [r_lt_g & (b < r), r_lt_g & (b > g), r_lt_g, b < g, b > r]
    top = np.select(cases, [g, b, g, r, b], r)
    mid = np.select(cases, [r, g, b, g, r], b)
    low = np.select(cases, [b, r, r, b, g], g)
    sector = np.select(cases, [1, 3, 2, 0, 4], 5)
    with np.errstate(all="ignore"):
        ratio = (mid - low) / (top - low)
    hue = sector.astype(_F32) + np.where(sector % 2 == 0, ratio, _F32(1) - ratio)
    return np.where(top == low, _F32(0), hue).astype(_F32), low, top


@kernel("AdjustHue")
def adjust_hue(images, delta, **_) -> tuple[np.ndarray]:
    images, delta = np.asarray(images, _F32), np.asarray(delta)
    r, g, b = _rgb(images, 3)
    check(delta.ndim == 0, f"delta must be scalar, got shape {list(delta.shape)}")
    hue, low, top = _hue_range(r, g, b)
    hue = hue + _F32(delta) * _F32(6)
    while np.any(hue < 0):
        hue = np.where(hue < 0, hue + _F32(6), hue)
    while np.any(hue >= 6):
        hue = np.where(hue >= 6, hue - _F32(6), hue)
    sector = hue.astype(np.int64)
    ratio = hue - sector.astype(_F32)
    ratio = np.where(sector % 2 == 0, ratio, _F32(1) - ratio)
    mid = low + ratio * (top - low)
    order = [(top, mid, low), (mid, top, low), (low, top, mid), (low, mid, top), (mid, low, top)]
    channels = [np.select([sector == k for k in range(5)], [o[c] for o in order],
                          (top, low, mid)[c]) for c in range(3)]
    return (np.stack(channels, axis=-1).astype(_F32),)


@kernel("AdjustSaturation")
def adjust_saturation(images, scale, **_) -> tuple[np.ndarray]:
    images, scale = np.asarray(images, _F32), np.asarray(scale)
    r, g, b = _rgb(images, 3)
    check(scale.ndim == 0, f"scale must be scalar, got shape {list(scale.shape)}")
    value = np.maximum(r, np.maximum(g, b))
    spread = value - np.minimum(r, np.minimum(g, b))
    with np.errstate(all="ignore"):
        saturation = np.where(value > 0, spread / value, _F32(0))
        norm = _F32(1) / (_F32(6) * spread)
    hue = np.where(r == value, norm * (g - b),
                   np.where(g == value, (norm * (b - r)).astype(np.float64) + 2.0 / 6.0,
                            (norm * (r - g)).astype(np.float64) + 4.0 / 6.0)).astype(_F32)
    hue = np.where(spread <= 0, _F32(0), hue)
    hue = np.where(hue < 0, hue + _F32(1), hue)
    saturation = np.minimum(_F32(1), np.maximum(_F32(0), saturation * _F32(scale)))
    return (_hsv_to_rgb_sector(hue, saturation, value),)


def _hsv_to_rgb_sector(hue, saturation, value) -> np.ndarray:
    """AdjustSaturation's hsv_to_rgb: by hue sector, chroma and the sector's ramp."""
    chroma = saturation * value
    offset = value - chroma
    dh = hue * _F32(6)
    sector = np.where(np.isfinite(dh), dh, -1).astype(np.int64)
    ramp = dh
    while np.any(ramp <= 0):
        ramp = np.where(ramp <= 0, ramp + _F32(2), ramp)
    while np.any(ramp >= 2):
        ramp = np.where(ramp >= 2, ramp - _F32(2), ramp)
    x = chroma * (_F32(1) - np.abs(ramp - _F32(1)))
    zero = np.zeros_like(chroma)
    order = [(chroma, x, zero), (x, chroma, zero), (zero, chroma, x), (zero, x, chroma),
             (x, zero, chroma), (chroma, zero, x)]
    channels = [np.select([sector == k for k in range(6)], [o[c] for o in order], zero) + offset
                for c in range(3)]
    return np.stack(channels, axis=-1).astype(_F32)


# ---------------------------------------------------------------------------------------------
# Drawing


_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                            [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                            [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


@kernel("DrawBoundingBoxesV2", "DrawBoundingBoxes")
def draw_bounding_boxes(images, boxes, colors=None, **_) -> tuple[np.ndarray]:
    images, boxes = np.asarray(images), np.asarray(boxes, _F32)
    check(images.ndim == 4, "The rank of the images should be 4")
    check(boxes.ndim == 3, "The rank of the boxes tensor should be 3")
    check(images.shape[0] == boxes.shape[0], "The batch sizes should be the same")
    depth = images.shape[3]
    check(depth in (1, 3, 4), "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)")
    check(boxes.shape[2] == 4,
          f"The size of the third dimension of the box must be 4. Received: {boxes.shape[2]}")
    table = _color_table(colors, depth)
    canvas = images.copy()
    for b in range(images.shape[0]):
        for k in range(boxes.shape[1]):
            _draw_box(canvas[b], boxes[b, k], table[k % len(table)].astype(images.dtype))
    return (canvas,)


def _color_table(colors, depth: int) -> np.ndarray:
    if colors is not None:
        colors = np.asarray(colors, _F32)
        check(colors.ndim == 2, f"colors must be a 2-D matrix, got shape {list(colors.shape)}")
        check(colors.shape[1] >= depth,
              f"colors must have equal or more channels than the image provided: {list(colors.shape)}")
        if colors.size:
            return colors[:, :depth]
    table = _DEFAULT_COLORS[:, :depth].copy()
    if depth == 1:
        table[:, 0] = 1
    return table


def _to_int64(value: np.float32) -> int:
    """C++'s float -> int64 conversion on x86: truncation, and INT64_MIN for NaN or overflow."""
    if not np.isfinite(value) or abs(float(value)) >= 2.0 ** 63:
        return -(2 ** 63)
    return int(np.trunc(value))


def _draw_box(canvas: np.ndarray, box: np.ndarray, color: np.ndarray) -> None:
    height, width = canvas.shape[0], canvas.shape[1]
    top = _to_int64(box[0] * _F32(height - 1))
    bottom = _to_int64(box[2] * _F32(height - 1))
    left = _to_int64(box[1] * _F32(width - 1))
    right = _to_int64(box[3] * _F32(width - 1))
    if top > bottom or left > right:
        return
    if top >= height or bottom < 0 or left >= width or right < 0:
        return
    rows = slice(max(top, 0), min(bottom, height - 1) + 1)
    cols = slice(max(left, 0), min(right, width - 1) + 1)
    if top >= 0:
        canvas[top, cols] = color
    if bottom < height:
        canvas[bottom, cols] = color
    if left >= 0:
        canvas[rows, left] = color
    if right < width:
        canvas[rows, right] = color
