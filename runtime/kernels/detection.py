"""Non-max suppression: the ops that turn a detector's boxes and scores into detections.

Every variant is one greedy selection (`_select`), as TensorFlow's kernels share one: candidates
whose score is above the score threshold are taken highest score first, ties broken by the
smaller box index; a candidate is dropped when its overlap with a box already selected exceeds
the threshold. Soft-NMS (NonMaxSuppressionV5 with soft_nms_sigma > 0) instead decays a
candidate's score by exp(-0.5 * iou^2 / sigma) per selected box, and a decayed candidate goes
back into the queue while its score stays above the threshold. Scores, thresholds and the decay
are computed in the op's dtype T (float16 rounds after each step, as Eigen's half does); IoU is
computed in float32 from the corners in either order (TensorFlow normalizes y2 < y1).

Hard suppression loops over the selected boxes (each step drops every candidate the new box
overlaps, one vectorized comparison); the queue that soft-NMS needs loops over candidates. NaN
scores never pass the threshold test and are never selected.
CombinedNonMaxSuppression's priority queue and final sort are not stable in TensorFlow, so
equal scores may come out in another order there; here they keep index (then class) order.
"""
from __future__ import annotations

import heapq

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel


def _scalar(value, what: str) -> np.generic:
    value = np.asarray(value)
    check(value.ndim == 0, f"{what} must be 0-D, got shape {list(value.shape)}")
    return value[()]


def _corners(boxes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(ymin, xmin, ymax, xmax, area) in float32 whichever order the corners come in; min and
    max pick as C++'s std::min/std::max do, so a NaN coordinate gives what TensorFlow's gives."""
    b = boxes.astype(np.float32)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    ymin, xmin, ymax, xmax = _cmin(y1, y2), _cmin(x1, x2), _cmax(y1, y2), _cmax(x1, x2)
    return ymin, xmin, ymax, xmax, (ymax - ymin) * (xmax - xmin)


def _cmin(a, b):
    return np.where(b < a, b, a)


def _cmax(a, b):
    return np.where(a < b, b, a)


def _iou(corners: tuple[np.ndarray, ...], a, b) -> np.ndarray:
    """IoU of boxes a (candidates) and b (selected), broadcast against each other, float32,
    0 where either box has no area. (numpy's NaN-propagating min and max are safe here: a
    corner is NaN only if its box's area is, and the IoU is NaN then either way.)"""
    ymin, xmin, ymax, xmax, area = corners
    area_a, area_b = area[a], area[b]
    zero = np.float32(0)
    height = np.maximum(np.minimum(ymax[a], ymax[b]) - np.maximum(ymin[a], ymin[b]), zero)
    width = np.maximum(np.minimum(xmax[a], xmax[b]) - np.maximum(xmin[a], xmin[b]), zero)
    inter = height * width
    with np.errstate(all="ignore"):
        iou = inter / (area_a + area_b - inter)
    return np.where((area_a <= 0) | (area_b <= 0), zero, iou).astype(np.float32)


def _select(scores: np.ndarray, similarity, max_output: int, threshold, score_threshold,
            sigma=None) -> tuple[list[int], list]:
    """TensorFlow's greedy selection (DoNonMaxSuppressionOp): the indices and final scores
    of the selected boxes, in selection order. `similarity(candidates, selected)` gives the
    overlaps of candidate and selected boxes (index arrays broadcast together) in the dtype
    of `scores`."""
    check(max_output >= 0, "output size must be non-negative")
    t = scores.dtype.type
    threshold, score_threshold = t(threshold), t(score_threshold)
    candidates = np.flatnonzero(scores > score_threshold)
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    if sigma is None or not t(sigma) > 0:
        found = _select_hard(order, similarity, max_output, threshold)
        if found is not None:
            return found, [scores[i] for i in found]
    return _select_queue(scores, order, similarity, max_output, threshold, score_threshold, sigma)


def _select_hard(order: np.ndarray, similarity, max_output: int, threshold) -> list[int] | None:
    """Hard NMS one selected box at a time: take the best candidate left, drop every candidate
    after it that overlaps it above the threshold. Gives the queue's result whenever no
    overlap is NaN (a NaN overlap zeroes a score instead, see `_select_queue`); None then."""
    selected: list[int] = []
    remaining = order
    while len(selected) < max_output and remaining.size:
        chosen = int(remaining[0])
        selected.append(chosen)
        remaining = remaining[1:]
        sims = similarity(remaining, chosen)
        if np.isnan(sims).any():
            return None
        remaining = remaining[~(sims > threshold)]
    return selected


def _select_queue(scores: np.ndarray, order: np.ndarray, similarity, max_output: int, threshold,
                  score_threshold, sigma) -> tuple[list[int], list]:
    """The selection exactly as TensorFlow's priority queue runs it: a candidate is compared
    with the boxes selected since it was last looked at, its score decays (soft-NMS) or drops
    to 0 (a NaN overlap), and a decayed candidate goes back into the queue."""
    t = scores.dtype.type
    soft = sigma is not None and t(sigma) > 0
    scale = t(-0.5) / t(sigma) if soft else t(0)
    queue = [(-float(scores[i]), int(i), scores[i], 0) for i in order]
    heapq.heapify(queue)
    selected: list[int] = []
    kept_scores: list = []
    while len(selected) < max_output and queue:
        _, index, score, begin = heapq.heappop(queue)
        sims = similarity(index, np.asarray(selected[begin:][::-1], dtype=np.int64))
        original = score
        if not soft:
            if np.any(sims > threshold):
                continue
            if np.any(~(sims <= threshold)):
                score = t(score * t(0))
        else:
            weights = np.exp(scale * sims * sims).astype(scores.dtype)
            running = np.multiply.accumulate(np.concatenate([[score], weights]).astype(scores.dtype))[1:]
            below = np.flatnonzero(running <= score_threshold)
            if running.size:
                score = running[below[0]] if below.size else running[-1]
        if score == original:
            selected.append(index)
            kept_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-float(score), index, score, len(selected)))
    return selected, kept_scores


