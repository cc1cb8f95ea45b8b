//! The array kernels: shapes, layout changes (transpose, slicing, padding, tiling), joining and
//! splitting, gather/scatter, sparse tensors, ragged-to-dense, and TensorLists. Every op that
//! only moves data is written once over all dtypes through [`copy`].

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult, Kernel};
use crate::engine::Registry;
use crate::tensor::Tensor;

#[macro_use]
mod copy;
mod cross;
mod fill;
mod gather;
mod join;
mod layout;
mod list;
mod matrix;
mod ragged;
mod ragged_variant;
mod reorder;
mod scatter;
mod search;
mod segment;
mod shape;
mod slice;
mod space;
mod sparse;
mod tensor_array;
mod unique;
mod variant_list;

pub fn register(r: &mut Registry) {
    shape::register(r);
    tensor_array::register(r);
    layout::register(r);
    slice::register(r);
    join::register(r);
    fill::register(r);
    matrix::register(r);
    gather::register(r);
    scatter::register(r);
    space::register(r);
    segment::register(r);
    sparse::register(r);
    cross::register(r);
    reorder::register(r);
    search::register(r);
    unique::register(r);
    ragged::register(r);
    ragged_variant::register(r);
    list::register(r);
}

/// What a factory returns.
type Made = Result<Box<dyn Kernel>, String>;

/// An int32 or int64 output (an `out_type`/`Tidx` attr), an error if a value does not fit.
fn int_tensor(dtype: DType, shape: Vec<usize>, values: Vec<i64>) -> KResult<Tensor> {
    match dtype {
        DType::Int64 => Ok(Tensor::from_vec(shape, values)),
        DType::Int32 => {
            let narrow = values
                .into_iter()
                .map(|v| {
                    i32::try_from(v).map_err(|_| fail(format!("{v} does not fit the int32 output")))
                })
                .collect::<KResult<Vec<i32>>>()?;
            Ok(Tensor::from_vec(shape, narrow))
        }
        other => Err(fail(format!(
            "output type must be int32 or int64, got {other}"
        ))),
    }
}

/// An int dtype attr (`out_type`, `Tidx`, ...) with a default, checked at compile time.
fn int_dtype_attr(
    node: &crate::engine::NodeSpec,
    name: &str,
    default: DType,
) -> Result<DType, String> {
    let dtype = if node.attrs.has(name) {
        node.attrs.dtype(name)?
    } else {
        default
    };
    match dtype {
        DType::Int32 | DType::Int64 => Ok(dtype),
        other => Err(format!("attr {name:?} must be int32 or int64, got {other}")),
    }
}

/// A scalar (or one-element) integer input, as TensorFlow's axis and count inputs are.
fn scalar_int(t: &Tensor, what: &str) -> KResult<i64> {
    let v = crate::kernels::util::int_values(t, what)?;
    match v.as_slice() {
        [x] if t.rank() <= 1 => Ok(*x),
        _ => Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

/// A possibly negative `axis` of a rank-`rank` tensor as an index; unlike the reductions'
/// helper, a scalar has no axis here.
fn axis_index(axis: i64, rank: usize) -> KResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(fail(format!(
            "axis {axis} is out of range for a tensor of rank {rank}"
        )));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// The elements of a tensor of any integer dtype as i64 (SplitV's sizes may be int8).
fn any_ints(t: &Tensor, what: &str) -> KResult<Vec<i64>> {
    use crate::tensor::Storage as S;
    Ok(match t.storage() {
        S::Int8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        S::Int16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        S::Int32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        S::Int64(v) => v.clone(),
        S::UInt8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        S::UInt16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        S::UInt32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        _ => {
            return Err(fail(format!(
                "{what} must be an integer tensor, got {}",
                t.dtype()
            )))
        }
    })
}

#[cfg(test)]
pub(super) mod test_util {
    use std::collections::HashMap;

    use crate::engine::context::FileAccess;
    use crate::engine::kernel::{fail, KResult, NodeSpec};
    use crate::engine::library::Library;
    use crate::engine::Value;
    use crate::protos::attr_value::Value as A;
    use crate::protos::AttrValue;

    /// Runs `op` with `attrs` on `inputs`, as the executor would (for inputs that are not all
    /// tensors, which `run_node` cannot pass).
    pub fn run(op: &str, attrs: &[(&str, A)], inputs: Vec<Value>) -> KResult {
        let map: HashMap<String, AttrValue> = attrs
            .iter()
            .map(|(k, v)| {
                let value = Some(v.clone());
                (k.to_string(), AttrValue { value })
            })
            .collect();
        let registry = crate::kernels::registry();
        let spec = NodeSpec {
            name: "n",
            op,
            attrs: crate::engine::attrs::Attrs::new(&map),
            num_inputs: inputs.len(),
        };
        let info = registry
            .get(op)
            .ok_or_else(|| fail(format!("no op {op}")))?;
        let kernel = (info.factory)(&spec).map_err(fail)?;
        let library = Library::new(None, &[], registry.clone(), FileAccess::default());
        let ctx = library.context();
        kernel.run(&ctx, &inputs)
    }
}
