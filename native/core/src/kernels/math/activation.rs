//! Activation functions, each computed in the input's float type (half types through f32),
//! with formulas that stay accurate where the naive ones overflow or cancel.

use num_complex::Complex;
use num_traits::One;

use super::num::{complex_unary, float_unary, int_unary, Int, Real};
use super::{register_unary, unsupported};
use crate::engine::kernel::{boxed, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::tensor::Tensor;

const SELU_SCALE: f64 = 1.050_700_987_355_480_5;
const SELU_SCALE_ALPHA: f64 = 1.758_099_340_847_376_9;

pub fn register(r: &mut Registry) {
    register_unary!(r, "Relu", relu);
    register_unary!(r, "Relu6", relu6);
    register_unary!(r, "Elu", elu);
    register_unary!(r, "Selu", selu);
    register_unary!(r, "Softplus", softplus);
    register_unary!(r, "Softsign", softsign);
    register_unary!(r, "Sigmoid", sigmoid);
    r.add("LeakyRelu", leaky_relu_factory);
}

/// NaN stays NaN (a select, not max).
fn relu(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| if x < 0.0 { 0.0 } else { x })
        .or_else(|| int_unary!(t, |x| if Int::negative(x) { Int::ZERO } else { x }))
        .unwrap_or_else(|| unsupported("Relu", t))
}

fn relu6_int<T: Int>(x: T) -> T {
    let six = T::wrap(6);
    if x.negative() {
        T::ZERO
    } else if x > six {
        six
    } else {
        x
    }
}

fn relu6(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| x.clamp(0.0, 6.0))
        .or_else(|| int_unary!(t, relu6_int))
        .unwrap_or_else(|| unsupported("Relu6", t))
}

fn elu(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| if x < 0.0 { x.exp_m1() } else { x })
        .unwrap_or_else(|| unsupported("Elu", t))
}

fn selu_real<T: Real>(x: T) -> T {
    if x < T::zero() {
        T::of(SELU_SCALE_ALPHA) * x.exp_m1()
    } else {
        T::of(SELU_SCALE) * x
    }
}

fn selu(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, selu_real).unwrap_or_else(|| unsupported("Selu", t))
}

/// log(1 + e^x) without overflow for large x or loss of precision for very negative x.
fn softplus_real<T: Real>(x: T) -> T {
    if x > T::zero() {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

fn softplus(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, softplus_real).unwrap_or_else(|| unsupported("Softplus", t))
}

fn softsign(t: &Tensor) -> KResult<Tensor> {
    float_unary!(t, |x| x / (1.0 + x.abs())).unwrap_or_else(|| unsupported("Softsign", t))
}

/// 1 / (1 + e^-x): e^-x overflows to inf only where the result underflows to 0 anyway.
fn sigmoid_real<T: Real>(x: T) -> T {
    (T::one() + (-x).exp()).recip()
}

fn sigmoid_complex<T: Real>(z: Complex<T>) -> Complex<T> {
    (Complex::<T>::one() + (-z).exp()).inv()
}

/// float32 through the vectorized `fast::sigmoid`; other float types through their `exp`.
fn sigmoid(t: &Tensor) -> KResult<Tensor> {
    if let Some(values) = t.values::<f32>() {
        return Ok(Tensor::from_vec(
            t.shape().to_vec(),
            super::fast::map_f32(values, super::fast::Sigmoid),
        ));
    }
    float_unary!(t, sigmoid_real)
        .or_else(|| complex_unary!(t, sigmoid_complex))
        .unwrap_or_else(|| unsupported("Sigmoid", t))
}

fn leaky<T: Real>(x: T, alpha: f64) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::of(alpha)
    }
}

/// A select, not max(x, alpha x): the two differ for alpha > 1.
fn leaky_relu_factory(spec: &NodeSpec) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let alpha = spec.attrs.float_or("alpha", 0.2)?;
    let wide = f64::from(alpha);
    Ok(boxed(move |_ctx, inputs| {
        let t = tensor_input(inputs, 0)?;
        let out =
            float_unary!(&t, |x| leaky(x, wide)).unwrap_or_else(|| unsupported("LeakyRelu", &t))?;
        one(out)
    }))
}
