//! Softmax and LogSoftmax along the last axis, and the two softmax cross-entropy losses.
//! Rows are shifted by their maximum so exp cannot overflow; half types compute in f32.

use super::broadcast::map2;
use super::fast::{by_chunks, exp, Fma, Madd, Separate};
use super::num::{narrow_floats, real_map, wide_floats, Real};
use crate::engine::kernel::{boxed, fail, tensor_input, KResult};
use crate::engine::{Registry, Value};
use crate::kernels::util::{int_values, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Softmax", |_| {
        Ok(boxed(|_ctx, inputs| softmax_kernel(inputs, false)))
    });
    r.add("LogSoftmax", |_| {
        Ok(boxed(|_ctx, inputs| softmax_kernel(inputs, true)))
    });
    r.add("SoftmaxCrossEntropyWithLogits", |_| {
        Ok(boxed(|_ctx, inputs| dense_loss(inputs)))
    });
    r.add("SparseSoftmaxCrossEntropyWithLogits", |_| {
        Ok(boxed(|_ctx, inputs| sparse_loss(inputs)))
    });
}

fn softmax_kernel(inputs: &[Value], log: bool) -> KResult {
    let t = tensor_input(inputs, 0)?;
    let Some(&width) = t.shape().last() else {
        return Err(fail(format!(
            "logits must have >= 1 dimension, got {:?}",
            t.shape()
        )));
    };
    let storage = match t.values::<f32>() {
        Some(v) => Storage::Float32(softmax_f32(v, width, log)),
        None => real_map!(&t, |v| softmax_rows(v, width, log))
            .ok_or_else(|| fail(format!("Softmax does not support {} inputs", t.dtype())))?,
    };
    Ok(vec![Value::tensor(make(t.shape().to_vec(), storage)?)])
}

/// Softmax (or its log) of each `width`-long row.
pub fn softmax_rows<T: Real>(x: &[T], width: usize, log: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    if width == 0 {
        return out;
    }
    for row in x.chunks_exact(width) {
        let start = out.len();
        let top = row_max(row);
        if log {
            out.extend(row.iter().map(|&v| v - top));
            let sum = out[start..].iter().fold(T::zero(), |s, &v| s + v.exp());
            let ln = sum.ln();
            out[start..].iter_mut().for_each(|v| *v = *v - ln);
        } else {
            out.extend(row.iter().map(|&v| (v - top).exp()));
            let sum = out[start..].iter().fold(T::zero(), |s, &v| s + v);
            out[start..].iter_mut().for_each(|v| *v = *v / sum);
        }
    }
    out
}

/// Float32 softmax (or its log) of each `width`-long row, as [`softmax_rows`] computes it but
/// with the engine's vectorized e^x and sums and maxima kept in 16 lanes, so that a row is a few
/// SIMD passes instead of a libm call and a dependent add per element (attention's softmax was
/// a sixth of a small BERT's time); large inputs split over threads by whole rows.
fn softmax_f32(x: &[f32], width: usize, log: bool) -> Vec<f32> {
    if width == 0 {
        return vec![0f32; x.len()];
    }
    by_chunks(x, width, |o, x| rows_f32(o, x, width, log))
}

/// Compiled also for AVX-512 and AVX2 (chosen at run time), whose e^x takes FMA steps.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn rows_f32(out: &mut [f32], x: &[f32], width: usize, log: bool) {
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        rows::<Fma>(out, x, width, log);
    } else {
        rows::<Separate>(out, x, width, log);
    }
}

#[inline(always)]
fn rows<M: Madd>(out: &mut [f32], x: &[f32], width: usize, log: bool) {
    for (o, row) in out.chunks_exact_mut(width).zip(x.chunks_exact(width)) {
        let top = lanes_max(row);
        if log {
            o.iter_mut().zip(row).for_each(|(o, &v)| *o = v - top);
            let sum = lanes_sum(o, exp::<M>);
            let ln = sum.ln();
            o.iter_mut().for_each(|v| *v -= ln);
        } else {
            o.iter_mut()
                .zip(row)
                .for_each(|(o, &v)| *o = exp::<M>(v - top));
            let sum = lanes_sum(o, |v| v);
            o.iter_mut().for_each(|v| *v /= sum);
        }
    }
}

/// Lanes kept apart in the sums and maxima below, one AVX-512 register.
const LANES: usize = 16;

/// The sum of `f` over `v`, accumulated in [`LANES`] independent partial sums.
#[inline(always)]
fn lanes_sum(v: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = v.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    acc.iter().sum::<f32>() + tail.iter().map(|&x| f(x)).sum::<f32>()
}

/// The maximum of a row, NaN if any element is NaN, kept in [`LANES`] lanes.
#[inline(always)]
fn lanes_max(row: &[f32]) -> f32 {
    let mut top = [f32::NEG_INFINITY; LANES];
    let mut nan = [false; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for ((t, n), &x) in top.iter_mut().zip(&mut nan).zip(c) {
            *n |= x.is_nan();
            *t = if x > *t { x } else { *t };
        }
    }
    if nan.iter().any(|&n| n) {
        return f32::NAN;
    }
    let (lanes, rest) = (row_max(&top), row_max(tail));
    if rest.is_nan() || rest > lanes {
        rest
    } else {
        lanes
    }
}

