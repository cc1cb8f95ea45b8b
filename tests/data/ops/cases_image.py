"""Kernel cases for image ops: resizes, ScaleAndTranslate, crops, patches, projective
transforms, colour conversions and adjustments, bounding boxes.

Resizes run in every dtype TensorFlow registers on the CPU, up and down, odd sizes, a batch
of 0, and each align_corners/half_pixel_centers combination TensorFlow accepts. Inputs with
NaN/inf are given only to ops whose TensorFlow kernel has defined behaviour for them (not to
the colour ops, whose results for NaN depend on Eigen's comparison order).
"""
import ml_dtypes
import numpy as np

_rng = np.random.default_rng(20261125)

_RESIZE_DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8,
                  np.int16, np.uint16, np.int32, np.int64]
_MODES = [("legacy", False, False), ("align", True, False), ("half", False, True)]


def _img(*shape, dtype=np.float32):
    if np.dtype(dtype).kind in "iu":
        low = 0 if np.dtype(dtype).kind == "u" else -100
        return _rng.integers(low, 100, shape).astype(dtype)
    return (_rng.standard_normal(shape) * 4).astype(dtype)


def _size(h, w):
    return np.array([h, w], np.int32)


def _resize_cases(op):
    cases = []
    half = {} if op == "ResizeArea" else {"half_pixel_centers": True}
    for dtype in _RESIZE_DTYPES:
        cases.append(case(op, name=f"{np.dtype(dtype).name}_up", images=_img(2, 3, 4, 2, dtype=dtype),
                          size=_size(5, 7), **half))
        cases.append(case(op, name=f"{np.dtype(dtype).name}_down", images=_img(1, 7, 6, 2, dtype=dtype),
                          size=_size(3, 4)))
    for mode, align, half in _MODES:
        extra = {} if op == "ResizeArea" else {"half_pixel_centers": half}
        if op == "ResizeArea" and half:
            continue
        for label, shape, size in (("up", (1, 4, 5, 3), (7, 9)), ("down", (2, 9, 7, 2), (4, 3)),
                                   ("odd", (1, 5, 3, 1), (3, 8)), ("same", (1, 4, 4, 2), (4, 4)),
                                   ("to_1", (1, 5, 6, 1), (1, 1)), ("from_1", (1, 1, 1, 2), (3, 2))):
            cases.append(case(op, name=f"{mode}_{label}", images=_img(*shape), size=_size(*size),
                              align_corners=align, **extra))
    extra = {} if op == "ResizeArea" else {"half_pixel_centers": False}
    nan = _img(1, 4, 4, 1)
    nan[0, 1, 2, 0], nan[0, 3, 0, 0] = np.nan, np.inf
    cases += [
        case(op, name="batch_0", images=_img(0, 4, 4, 3), size=_size(2, 5), **extra),
        case(op, name="nan_inf", images=nan, size=_size(7, 3), **extra),
        case(op, name="large_down", images=_img(1, 31, 17, 1), size=_size(4, 5), **extra),
        case(op, name="error_size_0", images=_img(1, 4, 4, 1), size=_size(0, 3), error=True,
             dynamic=True, **extra),
        case(op, name="error_empty_image", images=_img(1, 0, 4, 1), size=_size(2, 3), error=True,
             dynamic=True, **extra),
        case(op, name="error_size_shape", images=_img(1, 4, 4, 1), size=np.array([2, 3, 4], np.int32),
             error=True, dynamic=True, **extra),
    ]
    if op != "ResizeArea":
        cases.append(case(op, name="error_align_and_half", images=_img(1, 4, 4, 1), size=_size(2, 3),
                          align_corners=True, half_pixel_centers=True, error=True))
    return cases


def _st(name, images, size, scale, translation, **attrs):
    return case("ScaleAndTranslate", name=name, images=images, size=_size(*size),
                scale=np.array(scale, np.float32), translation=np.array(translation, np.float32),
                **attrs)


_KERNELS = ["lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic",
            "mitchellcubic"]

