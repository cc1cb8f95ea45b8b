"""Kernel cases for the string ops of issue 14 beyond cases_strings/cases_text: case changes,
stripping, hashing into buckets (legacy, fast and keyed), splitting (v1), n-grams, and joins
across elements (ReduceJoin, UnsortedSegmentJoin)."""
import numpy as np


def _s(*items, shape=None):
    array = np.empty(len(items), dtype=object)
    array[:] = [i.encode() if isinstance(i, str) else i for i in items]
    return array.reshape(shape if shape is not None else (len(items),))


def _scalar(item):
    return _s(item, shape=())


def _i(values, dtype=np.int64):
    return np.array(values, dtype)


_MIXED = _s("Hello World", "straße ǆ", "ÄÖü é", b"\xff\xc3abc", "", "ﬁx İı", shape=(2, 3))
_HASHED = _s("cat", "dog", "", "bird", "é", b"\xff\x00", "a much longer string " * 5, "1234567",
             "12345678", "123456789abcdef", shape=(2, 5))
_WORDS = _s("the", "cat", "sat", "on", "a", "mat", "é", "")

CASE = [
    case("StringUpper", input=_MIXED),
    case("StringUpper", name="utf8", input=_MIXED, encoding="utf-8"),
    case("StringUpper", name="empty", input=_s(shape=(0, 2))),
    case("StringLower", name="utf8_invalid", input=_s(b"\xff\xc3ABC", b"A\xe2\x82Z", b"\xc0\xafX",
                                                      "ǅİ"), encoding="utf-8"),
    case("StringUpper", name="utf8_invalid",
         input=_s(b"\xff\xc3abc", b"a\xe2\x82z", b"\xed\xa0\x80x"), encoding="utf-8"),
    case("StringStrip", input=_s("  a b  ", "\t\n\v\f\rx\r\n", "", "   ", "\xa0y\xa0", b"\x00z\x00",
                                 shape=(3, 2))),
    case("StringStrip", name="scalar", input=_scalar(" s ")),
    case("StringStrip", name="empty", input=_s()),
]

HASH = [
    case("StringToHashBucket", string_tensor=_HASHED, num_buckets=7),
    case("StringToHashBucket", name="many_buckets", string_tensor=_HASHED, num_buckets=2**62),
    case("StringToHashBucket", name="scalar_one_bucket", string_tensor=_scalar("x"), num_buckets=1),
    case("StringToHashBucket", name="empty", string_tensor=_s(shape=(0, 3)), num_buckets=3),
    case("StringToHashBucketFast", name="lengths", input=_HASHED, num_buckets=2**62),
    case("StringToHashBucketStrong", input=_HASHED, num_buckets=11, key=[1, 2]),
    case("StringToHashBucketStrong", name="big_key", input=_HASHED, num_buckets=2**62,
         key=[-1, 2**63 - 1]),
    case("StringToHashBucketStrong", name="empty", input=_s(), num_buckets=3, key=[0, 0]),
    case("StringToHashBucketStrong", name="error_key_length", input=_s("a"), num_buckets=3,
         key=[1, 2, 3], error=True, dynamic=True),
]

SPLIT = [
    case("StringSplit", input=_s("a b  c", " x ", "", "abc"), delimiter=_scalar(" ")),
    case("StringSplit", name="keep_empty", input=_s("a b  c", " x ", "", "abc"),
         delimiter=_scalar(" "), skip_empty=False),
    case("StringSplit", name="any_of", input=_s("a,b;c", ",;", "x;;y,"), delimiter=_scalar(",;")),
    case("StringSplit", name="any_of_keep_empty", input=_s("a,b;c", ",;", "x;;y,"),
         delimiter=_scalar(",;"), skip_empty=False),
    case("StringSplit", name="bytes", input=_s("ab", "", "é"), delimiter=_scalar("")),
    case("StringSplit", name="bytes_keep_empty", input=_s("ab", "", "é"), delimiter=_scalar(""),
         skip_empty=False),
    case("StringSplit", name="empty", input=_s(), delimiter=_scalar(" ")),
    case("StringSplit", name="non_ascii_delimiter", input=_s("aébéc"), delimiter=_scalar("é")),
]


