//! Direct float32 convolution for layers with few input channels (at most 8) and few output
//! channels (at most 64): the first layers of an image model (one or three channels in, 8 to
//! 64 out; then 8 in, 16 out), 2-D and 3-D. There im2col + GEMM spends more on building and
//! packing the patch matrix, and on a product only a few columns wide, than on arithmetic (9
//! multiply-adds per output for a 3x3 window over one channel); here each output pixel's
//! channels are summed in local accumulators (registers) over its taps and stored once, with
//! the filter in L1.
//!
//! The kernel sees a convolution along its innermost spatial axis (the width): an output row is
//! a run of pixels along it, and the outer axes (kernel rows, and depths in 3-D) give each row a
//! few input lines, each convolved along the width with its own block of the filter and summed.
//! Output channels go in chunks of 8 lanes; a count that is not a multiple of 8 (3-D only) is
//! computed with a filter padded by zeros and the padding dropped as each row is stored.
//!
//! With more than 8 input channels the layers stay on GEMM. keras_cnn's 8-to-16 3x3 layer (13x13
//! at batch 32) takes 160 us on one thread here against 240 us through im2col + GEMM, whose
//! patch matrix is 72 values a pixel copied in runs of 8.

use std::borrow::Cow;
use std::mem::MaybeUninit;

use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::num::{f32_inputs, Num};
use crate::kernels::nn::output::{assume_written, written_chunks, Split};
use crate::kernels::nn::window::Axis;
use crate::kernels::nn::Epilogue;

#[cfg(target_arch = "x86_64")]
mod simd;

/// Output channels are taken in chunks of this many lanes (one AVX2 register).
const LANES: usize = 8;

/// The most chunks of output channels (64 channels: ResNet50's and DenseNet121's stems, 7x7
/// stride 2 from 3 channels); wider outputs keep a GEMM busy enough.
const MAX_CHUNKS: usize = 8;

/// The most input channels (each count is its own instance of the kernel).
const MAX_CHANNELS: usize = 8;

/// Whether the direct kernel serves a convolution with `c` input channels (one group) and `o`
/// output channels.
pub fn serves(c: usize, o: usize) -> bool {
    (1..=MAX_CHANNELS).contains(&c) && (1..=MAX_CHUNKS * LANES).contains(&o)
}

/// Whether the direct kernel serves the 2-D convolution `g`: whole chunks of output channels
/// (8, 16, ... 64).
pub fn applies(g: &Geometry) -> bool {
    g.groups == 1 && serves(g.gi, g.o) && g.o.is_multiple_of(LANES)
}

/// A convolution seen along its width: the output rows and, for each, its input lines.
pub struct Rows<'a> {
    /// The width axis, and the input's width.
    pub cols: Axis,
    pub w: usize,
    /// Input and output channels.
    pub c: usize,
    pub o: usize,
    /// Output rows.
    pub count: usize,
    /// Filter blocks (outer taps), each `cols.window · c · o` values.
    pub blocks: usize,
    /// Pushes the (first element of the input line in x, filter block) pairs of output row
    /// `r`: one per outer tap that reads the input (not padding).
    pub lines: Lines<'a>,
}

/// What pushes the (input line, filter block) pairs of an output row: see [`Rows::lines`].
pub type Lines<'a> = &'a (dyn Fn(usize, &mut Vec<(usize, usize)>) + Sync);

/// The 2-D convolution `g` of `x` (NHWC) by `filter` (HWIO) into `out`, row by row of output
/// pixels, `epilogue` applied to each row once. False, with nothing written, when the values
/// are not float32 or the buffers do not match `g`.
pub fn convolve<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> Option<KResult<Vec<T>>> {
    if x.len() < g.n * g.h * g.w * g.c {
        return None;
    }
    let oh = g.rows.out.max(1);
    let lines = |r: usize, lines: &mut Vec<(usize, usize)>| {
        let (image, oy) = (r / oh, r % oh);
        for i in g.rows.taps(oy, g.h) {
            let ih = oy * g.rows.stride + i * g.rows.dilation - g.rows.before;
            lines.push(((image * g.h + ih) * g.w * g.c, i));
        }
    };
    let rows = Rows {
        cols: g.cols,
        w: g.w,
        c: g.c,
        o: g.o,
        count: g.n * g.rows.out,
        blocks: g.kh,
        lines: &lines,
    };
    run(&rows, x, filter, epilogue)
}

