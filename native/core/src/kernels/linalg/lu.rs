//! Gaussian elimination with partial pivoting (the largest modulus in each column, the first of
//! equals), and the three ops built on it: MatrixInverse, MatrixSolve and LogMatrixDeterminant.

use super::scalar::{adjoint, Scalar};
use super::{narrow, per_matrix, square, widen, Wide};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::Value;
use crate::error::Error;
use crate::tensor::Tensor;

/// P A = L U of one n×n matrix, L (unit diagonal, below) and U packed into one row-major matrix.
struct Lu<S> {
    packed: Vec<S>,
    n: usize,
    /// Row i of P A is row `rows[i]` of A.
    rows: Vec<usize>,
    /// Whether P is an odd permutation.
    odd: bool,
    /// Whether some column had no nonzero pivot (U then has a zero on its diagonal).
    singular: bool,
}

impl<S: Scalar> Lu<S> {
    fn new(matrix: &[S], n: usize) -> Self {
        let mut a = matrix.to_vec();
        let mut rows: Vec<usize> = (0..n).collect();
        let (mut odd, mut singular) = (false, false);
        for k in 0..n {
            let mut pivot = k;
            for i in k + 1..n {
                if a[i * n + k].modulus() > a[pivot * n + k].modulus() {
                    pivot = i;
                }
            }
            if a[pivot * n + k].modulus() == 0.0 {
                singular = true;
                continue;
            }
            if pivot != k {
                for j in 0..n {
                    a.swap(k * n + j, pivot * n + j);
                }
                rows.swap(k, pivot);
                odd = !odd;
            }
            let (top, below) = a.split_at_mut((k + 1) * n);
            let pivot_row = &top[k * n..];
            for row in below.chunks_exact_mut(n) {
                let factor = row[k] / pivot_row[k];
                row[k] = factor;
                for (x, &p) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..]) {
                    *x -= factor * p;
                }
            }
        }
        Self {
            packed: a,
            n,
            rows,
            odd,
            singular,
        }
    }

    fn diagonal(&self) -> impl Iterator<Item = S> + '_ {
        (0..self.n).map(|i| self.packed[i * self.n + i])
    }

    /// X with A X = B for B an n×m row-major matrix: permute, then forward and back
    /// substitution, a row of X at a time.
    fn solve(&self, rhs: &[S], m: usize) -> Vec<S> {
        let n = self.n;
        if m == 0 {
            return Vec::new();
        }
        let mut x: Vec<S> = Vec::with_capacity(n * m);
        for &r in &self.rows {
            x.extend_from_slice(&rhs[r * m..(r + 1) * m]);
        }
        for i in 0..n {
            let (known, rest) = x.split_at_mut(i * m);
            let row = &mut rest[..m];
            for (k, solved) in known.chunks_exact(m).enumerate() {
                subtract_scaled(row, self.packed[i * n + k], solved);
            }
        }
        for i in (0..n).rev() {
            let (head, known) = x.split_at_mut((i + 1) * m);
            let row = &mut head[i * m..];
            for (k, solved) in known.chunks_exact(m).enumerate() {
                subtract_scaled(row, self.packed[i * n + i + 1 + k], solved);
            }
            let pivot = self.packed[i * n + i];
            row.iter_mut().for_each(|v| *v /= pivot);
        }
        x
    }
}

/// row -= factor * other.
fn subtract_scaled<S: Scalar>(row: &mut [S], factor: S, other: &[S]) {
    for (x, &y) in row.iter_mut().zip(other) {
        *x -= factor * y;
    }
}

fn identity<S: Scalar>(n: usize) -> Vec<S> {
    let mut eye = vec![S::zero(); n * n];
    eye.iter_mut().step_by(n + 1).for_each(|d| *d = S::one());
    eye
}

/// Each matrix's inverse; a singular one fails the op.
fn inverses<S: Scalar>(matrices: &[S], count: usize, n: usize) -> KResult<Vec<S>> {
    per_matrix(count, n, |b| {
        let lu = Lu::new(&matrices[b * n * n..(b + 1) * n * n], n);
        if lu.singular {
            return Err(fail("MatrixInverse: Input is not invertible."));
        }
        Ok(lu.solve(&identity(n), n))
    })
}

pub fn matrix_inverse(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let adjoint_input = node.attrs.bool_or("adjoint", false)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let (count, n) = square(&t, "MatrixInverse", "input")?;
        let out = match widen(&t, "MatrixInverse")? {
            Wide::Real(v) => Wide::Real(inverses(&maybe_adjoint(v, n, adjoint_input), count, n)?),
            Wide::Complex(v) => {
                Wide::Complex(inverses(&maybe_adjoint(v, n, adjoint_input), count, n)?)
            }
        };
        one(narrow(t.dtype(), t.shape().to_vec(), out)?)
    }))
}

