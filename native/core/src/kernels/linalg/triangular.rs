//! MatrixTriangularSolve: X with T X = B (or Tᴴ X = B) for T the lower (or upper) triangle of
//! the matrix, by substitution; batch dimensions broadcast. Nothing checks the diagonal: a zero
//! on it gives inf and NaN, as in TensorFlow.

use super::scalar::Scalar;
use super::{narrow, square, widen, Wide};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::util::{broadcast_offsets, broadcast_shape};
use crate::tensor::Tensor;

/// How each matrix of a batch is used.
#[derive(Clone, Copy)]
struct Triangle {
    lower: bool,
    adjoint: bool,
    n: usize,
}

impl Triangle {
    /// The coefficient of unknown k in equation i of the system actually solved.
    fn at<S: Scalar>(self, a: &[S], i: usize, k: usize) -> S {
        if self.adjoint {
            a[k * self.n + i].conj()
        } else {
            a[i * self.n + k]
        }
    }

    /// X (n×m, row-major) for one matrix `a` and right-hand side `b`.
    fn solve<S: Scalar>(self, a: &[S], b: &[S], m: usize) -> Vec<S> {
        let n = self.n;
        let mut x = b.to_vec();
        if m == 0 {
            return x;
        }
        // Tᴴ of a lower triangle is upper: substitution runs forward exactly when the system
        // solved is lower triangular.
        let forward = self.lower != self.adjoint;
        for step in 0..n {
            let i = if forward { step } else { n - 1 - step };
            let (row, solved, first) = if forward {
                let (before, after) = x.split_at_mut(i * m);
                (&mut after[..m], &*before, 0)
            } else {
                let (head, tail) = x.split_at_mut((i + 1) * m);
                (&mut head[i * m..], &*tail, i + 1)
            };
            for (offset, known) in solved.chunks_exact(m).enumerate() {
                let coefficient = self.at(a, i, first + offset);
                for (v, &y) in row.iter_mut().zip(known) {
                    *v -= coefficient * y;
                }
            }
            let diagonal = self.at(a, i, i);
            row.iter_mut().for_each(|v| *v /= diagonal);
        }
        x
    }
}

/// Every solve of the broadcast batch: `a_at[i]` and `b_at[i]` index the matrices of output i.
fn solve_all<S: Scalar>(
    a: &[S],
    b: &[S],
    a_at: &[usize],
    b_at: &[usize],
    triangle: Triangle,
    m: usize,
) -> Vec<S> {
    let n = triangle.n;
    let mut out = Vec::with_capacity(a_at.len() * n * m);
    for (&i, &j) in a_at.iter().zip(b_at) {
        let matrix = &a[i * n * n..(i + 1) * n * n];
        out.extend(triangle.solve(matrix, &b[j * n * m..(j + 1) * n * m], m));
    }
    out
}

pub fn matrix_triangular_solve(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let lower = node.attrs.bool_or("lower", true)?;
    let adjoint = node.attrs.bool_or("adjoint", false)?;
    Ok(boxed(move |_, inputs| {
        let a = tensor_input(inputs, 0)?;
        let b = tensor_input(inputs, 1)?;
        let (_, n) = square(&a, "MatrixTriangularSolve", "matrix")?;
        let (shape, a_at, b_at) = batches(&a, &b, n)?;
        let m = shape[shape.len() - 1];
        let triangle = Triangle { lower, adjoint, n };
        let out = match (
            widen(&a, "MatrixTriangularSolve")?,
            widen(&b, "MatrixTriangularSolve")?,
        ) {
            (Wide::Real(x), Wide::Real(y)) if a.dtype() == b.dtype() => {
                Wide::Real(solve_all(&x, &y, &a_at, &b_at, triangle, m))
            }
            (Wide::Complex(x), Wide::Complex(y)) if a.dtype() == b.dtype() => {
                Wide::Complex(solve_all(&x, &y, &a_at, &b_at, triangle, m))
            }
            _ => {
                return Err(fail(format!(
                    "MatrixTriangularSolve: matrix and rhs must have one dtype, got {} and {}",
                    a.dtype(),
                    b.dtype()
                )))
            }
        };
        one(narrow(b.dtype(), shape, out)?)
    }))
}

/// The output shape and, per output matrix, the index of its matrix and of its right-hand
/// side, after checking the rows agree and the batch dimensions broadcast.
fn batches(a: &Tensor, b: &Tensor, n: usize) -> KResult<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let (sa, sb) = (a.shape(), b.shape());
    let [.., rows, m] = *sb else {
        return Err(fail(format!(
            "MatrixTriangularSolve: right-hand side must have rank >= 2, got {sb:?}"
        )));
    };
    if rows != n {
        return Err(fail(format!(
            "MatrixTriangularSolve: Input matrix and right-hand side must have the same number \
             of rows: {sa:?} vs. {sb:?}"
        )));
    }
    let (batch_a, batch_b) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let batch = broadcast_shape(batch_a, batch_b).map_err(|_| {
        fail(format!(
            "MatrixTriangularSolve: Incompatible batch dimensions: {sa:?} vs. {sb:?}"
        ))
    })?;
    let a_at = broadcast_offsets(batch_a, &batch);
    let b_at = broadcast_offsets(batch_b, &batch);
    let mut shape = batch;
    shape.extend([n, m]);
    Ok((shape, a_at, b_at))
}