/// The convolution `rows` describes, of `x` by `filter` (outer taps, width taps, input
/// channels, output channels): its output, `rows.count` rows; over rayon's threads, a share of
/// the rows each, when the work is large. None, with nothing done, when the values are not
/// float32 or the filter is shorter than `rows` says.
pub fn run<T: Num>(
    rows: &Rows,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> Option<KResult<Vec<T>>> {
    let row_len = rows.cols.out * rows.o;
    let block = rows.cols.window * rows.c;
    let (x, filter) = f32_inputs(x, filter, (0, rows.blocks * block * rows.o))?;
    if row_len == 0 || !serves(rows.c, rows.o) {
        return None;
    }
    let filter = padded(&filter[..rows.blocks * block * rows.o], rows.o);
    let count = rows.count * row_len;
    let work = count.saturating_mul(block).saturating_mul(rows.blocks);
    let threads = rayon::current_num_threads().max(1);
    let parallel = work >= PARALLEL_WORK && rows.count >= 2 && threads >= 2;
    // A few shares per thread, so that one slow thread does not hold up the rest.
    let per_share = if parallel {
        rows.count.div_ceil(4 * threads).max(1)
    } else {
        rows.count
    };
    let split = Split {
        count,
        chunk: row_len,
        share: per_share * row_len,
        parallel,
    };
    let init = <(Vec<(usize, usize)>, Scratch)>::default;
    // Each row is written whole by `store_row`, straight into the output: zeroing it first
    // cost ResNet50's stem (3.2 MB out) 15% of its time on one thread.
    Some(written_chunks(
        split,
        init,
        |(lines, scratch), first, part| {
            lines.clear();
            (rows.lines)(first / row_len, lines);
            let values = T::as_f32_uninit(part)
                .ok_or_else(|| fail("internal: the direct convolution computes float32 only"))?;
            store_row(rows, lines, x, &filter, values, scratch)?;
            // SAFETY: `store_row` returned Ok, so it wrote every element of the row.
            let row = unsafe { assume_written(part) };
            epilogue(first, row);
            Ok(row)
        },
    ))
}

/// The filter with its output channels padded by zeros to whole chunks of lanes.
fn padded(filter: &[f32], o: usize) -> Cow<'_, [f32]> {
    let wide = o.div_ceil(LANES) * LANES;
    if wide == o {
        return Cow::Borrowed(filter);
    }
    let mut out = vec![0f32; filter.len() / o * wide];
    for (dst, src) in out.chunks_exact_mut(wide).zip(filter.chunks_exact(o)) {
        dst[..o].copy_from_slice(src);
    }
    Cow::Owned(out)
}

/// Per-thread buffers reused from row to row.
#[derive(Default)]
struct Scratch {
    /// Copies of input lines with the width's padding as zeros (see [`span`]).
    lines: Vec<f32>,
    /// The row with its channels padded to whole chunks of lanes.
    row: Vec<MaybeUninit<f32>>,
    /// The row's taps (see [`Line`]).
    taps: Vec<(usize, usize)>,
    /// The row's steps by tap and input channel (see `simd::row`).
    steps: Vec<(usize, usize)>,
}

/// One output row into `row` (`rows.o` channels a pixel, every element written; an error,
/// with nothing written, when its length is not the row's), through `scratch.row` when the
/// channels are padded.
fn store_row(
    rows: &Rows,
    lines: &mut [(usize, usize)],
    x: &[f32],
    filter: &[f32],
    row: &mut [MaybeUninit<f32>],
    scratch: &mut Scratch,
) -> KResult<()> {
    let out = rows.cols.out;
    if row.len() != out * rows.o {
        return Err(fail(format!(
            "internal: a direct convolution's row holds {} values, not {out} x {}",
            row.len(),
            rows.o
        )));
    }
    let wide = rows.o.div_ceil(LANES) * LANES;
    if wide == rows.o {
        store_pixels(rows, lines, x, filter, row, scratch);
        return Ok(());
    }
    let mut padded = std::mem::take(&mut scratch.row);
    padded.clear();
    padded.resize(out * wide, MaybeUninit::uninit());
    store_pixels(rows, lines, x, filter, &mut padded, scratch);
    // SAFETY: `store_pixels` writes every element of a row of `out` pixels of `wide` channels.
    let written = unsafe { assume_written(&mut padded) };
    for (dst, src) in row.chunks_exact_mut(rows.o).zip(written.chunks_exact(wide)) {
        for (d, &v) in dst.iter_mut().zip(src) {
            d.write(v);
        }
    }
    scratch.row = padded;
    Ok(())
}

