"""Kernel cases for sparse-tensor ops: every dtype TensorFlow registers on CPU (as far as each op
goes), empty tensors, indices out of bounds, out of order and repeated, negative axes."""
import ml_dtypes
import numpy as np


def i64(*rows):
    return np.array(rows, np.int64).reshape(len(rows), -1) if rows and isinstance(rows[0], (list, tuple)) \
        else np.array(rows, np.int64)


def shape(*dims):
    return np.array(dims, np.int64)


IDX = i64([0, 1], [1, 0], [1, 3], [3, 2])
"""Four entries of a 4 x 4 matrix in row-major order; row 2 is empty."""
UNSORTED = IDX[[2, 0, 3, 1]]
IDX3 = i64([0, 0, 1], [0, 2, 0], [1, 1, 1], [1, 2, 0], [1, 2, 1])
"""Five entries of a 2 x 3 x 2 tensor in row-major order."""
EMPTY = np.zeros((0, 2), np.int64)
BF16 = ml_dtypes.bfloat16


def vals(n, dtype=np.float32):
    return (np.arange(n) * 1.5 - 2).astype(dtype) if np.dtype(dtype).kind in "fc" or dtype is BF16 \
        else (np.arange(n) * 3 - 4).astype(dtype)


def to_dense(name, indices, out_shape, values, default, error=False, **attrs):
    return case("SparseToDense", name=name, sparse_indices=indices, output_shape=out_shape,
                sparse_values=values, default_value=default, error=error, dynamic=error, **attrs)


TO_DENSE = [
    to_dense("matrix", IDX, shape(4, 4), vals(4), np.float32(-1)),
    to_dense("int32_indices", IDX.astype(np.int32), np.array([4, 5], np.int32), vals(4, np.int32), np.int32(0)),
    to_dense("scalar_value", IDX, shape(4, 4), np.float64(2.5), np.float64(0)),
    to_dense("vector_indices", np.array([0, 3, 4], np.int64), shape(6), vals(3, np.int64), np.int64(7)),
    to_dense("scalar_index", np.array(2, np.int64), shape(4), np.float32(1), np.float32(0)),
    to_dense("string", IDX[:2], shape(2, 4), np.array([b"a", b"b"], object), np.array(b"-", object)),
    to_dense("bool", IDX, shape(4, 4), np.array([True, False, True, True]), np.array(False)),
    to_dense("uint8", IDX, shape(4, 4), vals(4, np.uint8), np.uint8(9)),
    to_dense("int16", IDX, shape(4, 4), vals(4, np.int16), np.int16(9)),
    to_dense("int8", IDX, shape(4, 4), vals(4, np.int8), np.int8(9)),
    to_dense("float16", IDX, shape(4, 4), vals(4, np.float16), np.float16(0.5)),
    to_dense("bfloat16", IDX, shape(4, 4), vals(4, BF16), BF16(0.5)),
    to_dense("complex", IDX, shape(4, 4), vals(4, np.complex128) * 1j, np.complex128(1)),
    to_dense("empty", EMPTY, shape(2, 3), np.zeros(0, np.float32), np.float32(4)),
    to_dense("empty_shape", EMPTY, shape(0, 3), np.zeros(0, np.float32), np.float32(4)),
    to_dense("unsorted_unvalidated", UNSORTED, shape(4, 4), vals(4), np.float32(0), validate_indices=False),
    to_dense("out_of_bounds", IDX, shape(3, 4), vals(4), np.float32(0), error=True),
    to_dense("negative_index", i64([0, -1]), shape(3, 4), vals(1), np.float32(0), error=True),
    to_dense("unsorted", UNSORTED, shape(4, 4), vals(4), np.float32(0), error=True),
    to_dense("repeated", IDX[[0, 0]], shape(4, 4), vals(2), np.float32(0), error=True),
    to_dense("values_count", IDX, shape(4, 4), vals(3), np.float32(0), error=True),
]


def reorder(name, indices, values, dense_shape, error=False):
    return case("SparseReorder", name=name, input_indices=indices, input_values=values,
                input_shape=dense_shape, error=error, dynamic=error)


