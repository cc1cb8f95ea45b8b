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

/// How the polynomials below combine a product and a sum. [`Separate`] rounds twice, the plain
/// SSE2 sequence; [`Fma`] rounds once, one FMA instruction in a version compiled for FMA,
/// which shortens each element's chain of dependent steps. With the bounded exponential
/// below, swish went from 1.22 to 0.66 ns an element and tanh from 1.72 to 1.11 on a 2-core
/// Zen 3 (`cargo test --release -p savedmodel-core --lib bench_epilogue -- --ignored
/// --nocapture`, per channel). The two differ in the last bits; each gives the same bits
/// wherever it runs (`f32::mul_add` is exact also as a library call), and every pass that
/// uses them ([`map_into`] for the Exp, Sigmoid and Tanh ops and GELU, the fused ops'
/// epilogue, softmax, the recurrent cells) takes `Fma` exactly in its FMA versions, so on one
/// machine they agree bit for bit.
pub trait Madd {
    fn madd(a: f32, b: f32, c: f32) -> f32;
}

/// A product then a sum, each rounded.
pub struct Separate;

/// A product and a sum rounded once (an FMA).
pub struct Fma;

impl Madd for Separate {
    #[inline(always)]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

impl Madd for Fma {
    #[inline(always)]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// e^x in two parts, e^r for r in [-ln2/2, ln2/2] and n, with x = n ln2 + r. `x` must be in
/// [LOW, HIGH] or NaN (the callers clamp).
#[inline(always)]
fn reduce<M: Madd>(x: f32) -> (f32, i32) {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding then subtracting 1.5 * 2^23 rounds to the nearest integer in plain SSE2.
    const ROUND: f32 = 12_582_912.0;
    let shifted = M::madd(x, std::f32::consts::LOG2_E, ROUND);
    let n = shifted - ROUND;
    let r = M::madd(n, -LN2_LO, M::madd(n, -LN2_HI, x));
    let p = [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ]
    .iter()
    .fold(1.987_569_1e-4, |acc, &c| M::madd(acc, r, c));
    let e = M::madd(p * r, r, r) + 1.0;
    // n as an integer: `shifted` is ROUND + n exactly and ROUND's unit in the last place is 1,
    // so their bit patterns differ by n. An integer subtraction per lane, where `n as i32`
    // (saturating, NaN to 0) compiles to a scalar compare and select per lane.
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    (e, n)
}

/// e^x; NaN stays NaN.
#[inline(always)]
pub fn exp<M: Madd>(x: f32) -> f32 {
    let (e, n) = reduce::<M>(x.clamp(LOW, HIGH));
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

/// The largest argument of [`exp_bounded`]. Up to 127.5 ln 2 (88.37) 2^n is one factor
/// (n <= 127); above it n is 128, and 2^128 built from exponent bits is +inf, so e^x is
/// infinite with no select. Between 88.38 and HIGH e^x is finite, but it is +inf here too: the
/// callers only take 1 / (1 + e^x), which is under 4.1e-39 there and rounds to 0.
const OVERFLOWING: f32 = 89.0;

/// Where [`exp_bounded`] turns infinite: n = 128 from here.
#[cfg(test)]
const LAST_FINITE: f32 = 88.37;

/// e^x for x already clamped to [LOW, OVERFLOWING] (NaN passes): one power of two and no edge
/// selects, a fifth fewer steps than [`exp`] for the logistic function, swish and tanh, whose
/// callers decide the edges themselves.
#[inline(always)]
fn exp_bounded<M: Madd>(x: f32) -> f32 {
    let (e, n) = reduce::<M>(x);
    e * pow2(n)
}

/// 2^k for k in [-126, 127], built from its exponent bits; k = 128 gives +inf (the exponent
/// bits all set, the mantissa zero). Any other k, which only a NaN input gives and whose
/// result is NaN anyway, wraps instead of overflowing.
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// 1 / (1 + e^-x), with e^-x taken at most at OVERFLOWING: infinite for x below -88.38, which
/// makes the result 0 there (under 4.1e-39) with no select; above -LOW, e^-x is taken at LOW
/// (1.2e-38), which leaves 1 + e^-x at 1.
#[inline(always)]
pub fn sigmoid<M: Madd>(x: f32) -> f32 {
    1.0 / (1.0 + exp_bounded::<M>((-x).clamp(LOW, OVERFLOWING)))
}

/// x * sigmoid(x) (swish, SiLU) as one division, x / (1 + e^-x): a multiply and a rounding
/// fewer than through [`sigmoid`] (bench_epilogue, per channel, on a 2-core Zen 3: 0.66 ->
/// 0.55 ns an element). Below -88.38 the denominator is infinite, so finite x gives -0 and
/// -inf gives NaN, as x * sigmoid(x) does.
#[inline(always)]
pub fn swish<M: Madd>(x: f32) -> f32 {
    x / (1.0 + exp_bounded::<M>((-x).clamp(LOW, OVERFLOWING)))
}

/// tanh(x): an odd Taylor polynomial below |x| = 0.4 (where 1 - 2/(e^2x + 1) would cancel; the
/// first omitted term is under 1e-9 of the result there), (1 - e^-2|x|) / (1 + e^-2|x|) with
/// x's sign above (e^-2|x| taken at LOW below it, where both quotients round to 1); within
/// 4 ulp.
#[inline(always)]
pub fn tanh<M: Madd>(x: f32) -> f32 {
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
    let series = C.iter().rev().fold(0.0, |acc, &c| M::madd(acc, z, c));
    let small = x * M::madd(z, series, 1.0); // not x + x z s: -0 stays -0
    let t = exp_bounded::<M>((-2.0 * a).clamp(LOW, 0.0));
    let large = ((1.0 - t) / (1.0 + t)).copysign(x);
    if a < 0.4 {
        small
    } else {
        large
    }
}

/// A float32 function whose polynomial steps round as `M` says: what [`map_f32`] applies,
/// with [`Fma`] in its FMA versions. [`Plain`] wraps a closure with no such steps.
pub trait Pointwise: Sync + Send {
    fn at<M: Madd>(&self, x: f32) -> f32;
}

/// A closure as a [`Pointwise`] (it rounds the same in every version).
pub struct Plain<F>(pub F);

impl<F: Fn(f32) -> f32 + Sync + Send> Pointwise for Plain<F> {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        (self.0)(x)
    }
}

/// The exponential, logistic function and tanh as [`Pointwise`] functions.
pub struct Exp;
pub struct Sigmoid;
pub struct Tanh;

/// Swish as a [`Pointwise`] function, for the tests' scalar references: the fused ops'
/// epilogue, the only pass that applies swish, calls [`swish`] itself.
#[cfg(test)]
pub struct Swish;

impl Pointwise for Exp {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        exp::<M>(x)
    }
}

impl Pointwise for Sigmoid {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        sigmoid::<M>(x)
    }
}

