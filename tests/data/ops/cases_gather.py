"""Kernel cases for ops that read or write tensor elements at computed positions."""
import ml_dtypes
import numpy as np
import tensorflow as tf


def f32(*shape):
    return np.arange(np.prod(shape, dtype=int), dtype=np.float32).reshape(shape) * 1.5 - 4


def strs(*shape):
    flat = np.array([f"s{i}".encode() for i in range(int(np.prod(shape, dtype=int)))], object)
    return flat.reshape(shape)


def i32(*values):
    return np.array(values, np.int32)


def i64(*values):
    return np.array(values, np.int64)


def index(values, dtype=np.int32):
    return np.array(values, dtype)


BF16 = ml_dtypes.bfloat16
P34 = f32(3, 4)
P234 = f32(2, 3, 4)
AXIS0 = np.array(0, np.int32)


def gv2(name, params, indices, axis, error=False, **attrs):
    return case("GatherV2", name=name, params=params, indices=indices,
                axis=np.array(axis, np.int32), error=error,
                dynamic=error, **attrs)


GATHERS = [
    gv2("vector", P34, i32(2, 0, 2), 0),
    gv2("axis1_matrix", P34, index([[3, 0], [1, 1]], np.int64), 1),
    gv2("negative_axis", P234, i32(1), -1),
    case("GatherV2", name="int64_axis", params=P234, indices=i64(0, 2),
         axis=np.array(1, np.int64)),
    gv2("scalar_index", P34, np.array(1, np.int32), 0),
    gv2("scalar_index_axis1", P34, np.array(3, np.int64), 1),
    gv2("scalar_result", f32(3), np.array(2, np.int32), 0),
    gv2("empty_indices", P34, np.zeros((0,), np.int32), 1),
    gv2("empty_indices_matrix", P34, np.zeros((2, 0), np.int64), 0),
    gv2("empty_params", np.zeros((0, 3), np.float32), np.zeros((0,), np.int32), 0),
    gv2("empty_inner", np.zeros((3, 0), np.float32), i32(2, 1), 0),
    gv2("empty_result_unchecked", np.zeros((2, 0), np.float32), i32(5, -1), 0),
    gv2("empty_batch_unchecked", np.zeros((3, 2, 0), np.int64), index([[7]] * 3), 1,
        batch_dims=1),
    gv2("string", strs(4), i32(3, 3, 0), 0),
    gv2("bool", np.array([[True, False], [False, False]]), i32(1, 0), 1),
    gv2("uint8", np.arange(6, dtype=np.uint8).reshape(2, 3), i32(2), 1),
    gv2("int16_indices", P34, np.array([2, 1], np.int16), 0),
    gv2("bfloat16", f32(4).astype(BF16), i32(1, 3), 0),
    gv2("complex", np.array([1 + 1j, 2 - 1j], np.complex128), i32(1, 0, 1), 0),
    gv2("batch1", P234, index([[2, 0], [1, 1]]), 1, batch_dims=1),
    gv2("batch1_axis2", P234, index([[3], [0]], np.int64), 2, batch_dims=1),
    gv2("batch_negative", P234, index([[0, 3, 1], [2, 2, 2]]), -1, batch_dims=-1),
    gv2("batch2", P234, index([[[1], [0], [3]], [[2], [2], [0]]]), 2, batch_dims=2),
    gv2("batch_scalar_indices", f32(2, 3), i32(2, 0), 1, batch_dims=1),
    gv2("batch_empty", np.zeros((0, 3), np.float32), np.zeros((0, 2), np.int32), 1,
        batch_dims=1),
    gv2("out_of_range", P34, i32(0, 3), 0, error=True),
    gv2("negative_index", P34, index([[0, -1]]), 1, error=True),
    gv2("empty_dimension", np.zeros((0, 2), np.float32), i32(0), 0, error=True),
    gv2("axis_out_of_range", P34, i32(0), 2, error=True),
    gv2("batch_mismatch", P234, index([[0], [1], [0]]), 1, batch_dims=1, error=True),
    gv2("batch_after_axis", P234, index([[0], [1]]), 0, batch_dims=1, error=True),
    case("Gather", params=P34, indices=i32([1, 1], [0, 2])),
    case("Gather", name="int64", params=strs(3), indices=i64(2, 0)),
    case("Gather", name="scalar", params=P34, indices=np.array(2, np.int64)),
    case("Gather", name="empty", params=P34, indices=np.zeros((0, 2), np.int32)),
    case("Gather", name="out_of_range", params=P34, indices=i32(5), error=True, dynamic=True),
]

