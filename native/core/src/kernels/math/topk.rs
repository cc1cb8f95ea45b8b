//! TopKV2: the k largest entries of each last-axis row, largest first, equal values in index
//! order (NaN above every number). Only the k winners of a row are sorted.

use std::cmp::Ordering;

use super::cast::cast;
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::engine::{Registry, Value};
use crate::kernels::util::{half_to_f32, int_values, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("TopKV2", factory);
}

fn factory(spec: &NodeSpec) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let index_type = if spec.attrs.has("index_type") {
        spec.attrs.dtype("index_type")?
    } else {
        DType::Int32
    };
    Ok(boxed(move |_ctx, inputs| {
        let x = tensor_input(inputs, 0)?;
        let k = tensor_input(inputs, 1)?;
        top_k(&x, &k, index_type)
    }))
}

fn top_k(x: &Tensor, k: &Tensor, index_type: DType) -> KResult {
    let count = match (k.rank(), int_values(k, "k")?.as_slice()) {
        (0, &[count]) => count,
        _ => {
            return Err(fail(format!(
                "k must be a scalar, got shape {:?}",
                k.shape()
            )))
        }
    };
    let width = x.shape().last().copied().unwrap_or(0);
    if count < 0 || x.rank() < 1 || width < count as usize {
        return Err(fail(format!(
            "TopK needs 0 <= k <= the last dimension of an input of rank >= 1: k = {count}, \
             input shape {:?}",
            x.shape()
        )));
    }
    let k = count as usize;
    let index = winners(x, width, k)?;
    let mut shape = x.shape().to_vec();
    if let Some(last) = shape.last_mut() {
        *last = k;
    }
    let values = gather(x, &index, width, k)?;
    let local: Vec<i64> = index.iter().map(|&i| i as i64).collect();
    let indices = cast(
        &make(shape.clone(), Storage::Int64(local))?,
        index_type,
        false,
    )?;
    Ok(vec![
        Value::tensor(make(shape, values)?),
        Value::tensor(indices),
    ])
}

/// Descending by value (NaN, which equals nothing, above everything), then ascending index.
fn order<T: PartialOrd>(keys: &[T], a: usize, b: usize) -> Ordering {
    let (x, y) = (&keys[a], &keys[b]);
    #[allow(clippy::eq_op)]
    let (x_nan, y_nan) = (x != x, y != y);
    let by_value = match y.partial_cmp(x) {
        Some(o) => o,
        None => x_nan.cmp(&y_nan).reverse(),
    };
    by_value.then(a.cmp(&b))
}

/// The in-row indices of each row's k winners, in order.
fn row_winners<T: PartialOrd>(keys: &[T], width: usize, k: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(keys.len() / width.max(1) * k);
    if width == 0 || k == 0 {
        return out;
    }
    let mut idx: Vec<usize> = Vec::with_capacity(width);
    for row in keys.chunks_exact(width) {
        idx.clear();
        idx.extend(0..width);
        if k < width {
            idx.select_nth_unstable_by(k - 1, |&a, &b| order(row, a, b));
            idx.truncate(k);
        }
        idx.sort_unstable_by(|&a, &b| order(row, a, b));
        out.extend_from_slice(&idx);
    }
    out
}

fn winners(x: &Tensor, width: usize, k: usize) -> KResult<Vec<usize>> {
    Ok(match x.storage() {
        Storage::Float32(v) => row_winners(v, width, k),
        Storage::Float64(v) => row_winners(v, width, k),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            row_winners(&half_to_f32(x).unwrap_or_default(), width, k)
        }
        Storage::Int8(v) => row_winners(v, width, k),
        Storage::Int16(v) => row_winners(v, width, k),
        Storage::Int32(v) => row_winners(v, width, k),
        Storage::Int64(v) => row_winners(v, width, k),
        Storage::UInt8(v) => row_winners(v, width, k),
        Storage::UInt16(v) => row_winners(v, width, k),
        Storage::UInt32(v) => row_winners(v, width, k),
        Storage::UInt64(v) => row_winners(v, width, k),
        _ => {
            return Err(fail(format!(
                "TopKV2 does not support {} inputs",
                x.dtype()
            )))
        }
    })
}

fn pick<T: Copy>(v: &[T], index: &[usize], width: usize, k: usize) -> Vec<T> {
    index
        .iter()
        .enumerate()
        .map(|(i, &j)| v[(i / k) * width + j])
        .collect()
}

fn gather(x: &Tensor, index: &[usize], width: usize, k: usize) -> KResult<Storage> {
    macro_rules! arms {
        ($($variant:ident),*) => {
            match x.storage() {
                $(Storage::$variant(v) => Storage::$variant(pick(v, index, width, k)),)*
                _ => return Err(fail(format!("TopKV2 does not support {} inputs", x.dtype()))),
            }
        };
    }
    Ok(arms!(
        Float16, BFloat16, Float32, Float64, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32,
        UInt64
    ))
}
