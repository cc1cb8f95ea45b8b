//! The direct kernel's output rows in x86-64 intrinsics: AVX2 for CPUs with AVX2 and FMA but
//! not AVX-512 and outputs of more than 16 channels, AVX-512 for outputs of 32 or more. The
//! portable body (the parent module's `row_body`) unrolls the input channels and leaves the
//! blocking of sums to the compiler, which on AVX2's 16 vector registers loads the inputs and
//! filters of every channel ahead of their multiply-adds and spills the 16 sums of a 4-pixel by
//! 32-channel block to the stack at every step (MobileNetV2's stem, 224x224x3 to 32 channels by
//! 3x3 stride 2: 30-43 GFLOP/s on one Zen 3 core). Here one step is one tap and input channel,
//! a loop the compiler leaves rolled, and a block is a few pixels by 16 (AVX2) or 32 or 64
//! (AVX-512) channels, the sums in registers; wider outputs go through the row in passes, each
//! block written straight into the output, which is not zeroed first (the stem: 46-50
//! GFLOP/s, `bench_one_conv` with `RAYON_NUM_THREADS=1 B_HW=224 B_C=3 B_O=32 B_S=2`). Every
//! sum takes its taps and channels in the portable body's order with the same fused
//! multiply-adds, so all give identical results. The `unsafe` steps are the calls into code
//! compiled for AVX2 and FMA or AVX-512 (made only after the CPU was found to have them); the
//! vector loads and stores are `nn::vector`'s.

use std::mem::MaybeUninit;

use super::{Line, LANES};

/// Pixels a block of 2 chunks in the main loop: 10 independent sums, enough to keep both FMA
/// units busy, beside the step's 2 filter vectors and broadcast values (MobileNetV2's stem on
/// one thread: 4 pixels 44.7-46.2 GFLOP/s, 5 pixels 47.4-49.9, 6 pixels 39.3-46.8).
const PIXELS: usize = 5;

/// Pixels a block of 2 AVX-512 vectors (32 channels) in the main loop: 16 independent sums,
/// the step's 2 filter vectors and 8 broadcast values in 26 of the 32 registers. ResNet50's
/// stem (224x224x3 to 64 channels by 7x7 stride 2) on one core of a Xeon with AVX-512, GFLOP/s:
/// 6 pixels 104, 8 pixels 106-111, 10 pixels 101-110, 12 pixels 90-92 (the compiler broadcast
/// all 12 values first and spilled sums to the stack), 14 pixels by one vector 76; im2col + GEMM
/// 94-95.
const WIDE_PIXELS: usize = 8;

/// Pixels a block of 4 AVX-512 vectors (64 channels) in the main loop: 24 independent sums
/// and the step's 4 filter vectors in 28 registers, the values broadcast into the
/// multiply-adds from memory; each step loads 4 filter vectors and 6 values for 24
/// multiply-adds (10 for 16 in two passes of 32 channels), and the row's input is read once.
/// ResNet50's stem on one core of a Xeon with AVX-512 (savedmodel-run --bench 200 on a
/// SavedModel of it, alternating builds, minimum of each run): 2.16-2.22 ms in two passes of
/// 32 channels by 8 pixels, 1.96-2.01 ms here.
const WIDEST_PIXELS: usize = 6;

/// Whether this CPU runs [`row`]: AVX2 and FMA (checked once, then cached by the standard
/// library).
fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether this CPU has AVX-512 (F) besides AVX2 and FMA.
fn wide() -> bool {
    available() && std::arch::is_x86_feature_detected!("avx512f")
}

/// Whether [`row`] runs on this CPU and is the better choice for `o` output channels. With
/// AVX2 and FMA but no AVX-512: more than 16 (the portable body's blocks of 3 or 4 chunks by 4
/// pixels; its blocks of 1 or 2 chunks fit in registers, and with the input channels a
/// constant of each instance it ran keras_cnn's 1-to-8 and 8-to-16 layers 15% faster than the
/// steps here). With AVX-512: 32 or more (MobileNetV2's and EfficientNetB0's stems, 3 to 32
/// channels by 3x3 stride 2, on one core of a Xeon with AVX-512, `RAYON_NUM_THREADS=1
/// B_HW=224 B_C=3 B_O=32 B_S=2 cargo test --release -p savedmodel-core --lib bench_one_conv
/// -- --ignored --nocapture`, alternating, in the three of five pairs of runs the busy machine
/// left alone: 78-81 GFLOP/s through the portable body, 91-94 here).
pub fn chosen(o: usize) -> bool {
    if wide() {
        return o >= 4 * LANES;
    }
    o > 2 * LANES && available()
}

