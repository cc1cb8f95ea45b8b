//! Winograd's minimal filtering F(2x2, 3x3) for float32 3x3 convolutions at stride 1 (ResNet's
//! and DenseNet's 3x3 layers). Through im2col + GEMM each output value costs 9 multiply-adds
//! per input channel; here a 2x2 block of outputs comes from the 4x4 block of inputs around it
//! with 16 products per channel pair instead of 36. The input tile and the filter are
//! transformed (sums and differences, and halves for the filter), multiplied position by
//! position (over channels, 16 independent matrix products: tiles × input channels times input
//! channels × output channels), and the 16 products are transformed back into the 2x2 block.
//! The transforms cost a few additions per channel, against the products' 16 multiply-adds per
//! channel pair; the rounding error stays within a few times the direct sum's (every
//! transform's coefficients are 0, ±1 and ½).
//!
//! The filter is transformed once a call, its input channels shared between the threads
//! (transforming it again for every piece of the output took 39% of a 14x14 256-channel layer
//! on an AVX2 machine). The output is cut into one share of output rows per thread, and each
//! share into pieces of a few pairs of rows. A piece tiles its own rows in pairs within each
//! image (a last odd row makes a tile whose second row is computed and dropped), transforms
//! its tiles' inputs once into a scratch buffer that stays in the second-level cache, and
//! then, a block of output channels at a time, runs the 16 products and writes the block's
//! outputs. The transforms are AVX-512 or AVX code (simd.rs) where the CPU has it and the
//! channels come in 16s or 8s.
//!
//! Measured (`cargo test --release -p savedmodel-core --lib bench_one_conv -- --ignored
//! --nocapture`, B_N/B_HW/B_C/B_O setting the shape; 20 calls, wall; im2col through a
//! temporary switch since removed) on an AVX-512 machine (Zen 4), im2col + GEMM -> this:
//! 56x56 64->64 24.7 -> 14.0 ms, 28x28 128->128 24.1 -> 15.5, 14x14 256->256 23.1 -> 20.1,
//! DenseNet's 56x56 128->32 28.0 -> 19.5, 8 images of 56x56 64->64 193 -> 120; on an AVX2
//! machine (Zen 3, noisier), with the AVX transforms and the filter transformed once:
//! 41.5 -> 18.5-25, 39.0 -> 22-24, 36.0 -> 27-34, 35.0 -> 20-27. With 512 input channels a
//! piece held too few tiles to repay its filter transform (twice as slow as im2col, when the
//! filter was transformed per piece), hence [`MAX_CHANNELS`].

