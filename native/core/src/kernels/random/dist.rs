//! Turning Philox words into numbers of each distribution, as TensorFlow's CPU kernels do.
//!
//! Group g of a distribution (four floats, two doubles, ...) is made from block g after the
//! start (uniform, normal, integers); the truncated normal, whose rejection loop takes a
//! varying number of words, starts group g 256 (float) or 128 (double) blocks per group after
//! the start.
//!
//! Box-Muller takes logarithms, sines and cosines, and TensorFlow calls the C library's
//! (`logf`, `sinf`, `cosf` for float and the half types, `log`, `sin`, `cos` for double), whose
//! last bits differ from the correctly rounded values near rounding ties. Rust's `f32::ln`,
//! `f32::sin`, ... are calls to the platform's C math library (glibc on Linux), so these are
//! TensorFlow's values bit for bit on the same C library, with no `unsafe`; the op fixtures
//! check them bit for bit (`tests/op_fixtures.rs`, `random_bit_for_bit`).

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::kernels::random::philox::Philox;
use crate::kernels::util::f32_to_half;
use crate::tensor::Storage;

/// Blocks a stateful op reserves per output value; also the words a truncated normal value
/// may take (TensorFlow's kReservedSamplesPerOutput), which spaces its groups.
pub const SKIP_PER_OUTPUT: u64 = 256;

/// A distribution of floats (or of all integers) an op fills its output with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Uniform,
    Normal,
    TruncatedNormal,
    FullInt,
}

impl Dist {
    /// The dtypes TensorFlow's CPU kernels of this distribution take.
    pub fn allows(self, dtype: DType) -> bool {
        use DType as D;
        match self {
            Self::FullInt => matches!(dtype, D::Int32 | D::Int64 | D::UInt32 | D::UInt64),
            _ => matches!(dtype, D::Float16 | D::BFloat16 | D::Float32 | D::Float64),
        }
    }
}

/// `size` values of `dist` in `dtype` from the generator's counter on.
pub fn fill(gen: &Philox, dist: Dist, dtype: DType, size: usize) -> KResult<Storage> {
    let storage = match (dist, dtype) {
        (Dist::Uniform, DType::Float64) => Storage::Float64(uniform_f64(gen, size)),
        (Dist::Uniform, DType::Float32) => {
            Storage::Float32(gen.words(size).into_iter().map(unit_f32).collect())
        }
        (Dist::Uniform, DType::Float16) => Storage::Float16(
            gen.words(size)
                .into_iter()
                .map(|w| unit_half(w, 0x3FF, 15 << 10, half::f16::from_bits))
                .collect(),
        ),
        (Dist::Uniform, DType::BFloat16) => Storage::BFloat16(
            gen.words(size)
                .into_iter()
                .map(|w| unit_half(w, 0x7F, 127 << 7, half::bf16::from_bits))
                .collect(),
        ),
        (Dist::Normal, DType::Float64) => Storage::Float64(normal_f64(gen, size)),
        (Dist::TruncatedNormal, DType::Float64) => Storage::Float64(truncated_f64(gen, size)),
        (Dist::Normal | Dist::TruncatedNormal, _) => {
            let values = if dist == Dist::Normal {
                normal_f32(gen, size)
            } else {
                truncated_f32(gen, size)
            };
            match dtype {
                DType::Float32 => Storage::Float32(values),
                other => f32_to_half(other, &values).ok_or_else(|| unsupported(other))?,
            }
        }
        (Dist::FullInt, DType::UInt32) => Storage::UInt32(gen.words(size)),
        (Dist::FullInt, DType::Int32) => {
            Storage::Int32(gen.words(size).into_iter().map(|w| w as i32).collect())
        }
        (Dist::FullInt, DType::UInt64) => Storage::UInt64(words64(gen, size)),
        (Dist::FullInt, DType::Int64) => {
            Storage::Int64(words64(gen, size).into_iter().map(|w| w as i64).collect())
        }
        (_, other) => return Err(unsupported(other)),
    };
    Ok(storage)
}

fn unsupported(dtype: DType) -> crate::error::Error {
    fail(format!(
        "dtype {dtype} is not supported by this distribution"
    ))
}

/// `low + (bits mod (high - low))` with 32 or 64 bits per value: no rejection, as in
/// TensorFlow. The caller checked `low < high`.
pub fn uniform_int(
    gen: &Philox,
    dtype: DType,
    size: usize,
    low: i64,
    high: i64,
) -> KResult<Storage> {
    let span = high.wrapping_sub(low) as u64;
    Ok(match dtype {
        DType::Int32 => {
            let (low, span) = (low as u32, span as u32);
            Storage::Int32(
                gen.words(size)
                    .into_iter()
                    .map(|w| low.wrapping_add(w % span) as i32)
                    .collect(),
            )
        }
        DType::Int64 => Storage::Int64(
            words64(gen, size)
                .into_iter()
                .map(|w| (low as u64).wrapping_add(w % span) as i64)
                .collect(),
        ),
        other => return Err(unsupported(other)),
    })
}

/// [0, 1) from the low 23 bits (TensorFlow's Uint32ToFloat).
fn unit_f32(word: u32) -> f32 {
    f32::from_bits((word & 0x7F_FFFF) | 0x3F80_0000) - 1.0
}

/// [0, 1) from 20 bits of one word and all of the next (TensorFlow's Uint64ToDouble).
fn unit_f64(high: u32, low: u32) -> f64 {
    let mantissa = (u64::from(high & 0xF_FFFF) << 32) | u64::from(low);
    f64::from_bits(mantissa | (1023 << 52)) - 1.0
}

