"""PNG codec ops: DecodePng and EncodePng, with zlib from Python's standard library.

Decoding follows what TensorFlow asks of libpng: every colour type and bit depth, Adam7
interlacing, palettes and tRNS transparency; then channels as requested (gray to RGB by
repetition, RGB to gray with libpng's integer weights 9797/19234/3737 (/32768, truncated at
8 bits, rounded at 16),
alpha added at full scale, stripped, or made from tRNS); 16-bit samples become 8-bit by
dropping the low byte and 8-bit ones 16-bit by v * 257. The PNG filters Sub and Up are
undone with vectorized sums; Average and Paeth depend on the pixel just decoded, so those
rows are undone pixel by pixel.

Encoding writes the bytes libpng writes for TensorFlow: IHDR, IDAT chunks of at most 8192
bytes, IEND; each row filtered with the filter whose output has the smallest sum of
|signed bytes| (libpng's heuristic; the first row and one-column images restrict the choice
as libpng does); zlib at the requested level with memLevel 9, the Z_FILTERED strategy and
libpng's window reduced to the smallest that holds a small image.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_GRAY, _RGB, _PALETTE, _GRAY_ALPHA, _RGBA = 0, 2, 3, 4, 6
_SAMPLES = {_GRAY: 1, _RGB: 3, _PALETTE: 1, _GRAY_ALPHA: 2, _RGBA: 4}
_DEPTHS = {_GRAY: (1, 2, 4, 8, 16), _RGB: (8, 16), _PALETTE: (1, 2, 4, 8), _GRAY_ALPHA: (8, 16),
           _RGBA: (8, 16)}
_ADAM7 = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
          (1, 0, 2, 1)]
"""Adam7 passes: (first row, first column, row step, column step)."""
_GRAY_WEIGHTS = (9797, 19234, 3737)


class _BadPng(Exception):
    """Raised inside the decoder; the kernel reports it as TensorFlow does."""


# ---------------------------------------------------------------------------------------------
# Decoding


@kernel("DecodePng")
def decode_png(contents, *, channels: int = 0, dtype=None, **_) -> tuple[np.ndarray]:
    data = _scalar_bytes(contents)
    wide = dtype is not None and dtype.numpy == np.uint16
    check(channels in (0, 1, 3, 4), f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    if data and not data.startswith(_SIGNATURE):
        return (_other_format(contents, channels, wide),)
    try:
        header, samples, palette, transparency = _read(data)
    except (_BadPng, zlib.error, struct.error, ValueError, IndexError) as error:
        raise KernelError(f"Invalid PNG data, size {len(data)}: {error}") from None
    image = _to_channels(header, samples, palette, transparency, channels)
    return (_to_depth(image, 16 if header["depth"] == 16 else 8, wide),)


def _other_format(contents, channels: int, wide: bool) -> np.ndarray:
    """TensorFlow's DecodePng decodes JPEG and one-frame GIF data too (one kernel serves every
    decode op): the codecs module does those, and rejects BMP and unknown data as TensorFlow
    does."""
    from savedmodel.runtime.kernels import codecs  # imports this module: imported when needed

    return codecs.decode_as("DecodePng", contents, channels, np.dtype(np.uint16 if wide else np.uint8))


def _scalar_bytes(contents) -> bytes:
    value = np.asarray(contents, dtype=object)
    check(value.ndim == 0, f"contents must be scalar, got shape {list(value.shape)}")
    item = value.item()
    return item if isinstance(item, bytes) else str(item).encode()


def _read(data: bytes) -> tuple[dict, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The header, the samples as [height, width, samples] (uint8 or uint16, before any
    conversion), the palette and the tRNS chunk."""
    if not data.startswith(_SIGNATURE):
        raise _BadPng("not a PNG file")
    chunks = list(_chunks(data))
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise _BadPng("the first chunk is not a valid IHDR")
    width, height, depth, color, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if width == 0 or height == 0 or width > 2 ** 31 - 1 or height > 2 ** 31 - 1:
        raise _BadPng(f"invalid dimensions {width}x{height}")
    if color not in _DEPTHS or depth not in _DEPTHS[color] or compression or filtering or interlace > 1:
        raise _BadPng(f"unsupported IHDR (bit depth {depth}, color type {color})")
    header = {"width": width, "height": height, "depth": depth, "color": color}
    palette = transparency = None
    compressed = []
    for kind, body in chunks[1:]:
        if kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            transparency = body
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    if color == _PALETTE and palette is None:
        raise _BadPng("a palette image without PLTE")
    if not compressed:
        raise _BadPng("no image data")
    raw = zlib.decompress(b"".join(compressed))
    samples = _deinterlace(raw, header) if interlace else _unfilter_image(raw, width, height, header)
    return header, samples, palette, transparency