use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::gemm::{fast, Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::kept::Kept;
use crate::kernels::nn::num::{f32_inputs, Num};
use crate::kernels::nn::output::{zeroed_chunks, Split};
use crate::kernels::nn::window::Axis;
use crate::kernels::nn::Epilogue;
use rayon::prelude::*;
use std::ops::Range;

mod channels;
#[cfg(target_arch = "x86_64")]
mod simd;

/// The transforms a call runs: on x86-64 vector code where the CPU and the channel count allow
/// (simd.rs falls back to the portable versions itself), elsewhere the portable versions.
#[cfg(target_arch = "x86_64")]
use simd as transforms;
#[cfg(not(target_arch = "x86_64"))]
mod transforms {
    pub(super) use super::{
        transform_filter as filter, transform_inputs as inputs, transform_outputs as outputs,
    };
}

/// Positions in a 4x4 input tile, and products per channel pair.
const POINTS: usize = 16;

/// Channels per step of the transforms (an AVX-512 register of float32).
const LANES: usize = 16;

/// The fewest input and output channels: below, the transforms cost more than they save.
const MIN_CHANNELS: usize = 16;

/// The most input channels. Set when every piece of the output transformed the filter for
/// itself: with more channels a piece held too few tiles (its transformed inputs must stay in
/// cache) to repay it, and ResNet50's 512-channel layers took twice as long as through im2col.
/// Not measured again since the filter is transformed once a call; at batch 1 those layers
/// (7x7) have fewer tiles than [`MIN_TILES`] anyway.
const MAX_CHANNELS: usize = 256;

/// The fewest tiles in a call: with fewer, transforming the filter for so few products costs
/// more than the products it saves.
const MIN_TILES: usize = 32;

/// Transformed input values per chunk (16 per tile and channel): chunks hold about this
/// many, so that they stay in the second-level cache across the products.
const TILE_VALUES: usize = 1 << 16;

/// The fewest and most tiles a piece of a chunk aims at: the products' rows.
const MIN_CHUNK_TILES: usize = 16;
const MAX_CHUNK_TILES: usize = 256;

/// Transformed filter values a block of output channels reads: the products run a block of
/// output channels at a time.
const FILTER_VALUES: usize = 1 << 18;

/// Whether this kernel serves the convolution `g` (float32 is checked when it runs).
pub fn applies(g: &Geometry) -> bool {
    let unit = |a: &Axis| a.window == 3 && a.stride == 1 && a.dilation == 1;
    g.groups == 1
        && g.kh == 3
        && g.kw == 3
        && unit(&g.rows)
        && unit(&g.cols)
        && (MIN_CHANNELS..=MAX_CHANNELS).contains(&g.c)
        && g.o >= MIN_CHANNELS
        && g.n * g.rows.out.div_ceil(2) * g.cols.out.div_ceil(2) >= MIN_TILES
}

/// The convolution `g` of `x` (NHWC) by `filter` (HWIO), `epilogue` applied to each chunk of
/// output rows once. None, with nothing done, when the values are not float32 or the buffers
/// do not match `g`.
pub fn convolve<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> Option<KResult<Vec<T>>> {
    let (x, filter) = f32_inputs(x, filter, (g.n * g.h * g.w * g.c, 9 * g.c * g.o))?;
    let (rows, row_len) = (g.n * g.rows.out, g.cols.out * g.o);
    let threads = rayon::current_num_threads().max(1);
    let (parallel, by_channels) = threading(g, threads);
    if by_channels {
        return Some(channels::convolve(g, x, filter, epilogue, threads));
    }
    let share = if parallel {
        rows.div_ceil(threads).next_multiple_of(2).min(rows)
    } else {
        rows
    };
    let split = Split {
        count: rows * row_len,
        chunk: share * row_len,
        share: share * row_len,
        parallel,
    };
    let target = (TILE_VALUES / (POINTS * g.c)).clamp(MIN_CHUNK_TILES, MAX_CHUNK_TILES);
    let pairs = (target / g.cols.out.div_ceil(2)).max(1);
    let tasks = if parallel { threads } else { 1 };
    let filter = match Filter::new(g, filter, tasks) {
        Ok(filter) => filter,
        Err(err) => return Some(Err(err)),
    };
    Some(zeroed_chunks(
        split,
        Scratch::default,
        |scratch, first, share| {
            let (row, lines) = (first / row_len, share.len() / row_len);
            for range in pieces(lines, pairs) {
                let part = &mut share[range.start * row_len..range.end * row_len];
                if let Some(out) = T::as_f32_mut(part) {
                    run_chunk(g, x, &filter, row + range.start, out, scratch)?;
                }
                epilogue(first + range.start * row_len, part);
            }
            Ok(())
        },
    ))
}

/// Whether a call of `g` on `threads` threads uses them, and whether they split its output
/// channels (channels.rs) rather than its rows.
fn threading(g: &Geometry, threads: usize) -> (bool, bool) {
    let rows = g.n * g.rows.out;
    let work = (rows * g.cols.out * g.o).saturating_mul(9 * g.c);
    let parallel = work >= PARALLEL_WORK && threads >= 2 && rows >= 2;
    let tiles = g.n * g.rows.out.div_ceil(2) * g.cols.out.div_ceil(2);
    (parallel, parallel && channels::applies(g, tiles, threads))
}

/// Whether the call `g` splits its output channels between the threads of the current pool.
#[cfg(test)]
pub fn by_channels(g: &Geometry) -> bool {
    threading(g, rayon::current_num_threads()).1
}

/// A thread's `lines` output rows cut into pieces of about `pairs` pairs of rows each, as
/// even as whole pairs allow (a share of 7 pairs in pieces of at most 4 is 4 + 3, not 4 + 2
/// + 1 or 2 + 2 + 2 + 1): each piece is one pass of the transforms and products.
fn pieces(lines: usize, pairs: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let total = lines.div_ceil(2);
    let count = total.div_ceil(pairs.max(1)).max(1);
    (0..count).map(move |i| {
        let [start, end] = [i, i + 1].map(|k| (2 * (k * total / count)).min(lines));
        start..end
    })
}

/// The filter transformed (G g Gᵀ) once for the call, by all threads, and read by every
/// piece: position, input channel, output channel. Its buffer is kept between calls
/// (kept.rs): the transform writes every value the products read (each position's `c · o`),
/// and a new zeroed buffer cost a memset of up to 16/9 of the filter a call.
struct Filter {
    values: Kept,
    /// The distance between positions (see [`spaced`]).
    stride: usize,
}

impl Filter {
    /// The transform of `taps` by `tasks` rayon tasks (the call's threads, or one).
    fn new(g: &Geometry, taps: &[f32], tasks: usize) -> KResult<Self> {
        let (len, stride) = (g.c * g.o, spaced(g.c * g.o));
        let mut values = Kept::new(POINTS * stride)?;
        // Each task's input channels in each of the 16 positions' matrices.
        let channels = g.c.div_ceil(tasks.max(1));
        let mut parts: Vec<Vec<&mut [f32]>> = Vec::new();
        for plane in values.chunks_mut(stride) {
            for (k, piece) in plane[..len].chunks_mut(channels * g.o).enumerate() {
                if k == parts.len() {
                    parts.push(Vec::with_capacity(POINTS));
                }
                parts[k].push(piece);
            }
        }
        let shape = (g.c, g.o);
        parts.par_iter_mut().enumerate().for_each(|(k, planes)| {
            transforms::filter(taps, shape, (k * channels, 0..g.o), planes);
        });
        Ok(Self { values, stride })
    }

    /// Position `p`'s matrix (input channels × output channels) from output channel `start`.
    fn layout(&self, g: &Geometry, p: usize, start: usize) -> Layout {
        Layout::rows(p * self.stride + start, g.o)
    }
}

/// The distance between positions in a buffer of 16 matrices of `len` values each: `len`
/// rounded up to 4 KB and one cache line more. The transforms read or write the 16 positions
/// of a tile together; 16 streams a multiple of 2 KB apart fall in one or two sets of the
/// first-level cache and evict each other.
fn spaced(len: usize) -> usize {
    len.next_multiple_of(1024) + 16
}

/// A 2x2 block of outputs: its image, first output row and column, and how many of its two
/// rows lie in the chunk (the second row of a tile at a chunk's or image's end may not).
#[derive(Clone, Copy)]
struct Tile {
    image: usize,
    y: usize,
    x: usize,
    rows: usize,
    /// The output row of its first row, counted from the chunk's first.
    line: usize,
}

/// Per-thread buffers reused from chunk to chunk, the large ones kept between calls (see
/// [`sized`]).
#[derive(Default)]
struct Scratch {
    tiles: Vec<Tile>,
    /// Transformed inputs: tile, position, input channel (see [`Stack`]).
    inputs: Option<Kept>,
    /// The products: tile, position, output channel (see [`Stack`]).
    products: Option<Kept>,
}

/// The first `len` values of the buffer in `slot`, taken from the thread's kept buffers
/// (kept.rs) when it holds fewer: new vectors, zeroed on every call, cost DenseNet121 at
/// batch 1 a memset of each share's transformed tiles. Stale values are never read: the
/// input transform writes every value the products read, and the products every value the
/// output transform reads.
fn sized(slot: &mut Option<Kept>, len: usize) -> KResult<&mut [f32]> {
    if slot.as_ref().is_none_or(|kept| kept.len() < len) {
        // The short buffer goes back to the thread's pool first, so that `Kept::new` grows
        // it (zeroing only the new part) instead of taking or making another.
        *slot = None;
        *slot = Some(Kept::new(len)?);
    }
    match slot {
        Some(kept) => Ok(&mut kept[..len]),
        None => Err(fail("internal: no scratch buffer")),
    }
}

/// Output rows `row..` (as many as `out` holds) of the convolution.
fn run_chunk(
    g: &Geometry,
    x: &[f32],
    filter: &Filter,
    row: usize,
    out: &mut [f32],
    s: &mut Scratch,
) -> KResult<()> {
    let (oh, ow) = (g.rows.out, g.cols.out);
    let lines = out.len() / (ow * g.o);
    tiles(oh, ow, row, lines, &mut s.tiles);
    let count = s.tiles.len();
    let inputs = Stack::new(g.c);
    let transformed = sized(&mut s.inputs, inputs.len(count))?;
    transforms::inputs(g, x, &s.tiles, transformed, inputs);
    let block = (FILTER_VALUES / (POINTS * g.c))
        .max(LANES)
        .next_multiple_of(LANES)
        .min(g.o);
    for start in (0..g.o).step_by(block) {
        let width = block.min(g.o - start);
        let products = Stack::new(width);
        let sums = sized(&mut s.products, products.len(count))?;
        for point in 0..POINTS {
            let product = Product {
                m: count,
                n: width,
                k: g.c,
                a: inputs.layout(point),
                b: filter.layout(g, point, start),
                dst: products.layout(point),
            };
            fast(&product, transformed, &filter.values, sums, false)?;
        }
        let (layout, place) = ((products, width), (ow, g.o, start));
        transforms::outputs(sums, layout, &s.tiles, place, out);
    }
    Ok(())
}

/// Where 16 matrices (one a position in a tile) of a row a tile are kept in one buffer:
/// element (position p, tile t, column j) at `p · point + t · row + j`.
#[derive(Clone, Copy)]
struct Stack {
    point: usize,
    row: usize,
}

impl Stack {
    /// Tile-major: a tile's 16 rows together, so that a transform reads or writes one run of
    /// memory a tile, and a cache line between tiles.
    fn new(columns: usize) -> Self {
        Self {
            point: columns,
            row: POINTS * columns + LANES,
        }
    }

    fn len(&self, count: usize) -> usize {
        (POINTS - 1) * self.point + count * self.row
    }

    fn at(&self, p: usize, t: usize) -> usize {
        p * self.point + t * self.row
    }

    /// Position `p`'s matrix, a row a tile.
    fn layout(&self, p: usize) -> Layout {
        Layout {
            offset: p * self.point,
            rs: self.row,
            cs: 1,
        }
    }
}

/// The tiles of output rows `row..row + lines` (counted over the batch, `oh` an image): rows
/// in pairs from the first in each image, `ow.div_ceil(2)` tiles a pair.
fn tiles(oh: usize, ow: usize, row: usize, lines: usize, tiles: &mut Vec<Tile>) {
    tiles.clear();
    let end = row + lines;
    let mut r = row;
    while r < end {
        let image = r / oh;
        let stop = end.min((image + 1) * oh);
        for first in (r..stop).step_by(2) {
            for x in (0..ow).step_by(2) {
                tiles.push(Tile {
                    image,
                    y: first - image * oh,
                    x,
                    rows: (stop - first).min(2),
                    line: first - row,
                });
            }
        }
        r = stop;
    }
}

/// Every tile's 4x4 input block (zeros outside the input), transformed (Bᵀ d B) into
/// `inputs` laid out by `stack`: the portable version of simd.rs's (same sums, same order),
/// for CPUs without AVX and channel counts that are not multiples of 8.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn transform_inputs(g: &Geometry, x: &[f32], tiles: &[Tile], inputs: &mut [f32], stack: Stack) {
    let c = g.c;
    for (t, tile) in tiles.iter().enumerate() {
        let sources = sources(g, tile);
        for start in (0..c).step_by(LANES) {
            let lanes = LANES.min(c - start);
            let mut d = [[0f32; LANES]; POINTS];
            for (block, source) in d.iter_mut().zip(&sources) {
                if let Some(at) = source {
                    *block = load(x, at + start, lanes);
                }
            }
            let v = input_points(&d);
            for (p, values) in v.iter().enumerate() {
                store(values, inputs, stack.at(p, t) + start, lanes);
            }
        }
    }
}