def _check_boxes(boxes: np.ndarray, scores: np.ndarray) -> None:
    check(boxes.ndim == 2, f"boxes must be 2-D, got shape {list(boxes.shape)}")
    check(boxes.shape[1] == 4, f"boxes must have 4 columns, got {boxes.shape[1]}")
    _check_scores(scores, boxes.shape[0])


def _check_scores(scores: np.ndarray, count: int) -> None:
    check(scores.ndim == 1, f"scores must be 1-D, got shape {list(scores.shape)}")
    check(scores.shape[0] == count,
          f"scores has incompatible shape: {scores.shape[0]} scores for {count} boxes")


def _iou_threshold(value, dtype: np.dtype, what: str = "iou_threshold"):
    threshold = dtype.type(_scalar(value, what))
    check(0 <= threshold <= 1, f"{what} must be in [0, 1], got {threshold}")
    return threshold


def _box_similarity(boxes: np.ndarray, dtype: np.dtype):
    """similarity(candidates, selected), one of them a single box: IoUs in `dtype`. IoU is
    symmetric, so each selected box's IoUs with every box are computed once and kept (a
    CombinedNonMaxSuppression with shared boxes reuses them across classes)."""
    corners = _corners(boxes)
    everything = np.arange(boxes.shape[0])
    rows: dict[int, np.ndarray] = {}

    def similarity(candidates, selected) -> np.ndarray:
        one, many = (selected, candidates) if np.ndim(selected) == 0 else (candidates, selected)
        row = rows.get(int(one))
        if row is None:
            row = rows[int(one)] = _iou(corners, everything, int(one)).astype(dtype)
        return row[many]
    return similarity


def _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, sigma=None):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    max_output = int(_scalar(max_output_size, "max_output_size"))
    threshold = _iou_threshold(iou_threshold, scores.dtype)
    low = _scalar(score_threshold, "score_threshold") if score_threshold is not None else None
    if sigma is not None:
        sigma = scores.dtype.type(_scalar(sigma, "soft_nms_sigma"))
        check(sigma >= 0, f"soft_nms_sigma must be >= 0, got {sigma}")
    _check_boxes(boxes, scores)
    if low is None:
        low = np.finfo(scores.dtype).min
    return _select(scores, _box_similarity(boxes, scores.dtype), max_output, threshold, low, sigma)


def _indices(selected: list[int], size: int | None = None) -> np.ndarray:
    out = np.zeros(len(selected) if size is None else max(size, len(selected)), np.int32)
    out[:len(selected)] = selected
    return out


@kernel("NonMaxSuppression")
def non_max_suppression(boxes, scores, max_output_size, *, iou_threshold: float = 0.5,
                        **_) -> tuple[np.ndarray]:
    threshold = np.float32(iou_threshold)
    check(0 <= threshold <= 1, f"iou_threshold must be in [0, 1], got {threshold}")
    selected, _ = _nms(boxes, np.asarray(scores), max_output_size, threshold, None)
    return (_indices(selected),)


@kernel("NonMaxSuppressionV2")
def non_max_suppression_v2(boxes, scores, max_output_size, iou_threshold, **_) -> tuple[np.ndarray]:
    selected, _ = _nms(boxes, scores, max_output_size, iou_threshold, None)
    return (_indices(selected),)


@kernel("NonMaxSuppressionV3")
def non_max_suppression_v3(boxes, scores, max_output_size, iou_threshold, score_threshold,
                           **_) -> tuple[np.ndarray]:
    selected, _ = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold)
    return (_indices(selected),)


