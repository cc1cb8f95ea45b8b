//! Elementwise unary ops: arithmetic, exponentials and logarithms, trigonometry, rounding,
//! classification (IsNan...), logical and bitwise negation. Each op lists the dtype kinds
//! TensorFlow registers it for; anything else is an error naming the dtype.

use num_complex::Complex;
use num_traits::{Float, One, Zero};

use super::num::{complex_unary, float_test, float_unary, int_unary, Int, Real};
use super::{register_unary, unsupported};
use crate::engine::kernel::KResult;
use crate::engine::Registry;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    register_unary!(r, "Neg", neg);
    register_unary!(r, "Abs", abs);
    register_unary!(r, "Sign", sign);
    register_unary!(r, "Square", square);
    register_unary!(r, "Sqrt", sqrt);
    register_unary!(r, "Rsqrt", rsqrt);
    register_unary!(r, "Reciprocal", reciprocal);
    register_unary!(r, "Inv", reciprocal);
    register_unary!(r, "Exp", exp);
    register_unary!(r, "Expm1", expm1);
    register_unary!(r, "Log", log);
    register_unary!(r, "Log1p", log1p);
    register_unary!(r, "Erf", erf);
    register_unary!(r, "Erfc", erfc);
    register_unary!(r, "Floor", floor);
    register_unary!(r, "Ceil", ceil);
    register_unary!(r, "Round", round);
    register_unary!(r, "Rint", rint);
    register_unary!(r, "IsNan", is_nan);
    register_unary!(r, "IsInf", is_inf);
    register_unary!(r, "IsFinite", is_finite);
    register_unary!(r, "LogicalNot", logical_not);
    register_unary!(r, "Invert", invert);
    register_trig(r);
}

/// The trigonometric and hyperbolic functions, for real and complex tensors alike.
fn register_trig(r: &mut Registry) {
    macro_rules! trig {
        ($($op:literal => $f:ident),*) => {$(
            fn $f(t: &Tensor) -> KResult<Tensor> {
                float_unary!(t, |x| x.$f())
                    .or_else(|| complex_unary!(t, |z: Complex<_>| z.$f()))
                    .unwrap_or_else(|| unsupported($op, t))
            }
            register_unary!(r, $op, $f);
        )*};
    }
    trig!(
        "Sin" => sin, "Cos" => cos, "Tan" => tan, "Asin" => asin, "Acos" => acos,
        "Atan" => atan, "Sinh" => sinh, "Cosh" => cosh, "Asinh" => asinh,
        "Acosh" => acosh, "Atanh" => atanh
    );
    register_unary!(r, "Tanh", tanh);
}

/// float32 through the vectorized `fast::tanh` (GELU's tanh form and recurrent cells spend
/// their time here); other types through their own tanh.
fn tanh(t: &Tensor) -> KResult<Tensor> {
    if let Some(values) = t.values::<f32>() {
        return Ok(Tensor::from_vec(
            t.shape().to_vec(),
            super::fast::map_f32(values, super::fast::Tanh),
        ));
    }
    float_unary!(t, |x| x.tanh())
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.tanh()))
        .unwrap_or_else(|| unsupported("Tanh", t))
}

fn neg(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| -x)
        .or_else(|| int_unary!(t, Int::wneg))
        .or_else(|| complex_unary!(t, |z: Complex<_>| -z))
        .unwrap_or_else(|| unsupported("Neg", t))
}

fn abs(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::abs)
        .or_else(|| int_unary!(t, Int::wabs))
        .unwrap_or_else(|| unsupported("Abs", t))
}

/// -1, 0 or 1 (NaN stays NaN); z / |z| for complex z, 0 for 0.
fn sign(t: &Tensor) -> KResult<Tensor> {
    fn real<T: Real>(x: T) -> T {
        if x > T::zero() {
            T::one()
        } else if x < T::zero() {
            -T::one()
        } else {
            x
        }
    }
    fn int<T: Int>(x: T) -> T {
        match x.cmp(&T::ZERO) {
            std::cmp::Ordering::Greater => T::ONE,
            std::cmp::Ordering::Less => T::ZERO.wsub(T::ONE),
            std::cmp::Ordering::Equal => T::ZERO,
        }
    }
    fn complex<T: Real>(z: Complex<T>) -> Complex<T> {
        if z.is_zero() {
            z
        } else {
            z / z.norm()
        }
    }
    float_unary!(t, real)
        .or_else(|| int_unary!(t, int))
        .or_else(|| complex_unary!(t, complex))
        .unwrap_or_else(|| unsupported("Sign", t))
}

