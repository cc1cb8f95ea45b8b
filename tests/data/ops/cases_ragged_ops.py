"""Kernel cases for ragged-tensor ops (RaggedGather, RaggedRange, RaggedBincount) and Bincount:
every dtype TensorFlow registers on CPU, empty rows and tensors, indices out of range."""
import ml_dtypes
import numpy as np


def i64(*values):
    return np.array(values, np.int64)


def i32(*values):
    return np.array(values, np.int32)


SPLITS = i64(0, 2, 2, 5, 6)
"""Four rows over six values; row 1 is empty."""
VALUES = np.array([1.5, -2.0, 3.0, 0.5, 4.0, -1.0], np.float32)
OUTER = i64(0, 1, 3, 3)
"""Three rows of the inner rows above: a ragged rank 2 tensor."""


def gather(name, splits, values, indices, error=False):
    return case("RaggedGather", name=name, params_nested_splits=list(splits), params_dense_values=values,
                indices=indices, OUTPUT_RAGGED_RANK=len(splits) + max(indices.ndim, 1) - 1,
                error=error, dynamic=error)


GATHER = [
    gather("rows", [SPLITS], VALUES, i32(3, 0, 1, 0)),
    gather("int64_indices", [SPLITS], VALUES, i64(2, 2)),
    gather("matrix_indices", [SPLITS], VALUES, i64([0, 3], [1, 2], [2, 2])),
    gather("rank3_indices", [SPLITS], VALUES, np.array([[[0], [1]], [[3], [2]]], np.int32)),
    gather("ragged_rank2", [OUTER, SPLITS], VALUES, i32(2, 1, 0)),
    gather("int32_splits", [SPLITS.astype(np.int32)], VALUES.astype(np.float64), i32(1, 3)),
    gather("inner_dims", [i64(0, 1, 3)], np.arange(6, dtype=np.int64).reshape(3, 2), i32(1, 0, 1)),
    gather("string", [SPLITS], np.array([b"a", b"b", b"c", b"d", b"e", b"f"], object), i32(3, 2)),
    gather("bool", [SPLITS], VALUES > 0, i32(2)),
    gather("int32", [SPLITS], VALUES.astype(np.int32), i32(0, 2)),
    gather("half", [SPLITS], VALUES.astype(np.float16), i32(0, 2)),
    gather("complex", [SPLITS], VALUES.astype(np.complex64), i32(2, 0)),
    gather("empty_indices", [SPLITS], VALUES, np.zeros(0, np.int32)),
    gather("empty_params", [i64(0, 0, 0)], np.zeros(0, np.float32), i32(1, 0)),
    gather("out_of_range", [SPLITS], VALUES, i32(0, 4), error=True),
    gather("negative", [SPLITS], VALUES, i32(-1), error=True),
]


def ragged_range(name, starts, limits, deltas, error=False, **attrs):
    return case("RaggedRange", name=name, starts=starts, limits=limits, deltas=deltas, error=error,
                dynamic=error, **attrs)


RANGE = [
    ragged_range("int32", i32(0, 5, 3, 2), i32(3, 5, 10, -2), i32(1, 1, 3, -1)),
    ragged_range("int64_broadcast", np.int64(1), i64(4, 0, 7), np.int64(2)),
    ragged_range("all_scalars", np.int64(10), np.int64(0), np.int64(-3)),
    ragged_range("float", np.array([0, 1, -1], np.float32), np.array([1, 2, -3], np.float32),
                 np.array([0.25, 0.3, -0.5], np.float32)),
    ragged_range("double", np.array([0.5, 2.0]), np.float64(3), np.float64(0.7)),
    ragged_range("int32_splits", i32(0, 2), i32(4, 2), i32(2, 1), Tsplits=np.int32),
    ragged_range("wrong_direction", i32(0, 5), i32(5, 0), i32(-1, 1)),
    ragged_range("empty", np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32)),
    ragged_range("zero_delta", i32(0, 1), i32(3, 4), i32(1, 0), error=True),
    ragged_range("length_mismatch", i32(0, 1), i32(3, 4, 5), i32(1), error=True),
]


