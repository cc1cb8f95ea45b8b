//! Searching: Unique and UniqueWithCounts (values in order of first occurrence, as
//! TensorFlow's hash-table kernel yields them; 0.0 and -0.0 are one value and every NaN is
//! its own, since NaN never equals itself), and Where (coordinates of the true or non-zero
//! elements, row-major).

use std::collections::HashMap;
use std::hash::Hash;

use super::{int_dtype_attr, int_tensor, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::{Registry, Value};
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Unique", |n| unique_op(n, false));
    r.add("UniqueWithCounts", |n| unique_op(n, true));
    r.add("Where", where_op);
}

/// The distinct values of `v` in order of first occurrence, each element's position among
/// them, and each value's count. A `None` key (NaN) never matches another element.
fn unique_by<'a, T: Clone, K: Eq + Hash>(
    v: &'a [T],
    key: impl Fn(&'a T) -> Option<K>,
) -> (Vec<T>, Vec<i64>, Vec<i64>) {
    let mut seen: HashMap<K, usize> = HashMap::with_capacity(v.len());
    let mut values = Vec::new();
    let mut positions = Vec::with_capacity(v.len());
    let mut counts: Vec<i64> = Vec::new();
    for x in v {
        let slot = match key(x) {
            Some(k) => *seen.entry(k).or_insert(values.len()),
            None => values.len(),
        };
        if slot == values.len() {
            values.push(x.clone());
            counts.push(0);
        }
        counts[slot] += 1;
        positions.push(slot as i64);
    }
    (values, positions, counts)
}

/// Float bits as a key: -0.0 as 0.0, NaN as none.
fn float_key<B: From<u8> + PartialEq>(bits: B, is_nan: bool, is_zero: bool) -> Option<B> {
    if is_nan {
        None
    } else if is_zero {
        Some(B::from(0))
    } else {
        Some(bits)
    }
}

fn f32_key(x: f32) -> Option<u32> {
    float_key(x.to_bits(), x.is_nan(), x == 0.0)
}

fn f64_key(x: f64) -> Option<u64> {
    float_key(x.to_bits(), x.is_nan(), x == 0.0)
}

/// Unique over any storage: (values, positions, counts).
fn unique_storage(s: &Storage) -> KResult<(Storage, Vec<i64>, Vec<i64>)> {
    macro_rules! exact {
        ($variant:ident, $v:expr) => {{
            let (u, p, c) = unique_by($v, |x| Some(x.clone()));
            (Storage::$variant(u), p, c)
        }};
    }
    Ok(match s {
        Storage::Float16(v) => {
            let (u, p, c) = unique_by(v, |&b| {
                let x = half::f16::from_bits(b);
                float_key(b, x.is_nan(), x.to_f32() == 0.0)
            });
            (Storage::Float16(u), p, c)
        }
        Storage::BFloat16(v) => {
            let (u, p, c) = unique_by(v, |&b| {
                let x = half::bf16::from_bits(b);
                float_key(b, x.is_nan(), x.to_f32() == 0.0)
            });
            (Storage::BFloat16(u), p, c)
        }
        Storage::Float32(v) => {
            let (u, p, c) = unique_by(v, |&x| f32_key(x));
            (Storage::Float32(u), p, c)
        }
        Storage::Float64(v) => {
            let (u, p, c) = unique_by(v, |&x| f64_key(x));
            (Storage::Float64(u), p, c)
        }
        Storage::Complex64(v) => {
            let (u, p, c) = unique_by(v, |&[a, b]| Some((f32_key(a)?, f32_key(b)?)));
            (Storage::Complex64(u), p, c)
        }
        Storage::Complex128(v) => {
            let (u, p, c) = unique_by(v, |&[a, b]| Some((f64_key(a)?, f64_key(b)?)));
            (Storage::Complex128(u), p, c)
        }
        Storage::UInt16(v) => exact!(UInt16, v),
        Storage::Int8(v) => exact!(Int8, v),
        Storage::Int16(v) => exact!(Int16, v),
        Storage::Int32(v) => exact!(Int32, v),
        Storage::Int64(v) => exact!(Int64, v),
        Storage::UInt8(v) => exact!(UInt8, v),
        Storage::UInt32(v) => exact!(UInt32, v),
        Storage::UInt64(v) => exact!(UInt64, v),
        Storage::Bool(v) => exact!(Bool, v),
        Storage::String(v) => {
            let (u, p, c) = unique_by(v, |x| Some(x.as_slice()));
            (Storage::String(u), p, c)
        }
    })
}

