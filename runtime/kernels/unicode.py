"""Unicode ops: decoding strings into code points (UnicodeDecode, UnicodeDecodeWithOffsets),
encoding code points into strings (UnicodeEncode), re-encoding strings (UnicodeTranscode), and
the script of code points (UnicodeScript).

TensorFlow reads text with ICU converters and replaces each ill-formed sequence (a maximal
subpart, as the Unicode standard recommends: `\\xe2\\x82` missing its last byte is one error,
a stray continuation byte is one error each) by `replacement_char`; Python's codecs delimit
errors the same way, so a decode here calls the codec with an error handler that marks each
ill-formed sequence by a lone surrogate carrying its length in bytes (valid input never decodes
to a lone surrogate). The `errors` attr then decides: `strict` fails, `replace` substitutes,
`ignore` drops. With `replace_control_characters`, code points up to U+001F count as errors
too (replaced or dropped, never failing a decode; UnicodeTranscode's strict mode does fail on
them, as TensorFlow's does).

Encodings: UTF-8, UTF-16-BE and UTF-32-BE out (the op defs allow no others); in, those and the
little-endian UTF-16/UTF-32 under their ICU names; any other encoding ICU knows is rejected with
an error naming it.
"""
from __future__ import annotations

import codecs
import functools
import re

import numpy as np

from savedmodel.runtime import unicode_scripts
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.string_util import byte_items, objects
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_MARK = "savedmodel-mark-ill-formed"
_MARK_BASE = 0xDC00
_MAX_CODE_POINT = 0x10FFFF
_CONTROL_MAX = 0x1F


def _mark_ill_formed(error: UnicodeDecodeError) -> tuple[str, int]:
    return chr(_MARK_BASE + error.end - error.start), error.end


codecs.register_error(_MARK, _mark_ill_formed)

_CODECS = {"UTF8": "utf-8", "UTF16BE": "utf-16-be", "UTF16LE": "utf-16-le",
           "UTF32BE": "utf-32-be", "UTF32LE": "utf-32-le"}
_OUTPUT_ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def _input_codec(encoding: str, op: str) -> str:
    """The Python codec for an ICU converter name (ICU ignores case, `-` and `_` in names)."""
    codec = _CODECS.get(re.sub(r"[-_ ]", "", encoding.upper()))
    if codec is None:
        raise KernelError(f"{op}: input encoding {encoding!r} is not supported by this engine "
                          f"(it decodes UTF-8, UTF-16-BE/LE and UTF-32-BE/LE)")
    return codec


def _output_codec(encoding: str, op: str) -> str:
    check(encoding in _OUTPUT_ENCODINGS,
          f"{op}: Invalid encoding \"{encoding}\": Should be one of: UTF-8, UTF-16-BE, UTF-32-BE")
    return _OUTPUT_ENCODINGS[encoding]


def _error_policy(errors: str, replacement_char: int, op: str) -> None:
    check(errors in ("strict", "replace", "ignore"),
          f"{op}: errors policy must be one of 'strict', 'replace', or 'ignore'")
    check(0 <= replacement_char <= _MAX_CODE_POINT,
          f"{op}: replacement_char out of unicode codepoint range")


def _unit_bytes(codec: str, code_points: np.ndarray) -> np.ndarray:
    """How many input bytes encoded each (valid) code point."""
    if codec == "utf-8":
        return 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)
    if codec.startswith("utf-16"):
        return 2 + 2 * (code_points >= 0x10000)
    return np.full(code_points.shape, 4)


def _code_points(text: str) -> np.ndarray:
    units = text.encode("utf-32-le", "surrogatepass")
    return np.frombuffer(units, dtype=np.uint32).astype(np.int64)


