"""Kernel cases for non-max suppression.

Scores tie on purpose in the single-class ops (TensorFlow breaks ties by the smaller index);
CombinedNonMaxSuppression's cases avoid equal scores, since TensorFlow's priority queue and
final sort there are not stable and the order of ties is unspecified. Boxes come with corners
in either order (y2 < y1 and x2 < x1 are normalized), degenerate (zero area) and overlapping
at IoUs away from the thresholds.
"""
import numpy as np

_rng = np.random.default_rng(20261126)


def _random_boxes(n, dtype=np.float32):
    centres = _rng.uniform(0, 1, (n, 2))
    sizes = _rng.uniform(0.05, 0.4, (n, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1)
    flip = _rng.uniform(size=n) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(dtype)


_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                   [1, 10.1, 0, 11.1], [0, 100, 1, 101]], np.float32)
_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
_TIES = np.array([0.5, 0.9, 0.5, 0.9, 0.2, 0.5], np.float32)
_NAN_SCORES = np.array([0.9, np.nan, 0.6, np.nan, 0.5, 0.3], np.float32)
_DEGENERATE = np.array([[0, 0, 0, 1], [0, 0, 0, 1], [0.5, 0.5, 0.5, 0.5], [0, 0, 1, 1],
                        [0, 0, 1, 1]], np.float32)
_MANY = _random_boxes(40)
_MANY_SCORES = _rng.uniform(0, 1, 40).astype(np.float32)


def _f(x):
    return np.float32(x)


def _i(x):
    return np.int32(x)


def _v3(name, boxes, scores, k, iou=0.5, low=-np.inf, dtype=np.float32, **extra):
    return case("NonMaxSuppressionV3", name=name, boxes=boxes.astype(dtype), scores=scores.astype(dtype),
                max_output_size=_i(k), iou_threshold=np.array(iou, dtype),
                score_threshold=np.array(low, dtype), **extra)


def _v5(name, boxes, scores, k, iou=0.5, low=-np.inf, sigma=0.0, pad=False, dtype=np.float32, **extra):
    return case("NonMaxSuppressionV5", name=name, boxes=boxes.astype(dtype), scores=scores.astype(dtype),
                max_output_size=_i(k), iou_threshold=np.array(iou, dtype),
                score_threshold=np.array(low, dtype), soft_nms_sigma=np.array(sigma, dtype),
                pad_to_max_output_size=pad, **extra)


SINGLE = [
    _v3("basic", _BOXES, _SCORES, 3),
    _v3("all", _BOXES, _SCORES, 10),
    _v3("ties", _BOXES, _TIES, 6),
    _v3("nan_scores", _BOXES, _NAN_SCORES, 6),
    _v3("score_threshold", _BOXES, _SCORES, 6, low=0.55),
    _v3("score_threshold_equal_excluded", _BOXES, _SCORES, 6, low=0.75),
    _v3("iou_0", _BOXES, _SCORES, 6, iou=0.0),
    _v3("iou_1", _BOXES, _SCORES, 6, iou=1.0),
    _v3("degenerate", _DEGENERATE, np.array([0.1, 0.2, 0.3, 0.4, 0.5], np.float32), 5, iou=0.3),
    _v3("max_output_0", _BOXES, _SCORES, 0),
    _v3("no_boxes", np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 3),
    _v3("many", _MANY, _MANY_SCORES, 20, iou=0.3),
    _v3("many_threshold", _MANY, _MANY_SCORES, 40, iou=0.1, low=0.3),
    _v3("float16", _BOXES, _SCORES, 4, dtype=np.float16),
    _v3("float16_many", _MANY, _MANY_SCORES, 15, iou=0.3, dtype=np.float16),
    _v3("error_iou_above_1", _BOXES, _SCORES, 3, iou=1.5, error=True),
    _v3("error_iou_negative", _BOXES, _SCORES, 3, iou=-0.1, error=True),
    _v3("error_max_output_negative", _BOXES, _SCORES, -1, error=True),
    _v3("error_scores_count", _BOXES, _SCORES[:4], 3, error=True, dynamic=True),
    _v3("error_box_columns", _BOXES[:, :3], _SCORES, 3, error=True, dynamic=True),
    case("NonMaxSuppressionV3", name="float16_float_thresholds", boxes=_BOXES.astype(np.float16),
         scores=_SCORES.astype(np.float16), max_output_size=_i(4), iou_threshold=_f(0.5),
         score_threshold=_f(0.4)),
    case("NonMaxSuppression", boxes=_BOXES, scores=_SCORES, max_output_size=_i(4), iou_threshold=0.5),
    case("NonMaxSuppression", name="error_iou", boxes=_BOXES, scores=_SCORES, max_output_size=_i(4),
         iou_threshold=1.5, error=True),
    case("NonMaxSuppressionV2", boxes=_BOXES, scores=_TIES, max_output_size=_i(6),
         iou_threshold=_f(0.4)),
    case("NonMaxSuppressionV2", name="float16", boxes=_MANY.astype(np.float16),
         scores=_MANY_SCORES.astype(np.float16), max_output_size=_i(10), iou_threshold=np.float16(0.3)),
    case("NonMaxSuppressionV4", boxes=_BOXES, scores=_SCORES, max_output_size=_i(5),
         iou_threshold=_f(0.5), score_threshold=_f(0.0)),
    case("NonMaxSuppressionV4", name="padded", boxes=_BOXES, scores=_SCORES, max_output_size=_i(8),
         iou_threshold=_f(0.5), score_threshold=_f(0.0), pad_to_max_output_size=True),
    case("NonMaxSuppressionV4", name="padded_max_0", boxes=_BOXES, scores=_SCORES,
         max_output_size=_i(0), iou_threshold=_f(0.5), score_threshold=_f(0.0),
         pad_to_max_output_size=True),
    case("NonMaxSuppressionV4", name="padded_float16", boxes=_MANY.astype(np.float16),
         scores=_MANY_SCORES.astype(np.float16), max_output_size=_i(30), iou_threshold=_f(0.2),
         score_threshold=_f(0.5), pad_to_max_output_size=True),
    _v5("hard", _BOXES, _SCORES, 6),
    _v5("hard_padded", _BOXES, _NAN_SCORES, 8, pad=True),
    _v5("soft", _BOXES, _SCORES, 6, sigma=0.5),
    _v5("soft_threshold", _BOXES, _SCORES, 6, low=0.35, sigma=0.3),
    _v5("soft_many", _MANY, _MANY_SCORES, 25, iou=1.0, low=0.1, sigma=0.4, pad=True),
    _v5("soft_float16", _MANY, _MANY_SCORES, 20, low=0.05, sigma=0.5, dtype=np.float16),
    _v5("error_sigma_negative", _BOXES, _SCORES, 6, sigma=-0.5, error=True),
    case("NonMaxSuppressionWithOverlaps", overlaps=_rng.uniform(0, 1, (6, 6)).astype(np.float32),
         scores=_SCORES, max_output_size=_i(6), overlap_threshold=_f(0.5), score_threshold=_f(0.2)),
    case("NonMaxSuppressionWithOverlaps", name="threshold_above_1",
         overlaps=_rng.uniform(0, 2, (6, 6)).astype(np.float32), scores=_TIES,
         max_output_size=_i(4), overlap_threshold=_f(1.5), score_threshold=_f(-1.0)),
    case("NonMaxSuppressionWithOverlaps", name="error_not_square",
         overlaps=np.zeros((6, 5), np.float32), scores=_SCORES, max_output_size=_i(4),
         overlap_threshold=_f(0.5), score_threshold=_f(0.0), error=True, dynamic=True),
]


