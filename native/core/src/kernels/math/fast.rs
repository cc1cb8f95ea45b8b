//! e^x, the logistic function, swish and tanh in float32 with no libm call in the loop, so that a
//! pass over a tensor compiles to SIMD code (libm's `expf` is a scalar call per element, and
//! was most of EfficientNet's time). The exponential reduces x to r in [-ln2/2, ln2/2] with
//! x = n ln2 + r, takes e^r from a degree-7 polynomial (Cephes' expf coefficients, a public
//! minimax fit) and scales by 2^n through the exponent bits; within 2 ulp of the exact value.

use rayon::prelude::*;

use super::num::PARALLEL_MIN;

/// ln(f32::MAX): above it e^x is infinite.
const HIGH: f32 = 88.722_84;
/// Below it e^x is subnormal; this gives 0 there, within float32's absolute tolerance.
const LOW: f32 = -87.336_55;

/// e^x; NaN stays NaN.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding then subtracting 1.5 * 2^23 rounds to the nearest integer in plain SSE2.
    const ROUND: f32 = 12_582_912.0;
    let clamped = x.clamp(LOW, HIGH);
    let shifted = clamped * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let e = p * r * r + r + 1.0;
    // n as an integer: `shifted` is ROUND + n exactly and ROUND's unit in the last place is 1,
    // so their bit patterns differ by n. An integer subtraction per lane, where `n as i32`
    // (saturating, NaN to 0) compiles to a scalar compare and select per lane.
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    // 2^n in two factors: n reaches 128 near HIGH, one past the largest float32 exponent.
    let half = n >> 1;
    let y = e * pow2(half) * pow2(n.wrapping_sub(half));
    if x > HIGH {
        f32::INFINITY
    } else if x < LOW {
        0.0
    } else {
        y
    }
}

/// 2^k for k in [-126, 127], built from its exponent bits (any other k, which only a NaN
/// input gives and whose result is NaN anyway, wraps instead of overflowing).
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// 1 / (1 + e^-x): e^-x overflows to inf only where the result underflows to 0 anyway.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// x * sigmoid(x) (swish, SiLU).
#[inline(always)]
pub fn swish_f32(x: f32) -> f32 {
    x * sigmoid_f32(x)
}

/// tanh(x): an odd Taylor polynomial below |x| = 0.4 (where 1 - 2/(e^2x + 1) would cancel; the
/// first omitted term is under 1e-9 of the result there), (1 - e^-2|x|) / (1 + e^-2|x|) with
/// x's sign above; within 4 ulp.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    const C: [f32; 7] = [
        -1.0 / 3.0,
        2.0 / 15.0,
        -17.0 / 315.0,
        62.0 / 2835.0,
        -1382.0 / 155_925.0,
        21_844.0 / 6_081_075.0,
        -929_569.0 / 638_512_875.0,
    ];
    let a = x.abs();
    let z = x * x;
    let series = C.iter().rev().fold(0.0, |acc, &c| acc * z + c);
    let small = x * (1.0 + z * series); // not x + x z s: -0 stays -0
    let t = exp_f32(-2.0 * a);
    let large = ((1.0 - t) / (1.0 + t)).copysign(x);
    if a < 0.4 {
        small
    } else {
        large
    }
}

/// `f` over `v` in chunks, each through [`map_into`]; large inputs across threads. Pass a
/// function item or closure (not a function pointer) so that `f` inlines into the loop.
pub fn map_f32(v: &[f32], f: impl Fn(f32) -> f32 + Sync + Send) -> Vec<f32> {
    by_chunks(v, 1, |o, i| map_into(o, i, &f))
}

/// An output of `v`'s length filled by `fill(out_chunk, in_chunk)` over chunks of whole
/// `unit`s (a row, for row-wise ops): the whole input at once when small, else chunks of about
/// a quarter of [`PARALLEL_MIN`] across threads. `unit` must be positive.
pub fn by_chunks(
    v: &[f32],
    unit: usize,
    fill: impl Fn(&mut [f32], &[f32]) + Sync + Send,
) -> Vec<f32> {
    let mut out = vec![0f32; v.len()];
    if v.len() < PARALLEL_MIN {
        fill(&mut out, v);
    } else {
        let chunk = (PARALLEL_MIN / 4).div_ceil(unit) * unit;
        out.par_chunks_mut(chunk)
            .zip(v.par_chunks(chunk))
            .for_each(|(o, i)| fill(o, i));
    }
    out
}

