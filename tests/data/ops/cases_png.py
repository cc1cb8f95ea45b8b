"""Kernel cases for the PNG codec ops.

EncodePng's expected outputs are the bytes TensorFlow (libpng and its zlib) writes. DecodePng
reads PNG files built here, byte by byte, so that every colour type, bit depth, filter type,
Adam7 interlacing, palettes and tRNS chunks occur (TensorFlow's encoder writes only
non-interlaced gray/RGB(A) at 8 or 16 bits), plus files TensorFlow rejects.
"""
import struct
import zlib

import numpy as np

_rng = np.random.default_rng(20261127)
_ADAM7 = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
          (1, 0, 2, 1)]


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _pack_rows(samples, depth):
    """[h, w, n] integer samples -> raw row bytes at the bit depth."""
    h = samples.shape[0]
    if depth == 16:
        return samples.astype(">u2").view(np.uint8).reshape(h, -1)
    if depth == 8:
        return samples.astype(np.uint8).reshape(h, -1)
    flat = samples.reshape(h, -1).astype(np.uint8)
    bits = ((flat[:, :, None] >> np.arange(depth - 1, -1, -1)) & 1).reshape(h, -1).astype(np.uint8)
    return np.packbits(bits, axis=1)


def _filter(rows, stride, kinds):
    """Filter each row with kinds[y % len(kinds)] (0 None .. 4 Paeth)."""
    out, above = [], np.zeros(rows.shape[1], np.int64)
    for y, row in enumerate(rows.astype(np.int64)):
        kind = kinds[y % len(kinds)]
        left = np.concatenate([np.zeros(stride, np.int64), row[:-stride]])
        corner = np.concatenate([np.zeros(stride, np.int64), above[:-stride]])
        if kind == 0:
            value = row
        elif kind == 1:
            value = row - left
        elif kind == 2:
            value = row - above
        elif kind == 3:
            value = row - ((left + above) >> 1)
        else:
            p = left + above - corner
            pa, pb, pc = abs(p - left), abs(p - above), abs(p - corner)
            value = row - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, corner))
        out.append(bytes([kind]) + (value & 0xFF).astype(np.uint8).tobytes())
        above = row
    return b"".join(out)


