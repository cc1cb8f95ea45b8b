"""Image codec ops beside PNG: JPEG (decode, decode-and-crop, shape, encode), GIF, BMP and
DecodeImage, which sniffs the format as TensorFlow does.

TensorFlow decodes JPEG with libjpeg-turbo. JPEG goes through Pillow, whose wheels bundle
libjpeg-turbo too: an OPTIONAL dependency (`pip install 'savedmodel[image]'`) imported only
when a JPEG or GIF op runs (ExtractJpegShape reads the frame header itself). Pillow exposes two
libjpeg settings: its default (the accurate integer IDCT, ISLOW, with fancy upsampling) and
its "draft" mode (the fast integer IDCT, IFAST, without). TensorFlow's `dct_method` and
`fancy_upscaling` pick the IDCT and the upsampling separately (`dct_method` "" means
INTEGER_FAST), so colour images with subsampled chroma are decoded here in libjpeg's own
steps: the components, decoded by Pillow with the right IDCT and no upsampling, then libjpeg's
upsampling (the h2v1/h1v2/h2v2 "fancy" triangle filters, or replication) and its integer
YCbCr->RGB tables in numpy. That reproduces TensorFlow bit for bit, DecodeAndCropJpeg's crop
edges included (libjpeg-turbo upsamples a crop as an image of its own, widened on the left to
an iMCU boundary).

Cases with no exact route raise an error instead of answering differently (the nearest Pillow
output is off by up to 33 levels): INTEGER_ACCURATE at ratio 1 on chroma subsampled other than
2x2 (4:2:2, 4:4:0, 4:1:1), cropped or without fancy upscaling, where Pillow cannot give that
IDCT's chroma before upsampling; and exotic layouts whose luma is subsampled below chroma,
except with Pillow's own two settings.

A truncated JPEG is an error: TensorFlow either rejects it too (the default) or, with
try_recover_truncated or acceptable_fraction < 1, returns what libjpeg made of the data before
it ran out, through a source manager that feeds libjpeg a fake end marker mid-block. Pillow's
suspending reader cannot reproduce those pixels, so that case raises an error naming the op,
never an image that differs.

GIF frames are decoded (LZW) by Pillow one frame at a time, from a one-frame GIF built from the
frame's bytes, and composited as TensorFlow's gif_io does: frames start from the previous frame,
transparent pixels keep it, a first frame not covering the canvas is black around. BMP is
TensorFlow's own small decoder, in numpy.
"""
from __future__ import annotations

import io
import struct

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels import png
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_JPEG, _PNG, _GIF, _BMP = "JPEG", "PNG", "GIF", "BMP"
_INVALID_JPEG = "jpeg::Uncompress failed. Invalid JPEG data or crop window."
_DCT_METHODS = ("", "INTEGER_FAST", "INTEGER_ACCURATE")


def _pillow(op: str):
    """Pillow's Image module, or an error naming the op and the extra that installs it."""
    try:
        from PIL import Image
    except ImportError:
        raise KernelError(f"{op} needs Pillow, an optional dependency: "
                          "pip install 'savedmodel[image]'") from None
    return Image


def _scalar_bytes(contents) -> bytes:
    value = np.asarray(contents, dtype=object)
    check(value.ndim == 0, f"`contents` must be scalar but got shape {list(value.shape)}")
    item = value.item()
    data = item if isinstance(item, bytes) else str(item).encode()
    check(len(data) > 0, "Input is empty.")
    return data


def _classify(data: bytes) -> str | None:
    if data.startswith(b"\xff\xd8\xff"):
        return _JPEG
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _PNG
    if data.startswith(b"GIF8"):
        return _GIF
    if data.startswith(b"BM"):
        return _BMP
    return None


# ---------------------------------------------------------------------------------------------
# The decode ops: one dispatcher, as TensorFlow's DecodeImageV2Op


@kernel("DecodeJpeg")
def decode_jpeg(contents, *, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1.0,
                dct_method: str = "", **_) -> tuple[np.ndarray]:
    options = _jpeg_options(ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method)
    return (_decode("DecodeJpeg", contents, channels, np.uint8, options),)


