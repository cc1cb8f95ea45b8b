//! Ops on shapes alone (Shape, ShapeN, Size, Rank, BroadcastArgs) and ops that only relabel a
//! tensor's shape (Reshape, ExpandDims, Squeeze): those relabel their input in place when a plan
//! hands them its only reference, else copy the buffer once (a tensor owns its storage).

use std::sync::Arc;

use super::copy::reshape_copy;
use super::{int_dtype_attr, int_tensor, scalar_int, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::{Registry, RunContext, Value};
use crate::kernels::util::{broadcast_shape, int_values, shape_values};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("Shape", shape);
    r.add("ShapeN", shape_n);
    r.add("Size", size);
    r.add("Rank", rank);
    r.add("BroadcastArgs", broadcast_args);
    r.add("Reshape", reshape);
    r.add("ExpandDims", expand_dims);
    r.add("Squeeze", squeeze);
}

fn dims_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

/// The shape of a tensor, or of a variant tensor of encoded ragged tensors (tf.map_fn over a
/// ragged tensor counts its rows so).
fn shape(node: &NodeSpec) -> Made {
    let out = int_dtype_attr(node, "out_type", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        let dims = match inputs.first() {
            Some(Value::Variant(v)) => dims_i64(v.shape()),
            _ => dims_i64(tensor_input(inputs, 0)?.shape()),
        };
        one(int_tensor(out, vec![dims.len()], dims)?)
    }))
}

fn shape_n(node: &NodeSpec) -> Made {
    let out = int_dtype_attr(node, "out_type", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        (0..inputs.len())
            .map(|i| {
                let t = tensor_input(inputs, i)?;
                Ok(Value::tensor(int_tensor(
                    out,
                    vec![t.rank()],
                    dims_i64(t.shape()),
                )?))
            })
            .collect()
    }))
}

fn size(node: &NodeSpec) -> Made {
    let out = int_dtype_attr(node, "out_type", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        one(int_tensor(out, Vec::new(), vec![t.len() as i64])?)
    }))
}

fn rank(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        one(Tensor::scalar(t.rank() as i32))
    }))
}

fn broadcast_args(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let s0 = tensor_input(inputs, 0)?;
        let s1 = tensor_input(inputs, 1)?;
        if s0.rank() != 1 || s1.rank() != 1 {
            return Err(fail("BroadcastArgs: both shapes must be vectors"));
        }
        let a = shape_values(&s0, "input 0")?;
        let b = shape_values(&s1, "input 1")?;
        let out = broadcast_shape(&a, &b)?;
        one(int_tensor(s0.dtype(), vec![out.len()], dims_i64(&out))?)
    }))
}

/// The shape a Reshape asks for, resolving one -1 as TensorFlow does: with a zero among the
/// requested sizes, zero-size dimensions drop out of both products so `[0, -1]` still infers.
pub fn reshape_dims(source: &[usize], sizes: &[i64]) -> KResult<Vec<usize>> {
    let total = source.iter().product::<usize>();
    let unknown: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] == -1).collect();
    if unknown.len() > 1 {
        return Err(fail(format!(
            "only one input size may be -1, not both {} and {}",
            unknown[0], unknown[1]
        )));
    }
    if let Some(i) = sizes.iter().position(|&s| s < -1) {
        return Err(fail(format!(
            "size {i} must be non-negative, not {}",
            sizes[i]
        )));
    }
    let mut dims: Vec<usize> = sizes.iter().map(|&s| s.max(0) as usize).collect();
    let known = dims
        .iter()
        .zip(sizes)
        .filter(|(_, &s)| s > 0)
        .try_fold(1usize, |p, (&d, _)| p.checked_mul(d))
        .ok_or_else(|| fail(format!("requested shape {sizes:?} is too large")))?;
    if let Some(&u) = unknown.first() {
        let wants_zero = sizes.contains(&0);
        let available: usize = source.iter().filter(|&&d| d > 0 || !wants_zero).product();
        dims[u] = available.checked_div(known).unwrap_or(0);
        let exact = dims[u].checked_mul(known) == Some(available);
        if !(exact || source.contains(&0) && wants_zero) {
            return Err(fail(format!(
                "Input to reshape is a tensor with {total} values (shape {source:?}), but the \
                 requested shape {sizes:?} requires a multiple of {known}"
            )));
        }
    }
    if crate::tensor::element_count(&dims) != Some(total) {
        return Err(fail(format!(
            "Input to reshape is a tensor with {total} values (shape {source:?}), but the \
             requested shape {sizes:?} has {}",
            dims.iter().map(|&d| d as u128).product::<u128>()
        )));
    }
    Ok(dims)
}