/// Where each of a tile's 16 input pixels starts in the NHWC input, None where it lies in
/// the padding or past the input's edge.
#[inline(always)]
fn sources(g: &Geometry, tile: &Tile) -> [Option<usize>; POINTS] {
    let mut sources = [None; POINTS];
    for (p, source) in sources.iter_mut().enumerate() {
        let y = (tile.y + p / 4)
            .checked_sub(g.rows.before)
            .filter(|&y| y < g.h);
        let z = (tile.x + p % 4)
            .checked_sub(g.cols.before)
            .filter(|&z| z < g.w);
        if let (Some(y), Some(z)) = (y, z) {
            *source = Some(((tile.image * g.h + y) * g.w + z) * g.c);
        }
    }
    sources
}

/// `lanes` values of `values` from `at`, the rest of the block zero (a whole block is one
/// fixed-size copy, not a call to memmove).
#[inline(always)]
fn load(values: &[f32], at: usize, lanes: usize) -> [f32; LANES] {
    let source = &values[at..at + lanes];
    if let Ok(whole) = <&[f32; LANES]>::try_from(source) {
        return *whole;
    }
    let mut block = [0.0; LANES];
    block[..lanes].copy_from_slice(source);
    block
}

/// The first `lanes` values of `block` into `values` from `at`.
#[inline(always)]
fn store(block: &[f32; LANES], values: &mut [f32], at: usize, lanes: usize) {
    let target = &mut values[at..at + lanes];
    if let Ok(whole) = <&mut [f32; LANES]>::try_from(&mut *target) {
        *whole = *block;
        return;
    }
    target.copy_from_slice(&block[..lanes]);
}