#[cfg(test)]
impl Pointwise for Swish {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        swish::<M>(x)
    }
}

impl Pointwise for Tanh {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        tanh::<M>(x)
    }
}

/// `f` over `v` in chunks, each through [`map_into`]; large inputs across threads.
pub fn map_f32(v: &[f32], f: impl Pointwise) -> Vec<f32> {
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
/// (chosen at run time): 16 or 8 lanes instead of SSE2's 4 for the exponentials, and [`Fma`]
/// steps (Rust never contracts a multiply and an add by itself).
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
pub fn map_into<F: Pointwise>(out: &mut [f32], v: &[f32], f: &F) {
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        out.iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = f.at::<Fma>(x));
    } else {
        out.iter_mut()
            .zip(v)
            .for_each(|(o, &x)| *o = f.at::<Separate>(x));
    }
}

/// `f(x)` as the vectorized passes compute it on this machine, for tests that compare them
/// with scalar code bit for bit.
#[cfg(test)]
pub fn as_here(f: &impl Pointwise, x: f32) -> f32 {
    if fused_here() {
        f.at::<Fma>(x)
    } else {
        f.at::<Separate>(x)
    }
}

/// Whether the vectorized passes run their FMA versions on this machine (so take [`Fma`]).
#[cfg(test)]
fn fused_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
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
        fn check<M: Madd>() {
            let mut worst = 0f64;
            for x in samples() {
                let exact = f64::from(x).exp();
                let ours = f64::from(exp::<M>(x));
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
        check::<Separate>();
        check::<Fma>();
    }

    #[test]
    fn exp_edges() {
        fn check<M: Madd>() {
            assert_eq!(exp::<M>(0.0), 1.0);
            assert_eq!(exp::<M>(89.0), f32::INFINITY);
            assert_eq!(exp::<M>(f32::INFINITY), f32::INFINITY);
            assert_eq!(exp::<M>(-200.0), 0.0);
            assert_eq!(exp::<M>(f32::NEG_INFINITY), 0.0);
            assert!(exp::<M>(f32::NAN).is_nan());
            let top = exp::<M>(88.72);
            assert!(top.is_finite() && top > 3.3e38, "{top}");
        }
        check::<Separate>();
        check::<Fma>();
    }

    /// The bounded exponential within 2 ulp where it is finite, ends included, and +inf past
    /// LAST_FINITE up to its largest argument.
    #[test]
    fn bounded_exp_within_two_ulp() {
        fn check<M: Madd>() {
            let ends = [LOW, LAST_FINITE, 0.0];
            let inside = samples().filter(|x| (LOW..=LAST_FINITE).contains(x));
            for x in inside.chain(ends) {
                let exact = f64::from(x).exp();
                let ours = f64::from(exp_bounded::<M>(x));
                assert!(
                    ((ours - exact) / exact).abs() < 2.0 * f64::from(f32::EPSILON),
                    "e^{x} = {ours}, exact {exact}"
                );
            }
            for x in [88.38, 88.5, HIGH, OVERFLOWING] {
                assert_eq!(exp_bounded::<M>(x), f32::INFINITY, "e^{x}");
            }
        }
        check::<Separate>();
        check::<Fma>();
    }

    #[test]
    fn sigmoid_and_swish_match_f64() {
        fn check<M: Madd>() {
            for x in samples() {
                let exact = 1.0 / (1.0 + (-f64::from(x)).exp());
                let ours = f64::from(sigmoid::<M>(x));
                assert!(
                    (ours - exact).abs() <= 3e-7 * exact + 1e-37,
                    "sigmoid({x}) = {ours}, exact {exact}"
                );
                let swish = f64::from(swish::<M>(x));
                let exact_swish = f64::from(x) * exact;
                assert!(
                    (swish - exact_swish).abs() <= 4e-7 * exact_swish.abs() + 2e-36,
                    "swish({x}) = {swish}, exact {exact_swish}"
                );
            }
            assert_eq!(sigmoid::<M>(f32::INFINITY), 1.0);
            assert_eq!(sigmoid::<M>(f32::NEG_INFINITY), 0.0);
            assert!(sigmoid::<M>(f32::NAN).is_nan());
            assert!(
                swish::<M>(f32::NEG_INFINITY).is_nan(),
                "-inf * 0, as x * sigmoid(x)"
            );
            assert_eq!(swish::<M>(f32::INFINITY), f32::INFINITY);
            assert_eq!(swish::<M>(-100.0).to_bits(), (-0.0f32).to_bits());
        }
        check::<Separate>();
        check::<Fma>();
    }

    #[test]
    fn tanh_within_four_ulp() {
        fn check<M: Madd>() {
            for x in samples() {
                let exact = f64::from(x).tanh();
                let ours = f64::from(tanh::<M>(x));
                assert!(
                    (ours - exact).abs() <= 4.0 * f64::from(f32::EPSILON) * exact.abs(),
                    "tanh({x}) = {ours}, exact {exact}"
                );
            }
            assert_eq!(tanh::<M>(f32::INFINITY), 1.0);
            assert_eq!(tanh::<M>(f32::NEG_INFINITY), -1.0);
            assert!(tanh::<M>(f32::NAN).is_nan());
            assert_eq!(tanh::<M>(-0.0).to_bits(), (-0.0f32).to_bits());
        }
        check::<Separate>();
        check::<Fma>();
    }

    #[test]
    fn map_keeps_order_across_threads() {
        let v: Vec<f32> = (0..100_000).map(|i| i as f32 / 1000.0 - 50.0).collect();
        let out = map_f32(&v, Sigmoid);
        assert!(out.iter().zip(&v).all(|(o, &x)| *o == as_here(&Sigmoid, x)));
    }

    /// The version `map_into` dispatches to (AVX-512 or AVX2 where the machine has them) gives
    /// the bits of the scalar functions with the same steps, edges included.
    #[test]
    fn dispatched_map_matches_scalar_bits() {
        let edges = [
            0.0, -0.0, 0.39, 0.4, -0.4, 88.72, 89.0, -87.4, -200.0, 88.0, -88.0, -88.1, 87.4,
        ];
        let specials = [
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
        ];
        let v: Vec<f32> = samples().chain(edges).chain(specials).collect();
        // Function items, not pointers, so that each inlines into the vectorized loop.
        check_bits("exp", &v, Exp);
        check_bits("sigmoid", &v, Sigmoid);
        check_bits("swish", &v, Swish);
        check_bits("tanh", &v, Tanh);
    }

    fn check_bits(name: &str, v: &[f32], f: impl Pointwise) {
        let mut out = vec![0f32; v.len()];
        map_into(&mut out, v, &f);
        for (&x, o) in v.iter().zip(&out) {
            let scalar = as_here(&f, x);
            let same = o.to_bits() == scalar.to_bits() || (o.is_nan() && scalar.is_nan());
            assert!(same, "{name}({x}): dispatched {o:e}, scalar {scalar:e}");
        }
    }
}