def _png(samples, depth, color, kinds=(0, 1, 2, 3, 4), interlace=False, extra=(), corrupt=False):
    h, w, n = samples.shape
    stride = max(1, n * depth // 8)
    if interlace:
        data = b"".join(_filter(_pack_rows(samples[t::rs, l::cs], depth), stride, kinds)
                        for t, l, rs, cs in _ADAM7 if samples[t::rs, l::cs].size)
    else:
        data = _filter(_pack_rows(samples, depth), stride, kinds)
    compressed = zlib.compress(data)
    idat = [compressed[:len(compressed) // 2], compressed[len(compressed) // 2:]]
    header = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, int(interlace))
    body = _chunk(b"IHDR", header) + b"".join(_chunk(k, v) for k, v in extra)
    body += b"".join(_chunk(b"IDAT", part) for part in idat) + _chunk(b"IEND", b"")
    if corrupt:
        body = body[:40] + bytes([body[40] ^ 0xFF]) + body[41:]
    return np.array(b"\x89PNG\r\n\x1a\n" + body, dtype=object)


def _samples(h, w, n, depth):
    return _rng.integers(0, 1 << depth, (h, w, n))


def _decode(name, contents, channels=0, dtype=np.uint8, **extra):
    return case("DecodePng", name=name, contents=contents, channels=channels, dtype=dtype, **extra)


_PALETTE = _rng.integers(0, 256, (7, 3)).astype(np.uint8)
_PALETTE_INDEX = _rng.integers(0, 7, (5, 6, 1))
_GRAY16 = _samples(4, 5, 1, 16)
_RGB16 = _samples(3, 4, 3, 16)

DECODE = []
for _channels in (0, 1, 3, 4):
    for _dtype in (np.uint8, np.uint16):
        _tag = f"ch{_channels}_{np.dtype(_dtype).name}"
        DECODE += [
            _decode(f"rgb8_{_tag}", _png(_samples(5, 7, 3, 8), 8, 2), _channels, _dtype),
            _decode(f"rgba16_{_tag}", _png(_samples(3, 4, 4, 16), 16, 6), _channels, _dtype),
            _decode(f"gray8_{_tag}", _png(_samples(4, 3, 1, 8), 8, 0), _channels, _dtype),
            _decode(f"gray_alpha8_{_tag}", _png(_samples(4, 3, 2, 8), 8, 4), _channels, _dtype),
            _decode(f"palette_{_tag}", _png(_PALETTE_INDEX, 8, 3, extra=[(b"PLTE", _PALETTE.tobytes())]),
                    _channels, _dtype),
            _decode(f"palette_trns_{_tag}", _png(_PALETTE_INDEX, 8, 3, extra=[
                (b"PLTE", _PALETTE.tobytes()), (b"tRNS", bytes([0, 128, 255]))]), _channels, _dtype),
            _decode(f"gray16_trns_{_tag}", _png(_GRAY16, 16, 0, extra=[
                (b"tRNS", struct.pack(">H", int(_GRAY16[1, 2, 0])))]), _channels, _dtype),
            _decode(f"rgb16_{_tag}", _png(_RGB16, 16, 2), _channels, _dtype),
        ]
for _depth in (1, 2, 4):
    DECODE += [
        _decode(f"gray{_depth}", _png(_samples(5, 11, 1, _depth), _depth, 0)),
        _decode(f"gray{_depth}_rgba", _png(_samples(5, 11, 1, _depth), _depth, 0), 4),
        _decode(f"gray{_depth}_trns_rgba", _png(np.arange(10).reshape(2, 5, 1) % (1 << _depth), _depth, 0,
                                                  extra=[(b"tRNS", struct.pack(">H", 1))]), 4),
        _decode(f"palette{_depth}", _png(_rng.integers(0, min(7, 1 << _depth), (3, 9, 1)), _depth, 3,
                                         extra=[(b"PLTE", _PALETTE.tobytes())])),
        _decode(f"palette{_depth}_rgba", _png(_rng.integers(0, min(7, 1 << _depth), (3, 9, 1)), _depth, 3,
                                              extra=[(b"PLTE", _PALETTE.tobytes())]), 4),
    ]
DECODE += [
    _decode(f"filter_{kind}", _png(_samples(6, 9, 3, 8), 8, 2, kinds=(kind,))) for kind in range(5)
] + [
    _decode("interlaced_rgb", _png(_samples(11, 13, 3, 8), 8, 2, interlace=True)),
    _decode("interlaced_gray2", _png(_samples(9, 10, 1, 2), 2, 0, interlace=True)),
    _decode("interlaced_rgba16", _png(_samples(5, 3, 4, 16), 16, 6, interlace=True), 0, np.uint16),
    _decode("interlaced_1x1", _png(_samples(1, 1, 3, 8), 8, 2, interlace=True)),
    _decode("rgb_trns", _png(np.array([[[1, 2, 3], [4, 5, 6]]]), 8, 2,
                             extra=[(b"tRNS", struct.pack(">3H", 4, 5, 6))]), 4),
    _decode("text_chunk_ignored", _png(_samples(2, 2, 3, 8), 8, 2, extra=[(b"tEXt", b"k\x00v")])),
    _decode("error_not_png", np.array(b"GIF89a not a png", dtype=object), error=True),
    _decode("error_crc", _png(_samples(3, 3, 3, 8), 8, 2, corrupt=True), error=True),
    _decode("error_truncated", np.array(_png(_samples(3, 3, 3, 8), 8, 2).item()[:60], dtype=object),
            error=True),
    _decode("error_empty", np.array(b"", dtype=object), error=True),
]


def _encode(name, image, **attrs):
    return case("EncodePng", name=name, image=image, **attrs)


_GRADIENT = (np.add.outer(np.arange(20), np.arange(30))[:, :, None] * np.array([3, 5, 7]) % 256)
ENCODE = [
    _encode(f"uint8_ch{n}", _rng.integers(0, 256, (6, 7, n)).astype(np.uint8)) for n in (1, 2, 3, 4)
] + [
    _encode(f"uint16_ch{n}", _rng.integers(0, 65536, (5, 4, n)).astype(np.uint16)) for n in (1, 3, 4)
] + [
    _encode(f"level_{level}", _GRADIENT.astype(np.uint8), compression=level) for level in (-1, 0, 1, 6, 9)
] + [
    _encode("smooth_rgba", np.concatenate([_GRADIENT, _GRADIENT[..., :1]], axis=2).astype(np.uint8)),
    _encode("one_row", _rng.integers(0, 256, (1, 9, 3)).astype(np.uint8)),
    _encode("one_column", _rng.integers(0, 256, (9, 1, 3)).astype(np.uint8)),
    _encode("one_pixel", np.array([[[7, 8, 9]]], np.uint8)),
    _encode("flat", np.full((16, 16, 1), 200, np.uint8)),
    _encode("large_noise_many_idat", _rng.integers(0, 256, (70, 60, 3)).astype(np.uint8)),
    _encode("large_smooth_window_15", (_GRADIENT.repeat(4, 0).repeat(3, 1) // 2).astype(np.uint8)),
]

CASES = DECODE + ENCODE
