"""Kernel cases for segment reductions, sparse segment reductions, DynamicPartition and
DynamicStitch: every dtype TensorFlow registers on the CPU, empty segments (each reduction's
identity), empty inputs, negative and out-of-range ids, unsorted ids for the sorted ops, NaN and
inf. Sorted max/min NaN cases use one element per row: with more, TensorFlow's result depends on
Eigen's vectorization (see runtime/kernels/segments.py)."""
import ml_dtypes
import numpy as np

_rng = np.random.default_rng(14014)
nan, inf = np.nan, np.inf


def _r(*shape, dtype=np.float32):
    return (_rng.standard_normal(shape) * 3).astype(dtype)


def _i(values, dtype=np.int32):
    return np.array(values, dtype)


_IDS = _i([0, 0, 1, 3, 3, 3])
_NAN_DATA = np.array([5, nan, 1, 1, nan, nan, nan, -inf, -inf, nan, -inf, 2, 4], np.float32)
_NAN_IDS = _i([0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 6, 6])

SORTED = []
for _op in ("SegmentSum", "SegmentMean", "SegmentProd", "SegmentMax", "SegmentMin"):
    _dtypes = [np.float32, np.float64, np.int32, np.int64, np.int16, np.int8, np.uint8,
               np.uint16, np.float16, ml_dtypes.bfloat16]
    if _op in ("SegmentSum", "SegmentProd", "SegmentMean"):
        _dtypes += [np.complex64, np.complex128]
    for _dt in _dtypes:
        _data = (_r(6, 3) if np.dtype(_dt).kind in "fc" else _rng.integers(1, 5, (6, 3)))
        SORTED.append(case(_op, name=np.dtype(_dt).name, data=_data.astype(_dt),
                           segment_ids=_IDS))
    SORTED += [
        case(_op, name="ids_int64_rank3", data=_r(5, 2, 3),
             segment_ids=_i([0, 1, 1, 2, 4], np.int64)),
        case(_op, name="vector", data=_r(4), segment_ids=_i([1, 1, 2, 2])),
        case(_op, name="empty", data=_r(0, 3), segment_ids=_i([])),
        case(_op, name="nan_inf", data=_NAN_DATA, segment_ids=_NAN_IDS),
        case(_op, name="error_not_increasing", data=_r(4, 2), segment_ids=_i([0, 2, 1, 3]),
             error=True),
        case(_op, name="error_negative", data=_r(3, 2), segment_ids=_i([-1, 0, 1]), error=True),
        case(_op, name="error_size", data=_r(3, 2), segment_ids=_i([0, 1]), error=True,
             dynamic=True),
    ]
SORTED += [
    case("SegmentMean", name="int_truncates", data=_i([7, -7, 2, -5, 1]),
         segment_ids=_i([0, 0, 1, 1, 1])),
    case("SegmentSum", name="nan_inf_wide", data=np.tile(_NAN_DATA[:, None], (1, 9)),
         segment_ids=_NAN_IDS),
]

