//! The Winograd transforms in vector instructions (AVX-512 for blocks of 16 channels, AVX for
//! blocks of 8), and the choice between them and the portable versions in the parent module.
//! All compute the same sums in the same order (so they give identical results), but the
//! compiler keeps the portable versions' blocks on the stack: their input transform took
//! longer than the products on AVX-512, and on AVX2 their filter transform took 39% of a
//! 14x14 256-channel layer. One body, written once in `vector_transforms`, is compiled for
//! each instruction set, its vector loads and stores those of `nn::vector`. The `unsafe` steps
//! are the calls into code compiled for an instruction set, made only after the CPU was found
//! to have it.

use std::ops::Range;

use super::{sources, Stack, Tile, POINTS};
use crate::kernels::nn::conv::Geometry;

/// Whether this CPU runs AVX-512 (checked once, then cached by the standard library).
fn avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// Whether this CPU runs AVX (256-bit float vectors).
fn avx() -> bool {
    std::arch::is_x86_feature_detected!("avx")
}

/// [`super::transform_inputs`] in vector code when the CPU has it and `g.c` fills whole
/// vectors.
pub fn inputs(g: &Geometry, x: &[f32], tiles: &[Tile], inputs: &mut [f32], stack: Stack) {
    if avx512() && g.c.is_multiple_of(wide::LANES) {
        // SAFETY: the CPU has AVX-512F (checked just above), all `wide` needs.
        unsafe { wide::inputs(g, x, tiles, inputs, stack) }
    } else if avx() && g.c.is_multiple_of(narrow::LANES) {
        // SAFETY: the CPU has AVX (checked just above), all `narrow` needs.
        unsafe { narrow::inputs(g, x, tiles, inputs, stack) }
    } else {
        super::transform_inputs(g, x, tiles, inputs, stack);
    }
}

/// [`super::transform_outputs`] in vector code when the CPU has it and the block's `width`
/// fills whole vectors.
pub fn outputs(
    products: &[f32],
    (stack, width): (Stack, usize),
    tiles: &[Tile],
    place: (usize, usize, usize),
    out: &mut [f32],
) {
    if avx512() && width.is_multiple_of(wide::LANES) {
        // SAFETY: the CPU has AVX-512F (checked just above), all `wide` needs.
        unsafe { wide::outputs(products, (stack, width), tiles, place, out) }
    } else if avx() && width.is_multiple_of(narrow::LANES) {
        // SAFETY: the CPU has AVX (checked just above), all `narrow` needs.
        unsafe { narrow::outputs(products, (stack, width), tiles, place, out) }
    } else {
        super::transform_outputs(products, (stack, width), tiles, place, out);
    }
}

/// [`super::transform_filter`] in vector code when the CPU has it and the output channels
/// (all of them, and those asked for) fill whole vectors.
pub fn filter(
    filter: &[f32],
    shape: (usize, usize),
    (first, cols): (usize, Range<usize>),
    planes: &mut [&mut [f32]],
) {
    let whole = |lanes: usize| {
        [shape.1, cols.start, cols.end]
            .iter()
            .all(|v| v % lanes == 0)
    };
    if avx512() && whole(wide::LANES) {
        // SAFETY: the CPU has AVX-512F (checked just above), all `wide` needs.
        unsafe { wide::filter(filter, shape, (first, cols), planes) }
    } else if avx() && whole(narrow::LANES) {
        // SAFETY: the CPU has AVX (checked just above), all `narrow` needs.
        unsafe { narrow::filter(filter, shape, (first, cols), planes) }
    } else {
        super::transform_filter(filter, shape, (first, cols), planes);
    }
}