GATHER_ND = [
    case("GatherNd", params=P34, indices=i32([1, 2], [2, 3], [0, 0])),
    case("GatherNd", name="slices", params=P234, indices=i64([1], [0])),
    case("GatherNd", name="partial", params=P234, indices=i32([[1, 2]], [[0, 0]])),
    case("GatherNd", name="single_vector", params=P34, indices=i32(2, 1)),
    case("GatherNd", name="single_slice", params=P34, indices=i32(2)),
    case("GatherNd", name="depth0", params=f32(3), indices=np.zeros((2, 0), np.int32)),
    case("GatherNd", name="empty_indices", params=P34, indices=np.zeros((0, 2), np.int64)),
    case("GatherNd", name="empty_params", params=np.zeros((0, 3), np.float32),
         indices=np.zeros((0, 1), np.int32)),
    case("GatherNd", name="empty_inner", params=np.zeros((3, 0), np.float32),
         indices=np.zeros((2, 0), np.int32), error=True, dynamic=True),
    case("GatherNd", name="string", params=strs(2, 2), indices=i32([1, 0], [0, 1])),
    case("GatherNd", name="bool", params=np.array([True, False, True]), indices=i32([2], [1])),
    case("GatherNd", name="int16_indices", params=P34, indices=np.array([[2]], np.int16)),
    case("GatherNd", name="float16", params=f32(2, 2).astype(np.float16), indices=i32([1, 1])),
    case("GatherNd", name="ignore_bad", params=f32(3, 2), indices=i32([5], [1], [-1]),
         bad_indices_policy="IGNORE"),
    case("GatherNd", name="out_of_range", params=P34, indices=i32([1, 4]), error=True,
         dynamic=True),
    case("GatherNd", name="negative", params=P34, indices=i32([-1, 0]), error=True,
         dynamic=True),
    case("GatherNd", name="too_deep", params=f32(3), indices=i32([1, 1]), error=True,
         dynamic=True),
    case("GatherNd", name="empty_dimension", params=np.zeros((2, 0), np.float32),
         indices=i32([0]), error=True, dynamic=True),
]

