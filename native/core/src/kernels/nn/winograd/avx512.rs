//! The Winograd transforms written with AVX-512 instructions, for blocks of 16 channels. The
//! portable versions in the parent module compute the same sums in the same order (so both
//! give identical results), but the compiler keeps their blocks on the stack: the input
//! transform spent longer there than the products took. The `unsafe` steps are the unaligned
//! vector loads and stores (each on a bounds-checked slice of 16 values) and the calls into
//! code compiled for AVX-512, made only after the CPU was found to have it.

use std::arch::x86_64::{
    __m512, _mm512_add_ps, _mm512_loadu_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_storeu_ps, _mm512_sub_ps,
};

use super::{sources, Stack, Tile, POINTS};
use crate::kernels::nn::conv::Geometry;

/// Channels a vector.
pub const LANES: usize = 16;

/// Whether this CPU runs AVX-512 (checked once, then cached by the standard library).
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// [`super::transform_inputs`] for `g.c` a multiple of 16; false, with nothing done, without
/// AVX-512.
pub fn transform_inputs(
    g: &Geometry,
    x: &[f32],
    tiles: &[Tile],
    inputs: &mut [f32],
    stack: Stack,
) -> bool {
    if !available() || !g.c.is_multiple_of(LANES) {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (checked just above), all `inputs_512` needs.
    unsafe { inputs_512(g, x, tiles, inputs, stack) };
    true
}

/// [`super::transform_outputs`] for a block `width` a multiple of 16; false, with nothing
/// done, without AVX-512.
pub fn transform_outputs(
    products: &[f32],
    (stack, width): (Stack, usize),
    tiles: &[Tile],
    place: (usize, usize, usize),
    out: &mut [f32],
) -> bool {
    if !available() || !width.is_multiple_of(LANES) {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (checked just above), all `outputs_512` needs.
    unsafe { outputs_512(products, (stack, width), tiles, place, out) };
    true
}

/// [`super::transform_filter`] for a block `width` a multiple of 16; false, with nothing done,
/// without AVX-512.
pub fn transform_filter(
    filter: &[f32],
    shape: (usize, usize),
    block: (usize, usize),
    out: &mut [f32],
    stride: usize,
) -> bool {
    if !available() || !block.1.is_multiple_of(LANES) {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (checked just above), all `filter_512` needs.
    unsafe { filter_512(filter, shape, block, out, stride) };
    true
}

#[inline]
#[target_feature(enable = "avx512f")]
fn load(values: &[f32], at: usize) -> __m512 {
    let block = &values[at..at + LANES];
    // SAFETY: `block` is 16 initialized f32 (the slice above is bounds-checked), and an
    // unaligned load reads exactly those 64 bytes.
    unsafe { _mm512_loadu_ps(block.as_ptr()) }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn store(values: &mut [f32], at: usize, v: __m512) {
    let block = &mut values[at..at + LANES];
    // SAFETY: `block` is 16 f32 borrowed mutably (bounds-checked above), and an unaligned
    // store writes exactly those 64 bytes.
    unsafe { _mm512_storeu_ps(block.as_mut_ptr(), v) }
}

#[target_feature(enable = "avx512f")]
fn inputs_512(g: &Geometry, x: &[f32], tiles: &[Tile], inputs: &mut [f32], stack: Stack) {
    for (t, tile) in tiles.iter().enumerate() {
        let sources = sources(g, tile);
        for start in (0..g.c).step_by(LANES) {
            let mut d = [_mm512_setzero_ps(); POINTS];
            for (value, source) in d.iter_mut().zip(&sources) {
                if let Some(at) = source {
                    *value = load(x, at + start);
                }
            }
            // Bᵀ along the rows, then along the columns: (a, b, c, d) -> (a - c, b + c,
            // c - b, b - d).
            let mut r = [_mm512_setzero_ps(); POINTS];
            for j in 0..4 {
                r[j] = _mm512_sub_ps(d[j], d[8 + j]);
                r[4 + j] = _mm512_add_ps(d[4 + j], d[8 + j]);
                r[8 + j] = _mm512_sub_ps(d[8 + j], d[4 + j]);
                r[12 + j] = _mm512_sub_ps(d[4 + j], d[12 + j]);
            }
            for i in 0..4 {
                let [a, b, c, e] = [r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]];
                let at = |p: usize| stack.at(4 * i + p, t) + start;
                store(inputs, at(0), _mm512_sub_ps(a, c));
                store(inputs, at(1), _mm512_add_ps(b, c));
                store(inputs, at(2), _mm512_sub_ps(c, b));
                store(inputs, at(3), _mm512_sub_ps(b, e));
            }
        }
    }
}

#[target_feature(enable = "avx512f")]
fn outputs_512(
    products: &[f32],
    (stack, width): (Stack, usize),
    tiles: &[Tile],
    (ow, o, start): (usize, usize, usize),
    out: &mut [f32],
) {
    for (t, tile) in tiles.iter().enumerate() {
        let columns = 2.min(ow - tile.x);
        for first in (0..width).step_by(LANES) {
            let mut m = [_mm512_setzero_ps(); POINTS];
            for (p, value) in m.iter_mut().enumerate() {
                *value = load(products, stack.at(p, t) + first);
            }
            // Aᵀ along the rows, then along the columns: (a, b, c, d) -> (a + b + c,
            // b - c - d).
            let mut s = [_mm512_setzero_ps(); 8];
            for j in 0..4 {
                let [a, b, c, d] = [m[j], m[4 + j], m[8 + j], m[12 + j]];
                s[j] = _mm512_add_ps(_mm512_add_ps(a, b), c);
                s[4 + j] = _mm512_sub_ps(_mm512_sub_ps(b, c), d);
            }
            for i in 0..tile.rows {
                let [a, b, c, d] = [s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]];
                let y = [
                    _mm512_add_ps(_mm512_add_ps(a, b), c),
                    _mm512_sub_ps(_mm512_sub_ps(b, c), d),
                ];
                for (j, value) in y.into_iter().enumerate().take(columns) {
                    let at = ((tile.line + i) * ow + tile.x + j) * o + start + first;
                    store(out, at, value);
                }
            }
        }
    }
}

#[target_feature(enable = "avx512f")]
fn filter_512(
    filter: &[f32],
    (c, o): (usize, usize),
    (start, width): (usize, usize),
    out: &mut [f32],
    stride: usize,
) {
    let half = _mm512_set1_ps(0.5);
    for ci in 0..c {
        for first in (0..width).step_by(LANES) {
            let mut g = [_mm512_setzero_ps(); 9];
            for (tap, value) in g.iter_mut().enumerate() {
                *value = load(filter, (tap * c + ci) * o + start + first);
            }
            // G along the rows, then along the columns: (a, b, c) -> (a, (a + c + b) / 2,
            // (a + c - b) / 2, c).
            let mut r = [_mm512_setzero_ps(); 12];
            for j in 0..3 {
                let [a, b, e] = [g[j], g[3 + j], g[6 + j]];
                let ends = _mm512_add_ps(a, e);
                r[j] = a;
                r[3 + j] = _mm512_mul_ps(_mm512_add_ps(ends, b), half);
                r[6 + j] = _mm512_mul_ps(_mm512_sub_ps(ends, b), half);
                r[9 + j] = e;
            }
            for i in 0..4 {
                let [a, b, e] = [r[3 * i], r[3 * i + 1], r[3 * i + 2]];
                let ends = _mm512_add_ps(a, e);
                let u = [
                    a,
                    _mm512_mul_ps(_mm512_add_ps(ends, b), half),
                    _mm512_mul_ps(_mm512_sub_ps(ends, b), half),
                    e,
                ];
                for (q, value) in u.into_iter().enumerate() {
                    store(out, (4 * i + q) * stride + ci * width + first, value);
                }
            }
        }
    }
}
