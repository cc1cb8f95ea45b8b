//! Non-max suppression: NonMaxSuppression (V1 to V5), NonMaxSuppressionWithOverlaps and
//! CombinedNonMaxSuppression, the ops that turn a detector's boxes and scores into detections.
//!
//! Every variant is one greedy selection (`select`), as TensorFlow's kernels share one: the
//! candidates whose score is above the score threshold wait in a priority queue (highest
//! score first, ties to the smaller box index); each one taken is compared with the boxes
//! selected since it was last looked at, newest first. Hard suppression drops it when an
//! overlap exceeds the threshold (a NaN overlap zeroes its score); soft-NMS (V5 with
//! soft_nms_sigma > 0) decays its score by exp(-0.5·iou²/sigma) per box, and a decayed
//! candidate goes back into the queue while its score stays above the threshold. Scores,
//! thresholds and the decay are computed in the op's dtype T (float16 values are held in f32
//! and rounded after each step, as Eigen's half arithmetic rounds); IoU is computed in float32
//! from the corners in either order, as TensorFlow normalizes them.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::kernels::util::{f32_to_half, half_to_f32, int_values, make};
use crate::tensor::{Storage, Tensor};

/// Scores in f32 and how T rounds them (the identity for float32).
struct Scores {
    values: Vec<f32>,
    dtype: DType,
}

impl Scores {
    fn of(t: &Tensor, what: &str) -> KResult<Self> {
        let values = match t.storage() {
            Storage::Float32(v) => v.clone(),
            Storage::Float16(_) => half_to_f32(t).unwrap_or_default(),
            _ => {
                return Err(fail(format!(
                    "{what} must be float32 or float16, got {}",
                    t.dtype()
                )))
            }
        };
        Ok(Self {
            values,
            dtype: t.dtype(),
        })
    }

    /// `x` rounded to T.
    fn round(&self, x: f32) -> f32 {
        match self.dtype {
            DType::Float16 => half::f16::from_f32(x).to_f32(),
            _ => x,
        }
    }

    /// Values in T as a tensor of `shape`.
    fn tensor(&self, shape: Vec<usize>, values: &[f32]) -> KResult<Tensor> {
        let storage = match self.dtype {
            DType::Float32 => Storage::Float32(values.to_vec()),
            other => {
                f32_to_half(other, values).ok_or_else(|| fail(format!("unexpected {other}")))?
            }
        };
        make(shape, storage)
    }
}

/// A scalar input as f32 (float types) or i64 (integer types), checked to be 0-D.
fn scalar(inputs: &[Value], i: usize, what: &str) -> KResult<f64> {
    let t = tensor_input(inputs, i)?;
    if t.rank() != 0 {
        return Err(fail(format!(
            "{what} must be 0-D, got shape {:?}",
            t.shape()
        )));
    }
    if let Some(v) = half_to_f32(&t) {
        return Ok(f64::from(v[0]));
    }
    match t.storage() {
        Storage::Float32(v) => Ok(f64::from(v[0])),
        Storage::Float64(v) => Ok(v[0]),
        _ => Ok(int_values(&t, what)?[0] as f64),
    }
}

/// A non-negative output size.
fn output_size(inputs: &[Value], i: usize, what: &str) -> KResult<usize> {
    let v = scalar(inputs, i, what)?;
    if v < 0.0 {
        return Err(fail(format!("{what} must be non-negative, got {v}")));
    }
    Ok(v as usize)
}

/// An IoU threshold, rounded to T, in [0, 1].
fn iou_threshold(value: f64, scores: &Scores) -> KResult<f32> {
    let t = scores.round(value as f32);
    if !(0.0..=1.0).contains(&t) {
        return Err(fail(format!("iou_threshold must be in [0, 1], got {t}")));
    }
    Ok(t)
}

// ---------------------------------------------------------------------------------------------
// Box overlap

/// A box's corners in order (TensorFlow normalizes y2 < y1) and its area, in float32.
#[derive(Clone, Copy)]
struct Corners {
    ymin: f32,
    xmin: f32,
    ymax: f32,
    xmax: f32,
    area: f32,
}

