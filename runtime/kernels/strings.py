"""Element-wise string ops: joining and file names (what saver graphs emit), regular
expressions, lengths and substrings, numbers to strings and back, StringFormat, case changes,
stripping, and hashing into buckets. Ops that split, join across elements or build n-grams
are in text.py; Unicode decoding and encoding in unicode.py.

String tensors are numpy object arrays of `bytes`; string attrs arrive as `str` (decoded from
the NodeDef's bytes with `surrogateescape`, so encoding them back the same way recovers the
original bytes). Work on strings is per element by nature; these kernels hand the loop to numpy
(`np.frompyfunc`, object-array ufuncs) where they can.

Regular expressions: TensorFlow uses RE2 on UTF-8 text; these kernels translate each RE2
pattern for Python's `re` and read the text as RE2 does (runtime/re2.py: RE2's ASCII-only
classes, `$`, octal and `\\x{...}` escapes, flags, bytes that are not valid UTF-8, replacing
over bytes; RE2's rejections rejected, and an error naming what it cannot express).
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable

import numpy as np

from savedmodel.runtime import dtypes, re2
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.farmhash import fingerprint64
from savedmodel.runtime.keyed_hash import hash64, siphash24
from savedmodel.runtime.kernels.string_util import as_bytes, attr_bytes, objects, scalar_bytes
from savedmodel.runtime.kernels.util import check, scalar_int
from savedmodel.runtime.registry import kernel


# ---------------------------------------------------------------------------------------------
# Joining and file names


@kernel("StringJoin")
def string_join(*inputs: np.ndarray, separator: str = "", **_) -> tuple[np.ndarray]:
    """Scalars broadcast against the others; non-scalar inputs must all have one shape (no
    general broadcasting, as in TensorFlow)."""
    shapes = [np.shape(x) for x in inputs if np.ndim(x) > 0]
    for shape in shapes[1:]:
        check(shape == shapes[0], f"StringJoin: Input shapes do not match: {list(shapes[0])} vs. "
                                  f"{list(shape)}")
    shape = shapes[0] if shapes else ()
    sep = attr_bytes(separator)
    joined = np.full(shape, b"", dtype=object)
    for i, x in enumerate(inputs):
        if i and sep:
            joined = joined + sep
        joined = joined + np.asarray(x, dtype=object)
    return (np.asarray(joined, dtype=object).reshape(shape),)


@kernel("ShardedFilename")
def sharded_filename(basename: np.ndarray, shard: np.ndarray, num_shards: np.ndarray,
                     **_) -> tuple[np.ndarray]:
    base = scalar_bytes(basename, "ShardedFilename", "basename")
    name = b"%s-%05d-of-%05d" % (base, scalar_int(shard, "ShardedFilename: shard"),
                                 scalar_int(num_shards, "ShardedFilename: num_shards"))
    return (objects([name], ()),)


@kernel("ShardedFilespec")
def sharded_filespec(basename: np.ndarray, num_shards: np.ndarray, **_) -> tuple[np.ndarray]:
    base = scalar_bytes(basename, "ShardedFilespec", "basename")
    spec = b"%s-?????-of-%05d" % (base, scalar_int(num_shards, "ShardedFilespec: num_shards"))
    return (objects([spec], ()),)


# ---------------------------------------------------------------------------------------------
# Regular expressions


@functools.lru_cache(maxsize=256)
def _compile(pattern: bytes, op: str) -> re.Pattern:
    """A pattern must be UTF-8 text, as RE2 requires."""
    try:
        return re.compile(re2.translate(pattern.decode("utf-8")))
    except UnicodeDecodeError:
        raise KernelError(f"{op}: Invalid pattern: {pattern.decode('utf-8', 'replace')}, "
                          f"error: invalid UTF-8") from None
    except (re.error, re2.Re2Error) as err:
        raise KernelError(f"{op}: Invalid pattern: {pattern.decode('utf-8', 'replace')}, "
                          f"error: {err}") from None


def _full_match(strings: np.ndarray, compiled: re.Pattern) -> np.ndarray:
    match = np.frompyfunc(
        lambda s: compiled.fullmatch(re2.decode(s)) is not None, 1, 1)
    return np.asarray(match(np.asarray(strings, dtype=object)), dtype=bool).reshape(
        np.shape(strings))


@kernel("StaticRegexFullMatch")
def static_regex_full_match(input: np.ndarray, *, pattern: str, **_) -> tuple[np.ndarray]:
    return (_full_match(input, _compile(attr_bytes(pattern), "StaticRegexFullMatch")),)


@kernel("RegexFullMatch")
def regex_full_match(input: np.ndarray, pattern: np.ndarray, **_) -> tuple[np.ndarray]:
    compiled = _compile(scalar_bytes(pattern, "RegexFullMatch", "pattern"), "RegexFullMatch")
    return (_full_match(input, compiled),)


# ---------------------------------------------------------------------------------------------
# Lengths and substrings


def _is_char_start(byte: int) -> bool:
    """UTF-8 continuation bytes (0b10xxxxxx) do not start a character; TensorFlow counts every
    other byte, valid UTF-8 or not."""
    return byte & 0xC0 != 0x80


def _utf8_length(s: bytes) -> int:
    return sum(1 for b in s if _is_char_start(b))


@kernel("StringLength")
def string_length(input: np.ndarray, *, unit: str = "BYTE", **_) -> tuple[np.ndarray]:
    check(unit in ("BYTE", "UTF8_CHAR"), f"StringLength: unknown unit {unit!r}")
    measure = len if unit == "BYTE" else _utf8_length
    lengths = np.frompyfunc(measure, 1, 1)(np.asarray(input, dtype=object))
    return (np.asarray(lengths, dtype=np.int32).reshape(np.shape(input)),)


def _char_offsets(s: bytes) -> list[int]:
    """Byte offsets of each character's start, plus the end."""
    return [i for i, b in enumerate(s) if _is_char_start(b)] + [len(s)]