REORDER = [
    reorder("float", UNSORTED, vals(4), shape(4, 4)),
    reorder("sorted", IDX3, vals(5, np.int64), shape(2, 3, 2)),
    reorder("rank3", IDX3[[4, 1, 3, 0, 2]], vals(5, np.float64), shape(2, 3, 2)),
    reorder("string", UNSORTED, np.array([b"a", b"b", b"c", b"d"], object), shape(4, 4)),
    reorder("bool", UNSORTED, np.array([True, False, True, False]), shape(4, 4)),
    reorder("int32", UNSORTED, vals(4, np.int32), shape(4, 4)),
    reorder("half", UNSORTED, vals(4, np.float16), shape(4, 4)),
    reorder("complex", UNSORTED, vals(4, np.complex64), shape(4, 4)),
    reorder("empty", EMPTY, np.zeros(0, np.float32), shape(3, 3)),
    reorder("out_of_bounds_unchecked", i64([5, 0], [0, 9], [2, 1]), vals(3), shape(3, 4)),
    reorder("count_mismatch", UNSORTED, vals(3), shape(4, 4), error=True),
]


def reshape(name, indices, dense_shape, new_shape, error=False):
    return case("SparseReshape", name=name, input_indices=indices, input_shape=dense_shape,
                new_shape=new_shape, error=error, dynamic=error)


RESHAPE = [
    reshape("flatten", IDX, shape(4, 4), shape(16)),
    reshape("infer", IDX3, shape(2, 3, 2), shape(-1, 4)),
    reshape("infer_middle", IDX3, shape(2, 3, 2), shape(2, -1, 2)),
    reshape("grow", IDX, shape(4, 4), shape(2, 2, 2, 2)),
    reshape("empty", EMPTY, shape(0, 3), shape(3, -1)),
    reshape("to_scalar_rows", i64([0]), shape(1), shape(1, 1)),
    reshape("two_unknown", IDX, shape(4, 4), shape(-1, -1), error=True),
    reshape("size_mismatch", IDX, shape(4, 4), shape(5, 3), error=True),
    reshape("not_divisible", IDX, shape(4, 4), shape(-1, 3), error=True),
]


def matmul(name, indices, values, a_shape, b, error=False, **attrs):
    return case("SparseTensorDenseMatMul", name=name, a_indices=indices, a_values=values,
                a_shape=a_shape, b=b, error=error, dynamic=error, **attrs)


B43 = (np.arange(12).reshape(4, 3) * 0.5 - 2).astype(np.float32)
MATMUL = [
    matmul("float", IDX, vals(4), shape(4, 4), B43),
    matmul("adjoint_a", IDX, vals(4), shape(4, 4), B43, adjoint_a=True),
    matmul("adjoint_b", IDX, vals(4), shape(4, 4), B43.T.copy(), adjoint_b=True),
    matmul("adjoint_both", i64([0, 1], [2, 0]), vals(2), shape(3, 2), B43[:2].copy(), adjoint_a=True,
           adjoint_b=True),
    matmul("unsorted_repeated", IDX[[3, 1, 1, 0]], vals(4), shape(4, 4), B43),
    matmul("double", IDX, vals(4, np.float64), shape(4, 5), np.ones((5, 2))),
    matmul("int32", IDX.astype(np.int32), vals(4, np.int32), shape(4, 4), np.arange(8, dtype=np.int32).reshape(4, 2)),
    matmul("half", IDX, vals(4, np.float16), shape(4, 4), B43.astype(np.float16)),
    matmul("complex_adjoint", IDX, vals(4, np.complex64) * (1 + 2j), shape(4, 4),
           (B43 * 1j).astype(np.complex64), adjoint_a=True),
    matmul("complex128_adjoint_b", IDX, vals(4, np.complex128) * (1 - 1j), shape(4, 4),
           (B43.T * (2 + 1j)).astype(np.complex128), adjoint_b=True),
    matmul("empty", EMPTY, np.zeros(0, np.float32), shape(3, 4), B43),
    matmul("empty_result", EMPTY, np.zeros(0, np.float32), shape(0, 4), B43),
    matmul("row_out_of_bounds", IDX, vals(4), shape(3, 4), B43, error=True),
    matmul("column_out_of_bounds", i64([0, 4]), vals(1), shape(4, 5), np.ones((5, 3), np.float32),
           adjoint_a=True, error=True),
    matmul("inner_mismatch", IDX, vals(4), shape(4, 4), np.ones((3, 3), np.float32), error=True),
]


def dense_add(name, indices, values, a_shape, b, error=False):
    return case("SparseTensorDenseAdd", name=name, a_indices=indices, a_values=values, a_shape=a_shape,
                b=b, error=error, dynamic=error)


