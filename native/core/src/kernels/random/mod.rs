//! Random ops with TensorFlow's values: its Philox-4x32-10 generator ([`philox`]) and its ways of
//! turning the generator's words into numbers ([`dist`]).
//!
//! - Stateless ops (`StatelessRandom*`, V1 and V2) start from a key and counter that depend only
//!   on their seed or key/counter inputs ([`stateless`]).
//! - Seeded stateful ops (`RandomUniform`, `Multinomial`, ...) keep one generator per node of a
//!   loaded model, and the ops of `tf.random.Generator` keep theirs in a resource variable
//!   ([`stateful`]).

pub mod dist;
pub mod philox;
mod stateful;
mod stateless;

use crate::engine::kernel::{fail, KResult, NodeSpec, Registry};
use crate::kernels::util::shape_values;
use crate::tensor::{element_count, Storage, Tensor};
use crate::DType;

/// TensorFlow's algorithm ids; "auto select" is Philox on the CPU.
pub(crate) const PHILOX: i64 = 1;
pub(crate) const THREEFRY: i64 = 2;
pub(crate) const AUTO_SELECT: i64 = 3;

pub fn register(r: &mut Registry) {
    stateless::register(r);
    stateful::register(r);
}

type Made = Result<Box<dyn crate::engine::kernel::Kernel>, String>;

/// The node's dtype attr `name`, checked against what TensorFlow's CPU kernels take.
fn dtype_attr(
    node: &NodeSpec,
    name: &str,
    allowed: impl Fn(DType) -> bool,
) -> Result<DType, String> {
    let dtype = node.attrs.dtype(name)?;
    if allowed(dtype) {
        Ok(dtype)
    } else {
        Err(format!(
            "{}: dtype {dtype} is not supported by TensorFlow's CPU kernel",
            node.op
        ))
    }
}

/// An output shape given as a vector of int32 or int64, and its element count.
fn output_shape(t: &Tensor, op: &str) -> KResult<(Vec<usize>, usize)> {
    if t.rank() > 1 {
        return Err(fail(format!(
            "{op}: shape must be a vector of int32 or int64, got shape {:?}",
            t.shape()
        )));
    }
    let dims = shape_values(t, &format!("{op}: shape"))?;
    let count = checked_count(&dims)?;
    Ok((dims, count))
}

/// The element count of an output shape, an error past what any buffer could hold.
fn checked_count(shape: &[usize]) -> KResult<usize> {
    const LIMIT: usize = isize::MAX as usize / 32;
    element_count(shape)
        .filter(|&n| n <= LIMIT)
        .ok_or_else(|| fail(format!("output shape {shape:?} is too large")))
}

/// A scalar integer input of any integer dtype, as its 64-bit pattern (sign-extended).
fn scalar_bits(t: &Tensor, what: &str) -> KResult<u64> {
    if t.rank() != 0 {
        return Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        )));
    }
    let bits = match t.storage() {
        Storage::Int32(v) => v.first().map(|&x| i64::from(x) as u64),
        Storage::Int64(v) => v.first().map(|&x| x as u64),
        Storage::UInt32(v) => v.first().map(|&x| u64::from(x)),
        Storage::UInt64(v) => v.first().copied(),
        _ => None,
    };
    bits.ok_or_else(|| fail(format!("{what} must be an integer, got {}", t.dtype())))
}

/// A `[minval, maxval)` range given as two scalars; TensorFlow requires minval < maxval.
fn bounds(minval: &Tensor, maxval: &Tensor, op: &str) -> KResult<(i64, i64)> {
    let low = scalar_bits(minval, &format!("{op}: minval"))? as i64;
    let high = scalar_bits(maxval, &format!("{op}: maxval"))? as i64;
    if low >= high {
        return Err(fail(format!(
            "{op}: Need minval < maxval, got {low} >= {high}"
        )));
    }
    Ok((low, high))
}

/// Multinomial's logits widened to f64 (with the dtype's most negative finite value), its
/// (batch, classes), and the number of samples, checked as TensorFlow checks them.
struct Logits {
    values: Vec<f64>,
    lowest: f64,
    batch: usize,
    classes: usize,
    samples: usize,
}

fn logits(logits: &Tensor, num_samples: &Tensor, op: &str) -> KResult<Logits> {
    let &[batch, classes] = logits.shape() else {
        return Err(fail(format!(
            "{op}: logits should be a matrix, got shape {:?}",
            logits.shape()
        )));
    };
    if num_samples.rank() != 0 {
        return Err(fail(format!(
            "{op}: num_samples should be a scalar, got shape {:?}",
            num_samples.shape()
        )));
    }
    let samples = scalar_bits(num_samples, &format!("{op}: num_samples"))? as i64;
    let samples = usize::try_from(samples).map_err(|_| {
        fail(format!(
            "{op}: num_samples should be non-negative, got {samples}"
        ))
    })?;
    if classes == 0 {
        return Err(fail(format!("{op}: num_classes should be positive, got 0")));
    }
    checked_count(&[batch, samples, 2])?;
    let (values, lowest) = match logits.storage() {
        Storage::Float32(v) => (
            v.iter().map(|&x| f64::from(x)).collect(),
            f64::from(f32::MIN),
        ),
        Storage::Float64(v) => (v.clone(), f64::MIN),
        Storage::Float16(v) => (
            v.iter()
                .map(|&b| half::f16::from_bits(b).to_f64())
                .collect(),
            half::f16::MIN.to_f64(),
        ),
        Storage::BFloat16(v) => (
            v.iter()
                .map(|&b| half::bf16::from_bits(b).to_f64())
                .collect(),
            half::bf16::MIN.to_f64(),
        ),
        _ => {
            return Err(fail(format!(
                "{op}: logits must be floats, got {}",
                logits.dtype()
            )))
        }
    };
    Ok(Logits {
        values,
        lowest,
        batch,
        classes,
        samples,
    })
}

/// The samples of [`dist::multinomial`] as a `[batch, samples]` tensor of `dtype`.
fn multinomial_output(gen: &philox::Philox, logits: &Logits, dtype: DType) -> KResult<Tensor> {
    let indices = dist::multinomial(
        gen,
        &logits.values,
        logits.classes,
        logits.samples,
        logits.lowest,
    );
    let storage = match dtype {
        DType::Int32 => Storage::Int32(indices.into_iter().map(|i| i as i32).collect()),
        _ => Storage::Int64(indices),
    };
    crate::kernels::util::make(vec![logits.batch, logits.samples], storage)
}

fn index_dtype(d: DType) -> bool {
    matches!(d, DType::Int32 | DType::Int64)
}