/// Every pixel of the row into `row` (`rows.cols.out` pixels of the padded channels), over
/// its input lines (see [`span`]).
fn store_pixels(
    rows: &Rows,
    lines: &mut [(usize, usize)],
    x: &[f32],
    filter: &[f32],
    row: &mut [MaybeUninit<f32>],
    scratch: &mut Scratch,
) {
    let (cols, c) = (rows.cols, rows.c);
    let wide = rows.o.div_ceil(LANES) * LANES;
    let source = span(rows, lines, x, &mut scratch.lines);
    let taps = &mut scratch.taps;
    taps.clear();
    for &(start, outer) in lines.iter() {
        for j in 0..cols.window {
            let at = start + j * cols.dilation * c;
            taps.push((at, (outer * cols.window + j) * c * wide / LANES));
        }
    }
    let line = Line {
        out: cols.out,
        step: cols.stride * c,
        taps,
        x: source,
    };
    any_row(rows.o, c, &line, filter, row, &mut scratch.steps);
}

/// The row's input lines (each a first element and a filter block): in `x` when every window
/// of the row lies inside the input, else copied into `buffer` with the width's padding as
/// zeros and `lines` changed to point there, so that any run of pixels goes through one block of
/// sums (one pixel at a time at the borders ran one chain of dependent multiply-adds: a Conv3D
/// six pixels wide did nothing else; reading the inside of a row in place and copying only
/// its borders saved nothing measurable on ResNet50's stem, where the copy is 1/224 of the
/// arithmetic, and cost keras_cnn's 13-pixel rows a third of their speed).
fn span<'a>(
    rows: &Rows,
    lines: &mut [(usize, usize)],
    x: &'a [f32],
    buffer: &'a mut Vec<f32>,
) -> &'a [f32] {
    let (cols, c) = (rows.cols, rows.c);
    // How far the last window reaches, counting the padding before the input.
    let reach = cols.out.saturating_sub(1) * cols.stride
        + cols.window.saturating_sub(1) * cols.dilation
        + 1;
    if cols.before == 0 && reach <= rows.w {
        return x;
    }
    let len = reach * c;
    let copied = rows.w.min(reach.saturating_sub(cols.before)) * c;
    buffer.clear();
    buffer.resize(lines.len() * len, 0.0);
    for (k, (start, _)) in lines.iter_mut().enumerate() {
        if copied > 0 {
            let at = k * len + cols.before * c;
            buffer[at..at + copied].copy_from_slice(&x[*start..*start + copied]);
        }
        *start = k * len;
    }
    buffer
}

