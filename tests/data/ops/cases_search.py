"""Kernel cases for the "other" ops of issue 14: LowerBound, UpperBound, Bucketize,
HistogramFixedWidth, InTopKV2, UnravelIndex, Roll, ReverseSequence, Bitcast,
CumulativeLogsumexp and CTCGreedyDecoder: every CPU dtype, empty tensors, negative axes,
out-of-range values (TensorFlow's error or defined result), NaN and inf. A sequence_length
longer than the inputs is a FailedPrecondition error in CTCGreedyDecoder, which the recording
script does not take as a case."""
import ml_dtypes
import numpy as np

_rng = np.random.default_rng(141414)
nan, inf = np.nan, np.inf
_BF16 = ml_dtypes.bfloat16


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _i(values, dtype=np.int32):
    return np.array(values, dtype)


_SORTED = np.sort(_rng.integers(0, 10, (3, 6)), axis=1)
BOUNDS = []
for _op in ("LowerBound", "UpperBound"):
    for _dt in (np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.int16,
                np.uint16, np.float16, _BF16):
        BOUNDS.append(case(_op, name=np.dtype(_dt).name, sorted_inputs=_SORTED.astype(_dt),
                           values=_rng.integers(-1, 12, (3, 5)).astype(_dt)))
    BOUNDS += [
        case(_op, name="out_int64", sorted_inputs=_SORTED.astype(np.float32),
             values=_r(3, 2) * 5, out_type="int64"),
        case(_op, name="nan_inf", sorted_inputs=np.float32([[-inf, 0, 1, 1, inf]]),
             values=np.float32([[nan, -inf, inf, 1, 0.5, -0.0]])),
        case(_op, name="empty_rows", sorted_inputs=np.zeros((2, 0), np.float32),
             values=_r(2, 3)),
        case(_op, name="empty_values", sorted_inputs=_SORTED.astype(np.int32),
             values=np.zeros((3, 0), np.int32)),
        case(_op, name="error_batch", sorted_inputs=_SORTED.astype(np.float32), values=_r(2, 3),
             error=True, dynamic=True),
    ]

_EDGES = [-1.5, 0.0, 0.0, 2.0, 10.0]
BUCKETIZE = [
    case("Bucketize", name="float32",
         input=np.float32([[-2, -1.5, 0, 1, 2], [9.99, 10, 11, nan, -inf]]),
         boundaries=_EDGES),
    case("Bucketize", name="float64", input=np.float64([-1.5000001, 0.1, inf]), boundaries=_EDGES),
    case("Bucketize", name="int32", input=_i([-3, -1, 0, 2, 10, 11]), boundaries=_EDGES),
    case("Bucketize", name="int64", input=_i([[-3, 0], [5, 16777217]], np.int64),
         boundaries=[0.5, 16777216.0]),
    case("Bucketize", name="no_boundaries", input=_r(3), boundaries=[]),
    case("Bucketize", name="empty", input=_r(0, 2), boundaries=_EDGES),
    case("Bucketize", name="error_unsorted", input=_r(3), boundaries=[1.0, 0.0], error=True),
]

HISTOGRAM = [
    case("HistogramFixedWidth", name="float32", values=_r(50) * 3,
         value_range=np.float32([-2, 2]), nbins=_i(7)),
    case("HistogramFixedWidth", name="float64_int64_out", values=_r(30, 2, dtype=np.float64),
         value_range=np.float64([-1, 1.5]), nbins=_i(4), dtype="int64"),
    case("HistogramFixedWidth", name="int32", values=_i([0, 1, 2, 3, 4, 5, 9, -4, 100]),
         value_range=_i([0, 5]), nbins=_i(5)),
    case("HistogramFixedWidth", name="int64", values=_i([0, 10, 20, 30], np.int64),
         value_range=_i([0, 30], np.int64), nbins=_i(3)),
    case("HistogramFixedWidth", name="inf", values=np.float32([-inf, inf, 0.5, 1.0]),
         value_range=np.float32([0, 1]), nbins=_i(2)),
    case("HistogramFixedWidth", name="empty", values=_r(0), value_range=np.float32([0, 1]),
         nbins=_i(3)),
    case("HistogramFixedWidth", name="error_range", values=_r(3), value_range=np.float32([1, 1]),
         nbins=_i(3), error=True),
    case("HistogramFixedWidth", name="error_nbins", values=_r(3), value_range=np.float32([0, 1]),
         nbins=_i(0), error=True),
]

_PRED = np.float32([[0.1, 0.5, 0.5, 0.2], [nan, 1, 2, 3], [1, inf, 0, 0], [4, 3, 2, 1],
                    [0, 0, 0, 0]])
