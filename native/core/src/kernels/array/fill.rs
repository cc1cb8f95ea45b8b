//! Tensors made from scalars: Fill, ZerosLike, OnesLike, Range, LinSpace.
//!
//! Range and LinSpace on floating types compute in f64 and round after every operation to the
//! output type, which gives exactly the result of doing each operation in that type (f64 holds
//! more than twice the bits of f32 and the half types, so the double rounding is harmless).

use super::copy::{ones, zeros};
use super::{scalar_int, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{make, shape_values};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Fill", fill);
    r.add("ZerosLike", zeros_like);
    r.add("OnesLike", ones_like);
    r.add("Range", range);
    r.add("LinSpace", lin_space);
}

/// A scalar input (a one-element vector too, as TensorFlow's legacy kernels accept).
fn scalar_input(t: &Tensor, what: &str) -> KResult<()> {
    if t.len() != 1 || t.rank() > 1 {
        return Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        )));
    }
    Ok(())
}

fn fill(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let dims_t = tensor_input(inputs, 0)?;
        if dims_t.rank() > 1 {
            return Err(fail(format!(
                "dims must be a vector, got shape {:?}",
                dims_t.shape()
            )));
        }
        let dims = shape_values(&dims_t, "dims")?;
        let value = tensor_input(inputs, 1)?;
        if value.rank() != 0 {
            return Err(fail(format!(
                "value must be a scalar, got shape {:?}",
                value.shape()
            )));
        }
        let n = super::copy::checked_count(&dims)?;
        let storage = map_storage!(value.storage(), v => super::copy::repeat_first(v, n));
        one(make(dims, storage)?)
    }))
}

fn zeros_like(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        one(make(t.shape().to_vec(), zeros(t.dtype(), t.len()))?)
    }))
}

fn ones_like(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let storage = ones(t.dtype(), t.len())
            .ok_or_else(|| fail(format!("OnesLike is not defined for {}", t.dtype())))?;
        one(make(t.shape().to_vec(), storage)?)
    }))
}

/// The rounding of f64 values to a floating dtype, None for other dtypes.
fn rounding(dtype: DType) -> Option<fn(f64) -> f64> {
    Some(match dtype {
        DType::Float64 => |x| x,
        DType::Float32 => |x| f64::from(x as f32),
        DType::Float16 => |x| half::f16::from_f64(x).to_f64(),
        DType::BFloat16 => |x| half::bf16::from_f64(x).to_f64(),
        _ => return None,
    })
}

/// The one element of a floating tensor as f64.
fn float_scalar(t: &Tensor) -> Option<f64> {
    Some(match t.storage() {
        Storage::Float16(v) => half::f16::from_bits(*v.first()?).to_f64(),
        Storage::BFloat16(v) => half::bf16::from_bits(*v.first()?).to_f64(),
        Storage::Float32(v) => f64::from(*v.first()?),
        Storage::Float64(v) => *v.first()?,
        _ => return None,
    })
}

/// f64 values (already rounded to `dtype`) as a storage of `dtype`.
fn float_storage(dtype: DType, v: Vec<f64>) -> KResult<Storage> {
    Ok(match dtype {
        DType::Float64 => Storage::Float64(v),
        DType::Float32 => Storage::Float32(v.into_iter().map(|x| x as f32).collect()),
        DType::Float16 => Storage::Float16(
            v.into_iter()
                .map(|x| half::f16::from_f64(x).to_bits())
                .collect(),
        ),
        DType::BFloat16 => Storage::BFloat16(
            v.into_iter()
                .map(|x| half::bf16::from_f64(x).to_bits())
                .collect(),
        ),
        other => return Err(fail(format!("{other} is not a floating type"))),
    })
}

/// The one element of an integer tensor as i128 (wide enough for any difference of two).
fn int_scalar(t: &Tensor) -> Option<i128> {
    Some(match t.storage() {
        Storage::Int8(v) => i128::from(*v.first()?),
        Storage::Int16(v) => i128::from(*v.first()?),
        Storage::Int32(v) => i128::from(*v.first()?),
        Storage::Int64(v) => i128::from(*v.first()?),
        Storage::UInt8(v) => i128::from(*v.first()?),
        Storage::UInt16(v) => i128::from(*v.first()?),
        Storage::UInt32(v) => i128::from(*v.first()?),
        Storage::UInt64(v) => i128::from(*v.first()?),
        _ => return None,
    })
}