def _substr(s: bytes, pos: int, length: int, utf8: bool, index: int) -> bytes:
    """A negative length means the rest of the string in bytes (TensorFlow reads it as a huge
    unsigned count) but no characters at all in UTF8_CHAR units."""
    offsets = _char_offsets(s) if utf8 else None
    size = len(offsets) - 1 if utf8 else len(s)
    check(-size <= pos <= size, f"Substr: pos {pos} out of range for string {s!r} at index "
                                f"{index}")
    start = pos + size if pos < 0 else pos
    if utf8:
        return s[offsets[start]:offsets[min(size, start + max(length, 0))]]
    return s[start:] if length < 0 else s[start:start + length]


@kernel("Substr")
def substr(input: np.ndarray, pos: np.ndarray, len: np.ndarray, *, unit: str = "BYTE",
           **_) -> tuple[np.ndarray]:
    check(unit in ("BYTE", "UTF8_CHAR"), f"Substr: unknown unit {unit!r}")
    check(np.shape(pos) == np.shape(len), f"Substr: pos and len should have the same shape, "
                                          f"got: {list(np.shape(pos))} vs. {list(np.shape(len))}")
    try:
        strings, starts, lengths = np.broadcast_arrays(np.asarray(input, dtype=object), pos, len)
    except ValueError:
        check(False, f"Substr: Incompatible shapes: {list(np.shape(input))} vs. "
                     f"{list(np.shape(pos))}")
    utf8 = unit == "UTF8_CHAR"
    items = [_substr(s, p, n, utf8, i) for i, (s, p, n) in enumerate(zip(
        strings.ravel().tolist(), starts.ravel().tolist(), lengths.ravel().tolist()))]
    return (objects(items, strings.shape),)


# ---------------------------------------------------------------------------------------------
# Numbers to strings: AsString


