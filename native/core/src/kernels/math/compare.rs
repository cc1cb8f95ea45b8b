//! Comparisons (bool results), logical and bitwise ops, and shifts, with broadcasting.
//! Equal and NotEqual also compare complex, bool and string tensors, and with
//! `incompatible_shape_error=false` answer shapes that do not broadcast with one scalar.

use super::binary::{same_dtype, unsupported2};
use super::broadcast::map2;
use super::num::{float_compare, int_binary, Int};
use super::register_binary;
use crate::engine::kernel::{boxed, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{broadcast_shape, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    register_binary!(r, "Less", less);
    register_binary!(r, "LessEqual", less_equal);
    register_binary!(r, "Greater", greater);
    register_binary!(r, "GreaterEqual", greater_equal);
    register_binary!(r, "LogicalAnd", logical_and);
    register_binary!(r, "LogicalOr", logical_or);
    register_binary!(r, "BitwiseAnd", bitwise_and);
    register_binary!(r, "BitwiseOr", bitwise_or);
    register_binary!(r, "BitwiseXor", bitwise_xor);
    register_binary!(r, "LeftShift", left_shift);
    register_binary!(r, "RightShift", right_shift);
    r.add("Equal", |spec| equality(spec, false));
    r.add("NotEqual", |spec| equality(spec, true));
}

macro_rules! ordering {
    ($($name:ident, $op:literal, $cmp:tt);*) => {$(
        fn $name(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
            same_dtype($op, a, b)?;
            float_compare!(a, b, |x, y| x $cmp y)
                .or_else(|| int_binary!(a, b, |x, y| x $cmp y, bool))
                .unwrap_or_else(|| unsupported2($op, a))
        }
    )*};
}

ordering!(
    less, "Less", <;
    less_equal, "LessEqual", <=;
    greater, "Greater", >;
    greater_equal, "GreaterEqual", >=
);

fn bools(op: &str, a: &Tensor, b: &Tensor, f: fn(bool, bool) -> bool) -> KResult<Tensor> {
    match (a.storage(), b.storage()) {
        (Storage::Bool(p), Storage::Bool(q)) => {
            let (shape, v) = map2(p, a.shape(), q, b.shape(), f)?;
            make(shape, Storage::Bool(v))
        }
        _ => unsupported2(op, a),
    }
}

fn logical_and(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    bools("LogicalAnd", a, b, |x, y| x && y)
}

fn logical_or(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    bools("LogicalOr", a, b, |x, y| x || y)
}

fn bitwise_and(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("BitwiseAnd", a, b)?;
    int_binary!(a, b, |x, y| x & y).unwrap_or_else(|| unsupported2("BitwiseAnd", a))
}

fn bitwise_or(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("BitwiseOr", a, b)?;
    int_binary!(a, b, |x, y| x | y).unwrap_or_else(|| unsupported2("BitwiseOr", a))
}

fn bitwise_xor(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("BitwiseXor", a, b)?;
    int_binary!(a, b, |x, y| x ^ y).unwrap_or_else(|| unsupported2("BitwiseXor", a))
}

/// TensorFlow clamps the shift amount into [0, bits - 1].
fn shift_amount<T: Int>(y: T) -> u32 {
    let bits = i128::from(T::BITS - 1);
    y.as_i128().clamp(0, bits) as u32
}

fn left_shift(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("LeftShift", a, b)?;
    int_binary!(a, b, |x: _, y| Int::shl(x, shift_amount(y)))
        .unwrap_or_else(|| unsupported2("LeftShift", a))
}

/// Arithmetic for signed types, logical for unsigned ones.
fn right_shift(a: &Tensor, b: &Tensor) -> KResult<Tensor> {
    same_dtype("RightShift", a, b)?;
    int_binary!(a, b, |x: _, y| Int::shr(x, shift_amount(y)))
        .unwrap_or_else(|| unsupported2("RightShift", a))
}

/// Equal (`negate` false) or NotEqual, of any dtype.
fn equality(spec: &NodeSpec, negate: bool) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let strict = spec.attrs.bool_or("incompatible_shape_error", true)?;
    Ok(boxed(move |_ctx, inputs| {
        let a = tensor_input(inputs, 0)?;
        let b = tensor_input(inputs, 1)?;
        if !strict && broadcast_shape(a.shape(), b.shape()).is_err() {
            return one(Tensor::scalar(negate));
        }
        one(equal(&a, &b, negate)?)
    }))
}

fn equal(a: &Tensor, b: &Tensor, negate: bool) -> KResult<Tensor> {
    same_dtype("Equal", a, b)?;
    let op = if negate { "NotEqual" } else { "Equal" };
    let found = if negate {
        float_compare!(a, b, |x, y| x != y).or_else(|| int_binary!(a, b, |x, y| x != y, bool))
    } else {
        float_compare!(a, b, |x, y| x == y).or_else(|| int_binary!(a, b, |x, y| x == y, bool))
    };
    if let Some(result) = found {
        return result;
    }
    let (shape, v) = match (a.storage(), b.storage()) {
        (Storage::Bool(p), Storage::Bool(q)) => {
            map2(p, a.shape(), q, b.shape(), |x, y| (x == y) != negate)?
        }
        (Storage::Complex64(p), Storage::Complex64(q)) => {
            map2(p, a.shape(), q, b.shape(), |x, y| (x == y) != negate)?
        }
        (Storage::Complex128(p), Storage::Complex128(q)) => {
            map2(p, a.shape(), q, b.shape(), |x, y| (x == y) != negate)?
        }
        (Storage::String(p), Storage::String(q)) => {
            let p: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
            let q: Vec<&[u8]> = q.iter().map(Vec::as_slice).collect();
            map2(&p, a.shape(), &q, b.shape(), |x, y| (x == y) != negate)?
        }
        _ => return unsupported2(op, a),
    };
    make(shape, Storage::Bool(v))
}