/// The maximum of a row, NaN if any element is NaN.
fn row_max<T: Real>(row: &[T]) -> T {
    let mut top = T::neg_infinity();
    for &v in row {
        if v.is_nan() {
            return v;
        }
        if v > top {
            top = v;
        }
    }
    top
}

fn float_input(t: &Tensor, what: &str) -> KResult<Vec<f64>> {
    wide_floats(t).ok_or_else(|| fail(format!("{what} must be a float tensor, got {}", t.dtype())))
}

/// Per-row loss -sum(labels * log softmax) and its gradient softmax - labels; features and
/// labels broadcast against each other to a matrix.
fn dense_loss(inputs: &[Value]) -> KResult {
    let x = tensor_input(inputs, 0)?;
    let labels = tensor_input(inputs, 1)?;
    let bad = || {
        fail(format!(
            "logits and labels must be either 2-dimensional, or broadcasted to be \
             2-dimensional: {:?} vs. {:?}",
            x.shape(),
            labels.shape()
        ))
    };
    let (xv, lv) = (
        float_input(&x, "features")?,
        float_input(&labels, "labels")?,
    );
    let (shape, pairs) =
        map2(&xv, x.shape(), &lv, labels.shape(), |a, b| (a, b)).map_err(|_| bad())?;
    let [batch, classes] = shape[..] else {
        return Err(bad());
    };
    let logits: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let logp = softmax_rows(&logits, classes, true);
    let mut loss = Vec::with_capacity(batch);
    let mut grad = Vec::with_capacity(pairs.len());
    if classes > 0 {
        for (lp, row) in logp.chunks_exact(classes).zip(pairs.chunks_exact(classes)) {
            loss.push(-lp.iter().zip(row).map(|(&l, p)| p.1 * l).sum::<f64>());
            grad.extend(lp.iter().zip(row).map(|(&l, p)| l.exp() - p.1));
        }
    } else {
        loss.resize(batch, 0.0);
    }
    Ok(vec![
        Value::tensor(make(vec![batch], narrow_floats(x.dtype(), loss))?),
        Value::tensor(make(shape, narrow_floats(x.dtype(), grad))?),
    ])
}

/// The same loss with one class index per row; an index outside [0, classes) is an error.
fn sparse_loss(inputs: &[Value]) -> KResult {
    let x = tensor_input(inputs, 0)?;
    let labels = tensor_input(inputs, 1)?;
    let index = int_values(&labels, "labels")?;
    let (&[batch, classes], &[rows]) = (x.shape(), labels.shape()) else {
        return Err(shape_error(&x, &labels));
    };
    if rows != batch || classes == 0 {
        return Err(shape_error(&x, &labels));
    }
    if let Some(bad) = index.iter().find(|&&l| l < 0 || l as u64 >= classes as u64) {
        return Err(fail(format!(
            "Received a label value of {bad} which is outside the valid range of [0, {classes})."
        )));
    }
    let logp = softmax_rows(&float_input(&x, "features")?, classes, true);
    let mut loss = Vec::with_capacity(batch);
    let mut grad: Vec<f64> = logp.iter().map(|l| l.exp()).collect();
    for ((lp, g), &l) in logp
        .chunks_exact(classes)
        .zip(grad.chunks_exact_mut(classes))
        .zip(&index)
    {
        let l = l as usize;
        loss.push(-lp[l]);
        g[l] -= 1.0;
    }
    Ok(vec![
        Value::tensor(make(vec![batch], narrow_floats(x.dtype(), loss))?),
        Value::tensor(make(x.shape().to_vec(), narrow_floats(x.dtype(), grad))?),
    ])
}

fn shape_error(x: &Tensor, labels: &Tensor) -> crate::error::Error {
    fail(format!(
        "logits must be a matrix with at least one class and labels a vector with one entry \
         per row: {:?} vs. {:?}",
        x.shape(),
        labels.shape()
    ))
}

#[cfg(test)]
mod fast_tests {
    use super::super::num::PARALLEL_MIN;
    use super::*;

    /// The float32 path against the generic rows in float64, over widths around the lane count,
    /// rows with NaN and infinities, and an input large enough to be split over threads.
    #[test]
    fn float32_rows_match_float64_rows() {
        for width in [1usize, 7, 15, 16, 17, 33, 128] {
            let rows = (2 * PARALLEL_MIN).div_ceil(width);
            let mut x: Vec<f32> = (0..rows * width)
                .map(|i| ((i * 7919) % 1000) as f32 * 0.037 - 18.0)
                .collect();
            x[width - 1] = f32::NAN;
            x[width] = f32::INFINITY;
            if width > 1 {
                x[2 * width..3 * width].fill(f32::NEG_INFINITY);
                x[3 * width + width / 2] = 90.0;
            }
            let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            for log in [false, true] {
                let got = softmax_f32(&x, width, log);
                let want = softmax_rows(&wide, width, log);
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let close = (f64::from(g) - w).abs() <= 1e-6 + 2e-6 * w.abs();
                    assert!(
                        (g.is_nan() && w.is_nan()) || g == w as f32 || close,
                        "width {width} log {log} element {i}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
