//! The element types the factorizations compute in: f64 for real inputs, Complex<f64> for
//! complex ones (narrower types are widened on the way in and rounded once on the way out).

use std::fmt::Debug;
use std::ops::Neg;

use num_complex::Complex;
use num_traits::NumAssign;

pub trait Scalar: NumAssign + Neg<Output = Self> + Copy + Debug + Send + Sync + 'static {
    fn conj(self) -> Self;
    /// |x|.
    fn modulus(self) -> f64;
    fn from_real(x: f64) -> Self;
    fn real(self) -> f64;
}

impl Scalar for f64 {
    fn conj(self) -> Self {
        self
    }
    fn modulus(self) -> f64 {
        self.abs()
    }
    fn from_real(x: f64) -> Self {
        x
    }
    fn real(self) -> f64 {
        self
    }
}

impl Scalar for Complex<f64> {
    fn conj(self) -> Self {
        Complex::conj(&self)
    }
    fn modulus(self) -> f64 {
        self.norm()
    }
    fn from_real(x: f64) -> Self {
        Complex::new(x, 0.0)
    }
    fn real(self) -> f64 {
        self.re
    }
}

/// The conjugate transpose of each n×n matrix of a batch.
pub fn adjoint<S: Scalar>(matrices: &[S], n: usize) -> Vec<S> {
    if n == 0 {
        return matrices.to_vec();
    }
    let mut out = Vec::with_capacity(matrices.len());
    for matrix in matrices.chunks_exact(n * n) {
        for i in 0..n {
            out.extend((0..n).map(|j| matrix[j * n + i].conj()));
        }
    }
    out
}