/// [0, 1) in a 16-bit float from its low mantissa bits; the subtraction is exact.
fn unit_half<H: Into<f32>>(word: u32, mask: u32, one: u32, from_bits: fn(u16) -> H) -> u16 {
    let value: f32 = from_bits(((word & mask) | one) as u16).into();
    let exact = value - 1.0;
    // both half types hold k / 2^bits exactly, so rounding does not change it
    if mask == 0x3FF {
        half::f16::from_f32(exact).to_bits()
    } else {
        half::bf16::from_f32(exact).to_bits()
    }
}

fn uniform_f64(gen: &Philox, size: usize) -> Vec<f64> {
    let words = gen.words(size * 2);
    words
        .chunks_exact(2)
        .map(|w| unit_f64(w[0], w[1]))
        .collect()
}

fn words64(gen: &Philox, size: usize) -> Vec<u64> {
    let words = gen.words(size * 2);
    words
        .chunks_exact(2)
        .map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32))
        .collect()
}

/// Two standard normal floats from two words (TensorFlow's BoxMullerFloat).
fn box_muller_f32(x0: u32, x1: u32) -> [f32; 2] {
    let u1 = unit_f32(x0).max(1e-7);
    let v1 = (2.0 * std::f64::consts::PI * f64::from(unit_f32(x1))) as f32;
    let u2 = (-2.0f32 * u1.ln()).sqrt();
    [v1.sin() * u2, v1.cos() * u2]
}

/// Two standard normal doubles from four words (TensorFlow's BoxMullerDouble).
fn box_muller_f64(x: [u32; 4]) -> [f64; 2] {
    let u1 = unit_f64(x[0], x[1]).max(1e-7);
    let v1 = 2.0 * std::f64::consts::PI * unit_f64(x[2], x[3]);
    let u2 = (-2.0 * u1.ln()).sqrt();
    [v1.sin() * u2, v1.cos() * u2]
}

fn normal_f32(gen: &Philox, size: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(size.div_ceil(4) * 4);
    for b in 0..size.div_ceil(4) {
        let [w0, w1, w2, w3] = gen.block(b as u64);
        out.extend(box_muller_f32(w0, w1));
        out.extend(box_muller_f32(w2, w3));
    }
    out.truncate(size);
    out
}

fn normal_f64(gen: &Philox, size: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(size.div_ceil(2) * 2);
    for b in 0..size.div_ceil(2) {
        out.extend(box_muller_f64(gen.block(b as u64)));
    }
    out.truncate(size);
    out
}

/// Standard normal values with |x| < 2, by rejection: group g (`per_group` values) draws
/// Box-Muller pairs from block `g * stride` on until it has its values.
fn truncated<T: Copy + Default + PartialOrd + std::ops::Neg<Output = T>>(
    gen: &Philox,
    size: usize,
    per_group: usize,
    bound: T,
    candidates: impl Fn([u32; 4], &mut Vec<T>),
) -> Vec<T> {
    let stride = per_group as u64 * SKIP_PER_OUTPUT / 4;
    let mut out = Vec::with_capacity(size.div_ceil(per_group) * per_group);
    let mut tried = Vec::with_capacity(4);
    for group in 0..size.div_ceil(per_group) as u64 {
        let mut found = 0;
        let mut block = group.wrapping_mul(stride);
        while found < per_group {
            tried.clear();
            candidates(gen.block(block), &mut tried);
            block = block.wrapping_add(1);
            for &x in &tried {
                if found < per_group && x < bound && -bound < x {
                    out.push(x);
                    found += 1;
                }
            }
        }
    }
    out.truncate(size);
    out
}

fn truncated_f32(gen: &Philox, size: usize) -> Vec<f32> {
    truncated(gen, size, 4, 2.0f32, |[w0, w1, w2, w3], out| {
        out.extend(box_muller_f32(w0, w1));
        out.extend(box_muller_f32(w2, w3));
    })
}

fn truncated_f64(gen: &Philox, size: usize) -> Vec<f64> {
    truncated(gen, size, 2, 2.0f64, |words, out| {
        out.extend(box_muller_f64(words));
    })
}

/// `samples` class indices per row of `logits` (batch x classes, widened to f64; `lowest` is
/// the logits dtype's most negative finite value): a uniform double (two words, in order
/// through all rows) times the row's total, located in the running sum of exp(logit - max)
/// over the finite logits.
///
/// TensorFlow splits the rows among threads when there is much work, each thread's rows
/// starting at its own offset, so its values then depend on its thread count. These are the
/// values of one thread, TensorFlow's for every smaller input.
pub fn multinomial(
    gen: &Philox,
    logits: &[f64],
    classes: usize,
    samples: usize,
    lowest: f64,
) -> Vec<i64> {
    let batch = logits.len().checked_div(classes).unwrap_or(0);
    let uniforms = uniform_f64(gen, batch * samples);
    let mut out = Vec::with_capacity(batch * samples);
    let mut cdf = Vec::with_capacity(classes);
    for (row, draws) in logits
        .chunks_exact(classes)
        .zip(uniforms.chunks(samples.max(1)))
    {
        let peak = row
            .iter()
            .filter(|x| x.is_finite())
            .fold(lowest, |m, &x| m.max(x));
        cdf.clear();
        let mut total = 0.0;
        for &x in row {
            total += if x.is_finite() { (x - peak).exp() } else { 0.0 };
            cdf.push(total);
        }
        for &u in draws.iter().take(samples) {
            let target = u * total;
            let index = if target.is_nan() {
                classes
            } else {
                cdf.partition_point(|&c| c <= target)
            };
            out.push(index as i64);
        }
    }
    out
}