@functools.lru_cache(maxsize=256)
def _as_string_spec(dtype: np.dtype, precision: int, scientific: bool, shortest: bool,
                    width: int, fill: str) -> tuple[str, str]:
    """The printf flags, width and precision TensorFlow builds from the attrs, and the
    conversion letter; validated once per attr combination."""
    check(not (scientific and shortest),
          "AsString: Cannot select both scientific and shortest notation")
    check(len(attr_bytes(fill)) <= 1, "AsString: Fill string must be one or fewer characters")
    check(fill in ("", " ", "+", "-", "0", "#"), f'AsString: Fill argument not supported: "{fill}"')
    if dtype.kind in "iub":
        name = _tf_name(dtype)
        check(precision < 0, f"AsString: precision not supported for datatype {name}")
        check(not (scientific or shortest),
              f"AsString: scientific and shortest format not supported for datatype {name}")
    spec = fill + (str(width) if width > -1 else "") + (f".{precision}" if precision > -1 else "")
    return spec, "g" if shortest else "e" if scientific else "f"


def _tf_name(dtype: np.dtype) -> str:
    return dtypes.from_numpy(dtype).name


def _printf_float(spec: str, conversion: str) -> Callable[[float], bytes]:
    """C's printf for one float: Python's %-formatting agrees except on non-finite values,
    where C ignores the 0 flag and keeps the sign of a NaN."""
    finite = f"%{spec}{conversion}"
    non_finite = "%" + _strip_flags(spec, "0") + conversion

    def format_one(value: float) -> bytes:
        if math.isfinite(value):
            return (finite % value).encode()
        if math.isnan(value):
            infinity = math.copysign(math.inf, value)
            return (non_finite % infinity).replace("inf", "nan").encode()
        return (non_finite % value).encode()

    return format_one


def _strip_flags(spec: str, drop: str) -> str:
    """`spec` without the printf flags in `drop` (the fill attr is at most one flag)."""
    return spec[1:] if spec[:1] and spec[0] in drop else spec


def _as_string_values(x: np.ndarray, spec: str, conversion: str) -> list[bytes]:
    values = x.ravel()
    if x.dtype.kind == "b":
        return [b"true" if v else b"false" for v in values.tolist()]
    if x.dtype.kind in "iu":
        pattern = "%" + (_strip_flags(spec, "+ ") if x.dtype.kind == "u" else spec) + "d"
        return [(pattern % v).encode() for v in values.tolist()]
    one = _printf_float(spec, conversion)
    if x.dtype.kind == "c":
        return [b"(" + one(v.real) + b"," + one(v.imag) + b")"
                for v in _as_printed(values).tolist()]
    return [one(v) for v in _as_printed(values).tolist()]


def _as_printed(x: np.ndarray) -> np.ndarray:
    """Floats as TensorFlow's printf sees them: narrow floats widened to float32, and values
    subnormal in the type printed read as zeros of their sign (TensorFlow runs its kernels with
    denormals-are-zero set; float16 subnormals are normal float32s and survive)."""
    if x.dtype == np.float16 or x.dtype.kind == "V":
        x = x.astype(np.float32)
    if x.dtype.kind == "c":
        out = np.empty_like(x)
        out.real, out.imag = _flush_subnormals(x.real), _flush_subnormals(x.imag)
        return out
    return _flush_subnormals(x)


def _flush_subnormals(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.copysign(x.dtype.type(0), x), x)


@kernel("AsString")
def as_string(input: np.ndarray, *, precision: int = -1, scientific: bool = False,
              shortest: bool = False, width: int = -1, fill: str = "", **_) -> tuple[np.ndarray]:
    x = np.asarray(input)
    spec, conversion = _as_string_spec(x.dtype, precision, scientific, shortest, width, fill)
    if x.dtype.kind == "O":
        if width < 0:
            return (x,)
        pattern = b"%" + spec.encode() + b"s"
        return (objects([pattern % as_bytes(v) for v in x.ravel().tolist()], x.shape),)
    return (objects(_as_string_values(x, spec, conversion), x.shape),)


# ---------------------------------------------------------------------------------------------
# Strings to numbers: StringToNumber

_SPACE = rb"[ \t\n\v\f\r]*"
_INTEGER = re.compile(_SPACE + rb"([+-]?[0-9]+)" + _SPACE)
_DECIMAL = re.compile(_SPACE + rb"([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                      rb"|inf|infinity|nan(?:\([0-9a-z_]*\))?))" + _SPACE, re.IGNORECASE)
_HEXADECIMAL = re.compile(_SPACE + rb"([+-]?0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)"
                          rb"(?:p[+-]?[0-9]+)?)" + _SPACE, re.IGNORECASE)