/// A block of channels, one value a lane.
type Lanes = [f32; LANES];

/// `f` applied lane by lane: `N` blocks in, `M` out, the `l`th lane of each output from the
/// `l`th lanes of the inputs. One loop over lanes with straight-line code inside, which the
/// compiler turns into vector instructions over the lanes (loops over a tile's positions with
/// the lanes inside came out as gathers across positions).
#[inline(always)]
fn lanewise<const N: usize, const M: usize>(
    blocks: &[Lanes; N],
    f: impl Fn([f32; N]) -> [f32; M],
) -> [Lanes; M] {
    let mut out = [[0f32; LANES]; M];
    for l in 0..LANES {
        let mut lane = [0f32; N];
        for (value, block) in lane.iter_mut().zip(blocks) {
            *value = block[l];
        }
        for (block, value) in out.iter_mut().zip(f(lane)) {
            block[l] = value;
        }
    }
    out
}

/// Bᵀ d B for 4x4 blocks of lanes (`d[4 i + j]` the input at row i, column j).
#[inline(always)]
fn input_points(d: &[Lanes; POINTS]) -> [Lanes; POINTS] {
    lanewise(d, |d| {
        let mut columns = [[0f32; 4]; 4];
        for (j, column) in columns.iter_mut().enumerate() {
            *column = input_along([d[j], d[4 + j], d[8 + j], d[12 + j]]);
        }
        let mut v = [0f32; POINTS];
        for i in 0..4 {
            let row = input_along([columns[0][i], columns[1][i], columns[2][i], columns[3][i]]);
            v[4 * i..4 * i + 4].copy_from_slice(&row);
        }
        v
    })
}

