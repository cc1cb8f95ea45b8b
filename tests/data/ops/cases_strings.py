"""Kernel cases for string ops: joining, shard names, regex matching, lengths, substrings,
number formatting and parsing, and StringFormat's rendering of tensors."""
import ml_dtypes
import numpy as np
import tensorflow as tf


def _s(*items, shape=None):
    array = np.empty(len(items), dtype=object)
    array[:] = [i.encode() if isinstance(i, str) else i for i in items]
    return array.reshape(shape if shape is not None else (len(items),))


def _scalar(item):
    return _s(item, shape=())


def _fmt(name, *inputs, template="{}", placeholder="{}", error=False, dynamic=False, **attrs):
    return case("StringFormat", name=name, inputs=list(inputs), template=template,
                placeholder=placeholder, error=error, dynamic=dynamic, **attrs)


def _as(name, x, error=False, **attrs):
    return case("AsString", name=name, input=x, error=error, dynamic=error, **attrs)


def _num(name, strings, out_type, error=False):
    return case("StringToNumber", name=name, string_tensor=strings, out_type=out_type,
                error=error, dynamic=error)


_FLOATS = np.array([1.5, -2.25, 1 / 3, 1e-8, 1e10, np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0,
                    123456789.0, 0.1], np.float32)
_SUBNORMALS = np.array([1e-40, -1e-42, 1e-310, -1e-320, 6e-8, 1.1754943508222875e-38, 0.5])
_ESCAPES = _s(b'q"x', b"\xff\n", b"\t\r", b"'", b"\\", b"\x01\x7f", "é", b"\x00", b"")

JOIN = [
    case("StringJoin", name="vectors_and_scalar", inputs=[_s("a", "b"), _scalar("-"),
                                                          _s("x", "y")], separator="/"),
    case("StringJoin", name="scalars", inputs=[_scalar("a"), _scalar("b\xff")]),
    case("StringJoin", name="one_input", inputs=[_s("a", "b")], separator=","),
    case("StringJoin", name="matrix", inputs=[_s("a", "b", "c", "d", shape=(2, 2)),
                                              _scalar(""), _s("1", "2", "3", "4", shape=(2, 2))],
         separator=", "),
    case("StringJoin", name="empty", inputs=[_s(), _scalar("s")]),
    case("StringJoin", name="error_shapes", inputs=[_s("a", "b"), _s("x", "y", "z")],
         error=True, dynamic=True),
    case("StringJoin", name="error_one_vs_two", inputs=[_s("a"), _s("x", "y")], error=True,
         dynamic=True),
    case("ShardedFilename", basename=_scalar("/tmp/ckpt/model"), shard=np.array(3, np.int32),
         num_shards=np.array(12, np.int32)),
    case("ShardedFilename", name="wide", basename=_scalar("b"), shard=np.array(123456, np.int32),
         num_shards=np.array(-2, np.int32)),
    case("ShardedFilespec", basename=_scalar("/tmp/ckpt/model"), num_shards=np.array(7, np.int32)),
]

REGEX = [
    case("StaticRegexFullMatch", name="saver_s3", input=_s("s3://bucket/x", "gs://y", "/tmp/s3://",
                                                           b"\xff"), pattern="^s3://.*"),
    case("StaticRegexFullMatch", name="scalar_partial", input=_scalar("abc"), pattern="a"),
    case("StaticRegexFullMatch", name="utf8_dot", input=_s("é", "ab", "\n", ""), pattern="."),
    case("StaticRegexFullMatch", name="classes", input=_s("ab12", "AB_9", "a b", "x"),
         pattern=r"[a-z]+\d*|\w+", ),
    case("StaticRegexFullMatch", name="error_pattern", input=_scalar("abc"), pattern="(a",
         error=True, dynamic=True),
    case("RegexFullMatch", input=_s("ab", "abab", "a\nb", "", shape=(2, 2)),
         pattern=_scalar("(ab)+")),
    case("RegexFullMatch", name="dot_newline", input=_s("a\nb", "axb"), pattern=_scalar("a.b")),
    case("RegexFullMatch", name="error_pattern", input=_s("ab"), pattern=_scalar("(a"),
         error=True, dynamic=True),
]