def parse_float(text: bytes) -> float | None:
    """absl::SimpleAtof's grammar: surrounding ASCII whitespace, decimal or hexadecimal
    notation, inf/infinity/nan in any case, nan with strtod's `(chars)` payload; nothing else
    (no `_` separators, unlike float())."""
    match = _DECIMAL.fullmatch(text)
    if match:
        return float(match.group(1).split(b"(")[0])
    match = _HEXADECIMAL.fullmatch(text)
    return float.fromhex(match.group(1).decode()) if match else None


def parse_int(text: bytes) -> int | None:
    match = _INTEGER.fullmatch(text)
    return int(match.group(1)) if match else None


def _unparsable(text: bytes) -> str:
    return f"StringToNumberOp could not correctly convert string: {text.decode('utf-8', 'replace')}"


@kernel("StringToNumber")
def string_to_number(string_tensor: np.ndarray, *, out_type=None, **_) -> tuple[np.ndarray]:
    dtype = np.dtype(out_type.numpy if out_type is not None else np.float32)
    strings = np.asarray(string_tensor, dtype=object)
    texts = [as_bytes(s) for s in strings.ravel().tolist()]
    if dtype.kind == "f":
        values = [parse_float(t) for t in texts]
    else:
        info = np.iinfo(dtype)
        values = [parse_int(t) for t in texts]
        values = [v if v is not None and info.min <= v <= info.max else None for v in values]
    for text, value in zip(texts, values):
        if value is None:
            raise KernelError(_unparsable(text))
    return (np.array(values, dtype=np.float64 if dtype.kind == "f" else dtype).astype(
        dtype).reshape(strings.shape),)


# ---------------------------------------------------------------------------------------------
# Tensors to text: StringFormat


def _float_text(value: float, digits: int, dtype) -> bytes:
    """TensorFlow's FloatToBuffer/DoubleToBuffer: the shorter precision (6 or 15 digits) if it
    reads back as the same value, else the longer one (9 or 17); NaN keeps its sign."""
    if math.isnan(value):
        return b"-nan" if math.copysign(1.0, value) < 0 else b"nan"
    short = "%.*g" % (digits, value)
    if dtype(float(short)) != dtype(value):
        short = "%.*g" % (digits + (3 if digits == 6 else 2), value)
    return short.encode()


_ESCAPES = {ord("\n"): b"\\n", ord("\r"): b"\\r", ord("\t"): b"\\t", ord('"'): b'\\"',
            ord("'"): b"\\'", ord("\\"): b"\\\\"}
_ESCAPED = re.compile(rb"[\x00-\x1f\x7f\"'\\]")


def _quoted(value: bytes) -> bytes:
    """absl::Utf8SafeCEscape in double quotes: C escapes and octal for ASCII control bytes;
    bytes >= 0x80 pass through unchanged."""
    escaped = _ESCAPED.sub(lambda m: _ESCAPES.get(m.group()[0], b"\\%03o" % m.group()[0]), value)
    return b'"' + escaped + b'"'


def _element_printer(dtype: np.dtype) -> Callable | None:
    """How TensorFlow prints one element of a tensor of `dtype`; None for the types it prints
    as `?` (complex numbers)."""
    if dtype.kind == "O":
        return lambda v: _quoted(as_bytes(v))
    if dtype.kind == "b":
        return lambda v: b"1" if v else b"0"
    if dtype.kind in "iu":
        return lambda v: str(v).encode()
    if dtype == np.float64:
        return lambda v: _float_text(v, 15, float)
    if dtype.kind in "fV":
        return lambda v: _float_text(v, 6, np.float32)
    return None


def _dim_spacing(dim: int, rank: int) -> bytes:
    if dim == rank - 1:
        return b" "
    return b"\n" * (rank - dim - 1) + b" " * (dim + 1)