/// One output row of whole chunks of 8 channels (`row`'s length is `line.out` pixels of them)
/// with `c` input channels (1 to 8), as the parent's `row_kernel` computes it, every element
/// written; `flat` is scratch space. Callers check [`chosen`] first; on a CPU without AVX2
/// and FMA this writes nothing and returns false.
pub fn row(
    c: usize,
    line: &Line,
    filter: &[f32],
    row: &mut [MaybeUninit<f32>],
    flat: &mut Vec<(usize, usize)>,
) -> bool {
    // One step per tap and input channel: where pixel 0 reads its value, and the first value
    // of the filter's row for it (the taps' chunk offsets are in whole filter rows of
    // `c · total` chunks).
    let total = steps(c, line, row.len(), flat);
    let pass = Pass {
        line,
        steps: flat,
        filter,
        total,
        first: 0,
    };
    if wide() {
        // SAFETY: the CPU has AVX-512F, AVX2 and FMA (checked just above), all `row_avx512` is
        // compiled for.
        unsafe { row_avx512(pass, row) };
    } else if available() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), all `row_avx2` is compiled
        // for.
        unsafe { row_avx2(pass, row) };
    } else {
        return false;
    }
    true
}

/// Fills `flat` with the row's steps (see [`row`]) and returns the row's chunks a pixel.
fn steps(c: usize, line: &Line, len: usize, flat: &mut Vec<(usize, usize)>) -> usize {
    let total = len / (line.out * LANES).max(1);
    flat.clear();
    for &(at, first) in line.taps {
        for ci in 0..c {
            flat.push((at + ci, (first + ci * total) * LANES));
        }
    }
    total
}

/// What a block reads: the row's line, its steps (see [`row`]), the filter, and the chunks
/// `first..first + B` of each pixel's `total` it computes.
#[derive(Clone, Copy)]
struct Pass<'a> {
    line: &'a Line<'a>,
    steps: &'a [(usize, usize)],
    filter: &'a [f32],
    total: usize,
    first: usize,
}

/// The row (`pass` from its first chunk) in passes of 16 channels (two AVX2 vectors), then
/// one of 8 for what is left: every chunk from the first to the last of every pixel.
#[target_feature(enable = "avx2,fma")]
fn row_avx2(mut pass: Pass, row: &mut [MaybeUninit<f32>]) {
    while pass.first + 2 <= pass.total {
        ymm::pixels::<2, PIXELS>(pass, row);
        pass.first += 2;
    }
    if pass.first < pass.total {
        ymm::pixels::<1, 8>(pass, row);
    }
}

/// The row (`pass` from its first chunk) in passes of 64 channels (four AVX-512 vectors), of
/// 32, then one of 16 and one of 8 for what is left: every chunk from the first to the last
/// of every pixel.
#[target_feature(enable = "avx512f,avx2,fma")]
fn row_avx512(mut pass: Pass, row: &mut [MaybeUninit<f32>]) {
    while pass.first + 8 <= pass.total {
        zmm::pixels::<4, WIDEST_PIXELS>(pass, row);
        pass.first += 8;
    }
    while pass.first + 4 <= pass.total {
        zmm::pixels::<2, WIDE_PIXELS>(pass, row);
        pass.first += 4;
    }
    if pass.first + 2 <= pass.total {
        zmm::pixels::<1, 8>(pass, row);
        pass.first += 2;
    }
    if pass.first < pass.total {
        ymm::pixels::<1, 8>(pass, row);
    }
}

