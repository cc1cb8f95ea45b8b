//! Connectionist temporal classification decoding: CTCGreedyDecoder and CTCBeamSearchDecoder
//! (`tf.nn.ctc_greedy_decoder`, `tf.nn.ctc_beam_search_decoder`).
//!
//! Inputs are logits `[max_time, batch, classes]` and a length per batch entry. Each decoded
//! path is a SparseTensor (indices `[n, 2]` as (batch, position), int64 labels, dense shape
//! `[batch, longest path]`) plus a log probability per path, in the logits' dtype.
//!
//! Greedy: per step the most likely class (the first of equal maxima; a NaN wins only in first
//! place, as TensorFlow's scan takes a later class only when strictly greater), dropping
//! blanks and, with `merge_repeated`, a class equal to the previous step's.
//!
//! Beam search is TensorFlow's prefix beam search (blank is the last class) on each step's
//! log-softmax, in f64: a tree of prefixes, each with its log probabilities of ending in a
//! blank and in its label at the previous step and this one; the beam keeps `beam_width`
//! prefixes, a new one entering a full beam only when more probable than the least probable
//! one, which leaves. The search is sequential by nature (one batch entry, step, prefix and
//! class after another); prefixes live in one arena per batch entry, children by index.

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::engine::Value;
use crate::tensor::{Storage, Tensor};

type Made = Result<Box<dyn crate::engine::kernel::Kernel>, String>;

/// A decoder's checked inputs.
struct Inputs {
    /// `[max_time, batch, classes]`, widened.
    logits: Vec<f64>,
    batch: usize,
    classes: usize,
    /// Per batch entry, how many steps to decode.
    lengths: Vec<usize>,
    dtype: DType,
}

impl Inputs {
    /// The logits of step `t` of batch entry `b`.
    fn row(&self, t: usize, b: usize) -> &[f64] {
        let start = (t * self.batch + b) * self.classes;
        self.logits.get(start..start + self.classes).unwrap_or(&[])
    }
}

fn checked(inputs: &[Value]) -> KResult<Inputs> {
    let logits = tensor_input(inputs, 0)?;
    let lengths = tensor_input(inputs, 1)?;
    let &[max_time, batch, classes] = logits.shape() else {
        return Err(fail(format!(
            "inputs is not a 3-Tensor, got shape {:?}",
            logits.shape()
        )));
    };
    if lengths.rank() != 1 {
        return Err(fail(format!(
            "sequence_length is not a vector, got shape {:?}",
            lengths.shape()
        )));
    }
    if logits.is_empty() {
        return Err(fail("inputs must not be empty"));
    }
    if lengths.len() != batch {
        return Err(fail(format!(
            "len(sequence_length) != batch_size.  len(sequence_length):  {} batch_size: {batch}",
            lengths.len()
        )));
    }
    let values: Vec<f64> = match logits.storage() {
        Storage::Float32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Storage::Float64(v) => v.clone(),
        _ => {
            return Err(fail(format!(
                "inputs must be float32 or float64, got {}",
                logits.dtype()
            )))
        }
    };
    let lengths = crate::kernels::util::int_values(&lengths, "sequence_length")?
        .into_iter()
        .enumerate()
        .map(|(b, len)| {
            if len > max_time as i64 {
                return Err(fail(format!("sequence_length({b}) <= {max_time}")));
            }
            // A negative length decodes nothing.
            Ok(usize::try_from(len).unwrap_or(0))
        })
        .collect::<KResult<Vec<usize>>>()?;
    Ok(Inputs {
        logits: values,
        batch,
        classes,
        lengths,
        dtype: logits.dtype(),
    })
}

/// Values in the logits' dtype.
fn floats(dtype: DType, shape: Vec<usize>, values: Vec<f64>) -> KResult<Value> {
    #[allow(clippy::cast_possible_truncation)]
    let storage = match dtype {
        DType::Float32 => Storage::Float32(values.iter().map(|&x| x as f32).collect()),
        _ => Storage::Float64(values),
    };
    Ok(Value::tensor(crate::kernels::util::make(shape, storage)?))
}

/// A batch of label sequences as SparseTensor parts (indices, values, dense shape).
fn sparse(paths: &[Vec<i64>]) -> [Value; 3] {
    let n: usize = paths.iter().map(Vec::len).sum();
    let mut indices = Vec::with_capacity(2 * n);
    let mut values = Vec::with_capacity(n);
    for (b, path) in paths.iter().enumerate() {
        for (k, &label) in path.iter().enumerate() {
            indices.extend([b as i64, k as i64]);
            values.push(label);
        }
    }
    let longest = paths.iter().map(Vec::len).max().unwrap_or(0);
    [
        Value::tensor(Tensor::from_vec(vec![n, 2], indices)),
        Value::tensor(Tensor::from_vec(vec![n], values)),
        Value::tensor(Tensor::from_vec(
            vec![2],
            vec![paths.len() as i64, longest as i64],
        )),
    ]
}

