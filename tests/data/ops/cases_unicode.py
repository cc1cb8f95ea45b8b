"""Kernel cases for the Unicode ops: decoding into code points (with byte offsets), encoding
code points, and transcoding, under every error policy; ill-formed input of each kind ICU
delimits (truncated, overlong, surrogate, out-of-range and stray bytes), control characters,
empty strings and tensors, multi-dimensional inputs."""
import numpy as np


def _s(*items, shape=None):
    array = np.empty(len(items), dtype=object)
    array[:] = [i.encode() if isinstance(i, str) else i for i in items]
    return array.reshape(shape if shape is not None else (len(items),))


_TEXT = _s("héllo", "€𝄞x", "", "a\tb\x01c", "日本", "\x00\x1f\x7f", shape=(2, 3))
_BAD_UTF8 = _s(b"a\xe2\x82", b"\xe2\x82z", b"\xc0\xaf", b"\xed\xa0\x80!", b"\xf4\x90\x80\x80",
               b"\xff\xfe", b"\x80\x80x", b"\xf0\x9f\x98", b"\xf5", "ok")
_UTF16 = _s("h€𝄞".encode("utf-16-be"), b"\x00a\xd8\x00\x00b", b"\xdc\x00", b"\x00a\x00", b"",
            b"\xd8\x3d")
_UTF32 = _s("h€𝄞".encode("utf-32-be"), b"\x00\x11\x00\x00", b"\x00\x00\xd8\x00",
            b"\x00\x00\x00a\x00")


def _decode(name, input, encoding="UTF-8", offsets=False, error=False, **attrs):
    return case("UnicodeDecodeWithOffsets" if offsets else "UnicodeDecode", name=name, input=input,
                input_encoding=encoding, error=error, dynamic=error, **attrs)


def _both(name, input, encoding="UTF-8", error=False, **attrs):
    return [_decode(name, input, encoding, False, error, **attrs),
            _decode(name, input, encoding, True, error, **attrs)]


DECODE = [
    *_both("text", _TEXT),
    *_both("text_control_replaced", _TEXT, replace_control_characters=True),
    *_both("text_control_ignored", _TEXT, replace_control_characters=True, errors="ignore"),
    *_both("text_control_strict", _TEXT, replace_control_characters=True, errors="strict",
           replacement_char=ord("?")),
    *_both("bad_replace", _BAD_UTF8),
    *_both("bad_replace_char", _BAD_UTF8, replacement_char=0x2022),
    *_both("bad_replace_char_zero", _BAD_UTF8, replacement_char=0),
    *_both("bad_ignore", _BAD_UTF8, errors="ignore"),
    *_both("error_bad_strict", _BAD_UTF8[:2], errors="strict", error=True),
    *_both("utf16", _UTF16, "UTF-16-BE"),
    *_both("utf16_ignore", _UTF16, "UTF-16-BE", errors="ignore"),
    *_both("utf16le", _s("h€𝄞".encode("utf-16-le"), b"a\x00b"), "UTF-16LE"),
    *_both("utf32", _UTF32, "UTF-32-BE"),
    *_both("utf32_lowercase_name", _UTF32[:1], "utf-32-be"),
    *_both("utf8_alias", _s("é"), "utf8"),
    *_both("scalar", _s("añb", shape=())),
    *_both("empty", _s(shape=(0, 3))),
    *_both("empty_strings", _s("", "")),
    _decode("int32_splits", _TEXT, Tsplits=np.int32),  # WithOffsets aborts TensorFlow with int32
    *_both("error_replacement_char", _TEXT, replacement_char=0x110000, error=True),
]


def _encode(name, values, splits, encoding="UTF-8", error=False, **attrs):
    return case("UnicodeEncode", name=name, input_values=np.array(values, np.int32),
                input_splits=np.array(splits, attrs.pop("splits_dtype", np.int64)),
                output_encoding=encoding, error=error, dynamic=error, **attrs)


_CODE_POINTS = [104, 233, 0x20AC, 0x1D11E, 0, 31, 0x7F, 0x10FFFF, 0xFFFD, 0x65E5]
_INVALID = [97, -1, 98, 0x110000, 99, 2**31 - 1]
_SURROGATES = [0xD83D, 0xDE00, 0xD800, 97, 0xDFFF, 0xDE00, 0xD83D]