/// A module `$name` of the three transforms for one vector type: `$lanes` float32 a vector,
/// the instructions `$load` ... `$zero` of the target feature `$feature`. Its functions are
/// compiled for `$feature`: callers check that the CPU has it before calling them (in
/// `unsafe`).
macro_rules! vector_transforms {
    ($name:ident, $feature:literal, $lanes:literal,
     $load:ident, $store:ident, $add:ident, $sub:ident, $mul:ident, $set1:ident, $zero:ident) => {
        mod $name {
            use std::arch::x86_64::{$add, $mul, $set1, $sub, $zero};

            use crate::kernels::nn::vector::{$load as load, $store as store};

            use super::{sources, Geometry, Range, Stack, Tile, POINTS};

            /// Channels a vector.
            pub const LANES: usize = $lanes;

            #[target_feature(enable = $feature)]
            pub fn inputs(
                g: &Geometry,
                x: &[f32],
                tiles: &[Tile],
                inputs: &mut [f32],
                stack: Stack,
            ) {
                for (t, tile) in tiles.iter().enumerate() {
                    let sources = sources(g, tile);
                    for start in (0..g.c).step_by(LANES) {
                        let mut d = [$zero(); POINTS];
                        for (value, source) in d.iter_mut().zip(&sources) {
                            if let Some(at) = source {
                                *value = load(x, at + start);
                            }
                        }
                        // Bᵀ along the rows, then along the columns: (a, b, c, d) -> (a - c, b + c,
                        // c - b, b - d).
                        let mut r = [$zero(); POINTS];
                        for j in 0..4 {
                            r[j] = $sub(d[j], d[8 + j]);
                            r[4 + j] = $add(d[4 + j], d[8 + j]);
                            r[8 + j] = $sub(d[8 + j], d[4 + j]);
                            r[12 + j] = $sub(d[4 + j], d[12 + j]);
                        }
                        for i in 0..4 {
                            let [a, b, c, e] = [r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]];
                            let at = |p: usize| stack.at(4 * i + p, t) + start;
                            store(inputs, at(0), $sub(a, c));
                            store(inputs, at(1), $add(b, c));
                            store(inputs, at(2), $sub(c, b));
                            store(inputs, at(3), $sub(b, e));
                        }
                    }
                }
            }

            #[target_feature(enable = $feature)]
            pub fn outputs(
                products: &[f32],
                (stack, width): (Stack, usize),
                tiles: &[Tile],
                (ow, o, start): (usize, usize, usize),
                out: &mut [f32],
            ) {
                for (t, tile) in tiles.iter().enumerate() {
                    let columns = 2.min(ow - tile.x);
                    for first in (0..width).step_by(LANES) {
                        let mut m = [$zero(); POINTS];
                        for (p, value) in m.iter_mut().enumerate() {
                            *value = load(products, stack.at(p, t) + first);
                        }
                        // Aᵀ along the rows, then along the columns: (a, b, c, d) -> (a + b + c,
                        // b - c - d).
                        let mut s = [$zero(); 8];
                        for j in 0..4 {
                            let [a, b, c, d] = [m[j], m[4 + j], m[8 + j], m[12 + j]];
                            s[j] = $add($add(a, b), c);
                            s[4 + j] = $sub($sub(b, c), d);
                        }
                        for i in 0..tile.rows {
                            let [a, b, c, d] = [s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]];
                            let y = [$add($add(a, b), c), $sub($sub(b, c), d)];
                            for (j, value) in y.into_iter().enumerate().take(columns) {
                                let at = ((tile.line + i) * ow + tile.x + j) * o + start + first;
                                store(out, at, value);
                            }
                        }
                    }
                }
            }

            #[target_feature(enable = $feature)]
            pub fn filter(
                filter: &[f32],
                (c, o): (usize, usize),
                (first, cols): (usize, Range<usize>),
                planes: &mut [&mut [f32]],
            ) {
                let half = $set1(0.5);
                let width = cols.len();
                let count = planes.first().map_or(0, |plane| plane.len() / width.max(1));
                for k in 0..count {
                    let ci = first + k;
                    for start in cols.clone().step_by(LANES) {
                        let mut g = [$zero(); 9];
                        for (tap, value) in g.iter_mut().enumerate() {
                            *value = load(filter, (tap * c + ci) * o + start);
                        }
                        // G along the rows, then along the columns:
                        // (a, b, c) -> (a, (a + c + b) / 2, (a + c - b) / 2, c).
                        let mut r = [$zero(); 12];
                        for j in 0..3 {
                            let [a, b, e] = [g[j], g[3 + j], g[6 + j]];
                            let ends = $add(a, e);
                            r[j] = a;
                            r[3 + j] = $mul($add(ends, b), half);
                            r[6 + j] = $mul($sub(ends, b), half);
                            r[9 + j] = e;
                        }
                        for i in 0..4 {
                            let [a, b, e] = [r[3 * i], r[3 * i + 1], r[3 * i + 2]];
                            let ends = $add(a, e);
                            let u = [a, $mul($add(ends, b), half), $mul($sub(ends, b), half), e];
                            for (q, value) in u.into_iter().enumerate() {
                                store(planes[4 * i + q], k * width + start - cols.start, value);
                            }
                        }
                    }
                }
            }
        }
    };
}

vector_transforms!(
    wide,
    "avx512f",
    16,
    load16,
    store16,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_mul_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps
);
vector_transforms!(
    narrow,
    "avx",
    8,
    load8,
    store8,
    _mm256_add_ps,
    _mm256_sub_ps,
    _mm256_mul_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps
);
