"""Kernel cases for reductions, arg-reductions, scans, top-k and L2Loss."""
import ml_dtypes
import numpy as np
import tensorflow as tf

RNG = np.random.default_rng(11)
BF16 = ml_dtypes.bfloat16
FLOATS = (np.float32, np.float64, np.float16, BF16)
SIGNED = (np.int8, np.int16, np.int32, np.int64)
UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
COMPLEX = (np.complex64, np.complex128)


def name_of(dtype) -> str:
    return np.dtype(dtype).name


def sample(dtype, shape, low=-4, high=4):
    """Small values on a grid fine enough to be interesting and coarse enough that half-type
    sums are exact (so accumulation order cannot change them)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(low, info.min), min(high, info.max) + 1, shape).astype(dtype)
    step = 16 if dtype == np.float16 else 1 if dtype == BF16 else 64
    real = np.round(RNG.uniform(low, high, shape) * step) / step
    if dtype.kind == "c":
        real = real + 1j * np.round(RNG.uniform(low, high, shape) * step) / step
    return real.astype(dtype)


def axis(*values, dtype=np.int32):
    return np.array(values[0] if len(values) == 1 else list(values), dtype)


def reduction(op, dtypes, low=-4, high=4):
    """Per dtype, then the axis forms: scalar, vector, negative, empty, all, keep_dims, int64
    axes, empty inputs, scalar inputs, and the axis errors."""
    found = [case(op, name=name_of(d), input=sample(d, (2, 3, 4), low, high), axis=axis(1))
             for d in dtypes]
    first = dtypes[0]
    x = sample(first, (2, 3, 4), low, high)
    found += [
        case(op, name="axis0", input=x, axis=axis(0)),
        case(op, name="axis_negative", input=x, axis=axis(-1)),
        case(op, name="axes", input=x, axis=axis(0, 2)),
        case(op, name="axes_negative_unsorted", input=x, axis=axis(-1, 0)),
        case(op, name="all_axes", input=x, axis=axis(0, 1, 2)),
        case(op, name="no_axes", input=x, axis=np.zeros((0,), np.int32)),
        case(op, name="keep_dims", input=x, axis=axis(0, 2), keep_dims=True),
        case(op, name="keep_dims_scalar_axis", input=x, axis=axis(1), keep_dims=True),
        case(op, name="axis_int64", input=x, axis=axis(-2, dtype=np.int64)),
        case(op, name="matrix_axis_vector_of_one", input=x[0], axis=axis(1, dtype=np.int64)[None]),
        case(op, name="scalar_input", input=sample(first, (), low, high),
             axis=np.zeros((0,), np.int32)),
        case(op, name="empty_reduced", input=sample(first, (0, 3), low, high), axis=axis(0)),
        case(op, name="empty_kept", input=sample(first, (0, 3), low, high), axis=axis(1)),
        case(op, name="empty_all", input=sample(first, (2, 0), low, high), axis=axis(0, 1),
             keep_dims=True),
        case(op, name="duplicate_axes", error=True, dynamic=True, input=x, axis=axis(0, 0)),
        case(op, name="duplicate_negative_axes", error=True, dynamic=True, input=x,
             axis=axis(2, -1)),
        case(op, name="axis_out_of_range", error=True, dynamic=True, input=x, axis=axis(3)),
        case(op, name="axis_below_range", error=True, dynamic=True, input=x, axis=axis(-4)),
        case(op, name="scalar_input_axis", error=True, dynamic=True,
             input=sample(first, (), low, high), axis=axis(0)),
    ]
    return found


SPECIAL = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0], [-0.0, 2.0, -1.0]], np.float32)

CASES = [
    *reduction("Sum", FLOATS + SIGNED + UNSIGNED + COMPLEX),
    case("Sum", name="special", input=SPECIAL, axis=axis(1)),
    case("Sum", name="int8_wraps", input=np.array([100, 100, 100], np.int8), axis=axis(0)),
    case("Sum", name="float32_long", input=RNG.uniform(0, 1, 1000).astype(np.float32),
         axis=axis(0)),
    *reduction("Prod", FLOATS + SIGNED + UNSIGNED + COMPLEX, low=-2, high=2),
    case("Prod", name="special", input=SPECIAL, axis=axis(0)),
    case("Prod", name="int16_wraps", input=np.array([300, 300], np.int16), axis=axis(0)),
    *reduction("Max", FLOATS + SIGNED + UNSIGNED),
    case("Max", name="special", input=SPECIAL, axis=axis(1)),
    case("Max", name="all_negative_infinity", input=np.full((2,), -np.inf, np.float32),
         axis=axis(0)),
    case("Max", name="empty_int32", input=np.zeros((0,), np.int32), axis=axis(0)),
    case("Max", name="empty_uint8", input=np.zeros((0, 2), np.uint8), axis=axis(0)),
    case("Max", name="empty_float16", input=np.zeros((0,), np.float16), axis=axis(0)),
    case("Max", name="empty_bfloat16", input=np.zeros((0,), BF16), axis=axis(0)),
    *reduction("Min", FLOATS + SIGNED + UNSIGNED),
    case("Min", name="special", input=SPECIAL, axis=axis(1)),
    case("Min", name="empty_int64", input=np.zeros((0,), np.int64), axis=axis(0)),
    case("Min", name="empty_uint8", input=np.zeros((0,), np.uint8), axis=axis(0)),
    case("Min", name="empty_float64", input=np.zeros((3, 0)), axis=axis(1)),
    *reduction("Mean", FLOATS + SIGNED + UNSIGNED + COMPLEX, low=-9, high=9),
    case("Mean", name="special", input=SPECIAL, axis=axis(1)),
    case("Mean", name="int_truncates", input=np.array([[-1, -2], [1, 2], [-7, 0], [7, 0]],
                                                       np.int32), axis=axis(1)),
    case("Mean", name="int8_sums_wide", input=np.array([100, 100, -1], np.int8), axis=axis(0)),
    case("Mean", name="int8_minimum", input=np.array([-128, -128, -127], np.int8),
         axis=axis(0)),
    case("Mean", name="uint8_sums_wide", input=np.array([200, 200, 255], np.uint8),
         axis=axis(0)),
    case("Mean", name="int32_sums_wide", input=np.array([2**31 - 1, 2**31 - 1], np.int32),
         axis=axis(0)),
    case("Mean", name="int64_wraps", input=np.array([2**62, 2**62, 2**62], np.int64),
         axis=axis(0)),
    case("Mean", name="empty_int32", input=np.zeros((0, 2), np.int32), axis=axis(0)),
    case("Mean", name="empty_float16", input=np.zeros((0, 2), np.float16), axis=axis(0)),
    case("Mean", name="float32_long", input=RNG.uniform(0, 1, 1000).astype(np.float32),
         axis=axis(0)),
    *reduction("All", (np.bool_,)),
    *reduction("Any", (np.bool_,)),
    case("All", name="empty_true", input=np.zeros((0,), bool), axis=axis(0)),
    case("Any", name="empty_false", input=np.zeros((0,), bool), axis=axis(0)),
]


def arg_reduction(op):
    found = [case(op, name=name_of(d), input=sample(d, (3, 4)), dimension=axis(1))
             for d in FLOATS + SIGNED + UNSIGNED]
    x = sample(np.float32, (2, 3, 4))
    found += [
        case(op, name="axis0", input=x, dimension=axis(0)),
        case(op, name="axis_negative", input=x, dimension=axis(-2)),
        case(op, name="axis_int64", input=x, dimension=axis(2, dtype=np.int64)),
        case(op, name="output_int32", input=x, dimension=axis(1), output_type=tf.int32),
        case(op, name="vector", input=sample(np.int32, (7,)), dimension=axis(0)),
        case(op, name="ties", input=np.array([[1, 3, 3, 1], [2, 2, 2, 2]], np.int32),
             dimension=axis(1)),
        case(op, name="nan", input=np.array([[1, np.nan, 3, np.nan], [np.nan, 1, 3, 0],
                                             [np.nan, np.nan, np.nan, np.nan],
                                             [np.nan, -np.inf, -np.inf, np.nan],
                                             [np.nan, np.inf, np.inf, np.nan]], np.float32),
             dimension=axis(1)),
        case(op, name="nan_float16", input=np.array([np.nan, 1, -3, 3], np.float16),
             dimension=axis(0)),
        case(op, name="infinities", input=np.array([[-np.inf, -np.inf, 5], [np.inf, 0, np.inf]],
                                                   np.float64), dimension=axis(1)),
        case(op, name="bool", input=np.array([[False, True, True], [False, False, False]]),
             dimension=axis(1)),
        case(op, name="empty_kept", input=np.zeros((0, 3), np.float32), dimension=axis(1)),
        case(op, name="empty_reduced", error=True, dynamic=True,
             input=np.zeros((0, 3), np.float32), dimension=axis(0)),
        case(op, name="axis_out_of_range", error=True, dynamic=True, input=x,
             dimension=axis(3)),
        case(op, name="scalar_input", error=True, dynamic=True, input=np.array(1.0, np.float32),
             dimension=axis(0)),
    ]
    return found


def scan(op, low, high):
    found = [case(op, name=name_of(d), x=sample(d, (3, 4), low, high), axis=axis(1))
             for d in FLOATS + SIGNED + UNSIGNED + COMPLEX]
    x = sample(np.float64, (2, 3, 4), low, high)
    found += [
        case(op, name="axis0", x=x, axis=axis(0)),
        case(op, name="axis_negative", x=x, axis=axis(-2)),
        case(op, name="axis_int64", x=x, axis=axis(2, dtype=np.int64)),
        case(op, name="exclusive", x=x, axis=axis(1), exclusive=True),
        case(op, name="reverse", x=x, axis=axis(1), reverse=True),
        case(op, name="exclusive_reverse", x=x, axis=axis(-1), exclusive=True, reverse=True),
        case(op, name="exclusive_int32", x=sample(np.int32, (5,), low, high), axis=axis(0),
             exclusive=True),
        case(op, name="vector", x=sample(np.float32, (6,), low, high), axis=axis(0)),
        case(op, name="special", x=SPECIAL, axis=axis(1)),
        case(op, name="empty_scanned", x=np.zeros((0, 3), np.float32), axis=axis(0)),
        case(op, name="empty_scanned_exclusive", x=np.zeros((2, 0), np.float32), axis=axis(1),
             exclusive=True),
        case(op, name="empty_other", x=np.zeros((0, 3), np.int32), axis=axis(1), reverse=True),
        case(op, name="axis_out_of_range", error=True, dynamic=True, x=x, axis=axis(3)),
        case(op, name="scalar_input", error=True, dynamic=True, x=np.array(1.0, np.float32),
             axis=axis(0)),
    ]
    return found


CASES += [
    *arg_reduction("ArgMax"),
    *arg_reduction("ArgMin"),
    *scan("Cumsum", -4, 4),
    case("Cumsum", name="float16_sequential", x=np.array([2048, 1, 1, 1, 1], np.float16),
         axis=axis(0)),
    case("Cumsum", name="int8_wraps", x=np.array([100, 100, -100], np.int8), axis=axis(0)),
    *scan("Cumprod", -2, 2),
    case("Cumprod", name="int32_wraps", x=np.array([65536, 65536, 3], np.int32), axis=axis(0)),
]

TOP_K_INPUT = np.array([[1, 5, 3, 2, 4, 0, 9, 8], [5, 5, 1, 5, 2, 2, 9, 9]], np.float32)
CASES += [
    *[case("TopKV2", name=name_of(d), input=sample(d, (3, 6), -9, 9), k=np.array(3, np.int32))
      for d in FLOATS + SIGNED + UNSIGNED],
    case("TopKV2", name="ties", input=TOP_K_INPUT, k=np.array(5, np.int32)),
    case("TopKV2", name="ties_int", input=np.array([-2**31, 5, 5, 2**31 - 1, 5, -2**31],
                                                   np.int32), k=np.array(6, np.int32)),
    case("TopKV2", name="uint64_extremes", input=np.array([2**64 - 1, 0, 2**63], np.uint64),
         k=np.array(2, np.int32)),
    case("TopKV2", name="signed_zero", input=np.array([0.0, -0.0, 0.0, -1.0], np.float32),
         k=np.array(3, np.int32)),
    case("TopKV2", name="infinities", input=np.array([1.0, -np.inf, np.inf, 2.0], np.float32),
         k=np.array(4, np.int32)),
    case("TopKV2", name="k_one", input=TOP_K_INPUT, k=np.array(1, np.int32)),
    case("TopKV2", name="k_zero", input=TOP_K_INPUT, k=np.array(0, np.int32)),
    case("TopKV2", name="k_all", input=TOP_K_INPUT, k=np.array(8, np.int32)),
    case("TopKV2", name="unsorted_k_one", input=TOP_K_INPUT, k=np.array(1, np.int32),
         sorted=False),
    case("TopKV2", name="unsorted_k_all", input=TOP_K_INPUT[:1], k=np.array(8, np.int32),
         sorted=False),
    case("TopKV2", name="vector", input=TOP_K_INPUT[0], k=np.array(3, np.int32)),
    case("TopKV2", name="rank3", input=sample(np.float64, (2, 3, 5), -9, 9),
         k=np.array(2, np.int32)),
    case("TopKV2", name="long_row", input=RNG.permutation(300).astype(np.float32),
         k=np.array(10, np.int32)),
    case("TopKV2", name="int64_k_and_index", input=TOP_K_INPUT, k=np.array(3, np.int64),
         index_type=tf.int64),
    case("TopKV2", name="empty_rows", input=np.zeros((0, 3), np.float32),
         k=np.array(2, np.int32)),
    case("TopKV2", name="empty_row_k_zero", input=np.zeros((2, 0), np.float32),
         k=np.array(0, np.int32)),
    case("TopKV2", name="k_too_large", error=True, dynamic=True, input=TOP_K_INPUT,
         k=np.array(9, np.int32)),
    case("TopKV2", name="k_negative", error=True, dynamic=True, input=TOP_K_INPUT,
         k=np.array(-1, np.int32)),
    *[case("L2Loss", name=name_of(d), t=sample(d, (3, 4))) for d in FLOATS],
    case("L2Loss", name="scalar", t=np.array(3.0, np.float32)),
    case("L2Loss", name="empty", t=np.zeros((0, 2), np.float32)),
    case("L2Loss", name="special", t=np.array([1.0, np.inf], np.float32)),
    case("L2Loss", name="long", t=RNG.uniform(-1, 1, 500).astype(np.float32)),
]