TOPK = [
    case("InTopKV2", name="ties_and_nan", predictions=_PRED, targets=_i([2, 0, 1, 3, 0]),
         k=_i(1)),
    case("InTopKV2", name="k2", predictions=_PRED, targets=_i([3, 3, 0, 1, 2]), k=_i(2)),
    case("InTopKV2", name="out_of_range_int64", predictions=_PRED,
         targets=_i([4, -1, 0, 1, 3], np.int64), k=np.int64(4)),
    case("InTopKV2", name="k0", predictions=_PRED, targets=_i([0, 1, 2, 3, 0]), k=_i(0)),
    case("InTopKV2", name="empty", predictions=_r(0, 3), targets=_i([]), k=_i(1)),
    case("InTopKV2", name="error_batch", predictions=_PRED, targets=_i([0, 1]), k=_i(1),
         error=True, dynamic=True),
]

UNRAVEL = [
    case("UnravelIndex", name="vector", indices=_i([0, 5, 23, 11]), dims=_i([2, 3, 4])),
    case("UnravelIndex", name="scalar_int64", indices=np.int64(7), dims=_i([3, 3], np.int64)),
    case("UnravelIndex", name="error_empty", indices=_i([]), dims=_i([2, 2]), error=True),
    case("UnravelIndex", name="error_out_of_range", indices=_i([1, 6]), dims=_i([2, 3]),
         error=True),
    case("UnravelIndex", name="negative_truncates", indices=_i([-1, -6, -7, 2]), dims=_i([2, 3])),
    case("UnravelIndex", name="error_matrix", indices=_i([[1, 2]]), dims=_i([2, 3]), error=True,
         dynamic=True),
    case("UnravelIndex", name="error_dims_zero", indices=_i([0]), dims=_i([2, 0]), error=True),
]

ROLL = [
    case("Roll", name="scalar_shift", input=_r(5), shift=_i(2), axis=_i(0)),
    case("Roll", name="multi_axis_negative", input=_r(3, 4, 2), shift=_i([-1, 5]),
         axis=_i([1, -3])),
    case("Roll", name="repeated_axis", input=_i([[1, 2, 3], [4, 5, 6]]), shift=_i([1, 1]),
         axis=_i([1, 1])),
    case("Roll", name="int64_shift", input=_i([1, 2, 3], np.uint8), shift=_i([-7], np.int64),
         axis=_i([0], np.int64)),
    case("Roll", name="strings", input=np.array([b"a", b"b", b"c"], object), shift=_i(1),
         axis=_i(0)),
    case("Roll", name="bool", input=np.array([True, False, False]), shift=_i(1), axis=_i(0)),
    case("Roll", name="complex_bf16", input=_r(4, dtype=_BF16), shift=_i(3), axis=_i(0)),
    case("Roll", name="empty", input=_r(0, 3), shift=_i(1), axis=_i(1)),
    case("Roll", name="error_axis", input=_r(2, 3), shift=_i(1), axis=_i(2), error=True),
    case("Roll", name="error_sizes", input=_r(2, 3), shift=_i([1, 2]), axis=_i([0]),
         error=True, dynamic=True),
]

REVERSE = [
    case("ReverseSequence", name="time_major", input=_r(5, 3, 2), seq_lengths=_i([5, 0, 2]),
         seq_dim=0, batch_dim=1),
    case("ReverseSequence", name="batch_major_int64", input=_i(np.arange(24).reshape(2, 4, 3)),
         seq_lengths=_i([3, 1], np.int64), seq_dim=1, batch_dim=0),
    case("ReverseSequence", name="seq_before_batch_later", input=_r(4, 2, 3),
         seq_lengths=_i([1, 2, 3]), seq_dim=0, batch_dim=2),
    case("ReverseSequence", name="strings", input=np.array([[b"a", b"b", b"c"]], object),
         seq_lengths=_i([2]), seq_dim=1, batch_dim=0),
    case("ReverseSequence", name="empty", input=_r(0, 3), seq_lengths=_i([]), seq_dim=1,
         batch_dim=0),
    case("ReverseSequence", name="error_too_long", input=_r(2, 3), seq_lengths=_i([4, 1]),
         seq_dim=1, batch_dim=0, error=True),
    case("ReverseSequence", name="error_lengths_size", input=_r(2, 3), seq_lengths=_i([1]),
         seq_dim=1, batch_dim=0, error=True, dynamic=True),
]

BITCAST = [
    case("Bitcast", name="f32_to_i32", input=np.float32([1.0, -0.0, nan, inf]), type="int32"),
    case("Bitcast", name="f32_to_u8", input=_r(2, 3), type="uint8"),
    case("Bitcast", name="u16_to_f32", input=_i(np.arange(8).reshape(4, 2), np.uint16),
         type="float32"),
    case("Bitcast", name="i64_to_c64", input=_i([1, 2], np.int64), type="complex64"),
    case("Bitcast", name="f16_to_bf16", input=_r(3, dtype=np.float16), type="bfloat16"),
    case("Bitcast", name="empty", input=_r(0, 2), type="int16"),
    case("Bitcast", name="f64_to_i32", input=_r(2, dtype=np.float64), type="int32"),
]

