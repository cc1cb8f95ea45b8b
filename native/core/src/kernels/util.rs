//! Helpers every kernel family shares: broadcasting, axes, shapes read from tensors, and
//! float16/bfloat16 widening (kernels compute half types in f32, as TensorFlow's CPU kernels
//! round each op's result back to the half type).

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::tensor::{element_count, Storage, Tensor};

/// The broadcast of two shapes (numpy's rule, which TensorFlow's binary ops follow).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> KResult<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for (i, slot) in out.iter_mut().enumerate() {
        let x = dim_from_end(a, rank - 1 - i);
        let y = dim_from_end(b, rank - 1 - i);
        *slot = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(fail(format!("Incompatible shapes: {a:?} vs. {b:?}"))),
        };
    }
    Ok(out)
}

fn dim_from_end(shape: &[usize], from_end: usize) -> usize {
    if from_end < shape.len() {
        shape[shape.len() - 1 - from_end]
    } else {
        1
    }
}

/// Row-major strides of `shape` as seen from a broadcast `out` shape: 0 where the dimension is
/// broadcast (or absent), so `sum(index[i] * strides[i])` is the source element.
pub fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; out.len()];
    let mut step = 1;
    for i in (0..shape.len()).rev() {
        let o = out.len() - shape.len() + i;
        strides[o] = if shape[i] == 1 && out[o] != 1 {
            0
        } else {
            step
        };
        step *= shape[i];
    }
    strides
}

/// The source offsets of every element of `out` in row-major order, for a tensor of `shape`
/// broadcast to `out`.
pub fn broadcast_offsets(shape: &[usize], out: &[usize]) -> Vec<usize> {
    strided_offsets(&broadcast_strides(shape, out), out)
}

/// The offsets `sum(index[d] * strides[d])` of every index of `out` in row-major order.
pub fn strided_offsets(strides: &[usize], out: &[usize]) -> Vec<usize> {
    let count = element_count(out).unwrap_or(0);
    let mut offsets = Vec::with_capacity(count);
    let mut index = vec![0usize; out.len()];
    let mut offset = 0usize;
    for _ in 0..count {
        offsets.push(offset);
        for d in (0..out.len()).rev() {
            index[d] += 1;
            offset += strides[d];
            if index[d] < out[d] {
                break;
            }
            offset -= strides[d] * index[d];
            index[d] = 0;
        }
    }
    offsets
}

/// `f` applied elementwise to `a` and `b` broadcast together; a fast path when the shapes are
/// equal or one side is a scalar.
pub fn broadcast_map<A: Copy, B: Copy, O>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    f: impl Fn(A, B) -> O,
) -> KResult<(Vec<usize>, Vec<O>)> {
    if a_shape == b_shape {
        return Ok((
            a_shape.to_vec(),
            a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect(),
        ));
    }
    let out = broadcast_shape(a_shape, b_shape)?;
    if b.len() == 1 && out == a_shape {
        let y = b[0];
        return Ok((out, a.iter().map(|&x| f(x, y)).collect()));
    }
    if a.len() == 1 && out == b_shape {
        let x = a[0];
        return Ok((out, b.iter().map(|&y| f(x, y)).collect()));
    }
    let ia = broadcast_offsets(a_shape, &out);
    let ib = broadcast_offsets(b_shape, &out);
    Ok((
        out,
        ia.iter().zip(&ib).map(|(&i, &j)| f(a[i], b[j])).collect(),
    ))
}

/// A possibly negative `axis` of a rank-`rank` tensor as an index.
pub fn normalize_axis(axis: i64, rank: usize) -> KResult<usize> {
    let r = rank as i64;
    // A scalar's only axis is 0 (TensorFlow's reductions accept it).
    if axis < -r || axis >= r.max(1) {
        return Err(fail(format!(
            "axis {axis} is out of range for a tensor of rank {rank}"
        )));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// The integer elements of an int32 or int64 tensor (shapes, axes, indices given as inputs).
pub fn int_values(t: &Tensor, what: &str) -> KResult<Vec<i64>> {
    match t.storage() {
        Storage::Int32(v) => Ok(v.iter().map(|&x| i64::from(x)).collect()),
        Storage::Int64(v) => Ok(v.clone()),
        _ => Err(fail(format!(
            "{what} must be int32 or int64, got {}",
            t.dtype()
        ))),
    }
}

/// A shape given as a tensor's values: every dimension must be non-negative.
pub fn shape_values(t: &Tensor, what: &str) -> KResult<Vec<usize>> {
    int_values(t, what)?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| fail(format!("{what} has a negative dimension {d}")))
        })
        .collect()
}

/// The elements of a float16 or bfloat16 tensor widened to f32; None for other dtypes.
pub fn half_to_f32(t: &Tensor) -> Option<Vec<f32>> {
    match t.storage() {
        Storage::Float16(v) => Some(
            v.iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect(),
        ),
        Storage::BFloat16(v) => Some(
            v.iter()
                .map(|&b| half::bf16::from_bits(b).to_f32())
                .collect(),
        ),
        _ => None,
    }
}

/// f32 values rounded to `dtype` (float16 or bfloat16, round to nearest even), as a storage.
pub fn f32_to_half(dtype: DType, values: &[f32]) -> Option<Storage> {
    match dtype {
        DType::Float16 => Some(Storage::Float16(
            values
                .iter()
                .map(|&x| half::f16::from_f32(x).to_bits())
                .collect(),
        )),
        DType::BFloat16 => Some(Storage::BFloat16(
            values
                .iter()
                .map(|&x| half::bf16::from_f32(x).to_bits())
                .collect(),
        )),
        _ => None,
    }
}

/// A tensor of `shape` over `storage`, whose count the kernel computed from the same shape.
pub fn make(shape: Vec<usize>, storage: Storage) -> KResult<Tensor> {
    let count = storage.len();
    Tensor::new(shape.clone(), storage).ok_or_else(|| {
        fail(format!(
            "internal: {count} elements do not fill shape {shape:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shape(&[2, 1, 3], &[4, 1]).unwrap(), vec![2, 4, 3]);
        assert!(broadcast_shape(&[2, 3], &[4]).is_err());
        let (shape, sums) =
            broadcast_map(&[1, 2, 3], &[3, 1], &[10, 20], &[2], |a, b| a + b).unwrap();
        assert_eq!(shape, vec![3, 2]);
        assert_eq!(sums, vec![11, 21, 12, 22, 13, 23]);
    }

    #[test]
    fn axes_may_count_from_the_end() {
        assert_eq!(normalize_axis(-1, 3).unwrap(), 2);
        assert!(normalize_axis(3, 3).is_err());
        assert!(normalize_axis(-4, 3).is_err());
    }
}