@kernel("DecodeAndCropJpeg")
def decode_and_crop_jpeg(contents, crop_window, *, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1.0, dct_method: str = "",
                         **_) -> tuple[np.ndarray]:
    options = _jpeg_options(ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method)
    window = np.asarray(crop_window)
    check(window.ndim == 1, f"crop_window must be 1-D, got shape {list(window.shape)}")
    check(window.shape[0] == 4, f"crop_size must have four elements {list(window.shape)}")
    options["crop"] = tuple(int(v) for v in window)
    return (_decode("DecodeAndCropJpeg", contents, channels, np.uint8, options),)


@kernel("DecodeImage")
def decode_image(contents, *, channels: int = 0, dtype=None, expand_animations: bool = True,
                 **_) -> tuple[np.ndarray]:
    wanted = np.dtype(dtype.numpy) if dtype is not None else np.dtype(np.uint8)
    check(wanted in (np.uint8, np.uint16, np.float32),
          f"`dtype` for `DecodeImage` must be unit8, unit16, float but got: {wanted}")
    return (_decode("DecodeImage", contents, channels, wanted, _jpeg_options(), expand_animations),)


@kernel("DecodeGif")
def decode_gif(contents, **_) -> tuple[np.ndarray]:
    return (_decode("DecodeGif", contents, 3, np.uint8, _jpeg_options()),)


@kernel("DecodeBmp")
def decode_bmp(contents, *, channels: int = 0, **_) -> tuple[np.ndarray]:
    return (_decode("DecodeBmp", contents, channels, np.uint8, _jpeg_options()),)


def decode_as(op: str, contents, channels: int, dtype: np.dtype) -> np.ndarray:
    """Decode whatever image `contents` holds as `op` (with JPEG attrs at their defaults) would:
    for DecodePng, whose own kernel reads PNG."""
    return _decode(op, contents, channels, dtype, _jpeg_options())


def _jpeg_options(ratio: int = 1, fancy: bool = True, recover: bool = False, fraction: float = 1.0,
                  dct_method: str = "") -> dict:
    check(ratio in (1, 2, 4, 8), f"ratio must be 1, 2, 4, or 8, got {ratio}")
    check(dct_method in _DCT_METHODS, "dct_method must be one of {'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}")
    return {"ratio": ratio, "fancy": bool(fancy), "recover": bool(recover), "fraction": float(fraction),
            "accurate": dct_method == "INTEGER_ACCURATE", "crop": None}