DENSE_ADD = [
    dense_add("float", IDX, vals(4), shape(4, 4), np.ones((4, 4), np.float32)),
    dense_add("repeated_unsorted", IDX[[2, 2, 0]], vals(3, np.float64), shape(4, 4), np.zeros((4, 4))),
    dense_add("int32", IDX.astype(np.int32), vals(4, np.int32), np.array([4, 4], np.int32),
              np.ones((4, 4), np.int32)),
    dense_add("int64", IDX3, vals(5, np.int64), shape(2, 3, 2), np.ones((2, 3, 2), np.int64)),
    dense_add("int8", IDX, vals(4, np.int8), shape(4, 4), np.ones((4, 4), np.int8)),
    dense_add("half", IDX, vals(4, np.float16), shape(4, 4), np.ones((4, 4), np.float16)),
    dense_add("complex", IDX, vals(4, np.complex64), shape(4, 4), np.ones((4, 4), np.complex64)),
    dense_add("empty", EMPTY, np.zeros(0, np.float32), shape(2, 2), np.ones((2, 2), np.float32)),
    dense_add("out_of_bounds", i64([0, 4]), vals(1), shape(4, 4), np.ones((4, 4), np.float32), error=True),
    dense_add("shape_mismatch", IDX, vals(4), shape(4, 5), np.ones((4, 4), np.float32), error=True),
]


def fill(name, indices, values, dense_shape, default, error=False):
    return case("SparseFillEmptyRows", name=name, indices=indices, values=values, dense_shape=dense_shape,
                default_value=default, error=error, dynamic=error)


FILL = [
    fill("float", IDX, vals(4), shape(4, 4), np.float32(-1)),
    fill("unsorted", IDX[[3, 1, 0, 2]], vals(4, np.int64), shape(5, 4), np.int64(9)),
    fill("rank3", IDX3, vals(5, np.float64), shape(4, 3, 2), np.float64(0)),
    fill("string", IDX[:2], np.array([b"a", b"b"], object), shape(3, 4), np.array(b"", object)),
    fill("bool", IDX[:2], np.array([True, True]), shape(3, 4), np.array(False)),
    fill("int32", IDX, vals(4, np.int32), shape(4, 4), np.int32(0)),
    fill("empty", EMPTY, np.zeros(0, np.float32), shape(3, 2), np.float32(5)),
    fill("no_rows", EMPTY, np.zeros(0, np.float32), shape(0, 2), np.float32(5)),
    fill("row_out_of_range", IDX, vals(4), shape(3, 4), np.float32(0), error=True),
    fill("negative_row", i64([-1, 0]), vals(1), shape(3, 4), np.float32(0), error=True),
]


def slice_(name, indices, values, dense_shape, start, size, error=False):
    return case("SparseSlice", name=name, indices=indices, values=values, shape=dense_shape,
                start=start, size=size, error=error, dynamic=error)


SLICE = [
    slice_("float", IDX, vals(4), shape(4, 4), shape(1, 0), shape(2, 4)),
    slice_("clipped", IDX, vals(4, np.int64), shape(4, 4), shape(1, 1), shape(10, 10)),
    slice_("outside", IDX, vals(4), shape(4, 4), shape(5, 5), shape(2, 2)),
    slice_("rank3", IDX3, vals(5, np.float64), shape(2, 3, 2), shape(0, 1, 1), shape(2, 2, 1)),
    slice_("string", IDX, np.array([b"a", b"b", b"c", b"d"], object), shape(4, 4), shape(0, 0), shape(2, 2)),
    slice_("bool", IDX, np.array([True, False, True, True]), shape(4, 4), shape(1, 1), shape(3, 3)),
    slice_("int32", IDX, vals(4, np.int32), shape(4, 4), shape(0, 1), shape(4, 1)),
    slice_("complex", IDX, vals(4, np.complex128), shape(4, 4), shape(0, 0), shape(2, 4)),
    slice_("empty", EMPTY, np.zeros(0, np.float32), shape(3, 3), shape(0, 0), shape(2, 2)),
    slice_("rank_mismatch", IDX, vals(4), shape(4, 4), shape(0), shape(2, 2), error=True),
]


def reduce(op, name, indices, values, dense_shape, axes, error=False, **attrs):
    return case(op, name=name, input_indices=indices, input_values=values, input_shape=dense_shape,
                reduction_axes=np.array(axes, np.int32), error=error, dynamic=error, **attrs)


