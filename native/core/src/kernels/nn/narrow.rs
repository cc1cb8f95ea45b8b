//! Direct float32 convolution for layers with few input channels and few output channels (the
//! first layer of a small image model: one or three channels in, 8 to 32 out). There im2col +
//! GEMM spends more on building and packing the patch matrix than on arithmetic (9
//! multiply-adds per output for a 3x3 window over one channel); here each output pixel's
//! channels are summed in local accumulators (registers) over its taps and stored once, with
//! the whole filter in L1.

use rayon::prelude::*;

use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::num::Num;
use crate::kernels::nn::Epilogue;

/// Output channels are taken in chunks of this many lanes (one AVX2 register).
const LANES: usize = 8;

/// Whether the direct kernel serves `g`: one group, at most 4 input channels, and 8, 16, 24 or
/// 32 output channels. Wider outputs keep a GEMM busy enough to be faster.
pub fn applies(g: &Geometry) -> bool {
    g.groups == 1 && g.gi <= 4 && g.o.is_multiple_of(LANES) && (LANES..=4 * LANES).contains(&g.o)
}

/// The convolution of `x` (NHWC) by `filter` (HWIO) into `out`, row by row of output pixels
/// (over rayon's threads when the work is large), `epilogue` applied to each row once. False,
/// with nothing written, when the values are not float32.
pub fn convolve<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    out: &mut [T],
    epilogue: Epilogue<T>,
) -> bool {
    let (Some(x), Some(filter)) = (T::as_f32(x), T::as_f32(filter)) else {
        return false;
    };
    let row_len = g.cols.out * g.o;
    if row_len == 0
        || filter.len() < g.kh * g.kw * g.c * g.o
        || x.len() < g.n * g.h * g.w * g.c
        || out.len() < g.n * g.rows.out * row_len
    {
        return false;
    }
    let oh = g.rows.out.max(1);
    let body = |(r, row): (usize, &mut [T])| {
        if let Some(values) = T::as_f32_mut(row) {
            row_kernel(g, x, filter, r / oh, r % oh, values);
        }
        epilogue(r * row_len, row);
    };
    let work = out.len().saturating_mul(g.kh * g.kw * g.c);
    if work >= PARALLEL_WORK && out.len() > row_len {
        out.par_chunks_mut(row_len).enumerate().for_each(body);
    } else {
        out.chunks_mut(row_len).enumerate().for_each(body);
    }
    true
}

/// Output row (image, oy), compiled for AVX-512, AVX2+FMA and the baseline (chosen at run
/// time; with FMA the sums use fused multiply-adds).
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn row_kernel(g: &Geometry, x: &[f32], filter: &[f32], image: usize, oy: usize, row: &mut [f32]) {
    const FUSED: bool = multiversion::target::selected_target!().supports_feature_str("fma");
    match g.o / LANES {
        1 => row_body::<1, FUSED>(g, x, filter, image, oy, row),
        2 => row_body::<2, FUSED>(g, x, filter, image, oy, row),
        3 => row_body::<3, FUSED>(g, x, filter, image, oy, row),
        _ => row_body::<4, FUSED>(g, x, filter, image, oy, row),
    }
}

/// Output pixels summed side by side: independent chains of multiply-adds that hide their
/// latency, sharing each load of the filter.
const PIXELS: usize = 4;

/// One output row with `B` chunks of output channels. Pixels whose window lies inside the
/// image go `PIXELS` at a time, the others (at the borders) one by one; either way the sums
/// over every (kernel row, kernel column, input channel) tap stay in registers.
#[inline(always)]
fn row_body<const B: usize, const FUSED: bool>(
    g: &Geometry,
    x: &[f32],
    filter: &[f32],
    image: usize,
    oy: usize,
    row: &mut [f32],
) {
    let taps = filter.as_chunks::<LANES>().0;
    let plane = &x[image * g.h * g.w * g.c..][..g.h * g.w * g.c];
    let pixels = row.as_chunks_mut::<LANES>().0;
    let inner = g.cols.valid(0, g.w).start..g.cols.valid(g.kw.saturating_sub(1), g.w).end;
    let mut ox = 0;
    while ox < g.cols.out {
        if inner.contains(&ox) && ox + PIXELS <= inner.end {
            let out = &mut pixels[ox * B..][..PIXELS * B];
            block::<B, FUSED>(g, plane, taps, oy, ox, out);
            ox += PIXELS;
        } else {
            pixel::<B, FUSED>(g, plane, taps, oy, ox, &mut pixels[ox * B..][..B]);
            ox += 1;
        }
    }
}

/// `PIXELS` adjacent output pixels from `ox` on, every window inside the image's columns.
#[inline(always)]
fn block<const B: usize, const FUSED: bool>(
    g: &Geometry,
    plane: &[f32],
    taps: &[[f32; LANES]],
    oy: usize,
    ox: usize,
    out: &mut [[f32; LANES]],
) {
    let mut acc = [[[0f32; LANES]; B]; PIXELS];
    let step = g.cols.stride * g.c;
    for i in g.rows.taps(oy, g.h) {
        let ih = oy * g.rows.stride + i * g.rows.dilation - g.rows.before;
        for j in 0..g.kw {
            let iw = ox * g.cols.stride + j * g.cols.dilation - g.cols.before;
            let at = (ih * g.w + iw) * g.c;
            let values = &plane[at..at + (PIXELS - 1) * step + g.c];
            let first = (i * g.kw + j) * g.c * B;
            for ci in 0..g.c {
                let chunks = &taps[first + ci * B..][..B];
                for (p, sums) in acc.iter_mut().enumerate() {
                    add::<B, FUSED>(sums, values[p * step + ci], chunks);
                }
            }
        }
    }
    for (dst, sums) in out.chunks_exact_mut(B).zip(&acc) {
        dst.copy_from_slice(sums);
    }
}

/// One output pixel, its window clipped to the image.
#[inline(always)]
fn pixel<const B: usize, const FUSED: bool>(
    g: &Geometry,
    plane: &[f32],
    taps: &[[f32; LANES]],
    oy: usize,
    ox: usize,
    out: &mut [[f32; LANES]],
) {
    let mut sums = [[0f32; LANES]; B];
    for i in g.rows.taps(oy, g.h) {
        let ih = oy * g.rows.stride + i * g.rows.dilation - g.rows.before;
        for j in g.cols.taps(ox, g.w) {
            let iw = ox * g.cols.stride + j * g.cols.dilation - g.cols.before;
            let values = &plane[(ih * g.w + iw) * g.c..][..g.c];
            let first = (i * g.kw + j) * g.c * B;
            for (ci, &v) in values.iter().enumerate() {
                add::<B, FUSED>(&mut sums, v, &taps[first + ci * B..][..B]);
            }
        }
    }
    out.copy_from_slice(&sums);
}

/// `sums += v · chunks`, lane by lane.
#[inline(always)]
fn add<const B: usize, const FUSED: bool>(
    sums: &mut [[f32; LANES]; B],
    v: f32,
    chunks: &[[f32; LANES]],
) {
    for (a, t) in sums.iter_mut().zip(chunks) {
        for (s, &w) in a.iter_mut().zip(t) {
            *s = if FUSED { v.mul_add(w, *s) } else { *s + v * w };
        }
    }
}
