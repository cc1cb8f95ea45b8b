//! log|Γ(x)|, ψ(x) = Γ'(x)/Γ(x), the regularized lower incomplete gamma function P(a, x) and
//! the regularized incomplete beta function I_x(a, b), in f64.
//!
//! - lgamma, digamma: the recurrence Γ(z+1) = zΓ(z) moves the argument up to 12, where
//!   Stirling's series (and its derivative, both with coefficients from the Bernoulli numbers)
//!   converge to double precision in 8 terms; the reflection formulas cover x < 1/2 (x <= 0
//!   for digamma).
//! - P(a, x): the power series Σ xⁿ / (a (a+1) ... (a+n)) where x < a + 1, else 1 - Q from
//!   Legendre's continued fraction for Q, each with the prefactor xᵃ e⁻ˣ / Γ(a).
//! - I_x(a, b): the continued fraction of the incomplete beta function on the side of
//!   x = (a+1)/(a+b+2) where it converges fast, by the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
//!
//! Continued fractions are evaluated by the modified Lentz method.

use std::f64::consts::PI;

const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// B₂, B₄, ..., B₁₆ (Stirling's series needs eight).
const BERNOULLI: [f64; 8] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
];

/// Arguments below this are moved up by the recurrence before an asymptotic series.
const SHIFT: f64 = 12.0;

/// (z, product of the values moved past): z = x + n >= SHIFT for the least such n (at most 12
/// steps, so tiny arguments stay accurate and huge ones are untouched).
fn shifted(x: f64, mut fold: impl FnMut(f64)) -> f64 {
    let mut z = x;
    for _ in 0..SHIFT as usize {
        if z < SHIFT {
            fold(z);
            z += 1.0;
        }
    }
    z
}

/// |sin(πx)|, exactly 0 at integers.
fn abs_sin_pi(x: f64) -> f64 {
    (PI * (x - x.round_ties_even())).sin().abs()
}

/// Stirling's series for log Γ(z), z >= 12.
fn lgamma_large(z: f64) -> f64 {
    let inverse = 1.0 / z;
    let square = inverse * inverse;
    let mut series = 0.0;
    for k in (1..=BERNOULLI.len()).rev() {
        let k2 = 2.0 * k as f64;
        series = series * square + BERNOULLI[k - 1] / (k2 * (k2 - 1.0));
    }
    (z - 0.5) * z.ln() - z + HALF_LOG_TWO_PI + series * inverse
}

/// log|Γ(x)|: inf at 0, the negative integers and ±inf; NaN for NaN.
pub fn lgamma(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::INFINITY;
    }
    let reflect = x < 0.5;
    let positive = if reflect { 1.0 - x } else { x };
    let mut product = 1.0;
    let z = shifted(positive, |z| product *= z);
    let value = lgamma_large(z) - product.ln();
    if reflect {
        (PI / abs_sin_pi(x)).ln() - value
    } else {
        value
    }
}

/// The asymptotic series of ψ(z), z >= 12.
fn digamma_large(z: f64) -> f64 {
    let square = 1.0 / (z * z);
    let mut series = 0.0;
    for k in (1..=7).rev() {
        series = series * square + BERNOULLI[k - 1] / (2.0 * k as f64);
    }
    z.ln() - 0.5 / z - series * square
}

/// ψ(x); the reflection formula ψ(x) = ψ(1-x) - π / tan(πx) for x <= 0, where the poles
/// (0 and the negative integers) and -inf give NaN, as TensorFlow's do.
pub fn digamma(x: f64) -> f64 {
    if x == f64::INFINITY {
        return x;
    }
    let reflect = x <= 0.0;
    if reflect && x == x.round_ties_even() {
        return f64::NAN;
    }
    let positive = if reflect { 1.0 - x } else { x };
    let mut correction = 0.0;
    let z = shifted(positive, |z| correction += 1.0 / z);
    let value = digamma_large(z) - correction;
    if reflect {
        value - PI / (PI * (x - x.round_ties_even())).tan()
    } else {
        value
    }
}