def _decode(op: str, contents, channels: int, dtype: np.dtype, options: dict,
            expand_animations: bool = True) -> np.ndarray:
    check(channels in (0, 1, 3, 4), f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    data = _scalar_bytes(contents)
    kind = _classify(data)
    check(kind is not None, "Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required.")
    check(op != "DecodeAndCropJpeg" or kind == _JPEG,
          f"DecodeAndCropJpeg operation can run on JPEG only, but detected {kind}.")
    check(op != "DecodeBmp" or kind == _BMP,
          f"Trying to decode {kind} format using DecodeBmp op. Use `decode_{kind.lower()}` or "
          "`decode_image` instead.")
    if kind == _PNG:
        return _png(contents, channels, dtype, op)
    if kind == _JPEG:
        check(channels != 4, "JPEG does not support 4 channels")
        image = _decode_jpeg(op, data, channels, options)
        frames = image[None] if op == "DecodeGif" else image
    elif kind == _GIF:
        check(channels in (0, 3), f"channels must be 0 or 3 for GIF, got {channels}")
        frames = _gif_frames(op, data, single=op == "DecodeImage" and not expand_animations)
        if op in ("DecodeJpeg", "DecodePng") or (op == "DecodeImage" and not expand_animations):
            check(frames.shape[0] == 1, f"Got {frames.shape[0]} frames, but animated gifs can only be "
                                        "decoded by tf.io.decode_gif or tf.io.decode_image")
            frames = frames[0]
    else:
        check(op in ("DecodeBmp", "DecodeImage"),
              f"Trying to decode BMP format using a wrong op. Use `decode_bmp` or `decode_image` "
              f"instead. Op used: {op}")
        frames = _bmp(data, channels)
    return _to_dtype(frames, dtype)


def _to_dtype(image: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """uint8 samples as TensorFlow widens them: x 256 for uint16, / 255 for float."""
    if dtype == np.uint16:
        return image.astype(np.uint16) * np.uint16(256)
    if dtype == np.float32:
        return image.astype(np.float32) * np.float32(1.0 / 255)
    return image


def _png(contents, channels: int, dtype: np.dtype, op: str) -> np.ndarray:
    wide = dtypes.from_numpy(np.dtype(np.uint8 if dtype == np.uint8 else np.uint16))
    (image,) = png.decode_png(contents, channels=channels, dtype=wide)
    if dtype == np.float32:
        image = image.astype(np.float32) * np.float32(1.0 / 65535)
    return image[None] if op == "DecodeGif" else image


# ---------------------------------------------------------------------------------------------
# JPEG decoding


def _decode_jpeg(op: str, data: bytes, channels: int, options: dict) -> np.ndarray:
    image_module = _pillow(op)
    try:
        return _jpeg_pixels(image_module, data, channels, options)
    except KernelError:
        raise
    except image_module.DecompressionBombError as error:
        raise KernelError(f"{_INVALID_JPEG} ({error})") from None
    except (OSError, SyntaxError, ValueError, struct.error, IndexError) as error:
        if "truncated" in str(error) and (options["recover"] or options["fraction"] < 1):
            raise KernelError(f"{op}: this JPEG is truncated; decoding what it holds "
                              "(try_recover_truncated, acceptable_fraction < 1) is not supported "
                              "here, only complete files") from None
        raise KernelError(f"{_INVALID_JPEG} ({error})") from None


def _open(image_module, data: bytes, mode: str | None, ratio: int, fast: bool):
    """The JPEG opened for decoding at 1/ratio in `mode` (None: as stored), with the fast
    integer IDCT and no fancy upsampling (`fast`, Pillow's draft) or the accurate one with it.
    The scale is set as Pillow's draft() sets it; draft() itself picks the scale from a target
    size and so cannot ask for a ratio larger than the image."""
    image = image_module.open(io.BytesIO(data))
    if image.format != "JPEG":
        raise OSError("not a JPEG file")
    image.draft(mode, None)
    width, height = image.size
    size = (-(-width // ratio), -(-height // ratio))
    image.tile = [image.tile[0]._replace(extents=(0, 0) + size)]
    image._size = size
    image.decoderconfig = (ratio, int(fast))
    return image


def _jpeg_pixels(image_module, data: bytes, channels: int, options: dict) -> np.ndarray:
    probe = image_module.open(io.BytesIO(data))
    if probe.format != "JPEG":
        raise OSError("not a JPEG file")
    stored, layers, adobe = probe.mode, list(getattr(probe, "layer", [])), "adobe" in probe.info
    check(all(1 <= h <= 4 and 1 <= v <= 4 for h, v in _factors(layers)),
          f"{_INVALID_JPEG} (sampling factors {_factors(layers)})")
    ratio, fast = options["ratio"], not options["accurate"]
    if stored == "CMYK":
        check(channels != 1, _INVALID_JPEG)
        cmyk = np.asarray(_open(image_module, data, None, ratio, fast))
        image = _cmyk_to_rgb(cmyk, adobe)
    elif stored == "L" or channels == 1:
        image = np.asarray(_open(image_module, data, "L", ratio, fast))[..., None]
        image = np.repeat(image, 3, axis=2) if channels == 3 else image
    else:
        image = _ycc_image(image_module, data, layers, options)
        if image is not None:
            return image
        image = np.asarray(_open(image_module, data, None, ratio, _fallback_fast(layers, options)))
    return _crop(image, options["crop"])


def _fallback_fast(layers: list, options: dict) -> bool:
    """Pillow's setting when its RGB output is used as is. Exact when no component is upsampled
    (the IDCT decides), and where Pillow's two settings match TensorFlow's attrs: the fast IDCT
    without fancy upsampling (replication, so crops too), the accurate one with it on a whole
    image. Other combinations get here only for layouts the component route does not take
    (accurate chroma out of reach, luma subsampled below chroma), and are refused: the nearest
    Pillow output is off by up to 33 levels."""
    if not _upsamples(layers, options["ratio"]):
        return not options["accurate"]
    accurate, fancy = options["accurate"], options["fancy"]
    check((not accurate and not fancy) or (accurate and fancy and options["crop"] is None),
          f"this JPEG's sampling factors {_factors(layers)} with dct_method "
          f"{'INTEGER_ACCURATE' if accurate else 'INTEGER_FAST'} and fancy_upscaling={fancy} have no "
          "exact decoding here; use the default dct_method (or INTEGER_ACCURATE with fancy "
          "upscaling on the whole image)")
    return not accurate


def _crop(image: np.ndarray, window) -> np.ndarray:
    if window is None:
        return image
    _check_window(window, *image.shape[:2])
    y, x, height, width = window
    return image[y:y + height, x:x + width]


def _check_window(window, height: int, width: int) -> None:
    """TensorFlow's IsCropWindowValid, against the (scaled) output size."""
    y, x, crop_h, crop_w = window
    check(crop_h > 0 and crop_w > 0 and x >= 0 and y >= 0 and y + crop_h <= height and x + crop_w <= width,
          f"{_INVALID_JPEG} (crop window {list(window)} for an image of {height}x{width})")


def _cmyk_to_rgb(cmyk: np.ndarray, adobe: bool) -> np.ndarray:
    """TensorFlow's conversion of libjpeg's CMYK samples, which Pillow hands back inverted
    (it assumes Adobe's inverted convention for every CMYK JPEG): with an Adobe marker the
    samples are inverted in the file, so RGB = K x C / 255; without one (255-K) x (255-C) / 255."""
    raw = 255 - cmyk.astype(np.int64)
    if adobe:
        return (raw[..., 3:4] * raw[..., :3] // 255).astype(np.uint8)
    return ((255 - raw[..., 3:4]) * (255 - raw[..., :3]) // 255).astype(np.uint8)


# libjpeg-turbo's decoding of a YCbCr image, step by step ------------------------------------


def _factors(layers: list) -> list[tuple[int, int]]:
    return [(layer[1], layer[2]) for layer in layers]


def _scaled_sizes(layers: list, ratio: int) -> list[int]:
    """Each component's IDCT size (jdmaster.c): 8/ratio, doubled for subsampled chroma while
    that replaces upsampling."""
    factors = _factors(layers)
    max_h, max_v = max(f[0] for f in factors), max(f[1] for f in factors)
    smallest = 8 // ratio
    sizes = []
    for h, v in factors:
        size = smallest
        while size < 8 and (max_h * smallest) % (h * size * 2) == 0 and (max_v * smallest) % (v * size * 2) == 0:
            size *= 2
        sizes.append(size)
    return sizes


def _expansions(layers: list, ratio: int) -> list[tuple[int, int]]:
    """(horizontal, vertical) upsampling factor of each component at this ratio."""
    factors = _factors(layers)
    max_h, max_v = max(f[0] for f in factors), max(f[1] for f in factors)
    smallest = 8 // ratio
    return [(max_h * smallest // (h * size), max_v * smallest // (v * size))
            for (h, v), size in zip(factors, _scaled_sizes(layers, ratio))]


def _upsamples(layers: list, ratio: int) -> bool:
    return len(layers) == 3 and any(e != (1, 1) for e in _expansions(layers, ratio))


def _ycc_image(image_module, data: bytes, layers: list, options: dict) -> np.ndarray | None:
    """RGB through the components when libjpeg upsamples chroma; None when it does not (then
    Pillow's own RGB output is exact) or when the needed components are out of reach."""
    ratio, accurate = options["ratio"], options["accurate"]
    if len(layers) != 3 or not _upsamples(layers, ratio):
        return None
    expansions = _expansions(layers, ratio)
    if expansions[0] != (1, 1):
        return None  # luma subsampled below chroma: Pillow's luma would come upsampled
    sizes = _scaled_sizes(layers, ratio)
    luma = np.asarray(_open(image_module, data, "YCbCr", ratio, not accurate or sizes[0] < 8))[..., 0]
    if accurate and any(s == 8 for s in sizes[1:]):
        chroma = _accurate_chroma(image_module, data, layers, ratio)
        if chroma is None:
            return None
    else:
        replicated = np.asarray(_open(image_module, data, "YCbCr", ratio, True))
        chroma = [replicated[::ev, ::eh, c] for c, (eh, ev) in ((1, expansions[1]), (2, expansions[2]))]
    height, width = luma.shape
    crop = options["crop"]
    x0, out_width = _decoded_columns(crop, layers, ratio, height, width)
    planes = [luma[:, x0:x0 + out_width]]
    for plane, (eh, ev) in zip(chroma, expansions[1:]):
        first = x0 // eh
        count = -(-out_width // eh)
        fancy = options["fancy"] and ratio < 8
        # decided for the whole image; libjpeg-turbo decides again for a crop 1 sample wide
        wide = plane.shape[1] > 2 and count >= 2
        planes.append(_upsample(plane[:, first:first + count], eh, ev, fancy, wide)[:height, :out_width])
    rgb = _ycc_to_rgb(*planes)
    if crop is not None:
        y, x, crop_h, crop_w = crop
        rgb = rgb[y:y + crop_h, x - x0:x - x0 + crop_w]
    return rgb


def _decoded_columns(crop, layers: list, ratio: int, height: int, width: int) -> tuple[int, int]:
    """The first column and width libjpeg-turbo decodes for a crop (jpeg_crop_scanline): the
    crop widened on the left to an iMCU boundary; the whole width without a crop."""
    if crop is None:
        return 0, width
    _check_window(crop, height, width)
    _, x, _, crop_w = crop
    align = max(layer[1] for layer in layers) * (8 // ratio)
    x0 = x // align * align
    return x0, x + crop_w - x0


def _accurate_chroma(image_module, data: bytes, layers: list, ratio: int) -> list | None:
    """The accurate IDCT's chroma before upsampling: at twice the ratio libjpeg-turbo decodes
    2x2-subsampled chroma at full size (no upsampling), which Pillow hands back as is."""
    if ratio != 1 or any(e != (2, 2) for e in _expansions(layers, 1)[1:]):
        return None
    if any(e != (1, 1) for e in _expansions(layers, 2)[1:]):
        return None
    half = np.asarray(_open(image_module, data, "YCbCr", 2, False))
    return [half[..., 1], half[..., 2]]


def _upsample(plane: np.ndarray, eh: int, ev: int, fancy: bool, wide: bool) -> np.ndarray:
    """libjpeg's upsampling of one component (jdsample.c): fancy triangle filters for 2x1 and
    2x2 (when the component is more than two samples wide) and 1x2, else replication."""
    values = plane.astype(np.int64)
    if fancy and (eh, ev) == (2, 1) and wide:
        return _fancy_columns(values, 1, 2, 2).astype(np.uint8)
    if fancy and (eh, ev) == (2, 2) and wide:
        return _fancy_columns(_fancy_rows(values), 8, 7, 4).astype(np.uint8)
    if fancy and (eh, ev) == (1, 2):
        sums = _fancy_rows(values)
        sums[0::2] += 1
        sums[1::2] += 2
        return (sums >> 2).astype(np.uint8)
    return np.repeat(np.repeat(values, ev, axis=0), eh, axis=1).astype(np.uint8)


def _fancy_rows(values: np.ndarray) -> np.ndarray:
    """Each row twice: 3 x itself + the row above, then 3 x itself + the row below (edge rows
    repeated), unshifted."""
    above = np.vstack([values[:1], values[:-1]])
    below = np.vstack([values[1:], values[-1:]])
    out = np.empty((values.shape[0] * 2, values.shape[1]), np.int64)
    out[0::2] = 3 * values + above
    out[1::2] = 3 * values + below
    return out


def _fancy_columns(values: np.ndarray, bias_left: int, bias_right: int, shift: int) -> np.ndarray:
    """Each column twice: 3 x itself + the left (right) neighbour, plus a bias, shifted."""
    left = np.hstack([values[:, :1], values[:, :-1]])
    right = np.hstack([values[:, 1:], values[:, -1:]])
    out = np.empty((values.shape[0], values.shape[1] * 2), np.int64)
    out[:, 0::2] = (3 * values + left + bias_left) >> shift
    out[:, 1::2] = (3 * values + right + bias_right) >> shift
    return out


def _ycc_to_rgb(luma: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    """libjpeg's integer YCbCr->RGB (jdcolor.c): 16-bit fixed-point tables, rounded once."""
    def fix(x: float) -> int:
        return int(x * 65536 + 0.5)

    y = luma.astype(np.int64)
    b = cb.astype(np.int64) - 128
    r = cr.astype(np.int64) - 128
    red = y + ((fix(1.40200) * r + 32768) >> 16)
    green = y + ((-fix(0.34414) * b + 32768 - fix(0.71414) * r) >> 16)
    blue = y + ((fix(1.77200) * b + 32768) >> 16)
    return np.clip(np.stack([red, green, blue], axis=-1), 0, 255).astype(np.uint8)


@kernel("ExtractJpegShape")
def extract_jpeg_shape(contents, *, output_type=None, **_) -> tuple[np.ndarray]:
    """[height, width, components] from the frame header (SOFn), as libjpeg reports them
    without decoding: no Pillow needed."""
    data = _scalar_bytes(contents)
    try:
        height, width, components = _frame_header(data)
    except (ValueError, struct.error, IndexError) as error:
        raise KernelError(f"Could not read image information: {error}") from None
    dtype = output_type.numpy if output_type is not None else np.int32
    return (np.array([height, width, components], dtype),)


_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""SOF0..SOF15: every frame header (baseline, extended, progressive, lossless, arithmetic)."""


def _frame_header(data: bytes) -> tuple[int, int, int]:
    """Walk the marker segments up to the frame header; its height, width and component count."""
    if not data.startswith(b"\xff\xd8"):
        raise ValueError("not a JPEG file")
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            raise ValueError(f"no marker at byte {position}")
        marker = data[position + 1]
        if marker == 0xFF or marker == 0x01 or 0xD0 <= marker <= 0xD8:
            position += 1 if marker == 0xFF else 2
            continue
        if marker in (0xD9, 0xDA):
            raise ValueError("no frame header before the scan")
        (length,) = struct.unpack(">H", data[position + 2:position + 4])
        if marker in _FRAME_MARKERS:
            _, height, width, components = struct.unpack(">BHHB", data[position + 4:position + 10])
            if height == 0 or width == 0 or components == 0:
                raise ValueError(f"empty image ({height}x{width}, {components} components)")
            return height, width, components
        position += 2 + length
    raise ValueError("no frame header")


# ---------------------------------------------------------------------------------------------
# JPEG encoding


@kernel("EncodeJpeg")
def encode_jpeg(image, *, format: str = "", quality: int = 95, progressive: bool = False,
                optimize_size: bool = False, chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                **_) -> tuple[np.ndarray]:
    check(format in ("", "grayscale", "rgb"), f"format must be '', grayscale or rgb, got {format}")
    check(0 <= quality <= 100, f"quality must be in [0,100], got {quality}")
    check(density_unit in ("in", "cm"), f"density_unit must be 'in' or 'cm', got {density_unit}")
    settings = {"progressive": progressive, "optimize": optimize_size, "subsampling": chroma_downsampling,
                "unit": 1 if density_unit == "in" else 2, "density": (x_density, y_density),
                "xmp": xmp_metadata}
    return (_encode("EncodeJpeg", image, format, quality, settings),)


@kernel("EncodeJpegVariableQuality")
def encode_jpeg_variable_quality(images, quality, **_) -> tuple[np.ndarray]:
    value = np.asarray(quality)
    check(value.ndim == 0, f"quality must be a scalar: {list(value.shape)}")
    level = int(value)
    check(0 <= level <= 100, f"quality must be in [0,100], got {level}")
    settings = {"progressive": False, "optimize": False, "subsampling": True, "unit": 1,
                "density": (300, 300), "xmp": ""}
    return (_encode("EncodeJpegVariableQuality", images, "", level, settings),)


def _encode(op: str, image, format: str, quality: int, settings: dict) -> np.ndarray:
    pixels = np.asarray(image)
    check(pixels.ndim == 3, f"image must be 3-dimensional{list(pixels.shape)}")
    height, width, channels = pixels.shape
    check(height * width * channels < 2 ** 31, "image too large to encode")
    wanted = {"": channels, "grayscale": 1, "rgb": 3}[format]
    check(channels == wanted and channels in (1, 3),
          f"image must have 1 or 3 channels, got {list(pixels.shape)}" if not format else
          f"image must have {wanted} channels for format {format}, got {list(pixels.shape)}")
    image_module = _pillow(op)
    if height == 0 or width == 0:
        raise KernelError(f"JPEG encoding failed: empty image of shape {list(pixels.shape)}")
    picture = image_module.fromarray(np.ascontiguousarray(pixels[..., 0] if channels == 1 else pixels),
                                     "L" if channels == 1 else "RGB")
    options = {"quality": quality, "progressive": settings["progressive"],
               "optimize": settings["optimize"], "dpi": (1, 1)}
    if channels == 3:
        options["subsampling"] = 2 if settings["subsampling"] else 0
    if settings["xmp"]:
        options["xmp"] = settings["xmp"].encode("utf-8", "surrogateescape")
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", **options)
    out = np.empty((), dtype=object)
    out[()] = _set_density(buffer.getvalue(), settings["unit"], *settings["density"])
    return out


def _set_density(data: bytes, unit: int, x_density: int, y_density: int) -> bytes:
    """The JFIF header's density fields as TensorFlow writes them (Pillow writes only dots per
    inch). The APP0 segment libjpeg writes first: FFD8 FFE0 len 'JFIF\\0' major minor unit X Y."""
    check(data[2:4] == b"\xff\xe0" and data[6:11] == b"JFIF\x00", "JPEG encoding failed: no JFIF header")
    fields = struct.pack(">BHH", unit, x_density & 0xFFFF, y_density & 0xFFFF)
    return data[:13] + fields + data[18:]


# ---------------------------------------------------------------------------------------------
# GIF


def _gif_frames(op: str, data: bytes, single: bool) -> np.ndarray:
    try:
        width, height, palette, frames = _gif_blocks(data)
    except (struct.error, IndexError, ValueError) as error:
        raise KernelError(f"Invalid GIF data (size {len(data)}), failed to slurp gif file: {error}") from None
    check(len(frames) > 0, f"Invalid GIF data (size {len(data)}), gif file does not contain any image")
    image_module = _pillow(op)
    canvas = np.zeros((height, width, 3), np.uint8)
    out = []
    for frame in frames[:1] if single else frames:
        indices = _lzw_frame(image_module, data, frame)
        colors = frame["palette"] if frame["palette"] is not None else palette
        check(colors is not None, f"Invalid GIF data (size {len(data)}), missing color map")
        canvas = _composite(canvas, indices, frame, colors, len(data))
        out.append(canvas)
    return np.stack(out)


def _gif_blocks(data: bytes):
    """Screen size, global palette and each frame's descriptor: position, size, palette,
    interlacing, transparent index (from the graphic control extension before it) and where
    its LZW data lies."""
    width, height, packed = struct.unpack("<HHB", data[6:11])
    position = 13
    palette = None
    if packed & 0x80:
        size = 3 << ((packed & 7) + 1)
        palette = np.frombuffer(data[position:position + size], np.uint8).reshape(-1, 3)
        position += size
    frames, transparent = [], None
    while position < len(data):
        marker = data[position]
        if marker == 0x3B:
            break
        if marker == 0x21:
            label = data[position + 1]
            body_start = position + 2
            position = _skip_sub_blocks(data, body_start)
            if label == 0xF9 and data[body_start] >= 4:
                flags, index = data[body_start + 1], data[body_start + 4]
                transparent = index if flags & 1 else None
            continue
        if marker != 0x2C:
            raise ValueError(f"unknown block 0x{marker:02x} at byte {position}")
        left, top, frame_w, frame_h, flags = struct.unpack("<HHHHB", data[position + 1:position + 10])
        position += 10
        local = None
        if flags & 0x80:
            size = 3 << ((flags & 7) + 1)
            local = np.frombuffer(data[position:position + size], np.uint8).reshape(-1, 3)
            position += size
        start = position
        position = _skip_sub_blocks(data, position + 1)
        frames.append({"left": left, "top": top, "width": frame_w, "height": frame_h,
                       "interlaced": bool(flags & 0x40), "palette": local, "transparent": transparent,
                       "lzw": (start, position)})
        transparent = None
    return width, height, palette, frames


def _skip_sub_blocks(data: bytes, position: int) -> int:
    while True:
        size = data[position]
        position += 1 + size
        if size == 0:
            return position
        if position > len(data):
            raise ValueError("truncated data block")


def _lzw_frame(image_module, data: bytes, frame: dict) -> np.ndarray:
    """The frame's colour indices, LZW-decoded by Pillow from a one-frame GIF of its bytes with
    a gray ramp palette (so indices come back unchanged whatever mode Pillow picks)."""
    width, height = frame["width"], frame["height"]
    check(width > 0 and height > 0, "Invalid GIF data: a frame of size 0")
    ramp = np.repeat(np.arange(256, dtype=np.uint8), 3).tobytes()
    start, end = frame["lzw"]
    single = (b"GIF89a" + struct.pack("<HHBBB", width, height, 0xF7, 0, 0) + ramp
              + b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0x40 if frame["interlaced"] else 0)
              + data[start:end] + b"\x3b")
    try:
        decoded = image_module.open(io.BytesIO(single))
        decoded.load()
    except (OSError, SyntaxError, ValueError, image_module.DecompressionBombError) as error:
        raise KernelError(f"Invalid GIF data (size {len(data)}), failed to slurp gif file: {error}") from None
    return np.asarray(decoded.convert("L") if decoded.mode not in ("L", "P") else decoded).astype(np.int64)


def _composite(previous: np.ndarray, indices: np.ndarray, frame: dict, colors: np.ndarray,
               size: int) -> np.ndarray:
    """TensorFlow's gif_io: the frame drawn over the previous one (black for the first), its
    transparent index leaving pixels as they were; a frame is clipped to the screen."""
    canvas = previous.copy()
    height, width = canvas.shape[:2]
    top, left = frame["top"], frame["left"]
    bottom, right = min(top + frame["height"], height), min(left + frame["width"], width)
    if bottom <= top or right <= left:
        return canvas
    region = indices[:bottom - top, :right - left]
    keep = region == frame["transparent"] if frame["transparent"] is not None else np.zeros(region.shape, bool)
    drawn = region[~keep]
    if drawn.size:
        worst = int(drawn.max())
        check(worst < len(colors), f"Invalid GIF data (size {size}), found color index {worst} outside "
                                   f"of color map range {len(colors)}")
    target = canvas[top:bottom, left:right]
    target[~keep] = colors[drawn]
    return canvas


# ---------------------------------------------------------------------------------------------
# BMP: TensorFlow's own decoder


def _bmp(data: bytes, channels: int) -> np.ndarray:
    check(channels != 1, f"`channels` must be 0, 3 or 4 for BMP, but got {channels}")
    check(len(data) >= 32, "Incomplete bmp content, requires at least 32 bytes to find the header size, "
                           f"width, height, and bpp, got {len(data)} bytes")
    (header_size,) = struct.unpack("<i", data[10:14])
    width, height = struct.unpack("<ii", data[18:26])
    (bpp,) = struct.unpack("<h", data[28:30])
    image_channels = int(bpp / 8)
    check(image_channels in (1, 3, 4),
          f"Number of channels inherent in the image must be 1, 3 or 4, was {image_channels}")
    check(width > 0, "Width must be positive")
    check(height != 0, "Height must be nonzero")
    check(header_size >= 0, "header size must be nonnegative")
    check(width * abs(height) < (2 ** 31 - 1) // 8, "Total possible pixel bytes must be less than 2^30")
    rows = abs(height)
    row_size = (image_channels * width + 3) // 4 * 4
    difference = len(data) - header_size - row_size * rows
    check(difference == 0, "Input size should match (header_size + row_size * abs_height) but they "
                           f"differ by {difference}")
    pixels = np.frombuffer(data, np.uint8, row_size * rows, header_size).reshape(rows, row_size)
    pixels = pixels[:, :width * image_channels].reshape(rows, width, image_channels)
    if height > 0:
        pixels = pixels[::-1]
    wanted = channels or image_channels
    if image_channels == 1:
        colour = np.repeat(pixels, 3, axis=2) if wanted >= 3 else pixels
    else:
        colour = pixels[..., 2::-1]
    if wanted == 4:
        alpha = pixels[..., 3:4] if image_channels == 4 else np.full(pixels.shape[:2] + (1,), 255, np.uint8)
        colour = np.concatenate([colour, alpha], axis=2)
    return np.ascontiguousarray(colour)