REDUCE = []
for _op in ("SparseReduceSum", "SparseReduceMax", "SparseReduceSumSparse", "SparseReduceMaxSparse"):
    REDUCE += [
        reduce(_op, "axis1", IDX, vals(4), shape(4, 4), [1]),
        reduce(_op, "axis0_keep", IDX, vals(4), shape(4, 4), [0], keep_dims=True),
        reduce(_op, "negative_axis", IDX3, vals(5, np.float64), shape(2, 3, 2), [-1]),
        reduce(_op, "two_axes", IDX3, vals(5, np.int64), shape(2, 3, 2), [0, 2]),
        reduce(_op, "two_axes_keep", IDX3, vals(5, np.int32), shape(2, 3, 2), [2, 0], keep_dims=True),
        reduce(_op, "all", IDX3, vals(5), shape(2, 3, 2), [0, 1, 2]),
        reduce(_op, "no_axes", IDX, vals(4), shape(4, 4), np.zeros(0, np.int32)),
        reduce(_op, "unsorted", UNSORTED, vals(4), shape(4, 4), [1]),
        reduce(_op, "negative_values", IDX, -np.abs(vals(4)) - 1, shape(4, 4), [1]),
        reduce(_op, "half", IDX, vals(4, np.float16), shape(4, 4), [1]),
        reduce(_op, "int8", IDX, vals(4, np.int8), shape(4, 4), [0]),
        reduce(_op, "empty", EMPTY, np.zeros(0, np.float32), shape(2, 3), [1]),
        reduce(_op, "axis_out_of_range", IDX, vals(4), shape(4, 4), [2], error=True),
    ]
REDUCE += [
    reduce("SparseReduceSum", "complex", IDX, vals(4, np.complex64), shape(4, 4), [1]),
    reduce("SparseReduceSumSparse", "complex", IDX, vals(4, np.complex128), shape(4, 4), [0]),
    reduce("SparseReduceMax", "nan", IDX, np.array([np.nan, 1, 2, np.inf], np.float32), shape(4, 4), [1]),
]


def softmax(name, indices, values, dense_shape, error=False):
    return case("SparseSoftmax", name=name, sp_indices=indices, sp_values=values, sp_shape=dense_shape,
                error=error, dynamic=error)


SOFTMAX = [
    softmax("float", IDX, vals(4), shape(4, 4)),
    softmax("rank3", IDX3, vals(5, np.float64), shape(2, 3, 2)),
    softmax("half", IDX3, vals(5, np.float16), shape(2, 3, 2)),
    softmax("large", IDX3, np.array([1000, 1001, -5, 3, 1e4], np.float32), shape(2, 3, 2)),
    softmax("empty", EMPTY, np.zeros(0, np.float32), shape(2, 2)),
    softmax("vector", i64([0], [2]), vals(2), shape(3), error=True),
]


def binary(op, name, a, b, error=False, **extra):
    (ai, av, ash), (bi, bv, bsh) = a, b
    return case(op, name=name, a_indices=ai, a_values=av, a_shape=ash, b_indices=bi, b_values=bv,
                b_shape=bsh, error=error, dynamic=error, **extra)


A = (IDX, vals(4), shape(4, 4))
B = (i64([0, 1], [2, 2], [3, 2], [3, 3]), np.array([5, -3, -1, 2], np.float32), shape(4, 4))
BINARY = []
for _op in ("SparseSparseMaximum", "SparseSparseMinimum"):
    BINARY += [
        binary(_op, "float", A, B),
        binary(_op, "int64", (IDX3, vals(5, np.int64), shape(2, 3, 2)),
               (IDX3[[1, 4]], np.array([7, -9], np.int64), shape(2, 3, 2))),
        binary(_op, "double", (A[0], vals(4, np.float64), A[2]), (B[0], B[1].astype(np.float64), B[2])),
        binary(_op, "int32", (A[0], vals(4, np.int32), A[2]), (B[0], B[1].astype(np.int32), B[2])),
        binary(_op, "half", (A[0], vals(4, np.float16), A[2]), (B[0], B[1].astype(np.float16), B[2])),
        binary(_op, "uint8", (A[0], vals(4, np.uint8), A[2]), (B[0], B[1].astype(np.uint8), B[2])),
        binary(_op, "empty", (EMPTY, np.zeros(0, np.float32), shape(2, 2)), (EMPTY, np.zeros(0, np.float32),
                                                                            shape(2, 2))),
        binary(_op, "one_empty", A, (EMPTY, np.zeros(0, np.float32), shape(4, 4))),
        binary(_op, "shape_mismatch", A, (B[0], B[1], shape(4, 5)), error=True),
    ]
