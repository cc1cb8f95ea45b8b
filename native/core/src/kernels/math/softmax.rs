//! Softmax and LogSoftmax along the last axis, and the two softmax cross-entropy losses.
//! Rows are shifted by their maximum so exp cannot overflow; half types compute in f32.

use super::broadcast::map2;
use super::num::{narrow_floats, real_map, wide_floats, Real};
use crate::engine::kernel::{boxed, fail, tensor_input, KResult};
use crate::engine::{Registry, Value};
use crate::kernels::util::{int_values, make};
use crate::tensor::Tensor;

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
    let storage = real_map!(&t, |v| softmax_rows(v, width, log))
        .ok_or_else(|| fail(format!("Softmax does not support {} inputs", t.dtype())))?;
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