LOGSUMEXP = []
for _dt in (np.float32, np.float64, np.float16, _BF16):
    LOGSUMEXP.append(case("CumulativeLogsumexp", name=np.dtype(_dt).name, x=_r(3, 5, dtype=_dt) * 5,
                          axis=_i(1)))
LOGSUMEXP += [
    case("CumulativeLogsumexp", name="exclusive_reverse", x=_r(4, 3), axis=_i(-2),
         exclusive=True, reverse=True),
    case("CumulativeLogsumexp", name="exclusive", x=_r(5), axis=np.int64(0), exclusive=True),
    case("CumulativeLogsumexp", name="large", x=np.float32([1000, 1000, -1000, 88, 89]),
         axis=_i(0)),
    case("CumulativeLogsumexp", name="nan_inf", x=np.float32([-inf, -inf, 1, inf, nan, 2]),
         axis=_i(0)),
    case("CumulativeLogsumexp", name="empty", x=_r(0, 3), axis=_i(0)),
    case("CumulativeLogsumexp", name="error_axis", x=_r(2, 3), axis=_i(2), error=True),
]

_LOGITS = np.log(_rng.dirichlet(np.ones(5), (6, 3))).astype(np.float32)
_LOGITS[2, 0] = _LOGITS[1, 0]
_LOGITS[3, 0] = _LOGITS[1, 0]
CTC = [
    case("CTCGreedyDecoder", name="merge", inputs=_LOGITS, sequence_length=_i([6, 4, 0]),
         merge_repeated=True),
    case("CTCGreedyDecoder", name="no_merge", inputs=_LOGITS, sequence_length=_i([6, 4, 2]),
         merge_repeated=False),
    case("CTCGreedyDecoder", name="blank_first", inputs=_LOGITS, sequence_length=_i([6, 6, 6]),
         merge_repeated=True, blank_index=0),
    case("CTCGreedyDecoder", name="float64", inputs=_LOGITS.astype(np.float64),
         sequence_length=_i([3, 5, 6]), merge_repeated=True),
    case("CTCGreedyDecoder", name="nan_ties",
         inputs=np.float32([[[nan, 1, 2], [1, 1, 0]], [[0, nan, 0], [2, 2, 2]]]),
         sequence_length=_i([2, 2])),
    case("CTCGreedyDecoder", name="error_empty_batch", inputs=np.zeros((4, 0, 3), np.float32),
         sequence_length=_i([]), error=True),
]

CASES = BOUNDS + BUCKETIZE + HISTOGRAM + TOPK + UNRAVEL + ROLL + REVERSE + BITCAST + LOGSUMEXP + CTC

_BEAM_LOGITS = _rng.standard_normal((7, 3, 5)).astype(np.float32) * 2
BEAM = [
    case("CTCBeamSearchDecoder", name="width3_top2", inputs=_BEAM_LOGITS,
         sequence_length=_i([7, 4, 1]), beam_width=3, top_paths=2),
    case("CTCBeamSearchDecoder", name="zero_length_top1", inputs=_BEAM_LOGITS,
         sequence_length=_i([0, 4, 1]), beam_width=3, top_paths=1),
    case("CTCBeamSearchDecoder", name="error_fewer_leaves", inputs=_BEAM_LOGITS,
         sequence_length=_i([7, 4, 0]), beam_width=3, top_paths=2, error=True),
    case("CTCBeamSearchDecoder", name="width10_top3_no_merge", inputs=_BEAM_LOGITS,
         sequence_length=_i([7, 6, 5]), beam_width=10, top_paths=3, merge_repeated=False),
    case("CTCBeamSearchDecoder", name="width1", inputs=_BEAM_LOGITS,
         sequence_length=_i([7, 7, 7]), beam_width=1, top_paths=1),
    case("CTCBeamSearchDecoder", name="float64_wide", inputs=_rng.standard_normal((12, 2, 8)) * 3,
         sequence_length=_i([12, 9]), beam_width=16, top_paths=4,
         rtol=1e-6),  # TensorFlow's beam search keeps its probabilities in float32
    case("CTCBeamSearchDecoder", name="error_top_paths", inputs=_BEAM_LOGITS,
         sequence_length=_i([7, 4, 1]), beam_width=2, top_paths=3, error=True),
]
IN_TOP_K = [case("InTopK", name="attr_k", predictions=_PRED, targets=_i([1, 3, 0, 0, 2]), k=2)]

CASES += BEAM + IN_TOP_K