def _combined(name, boxes, scores, per_class, total, iou=0.5, low=0.0, **attrs):
    return case("CombinedNonMaxSuppression", name=name, boxes=boxes, scores=scores,
                max_output_size_per_class=_i(per_class), max_total_size=_i(total),
                iou_threshold=_f(iou), score_threshold=_f(low), **attrs)


def _distinct_scores(*shape):
    values = _rng.permutation(np.prod(shape)).astype(np.float32) / np.prod(shape)
    return (values * 0.98 + 0.01).reshape(shape).astype(np.float32)


_C_BOXES = np.stack([_random_boxes(12) * 1.2 - 0.1 for _ in range(2)])[:, :, None, :]
_C_SCORES = _distinct_scores(2, 12, 3)
_C_BOXES_PER_CLASS = np.stack([np.stack([_random_boxes(10) for _ in range(3)], axis=1)
                               for _ in range(2)])
_C_SCORES_PER_CLASS = _distinct_scores(2, 10, 3)

COMBINED = [
    _combined("shared_boxes", _C_BOXES, _C_SCORES, 4, 8),
    _combined("no_clip", _C_BOXES, _C_SCORES, 4, 8, clip_boxes=False),
    _combined("pad_per_class", _C_BOXES, _C_SCORES, 2, 100, pad_per_class=True),
    _combined("pad_per_class_total_smaller", _C_BOXES, _C_SCORES, 5, 7, pad_per_class=True),
    _combined("total_larger", _C_BOXES, _C_SCORES, 3, 20, iou=0.3, low=0.4),
    _combined("boxes_per_class", _C_BOXES_PER_CLASS, _C_SCORES_PER_CLASS, 3, 6, iou=0.4),
    _combined("threshold_removes_all", _C_BOXES, _C_SCORES, 3, 5, low=0.999),
    _combined("negative_threshold", _C_BOXES, _C_SCORES - 0.5, 2, 10, low=-0.2),
    _combined("no_anchors", np.zeros((2, 0, 1, 4), np.float32), np.zeros((2, 0, 3), np.float32), 3, 4),
    _combined("batch_0", np.zeros((0, 5, 1, 4), np.float32), np.zeros((0, 5, 2), np.float32), 3, 4),
    _combined("nan_scores_flipped_corners", _C_BOXES[..., [2, 3, 0, 1]],
              np.where(_C_SCORES > 0.8, np.nan, _C_SCORES).astype(np.float32), 3, 9, iou=0.3,
              clip_boxes=False),
    _combined("nan_scores_flipped_corners_clipped", _C_BOXES[..., [2, 3, 0, 1]],
              np.where(_C_SCORES > 0.8, np.nan, _C_SCORES).astype(np.float32), 3, 9, iou=0.3),
    _combined("error_per_class_0", _C_BOXES, _C_SCORES, 0, 4, error=True),
    _combined("error_total_0", _C_BOXES, _C_SCORES, 2, 0, error=True),
    _combined("error_iou", _C_BOXES, _C_SCORES, 2, 4, iou=1.2, error=True),
    _combined("error_q", _C_BOXES_PER_CLASS[:, :, :2], _C_SCORES_PER_CLASS, 2, 4, error=True,
              dynamic=True),
]

CASES = SINGLE + COMBINED