/// C++'s std::min and std::max (NaN picks as they pick).
fn cmin(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

fn cmax(a: f32, b: f32) -> f32 {
    if a < b {
        b
    } else {
        a
    }
}

impl Corners {
    fn of(b: &[f32]) -> Self {
        let [y1, x1, y2, x2] = [b[0], b[1], b[2], b[3]];
        let (ymin, ymax, xmin, xmax) = (cmin(y1, y2), cmax(y1, y2), cmin(x1, x2), cmax(x1, x2));
        Self {
            ymin,
            xmin,
            ymax,
            xmax,
            area: (ymax - ymin) * (xmax - xmin),
        }
    }

    /// Intersection over union, 0 when either box has no area.
    fn iou(&self, o: &Corners) -> f32 {
        if self.area <= 0.0 || o.area <= 0.0 {
            return 0.0;
        }
        let height = cmax(cmin(self.ymax, o.ymax) - cmax(self.ymin, o.ymin), 0.0);
        let width = cmax(cmin(self.xmax, o.xmax) - cmax(self.xmin, o.xmin), 0.0);
        let inter = height * width;
        inter / (self.area + o.area - inter)
    }
}

/// The corners of every box of a [count, 4] float buffer.
fn corners(boxes: &[f32]) -> Vec<Corners> {
    boxes.chunks_exact(4).map(Corners::of).collect()
}

// ---------------------------------------------------------------------------------------------
// The selection

/// A candidate in the queue: its decayed score, box and the first selected box it has not
/// been compared with.
struct Candidate {
    score: f32,
    index: usize,
    begin: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    /// The greatest is the highest score, then the smallest index (a NaN score never enters
    /// the queue, so this is a total order there).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then(other.index.cmp(&self.index))
    }
}

/// What a selection is given beyond the scores.
struct Selection {
    max_output: usize,
    /// The overlap threshold, in T.
    threshold: f32,
    /// The score threshold, in T: only candidates scoring above it are taken.
    score_threshold: f32,
    /// soft_nms_sigma in T (0 for hard suppression).
    sigma: f32,
}

/// TensorFlow's greedy selection (DoNonMaxSuppressionOp): the selected boxes and their final
/// scores, in selection order. `similarity(a, b)` is the overlap of boxes a and b in f32.
fn select(
    scores: &Scores,
    s: &Selection,
    similarity: impl Fn(usize, usize) -> f32,
) -> (Vec<usize>, Vec<f32>) {
    let soft = s.sigma > 0.0;
    let scale = scores.round(-0.5 / s.sigma);
    let mut queue: BinaryHeap<Candidate> = scores
        .values
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > s.score_threshold)
        .map(|(index, &score)| Candidate {
            score,
            index,
            begin: 0,
        })
        .collect();
    let (mut selected, mut kept) = (Vec::new(), Vec::new());
    while selected.len() < s.max_output {
        let Some(mut next) = queue.pop() else {
            break;
        };
        let original = next.score;
        let mut suppressed = false;
        for &other in selected[next.begin..].iter().rev() {
            let sim = scores.round(similarity(next.index, other));
            let weight = if soft {
                scores.round(scores.round(scores.round(scale * sim) * sim).exp())
            } else if sim <= s.threshold {
                1.0
            } else {
                0.0
            };
            next.score = scores.round(next.score * weight);
            if !soft && sim > s.threshold {
                suppressed = true;
                break;
            }
            if next.score <= s.score_threshold {
                break;
            }
        }
        next.begin = selected.len();
        if suppressed {
            continue;
        }
        if next.score == original {
            selected.push(next.index);
            kept.push(next.score);
        } else if next.score > s.score_threshold {
            queue.push(next);
        }
    }
    (selected, kept)
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression V1 to V5 and WithOverlaps

/// Which inputs and outputs a NonMaxSuppression version has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    /// iou_threshold as an attr, no score threshold.
    V1,
    /// iou_threshold as an input.
    V2,
    /// And score_threshold.
    V3,
    /// And pad_to_max_output_size, with a valid count output.
    V4,
    /// And soft_nms_sigma, with the selected scores as an output.
    V5,
}

pub fn non_max_suppression(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let threshold = node.attrs.float_or("iou_threshold", 0.5)?;
    nms(Version::V1, f64::from(threshold), false)
}

pub fn non_max_suppression_v2(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    nms(Version::V2, 0.0, false)
}

pub fn non_max_suppression_v3(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    nms(Version::V3, 0.0, false)
}

pub fn non_max_suppression_v4(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pad = node.attrs.bool_or("pad_to_max_output_size", false)?;
    nms(Version::V4, 0.0, pad)
}

pub fn non_max_suppression_v5(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pad = node.attrs.bool_or("pad_to_max_output_size", false)?;
    nms(Version::V5, 0.0, pad)
}