def _decode(strings: list[bytes], codec: str) -> tuple[np.ndarray, ...]:
    """Every string's characters, all strings in a row: (code points, characters per string,
    bytes per character, whether each is an ill-formed sequence)."""
    texts = [s.decode(codec, _MARK) for s in strings]
    counts = np.array([len(t) for t in texts], dtype=np.int64)
    code_points = _code_points("".join(texts))
    ill_formed = (code_points >= 0xD800) & (code_points <= 0xDFFF)
    sizes = np.where(ill_formed, code_points - _MARK_BASE, _unit_bytes(codec, code_points))
    return code_points, counts, sizes, ill_formed


def _apply_policy(code_points: np.ndarray, counts: np.ndarray, bad: np.ndarray, errors: str,
                  replacement_char: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(code points, characters per string, which characters are kept) after replacing or
    dropping the `bad` ones."""
    if errors == "ignore":
        kept = ~bad
        rows = np.repeat(np.arange(counts.size), counts)
        return code_points[kept], np.bincount(rows[kept], minlength=counts.size), kept
    return np.where(bad, replacement_char, code_points), counts, np.ones(bad.shape, bool)


def _decode_op(input: np.ndarray, input_encoding: str, errors: str, replacement_char: int,
               replace_control_characters: bool, op: str, splits_dtype) -> tuple:
    codec = _input_codec(input_encoding, op)
    _error_policy(errors, replacement_char, op)
    code_points, counts, sizes, ill_formed = _decode(byte_items(input), codec)
    check(errors != "strict" or not ill_formed.any(), f"{op}: Invalid formatting on input string")
    bad = ill_formed | (replace_control_characters & (code_points <= _CONTROL_MAX))
    values, kept_counts, kept = _apply_policy(code_points, counts, bad, errors, replacement_char)
    splits = np.concatenate([[0], np.cumsum(kept_counts)]).astype(splits_dtype)
    return splits, values.astype(np.int32), _byte_starts(sizes, counts)[kept]


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    return np.cumsum(values) - values


def _byte_starts(sizes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each character's byte offset within its own string."""
    rows = np.repeat(np.arange(counts.size), counts)
    row_bytes = np.bincount(rows, weights=sizes, minlength=counts.size).astype(np.int64)
    return _exclusive_cumsum(sizes) - np.repeat(_exclusive_cumsum(row_bytes), counts)


def _splits_dtype(Tsplits) -> np.dtype:
    return np.dtype(Tsplits.numpy if Tsplits is not None else np.int64)


@kernel("UnicodeDecode")
def unicode_decode(input: np.ndarray, *, input_encoding: str, errors: str = "replace",
                   replacement_char: int = 0xFFFD, replace_control_characters: bool = False,
                   Tsplits=None, **_) -> tuple[np.ndarray, np.ndarray]:
    """Every string of `input` (any shape, read flat) as code points: (row splits, values)."""
    splits, values, _ = _decode_op(input, input_encoding, errors, replacement_char,
                                   replace_control_characters, "UnicodeDecode",
                                   _splits_dtype(Tsplits))
    return splits, values


@kernel("UnicodeDecodeWithOffsets")
def unicode_decode_with_offsets(input: np.ndarray, *, input_encoding: str, errors: str = "replace",
                                replacement_char: int = 0xFFFD,
                                replace_control_characters: bool = False, Tsplits=None,
                                **_) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """UnicodeDecode plus each character's starting byte in its string (int64 whatever
    Tsplits is)."""
    splits, values, starts = _decode_op(input, input_encoding, errors, replacement_char,
                                        replace_control_characters, "UnicodeDecodeWithOffsets",
                                        _splits_dtype(Tsplits))
    return splits, values, starts.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Encoding: UnicodeEncode, UnicodeTranscode

_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode(text: str, codec: str) -> bytes:
    """ICU's encoding: a lone surrogate (only a surrogate replacement_char makes one) is U+FFFD
    in UTF-8 and itself in UTF-16 and UTF-32."""
    if codec == "utf-8" and _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return text.encode(codec, "surrogatepass")


def _text(code_points: np.ndarray) -> str:
    return code_points.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _encode_rows(code_points: np.ndarray, counts: np.ndarray, codec: str) -> list[bytes]:
    text = _text(code_points)
    ends = np.cumsum(counts).tolist()
    return [_encode(text[start:end], codec) for start, end in zip([0] + ends[:-1], ends)]


@kernel("UnicodeEncode")
def unicode_encode(input_values: np.ndarray, input_splits: np.ndarray, *, output_encoding: str,
                   errors: str = "replace", replacement_char: int = 0xFFFD,
                   **_) -> tuple[np.ndarray]:
    """Rows of code points (values with row splits) as strings; code points outside
    0..U+10FFFF and surrogates fail (`strict`), become replacement_char (`replace`) or vanish
    (`ignore`)."""
    codec = _output_codec(output_encoding, "UnicodeEncode")
    _error_policy(errors, replacement_char, "UnicodeEncode")
    values = np.asarray(input_values).astype(np.int64).ravel()
    splits = np.asarray(input_splits).astype(np.int64).ravel()
    _check_encode_splits(splits, values.size)
    bad = (values < 0) | (values > _MAX_CODE_POINT) | ((values >= 0xD800) & (values <= 0xDFFF))
    check(errors != "strict" or not bad.any(),
          "UnicodeEncode: Code point value out of valid Unicode range.")
    code_points, counts, _ = _apply_policy(values, np.diff(splits), bad, errors, replacement_char)
    return (objects(_encode_rows(code_points, counts, codec), (counts.size,)),)


def _check_encode_splits(splits: np.ndarray, size: int) -> None:
    check(splits.size > 0, "UnicodeEncode: input_splits must not be empty")
    check(splits[0] == 0, f"UnicodeEncode: First value of input_splits must be 0, got {splits[0]}")
    check(bool((np.diff(splits) >= 0).all()), "UnicodeEncode: input_splits must be non-decreasing")
    check(splits[-1] == size, f"UnicodeEncode: Last value of input_splits must be the number of "
                              f"values {size}, got {splits[-1]}")


@kernel("UnicodeTranscode")
def unicode_transcode(input: np.ndarray, *, input_encoding: str, output_encoding: str,
                      errors: str = "replace", replacement_char: int = 0xFFFD,
                      replace_control_characters: bool = False, **_) -> tuple[np.ndarray]:
    """Each string decoded from input_encoding and encoded in output_encoding."""
    op = "UnicodeTranscode"
    in_codec, out_codec = _input_codec(input_encoding, op), _output_codec(output_encoding, op)
    _error_policy(errors, replacement_char, op)
    code_points, counts, _, ill_formed = _decode(byte_items(input), in_codec)
    bad = ill_formed | (replace_control_characters & (code_points <= _CONTROL_MAX))
    check(errors != "strict" or not bad.any(), f"{op}: Invalid formatting on input string")
    values, kept_counts, _ = _apply_policy(code_points, counts, bad, errors, replacement_char)
    return (objects(_encode_rows(values, kept_counts, out_codec), np.shape(input)),)


# ---------------------------------------------------------------------------------------------
# Scripts: UnicodeScript


@functools.lru_cache(maxsize=1)
def _script_runs() -> tuple[np.ndarray, np.ndarray]:
    """(first code point of each run, its script) from the generated table."""
    pairs = [pair.split(":") for pair in unicode_scripts.RUNS.split()]
    return (np.array([int(first, 16) for first, _ in pairs], dtype=np.int64),
            np.array([int(script) for _, script in pairs], dtype=np.int32))


@kernel("UnicodeScript")
def unicode_script(input: np.ndarray, **_) -> tuple[np.ndarray]:
    """Each code point's script as ICU numbers it (runtime/unicode_scripts.py); -1 for values
    that are not code points."""
    code_points = np.asarray(input).astype(np.int64)
    firsts, scripts = _script_runs()
    valid = (code_points >= 0) & (code_points <= _MAX_CODE_POINT)
    found = scripts[np.searchsorted(firsts, np.where(valid, code_points, 0), side="right") - 1]
    return (np.where(valid, found, -1).astype(np.int32),)
