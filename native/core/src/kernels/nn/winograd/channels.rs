//! Winograd convolutions with few tiles (a small image at batch 1: ResNet50's 14x14 layers
//! have 49), where the threads split the output channels instead of the output rows.
//!
//! Split by rows, each thread multiplies its few tiles by the whole transformed filter, so
//! every thread reads all of it (4 MB for 256 channels in and out) for a few dozen rows of
//! products, and the filter, transformed once for the call into memory, comes back from
//! memory for each of the 16 positions. Here each thread takes a block of output channels:
//! it transforms its part of the filter a block of input channels at a time into a buffer
//! that stays in the second-level cache, multiplies every tile by it (the products
//! accumulated over the blocks of input channels), and transforms its products back into
//! its channels of the output. The tiles' inputs are transformed once, shared by the
//! threads; the threads' outputs are interleaved into the output, a share of rows a thread,
//! and the epilogue runs there.

use std::ops::Range;

use rayon::prelude::*;

use super::{spaced, tiles, transforms, Stack, Tile, LANES, POINTS};
use crate::engine::kernel::KResult;
use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::gemm::{fast, fast_add, Layout, Product};
use crate::kernels::nn::kept::Kept;
use crate::kernels::nn::num::Num;
use crate::kernels::nn::output::{zeroed_chunks, Split};
use crate::kernels::nn::Epilogue;

/// Split by rows, each thread reads the whole transformed filter (16·c·o values) and its own
/// tiles' inputs; split by output channels, its part of the filter and every tile's inputs
/// (16·tiles·c). So the split by channels reads less while there are fewer tiles than output
/// channels; measured, up to twice as many still gained (`bench_one_conv`, 2 threads, Xeon,
/// 20 calls, rows -> channels): 1 image of 14x14 256 -> 256 (49 tiles) 26.7-27.4 -> 16.7-17.6
/// ms, 4 images of it (196) 78-101 -> 56, 1 image of 28x28 128 -> 128 (196) 21.8-24.4 ->
/// 17.6-19.5; 56x56 64 -> 64 (784 tiles) lost, 17.8-18.4 -> 31.7.
const TILES_PER_CHANNEL: usize = 2;

/// The most transformed input values (tiles × input channels, 16 positions each) a call may
/// hold to be split by output channels: 4 MB, every thread reading all of them.
const MAX_INPUTS: usize = 1 << 16;

/// The fewest output channels a thread takes: with fewer, its products are too narrow
/// (DenseNet's 14x14 128 -> 32 at 16 channels a thread: 3.5-4.9 ms for 20 calls against
/// 3.2-3.9 split by rows).
const MIN_WIDTH: usize = 32;

/// Transformed filter values a thread holds at once (a block of input channels by its
/// output channels, 16 positions): about half the second-level cache.
const FILTER_BLOCK: usize = 1 << 18;

/// Whether the call `g`, with `tiles` tiles on `threads` threads, is split by output channels.
pub(super) fn applies(g: &Geometry, tiles: usize, threads: usize) -> bool {
    threads >= 2
        && tiles <= TILES_PER_CHANNEL * g.o
        && tiles * g.c <= MAX_INPUTS
        && g.o >= threads * MIN_WIDTH
}

