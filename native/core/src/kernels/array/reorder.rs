//! Ops that move whole rows or elements by computed positions: Roll (a per-axis rotation, one
//! [`gather_tensor`]), DynamicPartition (rows split by a partition id) and DynamicStitch /
//! ParallelDynamicStitch (rows merged at given positions, a later position winning over an
//! earlier one, rows nobody writes being zero). Values are never computed on: every dtype.

use super::copy::{gather_storage, gather_tensor, if_empty, prod, strides};
use super::Made;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::{Registry, Value};
use crate::kernels::util::{int_values, make, normalize_axis};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Roll", |_| roll_op());
    r.add("DynamicPartition", partition_op);
    r.add("DynamicStitch", stitch_op);
    r.add("ParallelDynamicStitch", stitch_op);
}

fn roll_op() -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        if t.rank() < 1 {
            return Err(fail("input must be 1-D or higher"));
        }
        let (shift_t, axis_t) = (tensor_input(inputs, 1)?, tensor_input(inputs, 2)?);
        if shift_t.rank() > 1 || axis_t.rank() > 1 || shift_t.shape() != axis_t.shape() {
            return Err(fail(format!(
                "shift and axis must be scalars or vectors of the same size, got shapes {:?} \
                 and {:?}",
                shift_t.shape(),
                axis_t.shape()
            )));
        }
        let shifts = int_values(&shift_t, "shift")?;
        let axes = int_values(&axis_t, "axis")?;
        let shape = t.shape().to_vec();
        let mut total = vec![0i64; shape.len()];
        for (&s, &a) in shifts.iter().zip(&axes) {
            let a = normalize_axis(a, shape.len())?;
            total[a] = total[a].wrapping_add(s);
        }
        if let Some(empty) = if_empty(t.dtype(), &shape)? {
            return one(empty);
        }
        let st = strides(&shape);
        let tables: Vec<Vec<usize>> = shape
            .iter()
            .zip(&st)
            .zip(&total)
            .map(|((&n, &stride), &s)| {
                let shift = s.rem_euclid(n as i64) as usize;
                (0..n).map(|i| ((i + n - shift) % n) * stride).collect()
            })
            .collect();
        one(gather_tensor(&t, &tables)?)
    }))
}

fn partition_op(node: &NodeSpec) -> Made {
    let count = node.attrs.int("num_partitions")?;
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c >= 1)
        .ok_or_else(|| format!("num_partitions must be at least 1, got {count}"))?;
    Ok(boxed(move |_, inputs| {
        let data = tensor_input(inputs, 0)?;
        let parts_t = tensor_input(inputs, 1)?;
        if !data.shape().starts_with(parts_t.shape()) {
            return Err(fail(format!(
                "data.shape must start with partitions.shape, got data.shape = {:?}, \
                 partitions.shape = {:?}",
                data.shape(),
                parts_t.shape()
            )));
        }
        let parts = int_values(&parts_t, "partitions")?;
        let mut rows: Vec<Vec<usize>> = vec![Vec::new(); count];
        let tail = &data.shape()[parts_t.rank()..];
        let inner = prod(tail);
        for (i, &p) in parts.iter().enumerate() {
            let slot = usize::try_from(p)
                .ok()
                .and_then(|p| rows.get_mut(p))
                .ok_or_else(|| fail(format!("partitions[{i}] = {p} is not in [0, {count})")))?;
            slot.push(i * inner);
        }
        rows.into_iter()
            .map(|offsets| {
                let mut shape = vec![offsets.len()];
                shape.extend_from_slice(tail);
                let storage = gather_storage(data.storage(), &[offsets, (0..inner).collect()])?;
                Ok(Value::tensor(make(shape, storage)?))
            })
            .collect()
    }))
}

fn stitch_op(node: &NodeSpec) -> Made {
    let n = if node.attrs.has("N") {
        usize::try_from(node.attrs.int("N")?).map_err(|_| "N must not be negative".to_string())?
    } else {
        node.num_inputs / 2
    };
    if node.num_inputs != 2 * n {
        return Err(format!(
            "expected {n} indices and {n} data tensors, got {} inputs",
            node.num_inputs
        ));
    }
    Ok(boxed(move |_, inputs| {
        let indices = (0..n)
            .map(|m| tensor_input(inputs, m))
            .collect::<KResult<Vec<_>>>()?;
        let data = (n..2 * n)
            .map(|m| tensor_input(inputs, m))
            .collect::<KResult<Vec<_>>>()?;
        one(stitch(&indices, &data)?)
    }))
}

fn stitch(indices: &[std::sync::Arc<Tensor>], data: &[std::sync::Arc<Tensor>]) -> KResult<Tensor> {
    let mut tail: Option<&[usize]> = None;
    // For each output row, the (tensor, row) written last.
    let mut sources: Vec<Option<(usize, usize)>> = Vec::new();
    for (m, (index, piece)) in indices.iter().zip(data).enumerate() {
        if !piece.shape().starts_with(index.shape()) {
            return Err(fail(format!(
                "data[{m}].shape = {:?} does not start with indices[{m}].shape = {:?}",
                piece.shape(),
                index.shape()
            )));
        }
        let rest = &piece.shape()[index.rank()..];
        if let Some(t) = tail {
            if t != rest {
                return Err(fail(format!(
                    "Need data[0].shape[{}:] = {t:?} to match data[{m}].shape[{}:] = {rest:?}",
                    indices[0].rank(),
                    index.rank()
                )));
            }
        }
        tail = Some(rest);
        for (i, &at) in int_values(index, "indices")?.iter().enumerate() {
            let at = usize::try_from(at)
                .map_err(|_| fail(format!("indices must be non-negative, got {at}")))?;
            if at >= sources.len() {
                super::copy::checked_count(&[at + 1])?;
                sources.resize(at + 1, None);
            }
            sources[at] = Some((m, i));
        }
    }
    let tail = tail.unwrap_or(&[]).to_vec();
    let inner = prod(&tail);
    let mut shape = vec![sources.len()];
    shape.extend_from_slice(&tail);
    let all: Vec<&Storage> = data.iter().map(|d| d.storage()).collect();
    if all.is_empty() {
        return make(shape, Storage::Float32(Vec::new()));
    }
    let mismatch = fail("data tensors must all have the same dtype");
    let storage = map_storages!(&all, vs => stitch_rows(&vs, &sources, inner)?, mismatch);
    make(shape, storage)
}

fn stitch_rows<T: Clone + Default>(
    vs: &[&[T]],
    sources: &[Option<(usize, usize)>],
    inner: usize,
) -> KResult<Vec<T>> {
    let mut out = Vec::with_capacity(sources.len() * inner);
    let oob = || fail("internal: stitch row out of bounds");
    for source in sources {
        match source {
            Some((m, i)) => {
                let v = vs.get(*m).ok_or_else(oob)?;
                out.extend_from_slice(v.get(i * inner..(i + 1) * inner).ok_or_else(oob)?);
            }
            None => out.resize(out.len() + inner, T::default()),
        }
    }
    Ok(out)
}
