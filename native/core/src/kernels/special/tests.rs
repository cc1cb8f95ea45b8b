//! Values from closed forms and published tables, each branch of each function, and the
//! kernels' dtype and shape rules.

use super::{bessel, gamma, inverse_erf};
use crate::kernels::test_util::run_op as run;
use crate::tensor::Tensor;

fn close(got: f64, want: f64, rtol: f64) {
    assert!(
        (got - want).abs() <= rtol * want.abs().max(1e-300),
        "{got} != {want}"
    );
}

#[test]
fn gamma_family_meets_closed_forms() {
    let half_log_pi = 0.5 * std::f64::consts::PI.ln();
    close(gamma::lgamma(0.5), half_log_pi, 1e-13);
    close(
        gamma::lgamma(-0.5),
        (2.0 * std::f64::consts::PI.sqrt()).ln(),
        1e-14,
    );
    close(
        gamma::lgamma(30.0),
        (1..30).map(|k| f64::from(k).ln()).sum(),
        1e-14,
    );
    assert_eq!(gamma::lgamma(-3.0), f64::INFINITY);
    assert_eq!(gamma::lgamma(f64::NEG_INFINITY), f64::INFINITY);
    close(gamma::digamma(1.0), -0.577_215_664_901_532_9, 1e-13);
    close(gamma::digamma(-0.5), 0.036_489_973_978_576_52, 1e-13);
    assert!(gamma::digamma(-2.0).is_nan() && gamma::digamma(f64::NEG_INFINITY).is_nan());
}

#[test]
fn incomplete_functions_meet_closed_forms() {
    // P(1, x) = 1 - e^-x; P(2, x) = 1 - (1 + x) e^-x (series and fraction sides).
    for x in [0.3, 1.5, 7.0] {
        close(gamma::igamma(1.0, x), -(-x).exp_m1(), 1e-14);
        close(gamma::igamma(2.0, x), 1.0 - (1.0 + x) * (-x).exp(), 1e-14);
    }
    assert!(gamma::igamma(-1.0, 1.0).is_nan());
    assert_eq!(gamma::igamma(3.0, f64::INFINITY), 1.0);
    // I_x(a, 1) = x^a; I_x(2, 3) = 6x² - 8x³ + 3x⁴, 0.5248 at 0.4.
    close(gamma::betainc(2.5, 1.0, 0.7), 0.7f64.powf(2.5), 1e-14);
    close(gamma::betainc(2.0, 3.0, 0.4), 0.5248, 1e-13);
    close(
        gamma::betainc(0.5, 40.0, 0.05),
        0.956_555_130_357_918_8,
        1e-12,
    );
    assert!(gamma::betainc(0.0, 1.0, 0.5).is_nan());
}

#[test]
fn inverse_error_functions_invert_erf() {
    for y in [-0.999_999_9, -0.6, -0.3, 0.0, 1e-9, 0.45, 0.9, 0.999_999] {
        close(libm::erf(inverse_erf::erfinv(y)), y, 1e-14);
    }
    close(inverse_erf::ndtri(0.975), 1.959_963_984_540_054, 1e-14);
    close(inverse_erf::ndtri(1e-10), -6.361_340_902_404_057, 1e-14);
    assert_eq!(inverse_erf::erfinv(-1.0), f64::NEG_INFINITY);
    assert!(inverse_erf::ndtri(1.5).is_nan());
}

#[test]
fn bessel_functions_meet_tables() {
    close(bessel::i0e(0.0), 1.0, 1e-15);
    close(bessel::i0e(-3.0), 0.243_000_354_161_825_42, 1e-14);
    close(bessel::i0e(40.0), 0.063_278_279_875_235_34, 1e-14);
    assert_eq!(bessel::i0e(f64::INFINITY), 0.0);
    close(bessel::j1(1.0), 0.440_050_585_744_933_55, 1e-14);
    close(bessel::j1(10.0), 0.043_472_746_168_861_44, 1e-12);
    close(bessel::j1(-30.0), 0.118_751_062_616_622_94, 1e-12);
    assert!(bessel::j1(f64::INFINITY).is_nan());
}

#[test]
fn kernels_keep_dtypes_and_check_shapes() {
    let x = Tensor::from_vec(vec![2], vec![0.5f32, 2.0]);
    let out = run("Lgamma", vec![x.clone()]).unwrap();
    assert!(out.values::<f32>().unwrap()[1].abs() < 1e-6);
    assert!(run("Lgamma", vec![Tensor::from_vec(vec![1], vec![1i32])]).is_err());
    let a = Tensor::from_vec(vec![2, 1], vec![1.0f64, 2.0]);
    let b = Tensor::from_vec(vec![3], vec![0.5f64, 1.0, 2.0]);
    assert_eq!(run("Igamma", vec![a, b]).unwrap().shape(), &[2, 3]);
    let scalar = Tensor::scalar(2.0f32);
    let three = Tensor::from_vec(vec![3], vec![0.1f32, 0.5, 0.9]);
    let out = run(
        "Betainc",
        vec![scalar.clone(), three.clone(), three.clone()],
    )
    .unwrap();
    assert_eq!(out.shape(), &[3]);
    assert!(run("Betainc", vec![x, three.clone(), three.clone()]).is_err());
    let wide = Tensor::from_vec(vec![3], vec![0.1f64, 0.5, 0.9]);
    assert!(run("Betainc", vec![scalar, wide, three]).is_err());
}