/// `out[i] = f(v[i])`: a plain loop the compiler vectorizes, compiled also for AVX-512 and AVX2
/// (chosen at run time): 16 or 8 lanes instead of SSE2's 4 for the exponentials. Rust never
/// contracts a multiply and an add into an FMA, so every version gives the same bits.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
pub fn map_into<F: Fn(f32) -> f32>(out: &mut [f32], v: &[f32], f: &F) {
    out.iter_mut().zip(v).for_each(|(o, &x)| *o = f(x));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 997th float32 bit pattern in [-104, 89] (both signs), against f64's exp.
    fn samples() -> impl Iterator<Item = f32> {
        (0..u32::MAX / 997)
            .map(|i| f32::from_bits(i * 997))
            .filter(|x| x.is_finite() && x.abs() < 104.0)
            .flat_map(|x| [x, -x])
    }

    #[test]
    fn exp_within_two_ulp() {
        let mut worst = 0f64;
        for x in samples() {
            let exact = f64::from(x).exp();
            let ours = f64::from(exp_f32(x));
            if exact < f64::from(f32::MIN_POSITIVE) || exact > f64::from(f32::MAX) {
                continue;
            }
            worst = worst.max(((ours - exact) / exact).abs());
        }
        assert!(
            worst < 2.0 * f64::from(f32::EPSILON),
            "worst relative error {worst:e}"
        );
    }

    #[test]
    fn exp_edges() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(-200.0), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        let top = exp_f32(88.72);
        assert!(top.is_finite() && top > 3.3e38, "{top}");
    }

    #[test]
    fn sigmoid_and_swish_match_f64() {
        for x in samples() {
            let exact = 1.0 / (1.0 + (-f64::from(x)).exp());
            let ours = f64::from(sigmoid_f32(x));
            assert!(
                (ours - exact).abs() <= 3e-7 * exact + 1e-37,
                "sigmoid({x}) = {ours}, exact {exact}"
            );
            let swish = f64::from(swish_f32(x));
            let exact_swish = f64::from(x) * exact;
            assert!(
                (swish - exact_swish).abs() <= 4e-7 * exact_swish.abs() + 2e-36,
                "swish({x}) = {swish}, exact {exact_swish}"
            );
        }
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid_f32(f32::NAN).is_nan());
    }

    #[test]
    fn tanh_within_four_ulp() {
        for x in samples() {
            let exact = f64::from(x).tanh();
            let ours = f64::from(tanh_f32(x));
            assert!(
                (ours - exact).abs() <= 4.0 * f64::from(f32::EPSILON) * exact.abs(),
                "tanh({x}) = {ours}, exact {exact}"
            );
        }
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn map_keeps_order_across_threads() {
        let v: Vec<f32> = (0..100_000).map(|i| i as f32 / 1000.0 - 50.0).collect();
        let out = map_f32(&v, sigmoid_f32);
        assert!(out.iter().zip(&v).all(|(o, &x)| *o == sigmoid_f32(x)));
    }

    /// The version `map_into` dispatches to (AVX-512 or AVX2 where the machine has them) gives
    /// the bits of the plain scalar functions, edges included.
    #[test]
    fn dispatched_map_matches_scalar_bits() {
        let edges = [0.0, -0.0, 0.39, 0.4, -0.4, 88.72, 89.0, -87.4, -200.0];
        let specials = [
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
        ];
        let v: Vec<f32> = samples().chain(edges).chain(specials).collect();
        // Function items, not pointers, so that each inlines into the vectorized loop.
        check_bits("exp", &v, exp_f32);
        check_bits("sigmoid", &v, sigmoid_f32);
        check_bits("swish", &v, swish_f32);
        check_bits("tanh", &v, tanh_f32);
    }

    fn check_bits(name: &str, v: &[f32], f: impl Fn(f32) -> f32) {
        let mut out = vec![0f32; v.len()];
        map_into(&mut out, v, &f);
        for (&x, o) in v.iter().zip(&out) {
            let scalar = f(x);
            let same = o.to_bits() == scalar.to_bits() || (o.is_nan() && scalar.is_nan());
            assert!(same, "{name}({x}): dispatched {o:e}, scalar {scalar:e}");
        }
    }
}