SCATTERS = [
    case("ScatterNd", indices=i32([4], [3], [1], [7]), updates=f32(4),
         shape=i32(8)),
    case("ScatterNd", name="duplicates", indices=i64([1], [0], [1], [1]),
         updates=np.array([1, 2, 3, 4], np.int64), shape=i64(3)),
    case("ScatterNd", name="slices", indices=i32([0], [2]), updates=f32(2, 4), shape=i32(4, 4)),
    case("ScatterNd", name="elements", indices=i32([[0, 1], [2, 3]], [[0, 1], [1, 0]]),
         updates=f32(2, 2), shape=i32(3, 4)),
    case("ScatterNd", name="empty_indices", indices=np.zeros((0, 1), np.int32),
         updates=np.zeros((0, 3), np.float32), shape=i32(2, 3)),
    case("ScatterNd", name="empty_output", indices=np.zeros((0, 1), np.int32),
         updates=np.zeros((0, 0), np.float32), shape=i32(2, 0)),
    case("ScatterNd", name="depth0_empty_output", indices=np.zeros((2, 0), np.int32),
         updates=np.zeros((2, 3, 0), np.float32), shape=i32(3, 0)),
    case("ScatterNd", name="bool", indices=i32([1], [1], [2]), updates=np.array([True] * 3),
         shape=i32(4)),
    case("ScatterNd", name="string", indices=i32([1], [0], [1], [1]),
         updates=np.array([b"a", b"b", b"c", b"d"], object), shape=i32(2)),
    case("ScatterNd", name="float16", indices=i32([0], [0]),
         updates=np.array([0.5, 0.25], np.float16), shape=i32(2)),
    case("ScatterNd", name="complex", indices=i32([1]), updates=np.array([2j], np.complex64),
         shape=i32(2)),
    case("ScatterNd", name="ignore_bad", indices=i32([1], [5], [-1]), updates=f32(3),
         shape=i32(3), bad_indices_policy="IGNORE"),
    case("ScatterNd", name="out_of_range", indices=i32([1], [3]), updates=f32(2), shape=i32(3),
         error=True, dynamic=True),
    case("ScatterNd", name="negative", indices=i32([-1]), updates=f32(1), shape=i32(3),
         error=True, dynamic=True),
    case("ScatterNd", name="into_empty", indices=i32([0]), updates=f32(1, 0), shape=i32(2, 0),
         error=True, dynamic=True),
    case("ScatterNd", name="depth0", indices=np.zeros((2, 0), np.int32), updates=f32(2, 3),
         shape=i32(3), error=True, dynamic=True),
    case("ScatterNd", name="bad_updates", indices=i32([0], [1]), updates=f32(3), shape=i32(4),
         error=True, dynamic=True),
    case("TensorScatterUpdate", tensor=f32(5), indices=i32([4], [0]),
         updates=np.array([10, 20], np.float32)),
    case("TensorScatterUpdate", name="slices", tensor=P34, indices=i64([2], [0]),
         updates=-f32(2, 4)),
    case("TensorScatterUpdate", name="elements", tensor=P234, indices=i32([1, 2, 3], [0, 0, 0]),
         updates=np.array([100, 200], np.float32)),
    case("TensorScatterUpdate", name="string", tensor=strs(3),
         indices=i32([1]), updates=np.array([b"new"], object)),
    case("TensorScatterUpdate", name="bool", tensor=np.zeros(3, bool), indices=i32([2]),
         updates=np.array([True])),
    case("TensorScatterUpdate", name="empty_indices", tensor=P34,
         indices=np.zeros((0, 2), np.int32), updates=np.zeros((0,), np.float32)),
    case("TensorScatterUpdate", name="out_of_range", tensor=f32(3), indices=i32([3]),
         updates=f32(1), error=True, dynamic=True),
    case("TensorScatterAdd", tensor=f32(5), indices=i32([4], [0], [4]),
         updates=np.array([10, 20, 30], np.float32)),
    case("TensorScatterAdd", name="slices", tensor=np.ones((3, 2), np.int64),
         indices=i64([2], [2]), updates=np.arange(4, dtype=np.int64).reshape(2, 2)),
    case("TensorScatterAdd", name="empty_indices", tensor=P34,
         indices=np.zeros((0, 1), np.int32), updates=np.zeros((0, 4), np.float32)),
    case("TensorScatterAdd", name="double", tensor=np.zeros(2), indices=i32([1]),
         updates=np.array([0.1])),
    case("TensorScatterAdd", name="negative", tensor=f32(3), indices=i32([-1]),
         updates=f32(1), error=True, dynamic=True),
]