LENGTH_SUBSTR = [
    case("StringLength", input=_s("abc", "héllo", "", b"\xff\xfe", shape=(2, 2))),
    case("StringLength", name="utf8", input=_s("abc", "héllo", "", b"\xff\xfe", "€x",
                                                b"\xe2\x82"), unit="UTF8_CHAR"),
    case("StringLength", name="scalar", input=_scalar("four")),
    case("Substr", name="scalar_pos", input=_s("hello", "world"), pos=np.array(1, np.int32),
         len=np.array(3, np.int32)),
    case("Substr", name="negative_pos", input=_s("hello", "world"), pos=np.array(-3, np.int32),
         len=np.array(10, np.int32)),
    case("Substr", name="elementwise", input=_s("hello", "world"), pos=np.array([0, 2], np.int32),
         len=np.array([1, -1], np.int32)),
    case("Substr", name="pos_at_end", input=_s("hello"), pos=np.array(5, np.int64),
         len=np.array(1, np.int64)),
    case("Substr", name="broadcast_rows", input=_s("hello", "ab", "xyz", "q", shape=(2, 2)),
         pos=np.array([1, 0], np.int32), len=np.array([2, 5], np.int32)),
    case("Substr", name="scalar_input", input=_scalar("hello"), pos=np.array([0, 1], np.int32),
         len=np.array([1, 2], np.int32)),
    case("Substr", name="error_utf8_pos", input=_s("héllo€", "€"), pos=np.array(7, np.int32),
         len=np.array(4, np.int32), unit="UTF8_CHAR", error=True, dynamic=True),
    case("Substr", name="utf8_in_range", input=_s("héllo€", "añb"), pos=np.array(1, np.int32),
         len=np.array(4, np.int32), unit="UTF8_CHAR"),
    case("Substr", name="utf8_negative", input=_s("héllo€"), pos=np.array(-2, np.int32),
         len=np.array(4, np.int32), unit="UTF8_CHAR"),
    case("Substr", name="error_pos", input=_s("hello"), pos=np.array(6, np.int32),
         len=np.array(1, np.int32), error=True, dynamic=True),
    case("Substr", name="error_negative_pos", input=_s("hello"), pos=np.array(-6, np.int32),
         len=np.array(1, np.int32), error=True, dynamic=True),
    case("Substr", name="error_broadcast", input=_s("hello", "x", "y"),
         pos=np.array([0, 1], np.int32), len=np.array([1, 2], np.int32), error=True,
         dynamic=True),
]