fn reshape(_: &NodeSpec) -> Made {
    Ok(Box::new(Relabel(|inputs: &[Value], t: &Tensor| {
        let s = tensor_input(inputs, 1)?;
        if s.rank() > 1 {
            return Err(fail(format!(
                "shape must be a vector, got shape {:?}",
                s.shape()
            )));
        }
        reshape_dims(t.shape(), &int_values(&s, "shape")?)
    })))
}

fn expand_dims(_: &NodeSpec) -> Made {
    Ok(Box::new(Relabel(|inputs: &[Value], t: &Tensor| {
        let axis = scalar_int(&*tensor_input(inputs, 1)?, "dim")?;
        let rank = t.rank() as i64;
        if axis < -rank - 1 || axis > rank {
            return Err(fail(format!(
                "dim {axis} is out of range for a tensor of rank {rank}"
            )));
        }
        let at = if axis < 0 { axis + rank + 1 } else { axis } as usize;
        let mut dims = t.shape().to_vec();
        dims.insert(at, 1);
        Ok(dims)
    })))
}

fn squeeze(node: &NodeSpec) -> Made {
    let axes = node.attrs.ints_or("squeeze_dims", &[])?;
    Ok(Box::new(Relabel(move |_: &[Value], t: &Tensor| {
        squeezed(t.shape(), &axes)
    })))
}

/// A kernel whose output is its first input's elements under the shape its closure computes
/// from the inputs: the input itself when the shape is unchanged, the input relabelled in place
/// when the plan hands over the only reference to it, else a relabelled copy.
struct Relabel<F>(F);

impl<F> Relabel<F>
where
    F: Fn(&[Value], &Tensor) -> KResult<Vec<usize>>,
{
    /// The output's shape; holds no reference to the input once it returns.
    fn dims(&self, inputs: &[Value]) -> KResult<Vec<usize>> {
        (self.0)(inputs, &*tensor_input(inputs, 0)?)
    }
}

impl<F> Kernel for Relabel<F>
where
    F: Fn(&[Value], &Tensor) -> KResult<Vec<usize>> + Send + Sync,
{
    fn run(&self, _: &RunContext, inputs: &[Value]) -> KResult {
        let t = tensor_input(inputs, 0)?;
        let dims = (self.0)(inputs, &t)?;
        same_or_copy(inputs, &t, dims)
    }

    fn run_owned(&self, _: &RunContext, inputs: &mut [Value]) -> KResult {
        let dims = self.dims(inputs)?;
        if let Some(Value::Tensor(first)) = inputs.first_mut() {
            if let Some(only) = Arc::get_mut(first) {
                if !only.set_shape(dims) {
                    return Err(fail(
                        "internal: a relabelled shape changed the element count",
                    ));
                }
                return Ok(vec![Value::Tensor(first.clone())]);
            }
        }
        same_or_copy(inputs, &*tensor_input(inputs, 0)?, dims)
    }
}

/// The first input itself when `dims` is its shape, else a relabelled copy of `t`, its tensor.
fn same_or_copy(inputs: &[Value], t: &Tensor, dims: Vec<usize>) -> KResult {
    if dims == t.shape() {
        return Ok(vec![inputs[0].clone()]);
    }
    one(reshape_copy(t, dims)?)
}

