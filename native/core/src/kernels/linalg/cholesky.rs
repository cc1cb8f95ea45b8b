//! Cholesky: the lower factor L with A = L Lᴴ, read from A's lower triangle alone (the upper
//! one is ignored, as TensorFlow ignores it). A matrix that is not positive definite gets a
//! lower triangle of NaNs, its neighbours in the batch their factors (TensorFlow logs a warning
//! and does the same).

use super::scalar::Scalar;
use super::{narrow, per_matrix, square, widen, Wide};
use crate::engine::kernel::{boxed, one, tensor_input, KResult, Kernel, NodeSpec};

/// The factor of one n×n matrix, or None when a pivot is not positive (or NaN).
fn factor<S: Scalar>(a: &[S], n: usize) -> Option<Vec<S>> {
    let mut l = vec![S::zero(); n * n];
    for j in 0..n {
        let row_j = j * n..j * n + j;
        let squares: f64 = l[row_j.clone()].iter().map(|v| v.modulus().powi(2)).sum();
        let pivot = a[j * n + j].real() - squares;
        if pivot.is_nan() || pivot <= 0.0 {
            return None;
        }
        let root = S::from_real(pivot.sqrt());
        l[j * n + j] = root;
        for i in j + 1..n {
            let dot = l[i * n..i * n + j]
                .iter()
                .zip(&l[row_j.clone()])
                .fold(S::zero(), |acc, (&x, &y)| acc + x * y.conj());
            l[i * n + j] = (a[i * n + j] - dot) / root;
        }
    }
    Some(l)
}

/// NaN on and below the diagonal, zero above.
fn failed<S: Scalar>(n: usize) -> Vec<S> {
    let nan = S::from_real(f64::NAN);
    (0..n * n)
        .map(|k| if k % n <= k / n { nan } else { S::zero() })
        .collect()
}

fn factors<S: Scalar>(matrices: &[S], count: usize, n: usize) -> KResult<Vec<S>> {
    per_matrix(count, n, |b| {
        let matrix = &matrices[b * n * n..(b + 1) * n * n];
        Ok(factor(matrix, n).unwrap_or_else(|| failed(n)))
    })
}

pub fn cholesky(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let (count, n) = square(&t, "Cholesky", "input")?;
        let out = match widen(&t, "Cholesky")? {
            Wide::Real(v) => Wide::Real(factors(&v, count, n)?),
            Wide::Complex(v) => Wide::Complex(factors(&v, count, n)?),
        };
        one(narrow(t.dtype(), t.shape().to_vec(), out)?)
    }))
}