SCALE_AND_TRANSLATE = (
    [_st(f"{k}_down_aa", _img(1, 11, 9, 2), (4, 5), [4 / 11, 5 / 9], [0, 0], kernel_type=k)
     for k in _KERNELS]
    + [_st(f"{k}_up", _img(1, 4, 5, 1), (9, 7), [9 / 4, 7 / 5], [0, 0], kernel_type=k,
           antialias=False) for k in _KERNELS]
    + [_st(f"{k}_down_no_aa", _img(1, 10, 8, 1), (3, 5), [0.3, 0.625], [0, 0], kernel_type=k,
           antialias=False) for k in ("lanczos3", "triangle", "keyscubic")]
    + [_st(f"{np.dtype(d).name}", _img(2, 6, 5, 3, dtype=d), (4, 7), [4 / 6, 7 / 5], [0, 0],
           kernel_type="triangle") for d in _RESIZE_DTYPES]
    + [
        _st("translated", _img(1, 6, 6, 1), (6, 6), [1.0, 1.0], [1.5, -2.25]),
        _st("translated_outside", _img(1, 5, 5, 1), (5, 5), [1.0, 1.0], [7.0, -9.0]),
        _st("batch_0", _img(0, 5, 5, 2), (3, 3), [0.6, 0.6], [0, 0]),
        _st("up_antialias", _img(1, 4, 3, 2), (9, 8), [9 / 4, 8 / 3], [0.5, -0.25]),
        _st("down_translated_gaussian", _img(2, 13, 11, 1), (5, 4), [5 / 13, 4 / 11], [1.0, 0.5],
            kernel_type="gaussian"),
        _st("down_box_exact_half", _img(1, 8, 8, 1), (4, 4), [0.5, 0.5], [0, 0], kernel_type="box"),
        _st("to_1x1", _img(1, 6, 7, 3), (1, 1), [1 / 6, 1 / 7], [0, 0], kernel_type="mitchellcubic"),
        _st("nan_inf", np.where(_rng.uniform(size=(1, 6, 6, 1)) < 0.1, np.nan, _img(1, 6, 6, 1)
                                ).astype(np.float32), (4, 9), [4 / 6, 1.5], [0, 0]),
        _st("error_scale_0", _img(1, 5, 5, 1), (3, 3), [0.0, 1.0], [0, 0], error=True),
        _st("error_size_0", _img(1, 5, 5, 1), (0, 3), [1.0, 1.0], [0, 0], error=True, dynamic=True),
        _st("error_kernel", _img(1, 5, 5, 1), (3, 3), [1.0, 1.0], [0, 0], kernel_type="cubic",
            error=True),
    ])


def _boxes(*rows):
    return np.array(rows, np.float32).reshape(-1, 4)


def _crop(name, image, boxes, ind, size, **attrs):
    return case("CropAndResize", name=name, image=image, boxes=boxes,
                box_ind=np.array(ind, np.int32), crop_size=_size(*size), **attrs)


_CROP_BOXES = _boxes([0.1, 0.2, 0.8, 0.9], [0.5, 0.5, 0.1, 0.0], [-0.3, -0.2, 1.4, 1.1],
                     [0.25, 0.25, 0.25, 0.75])
CROP_AND_RESIZE = (
    [_crop(f"{np.dtype(d).name}", _img(2, 6, 7, 2, dtype=d), _CROP_BOXES, [0, 1, 1, 0], (4, 5))
     for d in _RESIZE_DTYPES if d is not ml_dtypes.bfloat16]
    + [
        _crop("nearest", _img(2, 6, 7, 2), _CROP_BOXES, [1, 0, 1, 0], (5, 3), method="nearest"),
        _crop("nearest_extrapolate", _img(1, 5, 5, 1), _CROP_BOXES, [0, 0, 0, 0], (4, 4),
              method="nearest", extrapolation_value=-7.5),
        _crop("extrapolate", _img(1, 5, 5, 3), _CROP_BOXES, [0, 0, 0, 0], (6, 3),
              extrapolation_value=2.5),
        _crop("crop_1x1", _img(1, 5, 6, 1), _CROP_BOXES, [0, 0, 0, 0], (1, 1)),
        _crop("no_boxes", _img(1, 5, 6, 1), _boxes(), [], (3, 3)),
        _crop("image_1x1", _img(1, 1, 1, 2), _CROP_BOXES[:2], [0, 0], (2, 3)),
        _crop("error_box_index", _img(2, 5, 6, 1), _CROP_BOXES[:2], [0, 2], (3, 3), error=True),
        _crop("error_negative_box_index", _img(2, 5, 6, 1), _CROP_BOXES[:2], [-1, 0], (3, 3),
              error=True),
        _crop("error_crop_0", _img(1, 5, 6, 1), _CROP_BOXES[:2], [0, 0], (0, 3), error=True,
              dynamic=True),
    ])