def _print_dim(values, shape: tuple, ends: int, element, out: list, dim: int = 0) -> None:
    """Nested brackets with at most `ends` entries at each end of every dimension, `...` for
    the rest, rows separated as numpy does (TensorFlow's print_v2 layout)."""
    if dim == len(shape):
        out.append(element(values))
        return
    out.append(b"[")
    count = shape[dim]
    spacing = _dim_spacing(dim, len(shape))
    for i in range(min(ends, count)):
        if i:
            out.append(spacing)
        _print_dim(values[i], shape, ends, element, out, dim + 1)
    if count > 2 * ends:
        out += [spacing, b"..."]
    for i in range(max(ends, count - ends), count):
        out.append(spacing)
        _print_dim(values[i], shape, ends, element, out, dim + 1)
    out.append(b"]")


def _summarize(x: np.ndarray, summarize: int) -> bytes:
    """Tensor::SummarizeValue(summarize, print_v2=true)."""
    count = x.size
    max_entries = count if summarize < 0 else summarize
    limit = min(max_entries, count)
    element = _element_printer(x.dtype)
    if element is None:
        body = b" ".join([b"?"] * limit) + (b"..." if max_entries < count else b"")
        return b"[" + body + b"]" if x.ndim else body
    if x.dtype.kind in "fV":
        x = _as_printed(x)
    if x.ndim == 0:
        return (element(x.item()) if limit else b"") + (b"..." if count > limit else b"")
    out: list[bytes] = []
    _print_dim(x.tolist(), x.shape, limit, element, out)
    return b"".join(out)


def _split_template(template: bytes, placeholder: bytes) -> list[bytes]:
    """absl::StrSplit: an empty placeholder splits between every character."""
    if placeholder:
        return template.split(placeholder)
    return [template[i:i + 1] for i in range(len(template))] or [b""]


@kernel("StringFormat")
def string_format(*inputs: np.ndarray, template: str, placeholder: str = "%s",
                  summarize: int = 3, **_) -> tuple[np.ndarray]:
    pieces = _split_template(attr_bytes(template), attr_bytes(placeholder))
    check(len(pieces) - 1 == len(inputs), f"StringFormat: num placeholders in template and num "
                                          f"inputs must match: {len(pieces) - 1} vs. "
                                          f"{len(inputs)}")
    out = [pieces[0]]
    for x, piece in zip(inputs, pieces[1:]):
        out += [_summarize(np.asarray(x), summarize), piece]
    return (objects([b"".join(out)], ()),)


# ---------------------------------------------------------------------------------------------
# Text preprocessing (what Keras' TextVectorization, Hashing and lookup layers emit):
# case changes, hashing into buckets, RegexReplace


def _hash_buckets(input: np.ndarray, num_buckets: int, op: str, hash_one) -> tuple[np.ndarray]:
    check(num_buckets >= 1, f"{op}: num_buckets must be at least 1, got {num_buckets}")
    strings = np.asarray(input, dtype=object)
    buckets = [hash_one(s) % num_buckets for s in map(as_bytes, strings.ravel().tolist())]
    return (np.array(buckets, dtype=np.int64).reshape(strings.shape),)


@kernel("StringToHashBucketFast")
def string_to_hash_bucket_fast(input: np.ndarray, *, num_buckets: int, **_) -> tuple[np.ndarray]:
    """Each string's FarmHash Fingerprint64, modulo the number of buckets."""
    return _hash_buckets(input, num_buckets, "StringToHashBucketFast", fingerprint64)


@kernel("StringToHashBucket")
def string_to_hash_bucket(string_tensor: np.ndarray, *, num_buckets: int, **_) -> tuple[np.ndarray]:
    """The deprecated op: tensorflow::Hash64 (MurmurHash64A), not Fingerprint64, modulo the
    number of buckets."""
    return _hash_buckets(string_tensor, num_buckets, "StringToHashBucket", hash64)


@kernel("StringToHashBucketStrong")
def string_to_hash_bucket_strong(input: np.ndarray, *, num_buckets: int, key: list,
                                 **_) -> tuple[np.ndarray]:
    """SipHash-2-4 under the two-word `key` attr (int64s read as uint64s), modulo the number
    of buckets."""
    check(len(key) == 2, f"StringToHashBucketStrong: Key must have 2 elements, got {len(key)}")
    words = (int(key[0]), int(key[1]))
    return _hash_buckets(input, num_buckets, "StringToHashBucketStrong",
                         lambda s: siphash24(words, s))