def ragged_bincount(name, splits, values, size, weights, error=False, **attrs):
    return case("RaggedBincount", name=name, splits=splits, values=values, size=size, weights=weights,
                error=error, dynamic=error, **attrs)


COUNTS = i64(0, 2, 2, 5, 1, 0)
BINCOUNT = [
    ragged_bincount("int64", SPLITS, COUNTS, np.int64(4), np.zeros(0, np.int64)),
    ragged_bincount("int32_weights", SPLITS, COUNTS.astype(np.int32), np.int32(3),
                    np.arange(6, dtype=np.int32)),
    ragged_bincount("float_weights", SPLITS, COUNTS, np.int64(6), VALUES),
    ragged_bincount("double_weights", SPLITS, COUNTS, np.int64(2), VALUES.astype(np.float64)),
    ragged_bincount("binary", SPLITS, COUNTS, np.int64(3), np.zeros(0, np.float32), binary_output=True),
    ragged_bincount("binary_weights_ignored", SPLITS, COUNTS, np.int64(3), VALUES, binary_output=True),
    ragged_bincount("empty", i64(0, 0, 0), np.zeros(0, np.int64), np.int64(2), np.zeros(0, np.int32)),
    ragged_bincount("negative", SPLITS, i64(0, -1, 2, 5, 1, 0), np.int64(3), np.zeros(0, np.int64),
                    error=True),
    ragged_bincount("negative_size", SPLITS, COUNTS, np.int64(-2), np.zeros(0, np.int64), error=True),
    ragged_bincount("bad_splits", i64(0, 2, 7), COUNTS, np.int64(3), np.zeros(0, np.int64), error=True),
    case("Bincount", arr=i32(0, 2, 2, 5, 1), size=np.int32(4), weights=np.zeros(0, np.int32)),
    case("Bincount", name="weights", arr=i32([0, 2], [2, 1]), size=np.int32(3),
         weights=np.array([[0.5, 1.0], [2.0, 4.0]], np.float32)),
    case("Bincount", name="int64_weights", arr=i32(1, 1, 0), size=np.int32(2), weights=i64(5, 6, 7)),
    case("Bincount", name="double_weights", arr=i32(1, 1, 0), size=np.int32(3),
         weights=np.array([0.25, 1, 2], np.float64)),
    case("Bincount", name="empty", arr=np.zeros(0, np.int32), size=np.int32(3), weights=np.zeros(0, np.float32)),
    case("Bincount", name="negative", arr=i32(0, -1), size=np.int32(3), weights=np.zeros(0, np.int32),
         error=True, dynamic=True),
    case("Bincount", name="negative_size", arr=i32(0), size=np.int32(-1), weights=np.zeros(0, np.int32),
         error=True, dynamic=True),
]

CASES = GATHER + RANGE + BINCOUNT


NUMERIC = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
           ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128]


WEIGHTS = [np.int32, np.int64, np.float32, np.float64]
"""The weight types the op definitions of RaggedBincount and Bincount allow."""


def typed(dtype, n=6):
    return (np.arange(n) % 2 == 0) if dtype is np.bool_ else (np.arange(n) + 1).astype(dtype)


def _name(dtype) -> str:
    return f"dtype_{np.dtype(dtype).name}"


DTYPES = (
    [gather(_name(t), [SPLITS], typed(t), i32(3, 0)) for t in NUMERIC + [np.bool_]]
    + [ragged_bincount(f"{_name(t)}_{np.dtype(i).name}_values", SPLITS, COUNTS.astype(i), np.array(3, i),
                       typed(t))
       for t in WEIGHTS for i in (np.int32, np.int64)]
    + [case("Bincount", name=_name(t), arr=i32(0, 2, 2, 1), size=np.int32(3), weights=typed(t, 4))
       for t in WEIGHTS]
)
CASES += DTYPES