def _ngrams(name, data, splits, widths, separator=" ", left="LP", right="RP", pad_width=0,
            preserve=False, error=False):
    return case("StringNGrams", name=name, data=data, data_splits=splits, separator=separator,
                ngram_widths=widths, left_pad=left, right_pad=right, pad_width=pad_width,
                preserve_short_sequences=preserve, error=error, dynamic=error)


NGRAMS = [
    _ngrams("bigrams", _WORDS, _i([0, 3, 3, 8]), [2]),
    _ngrams("unigrams_trigrams", _WORDS, _i([0, 3, 3, 8]), [1, 3], separator="|"),
    _ngrams("pad_full", _WORDS, _i([0, 3, 3, 4, 8]), [2, 3], pad_width=-1),
    _ngrams("pad_1_width_3", _WORDS, _i([0, 1, 8]), [3], pad_width=1),
    _ngrams("pad_wider_than_width", _WORDS, _i([0, 2, 8]), [2], pad_width=5),
    _ngrams("int32_splits", _WORDS, _i([0, 5, 8], np.int32), [2, 4], separator=""),
    _ngrams("preserve_short", _WORDS, _i([0, 1, 3, 3, 8]), [4], preserve=True),
    _ngrams("preserve_short_padded", _WORDS, _i([0, 1, 3, 3, 8]), [5], pad_width=1, preserve=True),
    _ngrams("preserve_already_long", _WORDS, _i([0, 8]), [2], preserve=True),
    _ngrams("empty_rows_padded", _WORDS, _i([0, 0, 8, 8]), [2, 3], pad_width=-1),
    _ngrams("no_widths", _WORDS, _i([0, 8]), []),
    _ngrams("empty_data", _s(), _i([0, 0, 0]), [2], pad_width=-1),
    _ngrams("empty_splits", _s(), _i([]), [2]),
    _ngrams("non_ascii_pads", _WORDS, _i([0, 2, 8]), [3], separator="·", left="«", right="»",
            pad_width=2),
    _ngrams("preserve_dynamic_pad", _WORDS, _i([0, 1, 8]), [4], pad_width=-1, preserve=True),
    _ngrams("preserve_no_widths", _WORDS, _i([0, 1, 1, 8]), [], pad_width=1, preserve=True),
    _ngrams("error_preserve_no_widths_dynamic_pad", _WORDS, _i([0, 1, 8]), [], pad_width=-1,
            preserve=True, error=True),
    _ngrams("error_width", _WORDS, _i([0, 8]), [0], error=True),
    _ngrams("error_first_split", _WORDS, _i([1, 8]), [2], error=True),
    _ngrams("error_decreasing", _WORDS, _i([0, 5, 3, 8]), [2], error=True),
    _ngrams("error_past_end", _WORDS, _i([0, 9]), [2], error=True),
    _ngrams("error_last_split", _WORDS, _i([0, 5]), [2], error=True),
]

_GRID = _s(*"abcdefghijklmnopqrstuvwx", shape=(2, 3, 4))


def _join(name, inputs, axes, error=False, **attrs):
    return case("ReduceJoin", name=name, inputs=inputs, reduction_indices=np.array(axes, np.int32),
                error=error, dynamic=error, **attrs)


def _segments(name, inputs, ids, count, error=False, **attrs):
    return case("UnsortedSegmentJoin", name=name, inputs=inputs, segment_ids=ids,
                num_segments=count, error=error, dynamic=error, **attrs)