def _change_case(input: np.ndarray, encoding: str, op: str, ascii_change, text_change) -> tuple:
    """Without an encoding only ASCII letters change (other bytes pass through); with `utf-8`
    the text changes case as Unicode (full case mappings: `ß` uppercases to `SS`), ill-formed
    UTF-8 reading as U+FFFD as ICU reads it."""
    check(encoding in ("", "utf-8"), f"{op}: unsupported encoding {encoding!r}")
    strings = np.asarray(input, dtype=object)
    items = map(as_bytes, strings.ravel().tolist())
    if encoding:
        changed = [text_change(s.decode("utf-8", "replace")).encode("utf-8") for s in items]
    else:
        changed = [ascii_change(s) for s in items]
    return (objects(changed, strings.shape),)


@kernel("StringLower")
def string_lower(input: np.ndarray, *, encoding: str = "", **_) -> tuple[np.ndarray]:
    return _change_case(input, encoding, "StringLower", bytes.lower, str.lower)


@kernel("StringUpper")
def string_upper(input: np.ndarray, *, encoding: str = "", **_) -> tuple[np.ndarray]:
    return _change_case(input, encoding, "StringUpper", bytes.upper, str.upper)


@kernel("StringStrip")
def string_strip(input: np.ndarray, **_) -> tuple[np.ndarray]:
    """ASCII whitespace off both ends (space, \\t, \\n, \\v, \\f, \\r), as bytes.strip does."""
    strings = np.asarray(input, dtype=object)
    return (objects([as_bytes(s).strip() for s in strings.ravel().tolist()], strings.shape),)


_REWRITE_PART = re.compile(r"\\(.)|[^\\]+|\\$", re.DOTALL)


@functools.lru_cache(maxsize=256)
def _rewrite(rewrite: bytes, groups: int, op: str) -> tuple:
    """RE2's rewrite string as literal text and group numbers: `\\0`..`\\9` name groups, `\\\\`
    is a backslash, any other escape is an error (Python's templates differ: `\\0` is NUL)."""
    parts = []
    for match in _REWRITE_PART.finditer(rewrite.decode("utf-8", "surrogateescape")):
        escaped = match.group(1)
        if not match.group().startswith("\\"):
            parts.append(match.group())
        elif escaped == "\\":
            parts.append("\\")
        elif escaped and escaped in "0123456789" and int(escaped) <= groups:
            parts.append(int(escaped))
        else:
            raise KernelError(f"{op}: invalid rewrite pattern {rewrite.decode('utf-8', 'replace')!r} "
                              f"for a pattern with {groups} groups")
    return tuple(parts)


def _regex_replace(input, pattern: bytes, rewrite: bytes, replace_global: bool, op: str) -> tuple:
    compiled = _compile(pattern, op)
    parts = _rewrite(rewrite, compiled.groups, op)

    def expand(match: re.Match) -> str:
        return "".join(p if isinstance(p, str) else match.group(p) or "" for p in parts)

    strings = np.asarray(input, dtype=object)
    replaced = [re2.replace(compiled, s, expand, replace_global)
                for s in map(as_bytes, strings.ravel().tolist())]
    return (objects(replaced, strings.shape),)


@kernel("StaticRegexReplace")
def static_regex_replace(input: np.ndarray, *, pattern: str, rewrite: str, replace_global: bool = True,
                         **_) -> tuple[np.ndarray]:
    return _regex_replace(input, attr_bytes(pattern), attr_bytes(rewrite), replace_global,
                          "StaticRegexReplace")


@kernel("RegexReplace")
def regex_replace(input: np.ndarray, pattern: np.ndarray, rewrite: np.ndarray, *,
                  replace_global: bool = True, **_) -> tuple[np.ndarray]:
    return _regex_replace(input, scalar_bytes(pattern, "RegexReplace", "pattern"),
                          scalar_bytes(rewrite, "RegexReplace", "rewrite"), replace_global, "RegexReplace")