def _patches(name, images, k, s, r, padding):
    return case("ExtractImagePatches", name=name, images=images, ksizes=[1, *k, 1],
                strides=[1, *s, 1], rates=[1, *r, 1], padding=padding)


_PATCH_DTYPES = _RESIZE_DTYPES + [np.uint32, np.uint64, np.complex64, np.complex128]
EXTRACT_IMAGE_PATCHES = (
    [_patches(f"{np.dtype(d).name}", _img(2, 5, 6, 2, dtype=d) if np.dtype(d).kind != "c"
              else (_img(2, 5, 6, 2) + 1j * _img(2, 5, 6, 2)).astype(d), (2, 3), (1, 2), (1, 1),
              "SAME") for d in _PATCH_DTYPES]
    + [
        _patches("valid", _img(1, 7, 8, 3), (3, 2), (2, 3), (1, 1), "VALID"),
        _patches("valid_dilated", _img(1, 9, 8, 1), (2, 3), (1, 2), (2, 3), "VALID"),
        _patches("same_dilated", _img(2, 6, 7, 2), (3, 3), (2, 2), (2, 1), "SAME"),
        _patches("same_even_padding", _img(1, 4, 4, 1), (4, 2), (3, 1), (1, 1), "SAME"),
        _patches("valid_window_too_large", _img(1, 3, 3, 1), (5, 1), (3, 1), (1, 1), "VALID"),
        _patches("batch_0", _img(0, 4, 4, 2), (2, 2), (1, 1), (1, 1), "SAME"),
        _patches("one_by_one", _img(1, 3, 4, 2), (1, 1), (2, 2), (1, 1), "VALID"),
    ])


_ROTATE = np.array([[0.8, -0.6, 2.0, 0.6, 0.8, -1.0, 0.0, 0.0]], np.float32)
_ZOOM_SHIFT = np.array([[1.5, 0.0, -1.25, 0.0, 0.7, 0.5, 0.0, 0.0],
                        [0.5, 0.25, 3.0, -0.2, 1.0, -2.0, 0.0, 0.0]], np.float32)
_PERSPECTIVE = np.array([[1.0, 0.1, 0.0, 0.05, 1.0, 0.0, 0.02, -0.03]], np.float32)
_ZERO_PROJECTION = np.array([[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -0.5, 0.0]], np.float32)
_IPT_DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.uint8, np.int32, np.int64]


def _ipt(name, images, transforms, shape, interpolation, fill_mode="CONSTANT", fill=None,
         **extra):
    if fill is None:
        return case("ImageProjectiveTransformV2", name=name, images=images, transforms=transforms,
                    output_shape=_size(*shape), interpolation=interpolation, fill_mode=fill_mode,
                    **extra)
    return case("ImageProjectiveTransformV3", name=name, images=images, transforms=transforms,
                output_shape=_size(*shape), fill_value=np.float32(fill),
                interpolation=interpolation, fill_mode=fill_mode, **extra)


def _uint_img(*shape):
    return _rng.integers(0, 250, shape).astype(np.uint8)