ENCODINGS = [
    case("OneHot", indices=i64(0, 2, 1), depth=np.array(3, np.int32),
         on_value=np.array(1, np.float32), off_value=np.array(0, np.float32)),
    case("OneHot", name="axis0", indices=i32(0, 2, 1), depth=np.array(4, np.int32),
         on_value=np.array(5, np.int32), off_value=np.array(-1, np.int32), axis=0),
    case("OneHot", name="matrix_axis1", indices=i64([0, 1], [2, -1]),
         depth=np.array(3, np.int32), on_value=np.array(1.5, np.float64),
         off_value=np.array(0.5, np.float64), axis=1),
    case("OneHot", name="out_of_range", indices=i64(-1, 3, 7, 2), depth=np.array(3, np.int32),
         on_value=np.array(True), off_value=np.array(False)),
    case("OneHot", name="depth0", indices=i64(0, 1), depth=np.array(0, np.int32),
         on_value=np.array(1, np.float32), off_value=np.array(0, np.float32)),
    case("OneHot", name="scalar", indices=np.array(1, np.int32), depth=np.array(2, np.int32),
         on_value=np.array(1, np.int64), off_value=np.array(0, np.int64)),
    case("OneHot", name="uint8", indices=np.array([0, 255, 2], np.uint8),
         depth=np.array(3, np.int32), on_value=np.array(1, np.int8),
         off_value=np.array(0, np.int8)),
    case("OneHot", name="int8", indices=np.array([-1, 1], np.int8), depth=np.array(2, np.int32),
         on_value=np.array(1, np.float16), off_value=np.array(0, np.float16)),
    case("OneHot", name="string", indices=i64(2, 0), depth=np.array(3, np.int32),
         on_value=np.array(b"on", object), off_value=np.array(b"off", object)),
    case("OneHot", name="empty", indices=np.zeros((0, 2), np.int64), depth=np.array(3, np.int32),
         on_value=np.array(1, np.float32), off_value=np.array(0, np.float32), axis=1),
    case("OneHot", name="negative_depth", indices=i64(0), depth=np.array(-1, np.int32),
         on_value=np.array(1, np.float32), off_value=np.array(0, np.float32), error=True,
         dynamic=True),
    case("Where", condition=np.array([[True, False], [False, True], [True, True]])),
    case("Where", name="float", condition=np.array([0, -0.0, np.nan, 2.5, -1], np.float32)),
    case("Where", name="int", condition=np.array([[[0, 3], [1, 0]]], np.int32)),
    case("Where", name="uint8", condition=np.array([0, 7, 0, 1], np.uint8)),
    case("Where", name="complex", condition=np.array([0, 1j, 0], np.complex64)),
    case("Where", name="bfloat16", condition=np.array([0, 1.5, -0.0], BF16)),
    case("Where", name="rank8", condition=np.arange(2 ** 8).reshape((2,) * 8) % 5 == 0),
    case("Where", name="scalar", condition=np.array(True), error=True),
    case("Where", name="empty", condition=np.zeros((2, 0), bool)),
    case("Where", name="none", condition=np.zeros((2, 3), np.int64)),
    case("Unique", x=i32(4, 1, 4, 2, 1, 1)),
    case("Unique", name="int64_idx", x=i64(7, 7, -3), out_idx=tf.int64),
    case("Unique", name="float", x=np.array([np.nan, 1, np.nan, -0.0, 0.0, 1], np.float32)),
    case("Unique", name="string", x=np.array([b"b", b"a", b"b", b""], object)),
    case("Unique", name="bool", x=np.array([False, False, True])),
    case("Unique", name="float16", x=np.array([2, 0.5, 2], np.float16)),
    case("Unique", name="empty", x=np.zeros(0, np.float64)),
    case("UniqueWithCounts", x=i64(5, 3, 5, 5, 0)),
    case("UniqueWithCounts", name="int64_idx", x=np.array([b"a", b"b", b"a"], object),
         out_idx=tf.int64),
    case("UniqueWithCounts", name="float", x=np.array([np.nan, 2, np.nan, 2], np.float64)),
    case("UniqueWithCounts", name="empty", x=np.zeros(0, np.int32)),
    case("InvertPermutation", x=i32(2, 0, 3, 1)),
    case("InvertPermutation", name="int64", x=i64(1, 0)),
    case("InvertPermutation", name="empty", x=np.zeros(0, np.int32)),
    case("InvertPermutation", name="duplicate", x=i32(0, 0, 1), error=True, dynamic=True),
    case("InvertPermutation", name="out_of_range", x=i32(0, 3, 1), error=True, dynamic=True),
    case("InvertPermutation", name="negative", x=i64(-1, 0), error=True, dynamic=True),
]

CASES = GATHERS + GATHER_ND + SCATTERS + ENCODINGS