/// Most terms a series or continued fraction may take.
const ITERATIONS: usize = 4000;
/// Relative change below which a series or continued fraction has converged: 2 ulps, since a
/// Lentz factor c d can settle one ulp away from 1.
const EPSILON: f64 = 5e-16;
const TINY: f64 = 1e-300;

/// Σₙ xⁿ / (a (a+1) ... (a+n)): P(a, x) without its prefactor.
fn lower_gamma_series(a: f64, x: f64) -> f64 {
    let mut term = 1.0 / a;
    let mut total = term;
    for n in 1..=ITERATIONS {
        term *= x / (a + n as f64);
        total += term;
        if (term / total).abs() <= EPSILON {
            break;
        }
    }
    total
}

/// first + a₁/(b₁ + a₂/(b₂ + ...)) by the modified Lentz method, with aᵢ = numerator(i) and
/// bᵢ = denominator(i).
fn lentz(first: f64, numerator: impl Fn(f64) -> f64, denominator: impl Fn(f64) -> f64) -> f64 {
    let nonzero = |v: f64| if v == 0.0 { TINY } else { v };
    let mut f = nonzero(first);
    let (mut c, mut d) = (f, 0.0);
    for i in 1..=ITERATIONS {
        let (a, b) = (numerator(i as f64), denominator(i as f64));
        d = 1.0 / nonzero(b + a * d);
        c = nonzero(b + a / c);
        f *= c * d;
        if (c * d - 1.0).abs() <= EPSILON {
            break;
        }
    }
    f
}

/// Legendre's continued fraction 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))): Q(a, x)
/// without its prefactor.
fn upper_gamma_fraction(a: f64, x: f64) -> f64 {
    1.0 / lentz(x + 1.0 - a, |i| -i * (i - a), |i| x + 1.0 - a + 2.0 * i)
}

fn gamma_prefactor(a: f64, x: f64) -> f64 {
    (a * x.ln() - x - lgamma(a)).exp()
}

/// P(a, x), the regularized lower incomplete gamma function: NaN for a <= 0, x < 0 or NaN;
/// P(a, 0) = 0, P(a, inf) = 1 and P(inf, x) = 0 for finite x.
pub fn igamma(a: f64, x: f64) -> f64 {
    if !(a > 0.0 && x >= 0.0) {
        return f64::NAN;
    }
    if (a == f64::INFINITY && x.is_finite()) || x == 0.0 {
        return 0.0;
    }
    if x == f64::INFINITY {
        return 1.0;
    }
    if x < a + 1.0 {
        gamma_prefactor(a, x) * lower_gamma_series(a, x)
    } else if a.is_finite() {
        1.0 - gamma_prefactor(a, x) * upper_gamma_fraction(a, x)
    } else {
        f64::NAN
    }
}

/// The continued fraction 1/(1+ d₁/(1+ d₂/(1+ ...))) of I_x(a, b) without its prefactor:
/// d₂ₘ = m(b-m)x / ((a+2m-1)(a+2m)), d₂ₘ₊₁ = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    let numerator = |i: f64| {
        let m = (i / 2.0).floor();
        if i % 2.0 == 0.0 {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        } else {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        }
    };
    1.0 / lentz(1.0, numerator, |_| 1.0)
}

/// I_x(a, b), the regularized incomplete beta function; NaN outside a, b > 0 and 0 <= x <= 1.
pub fn betainc(a: f64, b: f64, x: f64) -> f64 {
    if !(a > 0.0 && b > 0.0 && (0.0..=1.0).contains(&x)) {
        return f64::NAN;
    }
    if x == 0.0 || x == 1.0 {
        return x;
    }
    let swap = x > (a + 1.0) / (a + b + 2.0);
    let (a1, b1, x1) = if swap { (b, a, 1.0 - x) } else { (a, b, x) };
    let log_prefix = lgamma(a1 + b1) - lgamma(a1) - lgamma(b1) + a1 * x1.ln() + b1 * (-x1).ln_1p();
    let value = log_prefix.exp() * beta_fraction(a1, b1, x1) / a1;
    if swap {
        1.0 - value
    } else {
        value
    }
}