@kernel("NonMaxSuppressionV4")
def non_max_suppression_v4(boxes, scores, max_output_size, iou_threshold, score_threshold, *,
                           pad_to_max_output_size: bool = False, **_) -> tuple[np.ndarray, ...]:
    selected, _ = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold)
    size = int(np.asarray(max_output_size)) if pad_to_max_output_size else None
    return _indices(selected, size), np.array(len(selected), np.int32)


@kernel("NonMaxSuppressionV5")
def non_max_suppression_v5(boxes, scores, max_output_size, iou_threshold, score_threshold,
                           soft_nms_sigma, *, pad_to_max_output_size: bool = False,
                           **_) -> tuple[np.ndarray, ...]:
    scores = np.asarray(scores)
    selected, kept = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold,
                          soft_nms_sigma)
    size = int(np.asarray(max_output_size)) if pad_to_max_output_size else None
    indices = _indices(selected, size)
    out_scores = np.zeros(indices.shape, scores.dtype)
    out_scores[:len(kept)] = kept
    return indices, out_scores, np.array(len(selected), np.int32)


@kernel("NonMaxSuppressionWithOverlaps")
def non_max_suppression_with_overlaps(overlaps, scores, max_output_size, overlap_threshold,
                                      score_threshold, **_) -> tuple[np.ndarray]:
    overlaps, scores = np.asarray(overlaps), np.asarray(scores)
    max_output = int(_scalar(max_output_size, "max_output_size"))
    threshold = _scalar(overlap_threshold, "overlap_threshold")
    low = _scalar(score_threshold, "score_threshold")
    check(overlaps.ndim == 2, f"overlaps must be 2-D, got shape {list(overlaps.shape)}")
    check(overlaps.shape[0] == overlaps.shape[1],
          f"overlaps must be square, got shape {list(overlaps.shape)}")
    _check_scores(scores, overlaps.shape[0])
    selected, _ = _select(scores, lambda candidates, chosen: overlaps[candidates, chosen], max_output,
                          threshold, low)
    return (_indices(selected),)


@kernel("CombinedNonMaxSuppression")
def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold, score_threshold, *, pad_per_class: bool = False,
                                 clip_boxes: bool = True, **_) -> tuple[np.ndarray, ...]:
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    _check_combined(boxes, scores)
    per_class = int(_scalar(max_output_size_per_class, "max_size_per_class"))
    check(per_class > 0, f"max_size_per_class must be positive, got {per_class}")
    total = int(_scalar(max_total_size, "max_total_size"))
    check(total > 0, f"max_total_size must be > 0, got {total}")
    threshold = _scalar(iou_threshold, "iou_threshold")
    low = np.float32(_scalar(score_threshold, "score_threshold"))
    check(0 <= threshold <= 1, f"iou_threshold must be in [0, 1], got {threshold}")
    size = min(total, per_class * scores.shape[2]) if pad_per_class else total
    batch = boxes.shape[0]
    out_boxes = np.zeros((batch, size, 4), np.float32)
    out_scores = np.zeros((batch, size), np.float32)
    out_classes = np.zeros((batch, size), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found = _combined_batch(boxes[b], scores[b], min(per_class, boxes.shape[1]),
                                np.float32(threshold), low)
        found = found[:size]
        valid[b] = len(found)
        for row, (score, cls, box) in enumerate(found):
            out_boxes[b, row] = np.clip(box, 0, 1) if clip_boxes else box
            out_scores[b, row], out_classes[b, row] = score, cls
    return out_boxes, out_scores, out_classes, valid


def _check_combined(boxes: np.ndarray, scores: np.ndarray) -> None:
    check(boxes.ndim == 4, f"boxes must be 4-D [batch, num_boxes, q, 4], got shape {list(boxes.shape)}")
    check(scores.ndim == 3,
          f"scores must be 3-D [batch, num_boxes, num_classes], got shape {list(scores.shape)}")
    check(boxes.shape[2] in (1, scores.shape[2]),
          "third dimension of boxes must be either 1 or num classes")
    check(boxes.shape[3] == 4, "boxes must have 4 columns")
    check(scores.shape[1] == boxes.shape[1], "scores has incompatible shape")
    check(boxes.shape[0] == scores.shape[0], "boxes and scores must have same batch size")


def _combined_batch(boxes: np.ndarray, scores: np.ndarray, per_class: int, threshold,
                    low) -> list[tuple]:
    """One image's detections of every class, best score first: (score, class, box)."""
    found = []
    shared = _box_similarity(boxes[:, 0], np.dtype(np.float32)) if boxes.shape[1] == 1 else None
    for cls in range(scores.shape[1]):
        class_boxes = boxes[:, cls if boxes.shape[1] > 1 else 0]
        similarity = shared or _box_similarity(class_boxes, np.dtype(np.float32))
        selected, kept = _select(scores[:, cls], similarity, per_class, threshold, low)
        found += [(score, cls, class_boxes[i]) for i, score in zip(selected, kept)]
    order = sorted(range(len(found)), key=lambda k: -float(found[k][0]))
    return [found[k] for k in order]