JOIN = [
    _join("last", _GRID, [-1], separator=","),
    _join("first_keep_dims", _GRID, [0], keep_dims=True, separator="-"),
    _join("two_axes_in_order", _GRID, [0, 2], separator=""),
    _join("two_axes_reversed", _GRID, [2, 0], separator="."),
    _join("all_axes", _GRID, [1, 0, 2]),
    _join("all_keep_dims", _GRID, [0, 1, 2], keep_dims=True, separator=" "),
    _join("no_axes", _GRID, np.zeros((0,), np.int32), separator=","),
    _join("scalar_axis", _GRID, 1, separator=","),
    _join("empty_axis", _s(shape=(2, 0)), [1], separator=","),
    _join("empty_kept", _s(shape=(0, 3)), [1], separator=","),
    _join("scalar_input", _scalar("x"), np.zeros((0,), np.int32)),
    _join("error_axis", _GRID, [3], error=True),
    _join("error_negative_axis", _GRID, [-4], error=True),
    _join("error_duplicate", _GRID, [1, -2], error=True),
    _segments("vector", _s("a", "b", "", "c", "d", "e"), _i([1, 0, 1, 1, 3, 1], np.int32),
              np.array(4, np.int32), separator=","),
    _segments("empty_first", _s("", "a", "b", ""), _i([0, 0, 0, 0]), np.array(2, np.int64),
              separator="+"),
    _segments("matrix_rows", _s("a", "b", "c", "d", "e", "f", shape=(3, 2)), _i([2, 0, 2]),
              np.array(3, np.int32), separator="/"),
    _segments("matrix_elements", _s("a", "b", "c", "d", "e", "f", shape=(3, 2)),
              _i([[0, 1], [1, 0], [0, 0]], np.int32), np.array(2, np.int64)),
    _segments("nul_in_separator", _s("a", "b"), _i([0, 0]), np.array(1, np.int32),
              separator="x\0y"),
    _segments("no_segments", _s(shape=(0, 2)), _i(np.zeros(0)), np.array(0, np.int32)),
    _segments("error_id_too_large", _s("a", "b"), _i([0, 2]), np.array(2, np.int32), error=True),
    _segments("error_negative_id", _s("a", "b"), _i([0, -1]), np.array(2, np.int32), error=True),
    _segments("error_shape", _s("a", "b", "c"), _i([0, 1]), np.array(2, np.int32), error=True),
    _segments("error_negative_count", _s("a", "b"), _i([0, 0]), np.array(-1, np.int32), error=True),
    _segments("error_scalar_ids", _s("a", "b"), np.array(0, np.int32), np.array(2, np.int32),
              error=True),
]

CASES = CASE + HASH + SPLIT + NGRAMS + JOIN

_UTF8 = _s("héllo€", b"a\xffb\xe2\x82c", "", "€", "𝄞x")

SUBSTR = [
    case("Substr", name="utf8_negative_len", input=_UTF8[:1], pos=np.array(1, np.int32),
         len=np.array(-1, np.int32), unit="UTF8_CHAR"),
    case("Substr", name="utf8_invalid_bytes", input=_UTF8[1:2], pos=np.array(1, np.int32),
         len=np.array(3, np.int32), unit="UTF8_CHAR"),
    case("Substr", name="utf8_negative_pos_each", input=_s("héllo€", "€ab", "𝄞x"),
         pos=np.array([-1, -3, -2], np.int64), len=np.array([1, 2, 5], np.int64), unit="UTF8_CHAR"),
    case("Substr", name="utf8_pos_at_end", input=_s("héllo€", "€"),
         pos=np.array([6, -1], np.int32), len=np.array([2, 0], np.int32), unit="UTF8_CHAR"),
    case("Substr", name="utf8_empty_string", input=_s(""), pos=np.array(0, np.int32),
         len=np.array(3, np.int32), unit="UTF8_CHAR"),
    case("Substr", name="byte_negative_len", input=_s("hello", "ab"),
         pos=np.array([-2, 1], np.int32), len=np.array([-5, -1], np.int32)),
    case("Substr", name="scalar_input_matrix_pos", input=_scalar("hello"),
         pos=np.array([[0, 1], [2, 3]], np.int32), len=np.array([[1, 2], [3, 4]], np.int32)),
    case("Substr", name="empty", input=_s(shape=(0, 2)), pos=np.array(0, np.int32),
         len=np.array(1, np.int32)),
    case("Substr", name="broadcast_both", input=_s("abc", "defg", shape=(2, 1)),
         pos=np.array([[0, 1, 2]], np.int32), len=np.array([[1, 1, 5]], np.int32)),
    case("Substr", name="error_utf8_negative_pos", input=_s("héllo€"),
         pos=np.array(-7, np.int32), len=np.array(1, np.int32), unit="UTF8_CHAR", error=True,
         dynamic=True),
    case("StringLength", name="utf8_invalid", input=_UTF8, unit="UTF8_CHAR"),
    case("StringLength", name="empty", input=_s(shape=(3, 0)), unit="UTF8_CHAR"),
]

_WIDE = np.array([1.5, -2.25, 123456.789, 1e-7, np.nan, -np.inf, 0.0], np.float64)