fn maybe_adjoint<S: Scalar>(matrices: Vec<S>, n: usize, take: bool) -> Vec<S> {
    if take {
        adjoint(&matrices, n)
    } else {
        matrices
    }
}

/// X with A X = B for each matrix pair; a singular A fails the op.
fn solves<S: Scalar>(a: &[S], b: &[S], count: usize, n: usize, m: usize) -> KResult<Vec<S>> {
    per_matrix(count, n.max(m), |i| {
        let lu = Lu::new(&a[i * n * n..(i + 1) * n * n], n);
        if lu.singular {
            return Err(fail("MatrixSolve: Input matrix is not invertible."));
        }
        Ok(lu.solve(&b[i * n * m..(i + 1) * n * m], m))
    })
}

pub fn matrix_solve(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let adjoint_input = node.attrs.bool_or("adjoint", false)?;
    Ok(boxed(move |_, inputs| {
        let a = tensor_input(inputs, 0)?;
        let b = tensor_input(inputs, 1)?;
        let (count, n) = square(&a, "MatrixSolve", "input")?;
        let m = solve_columns(&a, &b)?;
        if a.dtype() != b.dtype() {
            return Err(fail(format!(
                "MatrixSolve: matrix and rhs must have one dtype, got {} and {}",
                a.dtype(),
                b.dtype()
            )));
        }
        let out = match (widen(&a, "MatrixSolve")?, widen(&b, "MatrixSolve")?) {
            (Wide::Real(x), Wide::Real(y)) => Wide::Real(solves(
                &maybe_adjoint(x, n, adjoint_input),
                &y,
                count,
                n,
                m,
            )?),
            (Wide::Complex(x), Wide::Complex(y)) => Wide::Complex(solves(
                &maybe_adjoint(x, n, adjoint_input),
                &y,
                count,
                n,
                m,
            )?),
            _ => return Err(fail("MatrixSolve: matrix and rhs must have one dtype")),
        };
        one(narrow(b.dtype(), b.shape().to_vec(), out)?)
    }))
}

/// The right-hand side's column count, after checking it has the matrix's batch dimensions
/// and rows.
fn solve_columns(a: &Tensor, b: &Tensor) -> KResult<usize> {
    let (sa, sb) = (a.shape(), b.shape());
    if sb.len() != sa.len() || sb[..sb.len().saturating_sub(2)] != sa[..sa.len() - 2] {
        return Err(fail(format!(
            "MatrixSolve: Input matrix and right-hand side must have the same batch dimensions: \
             {sa:?} vs. {sb:?}"
        )));
    }
    let (rows, m) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    if rows != sa[sa.len() - 1] {
        return Err(fail(format!(
            "MatrixSolve: Input matrix and right-hand side must have the same number of rows: \
             {} vs. {rows}",
            sa[sa.len() - 2]
        )));
    }
    Ok(m)
}

/// (sign, log|det|) of one matrix: sign ±1 (a unit phase when complex) from the pivots and the
/// permutation; a log that is not finite (a zero pivot) gets sign 0 and is made -inf, as
/// TensorFlow does.
fn sign_and_log<S: Scalar>(matrix: &[S], n: usize) -> (S, f64) {
    let lu = Lu::new(matrix, n);
    let mut sign = if lu.odd { -S::one() } else { S::one() };
    let mut log = 0.0;
    for pivot in lu.diagonal() {
        let modulus = pivot.modulus();
        log += modulus.ln();
        sign *= pivot / S::from_real(modulus);
    }
    if !log.is_finite() {
        sign = S::zero();
        if log > 0.0 {
            log = -log;
        }
    }
    (sign, log)
}

fn sign_and_logs<S: Scalar>(matrices: &[S], count: usize, n: usize) -> (Vec<S>, Vec<S>) {
    let pairs = per_matrix(count, n, |b| {
        let (sign, log) = sign_and_log(&matrices[b * n * n..(b + 1) * n * n], n);
        Ok::<_, Error>(vec![(sign, S::from_real(log))])
    })
    .unwrap_or_default();
    pairs.into_iter().unzip()
}

pub fn log_matrix_determinant(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let (count, n) = square(&t, "LogMatrixDeterminant", "input")?;
        let batch = t.shape()[..t.rank() - 2].to_vec();
        let (signs, logs) = match widen(&t, "LogMatrixDeterminant")? {
            Wide::Real(v) => {
                let (s, l) = sign_and_logs(&v, count, n);
                (Wide::Real(s), Wide::Real(l))
            }
            Wide::Complex(v) => {
                let (s, l) = sign_and_logs(&v, count, n);
                (Wide::Complex(s), Wide::Complex(l))
            }
        };
        Ok(vec![
            Value::tensor(narrow(t.dtype(), batch.clone(), signs)?),
            Value::tensor(narrow(t.dtype(), batch, logs)?),
        ])
    }))
}