fn squeezed(shape: &[usize], axes: &[i64]) -> KResult<Vec<usize>> {
    if axes.is_empty() {
        return Ok(shape.iter().copied().filter(|&d| d != 1).collect());
    }
    let rank = shape.len() as i64;
    let mut drop = vec![false; shape.len()];
    for &a in axes {
        if a < -rank || a >= rank {
            return Err(fail(format!(
                "squeeze dim {a} is out of range for a tensor of rank {rank}"
            )));
        }
        let i = if a < 0 { a + rank } else { a } as usize;
        if shape[i] != 1 {
            return Err(fail(format!(
                "Can not squeeze dim[{i}], expected a dimension of 1, got {} (shape {shape:?})",
                shape[i]
            )));
        }
        drop[i] = true;
    }
    Ok((0..shape.len())
        .filter(|&i| !drop[i])
        .map(|i| shape[i])
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::context::FileAccess;
    use crate::engine::library::Library;

    fn float_data(v: &Value) -> *const f32 {
        match v {
            Value::Tensor(t) => t.values::<f32>().unwrap().as_ptr(),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    #[test]
    fn relabels_in_place_only_what_nothing_else_holds() {
        let registry = crate::kernels::registry();
        let library = Library::new(None, &[], registry, FileAccess::default());
        let ctx = library.context();
        let kernel = reshape(&NodeSpec {
            name: "r",
            op: "Reshape",
            attrs: crate::engine::attrs::Attrs::new(&Default::default()),
            num_inputs: 2,
        })
        .unwrap();
        let x = Tensor::from_vec(vec![2, 3], (0..6).map(|i| i as f32).collect());
        let to = |dims: Vec<i32>| Value::tensor(Tensor::from_vec(vec![dims.len()], dims));
        // The only reference: the output is the input's buffer under the new shape.
        let mut inputs = vec![Value::tensor(x.clone()), to(vec![3, -1])];
        let before = float_data(&inputs[0]);
        let out = kernel.run_owned(&ctx, &mut inputs).unwrap();
        assert_eq!(float_data(&out[0]), before);
        let Value::Tensor(t) = &out[0] else {
            unreachable!()
        };
        assert_eq!(t.shape(), [3, 2]);
        assert_eq!(t.values::<f32>().unwrap(), x.values::<f32>().unwrap());
        // Held elsewhere too (a feed, a constant): a copy, the held tensor unchanged.
        let held = Value::tensor(x.clone());
        let mut inputs = vec![held.clone(), to(vec![6])];
        let out = kernel.run_owned(&ctx, &mut inputs).unwrap();
        assert_ne!(float_data(&out[0]), float_data(&held));
        let (Value::Tensor(kept), Value::Tensor(copy)) = (&held, &out[0]) else {
            unreachable!()
        };
        assert_eq!(kept.shape(), [2, 3]);
        assert_eq!(copy.shape(), [6]);
        // A shape that does not fit is an error either way, and leaves the input as it was.
        let mut inputs = vec![Value::tensor(x), to(vec![4])];
        assert!(kernel.run_owned(&ctx, &mut inputs).is_err());
        let Value::Tensor(t) = &inputs[0] else {
            unreachable!()
        };
        assert_eq!(t.shape(), [2, 3]);
    }

    #[test]
    fn reshape_infers_one_dimension() {
        assert_eq!(reshape_dims(&[2, 3], &[-1]).unwrap(), vec![6]);
        assert_eq!(reshape_dims(&[0, 3], &[0, -1]).unwrap(), vec![0, 3]);
        assert!(reshape_dims(&[2, 3], &[-1, -1]).is_err());
        assert!(reshape_dims(&[2, 3], &[4, -1]).is_err());
        assert!(reshape_dims(&[2, 3], &[5]).is_err());
        assert!(reshape_dims(&[2, 3], &[i64::MAX, 2]).is_err());
    }

    #[test]
    fn squeeze_checks_dims() {
        assert_eq!(squeezed(&[1, 2, 1], &[]).unwrap(), vec![2]);
        assert_eq!(squeezed(&[1, 2, 1], &[-1]).unwrap(), vec![1, 2]);
        assert!(squeezed(&[1, 2, 1], &[1]).is_err());
        assert!(squeezed(&[1, 2, 1], &[3]).is_err());
    }
}