/// Bᵀ along one axis: (a, b, c, d) becomes (a - c, b + c, c - b, b - d).
#[inline(always)]
fn input_along([a, b, c, d]: [f32; 4]) -> [f32; 4] {
    [a - c, b + c, c - b, b - d]
}

/// Input channels `first..` and output channels `cols` of the HWIO 3x3 `filter` (`c` in, `o`
/// out) transformed (G g Gᵀ) into `planes`, one a position: `planes[p][i · w + j]` for input
/// channel `first + i` and output channel `cols.start + j` (`w` the columns asked for), as
/// many input channels as the planes hold.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn transform_filter(
    filter: &[f32],
    (c, o): (usize, usize),
    (first, cols): (usize, Range<usize>),
    planes: &mut [&mut [f32]],
) {
    let width = cols.len();
    let count = planes.first().map_or(0, |plane| plane.len() / width.max(1));
    for i in 0..count {
        let ci = first + i;
        for start in cols.clone().step_by(LANES) {
            let lanes = LANES.min(cols.end - start);
            let mut g = [[0f32; LANES]; 9];
            for (tap, block) in g.iter_mut().enumerate() {
                *block = load(filter, (tap * c + ci) * o + start, lanes);
            }
            let u = filter_points(&g);
            for (block, plane) in u.iter().zip(planes.iter_mut()) {
                store(block, plane, i * width + start - cols.start, lanes);
            }
        }
    }
}

