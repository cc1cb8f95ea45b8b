//! Linear algebra over batches of matrices (the innermost two dimensions of a tensor, the
//! leading ones a batch): Cholesky, MatrixInverse, MatrixSolve, MatrixTriangularSolve and
//! LogMatrixDeterminant.
//!
//! Each matrix is factored in f64 (Complex<f64> for complex inputs) and the results rounded
//! once to the input's type: float16, bfloat16, float32, float64, complex64 and complex128 all
//! take the one code path. Failures follow TensorFlow's: a singular matrix fails MatrixInverse
//! and MatrixSolve (an exactly zero pivot, as TensorFlow checks), while Cholesky answers per
//! matrix (a lower triangle of NaNs for a matrix that is not positive definite), a triangular
//! solve divides by a zero on the diagonal (inf and NaN), and a singular matrix's
//! log-determinant is -inf with sign 0.

mod cholesky;
mod lu;
mod scalar;
#[cfg(test)]
mod tests;
mod triangular;

use num_complex::Complex;
use rayon::prelude::*;

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::engine::Registry;
use crate::kernels::util::{f32_to_half, half_to_f32, make};
use crate::tensor::{element_count, Storage, Tensor};

pub use scalar::Scalar;

pub fn register(r: &mut Registry) {
    r.add("Cholesky", cholesky::cholesky);
    r.add("MatrixInverse", lu::matrix_inverse);
    r.add("MatrixSolve", lu::matrix_solve);
    r.add("LogMatrixDeterminant", lu::log_matrix_determinant);
    r.add("MatrixTriangularSolve", triangular::matrix_triangular_solve);
}

/// A tensor's elements in the precision the factorizations run in.
enum Wide {
    Real(Vec<f64>),
    Complex(Vec<Complex<f64>>),
}

/// The elements of a float or complex tensor, widened; an error naming the op for others.
fn widen(t: &Tensor, op: &str) -> KResult<Wide> {
    let pairs = |v: &[[f32; 2]]| {
        v.iter()
            .map(|&[re, im]| Complex::new(f64::from(re), f64::from(im)))
            .collect()
    };
    Ok(match t.storage() {
        Storage::Float32(v) => Wide::Real(v.iter().map(|&x| f64::from(x)).collect()),
        Storage::Float64(v) => Wide::Real(v.clone()),
        Storage::Float16(_) | Storage::BFloat16(_) => Wide::Real(
            half_to_f32(t)
                .unwrap_or_default()
                .into_iter()
                .map(f64::from)
                .collect(),
        ),
        Storage::Complex64(v) => Wide::Complex(pairs(v)),
        Storage::Complex128(v) => {
            Wide::Complex(v.iter().map(|&[re, im]| Complex::new(re, im)).collect())
        }
        _ => return Err(fail(format!("{op} does not support {} inputs", t.dtype()))),
    })
}

/// Real results rounded to `dtype` (a float type).
fn narrow_real(dtype: DType, shape: Vec<usize>, values: Vec<f64>) -> KResult<Tensor> {
    let storage = match dtype {
        DType::Float64 => Storage::Float64(values),
        DType::Float32 => Storage::Float32(values.into_iter().map(|x| x as f32).collect()),
        _ => {
            let wide: Vec<f32> = values.into_iter().map(|x| x as f32).collect();
            f32_to_half(dtype, &wide).unwrap_or(Storage::Float32(wide))
        }
    };
    make(shape, storage)
}

/// Complex results rounded to `dtype` (complex64 or complex128).
fn narrow_complex(dtype: DType, shape: Vec<usize>, values: Vec<Complex<f64>>) -> KResult<Tensor> {
    let storage = if dtype == DType::Complex64 {
        Storage::Complex64(
            values
                .into_iter()
                .map(|z| [z.re as f32, z.im as f32])
                .collect(),
        )
    } else {
        Storage::Complex128(values.into_iter().map(|z| [z.re, z.im]).collect())
    };
    make(shape, storage)
}

/// Results in the input's dtype.
fn narrow(dtype: DType, shape: Vec<usize>, values: Wide) -> KResult<Tensor> {
    match values {
        Wide::Real(v) => narrow_real(dtype, shape, v),
        Wide::Complex(v) => narrow_complex(dtype, shape, v),
    }
}

/// (batch size, n) of a tensor of n×n matrices.
fn square(t: &Tensor, op: &str, what: &str) -> KResult<(usize, usize)> {
    let shape = t.shape();
    let [.., rows, cols] = shape else {
        return Err(fail(format!(
            "{op}: {what} must have rank >= 2, got shape {shape:?}"
        )));
    };
    if rows != cols {
        return Err(fail(format!(
            "{op}: {what} matrices must be square, got {rows} by {cols}"
        )));
    }
    let batch = element_count(&shape[..shape.len() - 2]).unwrap_or(0);
    Ok((batch, *rows))
}

/// Flops of one n×n factorization below which a batch stays on the calling thread.
const PARALLEL_WORK: usize = 1 << 18;

/// `f(i)` for each matrix i of a batch, each giving `size` elements, concatenated; across threads
/// when the batch is large enough to pay for them.
fn per_matrix<S: Send, E: Send>(
    count: usize,
    n: usize,
    f: impl Fn(usize) -> Result<Vec<S>, E> + Sync + Send,
) -> Result<Vec<S>, E> {
    let parallel = count > 1 && count.saturating_mul(n.saturating_pow(3)) >= PARALLEL_WORK;
    let parts: Vec<Vec<S>> = if parallel {
        (0..count)
            .into_par_iter()
            .map(f)
            .collect::<Result<_, E>>()?
    } else {
        (0..count).map(f).collect::<Result<_, E>>()?
    };
    Ok(parts.into_iter().flatten().collect())
}