fn nms(version: Version, attr_threshold: f64, pad: bool) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(move |_, inputs| {
        let boxes = tensor_input(inputs, 0)?;
        let scores = Scores::of(&*tensor_input(inputs, 1)?, "scores")?;
        let max_output = output_size(inputs, 2, "max_output_size")?;
        let threshold = match version {
            Version::V1 => attr_threshold,
            _ => scalar(inputs, 3, "iou_threshold")?,
        };
        let threshold = iou_threshold(threshold, &scores)?;
        let score_threshold = match version {
            Version::V1 | Version::V2 => f32::MIN,
            _ => scores.round(scalar(inputs, 4, "score_threshold")? as f32),
        };
        let sigma = match version {
            Version::V5 => scores.round(scalar(inputs, 5, "soft_nms_sigma")? as f32),
            _ => 0.0,
        };
        if sigma < 0.0 {
            return Err(fail(format!("soft_nms_sigma must be >= 0, got {sigma}")));
        }
        if boxes.dtype() != scores.dtype {
            return Err(fail(format!(
                "boxes must be {} like scores, got {}",
                scores.dtype,
                boxes.dtype()
            )));
        }
        let count = check_boxes(boxes.shape(), &scores)?;
        let boxes = Scores::of(&boxes, "boxes")?.values;
        let all = corners(&boxes[..count * 4]);
        let selection = Selection {
            max_output,
            threshold,
            score_threshold,
            sigma,
        };
        let (selected, kept) = select(&scores, &selection, |a, b| all[a].iou(&all[b]));
        indices_outputs(
            version,
            &scores,
            &selected,
            &kept,
            pad.then_some(max_output),
        )
    }))
}

/// The number of boxes, after checking boxes is [count, 4] and scores [count].
fn check_boxes(shape: &[usize], scores: &Scores) -> KResult<usize> {
    let &[count, columns] = shape else {
        return Err(fail(format!("boxes must be 2-D, got shape {shape:?}")));
    };
    if columns != 4 {
        return Err(fail(format!("boxes must have 4 columns, got {columns}")));
    }
    if scores.values.len() != count {
        return Err(fail(format!(
            "scores has incompatible shape: {} scores for {count} boxes",
            scores.values.len()
        )));
    }
    Ok(count)
}

/// `count` zeros, or an error rather than an abort when an output size asks for more memory
/// than there is.
pub(super) fn zeroed<T: Clone + Default>(count: usize) -> KResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(count)
        .map_err(|_| fail(format!("cannot allocate an output of {count} elements")))?;
    v.resize(count, T::default());
    Ok(v)
}

/// The version's outputs: selected indices (padded with zeros to `pad`), then the selected
/// scores (V5) and the valid count (V4, V5).
fn indices_outputs(
    version: Version,
    scores: &Scores,
    selected: &[usize],
    kept: &[f32],
    pad: Option<usize>,
) -> KResult {
    let size = pad.map_or(selected.len(), |p| p.max(selected.len()));
    let mut indices: Vec<i32> = zeroed(size)?;
    for (slot, &i) in indices.iter_mut().zip(selected) {
        *slot = i32::try_from(i).map_err(|_| fail("box index does not fit int32"))?;
    }
    let valid = i32::try_from(selected.len()).map_err(|_| fail("too many boxes"))?;
    let mut out = vec![Value::tensor(Tensor::from_vec(vec![size], indices))];
    if version == Version::V5 {
        let mut values: Vec<f32> = zeroed(size)?;
        values[..kept.len()].copy_from_slice(kept);
        out.push(Value::tensor(scores.tensor(vec![size], &values)?));
    }
    if matches!(version, Version::V4 | Version::V5) {
        out.push(Value::tensor(Tensor::scalar(valid)));
    }
    Ok(out)
}

pub fn non_max_suppression_with_overlaps(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        let overlaps = tensor_input(inputs, 0)?;
        let scores = Scores::of(&*tensor_input(inputs, 1)?, "scores")?;
        let max_output = output_size(inputs, 2, "max_output_size")?;
        let threshold = scores.round(scalar(inputs, 3, "overlap_threshold")? as f32);
        let score_threshold = scores.round(scalar(inputs, 4, "score_threshold")? as f32);
        let &[rows, cols] = overlaps.shape() else {
            return Err(fail(format!(
                "overlaps must be 2-D, got shape {:?}",
                overlaps.shape()
            )));
        };
        if rows != cols {
            return Err(fail(format!(
                "overlaps must be square, got shape {:?}",
                overlaps.shape()
            )));
        }
        if scores.values.len() != rows {
            return Err(fail(format!(
                "scores has incompatible shape: {} scores for {rows} boxes",
                scores.values.len()
            )));
        }
        let values = overlaps.values::<f32>().ok_or_else(|| {
            fail(format!(
                "overlaps must be float32, got {}",
                overlaps.dtype()
            ))
        })?;
        let selection = Selection {
            max_output,
            threshold,
            score_threshold,
            sigma: 0.0,
        };
        let (selected, kept) = select(&scores, &selection, |a, b| values[a * rows + b]);
        indices_outputs(Version::V3, &scores, &selected, &kept, None)
    }))
}