AS_STRING_MORE = [
    case("AsString", name="scientific_width_precision", input=_WIDE, scientific=True, width=14,
         precision=2),
    case("AsString", name="shortest_width_left", input=_WIDE, shortest=True, width=12, fill="-"),
    case("AsString", name="precision_20", input=_WIDE, precision=20),
    case("AsString", name="nan_inf_zero_fill", input=_WIDE, width=10, fill="0"),
    case("AsString", name="narrow_width", input=_WIDE, width=2),
    case("AsString", name="int_space_fill", input=np.array([-5, 5, 0], np.int32), width=4,
         fill=" "),
    case("AsString", name="int64_min_width", input=np.array([-2**63], np.int64), width=25,
         fill="0"),
    case("AsString", name="int8_left", input=np.array([-128, 5], np.int8), width=5, fill="-"),
    case("AsString", name="float16_scientific", input=np.array([1.5, 65504, 6e-8], np.float16),
         scientific=True),
    case("AsString", name="complex128_shortest_width", input=np.array([1 + 2j, np.nan - 1j]),
         shortest=True, width=5),
    case("AsString", name="empty", input=np.zeros((0, 2), np.float32)),
    case("AsString", name="string_zero_fill", input=_s("ab"), width=4, fill="0"),
    case("AsString", name="bool_matrix", input=np.array([[True], [False]])),
]

STRING_TO_NUMBER_MORE = [
    case("StringToNumber", name="float32_edges", out_type=np.float32,
         string_tensor=_s("1e-45", "1e-46", "3.4028235e38", "3.4028236e38", "-1e39", "4.9e-324",
                          "0X1P-2", "  -.5e1  ", "+.5", "1.e2", "00012", "\v7\f", "+inf", "-Inf",
                          "nan", "+NAN", "infinity", "-INFINITY", "nan(1)", "-nan(abc_9)",
                          "NaN()")),
    case("StringToNumber", name="float64_edges", out_type=np.float64,
         string_tensor=_s("4.9e-324", "2e-324", "1.7976931348623157e308", "1.8e308", "0x1.fffp3",
                          "123456789012345678901234567890", "-0.0", "1e+0010")),
    case("StringToNumber", name="int64_edges", out_type=np.int64,
         string_tensor=_s("-0", "+0", "0009223372036854775807", " \t-42\n")),
    case("StringToNumber", name="empty", out_type=np.int32, string_tensor=_s(shape=(0,))),
    *[case("StringToNumber", name=f"error_float_more_{i}", out_type=np.float32, error=True,
           dynamic=True, string_tensor=_s(text))
      for i, text in enumerate(["nan(", "nan(1 2)", ".", "+", "-", " ", "0x", "1e+", "1.5f", "1 2",
                                "inf5", "\x00", "1\x00", "0x1p", "e5", "infinit"])],
    *[case("StringToNumber", name=f"error_int_more_{i}", out_type=np.int64, error=True,
           dynamic=True, string_tensor=_s(text))
      for i, text in enumerate(["+-1", "- 1", "1 2", "0x10", "", " ", "9223372036854775808",
                                "-9223372036854775809", "1e2", "\x00"])],
]

CASES += SUBSTR + AS_STRING_MORE + STRING_TO_NUMBER_MORE

_RE_TEXT = _s("a1٣ é_b\x0bc\n", "x\n", "AbC", "aaa", "a+b", "Ωω k K", "a{,2} a{2 {", "[]-^\\")
_RE_ASCII = _s("ab c_d\n", "x\n", "", "a+b", " a ")
_RE2_PATTERNS = [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", r"[\d]", r"[\w-]", r"[\s]", r"[\S]",
                 r"[^\s]", r"[^\D]", r"\Qa+b\E", r"\Qa+", r"\x{41}", r"(?i)\x{61}", r"(?P<n>a)",
                 r"[[:alpha:]]", r"[[:^alpha:]]", r"[[:digit:][:space:]]", r"[[:punct:]]+",
                 r"\101", r"\12", r"\0", r"\x41", r"\v", r"(?s).", r".", r"\_", r"\-", r"\%",
                 r"a{,2}", r"a{2", r"[]a]", r"[^]a]", r"(?i:a)b", r"(?i)ω", r"(?i)k", r"(?U)a+",
                 r"(?U)a+?", r"(?U:a{1,2})a", r"a(?i)b|c", r"(a)(?i)(b|c)|A", r"a{2,1000}", r"\pL",
                 r"\p{Lu}", r"\PL+", r"\p{^L}", r"[\p{Ll}\d]", r"\pN", r"[^\pL\pN\s]", r"\p{Any}",
                 r"(?-s:.)", r"(?sm:^.)", r"\{", r"}", r"a|", r"|", r"()", r"(a|b)+", r"\[\]",
                 r"[\x{3a9}-\x{3c9}]", r"[a\-z]", r"[-a]", r"[a-]", r"[\]]", r"a(?)b", r"(?i)"]
