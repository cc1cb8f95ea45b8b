//! Unaligned vector loads and stores of float32 on bounds-checked slices, for the kernels
//! written in x86-64 intrinsics (winograd/simd.rs, narrow/simd.rs): AVX's 8 lanes and
//! AVX-512's 16. Each reads or writes exactly one vector's values of a slice checked to hold
//! them; the one `unsafe` step of each is the intrinsic. Compiled for their instruction set
//! and inlined into callers compiled for it (or a superset). The `write` variants store into
//! an output not yet initialized, which a kernel that writes every element fills without
//! zeroing it first.

use std::mem::MaybeUninit;

use std::arch::x86_64::{
    __m256, __m512, _mm256_loadu_ps, _mm256_storeu_ps, _mm512_loadu_ps, _mm512_storeu_ps,
};

/// `values[at..at + 8]` as a vector.
#[inline]
#[target_feature(enable = "avx")]
pub fn load8(values: &[f32], at: usize) -> __m256 {
    let block = &values[at..at + 8];
    // SAFETY: `block` is 8 initialized f32 (the slice above is bounds-checked), and an
    // unaligned load reads exactly those bytes.
    unsafe { _mm256_loadu_ps(block.as_ptr()) }
}

/// `v` into `values[at..at + 8]`.
#[inline]
#[target_feature(enable = "avx")]
pub fn store8(values: &mut [f32], at: usize, v: __m256) {
    let block = &mut values[at..at + 8];
    // SAFETY: `block` is 8 f32 borrowed mutably (bounds-checked above), and an unaligned store
    // writes exactly those bytes.
    unsafe { _mm256_storeu_ps(block.as_mut_ptr(), v) }
}

/// `values[at..at + 16]` as a vector.
#[inline]
#[target_feature(enable = "avx512f")]
pub fn load16(values: &[f32], at: usize) -> __m512 {
    let block = &values[at..at + 16];
    // SAFETY: as in `load8`, for 16 values.
    unsafe { _mm512_loadu_ps(block.as_ptr()) }
}

/// `v` into `values[at..at + 16]`.
#[inline]
#[target_feature(enable = "avx512f")]
pub fn store16(values: &mut [f32], at: usize, v: __m512) {
    let block = &mut values[at..at + 16];
    // SAFETY: as in `store8`, for 16 values.
    unsafe { _mm512_storeu_ps(block.as_mut_ptr(), v) }
}

/// `v` into `values[at..at + 8]`, elements that need not be initialized before.
#[inline]
#[target_feature(enable = "avx")]
pub fn write8(values: &mut [MaybeUninit<f32>], at: usize, v: __m256) {
    let block = &mut values[at..at + 8];
    // SAFETY: `block` is 8 elements borrowed mutably (bounds-checked above) with `f32`'s
    // layout; an unaligned store writes exactly those bytes and reads none.
    unsafe { _mm256_storeu_ps(block.as_mut_ptr().cast::<f32>(), v) }
}

/// `v` into `values[at..at + 16]`, elements that need not be initialized before.
#[inline]
#[target_feature(enable = "avx512f")]
pub fn write16(values: &mut [MaybeUninit<f32>], at: usize, v: __m512) {
    let block = &mut values[at..at + 16];
    // SAFETY: as in `write8`, for 16 values.
    unsafe { _mm512_storeu_ps(block.as_mut_ptr().cast::<f32>(), v) }
}