BINARY += [
    binary("SparseAdd", "float", A, B, thresh=np.float32(0)),
    binary("SparseAdd", "thresh", A, B, thresh=np.float32(1.5)),
    binary("SparseAdd", "int64", (A[0], vals(4, np.int64), A[2]), (B[0], B[1].astype(np.int64), B[2]),
           thresh=np.int64(0)),
    binary("SparseAdd", "int32_thresh", (A[0], vals(4, np.int32), A[2]), (B[0], B[1].astype(np.int32), B[2]),
           thresh=np.int32(2)),
    binary("SparseAdd", "complex", (A[0], vals(4, np.complex64), A[2]), (B[0], B[1].astype(np.complex64), B[2]),
           thresh=np.float32(0.5)),
    binary("SparseAdd", "double", (A[0], vals(4, np.float64), A[2]), (B[0], B[1].astype(np.float64), B[2]),
           thresh=np.float64(0)),
    binary("SparseAdd", "empty", (EMPTY, np.zeros(0, np.float32), shape(2, 2)),
           (EMPTY, np.zeros(0, np.float32), shape(2, 2)), thresh=np.float32(0)),
    binary("SparseAdd", "shape_mismatch", A, (B[0], B[1], shape(5, 4)), thresh=np.float32(0), error=True),
]

CASES = TO_DENSE + REORDER + RESHAPE + MATMUL + DENSE_ADD + FILL + SLICE + REDUCE + SOFTMAX + BINARY


def concat(name, parts, dim, error=False):
    return case("SparseConcat", name=name, indices=[p[0] for p in parts], values=[p[1] for p in parts],
                shapes=[p[2] for p in parts], concat_dim=dim, error=error, dynamic=error)


C2 = (i64([0, 0], [1, 2]), np.array([7, 8], np.float32), shape(2, 3))
C4 = (IDX, vals(4), shape(4, 4))
CONCAT = [
    concat("rows", [C4, (C2[0], C2[1], shape(2, 4))], 0),
    concat("columns", [(IDX[:2], vals(2), shape(2, 4)), C2], 1),
    concat("negative_dim", [(IDX[:2], vals(2), shape(2, 4)), C2, C2], -1),
    concat("rank3", [(IDX3, vals(5, np.int64), shape(2, 3, 2)), (IDX3[:2], np.array([9, 9], np.int64),
                                                                 shape(2, 3, 2))], 2),
    concat("string", [(IDX[:2], np.array([b"a", b"b"], object), shape(2, 4)),
                      (C2[0], np.array([b"c", b"d"], object), shape(2, 3))], 1),
    concat("bool", [(IDX[:2], np.array([True, False]), shape(2, 4)), (C2[0], np.array([False, True]),
                                                                      shape(2, 3))], 1),
    concat("empty", [(EMPTY, np.zeros(0, np.float32), shape(2, 2)), C2], 1),
    concat("shape_mismatch", [C4, C2], 1, error=True),
]
CASES += CONCAT


NUMERIC = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
           BF16, np.float32, np.float64, np.complex64, np.complex128]
REAL = [t for t in NUMERIC if np.dtype(t).kind != "c"]
ANY = NUMERIC + [np.bool_]


def typed(dtype, n=4):
    """n small values of `dtype` (positive, so that unsigned types hold them)."""
    return (np.arange(n) % 2 == 0) if dtype is np.bool_ else (np.arange(n) + 1).astype(dtype)


def _name(dtype) -> str:
    return f"dtype_{np.dtype(dtype).name}"