/// One module of block loops per instruction set (`ymm`: AVX2 and FMA, 8 lanes; `zmm`:
/// AVX-512, 16 lanes), written once: `pixels::<B, P>` computes channels `pass.first · 8..`
/// of every pixel of the row, `B` vectors of them, `P` pixels a block.
macro_rules! vector_passes {
    ($name:ident, $feature:literal, $lanes:literal,
     $load:ident, $write:ident, $fmadd:ident, $set1:ident, $zero:ident) => {
        mod $name {
            use std::arch::x86_64::{$fmadd, $set1, $zero};
            use std::mem::MaybeUninit;

            use crate::kernels::nn::vector::{$load as load, $write as write};

            use super::{Pass, LANES};

            /// Channels a vector.
            const WIDTH: usize = $lanes;

            /// One pass over the row's pixels: `P` at a time, then the last few in blocks of
            /// 4, 2 and 1.
            #[inline]
            #[target_feature(enable = $feature)]
            pub fn pixels<const B: usize, const P: usize>(
                pass: Pass,
                row: &mut [MaybeUninit<f32>],
            ) {
                let out = pass.line.out;
                let mut ox = 0;
                while ox + P <= out {
                    block::<B, P>(pass, ox, row);
                    ox += P;
                }
                if P > 4 && ox + 4 <= out {
                    block::<B, 4>(pass, ox, row);
                    ox += 4;
                }
                if ox + 2 <= out {
                    block::<B, 2>(pass, ox, row);
                    ox += 2;
                }
                if ox < out {
                    block::<B, 1>(pass, ox, row);
                }
            }

            /// `P` adjacent output pixels from `ox` on, `B` vectors of channels from
            /// `pass.first · 8` of each: the sums over every step in registers, stored once.
            #[inline]
            #[target_feature(enable = $feature)]
            fn block<const B: usize, const P: usize>(
                pass: Pass,
                ox: usize,
                row: &mut [MaybeUninit<f32>],
            ) {
                let (step, width) = (pass.line.step, pass.total * LANES);
                let (base, offset) = (ox * step, pass.first * LANES);
                let mut acc = [[$zero(); B]; P];
                for &(at, first) in pass.steps {
                    let values = &pass.line.x[at + base..][..(P - 1) * step + 1];
                    let chunks = &pass.filter[first + offset..][..B * WIDTH];
                    let mut w = [$zero(); B];
                    for (b, w) in w.iter_mut().enumerate() {
                        *w = load(chunks, b * WIDTH);
                    }
                    for (p, sums) in acc.iter_mut().enumerate() {
                        let v = $set1(values[p * step]);
                        for (s, &w) in sums.iter_mut().zip(&w) {
                            *s = $fmadd(v, w, *s);
                        }
                    }
                }
                for (p, sums) in acc.iter().enumerate() {
                    let pixel = (ox + p) * width + offset;
                    for (b, &s) in sums.iter().enumerate() {
                        write(row, pixel + b * WIDTH, s);
                    }
                }
            }
        }
    };
}

vector_passes!(
    ymm,
    "avx2,fma",
    8,
    load8,
    write8,
    _mm256_fmadd_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps
);
vector_passes!(
    zmm,
    "avx512f,avx2,fma",
    16,
    load16,
    write16,
    _mm512_fmadd_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::narrow::row_kernel;
    use crate::kernels::test_util::values;

    #[test]
    fn rows_equal_the_portable_bodys_bit_for_bit() {
        if !available() {
            return;
        }
        // Every input channel count, 1 to 8 chunks of output channels (each pass width, and
        // the passes left over), widths through every block size, strides 1 and 2, two input
        // lines of a 3-wide kernel.
        for c in 1..=8 {
            for total in 1..=8 {
                for (out, stride) in [(1, 1), (2, 2), (5, 1), (6, 2), (11, 1), (13, 2), (29, 1)] {
                    let line_len = ((out - 1) * stride + 3) * c;
                    let x = values((c * 10 + total) as u32, 2 * line_len, 1);
                    let filter = values(out as u32, 6 * c * total * LANES, 1);
                    let taps: Vec<(usize, usize)> = (0..6)
                        .map(|t| ((t / 3) * line_len + (t % 3) * c, t * c * total))
                        .collect();
                    let line = Line {
                        out,
                        step: stride * c,
                        taps: &taps,
                        x: &x,
                    };
                    // Outputs start as NaN, so an element a kernel leaves unwritten shows.
                    let nans = || vec![MaybeUninit::new(f32::NAN); out * total * LANES];
                    let mut want = nans();
                    row_kernel(total * LANES, c, &line, &filter, &mut want);
                    // SAFETY: every element was initialized (as NaN) before the kernels ran.
                    let bits = |v: &[MaybeUninit<f32>]| {
                        v.iter()
                            .map(|f| unsafe { f.assume_init() }.to_bits())
                            .collect::<Vec<_>>()
                    };
                    let mut flat = Vec::new();
                    steps(c, &line, want.len(), &mut flat);
                    let pass = Pass {
                        line: &line,
                        steps: &flat,
                        filter: &filter,
                        total,
                        first: 0,
                    };
                    let mut got = nans();
                    // SAFETY: the CPU has AVX2 and FMA (checked at the top).
                    unsafe { row_avx2(pass, &mut got) };
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "AVX2: c {c}, chunks {total}, {out} pixels"
                    );
                    if wide() {
                        let mut got = nans();
                        // SAFETY: the CPU has AVX-512F, AVX2 and FMA (checked just above).
                        unsafe { row_avx512(pass, &mut got) };
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "AVX-512: c {c}, chunks {total}, {out} pixels"
                        );
                    }
                }
            }
        }
    }
}