/// One output row of `o` (padded) channels, `line.out` pixels, every element of `row` (that
/// many pixels' values) written: in AVX2 or AVX-512 intrinsics (simd.rs, `steps` its scratch
/// space) where `simd::chosen` says so, else through [`row_kernel`].
fn any_row(
    o: usize,
    c: usize,
    line: &Line,
    filter: &[f32],
    row: &mut [MaybeUninit<f32>],
    steps: &mut Vec<(usize, usize)>,
) {
    #[cfg(target_arch = "x86_64")]
    if simd::chosen(o) && simd::row(c, line, filter, row, steps) {
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = steps;
    row_kernel(o, c, line, filter, row);
}

/// One output row of `o` (padded) channels, compiled for AVX-512, AVX2+FMA and the baseline
/// (chosen at run time; with FMA the sums use fused multiply-adds). The window's taps along
/// the width are flattened with the row's lines into one list first, so that the inner loop
/// does no index arithmetic beyond an offset per tap, and the input channels are a constant of
/// each instance (nested loops over lines, columns and a run-time channel count spent more on
/// addresses and spilled counters than on multiply-adds: keras_cnn's first layer, one channel
/// in, took 204 us on one thread at batch 32, 124 us now).
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn row_kernel(o: usize, c: usize, line: &Line, filter: &[f32], row: &mut [MaybeUninit<f32>]) {
    const FUSED: bool = multiversion::target::selected_target!().supports_feature_str("fma");
    macro_rules! by_channels {
        ($b:literal, $p:literal) => {
            match c {
                1 => row_body::<$b, $p, 1, FUSED>(line, filter, row),
                2 => row_body::<$b, $p, 2, FUSED>(line, filter, row),
                3 => row_body::<$b, $p, 3, FUSED>(line, filter, row),
                4 => row_body::<$b, $p, 4, FUSED>(line, filter, row),
                5 => row_body::<$b, $p, 5, FUSED>(line, filter, row),
                6 => row_body::<$b, $p, 6, FUSED>(line, filter, row),
                7 => row_body::<$b, $p, 7, FUSED>(line, filter, row),
                _ => row_body::<$b, $p, 8, FUSED>(line, filter, row),
            }
        };
    }
    match o.div_ceil(LANES) {
        1 => by_channels!(1, 8),
        2 => by_channels!(2, 4),
        3 => by_channels!(3, 4),
        4 => by_channels!(4, 4),
        5 => by_channels!(5, 2),
        6 => by_channels!(6, 2),
        7 => by_channels!(7, 2),
        _ => by_channels!(8, 2),
    }
}

/// What one output row reads: `out` pixels, `step` values apart in the input, each the sum
/// over `taps` (the input offset of pixel 0's value, the first filter chunk) of the taps'
/// input channels times their filter chunks.
struct Line<'a> {
    out: usize,
    step: usize,
    taps: &'a [(usize, usize)],
    x: &'a [f32],
}

/// One output row with `B` chunks of output channels and `C` input channels, `P` pixels at a
/// time, then the last few in blocks of 4, 2 and 1 (one block of 6 was no faster than 4 and 2
/// on a Conv3D six pixels wide); the sums over every tap stay in registers. `P · B`
/// independent chains of multiply-adds share each load of the filter and hide the FMA's
/// latency: two FMA units of 4 cycles' latency need 8 in flight, so one chunk of channels
/// takes 8 pixels at a time (keras_cnn's first layer, 8 channels out, ran at half the FMA rate
/// with 4).
#[inline(always)]
fn row_body<const B: usize, const P: usize, const C: usize, const FUSED: bool>(
    line: &Line,
    filter: &[f32],
    row: &mut [MaybeUninit<f32>],
) {
    let taps = filter.as_chunks::<LANES>().0;
    let pixels = row.as_chunks_mut::<LANES>().0;
    let out = line.out;
    let mut ox = 0;
    while ox + P <= out {
        block::<B, P, C, FUSED>(line, taps, ox, &mut pixels[ox * B..][..P * B]);
        ox += P;
    }
    if P > 4 && ox + 4 <= out {
        block::<B, 4, C, FUSED>(line, taps, ox, &mut pixels[ox * B..][..4 * B]);
        ox += 4;
    }
    if ox + 2 <= out {
        block::<B, 2, C, FUSED>(line, taps, ox, &mut pixels[ox * B..][..2 * B]);
        ox += 2;
    }
    if ox < out {
        block::<B, 1, C, FUSED>(line, taps, ox, &mut pixels[ox * B..][..B]);
    }
}

/// `P` adjacent output pixels from `ox` on.
#[inline(always)]
fn block<const B: usize, const P: usize, const C: usize, const FUSED: bool>(
    line: &Line,
    filter: &[[f32; LANES]],
    ox: usize,
    out: &mut [[MaybeUninit<f32>; LANES]],
) {
    let step = line.step;
    let base = ox * step;
    let mut acc = [[[0f32; LANES]; B]; P];
    for &(at, first) in line.taps {
        let values = &line.x[at + base..][..(P - 1) * step + C];
        let chunks = &filter[first..][..C * B];
        for ci in 0..C {
            let chunks = &chunks[ci * B..][..B];
            for (p, sums) in acc.iter_mut().enumerate() {
                add::<B, FUSED>(sums, values[p * step + ci], chunks);
            }
        }
    }
    // Whole arrays, so that the sums stay in registers (a loop over flattened elements kept
    // them in memory and halved keras_cnn's convolutions' speed).
    for (dst, sums) in out.chunks_exact_mut(B).zip(&acc) {
        for (d, s) in dst.iter_mut().zip(sums) {
            *d = s.map(MaybeUninit::new);
        }
    }
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