fn unique_op(node: &NodeSpec, with_counts: bool) -> Made {
    let idx_type = int_dtype_attr(node, "out_idx", DType::Int32)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        if x.rank() != 1 {
            return Err(fail(format!(
                "unique expects a 1D vector, got shape {:?}",
                x.shape()
            )));
        }
        let (values, positions, counts) = unique_storage(x.storage())?;
        let n = values.len();
        let mut out = vec![
            Value::tensor(make(vec![n], values)?),
            Value::tensor(int_tensor(idx_type, vec![positions.len()], positions)?),
        ];
        if with_counts {
            out.push(Value::tensor(int_tensor(idx_type, vec![n], counts)?));
        }
        Ok(out)
    }))
}

/// Which elements are true or non-zero (NaN counts as non-zero).
fn truth(s: &Storage) -> KResult<Vec<bool>> {
    Ok(match s {
        Storage::Bool(v) => v.clone(),
        Storage::Float16(v) | Storage::BFloat16(v) => v.iter().map(|&b| b & 0x7fff != 0).collect(),
        Storage::UInt16(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::Float32(v) => v.iter().map(|&x| x != 0.0).collect(),
        Storage::Float64(v) => v.iter().map(|&x| x != 0.0).collect(),
        Storage::Int8(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::Int16(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::Int32(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::Int64(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::UInt8(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::UInt32(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::UInt64(v) => v.iter().map(|&x| x != 0).collect(),
        Storage::Complex64(v) => v.iter().map(|c| c[0] != 0.0 || c[1] != 0.0).collect(),
        Storage::Complex128(v) => v.iter().map(|c| c[0] != 0.0 || c[1] != 0.0).collect(),
        Storage::String(_) => return Err(fail("Where is not defined for strings")),
    })
}

fn where_op(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let rank = x.rank();
        if !(1..=8).contains(&rank) {
            return Err(fail(format!(
                "input must have rank 1 to 8, got shape {:?}",
                x.shape()
            )));
        }
        let hits = truth(x.storage())?;
        one(coordinates(&hits, x.shape()))
    }))
}

/// The `[count, rank]` int64 coordinates of the true entries of `hits` (of `shape`).
fn coordinates(hits: &[bool], shape: &[usize]) -> Tensor {
    let mut out = Vec::new();
    let mut index = vec![0usize; shape.len()];
    let mut count = 0;
    for &h in hits {
        if h {
            out.extend(index.iter().map(|&i| i as i64));
            count += 1;
        }
        super::copy::advance(&mut index, shape);
    }
    Tensor::from_vec(vec![count, shape.len()], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_keeps_first_occurrence_order() {
        let (u, p, c) = unique_by(&[3, 1, 3, 2], |&x| Some(x));
        assert_eq!((u, p, c), (vec![3, 1, 2], vec![0, 1, 0, 2], vec![2, 1, 1]));
        let (u, _, _) = unique_by(&[f32::NAN, f32::NAN, 0.0, -0.0], |&x| f32_key(x));
        assert_eq!(u.len(), 3);
    }

    #[test]
    fn where_lists_coordinates() {
        let t = coordinates(&[false, true, true, false], &[2, 2]);
        assert_eq!(t.shape(), &[2, 2]);
        assert_eq!(t.values::<i64>().unwrap(), &[0, 1, 1, 0]);
    }
}