UNSORTED = []
for _op in ("UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMax",
            "UnsortedSegmentMin"):
    _dtypes = [np.float32, np.float64, np.int32, np.int64, np.int16, np.int8, np.uint8,
               np.uint16, np.uint32, np.uint64, np.float16, ml_dtypes.bfloat16]
    if _op in ("UnsortedSegmentSum", "UnsortedSegmentProd"):
        _dtypes += [np.complex64, np.complex128]
    for _dt in _dtypes:
        _data = (_r(6, 2) if np.dtype(_dt).kind in "fc" else _rng.integers(1, 5, (6, 2)))
        UNSORTED.append(case(_op, name=np.dtype(_dt).name, data=_data.astype(_dt),
                             segment_ids=_i([3, 0, 3, -1, 1, 0]), num_segments=_i(5)))
    UNSORTED += [
        case(_op, name="ids_matrix_int64", data=_r(2, 3, 2), segment_ids=_i([[2, 0, 2], [1, -3, 0]],
             np.int64), num_segments=np.int64(4)),
        case(_op, name="empty", data=_r(0, 2), segment_ids=_i([]), num_segments=_i(3)),
        case(_op, name="zero_segments", data=_r(2, 2), segment_ids=_i([-1, -2]),
             num_segments=_i(0)),
        case(_op, name="nan_inf", data=_NAN_DATA, segment_ids=_NAN_IDS, num_segments=_i(8)),
        case(_op, name="nan_inf_wide", data=np.tile(_NAN_DATA[:, None], (1, 9)),
             segment_ids=_NAN_IDS, num_segments=_i(8)),
        case(_op, name="error_out_of_range", data=_r(3, 2), segment_ids=_i([0, 3, 1]),
             num_segments=_i(3), error=True),
        case(_op, name="error_shape", data=_r(3, 2), segment_ids=_i([0, 1]), num_segments=_i(3),
             error=True, dynamic=True),
    ]

SPARSE = []
for _kind in ("Sum", "Mean", "SqrtN"):
    _op = f"SparseSegment{_kind}"
    _dtypes = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
    if _kind == "Sum":
        _dtypes += [np.int32, np.int64, np.int8, np.uint8, np.int16]
    for _dt in _dtypes:
        _data = (_r(5, 3) if np.dtype(_dt).kind == "f" else _rng.integers(-4, 5, (5, 3)))
        SPARSE.append(case(_op, name=np.dtype(_dt).name, data=_data.astype(_dt),
                           indices=_i([4, 0, 0, 2, 1]), segment_ids=_i([0, 0, 2, 2, 3])))
        SPARSE.append(case(_op + "WithNumSegments", name=np.dtype(_dt).name,
                           data=_data.astype(_dt), indices=_i([4, 0, 0, 2, 1]),
                           segment_ids=_i([0, 0, 2, 2, 3]), num_segments=_i(6)))
    SPARSE += [
        case(_op, name="int64_indices", data=_r(4, 2, 2), indices=_i([3, 1, 3], np.int64),
             segment_ids=_i([1, 1, 1], np.int64)),
        case(_op, name="empty", data=_r(3, 2), indices=_i([]), segment_ids=_i([])),
        case(_op, name="nan_inf", data=np.float32([nan, inf, -inf, 1]), indices=_i([0, 3, 1, 2]),
             segment_ids=_i([0, 0, 1, 1])),
        case(_op, name="error_index", data=_r(3, 2), indices=_i([0, 3]), segment_ids=_i([0, 0]),
             error=True),
        case(_op, name="error_negative_index", data=_r(3, 2), indices=_i([-1, 0]),
             segment_ids=_i([0, 0]), error=True),
        case(_op, name="error_not_increasing", data=_r(3, 2), indices=_i([0, 1, 2]),
             segment_ids=_i([1, 0, 2]), error=True),
        case(_op, name="error_negative_id", data=_r(3, 2), indices=_i([0, 1]),
             segment_ids=_i([-1, 0]), error=True),
        case(_op + "WithNumSegments", name="empty", data=_r(3, 2), indices=_i([]),
             segment_ids=_i([]), num_segments=_i(2)),
        case(_op + "WithNumSegments", name="error_id_too_large", data=_r(3, 2),
             indices=_i([0, 1]), segment_ids=_i([0, 2]), num_segments=_i(2), error=True),
    ]

