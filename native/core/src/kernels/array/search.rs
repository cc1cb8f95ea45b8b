//! Where values fall and sequence reversal: LowerBound/UpperBound (tf.searchsorted, one binary
//! search per value in its row), Bucketize (the number of float boundaries <= each value) and
//! ReverseSequence. Comparisons are C++'s, as TensorFlow's kernels make them with
//! std::lower_bound and std::upper_bound: a NaN compares false with everything, so a NaN
//! value's lower bound is 0 and its upper bound the end of the row. Values are compared
//! widened (floats as f64, integers as i64), which keeps every order exact.

use super::copy::{gather_storage, if_empty, strides};
use super::segment::{widen, Wide};
use super::{int_dtype_attr, int_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{int_values, make};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("LowerBound", |n| bound_op(n, false));
    r.add("UpperBound", |n| bound_op(n, true));
    r.add("Bucketize", bucketize_op);
    r.add("ReverseSequence", reverse_sequence_op);
}

/// The insertion point of `v` in `row`: before equal elements, or after them (`upper`).
fn insertion<T: PartialOrd>(row: &[T], v: &T, upper: bool) -> usize {
    if upper {
        // C++'s `!(value < element)`: true for every element when the value is NaN.
        row.partition_point(|x| v.partial_cmp(x) != Some(std::cmp::Ordering::Less))
    } else {
        row.partition_point(|x| x < v)
    }
}

fn bound_op(node: &NodeSpec, upper: bool) -> Made {
    let out_type = int_dtype_attr(node, "out_type", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        let rows = tensor_input(inputs, 0)?;
        let values = tensor_input(inputs, 1)?;
        let (&[b, n], &[vb, m]) = (rows.shape(), values.shape()) else {
            return Err(fail(format!(
                "sorted_inputs and values must be 2-D, got shapes {:?} and {:?}",
                rows.shape(),
                values.shape()
            )));
        };
        if b != vb {
            return Err(fail(format!(
                "Leading dim_size of both tensors must match, got {b} and {vb}"
            )));
        }
        if out_type == DType::Int32 && n > i32::MAX as usize {
            return Err(fail(
                "trailing dim_size must be less than 2147483647 for int32",
            ));
        }
        if rows.dtype() != values.dtype() {
            return Err(fail(format!(
                "sorted_inputs and values must have one dtype, got {} and {}",
                rows.dtype(),
                values.dtype()
            )));
        }
        let out: Vec<i64> = match (widen(&rows)?, widen(&values)?) {
            (Wide::F(r), Wide::F(v)) => bounds(&r, &v, n, m, upper),
            (Wide::I(r), Wide::I(v)) => bounds(&r, &v, n, m, upper),
            (Wide::U(r), Wide::U(v)) => bounds(&r, &v, n, m, upper),
            _ => return Err(fail(format!("{} is not ordered", rows.dtype()))),
        };
        one(int_tensor(out_type, vec![b, m], out)?)
    }))
}

fn bounds<T: PartialOrd>(rows: &[T], values: &[T], n: usize, m: usize, upper: bool) -> Vec<i64> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let b = i / m.max(1);
            let row = rows.get(b * n..(b + 1) * n).unwrap_or(&[]);
            insertion(row, v, upper) as i64
        })
        .collect()
}

fn bucketize_op(node: &NodeSpec) -> Made {
    let edges = node.attrs.floats("boundaries")?;
    if edges.windows(2).any(|w| w[1] < w[0]) {
        return Err("Expected sorted boundaries".into());
    }
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        // A float64 input compares in float64; any other is converted to float32 first, as
        // C++ converts the two sides of `value < boundary`.
        let wide_edges: Vec<f64> = edges.iter().map(|&e| f64::from(e)).collect();
        let as_f32 = |v: f64| f64::from(v as f32);
        let values: Vec<f64> = match widen(&x)? {
            Wide::F(v) if x.dtype() == DType::Float64 => v,
            Wide::F(v) => v.into_iter().map(as_f32).collect(),
            Wide::I(v) => v.into_iter().map(|i| f64::from(i as f32)).collect(),
            Wide::U(v) => v.into_iter().map(|i| f64::from(i as f32)).collect(),
            Wide::C(_) => return Err(fail("input must be a real number tensor")),
        };
        let out: Vec<i32> = values
            .iter()
            .map(|v| insertion(&wide_edges, v, true) as i32)
            .collect();
        one(Tensor::from_vec(x.shape().to_vec(), out))
    }))
}

fn reverse_sequence_op(node: &NodeSpec) -> Made {
    let seq_dim = node.attrs.int("seq_dim")?;
    let batch_dim = node.attrs.int_or("batch_dim", 0)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let lengths_t = tensor_input(inputs, 1)?;
        let rank = x.rank() as i64;
        if !(0..rank).contains(&batch_dim) {
            return Err(fail(format!(
                "Invalid batch_dim {batch_dim} for an input of rank {rank}"
            )));
        }
        if !(0..rank).contains(&seq_dim) {
            return Err(fail(format!(
                "Invalid seq_dim {seq_dim} for an input of rank {rank}"
            )));
        }
        if seq_dim == batch_dim {
            return Err(fail(format!("seq_dim == batch_dim == {seq_dim}")));
        }
        let (bd, sd) = (batch_dim as usize, seq_dim as usize);
        if lengths_t.rank() != 1 {
            return Err(fail(format!(
                "seq_lengths must be 1-dim, not {}",
                lengths_t.rank()
            )));
        }
        let lengths = int_values(&lengths_t, "seq_lengths")?;
        let shape = x.shape();
        if lengths.len() != shape[bd] {
            return Err(fail(format!(
                "Length of seq_lengths != input.dims({bd}), ({} vs. {})",
                lengths.len(),
                shape[bd]
            )));
        }
        let lengths: Vec<usize> = lengths
            .iter()
            .enumerate()
            .map(|(at, &l)| {
                usize::try_from(l)
                    .ok()
                    .filter(|&l| l <= shape[sd])
                    .ok_or_else(|| {
                        fail(format!(
                            "seq_lens({at}) > input.dims({sd}) or negative, ({l} vs. {})",
                            shape[sd]
                        ))
                    })
            })
            .collect::<KResult<_>>()?;
        if let Some(empty) = if_empty(x.dtype(), shape)? {
            return one(empty);
        }
        let st = strides(shape);
        let count = x.len();
        let offsets: Vec<usize> = (0..count)
            .map(|i| {
                let b = (i / st[bd]) % shape[bd];
                let s = (i / st[sd]) % shape[sd];
                let len = lengths[b];
                if s < len {
                    i - s * st[sd] + (len - 1 - s) * st[sd]
                } else {
                    i
                }
            })
            .collect();
        one(make(
            shape.to_vec(),
            gather_storage(x.storage(), &[offsets])?,
        )?)
    }))
}