fn range(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let start = tensor_input(inputs, 0)?;
        let limit = tensor_input(inputs, 1)?;
        let delta = tensor_input(inputs, 2)?;
        for (t, what) in [(&start, "start"), (&limit, "limit"), (&delta, "delta")] {
            scalar_input(t, what)?;
            if t.dtype() != start.dtype() {
                return Err(fail(format!("{what} must be {}", start.dtype())));
            }
        }
        if let (Some(a), Some(b), Some(d)) =
            (int_scalar(&start), int_scalar(&limit), int_scalar(&delta))
        {
            check_range(a as f64, b as f64, d as f64)?;
            let count = (b - a).unsigned_abs().div_ceil(d.unsigned_abs());
            let count = usize::try_from(count).map_err(|_| fail("Range is too long"))?;
            super::copy::checked_count(&[count])?;
            let values: Vec<i64> = (0..count as i128).map(|i| (a + i * d) as i64).collect();
            let t = Tensor::from_vec(vec![count], values);
            return one(cast_int(t, start.dtype())?);
        }
        let (Some(a), Some(b), Some(d), Some(r)) = (
            float_scalar(&start),
            float_scalar(&limit),
            float_scalar(&delta),
            rounding(start.dtype()),
        ) else {
            return Err(fail(format!("Range is not defined for {}", start.dtype())));
        };
        check_range(a, b, d)?;
        let span = r(r(b - a) / d).abs().ceil();
        if !(span.is_finite() && span < 2f64.powi(63)) {
            return Err(fail(format!(
                "Requires ((limit - start) / delta) <= 2**63: {a}/{b}/{d}"
            )));
        }
        let count = span as usize;
        super::copy::checked_count(&[count])?;
        let values = (0..count).map(|i| r(a + r(r(i as f64) * d))).collect();
        one(make(vec![count], float_storage(start.dtype(), values)?)?)
    }))
}

fn check_range(start: f64, limit: f64, delta: f64) -> KResult<()> {
    if delta == 0.0 {
        return Err(fail("Requires delta != 0"));
    }
    if delta > 0.0 && start > limit {
        return Err(fail(format!(
            "Requires start <= limit when delta > 0: {start}/{limit}"
        )));
    }
    if delta < 0.0 && start < limit {
        return Err(fail(format!(
            "Requires start >= limit when delta < 0: {start}/{limit}"
        )));
    }
    Ok(())
}

/// An int64 tensor converted to another integer dtype (its values fit: they lie between two
/// values of that dtype).
fn cast_int(t: Tensor, dtype: DType) -> KResult<Tensor> {
    let shape = t.shape().to_vec();
    let v = t.values::<i64>().unwrap_or_default();
    let storage = match dtype {
        DType::Int64 => Storage::Int64(v.to_vec()),
        DType::Int32 => Storage::Int32(v.iter().map(|&x| x as i32).collect()),
        DType::Int16 => Storage::Int16(v.iter().map(|&x| x as i16).collect()),
        DType::Int8 => Storage::Int8(v.iter().map(|&x| x as i8).collect()),
        DType::UInt8 => Storage::UInt8(v.iter().map(|&x| x as u8).collect()),
        DType::UInt16 => Storage::UInt16(v.iter().map(|&x| x as u16).collect()),
        DType::UInt32 => Storage::UInt32(v.iter().map(|&x| x as u32).collect()),
        DType::UInt64 => Storage::UInt64(v.iter().map(|&x| x as u64).collect()),
        other => return Err(fail(format!("{other} is not an integer type"))),
    };
    make(shape, storage)
}

fn lin_space(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let start = tensor_input(inputs, 0)?;
        let stop = tensor_input(inputs, 1)?;
        let count = scalar_int(&*tensor_input(inputs, 2)?, "num")?;
        for (t, what) in [(&start, "start"), (&stop, "stop")] {
            if t.rank() != 0 {
                return Err(fail(format!(
                    "{what} must be a scalar, got shape {:?}",
                    t.shape()
                )));
            }
        }
        if count <= 0 {
            return Err(fail(format!("Requires num > 0: {count}")));
        }
        let (Some(a), Some(b), Some(r)) = (
            float_scalar(&start),
            float_scalar(&stop),
            rounding(start.dtype()),
        ) else {
            return Err(fail(format!(
                "LinSpace is not defined for {}",
                start.dtype()
            )));
        };
        let n = count as usize;
        super::copy::checked_count(&[n])?;
        let step = if n > 1 {
            r(r(b - a) / (n - 1) as f64)
        } else {
            0.0
        };
        let mut values: Vec<f64> = (0..n).map(|i| r(a + r(step * i as f64))).collect();
        if let Some(last) = values.last_mut() {
            *last = if n > 1 { b } else { a };
        }
        one(make(vec![n], float_storage(start.dtype(), values)?)?)
    }))
}