AS_STRING = [
    _as("float32", _FLOATS),
    _as("float64", _FLOATS.astype(np.float64)),
    _as("float16", np.array([1.5, 1 / 3, 65504, -0.0, np.inf, np.nan], np.float16)),
    _as("bfloat16", np.array([1.5, 1 / 3, 1e10, -2], ml_dtypes.bfloat16)),
    _as("precision", _FLOATS, precision=2),
    _as("precision_0_alternate", _FLOATS, precision=0, fill="#"),
    _as("scientific", _FLOATS, scientific=True),
    _as("scientific_precision", _FLOATS, scientific=True, precision=3),
    _as("shortest", _FLOATS, shortest=True),
    _as("shortest_precision", _FLOATS, shortest=True, precision=3),
    _as("shortest_alternate_width", _FLOATS, shortest=True, fill="#", width=10),
    _as("width", _FLOATS, width=12),
    _as("width_zero_fill", _FLOATS, width=12, fill="0"),
    _as("width_left", _FLOATS, width=12, fill="-"),
    _as("width_space", _FLOATS, width=12, fill=" "),
    _as("width_plus", _FLOATS, width=12, fill="+"),
    _as("matrix", np.arange(6, dtype=np.float32).reshape(2, 3) / 4),
    _as("scalar", np.array(3.5, np.float32)),
    _as("int32", np.array([0, 1, -5, 123456], np.int32)),
    _as("int32_width", np.array([0, 1, -5, 123456], np.int32), width=8),
    _as("int32_zero_fill", np.array([0, 1, -5, 123456], np.int32), width=8, fill="0"),
    _as("int32_left", np.array([0, 1, -5, 123456], np.int32), width=8, fill="-"),
    _as("int64_plus", np.array([5, -3, 2**63 - 1, -2**63], np.int64), width=4, fill="+"),
    _as("uint8_plus", np.array([7, 255], np.uint8), width=4, fill="+"),
    _as("uint64", np.array([2**64 - 1, 0], np.uint64), fill=" "),
    _as("uint32", np.array([2**32 - 1], np.uint32)),
    _as("uint16", np.array([65535], np.uint16), width=7, fill="0"),
    _as("int16", np.array([-3], np.int16)),
    _as("int8", np.array([-128, 127], np.int8)),
    _as("bool", np.array([True, False])),
    _as("bool_width_ignored", np.array([True]), width=6, fill="-"),
    _as("complex64", np.array([1 + 2j, -0.5j], np.complex64)),
    _as("complex128_precision", np.array([1 + 2j, -0.5j], np.complex128), precision=2),
    _as("complex64_plus", np.array([1 + 2j], np.complex64), width=4, fill="+"),
    _as("string_unchanged", _s("ab", "c\xff"), precision=2, scientific=True),
    _as("string_width", _s("ab", "c\xff", "abcdef"), width=5),
    _as("string_width_precision", _s("abcdef", "a"), width=5, precision=2),
    _as("string_left", _s("ab"), width=4, fill="-"),
    _as("subnormals_float32", _SUBNORMALS.astype(np.float32), shortest=True),
    _as("subnormals_float64", _SUBNORMALS, shortest=True),
    _as("subnormals_float16", _SUBNORMALS.astype(np.float16), shortest=True),
    _as("subnormals_bfloat16", _SUBNORMALS.astype(np.float32).astype(ml_dtypes.bfloat16),
        scientific=True),
    _as("subnormals_complex64", np.array([1e-40 + 2e-40j, -1e-41j, 1 + 1e-45j], np.complex64),
        scientific=True),
    _as("error_scientific_and_shortest", _FLOATS, scientific=True, shortest=True, error=True),
    _as("error_fill", _FLOATS, fill="x", width=3, error=True),
    _as("error_fill_length", _FLOATS, fill="00", error=True),
    _as("error_int_precision", np.array([1], np.int32), precision=3, error=True),
    _as("error_int_scientific", np.array([1], np.int64), scientific=True, error=True),
    _as("error_bool_shortest", np.array([True]), shortest=True, error=True),
]

_GOOD_FLOATS = _s("1.5", " 2.5 ", "1e3", "-inf", "nan", "INF", "Infinity", "-NaN", "0x10",
                  "-0x1.8p1", "3.4e39", "1e-50", "+7", "-0", "1.", ".5", "\t8\n", "1e400")
_BAD_NUMBERS = ["1_000", "", "abc", "12abc", "0b1", "1,5", "1e", "--1", "٣"]

STRING_TO_NUMBER = [
    _num("float32", _GOOD_FLOATS, tf.float32),
    _num("float64", _GOOD_FLOATS, tf.float64),
    _num("int32", _s("7", "+7", "-0", "  7", "007", "\t8\n", "2147483647", "-2147483648",
                     shape=(2, 4)), tf.int32),
    _num("int64", _s("9223372036854775807", "-9223372036854775808", "2147483648"), tf.int64),
    case("StringToNumber", name="default_float32_scalar", string_tensor=_scalar("4")),
    *[_num(f"error_float_{i}", _s("1", text), tf.float32, error=True)
      for i, text in enumerate(_BAD_NUMBERS)],
    *[_num(f"error_int_{i}", _s(text), tf.int32, error=True)
      for i, text in enumerate(_BAD_NUMBERS + ["1.5", "1e3", "inf", "0x1F", "2147483648",
                                               "-2147483649"])],
    _num("error_int64_overflow", _s("9223372036854775808"), tf.int64, error=True),
]