// ---------------------------------------------------------------------------------------------
// CombinedNonMaxSuppression

/// CombinedNonMaxSuppression's attrs and scalar inputs.
struct Combined {
    per_class: usize,
    size: usize,
    threshold: f32,
    score_threshold: f32,
    clip: bool,
}

pub fn combined_non_max_suppression(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pad_per_class = node.attrs.bool_or("pad_per_class", false)?;
    let clip = node.attrs.bool_or("clip_boxes", true)?;
    Ok(boxed(move |_, inputs| {
        let boxes = tensor_input(inputs, 0)?;
        let scores = tensor_input(inputs, 1)?;
        let [batch, count, q, classes] = check_combined(boxes.shape(), scores.shape())?;
        let per_class = scalar(inputs, 2, "max_size_per_class")?;
        if per_class <= 0.0 {
            return Err(fail(format!(
                "max_size_per_class must be positive, got {per_class}"
            )));
        }
        let total = scalar(inputs, 3, "max_total_size")?;
        if total <= 0.0 {
            return Err(fail(format!("max_total_size must be > 0, got {total}")));
        }
        let threshold = scalar(inputs, 4, "iou_threshold")? as f32;
        if !(0.0..=1.0).contains(&threshold) {
            return Err(fail(format!(
                "iou_threshold must be in [0, 1], got {threshold}"
            )));
        }
        let (per_class, total) = (per_class as usize, total as usize);
        let size = if pad_per_class {
            total.min(per_class.saturating_mul(classes))
        } else {
            total
        };
        let c = Combined {
            per_class: per_class.min(count),
            size,
            threshold,
            score_threshold: scalar(inputs, 5, "score_threshold")? as f32,
            clip,
        };
        let (boxes, scores) = (f32s(&boxes, "boxes")?, f32s(&scores, "scores")?);
        let mut out = CombinedOutputs::new(batch, size)?;
        for b in 0..batch {
            let image_boxes = &boxes[b * count * q * 4..(b + 1) * count * q * 4];
            let image_scores = &scores[b * count * classes..(b + 1) * count * classes];
            let found = detections(&c, image_boxes, image_scores, [count, q, classes]);
            out.fill(&c, b, &found);
        }
        out.values(batch, size)
    }))
}

fn f32s<'a>(t: &'a Tensor, what: &str) -> KResult<&'a [f32]> {
    t.values::<f32>()
        .ok_or_else(|| fail(format!("{what} must be float32, got {}", t.dtype())))
}

/// [batch, boxes, q, classes] after TensorFlow's checks of boxes [batch, boxes, q, 4] and
/// scores [batch, boxes, classes].
fn check_combined(boxes: &[usize], scores: &[usize]) -> KResult<[usize; 4]> {
    let &[batch, count, q, columns] = boxes else {
        return Err(fail(format!(
            "boxes must be 4-D [batch, num_boxes, q, 4], got shape {boxes:?}"
        )));
    };
    let &[score_batch, score_count, classes] = scores else {
        return Err(fail(format!(
            "scores must be 3-D [batch, num_boxes, num_classes], got shape {scores:?}"
        )));
    };
    if q != 1 && q != classes {
        return Err(fail(
            "third dimension of boxes must be either 1 or num classes",
        ));
    }
    if columns != 4 {
        return Err(fail("boxes must have 4 columns"));
    }
    if score_count != count {
        return Err(fail("scores has incompatible shape"));
    }
    if score_batch != batch {
        return Err(fail("boxes and scores must have same batch size"));
    }
    Ok([batch, count, q, classes])
}

/// One detection: score, class and box.
struct Detection {
    score: f32,
    class: usize,
    corners: [f32; 4],
}

