//! e^(-|x|) I₀(x) and J₁(x), in f64.
//!
//! - I₀: its power series Σ (x/2)^(2k) / (k!)² (all terms positive) for |x| < 25, then the
//!   asymptotic series e^x / √(2πx) Σ (-1)ᵏ aₖ / xᵏ.
//! - J₁: its power series for |x| < 8; Bessel's integral J₁(x) = 1/2π ∫₀^2π cos(t - x sin t) dt
//!   below 25, by the trapezoidal rule, which converges exponentially for a smooth periodic
//!   integrand (the error is of the order of J₆₃(x), far below double precision there); Hankel's
//!   asymptotic expansion above.

use std::f64::consts::PI;

/// Where the asymptotic series take over.
const LARGE: f64 = 25.0;
/// Terms of the asymptotic series: the last one is below 1e-20 at 25.
const ASYMPTOTIC_TERMS: usize = 30;
/// Where J₁ leaves its power series for the integral.
const J_SERIES_LIMIT: f64 = 8.0;
/// Nodes of the trapezoidal rule over one period.
const J_NODES: usize = 64;

/// aₖ = (μ - 1)(μ - 9)...(μ - (2k-1)²) / (k! 8ᵏ), μ = 4 order²: the coefficients of the
/// asymptotic expansions of I, K, J and Y.
fn asymptotic_coefficient(order: f64, k: usize, previous: f64) -> f64 {
    let mu = 4.0 * order * order;
    let odd = 2.0 * k as f64 - 1.0;
    previous * (mu - odd * odd) / (k as f64 * 8.0)
}

/// e^(-|x|) I₀(x): even; 0 at ±inf.
pub fn i0e(x: f64) -> f64 {
    let a = x.abs();
    if a < LARGE {
        let quarter_square = a * a / 4.0;
        let (mut term, mut total) = (1.0, 1.0);
        for k in 1..90 {
            let k = f64::from(k);
            term *= quarter_square / (k * k);
            total += term;
        }
        return total * (-a).exp();
    }
    let (mut total, mut power, mut coefficient) = (0.0, 1.0, 1.0);
    for k in 0..ASYMPTOTIC_TERMS {
        if k > 0 {
            coefficient = asymptotic_coefficient(0.0, k, coefficient);
        }
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        total += sign * coefficient * power;
        power /= a;
    }
    total / (2.0 * PI * a).sqrt()
}

/// J₁(x): odd; NaN at ±inf, as TensorFlow has it.
pub fn j1(x: f64) -> f64 {
    let a = x.abs();
    let j = if a.is_infinite() {
        f64::NAN
    } else if a < J_SERIES_LIMIT {
        j1_series(a)
    } else if a < LARGE {
        j1_integral(a)
    } else {
        j1_large(a)
    };
    if x < 0.0 {
        -j
    } else {
        j
    }
}

/// Σ (-1)ᵏ (x/2)^(2k+1) / (k! (k+1)!).
fn j1_series(x: f64) -> f64 {
    let quarter_square = -x * x / 4.0;
    let mut term = x / 2.0;
    let mut total = term;
    for k in 1..45 {
        let k = f64::from(k);
        term *= quarter_square / (k * (k + 1.0));
        total += term;
    }
    total
}

/// 1/2π ∫₀^2π cos(t - x sin t) dt by the trapezoidal rule.
fn j1_integral(x: f64) -> f64 {
    let step = 2.0 * PI / J_NODES as f64;
    let total: f64 = (0..J_NODES)
        .map(|j| {
            let t = j as f64 * step;
            (t - x * t.sin()).cos()
        })
        .sum();
    total / J_NODES as f64
}

/// Hankel's expansion √(2/πx) (P cos χ - Q sin χ), χ = x - 3π/4, for x >= 25.
fn j1_large(x: f64) -> f64 {
    let (mut p, mut q, mut power, mut coefficient) = (0.0, 0.0, 1.0, 1.0);
    for k in 0..ASYMPTOTIC_TERMS {
        if k > 0 {
            coefficient = asymptotic_coefficient(1.0, k, coefficient);
        }
        let sign = if (k / 2) % 2 == 0 { 1.0 } else { -1.0 };
        if k % 2 == 0 {
            p += sign * coefficient * power;
        } else {
            q += sign * coefficient * power;
        }
        power /= x;
    }
    let chi = x - 0.75 * PI;
    (2.0 / (PI * x)).sqrt() * (p * chi.cos() - q * chi.sin())
}