PARTITION = [
    case("DynamicPartition", name="float32", data=_r(5, 2), partitions=_i([1, 0, 2, 1, 1]),
         num_partitions=3),
    case("DynamicPartition", name="matrix_partitions_strings",
         data=np.array([[b"a", b"b"], [b"c", b"d"]], object), partitions=_i([[0, 1], [1, 1]]),
         num_partitions=2),
    case("DynamicPartition", name="int64_scalar_rows", data=_i([1, 2, 3], np.int64),
         partitions=_i([0, 0, 0]), num_partitions=2),
    case("DynamicPartition", name="bool", data=np.array([True, False, True]),
         partitions=_i([1, 1, 0]), num_partitions=2),
    case("DynamicPartition", name="empty", data=_r(0, 3), partitions=_i([]), num_partitions=2),
    case("DynamicPartition", name="error_out_of_range", data=_r(3), partitions=_i([0, 2, 1]),
         num_partitions=2, error=True),
    case("DynamicPartition", name="error_negative", data=_r(3), partitions=_i([0, -1, 1]),
         num_partitions=2, error=True),
]

STITCH = []
for _op in ("DynamicStitch", "ParallelDynamicStitch"):
    STITCH += [
        case(_op, name="float32", indices=[_i([0, 2]), _i([[1, 4], [3, 5]])],
             data=[_r(2, 3), _r(2, 2, 3)]),
        case(_op, name="gaps_int64", indices=[_i([0, 4]), _i([2])],
             data=[_i([1, 2], np.int64), _i([3], np.int64)]),
        case(_op, name="strings", indices=[_i([1]), _i([0])],
             data=[np.array([b"x"], object), np.array([b"y"], object)]),
        case(_op, name="empty", indices=[_i([])], data=[_r(0, 2)]),
        case(_op, name="error_negative", indices=[_i([0, -1])], data=[_r(2)], error=True),
    ]
STITCH += [
    case("DynamicStitch", name="duplicates_last_wins", indices=[_i([0, 1, 1]), _i([1, 0])],
         data=[_r(3), _r(2)]),
]

CASES = SORTED + UNSORTED + SPARSE + PARTITION + STITCH

_T = _r(4, 3)
SCATTER = []
for _op in ("TensorScatterSub", "TensorScatterMin", "TensorScatterMax", "TensorScatterAdd",
            "TensorScatterUpdate"):
    _dtypes = [np.float32, np.float64, np.int32, np.int64, np.float16, ml_dtypes.bfloat16,
               np.int8, np.uint8, np.int16]
    if _op in ("TensorScatterSub", "TensorScatterAdd", "TensorScatterUpdate"):
        _dtypes += [np.complex64]
    for _dt in _dtypes:
        _base = _r(4, 3) if np.dtype(_dt).kind in "fc" else _rng.integers(0, 9, (4, 3))
        _upd = _r(3, 3) if np.dtype(_dt).kind in "fc" else _rng.integers(0, 9, (3, 3))
        SCATTER.append(case(_op, name=np.dtype(_dt).name, tensor=_base.astype(_dt),
                            indices=_i([[2], [0], [2]]), updates=_upd.astype(_dt)))
    SCATTER += [
        case(_op, name="elements_int64", tensor=_T, indices=_i([[0, 1], [3, 2], [0, 1]], np.int64),
             updates=_r(3)),
        case(_op, name="empty_indices", tensor=_T, indices=np.zeros((0, 1), np.int32),
             updates=_r(0, 3)),
        case(_op, name="empty_tensor", tensor=_r(0, 3), indices=np.zeros((0, 1), np.int32),
             updates=_r(0, 3)),
        case(_op, name="nan_inf", tensor=np.float32([nan, 1, -inf, 2]),
             indices=_i([[0], [1], [2], [3], [3]]), updates=np.float32([3, nan, 5, inf, nan])),
        case(_op, name="error_out_of_range", tensor=_T, indices=_i([[4]]), updates=_r(1, 3),
             error=True),
        case(_op, name="error_negative", tensor=_T, indices=_i([[-1]]), updates=_r(1, 3),
             error=True),
        case(_op, name="error_updates_shape", tensor=_T, indices=_i([[1]]), updates=_r(2, 3),
             error=True, dynamic=True),
    ]
SCATTER += [
    case("TensorScatterUpdate", name="duplicates_last_wins", tensor=_r(3),
         indices=_i([[1], [1], [0], [1]]), updates=_r(4)),
]

CASES += SCATTER
