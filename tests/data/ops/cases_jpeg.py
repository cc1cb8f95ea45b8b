"""Kernel cases for the image codec ops beside PNG: DecodeJpeg, DecodeAndCropJpeg,
ExtractJpegShape, EncodeJpeg(VariableQuality), DecodeImage, DecodeGif and DecodeBmp.

JPEG inputs are encoded by TensorFlow (4:2:0 and 4:4:4, gray) and by Pillow (4:2:2, 4:2:0,
progressive, CMYK), then decoded with every ratio, dct_method and fancy_upscaling; EncodeJpeg's
expected outputs are TensorFlow's bytes. GIFs are written by Pillow (its writer crops frames to
what changed and marks unchanged pixels transparent, which exercises TensorFlow's compositing);
BMPs are built here byte by byte. Sampling layouts neither TensorFlow nor Pillow writes (4:4:0,
4:1:1, luma below chroma) come from libjpeg-turbo's cjpeg (Debian: libjpeg-turbo-progs).
Record with a Python that has TensorFlow 2.21 AND Pillow (e.g. a venv with tensorflow-cpu==2.21.0
and pillow), cjpeg on PATH:
    python tests/data/ops/make_op_fixtures.py jpeg
"""
import io
import struct
import subprocess

import numpy as np
import tensorflow as tf
from PIL import Image

_rng = np.random.default_rng(20261128)