PROJECTIVE = (
    [_ipt(f"{mode}_{interp}_{transform_name}", _img(2, 6, 7, 2), transform, (6, 7), interp, mode)
     for mode in ("REFLECT", "WRAP", "CONSTANT", "NEAREST")
     for interp in ("NEAREST", "BILINEAR")
     for transform_name, transform in (("rotate", _ROTATE), ("zoom_shift", _ZOOM_SHIFT))]
    + [_ipt(f"v3_{np.dtype(d).name}_{interp}", _uint_img(2, 5, 6, 3).astype(d), _ZOOM_SHIFT, (4, 8),
            interp, "CONSTANT", fill=7.0) for d in _IPT_DTYPES for interp in ("NEAREST", "BILINEAR")]
    + [
        _ipt("v3_reflect_fill", _img(1, 5, 5, 1), _PERSPECTIVE, (7, 6), "BILINEAR", "REFLECT", 3.5),
        _ipt("v3_perspective", _img(1, 6, 6, 1), _PERSPECTIVE, (6, 6), "NEAREST", "CONSTANT", -1.0),
        _ipt("zero_projection", _img(1, 4, 4, 1), _ZERO_PROJECTION, (4, 4), "BILINEAR",
             "CONSTANT", 9.0),
        _ipt("size_1_reflect", _img(1, 1, 1, 2), _ZOOM_SHIFT[:1], (3, 3), "BILINEAR", "REFLECT"),
        _ipt("size_1_wrap", _img(1, 1, 4, 1), _ROTATE, (3, 3), "NEAREST", "WRAP"),
        _ipt("far_outside", _img(1, 4, 5, 1),
             np.array([[1, 0, 40.3, 0, 1, -33.7, 0, 0]], np.float32), (4, 5), "BILINEAR", "REFLECT"),
        _ipt("far_outside_wrap", _img(1, 4, 5, 1),
             np.array([[1, 0, -40.3, 0, 1, 33.7, 0, 0]], np.float32), (4, 5), "NEAREST", "WRAP"),
        _ipt("batch_0", _img(0, 4, 5, 1), _ROTATE, (3, 3), "BILINEAR"),
        _ipt("shared_transform_batch", _img(3, 5, 5, 2), _PERSPECTIVE, (5, 5), "BILINEAR", "WRAP", 1.0),
        _ipt("nan_image", np.where(_rng.uniform(size=(1, 5, 5, 1)) < 0.2, np.nan, _img(1, 5, 5, 1)
                                   ).astype(np.float32), _ROTATE, (5, 5), "BILINEAR", "NEAREST"),
        _ipt("error_transform_batch", _img(3, 4, 4, 1), _ZOOM_SHIFT, (4, 4), "NEAREST",
             error=True, dynamic=True),
    ])


def _colors(*shape, dtype=np.float32):
    return _rng.uniform(0, 1, shape).astype(dtype)


_GREYS = np.array([[0.5, 0.5, 0.5], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0],
                   [0.2, 0.2, 0.9], [0.9, 0.2, 0.2], [0.3, 0.7, 0.7]], np.float32)
_HUES = np.array([[0.0, 0.5, 0.5], [0.999, 1.0, 1.0], [0.5, 0.0, 0.3], [1 / 6, 1.0, 0.5],
                  [0.25, 0.3, 0.0], [0.9, 0.8, 0.7], [0.6, 0.2, 1.0]], np.float32)
_FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]

COLOR = (
    [case("RGBToHSV", name=np.dtype(d).name, images=_colors(2, 3, 4, 3, dtype=d)) for d in _FLOATS]
    + [case("HSVToRGB", name=np.dtype(d).name, images=_colors(2, 3, 4, 3, dtype=d)) for d in _FLOATS]
    + [
        case("RGBToHSV", name="edge_colors", images=_GREYS),
        case("RGBToHSV", name="negative", images=_img(5, 3)),
        case("RGBToHSV", name="empty", images=_colors(0, 3)),
        case("HSVToRGB", name="edge_hues", images=_HUES),
        case("AdjustContrastv2", images=_colors(2, 4, 5, 3), contrast_factor=np.float32(1.7)),
        case("AdjustContrastv2", name="rank_3", images=_img(3, 4, 2), contrast_factor=np.float32(-0.5)),
        case("AdjustContrastv2", name="rank_5", images=_img(2, 2, 3, 3, 1), contrast_factor=np.float32(0.3)),
        case("AdjustContrastv2", name="empty", images=_img(0, 3, 3, 3), contrast_factor=np.float32(2.0)),
        case("AdjustHue", images=_colors(2, 4, 5, 3), delta=np.float32(0.2)),
        case("AdjustHue", name="negative_delta", images=_colors(3, 4, 3), delta=np.float32(-0.7)),
        case("AdjustHue", name="delta_1", images=_colors(3, 4, 3), delta=np.float32(1.0)),
        case("AdjustHue", name="edge_colors", images=_GREYS.reshape(3, 3, 3), delta=np.float32(0.45)),
        case("AdjustHue", name="error_channels", images=_colors(3, 4, 2), delta=np.float32(0.1),
             error=True, dynamic=True),
        case("AdjustSaturation", images=_colors(2, 4, 5, 3), scale=np.float32(1.8)),
        case("AdjustSaturation", name="desaturate", images=_colors(3, 4, 3), scale=np.float32(0.3)),
        case("AdjustSaturation", name="zero", images=_colors(3, 4, 3), scale=np.float32(0.0)),
        case("AdjustSaturation", name="edge_colors", images=_GREYS.reshape(3, 3, 3),
             scale=np.float32(1.3)),
        case("AdjustSaturation", name="error_channels", images=_colors(3, 4, 4), scale=np.float32(2.0),
             error=True, dynamic=True),
    ])