/// G g Gᵀ for 3x3 blocks of lanes (`g[3 i + j]` the tap at row i, column j).
#[inline(always)]
fn filter_points(g: &[Lanes; 9]) -> [Lanes; POINTS] {
    lanewise(g, |g| {
        let mut columns = [[0f32; 4]; 3];
        for (j, column) in columns.iter_mut().enumerate() {
            *column = filter_along([g[j], g[3 + j], g[6 + j]]);
        }
        let mut u = [0f32; POINTS];
        for i in 0..4 {
            let row = filter_along([columns[0][i], columns[1][i], columns[2][i]]);
            u[4 * i..4 * i + 4].copy_from_slice(&row);
        }
        u
    })
}

/// G along one axis: (a, b, c) becomes (a, (a + b + c) / 2, (a - b + c) / 2, c).
#[inline(always)]
fn filter_along([a, b, c]: [f32; 3]) -> [f32; 4] {
    let ends = a + c;
    [a, (ends + b) * 0.5, (ends - b) * 0.5, c]
}

/// Aᵀ m A of every tile's products (laid out by `stack`, `width` channels a row), written
/// into the tiles' output pixels inside the output at channels `start..`.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn transform_outputs(
    products: &[f32],
    (stack, width): (Stack, usize),
    tiles: &[Tile],
    (ow, o, start): (usize, usize, usize),
    out: &mut [f32],
) {
    for (t, tile) in tiles.iter().enumerate() {
        let columns = 2.min(ow - tile.x);
        for first in (0..width).step_by(LANES) {
            let lanes = LANES.min(width - first);
            let mut m = [[0f32; LANES]; POINTS];
            for (p, block) in m.iter_mut().enumerate() {
                *block = load(products, stack.at(p, t) + first, lanes);
            }
            let y = output_points(&m);
            for i in 0..tile.rows {
                for j in 0..columns {
                    let at = ((tile.line + i) * ow + tile.x + j) * o + start + first;
                    store(&y[2 * i + j], out, at, lanes);
                }
            }
        }
    }
}

/// Aᵀ m A for 4x4 blocks of lanes.
#[inline(always)]
fn output_points(m: &[Lanes; POINTS]) -> [Lanes; 4] {
    lanewise(m, |m| {
        let mut columns = [[0f32; 2]; 4];
        for (j, column) in columns.iter_mut().enumerate() {
            *column = output_along([m[j], m[4 + j], m[8 + j], m[12 + j]]);
        }
        let [y00, y01] = output_along([columns[0][0], columns[1][0], columns[2][0], columns[3][0]]);
        let [y10, y11] = output_along([columns[0][1], columns[1][1], columns[2][1], columns[3][1]]);
        [y00, y01, y10, y11]
    })
}

/// Aᵀ along one axis: (a, b, c, d) becomes (a + b + c, b - c - d).
#[inline(always)]
fn output_along([a, b, c, d]: [f32; 4]) -> [f32; 2] {
    [a + b + c, b - c - d]
}