_RE2_EMPTY_MATCHING = [r"\b", r"\B", r"$", r"a$", r"x$", r"\z", r"\A", r"\Ax", r"(?m)$", r"(?m)^",
                       r"^", r"(?m:x$)\n", r"(?m)x$|b$", r"c_d$|(?m)x$"]
_RE2_REJECTED = [r"\Z", r"(?<n>a)", r"\1", r"(a)\1", r"\8", r"(?=a)", r"(?!a)", r"(?<=a)",
                 r"(?<!a)", r"a{1001}", r"a{2,1}", r"a++", r"a*+", r"a**", r"(?>a)", r"(?#c)",
                 r"(?x) a", r"\e", r"[a-\d]", r"\x{110000}", r"\cA", r"\N{LATIN SMALL LETTER A}",
                 r"\u0041", r"\U00000041", r"(?P=n)", r"[\b]", r"*a", r"(a", r"a)", r"[a",
                 r"[z-a]", r"(?i-)a", r"\p{Foo}", r"[[:foo:]]", r"\pX", r"x{2}{3}"]

_RE_INVALID = _s(b"a\xffb", b"\xe2\x82", b"\xc3\xa9\xff", b"\xff", b"\xed\xa0\x80x")
_RE2_INVALID_BYTES = [".", "[^a]", r"\W", "a.b", ".*", "[^a]+", r"\S", r"\pL", "[\x80-\xff]",
                      "(?s).", r"\PL", "[[:^alpha:]]", r"[^\pL]", "x*"]

_RE_WIDE = _s("1٣", "٣٣x", "aé", "é", "€𝄞", "", "a\xffé", "x٣y")
_RE2_INSIDE_CHARACTERS = [r"\B", "x*", "a|", r"\b", "(?:)", "$", "^", r"\B|é", "(?m)$", r"\B\B",
                          r"(x*)\B", "é*", r"[^a]*"]

RE2 = [
    *[case("StaticRegexReplace", name=f"re2_inside_{i}", input=_RE_WIDE, pattern=p,
           rewrite="<\\0>") for i, p in enumerate(_RE2_INSIDE_CHARACTERS)],
    *[case("StaticRegexReplace", name=f"re2_inside_first_{i}", input=_RE_WIDE, pattern=p,
           rewrite="<>", replace_global=False) for i, p in enumerate(_RE2_INSIDE_CHARACTERS)],
    case("RegexReplace", name="re2_inside_groups", input=_RE_WIDE, pattern=_scalar(r"(x*)\B(y?)"),
         rewrite=_scalar("[\\1|\\2]")),
    *[case("StaticRegexReplace", name=f"re2_invalid_bytes_{i}", input=_RE_INVALID, pattern=p,
           rewrite="<>") for i, p in enumerate(_RE2_INVALID_BYTES)],
    *[case("StaticRegexReplace", name=f"re2_{i}", input=_RE_TEXT, pattern=p, rewrite="<>")
      for i, p in enumerate(_RE2_PATTERNS)],
    *[case("StaticRegexReplace", name=f"re2_empty_{i}", input=_RE_ASCII, pattern=p, rewrite="<>")
      for i, p in enumerate(_RE2_EMPTY_MATCHING)],
    *[case("StaticRegexReplace", name=f"error_re2_{i}", input=_RE_ASCII, pattern=p, rewrite="",
           error=True, dynamic=True) for i, p in enumerate(_RE2_REJECTED)],
    case("RegexFullMatch", name="re2_ascii_classes", input=_s("٣", "3", "é", "e", "\x0b", " "),
         pattern=_scalar(r"\d|\w|\s")),
    case("RegexFullMatch", name="re2_dollar_newline", input=_s("ab", "ab\n"),
         pattern=_scalar("ab$")),
    case("StaticRegexFullMatch", name="re2_posix", input=_s("a", "٣", "\x0b", "_"),
         pattern=r"[[:alnum:][:space:]]"),
]

CASES += RE2