def strings(*items):
    out = np.empty(len(items), object)
    out[:] = [s.encode() for s in items]
    return out


def cross(name, order, ragged=(), sparse=(), dense=(), hashed=False, buckets=0, key=0, error=False,
          splits_type=np.int64):
    return case("RaggedCross", name=name, ragged_values=[r[0] for r in ragged] or [],
                ragged_row_splits=[r[1] for r in ragged] or [], sparse_indices=[s[0] for s in sparse] or [],
                sparse_values=[s[1] for s in sparse] or [], sparse_shape=[s[2] for s in sparse] or [],
                dense_inputs=list(dense), input_order=order, hashed_output=hashed, num_buckets=buckets,
                hash_key=key, out_values_type=np.int64 if hashed else np.bytes_, out_row_splits_type=splits_type,
                error=error, dynamic=error)


WORDS = (strings("a", "b", "c", "d"), i64(0, 2, 2, 4))
NUMBERS = (i64(7, -1, 30, 4, 5), i64(0, 1, 3, 5))
SPARSE = (i64([0, 0], [2, 1], [2, 0]), strings("x", "y", "z"), i64(3, 2))
DENSE = strings("p", "q", "r")[:, None].copy()
CROSS = [
    cross("ragged_strings", "RR", ragged=[WORDS, (strings("u", "v", "w"), i64(0, 1, 2, 3))]),
    cross("ragged_ints", "RR", ragged=[WORDS, NUMBERS]),
    cross("all_kinds", "DRS", ragged=[WORDS], sparse=[SPARSE], dense=[DENSE]),
    cross("sparse_first", "SR", ragged=[NUMBERS], sparse=[SPARSE]),
    cross("dense_ints", "DD", dense=[i64([1, 2], [3, 4], [5, 6]), i64([8], [9], [10])]),
    cross("hashed", "RR", ragged=[WORDS, NUMBERS], hashed=True),
    cross("hashed_buckets", "RSD", ragged=[WORDS], sparse=[SPARSE], dense=[DENSE], hashed=True, buckets=10),
    cross("hashed_key", "RD", ragged=[NUMBERS], dense=[i64([1], [2], [3])], hashed=True, buckets=1000,
          key=123456789),
    cross("int32_splits", "RR", ragged=[(r[0], r[1].astype(np.int32)) for r in (WORDS, NUMBERS)],
          splits_type=np.int32),
    cross("single", "R", ragged=[WORDS]),
    cross("empty_batch", "RR", ragged=[(strings(), i64(0)), (np.zeros(0, np.int64), i64(0))]),
    cross("batch_mismatch", "RR", ragged=[WORDS, (i64(1, 2), i64(0, 1, 2))], error=True),
]
CASES += CROSS


def sparse_cross(name, sparse=(), dense=(), hashed=False, buckets=0, key=0, sep=None, error=False):
    args = dict(indices=[s[0] for s in sparse] or [], values=[s[1] for s in sparse] or [],
                shapes=[s[2] for s in sparse] or [], dense_inputs=list(dense) or [])
    if sep is not None:
        return case("SparseCrossV2", name=name, sep=np.array(sep.encode(), object), error=error, dynamic=error,
                    **args)
    return case("SparseCross", name=name, hashed_output=hashed, num_buckets=buckets, hash_key=key,
                out_type=np.int64 if hashed else np.bytes_, internal_type=np.int64 if hashed else np.bytes_,
                error=error, dynamic=error, **args)