pub fn greedy_decoder(node: &NodeSpec) -> Made {
    let merge_repeated = node.attrs.bool_or("merge_repeated", false)?;
    let blank_index = node.attrs.int_or("blank_index", -1)?;
    Ok(boxed(move |_, inputs| {
        let input = checked(inputs)?;
        let (batch, c) = (input.batch, input.classes as i64);
        let blank = if blank_index < 0 {
            blank_index + c
        } else {
            blank_index
        };
        if !(0..c).contains(&blank) {
            return Err(fail(format!(
                "blank_index expected to be between {} and {c} but was {blank_index}",
                -c
            )));
        }
        let mut paths = vec![Vec::new(); batch];
        let mut log_probability = vec![0f64; batch];
        for (b, (path, &len)) in paths.iter_mut().zip(&input.lengths).enumerate() {
            let mut previous = -1i64;
            let mut sum = 0f64;
            for t in 0..len {
                let (best, value) = row_max(input.row(t, b));
                sum += value;
                let label = best as i64;
                if label != blank && !(merge_repeated && label == previous) {
                    path.push(label);
                }
                previous = label;
            }
            log_probability[b] = -sum;
        }
        let [indices, values, shape] = sparse(&paths);
        Ok(vec![
            indices,
            values,
            shape,
            floats(input.dtype, vec![batch, 1], log_probability)?,
        ])
    }))
}

/// The first position of a row's maximum, and the maximum.
fn row_max(row: &[f64]) -> (usize, f64) {
    let mut best = (0, row.first().copied().unwrap_or(f64::NEG_INFINITY));
    for (c, &x) in row.iter().enumerate().skip(1) {
        if x > best.1 {
            best = (c, x);
        }
    }
    best
}

// Beam search ---------------------------------------------------------------------------------

const LOG_ZERO: f64 = f64::NEG_INFINITY;

fn log_sum_exp(a: f64, b: f64) -> f64 {
    if a == LOG_ZERO {
        return b;
    }
    if b == LOG_ZERO {
        return a;
    }
    let (high, low) = if a > b { (a, b) } else { (b, a) };
    high + (low - high).exp().ln_1p()
}

/// Log probabilities of a prefix: total, ending in a blank, ending in its label.
type Probs = [f64; 3];

const ZERO: Probs = [LOG_ZERO; 3];

/// A prefix in the search tree.
struct Beam {
    /// -1 for the root (the empty prefix).
    label: i64,
    parent: Option<usize>,
    /// The child per label, once this prefix has been expanded.
    children: Vec<Option<usize>>,
    /// At the previous step and at this one.
    old: Probs,
    new: Probs,
}

/// The prefixes of one batch entry, and the beam: at most `width` of them.
struct Search {
    beams: Vec<Beam>,
    leaves: Vec<usize>,
    width: usize,
    /// The least probable leaf, found once after each change of the beam (it is asked for
    /// once per candidate child, far more often than the beam changes).
    bottom: Option<usize>,
}

impl Search {
    fn new(width: usize) -> Self {
        let root = Beam {
            label: -1,
            parent: None,
            children: Vec::new(),
            old: ZERO,
            new: [0.0, 0.0, LOG_ZERO],
        };
        let mut search = Self {
            beams: vec![root],
            leaves: Vec::new(),
            width,
            bottom: None,
        };
        search.push(0);
        search
    }

    fn total(&self, beam: usize) -> f64 {
        self.beams.get(beam).map_or(LOG_ZERO, |b| b.new[0])
    }

    fn bottom(&mut self) -> usize {
        if let Some(b) = self.bottom {
            return b;
        }
        // The first of equal minima, in the order the leaves entered.
        let mut found: Option<usize> = None;
        for &leaf in &self.leaves {
            if found.is_none_or(|f| self.total(leaf) < self.total(f)) {
                found = Some(leaf);
            }
        }
        let found = found.unwrap_or(0);
        self.bottom = Some(found);
        found
    }

    fn push(&mut self, beam: usize) {
        if self.leaves.len() < self.width {
            self.leaves.push(beam);
        } else {
            let bottom = self.bottom();
            if self.total(beam) <= self.total(bottom) {
                return;
            }
            self.leaves.retain(|&l| l != bottom);
            self.leaves.push(beam);
        }
        self.bottom = None;
    }