/// One image's detections of every class, best score first (ties in class, then selection
/// order; TensorFlow's sort is not stable, so it may order equal scores otherwise).
fn detections(c: &Combined, boxes: &[f32], scores: &[f32], dims: [usize; 3]) -> Vec<Detection> {
    let [count, q, classes] = dims;
    let all = corners(boxes);
    let mut found = Vec::new();
    for class in 0..classes {
        let column = if q > 1 { class } else { 0 };
        let class_scores = Scores {
            values: (0..count).map(|i| scores[i * classes + class]).collect(),
            dtype: DType::Float32,
        };
        let selection = Selection {
            max_output: c.per_class,
            threshold: c.threshold,
            score_threshold: c.score_threshold,
            sigma: 0.0,
        };
        let (selected, kept) = select(&class_scores, &selection, |a, b| {
            all[a * q + column].iou(&all[b * q + column])
        });
        for (i, score) in selected.into_iter().zip(kept) {
            let at = (i * q + column) * 4;
            let mut corners = [0f32; 4];
            corners.copy_from_slice(&boxes[at..at + 4]);
            found.push(Detection {
                score,
                class,
                corners,
            });
        }
    }
    found.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal));
    found
}

/// CombinedNonMaxSuppression's four outputs, zero-padded.
struct CombinedOutputs {
    boxes: Vec<f32>,
    scores: Vec<f32>,
    classes: Vec<f32>,
    valid: Vec<i32>,
}

impl CombinedOutputs {
    fn new(batch: usize, size: usize) -> KResult<Self> {
        let count = batch
            .checked_mul(size)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| fail(format!("max_total_size {size} is too large")))?;
        Ok(Self {
            boxes: zeroed(count)?,
            scores: zeroed(count / 4)?,
            classes: zeroed(count / 4)?,
            valid: zeroed(batch)?,
        })
    }

    fn fill(&mut self, c: &Combined, b: usize, found: &[Detection]) {
        let found = &found[..found.len().min(c.size)];
        self.valid[b] = found.len() as i32;
        for (row, d) in found.iter().enumerate() {
            let at = b * c.size + row;
            self.scores[at] = d.score;
            self.classes[at] = d.class as f32;
            for (slot, &v) in self.boxes[at * 4..at * 4 + 4].iter_mut().zip(&d.corners) {
                // numpy's clip: NaN stays NaN.
                *slot = if c.clip && !v.is_nan() {
                    v.clamp(0.0, 1.0)
                } else {
                    v
                };
            }
        }
    }

    fn values(self, batch: usize, size: usize) -> KResult {
        Ok(vec![
            Value::tensor(make(vec![batch, size, 4], Storage::Float32(self.boxes))?),
            Value::tensor(make(vec![batch, size], Storage::Float32(self.scores))?),
            Value::tensor(make(vec![batch, size], Storage::Float32(self.classes))?),
            Value::tensor(make(vec![batch], Storage::Int32(self.valid))?),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_scores(values: &[f32]) -> Scores {
        Scores {
            values: values.to_vec(),
            dtype: DType::Float32,
        }
    }

    #[test]
    fn hard_selection_drops_overlaps_and_keeps_ties_in_index_order() {
        let boxes = [
            0.0, 0.0, 1.0, 1.0, // 0
            0.0, 0.1, 1.0, 1.1, // 1: overlaps 0
            0.0, 2.0, 1.0, 3.0, // 2
            1.0, 3.0, 0.0, 2.0, // 3: box 2 with flipped corners
        ];
        let all = corners(&boxes);
        let scores = f32_scores(&[0.9, 0.95, 0.5, 0.5]);
        let s = Selection {
            max_output: 10,
            threshold: 0.5,
            score_threshold: f32::MIN,
            sigma: 0.0,
        };
        let (selected, kept) = select(&scores, &s, |a, b| all[a].iou(&all[b]));
        assert_eq!(selected, vec![1, 2]);
        assert_eq!(kept, vec![0.95, 0.5]);
    }

    #[test]
    fn soft_selection_decays_and_requeues() {
        let boxes = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0];
        let all = corners(&boxes);
        let scores = f32_scores(&[0.9, 0.8]);
        let s = Selection {
            max_output: 10,
            threshold: 1.0,
            score_threshold: 0.0,
            sigma: 0.5,
        };
        let (selected, kept) = select(&scores, &s, |a, b| all[a].iou(&all[b]));
        assert_eq!(selected, vec![0, 1]);
        assert!((kept[1] - 0.8 * (-1.0f32).exp()).abs() < 1e-6);
    }
}