ENCODE = [
    *[_encode(f"code_points_{e}", _CODE_POINTS, [0, 3, 3, 10], e)
      for e in ("UTF-8", "UTF-16-BE", "UTF-32-BE")],
    _encode("int32_splits", _CODE_POINTS, [0, 4, 10], splits_dtype=np.int32),
    _encode("invalid_replace", _INVALID, [0, 2, 6]),
    _encode("invalid_replace_char", _INVALID, [0, 2, 6], replacement_char=0x2022),
    _encode("invalid_ignore", _INVALID, [0, 2, 6], errors="ignore"),
    _encode("error_invalid_strict", _INVALID, [0, 2, 6], errors="strict", error=True),
    *[_encode(f"surrogates_{e}", _SURROGATES, [0, 2, 4, 7], e)
      for e in ("UTF-8", "UTF-16-BE", "UTF-32-BE")],
    _encode("surrogates_ignore", _SURROGATES, [0, 2, 4, 7], errors="ignore"),
    _encode("error_surrogate_strict", _SURROGATES, [0, 7], errors="strict", error=True),
    _encode("empty", [], [0]),
    _encode("empty_rows", [], [0, 0, 0]),
    _encode("error_replacement_char", _INVALID, [0, 6], replacement_char=-1, error=True),
    _encode("error_first_split", [97, 98], [1, 2], error=True),
    _encode("error_decreasing_splits", [97, 98], [0, 2, 1, 2], error=True),
    _encode("error_last_split", [97, 98], [0, 1], error=True),
    _encode("error_split_past_end", [97, 98], [0, 3], error=True),
    _encode("error_no_splits", [97, 98], np.zeros(0, np.int64), error=True),
]


def _transcode(name, input, source="UTF-8", target="UTF-8", error=False, **attrs):
    return case("UnicodeTranscode", name=name, input=input, input_encoding=source,
                output_encoding=target, error=error, dynamic=error, **attrs)


TRANSCODE = [
    *[_transcode(f"text_to_{e}", _TEXT, target=e) for e in ("UTF-8", "UTF-16-BE", "UTF-32-BE")],
    _transcode("bad_replace", _BAD_UTF8),
    _transcode("bad_replace_char", _BAD_UTF8, target="UTF-16-BE", replacement_char=0x2022),
    _transcode("bad_ignore", _BAD_UTF8, errors="ignore"),
    _transcode("error_bad_strict", _BAD_UTF8, errors="strict", error=True),
    _transcode("control_replaced", _TEXT, replace_control_characters=True),
    _transcode("control_ignored", _TEXT, replace_control_characters=True, errors="ignore"),
    _transcode("error_control_strict", _TEXT, replace_control_characters=True, errors="strict",
               error=True),
    _transcode("surrogate_replacement_utf8", _BAD_UTF8, replacement_char=0xD800),
    _transcode("surrogate_replacement_utf16", _BAD_UTF8, target="UTF-16-BE",
               replacement_char=0xDC00),
    _transcode("utf16_to_utf8", _UTF16, "UTF-16-BE"),
    _transcode("utf32_to_utf16", _UTF32, "UTF-32-BE", "UTF-16-BE"),
    _transcode("scalar", _s("añb", shape=()), target="UTF-32-BE"),
    _transcode("empty", _s(shape=(2, 0))),
]

CASES = DECODE + ENCODE + TRANSCODE

_SAMPLE = np.random.default_rng(14).integers(0, 0x110000, 1000).astype(np.int32)

SCRIPT = [
    case("UnicodeScript", name="sample", input=_SAMPLE),
    case("UnicodeScript", name="bmp_sample", input=np.arange(0, 0x10000, 61, dtype=np.int32)),
    case("UnicodeScript", name="edges", input=np.array(
        [[-1, 0, 0x41, 0x3A9], [0x300, 0x10FFFF, 0x110000, -2**31],
         [2**31 - 1, 0x4E00, 0x1F600, 0xE0001]], np.int32)),
    case("UnicodeScript", name="scalar", input=np.array(0x5D0, np.int32)),
    case("UnicodeScript", name="empty", input=np.zeros((0, 4), np.int32)),
]

CASES += SCRIPT