    /// The leaves, most probable first (ties in the order they entered); the beam is emptied.
    fn extract(&mut self) -> Vec<usize> {
        let mut found = std::mem::take(&mut self.leaves);
        found.sort_by(|&a, &b| {
            self.total(b)
                .partial_cmp(&self.total(a))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        self.bottom = None;
        found
    }

    fn candidate(&mut self, total: f64) -> bool {
        total > LOG_ZERO
            && (self.leaves.len() < self.width || {
                let bottom = self.bottom();
                total > self.total(bottom)
            })
    }

    fn active(&self, beam: usize) -> bool {
        self.total(beam) != LOG_ZERO
    }

    /// One time step on the step's log-softmax `scores`; blank is the last class.
    fn step(&mut self, scores: &[f64], blank: usize) {
        let score = |label: i64| {
            usize::try_from(label)
                .ok()
                .and_then(|l| scores.get(l))
                .copied()
                .unwrap_or(LOG_ZERO)
        };
        let blank_score = scores.get(blank).copied().unwrap_or(LOG_ZERO);
        let branches = self.extract();
        for &b in &branches {
            let beam = &mut self.beams[b];
            beam.old = beam.new;
        }
        for &b in &branches {
            let (label, parent) = (self.beams[b].label, self.beams[b].parent);
            if let Some(p) = parent {
                if self.active(p) {
                    let parent = &self.beams[p];
                    let previous = if label == parent.label {
                        parent.old[1]
                    } else {
                        parent.old[0]
                    };
                    let beam = &mut self.beams[b];
                    beam.new[2] = log_sum_exp(beam.new[2], previous);
                }
                self.beams[b].new[2] += score(label);
            }
            let beam = &mut self.beams[b];
            beam.new[1] = beam.old[0] + blank_score;
            beam.new[0] = log_sum_exp(beam.new[1], beam.new[2]);
            self.push(b);
        }
        for &b in &branches {
            let old = self.beams[b].old;
            if !self.candidate(old[0]) {
                continue;
            }
            for (label, &label_score) in scores.iter().enumerate().take(blank) {
                let child = self.child(b, label);
                if self.active(child) {
                    continue;
                }
                let previous = if label as i64 == self.beams[b].label {
                    old[1]
                } else {
                    old[0]
                };
                let total = label_score + previous;
                self.beams[child].new = [total, LOG_ZERO, total];
                if self.candidate(total) {
                    if self.leaves.len() == self.width {
                        // Leaves the beam by the push below.
                        let bottom = self.bottom();
                        self.beams[bottom].new = ZERO;
                    }
                    self.push(child);
                } else {
                    self.beams[child].old = ZERO;
                    self.beams[child].new = ZERO;
                }
            }
        }
    }

    /// Prefix `b`'s child for `label`, made on first use.
    fn child(&mut self, b: usize, label: usize) -> usize {
        let blank = self.beams[b].children.len();
        if let Some(Some(c)) = self.beams[b].children.get(label) {
            return *c;
        }
        let id = self.beams.len();
        self.beams.push(Beam {
            label: label as i64,
            parent: Some(b),
            children: Vec::new(),
            old: ZERO,
            new: ZERO,
        });
        let children = &mut self.beams[b].children;
        if blank <= label {
            children.resize(label + 1, None);
        }
        children[label] = Some(id);
        id
    }

    /// The labels of prefix `b`, root first; `merge_repeated` drops a label equal to the one
    /// before it.
    fn labels(&self, mut b: usize, merge_repeated: bool) -> Vec<i64> {
        let mut out = Vec::new();
        let mut previous = -1;
        while let Some(beam) = self.beams.get(b) {
            let Some(parent) = beam.parent else { break };
            if !merge_repeated || beam.label != previous {
                out.push(beam.label);
            }
            previous = beam.label;
            b = parent;
        }
        out.reverse();
        out
    }
}

/// A step's logits as log-softmax scores.
fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = logits.iter().map(|&x| (x - max).exp()).sum();
    let log_sum = sum.ln();
    logits.iter().map(|&x| x - max - log_sum).collect()
}

pub fn beam_search_decoder(node: &NodeSpec) -> Made {
    let width = node.attrs.int("beam_width")?;
    let top_paths = node.attrs.int("top_paths")?;
    let merge_repeated = node.attrs.bool_or("merge_repeated", true)?;
    let (Ok(width @ 1..), Ok(top_paths @ 1..)) =
        (usize::try_from(width), usize::try_from(top_paths))
    else {
        return Err(format!(
            "beam_width ({width}) and top_paths ({top_paths}) must be > 0"
        ));
    };
    if top_paths > width {
        return Err("requested more paths than the beam width.".into());
    }
    Ok(boxed(move |_, inputs| {
        let input = checked(inputs)?;
        let (batch, blank) = (input.batch, input.classes - 1);
        let mut paths = vec![vec![Vec::new(); batch]; top_paths];
        let mut scores = vec![0f64; batch * top_paths];
        for (b, &len) in input.lengths.iter().enumerate() {
            let mut search = Search::new(width);
            for t in 0..len {
                search.step(&log_softmax(input.row(t, b)), blank);
            }
            if search.leaves.len() < top_paths {
                return Err(fail("Less leaves in the beam search than requested."));
            }
            for (i, leaf) in search.extract().into_iter().take(top_paths).enumerate() {
                paths[i][b] = search.labels(leaf, merge_repeated);
                scores[b * top_paths + i] = search.total(leaf);
            }
        }
        let parts: Vec<[Value; 3]> = paths.iter().map(|p| sparse(p)).collect();
        let mut out = Vec::with_capacity(3 * top_paths + 1);
        for k in 0..3 {
            out.extend(parts.iter().map(|p| p[k].clone()));
        }
        out.push(floats(input.dtype, vec![batch, top_paths], scores)?);
        Ok(out)
    }))
}