SPARSE_INTS = (i64([0, 0], [0, 1], [2, 0]), i64(11, 12, 13), i64(3, 2))
SPARSE_CROSS = [
    sparse_cross("strings", sparse=[SPARSE, (i64([0, 0], [1, 0], [2, 0]), strings("u", "v", "w"), i64(3, 1))]),
    sparse_cross("with_dense", sparse=[SPARSE], dense=[DENSE]),
    sparse_cross("dense_only", dense=[strings("1", "2", "3", "4", "5", "6").reshape(3, 2), DENSE]),
    sparse_cross("hashed_dense_ints", dense=[i64([1, 2], [3, 4], [5, 6]), i64([-1], [0], [9])], hashed=True),
    sparse_cross("hashed", sparse=[SPARSE, SPARSE_INTS], hashed=True),
    sparse_cross("hashed_buckets", sparse=[SPARSE_INTS], dense=[DENSE], hashed=True, buckets=100, key=7),
    sparse_cross("batch_mismatch", sparse=[SPARSE], dense=[i64([1], [2])], error=True),
    sparse_cross("separator", sparse=[SPARSE], dense=[DENSE], sep="--"),
    sparse_cross("separator_ints", sparse=[SPARSE_INTS, SPARSE], sep=""),
]
CASES += SPARSE_CROSS


def sparse_bincount(name, indices, values, dense_shape, size, weights, error=False, **attrs):
    return case("SparseBincount", name=name, indices=indices, values=values, dense_shape=dense_shape, size=size,
                weights=weights, error=error, dynamic=error, **attrs)


MATRIX = i64([0, 0], [0, 3], [2, 1], [2, 2], [3, 0])
SPARSE_BINCOUNT = [
    sparse_bincount("matrix", MATRIX, i64(1, 1, 0, 4, 2), i64(4, 5), np.int64(3), np.zeros(0, np.int64)),
    sparse_bincount("vector", i64([0], [3], [4]), i32(2, 0, 2), i64(6), np.int32(4), np.zeros(0, np.float32)),
    sparse_bincount("weights", MATRIX, i64(1, 1, 0, 4, 2), i64(4, 5), np.int64(5), VALUES[:5].copy()),
    sparse_bincount("binary", MATRIX, i64(1, 1, 0, 4, 2), i64(4, 5), np.int64(5), np.zeros(0, np.float64),
                    binary_output=True),
    sparse_bincount("empty", np.zeros((0, 2), np.int64), np.zeros(0, np.int64), i64(2, 3), np.int64(2),
                    np.zeros(0, np.int32)),
    sparse_bincount("negative_skipped", MATRIX, i64(1, -1, 0, 4, 2), i64(4, 5), np.int64(3), np.arange(5.0)),
    sparse_bincount("negative_vector", i64([0], [3]), i64(1, -1), i64(5), np.int64(3), np.zeros(0, np.int64),
                    error=True),
    sparse_bincount("negative_size", MATRIX, i64(1, 1, 0, 4, 2), i64(4, 5), np.int64(-1), np.zeros(0, np.int64),
                    error=True),
] + [sparse_bincount(_name(t), MATRIX, i64(1, 1, 0, 4, 2), i64(4, 5), np.int64(3), typed(t, 5)) for t in WEIGHTS]
CASES += SPARSE_BINCOUNT


def to_sparse(name, splits, values, error=False):
    return case("RaggedTensorToSparse", name=name, rt_nested_splits=list(splits), rt_dense_values=values,
                error=error, dynamic=error)


TO_SPARSE = [
    to_sparse("rank1", [SPLITS], VALUES),
    to_sparse("rank2", [i64(0, 1, 4, 4), SPLITS], VALUES.astype(np.int64)),
    to_sparse("inner_dims", [i64(0, 1, 3)], np.arange(6, dtype=np.float64).reshape(3, 2)),
    to_sparse("int32_splits", [SPLITS.astype(np.int32)], strings("a", "b", "c", "d", "e", "f")),
    to_sparse("bool", [SPLITS], VALUES > 0),
    to_sparse("empty", [i64(0, 0, 0)], np.zeros(0, np.float32)),
    to_sparse("no_rows", [i64(0)], np.zeros(0, np.float32)),
    to_sparse("splits_mismatch", [i64(0, 2, 9)], VALUES, error=True),
    to_sparse("decreasing", [i64(0, 4, 2, 6)], VALUES, error=True),
]
CASES += TO_SPARSE