DTYPES = (
    [to_dense(_name(t), IDX, shape(4, 4), typed(t), typed(t, 1)[0]) for t in ANY]
    + [reorder(_name(t), UNSORTED, typed(t), shape(4, 4)) for t in ANY]
    + [matmul(_name(t), IDX, typed(t), shape(4, 4), np.ones((4, 2), t))
       for t in (np.int32, np.float16, BF16, np.float32, np.float64, np.complex64, np.complex128)]
    + [dense_add(_name(t), IDX, typed(t), shape(4, 4), np.ones((4, 4), t)) for t in NUMERIC]
    + [fill(_name(t), IDX, typed(t), shape(5, 4), typed(t, 1)[0]) for t in ANY]
    + [slice_(_name(t), IDX, typed(t), shape(4, 4), shape(1, 0), shape(3, 3)) for t in ANY]
    + [reduce(op, _name(t), IDX, typed(t), shape(4, 4), [1])
       for op in ("SparseReduceSum", "SparseReduceSumSparse") for t in NUMERIC]
    + [reduce(op, _name(t), IDX, typed(t), shape(4, 4), [0])
       for op in ("SparseReduceMax", "SparseReduceMaxSparse") for t in REAL]
    + [softmax(_name(t), IDX, typed(t), shape(4, 4)) for t in (np.float16, np.float32, np.float64)]
    + [binary(op, _name(t), (IDX, typed(t), shape(4, 4)), (B[0], typed(t)[::-1].copy(), B[2]))
       for op in ("SparseSparseMaximum", "SparseSparseMinimum") for t in REAL]
    + [binary("SparseAdd", _name(t), (IDX, typed(t), shape(4, 4)), (B[0], typed(t), B[2]),
              thresh=np.array(0, np.dtype(t).char.lower() if np.dtype(t).kind == "c" else t))
       for t in (np.int8, np.int16, np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128)]
    + [concat(_name(t), [(IDX[:2], typed(t, 2), shape(2, 4)), (C2[0], typed(t, 2), shape(2, 3))], 1)
       for t in ANY]
)
CASES += DTYPES


def cwise(op, name, indices, values, dense_shape, dense, error=False):
    return case(op, name=name, sp_indices=indices, sp_values=values, sp_shape=dense_shape, dense=dense,
                error=error, dynamic=error)


CWISE = []
for _op in ("SparseDenseCwiseMul", "SparseDenseCwiseDiv", "SparseDenseCwiseAdd"):
    CWISE += [
        cwise(_op, "scalar", IDX, vals(4), shape(4, 4), np.float32(2.5)),
        cwise(_op, "row_broadcast", IDX, vals(4, np.float64), shape(4, 4), np.array([1.0, 2, -4, 8])),
        cwise(_op, "full", IDX3, vals(5), shape(2, 3, 2), (np.arange(12, dtype=np.float32) + 1).reshape(2, 3, 2)),
        cwise(_op, "column_broadcast", IDX, vals(4), shape(4, 4), np.array([[1], [2], [3], [4]], np.float32)),
        cwise(_op, "int32", IDX, np.array([7, -7, 9, -1], np.int32), shape(4, 4), np.array([2, -2, 4, 3], np.int32)),
        cwise(_op, "int64", IDX, vals(4, np.int64), shape(4, 4), np.int64(3)),
        cwise(_op, "half", IDX, vals(4, np.float16), shape(4, 4), np.float16(0.5)),
        cwise(_op, "empty", EMPTY, np.zeros(0, np.float32), shape(2, 2), np.float32(3)),
        cwise(_op, "bad_broadcast", IDX, vals(4), shape(4, 4), np.ones(3, np.float32), error=True),
        cwise(_op, "higher_rank", IDX, vals(4), shape(4, 4), np.ones((1, 4, 4), np.float32), error=True),
    ]
CASES += CWISE
CASES += [cwise(op, _name(t), IDX, typed(t), shape(4, 4), typed(t)) for t in REAL
          for op in ("SparseDenseCwiseMul", "SparseDenseCwiseDiv", "SparseDenseCwiseAdd")]


def split(name, dim, indices, values, dense_shape, num_split, error=False):
    return case("SparseSplit", name=name, split_dim=np.array(dim, np.int64), indices=indices, values=values,
                shape=dense_shape, num_split=num_split, error=error, dynamic=error)


CASES += [
    split("rows", 0, IDX, vals(4), shape(4, 4), 2),
    split("uneven_columns", 1, IDX, vals(4, np.int64), shape(4, 4), 3),
    split("negative_dim", -1, IDX3, np.array([b"a", b"b", b"c", b"d", b"e"], object), shape(2, 3, 2), 2),
    split("one", 0, IDX, vals(4, np.float64), shape(4, 4), 1),
    split("bool", 1, IDX, np.array([True, False, True, True]), shape(4, 4), 4),
    split("empty", 0, EMPTY, np.zeros(0, np.float32), shape(4, 2), 2),
    split("too_many", 0, IDX, vals(4), shape(4, 4), 5, error=True),
]