FORMAT = [
    _fmt("vector", np.array([1, 2, 3], np.int32)),
    _fmt("matrix", np.array([[1, 2], [3, 4]], np.int32)),
    _fmt("rank3", np.arange(24).reshape(2, 3, 4)),
    _fmt("rank3_summarize_1", np.arange(24).reshape(2, 3, 4), summarize=1),
    _fmt("rank3_all_summarized", np.arange(64).reshape(4, 4, 4), summarize=1),
    _fmt("rank4", np.arange(16).reshape(2, 2, 2, 2)),
    _fmt("long_vector_default", np.arange(20)),
    _fmt("summarize_all", np.arange(20), summarize=-1),
    _fmt("summarize_0", np.arange(20), summarize=0),
    _fmt("summarize_2", np.arange(7), summarize=2),
    _fmt("matrix_summarized", np.arange(100).reshape(10, 10), summarize=2),
    _fmt("row", np.arange(6).reshape(1, 6), summarize=2),
    _fmt("column", np.arange(6).reshape(6, 1), summarize=2),
    _fmt("two_inputs", np.array(5, np.int64), np.array(2.5, np.float32), template="x={} y={}"),
    _fmt("float32", _FLOATS, summarize=-1),
    _fmt("float64", np.concatenate([_FLOATS.astype(np.float64), [1 / 3, 123456.7, 0.1, 1e16,
                                                                 3.14159265358979]]),
         summarize=-1),
    _fmt("float32_digits", np.array([1e-5, 1e-4, 123456.7, 1234567.8, 1e16, 1e17, np.pi],
                                    np.float32), summarize=-1),
    _fmt("float16", np.array([1.5, 2.0, 0.1, 1 / 3, 65504], np.float16)),
    _fmt("bfloat16", np.array([1.5, 2.0, 0.1, 1 / 3], ml_dtypes.bfloat16), summarize=-1),
    _fmt("subnormals_float32", _SUBNORMALS.astype(np.float32), summarize=-1),
    _fmt("subnormals_float64", _SUBNORMALS, summarize=-1),
    _fmt("subnormals_float16", _SUBNORMALS.astype(np.float16), summarize=-1),
    _fmt("subnormals_bfloat16", _SUBNORMALS.astype(np.float32).astype(ml_dtypes.bfloat16),
         summarize=-1),
    _fmt("strings", _ESCAPES, summarize=-1),
    _fmt("string_scalar", _scalar("hello")),
    _fmt("bool", np.array([True, False])),
    _fmt("complex", np.array([1 + 2j, 3j, 4], np.complex64), summarize=2),
    _fmt("complex_all", np.array([[1 + 2j, 3j]], np.complex128)),
    _fmt("complex_scalar", np.array(1 + 2j, np.complex64)),
    _fmt("unsigned_and_small_ints", np.array([1, 2, 255], np.uint8), np.array([1, -2], np.int8),
         np.array([2**64 - 1], np.uint64), np.array([7], np.uint16), np.array([-7], np.int16),
         np.array([2**32 - 1], np.uint32), template="{} {} {} {} {} {}"),
    _fmt("empty", np.zeros((0,), np.float32)),
    _fmt("empty_rows", np.zeros((2, 0), np.float32)),
    _fmt("no_rows", np.zeros((0, 3), np.float32)),
    _fmt("scalar_summarize_0", np.array(5, np.int32), summarize=0),
    _fmt("percent_placeholder", np.array([1], np.int32), template="a %s b", placeholder="%s"),
    _fmt("no_inputs", template="no input"),
    _fmt("braces_around", np.array([1], np.int32), template="{{}}"),
    _fmt("adjacent", np.array([1], np.int32), np.array([2], np.int32), template="{}{}"),
    _fmt("template_bytes", np.array([1.0], np.float32), template="\xff{}"),
]

CASES = JOIN + REGEX + LENGTH_SUBSTR + AS_STRING + STRING_TO_NUMBER + FORMAT
