"""Kernel cases for elementwise math, comparisons, logic, bits, Cast, selection and products.

Generated per op and dtype: typical values, broadcasting, scalars, empty tensors, the special
floats (NaN, infinities, signed zero) and the run-time errors TensorFlow raises.
"""
import ml_dtypes
import numpy as np
import tensorflow as tf

RNG = np.random.default_rng(7)
BF16 = ml_dtypes.bfloat16
HALF = (np.float16, BF16)
FLOATS = (np.float32, np.float64, np.float16, BF16)
COMPLEX = (np.complex64, np.complex128)
SIGNED = (np.int8, np.int16, np.int32, np.int64)
UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5]


def name_of(dtype) -> str:
    return np.dtype(dtype).name


def sample(dtype, shape, low=-6.0, high=6.0, nonzero=False):
    """Random values of `dtype` in [low, high]; floats on a grid of 1/64 so that half types
    hold them exactly."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = RNG.integers(0, 2, shape).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = RNG.integers(max(int(low), info.min), min(int(high), info.max) + 1, shape)
    elif dtype.kind == "c":
        values = (np.round(RNG.uniform(low, high, shape) * 64) / 64
                  + 1j * np.round(RNG.uniform(low, high, shape) * 64) / 64)
    else:
        values = np.round(RNG.uniform(low, high, shape) * 64) / 64
    if nonzero:
        values = np.where(values == 0, 1, values)
    return np.asarray(values).astype(dtype)


def binary(op, dtypes, low=-6.0, high=6.0, nonzero=False, left="x", right="y"):
    """Typical cases per dtype, then broadcasting, scalars, empty and mismatched shapes."""
    found = []
    for dtype in dtypes:
        found.append(case(op, name=name_of(dtype), **{
            left: sample(dtype, (2, 3), low, high),
            right: sample(dtype, (2, 3), low, high, nonzero)}))
    first = dtypes[0]
    found += [
        case(op, name="broadcast_row", **{left: sample(first, (2, 3), low, high),
                                          right: sample(first, (3,), low, high, nonzero)}),
        case(op, name="broadcast_outer", **{left: sample(first, (2, 1), low, high),
                                            right: sample(first, (1, 1, 3), low, high, nonzero)}),
        case(op, name="scalars", **{left: sample(first, (), low, high),
                                    right: sample(first, (), low, high, nonzero)}),
        case(op, name="scalar_vector", **{left: sample(first, (), low, high),
                                          right: sample(first, (4,), low, high, nonzero)}),
        case(op, name="empty", **{left: sample(first, (0, 3), low, high),
                                  right: sample(first, (3,), low, high, nonzero)}),
        case(op, name="incompatible", error=True, dynamic=True,
             **{left: sample(first, (3,), low, high), right: sample(first, (2,), low, high,
                                                                       nonzero)}),
    ]
    return found


def float_specials(op, dtype=np.float32, left="x", right="y"):
    """Every pairing of the special values."""
    x, y = np.meshgrid(np.array(SPECIAL), np.array(SPECIAL))
    return [case(op, name="special", **{left: x.astype(dtype), right: y.astype(dtype)})]


def unary(op, dtypes, low=-3.0, high=3.0, specials=True, arg="x", **attrs):
    found = [case(op, name=name_of(d), **{arg: sample(d, (2, 3), low, high)}, **attrs)
             for d in dtypes]
    first = dtypes[0]
    found += [case(op, name="scalar", **{arg: sample(first, (), low, high)}, **attrs),
              case(op, name="empty", **{arg: sample(first, (0, 2), low, high)}, **attrs)]
    if specials:
        found.append(case(op, name="special", **{arg: np.array(SPECIAL, first)}, **attrs))
    return found


def integers(values, dtype=np.int32):
    return np.array(values, dtype)


# Signed integer division: every sign combination, and a remainder of zero.
DIVIDENDS = integers([7, -7, 7, -7, 6, -6, 0, 1, -1])
DIVISORS = integers([2, 2, -2, -2, 3, -3, 5, -5, 5])
FLOAT_DIVIDENDS = np.array([7.5, -7.5, 7.5, -7.5, 6.0, -6.0, 0.0, 1.0, -1.0, 1.0, 5.0, -5.0],
                           np.float32)
FLOAT_DIVISORS = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 5.0, 0.1, 0.0, np.inf, np.inf,
                           np.inf], np.float32)
INT_MIN = np.array([np.iinfo(np.int32).min], np.int32)
MINUS_ONE = np.array([-1], np.int32)


def division(op, dtypes, int_zero_error=True, small_types=True):
    """`int_zero_error`: TensorFlow's InvalidArgument for integer division by zero (TruncateDiv
    and TruncateMod raise InternalError instead, which the recorder does not accept)."""
    found = binary(op, dtypes, nonzero=True)
    found.append(case(op, name="signs", x=DIVIDENDS, y=DIVISORS))
    found.append(case(op, name="signs_int64", x=DIVIDENDS.astype(np.int64),
                      y=DIVISORS.astype(np.int64)))
    found.append(case(op, name="int_min_by_minus_one", x=INT_MIN, y=MINUS_ONE))
    found.append(case(op, name="float_signs", x=FLOAT_DIVIDENDS, y=FLOAT_DIVISORS))
    found.append(case(op, name="float64_signs", x=FLOAT_DIVIDENDS.astype(np.float64),
                      y=FLOAT_DIVISORS.astype(np.float64)))
    if small_types:
        found.append(case(op, name="signs_int8", x=DIVIDENDS.astype(np.int8),
                          y=DIVISORS.astype(np.int8)))
        found.append(case(op, name="half_signs", x=FLOAT_DIVIDENDS.astype(np.float16),
                          y=FLOAT_DIVISORS.astype(np.float16)))
    if int_zero_error:
        found.append(case(op, name="int_by_zero", error=True, x=integers([4, 1]),
                          y=integers([2, 0])))
        found.append(case(op, name="uint8_by_zero", error=True, x=integers([4], np.uint8),
                          y=integers([0], np.uint8)))
    return found


ALL_REAL = FLOATS + (np.uint8, np.int8, np.int16, np.int32, np.int64)
ARITHMETIC = ALL_REAL + COMPLEX

CASES = [
    *binary("Add", ARITHMETIC),
    case("Add", name="string", x=np.array([b"ab", b""], dtype=object),
         y=np.array(b"c", dtype=object)),
    case("Add", name="int8_wraps", x=integers([100, -100], np.int8),
         y=integers([100, -100], np.int8)),
    *float_specials("Add"),
    *binary("AddV2", ARITHMETIC + UNSIGNED[1:]),
    case("AddV2", name="uint8_wraps", x=integers([250], np.uint8), y=integers([10], np.uint8)),
    *binary("Sub", ARITHMETIC + UNSIGNED[1:]),
    case("Sub", name="uint8_wraps", x=integers([1], np.uint8), y=integers([2], np.uint8)),
    *float_specials("Sub"),
    *binary("Mul", ARITHMETIC + UNSIGNED[1:]),
    case("Mul", name="int16_wraps", x=integers([300], np.int16), y=integers([300], np.int16)),
    *float_specials("Mul"),
    *division("Div", FLOATS + COMPLEX + (np.uint8, np.int8, np.int16, np.int32, np.int64)),
    *float_specials("Div"),
    *binary("RealDiv", FLOATS + COMPLEX, nonzero=True),
    *float_specials("RealDiv"),
    *division("FloorDiv", FLOATS + (np.uint8, np.int8, np.int16, np.int32, np.int64)),
    *float_specials("FloorDiv"),
    *division("FloorMod", FLOATS + (np.int8, np.int16, np.int32, np.int64)),
    *float_specials("FloorMod"),
    *division("TruncateDiv", FLOATS + (np.uint8, np.int8, np.int16, np.int32, np.int64),
              int_zero_error=False),
    *float_specials("TruncateDiv"),
    *division("TruncateMod", (np.float32, np.float64, np.int32, np.int64),
              int_zero_error=False, small_types=False),
    *float_specials("TruncateMod"),
    *[c for c in division("Mod", (np.float32, np.float64, np.int32, np.int64), small_types=False)
      if c["name"] != "uint8_by_zero"],
    *float_specials("Mod"),
    *binary("DivNoNan", FLOATS + COMPLEX),
    case("DivNoNan", name="zeros", x=np.array([1.0, np.nan, np.inf, 0.0, 2.0], np.float32),
         y=np.array([0.0, 0.0, 0.0, 0.0, np.nan], np.float32)),
    *binary("Pow", (np.float32, np.float64, np.float16, BF16), low=0.25, high=3.0),
    case("Pow", name="int32", x=integers([2, -3, 0, 5, 1, -1, 0]),
         y=integers([10, 3, 0, 2, 7, 5, 3])),
    case("Pow", name="int8_wraps", x=integers([3, -2, 2], np.int8),
         y=integers([5, 3, 7], np.int8)),
    case("Pow", name="int64", x=integers([3, -7], np.int64), y=integers([30, 11], np.int64)),
    case("Pow", name="float_negative_base", x=np.array([-8.0, -2.0, -2.0, 0.0, 0.0], np.float32),
         y=np.array([1 / 3, 2.0, -1.0, -1.0, 0.0], np.float32)),
    case("Pow", name="complex64", x=np.array([1 + 1j, 2 - 1j], np.complex64),
         y=np.array([2, 0.5 + 1j], np.complex64)),
    case("Pow", name="complex_zero_base", x=np.array([0j, 0j, 0j, 1 + 0j], np.complex64),
         y=np.array([0, 2, 1j, 0], np.complex64)),
    case("Pow", name="int_negative_exponent", error=True, x=integers([2, 1]),
         y=integers([2, -1])),
    *float_specials("Pow"),
    *binary("Maximum", FLOATS + SIGNED + UNSIGNED),
    *float_specials("Maximum"),
    *binary("Minimum", FLOATS + SIGNED + UNSIGNED),
    *float_specials("Minimum"),
    *binary("SquaredDifference", FLOATS + (np.int32, np.int64) + COMPLEX),
    *binary("Atan2", FLOATS, left="y", right="x"),
    *float_specials("Atan2", left="y", right="x"),
    # Unary math.
    *unary("Neg", FLOATS + SIGNED + COMPLEX),
    case("Neg", name="int8_min", x=integers([-128, 127], np.int8)),
    *unary("Abs", FLOATS + SIGNED),
    case("Abs", name="int8_min", x=integers([-128, -3], np.int8)),
    *unary("Sign", FLOATS + SIGNED + COMPLEX),
    case("Sign", name="complex_zero", x=np.array([3 + 4j, 0j, -2j], np.complex128)),
    *unary("Square", FLOATS + SIGNED + (np.uint8,) + COMPLEX),
    case("Square", name="int8_wraps", x=integers([20, -12], np.int8)),
    *unary("Sqrt", FLOATS + COMPLEX, low=0.0, high=9.0),
    case("Sqrt", name="negative", x=np.array([-4.0, -0.0], np.float32)),
    *unary("Rsqrt", FLOATS + COMPLEX, low=0.1, high=9.0),
    *unary("Reciprocal", FLOATS + COMPLEX),
    *unary("Inv", FLOATS + COMPLEX),
    *unary("Exp", FLOATS + COMPLEX),
    case("Exp", name="overflow", x=np.array([89.0, -104.0, 700.0], np.float32)),
    *unary("Expm1", FLOATS + COMPLEX),
    case("Expm1", name="tiny", x=np.array([1e-10, -1e-7], np.float32)),
    *unary("Log", FLOATS + COMPLEX, low=0.05, high=9.0),
    *unary("Log1p", FLOATS + COMPLEX, low=-0.9, high=9.0),
    case("Log1p", name="tiny", x=np.array([1e-10, -1e-7, -1.0, -2.0], np.float32)),
    *unary("Sin", FLOATS + COMPLEX),
    *unary("Cos", FLOATS + COMPLEX),
    *unary("Tan", FLOATS + COMPLEX, low=-1.2, high=1.2),
    *unary("Asin", FLOATS + COMPLEX, low=-1.0, high=1.0),
    *unary("Acos", FLOATS + COMPLEX, low=-1.0, high=1.0),
    *unary("Atan", FLOATS + COMPLEX),
    *unary("Sinh", FLOATS + COMPLEX),
    *unary("Cosh", FLOATS + COMPLEX),
    *unary("Tanh", FLOATS + COMPLEX),
    case("Tanh", name="saturates", x=np.array([20.0, -20.0, 1e-8], np.float32)),
    *unary("Asinh", FLOATS + COMPLEX),
    *unary("Acosh", FLOATS + COMPLEX, low=1.0, high=6.0),
    *unary("Atanh", FLOATS + COMPLEX, low=-0.95, high=0.95),
    *unary("Erf", FLOATS),
    case("Erf", name="range", x=np.linspace(-7, 7, 57).astype(np.float32)),
    case("Erf", name="range_float64", x=np.r_[np.linspace(-30, 30, 241), 1e-300, -1e-20]),
    *unary("Erfc", FLOATS),
    case("Erfc", name="range", x=np.linspace(-7, 9, 65).astype(np.float32)),
    case("Erfc", name="range_float64", x=np.r_[np.linspace(-10, 26, 145), 1e-300]),
    *unary("Floor", FLOATS, low=-3.0, high=3.0),
    *unary("Ceil", FLOATS),
    *unary("Round", FLOATS),
    case("Round", name="halves", x=np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, 1e8 + 0.5],
                                            np.float64)),
    case("Round", name="halves_float32", x=np.arange(-4.5, 5, 1.0).astype(np.float32)),
    case("Round", name="halves_float16", x=np.arange(-4.5, 5, 1.0).astype(np.float16)),
    *unary("Rint", (np.float32, np.float64)),
    case("Rint", name="halves", x=np.arange(-4.5, 5, 1.0).astype(np.float32)),
    *unary("IsNan", FLOATS),
    *unary("IsInf", FLOATS),
    *unary("IsFinite", FLOATS),
    # Comparisons.
    *binary("Equal", FLOATS + SIGNED + UNSIGNED + COMPLEX + (np.bool_,), low=-2, high=2),
    case("Equal", name="string", x=np.array([b"a", b"b", b""], dtype=object),
         y=np.array(b"a", dtype=object)),
    *float_specials("Equal"),
    case("Equal", name="incompatible_allowed", x=integers([1, 2, 3]), y=integers([1, 2]),
         incompatible_shape_error=False),
    case("Equal", name="incompatible_allowed_2d", x=sample(np.float32, (2, 3)),
         y=sample(np.float32, (4, 1, 2)), incompatible_shape_error=False),
    case("Equal", name="compatible_allowed", x=integers([1, 2]), y=integers([[1], [2]]),
         incompatible_shape_error=False),
    *binary("NotEqual", FLOATS + SIGNED + UNSIGNED + COMPLEX + (np.bool_,), low=-2, high=2),
    *float_specials("NotEqual"),
    case("NotEqual", name="incompatible_allowed", x=integers([1, 2, 3]), y=integers([1, 2]),
         incompatible_shape_error=False),
    *binary("Less", FLOATS + SIGNED + UNSIGNED, low=-2, high=2),
    *float_specials("Less"),
    *binary("LessEqual", FLOATS + SIGNED + UNSIGNED, low=-2, high=2),
    *float_specials("LessEqual"),
    *binary("Greater", FLOATS + SIGNED + UNSIGNED, low=-2, high=2),
    *float_specials("Greater"),
    *binary("GreaterEqual", FLOATS + SIGNED + UNSIGNED, low=-2, high=2),
    *float_specials("GreaterEqual"),
    # Logic and bits.
    *binary("LogicalAnd", (np.bool_,)),
    *binary("LogicalOr", (np.bool_,)),
    *unary("LogicalNot", (np.bool_,), specials=False),
    *binary("BitwiseAnd", SIGNED + UNSIGNED, low=-300, high=300),
    *binary("BitwiseOr", SIGNED + UNSIGNED, low=-300, high=300),
    *binary("BitwiseXor", SIGNED + UNSIGNED, low=-300, high=300),
    *unary("Invert", SIGNED + UNSIGNED, specials=False, low=-300, high=300),
    *binary("LeftShift", SIGNED + UNSIGNED, low=0, high=7),
    case("LeftShift", name="out_of_range", x=integers([1, 1, 1, -1, 5, 3]),
         y=integers([31, 32, -1, 3, 40, 100])),
    case("LeftShift", name="int8_out_of_range", x=integers([1, 3, 1, -1], np.int8),
         y=integers([7, 7, 9, 8], np.int8)),
    case("LeftShift", name="uint64_top_bit", x=integers([1, 3], np.uint64),
         y=integers([63, 64], np.uint64)),
    *binary("RightShift", SIGNED + UNSIGNED, low=0, high=7),
    case("RightShift", name="out_of_range", x=integers([-8, -8, 8, 8, -1]),
         y=integers([1, 40, -1, 33, 31])),
    case("RightShift", name="uint8_out_of_range", x=integers([200, 200], np.uint8),
         y=integers([7, 9], np.uint8)),
]

# Cast: every pairing of a representative set of types, plus the conversions with surprises.
CAST_TYPES = (np.float32, np.float64, np.float16, BF16, np.int8, np.int16, np.int32, np.int64,
              np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128)
CAST_SOURCE = {
    np.dtype(np.bool_): np.array([True, False, True]),
    **{np.dtype(t): np.array([0.0, 1.5, -2.75, 100.25, -0.5], t) for t in FLOATS},
    **{np.dtype(t): np.array([0, 1.5 - 2j, -2.75 + 1j, 1j], t) for t in COMPLEX},
    **{np.dtype(t): np.array([0, 1, 100, 7], t) for t in UNSIGNED},
    **{np.dtype(t): np.array([0, -1, 100, -7], t) for t in SIGNED},
}
IN_UNSIGNED_RANGE = {  # float sources for unsigned targets: see the out-of-range cases below
    **{np.dtype(t): np.array([0.0, 1.5, 2.75, 100.25, 0.5], t) for t in FLOATS},
    **{np.dtype(t): np.array([0, 1.5 - 2j, 2.75 + 1j, 1j], t) for t in COMPLEX},
}
for source in CAST_TYPES:
    for target in CAST_TYPES:
        values = CAST_SOURCE[np.dtype(source)]
        if np.dtype(target).kind == "u":
            values = IN_UNSIGNED_RANGE.get(np.dtype(source), values)
        CASES.append(case("Cast", name=f"{name_of(source)}_to_{name_of(target)}",
                          x=values, DstT=tf.as_dtype(target)))

OUT_OF_RANGE = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 5e19, -5e19, 2.7, -2.7, 300.0,
                         -300.0, 127.5, -128.9, 65535.9, 65536.0, 1e5, -1e5, 4294967296.5,
                         2147483647.0, -2147483648.0, 1.8e19, 9.3e18, 255.9, 256.0, -0.9,
                         32767.5, -32768.9, 40000.0, -40000.0, 1e9, -1e9, 0.5], np.float64)
# TensorFlow's result for NaN, infinities and out-of-range values depends on whether an element
# falls in Eigen's vectorised body (which saturates) or its scalar tail (which wraps, for 8-,
# 16- and unsigned 32-bit targets). The kernel implements the vectorised body, which is what
# all but the last few elements of a tensor get, so these inputs are 128 elements long, a
# multiple of every packet size.
for target in SIGNED + UNSIGNED:
    for source in FLOATS:
        with np.errstate(all="ignore"):
            values = np.tile(OUT_OF_RANGE, 4).astype(source)
        CASES.append(case("Cast", name=f"{name_of(source)}_out_of_range_to_{name_of(target)}",
                          x=values, DstT=tf.as_dtype(target)))

TRUNCATABLE = np.array([1.00098, 1.0009766, 1.0014648, 65519.0, 65535.0, 70000.0, 1e-6, 3e-5,
                        1.0078125, 1.01171875, 3.0e38, -1.0014648, np.nan, -np.inf, 1e-40,
                        0.1, -0.3], np.float64)
for source, target in [(np.float32, np.float16), (np.float32, BF16), (np.float64, np.float32),
                       (np.float64, np.float16), (np.float64, BF16)]:
    for truncate in (True, False):
        with np.errstate(over="ignore"):
            values = TRUNCATABLE.astype(source)
        CASES.append(case("Cast", name=f"{name_of(source)}_to_{name_of(target)}_truncate_"
                          f"{truncate}", x=values, DstT=tf.as_dtype(target), Truncate=truncate))
CASES += [
    case("Cast", name="complex128_to_complex64_truncate",
         x=np.array([1.0000001 + 1.0000001j, -3.3 + 0.1j], np.complex128), DstT=tf.complex64,
         Truncate=True),
    case("Cast", name="complex_to_bool_real_part",
         x=np.array([0j, 1j, 1 + 0j, -0.0 + 2j], np.complex64), DstT=tf.bool),
    case("Cast", name="float_to_bool", x=np.array([np.nan, 0.0, -0.0, 0.1, -np.inf], np.float32),
         DstT=tf.bool),
    case("Cast", name="int_wraps", x=integers([300, -1, 65536, 128]), DstT=tf.uint8),
    case("Cast", name="int_to_bfloat16", x=integers([257, 2**31 - 1, -259, 16777217]),
         DstT=tf.bfloat16),
    case("Cast", name="int64_rounding_to_float32",
         x=np.array([2**63 - 1, 2**24 + 1, -(2**53) - 1], np.int64), DstT=tf.float32),
    case("Cast", name="uint64_rounding_to_float32",
         x=np.array([2**64 - 1, 2**63 + 2**40], np.uint64), DstT=tf.float32),
    case("Cast", name="bfloat16_range_to_float16", x=np.array([1.0078125, 3e38, 1e-8, -2.5], BF16),
         DstT=tf.float16),
    case("Cast", name="scalar", x=np.array(3.75, np.float32), DstT=tf.int32),
    case("Cast", name="empty", x=np.zeros((0, 2), np.float32), DstT=tf.int64),
    case("Cast", name="to_string", error=True, x=np.array([1.0], np.float32), DstT=tf.string),
]

# Selection, clipping, sums of lists.
CONDITION = np.array([[True, False, True], [False, False, True]])
CASES += [
    case("Select", name="elementwise", condition=CONDITION, x=sample(np.float32, (2, 3)),
         y=sample(np.float32, (2, 3))),
    case("Select", name="rows", condition=np.array([True, False]), x=sample(np.int32, (2, 3)),
         y=sample(np.int32, (2, 3))),
    case("Select", name="rows_rank3", condition=np.array([False, True, True]),
         x=sample(np.float64, (3, 2, 2)), y=sample(np.float64, (3, 2, 2))),
    case("Select", name="vectors", condition=np.array([True, False]),
         x=sample(np.float32, (2,)), y=sample(np.float32, (2,))),
    case("Select", name="scalar_condition", condition=np.array(False),
         x=sample(np.float32, (2, 3)), y=sample(np.float32, (2, 3))),
    case("Select", name="scalars", condition=np.array(True), x=np.array(1.5, np.float16),
         y=np.array(-2.0, np.float16)),
    case("Select", name="strings", condition=np.array([True, False]),
         x=np.array([b"a", b"b"], dtype=object), y=np.array([b"c", b"d"], dtype=object)),
    case("Select", name="empty", condition=np.zeros((0,), bool), x=sample(np.float32, (0, 3)),
         y=sample(np.float32, (0, 3))),
    case("Select", name="rows_mismatch", error=True, dynamic=True,
         condition=np.array([True, False, True]), x=sample(np.float32, (2, 3)),
         y=sample(np.float32, (2, 3))),
    case("Select", name="condition_shape", error=True, dynamic=True,
         condition=np.array([[True], [False]]), x=sample(np.float32, (2, 3)),
         y=sample(np.float32, (2, 3))),
    case("Select", name="branch_shapes", error=True, dynamic=True,
         condition=np.array([True, False]), x=sample(np.float32, (2, 3)),
         y=sample(np.float32, (1, 3))),
    case("SelectV2", name="elementwise", condition=CONDITION, t=sample(np.float32, (2, 3)),
         e=sample(np.float32, (2, 3))),
    case("SelectV2", name="broadcast", condition=np.array([[True], [False]]),
         t=sample(np.int64, (1, 3)), e=np.array(-1, np.int64)),
    case("SelectV2", name="broadcast_condition_row", condition=np.array([True, False, True]),
         t=sample(np.float16, (2, 3)), e=sample(np.float16, (2, 3))),
    case("SelectV2", name="scalars", condition=np.array(False), t=np.array(1, np.uint8),
         e=np.array(2, np.uint8)),
    case("SelectV2", name="bool", condition=CONDITION, t=sample(np.bool_, (2, 3)),
         e=sample(np.bool_, (2, 3))),
    case("SelectV2", name="empty", condition=np.zeros((0, 1), bool), t=sample(np.float32, (3,)),
         e=sample(np.float32, (0, 3))),
    case("SelectV2", name="incompatible", error=True, dynamic=True, condition=CONDITION,
         t=sample(np.float32, (2,)), e=sample(np.float32, (2, 3))),
    case("ClipByValue", name="scalars", t=sample(np.float32, (2, 3)),
         clip_value_min=np.array(-1.0, np.float32), clip_value_max=np.array(2.0, np.float32)),
    case("ClipByValue", name="tensors", t=sample(np.float64, (2, 3)),
         clip_value_min=sample(np.float64, (2, 3), -3, 0),
         clip_value_max=sample(np.float64, (2, 3), 0, 3)),
    case("ClipByValue", name="int32", t=sample(np.int32, (5,), -9, 9),
         clip_value_min=np.array(-2, np.int32), clip_value_max=np.array(4, np.int32)),
    case("ClipByValue", name="int8", t=sample(np.int8, (5,), -9, 9),
         clip_value_min=np.array(-2, np.int8), clip_value_max=sample(np.int8, (5,), 0, 5)),
    case("ClipByValue", name="float16", t=sample(np.float16, (5,)),
         clip_value_min=np.array(-1, np.float16), clip_value_max=np.array(1, np.float16)),
    case("ClipByValue", name="bfloat16", t=sample(BF16, (5,)),
         clip_value_min=np.array(-1, BF16), clip_value_max=np.array(1, BF16)),
    case("ClipByValue", name="nan_input", t=np.array([np.nan, 1.0, 5.0], np.float32),
         clip_value_min=np.array(0.0, np.float32), clip_value_max=np.array(3.0, np.float32)),
    case("ClipByValue", name="min_above_max", t=np.array([0.0, 1.0, 5.0], np.float32),
         clip_value_min=np.array(3.0, np.float32), clip_value_max=np.array(2.0, np.float32)),
    case("ClipByValue", name="nan_min", t=np.array([0.0, 1.0, 5.0], np.float32),
         clip_value_min=np.array(np.nan, np.float32), clip_value_max=np.array(2.0, np.float32)),
    case("ClipByValue", name="nan_max", t=np.array([0.0, 1.0, 5.0], np.float32),
         clip_value_min=np.array(0.0, np.float32), clip_value_max=np.array(np.nan, np.float32)),
    case("ClipByValue", name="scalar", t=np.array(7, np.int64),
         clip_value_min=np.array(0, np.int64), clip_value_max=np.array(5, np.int64)),
    case("ClipByValue", name="empty", t=np.zeros((0, 3), np.float32),
         clip_value_min=np.array(0, np.float32), clip_value_max=np.array(1, np.float32)),
    case("ClipByValue", name="bound_shape", error=True, dynamic=True,
         t=sample(np.float32, (3,)), clip_value_min=sample(np.float32, (3,)),
         clip_value_max=sample(np.float32, (1,))),
    *[case("AddN", name=name_of(d), inputs=[sample(d, (2, 3)) for _ in range(3)])
      for d in FLOATS + (np.int8, np.int32, np.int64, np.uint8) + COMPLEX],
    case("AddN", name="one", inputs=[sample(np.float32, (4,))]),
    case("AddN", name="scalars", inputs=[sample(np.float32, ()), sample(np.float32, ())]),
    case("AddN", name="empty", inputs=[sample(np.float32, (0, 2)), sample(np.float32, (0, 2))]),
    case("AddN", name="int8_wraps", inputs=[integers([100], np.int8)] * 3),
    case("AddN", name="shapes", error=True, dynamic=True,
         inputs=[sample(np.float32, (2, 3)), sample(np.float32, (3, 3))]),
]

# Bias and matrix products.
CASES += [
    case("BiasAdd", name="nhwc", value=sample(np.float32, (2, 2, 2, 3)),
         bias=sample(np.float32, (3,))),
    case("BiasAdd", name="nchw", value=sample(np.float32, (2, 3, 2, 2)),
         bias=sample(np.float32, (3,)), data_format="NCHW"),
    case("BiasAdd", name="nchw_rank3", value=sample(np.float64, (2, 3, 4)),
         bias=sample(np.float64, (3,)), data_format="NCHW"),
    case("BiasAdd", name="matrix", value=sample(np.float64, (4, 2)),
         bias=sample(np.float64, (2,))),
    case("BiasAdd", name="float16", value=sample(np.float16, (2, 5)),
         bias=sample(np.float16, (5,))),
    case("BiasAdd", name="bfloat16", value=sample(BF16, (2, 5)), bias=sample(BF16, (5,))),
    case("BiasAdd", name="int32", value=sample(np.int32, (2, 5)), bias=sample(np.int32, (5,))),
    case("BiasAdd", name="int8", value=integers([[100, -100]], np.int8),
         bias=integers([100, -100], np.int8)),
    case("BiasAdd", name="complex64", value=sample(np.complex64, (2, 2)),
         bias=sample(np.complex64, (2,))),
    case("BiasAddV1", name="float32", value=sample(np.float32, (2, 2, 3)),
         bias=sample(np.float32, (3,))),
    case("BiasAdd", name="empty", value=sample(np.float32, (0, 3)),
         bias=sample(np.float32, (3,))),
    case("BiasAdd", name="bias_size", error=True, dynamic=True,
         value=sample(np.float32, (2, 3)), bias=sample(np.float32, (2,))),
    case("BiasAdd", name="nchw_bias_size", error=True, dynamic=True, data_format="NCHW",
         value=sample(np.float32, (2, 3, 4)), bias=sample(np.float32, (4,))),
]
for dtype in (np.float32, np.float64, np.float16, BF16, np.int32, np.int64) + COMPLEX:
    CASES.append(case("MatMul", name=name_of(dtype), a=sample(dtype, (2, 3), -3, 3),
                      b=sample(dtype, (3, 4), -3, 3)))
CASES += [
    case("MatMul", name="transpose_a", a=sample(np.float32, (3, 2)), b=sample(np.float32, (3, 4)),
         transpose_a=True),
    case("MatMul", name="transpose_b", a=sample(np.float32, (2, 3)), b=sample(np.float32, (4, 3)),
         transpose_b=True),
    case("MatMul", name="transpose_both_complex", a=sample(np.complex64, (3, 2)),
         b=sample(np.complex64, (4, 3)), transpose_a=True, transpose_b=True),
    case("MatMul", name="empty_inner", a=sample(np.float32, (2, 0)), b=sample(np.float32, (0, 3))),
    case("MatMul", name="empty_outer", a=sample(np.float32, (0, 3)), b=sample(np.float32, (3, 2))),
    case("MatMul", name="int32_wraps", a=integers([[65536, 65536]]), b=integers([[65536], [3]])),
    case("MatMul", name="large", a=sample(np.float32, (17, 33)), b=sample(np.float32, (33, 9))),
    case("MatMul", name="inner_mismatch", error=True, dynamic=True, a=sample(np.float32, (2, 3)),
         b=sample(np.float32, (2, 3))),
]
for op in ("BatchMatMul", "BatchMatMulV2"):
    for dtype in (np.float32, np.float64, np.float16, BF16, np.int32, np.int64) + COMPLEX:
        CASES.append(case(op, name=name_of(dtype), x=sample(dtype, (2, 2, 3), -3, 3),
                          y=sample(dtype, (2, 3, 2), -3, 3)))
    CASES += [
        case(op, name="matrices", x=sample(np.float32, (2, 3)), y=sample(np.float32, (3, 2))),
        case(op, name="adj_x", x=sample(np.complex64, (2, 3, 2)), y=sample(np.complex64, (2, 3, 4)),
             adj_x=True),
        case(op, name="adj_y", x=sample(np.complex128, (2, 2, 3)),
             y=sample(np.complex128, (2, 4, 3)), adj_y=True),
        case(op, name="adj_both", x=sample(np.float32, (1, 3, 2)), y=sample(np.float32, (1, 4, 3)),
             adj_x=True, adj_y=True),
        case(op, name="rank4", x=sample(np.float32, (2, 3, 2, 2)),
             y=sample(np.float32, (2, 3, 2, 1))),
        case(op, name="empty_batch", x=sample(np.float32, (0, 2, 3)),
             y=sample(np.float32, (0, 3, 2))),
        case(op, name="inner_mismatch", error=True, dynamic=True, x=sample(np.float32, (2, 2, 3)),
             y=sample(np.float32, (2, 2, 3))),
    ]
CASES += [
    case("BatchMatMul", name="batch_mismatch", error=True, dynamic=True,
         x=sample(np.float32, (2, 2, 3)), y=sample(np.float32, (1, 3, 2))),
    case("BatchMatMulV2", name="broadcast", x=sample(np.float32, (2, 1, 2, 3)),
         y=sample(np.float32, (4, 3, 2))),
    case("BatchMatMulV2", name="broadcast_matrix", x=sample(np.float32, (3, 2, 3)),
         y=sample(np.float32, (3, 5))),
    case("BatchMatMulV2", name="int16", x=sample(np.int16, (2, 2, 3)),
         y=sample(np.int16, (2, 3, 2))),
    case("BatchMatMulV2", name="batch_mismatch", error=True, dynamic=True,
         x=sample(np.float32, (2, 2, 3)), y=sample(np.float32, (3, 3, 2))),
    case("BatchMatMulV3", name="float32", x=sample(np.float32, (2, 2, 3)),
         y=sample(np.float32, (2, 3, 2)), Tout=tf.float32),
    case("BatchMatMulV3", name="int8_to_int32", x=sample(np.int8, (2, 2, 3), -128, 127),
         y=sample(np.int8, (2, 3, 2), -128, 127), Tout=tf.int32),
    case("BatchMatMulV3", name="uint8_int8_to_int32", x=sample(np.uint8, (2, 3), 0, 255),
         y=sample(np.int8, (3, 4), -128, 127), Tout=tf.int32),
    case("BatchMatMulV3", name="int16", x=sample(np.int16, (2, 3)), y=sample(np.int16, (3, 4)),
         Tout=tf.int16),
    case("BatchMatMulV3", name="broadcast_adj", x=sample(np.float64, (3, 1, 3, 2)),
         y=sample(np.float64, (2, 4, 3)), adj_x=True, adj_y=True, Tout=tf.float64),
    case("BatchMatMulV3", name="bfloat16", x=sample(BF16, (2, 3)), y=sample(BF16, (3, 4)),
         Tout=tf.bfloat16),
    case("BatchMatMulV3", name="batch_mismatch", error=True, dynamic=True,
         x=sample(np.float32, (2, 2, 3)), y=sample(np.float32, (3, 3, 2)), Tout=tf.float32),
]
EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("batch_matmul", "bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("dot", "i,i->", [(5,), (5,)]),
    ("transpose", "ij->ji", [(2, 3)]),
    ("diagonal", "ii->i", [(3, 3)]),
    ("trace", "ii->", [(3, 3)]),
    ("sum_axis", "ijk->ik", [(2, 3, 4)]),
    ("ellipsis", "...ij,...jk->...ik", [(2, 2, 3), (2, 3, 4)]),
    ("ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),
    ("bilinear_like", "bi,ij->bj", [(4, 3), (3, 2)]),
    ("reduce_both", "ij,ij->i", [(3, 4), (3, 4)]),
]
for label, equation, shapes in EINSUM:
    CASES.append(case("Einsum", name=label, equation=equation,
                      inputs=[sample(np.float32, s) for s in shapes]))
for dtype in (np.float64, np.float16, BF16, np.int32, np.int64) + COMPLEX:
    CASES.append(case("Einsum", name=name_of(dtype), equation="ij,jk->ik",
                      inputs=[sample(dtype, (2, 3), -3, 3), sample(dtype, (3, 2), -3, 3)]))
CASES += [
    case("Einsum", name="empty", equation="ij,jk->ik",
         inputs=[sample(np.float32, (0, 3)), sample(np.float32, (3, 2))]),
    case("Einsum", name="contract_empty", equation="ij,jk->ik",
         inputs=[sample(np.float32, (2, 0)), sample(np.float32, (0, 2))]),
    case("Einsum", name="dimension_mismatch", error=True, dynamic=True, equation="ij,jk->ik",
         inputs=[sample(np.float32, (2, 3)), sample(np.float32, (2, 3))]),
]