def _picture(height, width, noise=30):
    """A smooth colour pattern with noise: JPEG rounding shows on both."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 7 + y * 3) % 256, (x * x // 5 + y * 2) % 256,
                     128 + 60 * np.sin(x / 5.0) * np.cos(y / 7.0)], axis=-1)
    return np.clip(base + _rng.integers(-noise, noise + 1, base.shape), 0, 255).astype(np.uint8)


def _pillow_jpeg(pixels, mode=None, **options):
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode).save(buffer, "JPEG", **options) if mode else \
        Image.fromarray(pixels).save(buffer, "JPEG", **options)
    return buffer.getvalue()


def _cjpeg(pixels, sample):
    """JPEG bytes from cjpeg with `-sample` factors (component 1's, or one per component)."""
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PPM")
    return subprocess.run(["cjpeg", "-sample", sample, "-quality", "85"], input=buffer.getvalue(),
                          capture_output=True, check=True).stdout


def _blob(data):
    return np.array(data, dtype=object)


_IMAGE = _picture(19, 27)
JPEGS = {
    "tf420": tf.io.encode_jpeg(_IMAGE, quality=90).numpy(),
    "tf444": tf.io.encode_jpeg(_IMAGE, quality=80, chroma_downsampling=False).numpy(),
    "tfgray": tf.io.encode_jpeg(_IMAGE[..., :1], quality=85).numpy(),
    "pil422": _pillow_jpeg(_IMAGE, subsampling=1, quality=80),
    "pil420_odd": _pillow_jpeg(_picture(17, 30, noise=60), quality=70),
    "pil_progressive": _pillow_jpeg(_picture(16, 24), progressive=True, quality=85),
    "pil_narrow": _pillow_jpeg(_picture(9, 3), quality=90),
    "cjpeg440": _cjpeg(_picture(13, 10), "1x2"),
    "cjpeg411": _cjpeg(_picture(11, 21), "4x1"),
    "cjpeg_luma_below_chroma": _cjpeg(_picture(12, 9), "1x1,1x2,1x2"),
}
_NO_EXACT_ROUTE = {"pil422": "1", "cjpeg440": "1", "cjpeg411": "1", "cjpeg_luma_below_chroma": "1248"}
"""Sources and ratios where INTEGER_ACCURATE without fancy upscaling is refused (see
runtime/kernels/codecs.py); for the last, any attrs but Pillow's two settings."""


def _refused(name, ratio, dct, fancy):
    if str(ratio) not in _NO_EXACT_ROUTE.get(name, ""):
        return False
    if name == "cjpeg_luma_below_chroma":
        return (dct == "INTEGER_ACCURATE") != fancy
    return dct == "INTEGER_ACCURATE" and not fancy
_CMYK = _pillow_jpeg(_rng.integers(0, 256, (8, 11, 4)).astype(np.uint8), "CMYK", quality=90)


def _without_adobe_marker(data):
    """The JPEG without its APP14 'Adobe' segment: libjpeg then reads plain (uninverted) CMYK."""
    start = data.index(b"Adobe") - 4
    length = int.from_bytes(data[start + 2:start + 4], "big")
    return data[:start] + data[start + 2 + length:]


_CMYK_PLAIN = _without_adobe_marker(_CMYK)


def _decode(name, data, error=False, **attrs):
    return case("DecodeJpeg", name=name, contents=_blob(data), error=error, **attrs)


DECODE = []
for _name, _data in JPEGS.items():
    for _ratio in (1, 2, 4) + ((8,) if _name in ("tf420", "pil422") else ()):
        for _dct in ("", "INTEGER_ACCURATE") + (("INTEGER_FAST",) if _name == "tf420" else ()):
            for _fancy in (True, False):
                if _refused(_name, _ratio, _dct, _fancy):
                    continue
                DECODE.append(_decode(f"{_name}_r{_ratio}_{_dct or 'default'}_{'fancy' if _fancy else 'plain'}",
                                      _data, ratio=_ratio, dct_method=_dct, fancy_upscaling=_fancy))
for _name in ("tf420", "tfgray", "pil422"):
    for _channels in (1, 3):
        DECODE.append(_decode(f"{_name}_ch{_channels}", JPEGS[_name], channels=_channels))
        DECODE.append(_decode(f"{_name}_ch{_channels}_accurate_r2", JPEGS[_name], channels=_channels,
                              ratio=2, dct_method="INTEGER_ACCURATE"))
_TRUNCATED = JPEGS["tf420"][:len(JPEGS["tf420"]) * 2 // 3]
DECODE += [
    _decode("cmyk", _CMYK),
    _decode("cmyk_ch3_accurate", _CMYK, channels=3, dct_method="INTEGER_ACCURATE"),
    _decode("cmyk_without_adobe_marker", _CMYK_PLAIN),
    _decode("error_cmyk_ch1", _CMYK, channels=1, error=True),
    _decode("complete_with_recover_flag", JPEGS["tf420"], try_recover_truncated=True,
            acceptable_fraction=0.5),
    _decode("error_truncated", _TRUNCATED, error=True),
    _decode("error_header_only", JPEGS["tf420"][:40], error=True),
    _decode("error_not_an_image", b"this is not an image", error=True),
    _decode("error_jpeg_magic_then_garbage", b"\xff\xd8\xff" + bytes(range(200)), error=True),
    _decode("error_empty", b"", error=True),
    _decode("error_four_channels", JPEGS["tf420"], channels=4, error=True),
    _decode("error_bmp_through_decode_jpeg", b"BM" + bytes(60), error=True),
]

_CROP_SOURCES = ("tf420", "pil422", "pil420_odd", "tf444")
CROP = []
for _name in _CROP_SOURCES:
    for _ratio in (1, 2, 4):
        for _dct, _fancy in (("", True), ("", False), ("INTEGER_ACCURATE", True), ("INTEGER_ACCURATE", False)):
            if _name == "pil422" and _ratio == 1 and _dct:
                continue  # no exact route: refused (see runtime/kernels/codecs.py)
            height, width = -(-_IMAGE.shape[0] // _ratio), -(-_IMAGE.shape[1] // _ratio)
            if _name == "pil420_odd":
                height, width = -(-17 // _ratio), -(-30 // _ratio)
            for _window in ([1, 1, height - 2, width - 2], [0, width // 2, height, width - width // 2],
                            [height // 3, min(16 // _ratio, width - 1), height - height // 3, 1]):
                if min(_window[2:]) <= 0:
                    continue
                CROP.append(case("DecodeAndCropJpeg",
                                 name=f"{_name}_r{_ratio}_{_dct or 'default'}_{int(_fancy)}_{'_'.join(map(str, _window))}",
                                 contents=_blob(JPEGS[_name]), crop_window=np.array(_window, np.int32),
                                 ratio=_ratio, dct_method=_dct, fancy_upscaling=_fancy))
CROP += [
    case("DecodeAndCropJpeg", name="gray_channels3", contents=_blob(JPEGS["tfgray"]),
         crop_window=np.array([2, 3, 5, 7], np.int32), channels=3),
    case("DecodeAndCropJpeg", name="error_window_outside", contents=_blob(JPEGS["tf420"]),
         crop_window=np.array([0, 20, 5, 10], np.int32), error=True),
    case("DecodeAndCropJpeg", name="error_window_empty", contents=_blob(JPEGS["tf420"]),
         crop_window=np.array([0, 0, 0, 5], np.int32), error=True),
    case("DecodeAndCropJpeg", name="error_window_negative", contents=_blob(JPEGS["tf420"]),
         crop_window=np.array([-1, 0, 3, 5], np.int32), error=True),
    case("DecodeAndCropJpeg", name="error_window_size", contents=_blob(JPEGS["tf420"]),
         crop_window=np.array([0, 0, 3], np.int32), error=True, dynamic=True),
]

SHAPE = [
    case("ExtractJpegShape", name=_name, contents=_blob(_data)) for _name, _data in JPEGS.items()
] + [
    case("ExtractJpegShape", name="cmyk_int64", contents=_blob(_CMYK), output_type=tf.int64),
    case("ExtractJpegShape", name="error_png", contents=_blob(b"\x89PNG\r\n\x1a\n" + bytes(30)), error=True),
    case("ExtractJpegShape", name="error_cut_before_frame_header", contents=_blob(JPEGS["tf420"][:100]),
         error=True),
    case("ExtractJpegShape", name="error_empty", contents=_blob(b""), error=True),
]

_NOISE = _rng.integers(0, 256, (13, 21, 3)).astype(np.uint8)
ENCODE = [
    case("EncodeJpeg", name=f"rgb_{index}", image=_NOISE, **attrs) for index, attrs in enumerate([
        {}, {"quality": 50}, {"quality": 100}, {"quality": 0}, {"progressive": True},
        {"optimize_size": True}, {"chroma_downsampling": False}, {"format": "rgb"},
        {"density_unit": "cm", "x_density": 10, "y_density": 20}, {"xmp_metadata": "<x:xmpmeta/>"},
    ])
] + [
    case("EncodeJpeg", name="smooth_default", image=_IMAGE),
    case("EncodeJpeg", name="gray", image=_IMAGE[..., :1]),
    case("EncodeJpeg", name="gray_format_grayscale_q30", image=_IMAGE[..., :1], format="grayscale", quality=30),
    case("EncodeJpeg", name="one_pixel", image=np.array([[[10, 200, 30]]], np.uint8)),
    case("EncodeJpeg", name="error_two_channels", image=_NOISE[..., :2], error=True, dynamic=True),
    case("EncodeJpeg", name="error_four_channels", image=np.concatenate([_NOISE, _NOISE[..., :1]], 2),
         error=True, dynamic=True),
    case("EncodeJpeg", name="error_grayscale_format_rgb_image", image=_NOISE, format="grayscale",
         error=True, dynamic=True),
    case("EncodeJpegVariableQuality", name="q10", images=_NOISE, quality=np.array(10, np.int32)),
    case("EncodeJpegVariableQuality", name="q95_gray", images=_IMAGE[..., :1], quality=np.array(95, np.int32)),
    case("EncodeJpegVariableQuality", name="q0", images=_NOISE, quality=np.array(0, np.int32)),
    case("EncodeJpegVariableQuality", name="error_quality_101", images=_NOISE, quality=np.array(101, np.int32),
         error=True),
    case("EncodeJpegVariableQuality", name="error_quality_negative", images=_NOISE,
         quality=np.array(-1, np.int32), error=True),
    case("EncodeJpegVariableQuality", name="error_quality_not_scalar", images=_NOISE,
         quality=np.array([50], np.int32), error=True, dynamic=True),
    case("EncodeJpeg", name="error_quality_attr", image=_NOISE, quality=101, error=True),
]


def _gif(frames, **options):
    images = [Image.fromarray(f) for f in frames]
    buffer = io.BytesIO()
    images[0].save(buffer, "GIF", save_all=len(images) > 1, append_images=images[1:], **options)
    return buffer.getvalue()


_FRAME = (_rng.integers(0, 6, (10, 12, 1)) * 40).repeat(3, axis=2).astype(np.uint8)
_MOVED = _FRAME.copy()
_MOVED[3:6, 4:9] = [250, 10, 10]
_COLOURS = _rng.integers(0, 256, (40, 3)).astype(np.uint8)[_rng.integers(0, 40, (24, 20))]
GIFS = {
    "single": _gif([_FRAME]),
    "animated_optimized": _gif([_FRAME, _MOVED, _FRAME]),
    "animated_unoptimized": _gif([_FRAME, _MOVED], optimize=False, disposal=1),
    "many_colours_interlaced": _gif([_COLOURS], interlace=True),
}
GIF = [case("DecodeGif", name=_name, contents=_blob(_data)) for _name, _data in GIFS.items()] + [
    case("DecodeGif", name="jpeg_as_gif", contents=_blob(JPEGS["tf420"])),
    case("DecodeGif", name="error_truncated", contents=_blob(GIFS["animated_optimized"][:60]), error=True),
    case("DecodeGif", name="error_bmp", contents=_blob(b"BM" + bytes(60)), error=True),
]


def _bmp(pixels, bpp, top_down=False):
    """A BITMAPINFOHEADER file: rows bottom-up (or top-down), BGR(A), padded to 4 bytes."""
    height, width = pixels.shape[:2]
    channels = bpp // 8
    order = pixels[..., ::-1] if channels >= 3 else pixels
    if channels == 4:
        order = np.concatenate([pixels[..., 2::-1], pixels[..., 3:]], axis=2)
    rows = order if top_down else order[::-1]
    row_size = (channels * width + 3) // 4 * 4
    body = b"".join(bytes(r.astype(np.uint8).tobytes()).ljust(row_size, b"\0") for r in rows)
    header_size = 54
    info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bpp, 0, len(body),
                       2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", header_size + len(body), 0, 0, header_size) + info + body


_BMP24 = _bmp(_rng.integers(0, 256, (4, 5, 3)), 24)
_BMP32 = _bmp(_rng.integers(0, 256, (3, 6, 4)), 32)
_BMP8 = _bmp(_rng.integers(0, 256, (5, 7, 1)), 8)
BMP = [
    case("DecodeBmp", name="bgr24", contents=_blob(_BMP24)),
    case("DecodeBmp", name="bgr24_ch4", contents=_blob(_BMP24), channels=4),
    case("DecodeBmp", name="bgra32", contents=_blob(_BMP32)),
    case("DecodeBmp", name="bgra32_ch3", contents=_blob(_BMP32), channels=3),
    case("DecodeBmp", name="gray8", contents=_blob(_BMP8)),
    case("DecodeBmp", name="gray8_ch3", contents=_blob(_BMP8), channels=3),
    case("DecodeBmp", name="gray8_ch4", contents=_blob(_BMP8), channels=4),
    case("DecodeBmp", name="top_down", contents=_blob(_bmp(_rng.integers(0, 256, (3, 2, 3)), 24, top_down=True))),
    case("DecodeBmp", name="error_channels1", contents=_blob(_BMP24), channels=1, error=True),
    case("DecodeBmp", name="error_size_mismatch", contents=_blob(_BMP24 + b"\0"), error=True),
    case("DecodeBmp", name="error_short", contents=_blob(b"BM" + bytes(20)), error=True),
    case("DecodeBmp", name="error_16bit", contents=_blob(_bmp(_rng.integers(0, 256, (2, 2, 2)), 16)), error=True),
    case("DecodeBmp", name="error_jpeg", contents=_blob(JPEGS["tf420"]), error=True),
]

_PNG = tf.io.encode_png(_IMAGE).numpy()
IMAGE = []
for _dtype in (tf.uint8, tf.uint16, tf.float32):
    for _name, _data in (("jpeg", JPEGS["tf420"]), ("png", _PNG), ("gif", GIFS["animated_optimized"]),
                         ("bmp", _BMP24)):
        IMAGE.append(case("DecodeImage", name=f"{_name}_{_dtype.name}", contents=_blob(_data), dtype=_dtype))
IMAGE += [
    case("DecodeImage", name="gif_first_frame", contents=_blob(GIFS["animated_optimized"]),
         expand_animations=False),
    case("DecodeImage", name="jpeg_gray_ch3", contents=_blob(JPEGS["tfgray"]), channels=3),
    case("DecodeImage", name="png_ch1", contents=_blob(_PNG), channels=1),
    case("DecodeImage", name="bmp_ch4", contents=_blob(_BMP24), channels=4),
    case("DecodeImage", name="error_unknown_format", contents=_blob(b"RIFF0000WEBX0000"), error=True),
    case("DecodeImage", name="error_gif_channels1", contents=_blob(GIFS["single"]), channels=1, error=True),
    case("DecodeJpeg", name="png_through_decode_jpeg", contents=_blob(_PNG)),
    case("DecodePng", name="jpeg_through_decode_png", contents=_blob(JPEGS["tf420"])),
    case("DecodePng", name="jpeg_through_decode_png_uint16", contents=_blob(JPEGS["pil422"]), dtype=tf.uint16),
    case("DecodePng", name="gif_through_decode_png", contents=_blob(GIFS["single"]), channels=3),
    case("DecodePng", name="error_bmp_through_decode_png", contents=_blob(_BMP24), error=True),
    case("DecodePng", name="error_animated_gif_through_decode_png", contents=_blob(GIFS["animated_optimized"]),
         error=True),
    case("DecodeJpeg", name="gif_through_decode_jpeg", contents=_blob(GIFS["single"])),
    case("DecodeJpeg", name="error_animated_gif_through_decode_jpeg",
         contents=_blob(GIFS["animated_optimized"]), error=True),
]

CASES = DECODE + CROP + SHAPE + ENCODE + GIF + BMP + IMAGE