fn square(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| x * x)
        .or_else(|| int_unary!(t, |x: _| Int::wmul(x, x)))
        .or_else(|| complex_unary!(t, |z: Complex<_>| z * z))
        .unwrap_or_else(|| unsupported("Square", t))
}

fn sqrt(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::sqrt)
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.sqrt()))
        .unwrap_or_else(|| unsupported("Sqrt", t))
}

fn rsqrt(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| x.sqrt().recip())
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.sqrt().inv()))
        .unwrap_or_else(|| unsupported("Rsqrt", t))
}

fn reciprocal(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::recip)
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.inv()))
        .unwrap_or_else(|| unsupported("Reciprocal", t))
}

/// float32 through the vectorized `fast::exp` (within 2 ulp); other types through their exp.
fn exp(t: &Tensor) -> KResult<Tensor> {
    if let Some(values) = t.values::<f32>() {
        return Ok(Tensor::from_vec(
            t.shape().to_vec(),
            super::fast::map_f32(values, super::fast::Exp),
        ));
    }
    float_unary!(t, Float::exp)
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.exp()))
        .unwrap_or_else(|| unsupported("Exp", t))
}

/// e^z - 1 for complex z, computed so tiny z keep their precision: e^x cos y - 1 as
/// expm1(x) cos y - 2 sin²(y/2).
fn complex_expm1<T: Real>(z: Complex<T>) -> Complex<T> {
    let half = (z.im / (T::one() + T::one())).sin();
    let re = z.re.exp_m1() * z.im.cos() - (T::one() + T::one()) * half * half;
    Complex::new(re, z.re.exp() * z.im.sin())
}

fn expm1(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::exp_m1)
        .or_else(|| complex_unary!(t, complex_expm1))
        .unwrap_or_else(|| unsupported("Expm1", t))
}

fn log(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::ln)
        .or_else(|| complex_unary!(t, |z: Complex<_>| z.ln()))
        .unwrap_or_else(|| unsupported("Log", t))
}

/// log(1 + z) for complex z, with the real part from log1p so tiny z keep their precision.
fn complex_log1p<T: Real>(z: Complex<T>) -> Complex<T> {
    let two = T::one() + T::one();
    if z.norm() < T::of(0.5) {
        let re = (z.re * (two + z.re) + z.im * z.im).ln_1p() / two;
        Complex::new(re, z.im.atan2(T::one() + z.re))
    } else {
        (Complex::<T>::one() + z).ln()
    }
}

fn log1p(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::ln_1p)
        .or_else(|| complex_unary!(t, complex_log1p))
        .unwrap_or_else(|| unsupported("Log1p", t))
}

fn erf(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Real::erf).unwrap_or_else(|| unsupported("Erf", t))
}

fn erfc(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Real::erfc).unwrap_or_else(|| unsupported("Erfc", t))
}

fn floor(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::floor).unwrap_or_else(|| unsupported("Floor", t))
}

fn ceil(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Float::ceil).unwrap_or_else(|| unsupported("Ceil", t))
}

/// Half to even; integers are returned unchanged.
fn round(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Real::rint)
        .or_else(|| int_unary!(t, |x| x))
        .unwrap_or_else(|| unsupported("Round", t))
}

fn rint(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, Real::rint).unwrap_or_else(|| unsupported("Rint", t))
}

fn is_nan(t: &Tensor) -> KResult<Tensor> {
    float_test!(t, Float::is_nan).unwrap_or_else(|| unsupported("IsNan", t))
}

fn is_inf(t: &Tensor) -> KResult<Tensor> {
    float_test!(t, Float::is_infinite).unwrap_or_else(|| unsupported("IsInf", t))
}

fn is_finite(t: &Tensor) -> KResult<Tensor> {
    float_test!(t, Float::is_finite).unwrap_or_else(|| unsupported("IsFinite", t))
}

fn logical_not(t: &Tensor) -> KResult<Tensor> {
    match t.storage() {
        Storage::Bool(v) => make(
            t.shape().to_vec(),
            Storage::Bool(v.iter().map(|&b| !b).collect()),
        ),
        _ => unsupported("LogicalNot", t),
    }
}

fn invert(t: &Tensor) -> KResult<Tensor> {
    int_unary!(t, |x: _| !x).unwrap_or_else(|| unsupported("Invert", t))
}
