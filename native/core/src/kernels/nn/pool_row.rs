//! One output row of a spatial pooling (2-D and 3-D), tap by tap: the row's window covers a
//! few input lines (one per kernel row, and per kernel depth in 3-D), and along each line, for
//! each kernel column, a run of input pixels that a run of output pixels reads at the column
//! stride. Folding those runs into the row needs no per-pixel window arithmetic (the divisions
//! in it cost as much as pooling a short row) and no iterator per pixel. Each pixel still sees
//! its window's elements in the window's order (lines, then columns), so sums round as a
//! pixel-by-pixel loop's do.

use std::ops::Range;

use crate::kernels::nn::num::{Float, Real};
use crate::kernels::nn::window::Axis;

/// Pools reading at least this many input elements (output elements times window taps) spread
/// their output rows over threads. A pool does a comparison or an addition per element read,
/// a GEMM a multiply-add per unit of `gemm::PARALLEL_WORK` in far less time per unit, so the
/// GEMM's threshold kept keras_cnn's pool at batch 32 (26x26x8 by 2x2: 173K reads, about 40 us)
/// on one thread.
pub const PARALLEL_READS: usize = 1 << 16;

/// The pooled axis along the input lines, worked out once per call.
pub struct Columns {
    /// The input's width and channels.
    w: usize,
    c: usize,
    stride: usize,
    /// Per kernel column: the output pixels whose tap there reads the input, and the input
    /// pixel the first of them reads.
    spans: Vec<(Range<usize>, usize)>,
    /// Per output pixel: how many kernel columns read the input (not padding).
    counts: Vec<usize>,
}

impl Columns {
    /// The columns of `axis` over an input `w` pixels wide with `c` channels.
    pub fn new(axis: Axis, w: usize, c: usize) -> Self {
        Self {
            w,
            c,
            stride: axis.stride,
            spans: axis.spans(w),
            counts: (0..axis.out).map(|o| axis.taps(o, w).len()).collect(),
        }
    }

    /// [`fold`] with the widest block of channels that divides their count.
    fn fold_any<T: Copy, S: Step<T>>(
        &self,
        x: &[T],
        lines: impl Iterator<Item = usize>,
        row: &mut [T],
    ) -> usize {
        match self.c {
            c if c % 16 == 0 => fold::<T, S, 16>(self, x, lines, row),
            c if c % 8 == 0 => fold::<T, S, 8>(self, x, lines, row),
            c if c % 4 == 0 => fold::<T, S, 4>(self, x, lines, row),
            c if c % 3 == 0 => fold::<T, S, 3>(self, x, lines, row),
            c if c % 2 == 0 => fold::<T, S, 2>(self, x, lines, row),
            _ => fold::<T, S, 1>(self, x, lines, row),
        }
    }

    /// One output row of a max pool: starts from the dtype's lowest finite value and takes an
    /// element only if it compares greater (NaNs are skipped, as TensorFlow's are).
    pub fn max_row<T: Real>(&self, x: &[T], lines: impl Iterator<Item = usize>, row: &mut [T]) {
        row.fill(T::LOWEST);
        self.fold_any::<T, Max>(x, lines, row);
    }

    /// One output row of an average pool: each pixel's sum divided by the number of input
    /// (not padding) elements its window covers.
    pub fn avg_row<T: Float>(&self, x: &[T], lines: impl Iterator<Item = usize>, row: &mut [T]) {
        row.fill(T::default());
        let lines = self.fold_any::<T, Sum>(x, lines, row);
        for (pixel, &count) in row.chunks_exact_mut(self.c.max(1)).zip(&self.counts) {
            let divisor = T::from_f64((lines * count) as f64);
            for a in pixel {
                *a = *a / divisor;
            }
        }
    }
}

/// Folds each input pixel of the lines starting at `lines` (first elements in `x`) into
/// the output pixel(s) whose window holds it, in `row`; returns how many lines there were.
/// Channels go in blocks of `L` (a divisor of their count), so each step is whole arrays;
/// compiled for AVX2 and AVX-512 as well, where a step is one or two vector instructions (the
/// baseline build steps through 4 lanes at a time).
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn fold<T: Copy, S: Step<T>, const L: usize>(
    cols: &Columns,
    x: &[T],
    lines: impl Iterator<Item = usize>,
    row: &mut [T],
) -> usize {
    let blocks = cols.c / L;
    let len = cols.w * cols.c;
    let out = row.as_chunks_mut::<L>().0;
    let mut count = 0;
    for start in lines {
        let Some(line) = x.get(start..start + len) else {
            continue;
        };
        count += 1;
        let line = line.as_chunks::<L>().0;
        for (valid, first) in &cols.spans {
            let (Some(dst), Some(src)) = (
                out.get_mut(valid.start * blocks..valid.end * blocks),
                line.get(first * blocks..),
            ) else {
                continue;
            };
            if blocks == 1 {
                for (acc, v) in dst.iter_mut().zip(src.iter().step_by(cols.stride)) {
                    S::step(acc, v);
                }
                continue;
            }
            let pixels = dst
                .chunks_exact_mut(blocks)
                .zip(src.chunks(cols.stride * blocks));
            for (acc, pixel) in pixels {
                for (acc, v) in acc.iter_mut().zip(pixel) {
                    S::step(acc, v);
                }
            }
        }
    }
    count
}

/// How an input element folds into an output element's accumulator, a block of `L` at a time.
trait Step<T> {
    fn step<const L: usize>(acc: &mut [T; L], v: &[T; L]);
}

/// The maximum, as a select rather than a conditional store (so it vectorizes; a NaN in `v`
/// is never taken).
struct Max;

impl<T: Real> Step<T> for Max {
    #[inline(always)]
    fn step<const L: usize>(acc: &mut [T; L], v: &[T; L]) {
        // On a copy: in place, the stores between the lanes kept it scalar.
        let mut lanes = *acc;
        for (a, &v) in lanes.iter_mut().zip(v) {
            *a = if v > *a { v } else { *a };
        }
        *acc = lanes;
    }
}

/// The sum.
struct Sum;

impl<T: Float> Step<T> for Sum {
    #[inline(always)]
    fn step<const L: usize>(acc: &mut [T; L], v: &[T; L]) {
        for (a, &v) in acc.iter_mut().zip(v) {
            *a = a.add(v);
        }
    }
}