_DRAW_BOXES = np.array([[[0.1, 0.2, 0.8, 0.9], [-0.2, 0.3, 0.5, 1.4], [0.6, 0.6, 0.2, 0.9],
                         [1.2, 0.1, 1.5, 0.5], [0.0, 0.0, 1.0, 1.0], [0.3, 0.3, 0.3, 0.3]],
                        [[0.5, 0.1, 0.9, 0.4], [-1.0, -1.0, -0.5, -0.5], [0.2, -0.5, 0.7, 0.5],
                         [0.4, 0.4, 0.6, 0.6], [0.1, 0.1, 0.9, 0.9], [0.0, 0.5, 0.4, 2.0]]],
                       np.float32)
_COLOR_TABLE = np.array([[0.1, 0.2, 0.3, 0.4], [0.9, 0.8, 0.7, 0.6], [0.5, 0.5, 0.0, 1.0]],
                        np.float32)
DRAW = [
    case("DrawBoundingBoxesV2", name=f"{np.dtype(d).name}_depth{depth}",
         images=_colors(2, 7, 8, depth, dtype=d), boxes=_DRAW_BOXES, colors=_COLOR_TABLE)
    for d in (np.float32, np.float16) for depth in (1, 3, 4)
] + [
    case("DrawBoundingBoxesV2", name="default_colors_rgb", images=_colors(2, 6, 6, 3),
         boxes=_DRAW_BOXES, colors=np.zeros((0, 4), np.float32)),
    case("DrawBoundingBoxesV2", name="default_colors_grey", images=_colors(2, 6, 6, 1),
         boxes=_DRAW_BOXES, colors=np.zeros((0, 4), np.float32)),
    case("DrawBoundingBoxesV2", name="many_boxes_cycle_colors", images=_colors(1, 9, 9, 3),
         boxes=_rng.uniform(-0.1, 1.1, (1, 14, 4)).astype(np.float32), colors=np.zeros((0, 3), np.float32)),
    case("DrawBoundingBoxes", images=_colors(2, 6, 7, 4), boxes=_DRAW_BOXES),
    case("DrawBoundingBoxesV2", name="nan_and_inf_boxes", images=_colors(1, 6, 6, 3),
         boxes=np.array([[[np.nan, 0.1, 0.5, 0.5], [0.1, 0.1, np.inf, 0.5], [-np.inf, 0.2, 0.6, 0.7],
                          [0.2, 0.2, 0.7, np.nan]]], np.float32), colors=_COLOR_TABLE),
    case("DrawBoundingBoxesV2", name="image_1x1", images=_colors(1, 1, 1, 3), boxes=_DRAW_BOXES[:1, :2],
         colors=_COLOR_TABLE),
    case("DrawBoundingBoxesV2", name="error_depth", images=_colors(1, 4, 4, 2),
         boxes=_DRAW_BOXES[:1], colors=_COLOR_TABLE, error=True, dynamic=True),
    case("DrawBoundingBoxesV2", name="error_batch", images=_colors(3, 4, 4, 3),
         boxes=_DRAW_BOXES, colors=_COLOR_TABLE, error=True, dynamic=True),
    case("DrawBoundingBoxesV2", name="error_colors_too_few_channels", images=_colors(1, 4, 4, 4),
         boxes=_DRAW_BOXES[:1], colors=_COLOR_TABLE[:, :3], error=True, dynamic=True),
]

CASES = (_resize_cases("ResizeBilinear") + _resize_cases("ResizeNearestNeighbor")
         + _resize_cases("ResizeBicubic") + _resize_cases("ResizeArea") + SCALE_AND_TRANSLATE
         + CROP_AND_RESIZE + EXTRACT_IMAGE_PATCHES + PROJECTIVE + COLOR + DRAW)