def _chunks(data: bytes):
    """(type, body) of each chunk, checking lengths and the CRCs of critical chunks."""
    position = len(_SIGNATURE)
    while position < len(data):
        if position + 8 > len(data):
            raise _BadPng("truncated chunk header")
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        end = position + 8 + length
        if end + 4 > len(data):
            raise _BadPng(f"truncated {kind!r} chunk")
        body = data[position + 8:end]
        (crc,) = struct.unpack(">I", data[end:end + 4])
        if kind[:1].isupper() and zlib.crc32(kind + body) != crc:
            raise _BadPng(f"CRC error in {kind.decode('latin-1')} chunk")
        yield kind, body
        if kind == b"IEND":
            return
        position = end + 4
    raise _BadPng("no IEND chunk")


def _bits_per_pixel(header: dict) -> int:
    return header["depth"] * _SAMPLES[header["color"]]


def _unfilter_image(raw: bytes, width: int, height: int, header: dict, offset: int = 0) -> np.ndarray:
    """Undo the filters of one (sub)image starting at raw[offset]; samples [h, w, n]."""
    row_bytes = (width * _bits_per_pixel(header) + 7) // 8
    size = height * (row_bytes + 1)
    block = np.frombuffer(raw, np.uint8, size, offset).reshape(height, row_bytes + 1)
    stride = max(1, _bits_per_pixel(header) // 8)
    rows = np.empty((height, row_bytes), np.uint8)
    previous = np.zeros(row_bytes, np.uint8)
    for y in range(height):
        rows[y] = previous = _unfilter_row(int(block[y, 0]), block[y, 1:], previous, stride)
    return _unpack(rows, width, header)


def _unfilter_row(kind: int, row: np.ndarray, above: np.ndarray, stride: int) -> np.ndarray:
    if kind == 0:
        return row.copy()
    if kind == 2:
        return row + above
    if kind == 1:
        lanes = np.zeros(-(-row.size // stride) * stride, np.int64)
        lanes[:row.size] = row
        return (np.cumsum(lanes.reshape(-1, stride), axis=0).reshape(-1)[:row.size] & 0xFF).astype(np.uint8)
    if kind not in (3, 4):
        raise _BadPng(f"unknown filter type {kind}")
    out = np.zeros(row.size + stride, np.int64)
    up = np.concatenate([np.zeros(stride, np.int64), above.astype(np.int64)])
    data = row.astype(np.int64)
    for start in range(0, row.size, stride):
        at = slice(stride + start, stride + min(start + stride, row.size))
        left, upper = out[start:start + at.stop - at.start], up[at]
        if kind == 3:
            predicted = (left + upper) >> 1
        else:
            predicted = _paeth(left, upper, up[start:start + at.stop - at.start])
        out[at] = (data[at.start - stride:at.stop - stride] + predicted) & 0xFF
    return out[stride:].astype(np.uint8)


def _paeth(left, above, corner):
    estimate = left + above - corner
    pa, pb, pc = np.abs(estimate - left), np.abs(estimate - above), np.abs(estimate - corner)
    return np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, corner))


def _unpack(rows: np.ndarray, width: int, header: dict) -> np.ndarray:
    depth, samples = header["depth"], _SAMPLES[header["color"]]
    if depth == 16:
        values = rows.reshape(rows.shape[0], -1, 2)
        return (values[..., 0].astype(np.uint16) << 8 | values[..., 1]).reshape(rows.shape[0], width, samples)
    if depth == 8:
        return rows.reshape(rows.shape[0], width, samples)
    bits = np.unpackbits(rows, axis=1).reshape(rows.shape[0], -1, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    values = (bits * weights).sum(axis=2).astype(np.uint8)
    return values[:, :width, None]


def _deinterlace(raw: bytes, header: dict) -> np.ndarray:
    width, height = header["width"], header["height"]
    samples = _SAMPLES[header["color"]]
    out = np.zeros((height, width, samples), np.uint16 if header["depth"] == 16 else np.uint8)
    offset = 0
    for top, left, row_step, col_step in _ADAM7:
        pass_height = max(0, -(-(height - top) // row_step))
        pass_width = max(0, -(-(width - left) // col_step))
        if pass_height == 0 or pass_width == 0:
            continue
        out[top::row_step, left::col_step] = _unfilter_image(raw, pass_width, pass_height, header, offset)
        offset += pass_height * ((pass_width * _bits_per_pixel(header) + 7) // 8 + 1)
    return out


def _to_channels(header: dict, samples: np.ndarray, palette, transparency, channels: int) -> np.ndarray:
    """Apply the conversions TensorFlow sets up (CommonInitDecode): palette and low bit depths
    expand to 8 bits, then alpha and colour as `channels` asks (0: as stored)."""
    color, depth = header["color"], header["depth"]
    full = 65535 if depth == 16 else 255
    alpha = None
    if color == _PALETTE:
        index = samples[..., 0]
        check(bool(np.all(index < len(palette))), "Invalid PNG data: palette index out of range")
        rgb = palette[index]
        if transparency is not None:
            table = np.full(256, 255, np.uint8)
            table[:len(transparency)] = np.frombuffer(transparency, np.uint8)[:256]
            alpha = table[index]
        color_samples = rgb
    else:
        color_samples = samples[..., :3] if color in (_RGB, _RGBA) else samples[..., :1]
        if depth < 8:
            color_samples = (color_samples.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(np.uint8)
        if color in (_GRAY_ALPHA, _RGBA):
            alpha = samples[..., -1]
        elif transparency is not None:
            alpha = _transparency_alpha(samples, transparency, color, full)
    stored = 4 if color == _PALETTE and transparency is not None else (
        3 if color == _PALETTE else _SAMPLES[color])
    wanted = channels or stored
    if wanted % 2 == 0 and alpha is None:
        filler = (1 << depth) - 1
        alpha = np.full(samples.shape[:2], filler & (0xFFFF if depth == 16 else 0xFF), color_samples.dtype)
    gray_source = color_samples.shape[-1] == 1
    if wanted < 3:
        colour = color_samples if gray_source else _rgb_to_gray(color_samples)
    else:
        colour = np.repeat(color_samples, 3, axis=-1) if gray_source else color_samples
    parts = [colour] + ([alpha[..., None].astype(colour.dtype)] if wanted % 2 == 0 else [])
    return np.concatenate(parts, axis=-1)


def _transparency_alpha(samples: np.ndarray, transparency: bytes, color: int, full: int) -> np.ndarray:
    count = 1 if color == _GRAY else 3
    if len(transparency) < 2 * count:
        raise _BadPng("tRNS chunk too short")
    key = np.array(struct.unpack(f">{count}H", transparency[:2 * count]))
    match = np.all(samples[..., :count] == key, axis=-1)
    dtype = np.uint16 if full == 65535 else np.uint8
    return np.where(match, 0, full).astype(dtype)


def _rgb_to_gray(rgb: np.ndarray) -> np.ndarray:
    wide = rgb.astype(np.int64)
    red, green, blue = _GRAY_WEIGHTS
    mixed = red * wide[..., 0] + green * wide[..., 1] + blue * wide[..., 2]
    if rgb.dtype == np.uint8:
        same = (wide[..., 0] == wide[..., 1]) & (wide[..., 0] == wide[..., 2])
        mixed = np.where(same, wide[..., 0], mixed >> 15)
    else:
        mixed = (mixed + 16384) >> 15
    return mixed.astype(rgb.dtype)[..., None]


def _to_depth(image: np.ndarray, depth: int, wide: bool) -> np.ndarray:
    if wide:
        return image.astype(np.uint16) if depth == 16 else image.astype(np.uint16) * np.uint16(257)
    return (image >> 8).astype(np.uint8) if depth == 16 else image.astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Encoding


@kernel("EncodePng")
def encode_png(image, *, compression: int = -1, **_) -> tuple[np.ndarray]:
    image = np.asarray(image)
    check(image.ndim == 3, f"image must be 3-dimensional, got shape {list(image.shape)}")
    check(-1 <= compression <= 9, f"compression should be in [-1,9], got {compression}")
    height, width, channels = image.shape
    check(channels in (1, 2, 3, 4), f"image must have 1, 2, 3, or 4 channels, got {channels}")
    check(height * width > 0 and height < 2 ** 31 and width < 2 ** 31,
          f"PNG encoding failed: image of shape {list(image.shape)}")
    depth = 16 if image.dtype == np.uint16 else 8
    raw = image.astype(">u2").view(np.uint8) if depth == 16 else image.astype(np.uint8)
    rows = np.ascontiguousarray(raw).reshape(height, -1)
    color = {1: _GRAY, 2: _GRAY_ALPHA, 3: _RGB, 4: _RGBA}[channels]
    filtered = _filter_rows(rows, channels * depth // 8)
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    stream = _deflate(filtered.tobytes(), compression)
    chunks = [_chunk(b"IHDR", header)]
    chunks += [_chunk(b"IDAT", stream[i:i + 8192]) for i in range(0, len(stream), 8192)]
    chunks.append(_chunk(b"IEND", b""))
    out = np.empty((), dtype=object)
    out[()] = _SIGNATURE + b"".join(chunks)
    return (out,)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _filter_rows(rows: np.ndarray, stride: int) -> np.ndarray:
    """Each row prefixed by its filter type and filtered with the filter libpng picks: the
    smallest sum of |signed byte|, earlier filters (None, Sub, Up, Average, Paeth) on ties."""
    height, size = rows.shape
    current = rows.astype(np.int64)
    above = np.vstack([np.zeros((1, size), np.int64), current[:-1]])
    left = np.hstack([np.zeros((height, stride), np.int64), current[:, :-stride]])
    corner = np.hstack([np.zeros((height, stride), np.int64), above[:, :-stride]])
    candidates = np.stack([current, current - left, current - above,
                           current - ((left + above) >> 1),
                           current - _paeth(left, above, corner)]) & 0xFF
    allowed = np.ones(5, bool)
    if height == 1:
        allowed[[2, 3, 4]] = False
    if size == stride:
        allowed[[1, 3, 4]] = False
    cost = np.where(candidates < 128, candidates, 256 - candidates).sum(axis=2)
    cost = np.where(allowed[:, None], cost, np.iinfo(np.int64).max)
    choice = np.argmin(cost, axis=0)
    chosen = candidates[choice, np.arange(height)]
    return np.hstack([choice[:, None], chosen]).astype(np.uint8)


def _deflate(data: bytes, level: int) -> bytes:
    """zlib as libpng runs it for image data: memLevel 9, Z_FILTERED, and the window shrunk
    while the data fits in half of it (never below 2^9)."""
    window = 15
    if len(data) <= 16384:
        half = 1 << (window - 1)
        while len(data) + 262 <= half:
            half >>= 1
            window -= 1
    window = max(window, 9)
    compressor = zlib.compressobj(level, zlib.DEFLATED, window, 9, zlib.Z_FILTERED)
    return _optimize_cmf(compressor.compress(data) + compressor.flush(), len(data))


def _optimize_cmf(stream: bytes, size: int) -> bytes:
    """libpng's optimize_cmf: the zlib header claims the smallest window that holds the image
    data (down to 2^8, which zlib itself cannot write), with the check bits redone."""
    cmf = stream[0]
    if size > 16384 or cmf & 0x0F != 8 or cmf & 0xF0 > 0x70:
        return stream
    info = cmf >> 4
    half = 1 << (info + 7)
    if size > half:
        return stream
    while True:
        half >>= 1
        info -= 1
        if not (info > 0 and size <= half):
            break
    cmf = (cmf & 0x0F) | (info << 4)
    flags = stream[1] & 0xE0
    flags += 0x1F - ((cmf << 8) + flags) % 0x1F
    return bytes([cmf, flags]) + stream[2:]