/// The convolution `g` of `x` by `filter` (float32 values of `T`), each thread a block of
/// output channels, `epilogue` applied to each share of output rows once.
pub(super) fn convolve<T: Num>(
    g: &Geometry,
    x: &[f32],
    filter: &[f32],
    epilogue: Epilogue<T>,
    threads: usize,
) -> KResult<Vec<T>> {
    let (oh, ow) = (g.rows.out, g.cols.out);
    let mut all = Vec::new();
    tiles(oh, ow, 0, g.n * oh, &mut all);
    let inputs = transformed_inputs(g, x, &all, threads)?;
    let width = g.o.div_ceil(threads).next_multiple_of(LANES).min(g.o);
    let pixels = g.n * oh * ow;
    let cols = |b: usize| b * width..g.o.min((b + 1) * width);
    let mut blocks = (0..g.o.div_ceil(width))
        .map(|b| Kept::new(pixels * cols(b).len()))
        .collect::<KResult<Vec<_>>>()?;
    blocks
        .par_iter_mut()
        .enumerate()
        .try_for_each(|(b, out)| block(g, filter, (&inputs, &all), cols(b), out))?;
    let (rows, row_len) = (g.n * oh, ow * g.o);
    let share = rows.div_ceil(threads) * row_len;
    let split = Split {
        count: rows * row_len,
        chunk: share,
        share,
        parallel: true,
    };
    zeroed_chunks(
        split,
        || (),
        |(), first, part| {
            if let Some(out) = T::as_f32_mut(part) {
                interleave(&blocks, (first / g.o, g.o), width, out);
            }
            epilogue(first, part);
            Ok(())
        },
    )
}

/// Every tile's transformed inputs (laid out by `Stack::new(g.c)`), the tiles shared between
/// the threads.
fn transformed_inputs(g: &Geometry, x: &[f32], all: &[Tile], threads: usize) -> KResult<Kept> {
    let stack = Stack::new(g.c);
    let mut inputs = Kept::new(stack.len(all.len()))?;
    let per = all.len().div_ceil(threads).max(1);
    inputs
        .par_chunks_mut(per * stack.row)
        .zip(all.par_chunks(per))
        .for_each(|(part, tiles)| transforms::inputs(g, x, tiles, part, stack));
    Ok(inputs)
}

/// Output channels `cols` of every pixel into `out` (pixel-major, `cols.len()` values a
/// pixel): the filter's part for them transformed a block of input channels at a time,
/// multiplied by every tile's inputs and summed over the blocks, then transformed back.
fn block(
    g: &Geometry,
    filter: &[f32],
    (inputs, all): (&[f32], &[Tile]),
    cols: Range<usize>,
    out: &mut [f32],
) -> KResult<()> {
    let (width, count) = (cols.len(), all.len());
    let source = Stack::new(g.c);
    let products = Stack::new(width);
    let mut sums = Kept::new(products.len(count))?;
    let depth = (FILTER_BLOCK / (POINTS * width))
        .next_multiple_of(LANES)
        .min(g.c);
    let stride = spaced(depth * width);
    let mut planes = Kept::new(POINTS * stride)?;
    for first in (0..g.c).step_by(depth) {
        let k = depth.min(g.c - first);
        let mut views: Vec<&mut [f32]> = planes
            .chunks_mut(stride)
            .map(|plane| &mut plane[..k * width])
            .collect();
        transforms::filter(filter, (g.c, g.o), (first, cols.clone()), &mut views);
        for point in 0..POINTS {
            let product = Product {
                m: count,
                n: width,
                k,
                a: Layout {
                    offset: point * source.point + first,
                    ..source.layout(point)
                },
                b: Layout::rows(point * stride, width),
                dst: products.layout(point),
            };
            if first == 0 {
                fast(&product, inputs, &planes, &mut sums, false)?;
            } else {
                fast_add(&product, inputs, &planes, &mut sums)?;
            }
        }
    }
    transforms::outputs(&sums, (products, width), all, (g.cols.out, width, 0), out);
    Ok(())
}

/// The blocks' channels of pixels `pixel..` (as many as `out` holds, `o` channels a pixel)
/// copied into `out`; block `b` holds channels from `b · width`.
fn interleave(blocks: &[Kept], (pixel, o): (usize, usize), width: usize, out: &mut [f32]) {
    for (b, block) in blocks.iter().enumerate() {
        let (start, w) = (b * width, width.min(o - b * width));
        let source = &block[pixel * w..];
        for (target, values) in out.chunks_mut(o).zip(source.chunks(w)) {
            target[start..start + w].copy_from_slice(values);
        }
    }
}
