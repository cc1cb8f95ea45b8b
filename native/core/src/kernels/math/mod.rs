//! The math kernels: elementwise unary and binary ops with broadcasting, casts, selection,
//! activations, softmax and its losses, reductions, scans and top-k.

mod activation;
mod binary;
mod broadcast;
mod cast;
mod compare;
pub mod fast;
mod index;
mod num;
mod reduce;
mod select;
mod softmax;
#[cfg(test)]
mod tests;
mod topk;
mod unary;

use crate::engine::kernel::{fail, KResult};
use crate::engine::Registry;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    unary::register(r);
    binary::register(r);
    compare::register(r);
    cast::register(r);
    select::register(r);
    activation::register(r);
    softmax::register(r);
    reduce::register(r);
    index::register(r);
    topk::register(r);
}

/// The error for a dtype an op has no kernel for.
fn unsupported(op: &str, t: &Tensor) -> KResult<Tensor> {
    Err(fail(format!("{op} does not support {} inputs", t.dtype())))
}

/// Registers `$op` as a one-input op computing `$f(&Tensor) -> KResult<Tensor>`.
macro_rules! register_unary {
    ($r:expr, $op:expr, $f:path) => {
        $r.add($op, |_spec| {
            Ok($crate::engine::kernel::boxed(|_ctx, inputs| {
                let t = $crate::engine::kernel::tensor_input(inputs, 0)?;
                $crate::engine::kernel::one($f(&t)?)
            }))
        })
    };
}

/// Registers `$op` as a two-input op computing `$f(&Tensor, &Tensor) -> KResult<Tensor>`.
macro_rules! register_binary {
    ($r:expr, $op:expr, $f:path) => {
        $r.add($op, |_spec| {
            Ok($crate::engine::kernel::boxed(|_ctx, inputs| {
                let a = $crate::engine::kernel::tensor_input(inputs, 0)?;
                let b = $crate::engine::kernel::tensor_input(inputs, 1)?;
                $crate::engine::kernel::one($f(&a, &b)?)
            }))
        })
    };
}

use {register_binary, register_unary};
