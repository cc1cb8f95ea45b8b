//! Reading elements at computed positions: Gather, GatherV2 (axis, batch_dims), GatherNd,
//! ResourceGather (rows of a variable, as embedding lookups read them), OneHot and
//! InvertPermutation. TensorFlow's CPU kernels reject an index outside its
//! dimension (negative ones included) instead of wrapping or clamping; so do these, naming the
//! first bad index. Gathers copy whole rows of the dimensions after the axis (an embedding
//! lookup on axis 0 is one row copy per index).

use super::copy::{checked_count, take_rows, zeros};
use super::{any_ints, axis_index, Made};
use crate::engine::kernel::{boxed, fail, one, resource_input, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::make;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("GatherV2", |n| gather_op(n, true));
    r.add("Gather", |n| gather_op(n, false));
    r.add("GatherNd", gather_nd);
    r.add_stateful("ResourceGather", resource_gather);
    r.add("OneHot", one_hot);
    r.add("InvertPermutation", invert_permutation);
}

/// An integer scalar input (a 1-element vector is rejected, as TensorFlow's kernels do here).
fn strict_scalar(t: &Tensor, what: &str) -> KResult<i64> {
    let v = any_ints(t, what)?;
    match v.as_slice() {
        [x] if t.rank() == 0 => Ok(*x),
        _ => Err(fail(format!(
            "{what} must be an integer scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

/// Indices checked against `size`, as offsets; the error names the first bad one.
fn checked_indices(idx: &[i64], size: usize) -> KResult<Vec<usize>> {
    idx.iter()
        .enumerate()
        .map(|(i, &x)| {
            usize::try_from(x)
                .ok()
                .filter(|&u| u < size)
                .ok_or_else(|| fail(format!("indices[{i}] = {x} is not in [0, {size})")))
        })
        .collect()
}

fn gather_op(node: &NodeSpec, v2: bool) -> Made {
    let batch_dims = if v2 {
        node.attrs.int_or("batch_dims", 0)?
    } else {
        0
    };
    Ok(boxed(move |_, inputs| {
        let params = tensor_input(inputs, 0)?;
        let indices = tensor_input(inputs, 1)?;
        if params.rank() < 1 {
            return Err(fail("params must be at least 1 dimensional"));
        }
        let axis = if v2 {
            strict_scalar(&*tensor_input(inputs, 2)?, "axis")?
        } else {
            0
        };
        let axis = axis_index(axis, params.rank())?;
        let batch = batch_count(batch_dims, axis, params.shape(), indices.shape())?;
        one(gather(&params, &indices, axis, batch)?)
    }))
}

/// Rows (axis 0) of a resource variable's value. batch_dims other than 0 is rejected, as the
/// numpy engine does.
fn resource_gather(node: &NodeSpec) -> Made {
    let batch_dims = node.attrs.int_or("batch_dims", 0)?;
    if batch_dims != 0 {
        return Err("ResourceGather with batch_dims > 0 is not supported".into());
    }
    Ok(boxed(|_, inputs| {
        let handle = resource_input(inputs, 0)?;
        let variable = handle
            .as_variable()
            .ok_or_else(|| fail(format!("resource {} is not a variable", handle.name())))?;
        let params = variable
            .read()?
            .ok_or_else(|| fail(format!("variable {} is not initialized", handle.name())))?;
        let indices = tensor_input(inputs, 1)?;
        if params.rank() < 1 {
            return Err(fail("params must be at least 1 dimensional"));
        }
        one(gather(&params, &indices, 0, 0)?)
    }))
}

/// GatherV2's batch_dims, checked (negative counts from the indices' rank).
fn batch_count(
    batch_dims: i64,
    axis: usize,
    params: &[usize],
    indices: &[usize],
) -> KResult<usize> {
    if batch_dims == 0 {
        return Ok(0);
    }
    let rank = indices.len() as i64;
    if batch_dims < -rank || batch_dims > rank {
        return Err(fail(format!(
            "Expected batch_dims in the range [{}, {rank}], but got {batch_dims}",
            -rank
        )));
    }
    let batch = if batch_dims < 0 {
        batch_dims + rank
    } else {
        batch_dims
    } as usize;
    if batch > axis {
        return Err(fail(format!(
            "batch_dims ({batch}) must be less than or equal to axis ({axis})"
        )));
    }
    for i in 0..batch {
        if params[i] != indices[i] {
            return Err(fail(format!(
                "params.shape[{i}]: {} should be equal to indices.shape[{i}]: {}",
                params[i], indices[i]
            )));
        }
    }
    Ok(batch)
}

/// Gather along `axis`, the first `batch` dimensions shared by params and indices. An empty
/// result is returned before any index is checked, as TensorFlow does.
fn gather(params: &Tensor, indices: &Tensor, axis: usize, batch: usize) -> KResult<Tensor> {
    let shape = params.shape();
    let mut out_shape = shape[..axis].to_vec();
    out_shape.extend_from_slice(&indices.shape()[batch..]);
    out_shape.extend_from_slice(&shape[axis + 1..]);
    let count = checked_count(&out_shape)?;
    if count == 0 {
        return make(out_shape, zeros(params.dtype(), 0));
    }
    let size = shape[axis];
    let idx = checked_indices(&any_ints(indices, "indices")?, size)?;
    let lead: usize = super::copy::prod(&shape[..batch]);
    let outer: usize = super::copy::prod(&shape[batch..axis]);
    let inner: usize = super::copy::prod(&shape[axis + 1..]);
    let per = idx.len() / lead.max(1);
    let storage = map_storage!(params.storage(), v => {
        let mut out = Vec::with_capacity(count);
        for b in 0..lead {
            let picks = &idx[b * per..(b + 1) * per];
            for o in 0..outer {
                let block = (b * outer + o) * size * inner;
                let src = v.get(block..block + size * inner).unwrap_or_default();
                take_rows(src, inner, picks, &mut out)?;
            }
        }
        out
    });
    make(out_shape, storage)
}

fn gather_nd(node: &NodeSpec) -> Made {
    let ignore = match node.attrs.string_or("bad_indices_policy", "")? {
        "" | "DEFAULT" | "ERROR" => false,
        "IGNORE" => true,
        other => return Err(format!("unknown bad_indices_policy {other:?}")),
    };
    Ok(boxed(move |_, inputs| {
        let params = tensor_input(inputs, 0)?;
        let indices = tensor_input(inputs, 1)?;
        if params.rank() < 1 {
            return Err(fail("params must be at least a vector"));
        }
        let (rows, bad) = nd_rows(&indices, params.shape(), ignore)?;
        if params.is_empty() && !rows.is_empty() {
            return Err(fail(format!(
                "Requested more than 0 entries, but params is empty. Params shape: {:?}",
                params.shape()
            )));
        }
        let depth = indices.shape().last().copied().unwrap_or(0);
        let mut out_shape = indices.shape()[..indices.rank() - 1].to_vec();
        out_shape.extend_from_slice(&params.shape()[depth..]);
        let count = checked_count(&out_shape)?;
        let inner: usize = super::copy::prod(&params.shape()[depth..]);
        let blank = zeros(params.dtype(), 1);
        let storage = map_storage2!(params.storage(), &blank, v, z =>
            nd_take(v, z, &rows, &bad, inner, count)?, fail("internal: dtype"));
        one(make(out_shape, storage)?)
    }))
}

/// The row offsets (into the leading `depth` dimensions of `shape`) of each index row of an
/// `[..., depth]` indices tensor, and which rows are out of range (an error unless `ignore`).
pub fn nd_rows(
    indices: &Tensor,
    shape: &[usize],
    ignore: bool,
) -> KResult<(Vec<usize>, Vec<bool>)> {
    if indices.rank() < 1 {
        return Err(fail("indices must be at least a vector, got a scalar"));
    }
    let depth = indices.shape()[indices.rank() - 1];
    if depth > shape.len() {
        return Err(fail(format!(
            "index innermost dimension length must be <= params rank; saw: {depth} vs. {}",
            shape.len()
        )));
    }
    let st = super::copy::strides(&shape[..depth]);
    let values = any_ints(indices, "indices")?;
    let n: usize = super::copy::prod(&indices.shape()[..indices.rank() - 1]);
    let mut rows = Vec::with_capacity(n);
    let mut bad = Vec::with_capacity(n);
    for r in 0..n {
        let row = values.get(r * depth..(r + 1) * depth).unwrap_or_default();
        let mut offset = 0usize;
        let mut ok = true;
        for (k, &x) in row.iter().enumerate() {
            match usize::try_from(x).ok().filter(|&u| u < shape[k]) {
                Some(u) => offset += u * st[k],
                None => ok = false,
            }
        }
        if !ok && !ignore {
            return Err(fail(format!(
                "indices[{r}] = {row:?} does not index into param shape {shape:?}"
            )));
        }
        rows.push(if ok { offset } else { 0 });
        bad.push(!ok);
    }
    Ok((rows, bad))
}

/// The rows at `rows` (of `inner` elements each), or zeros (`zero[0]`) where `bad`.
fn nd_take<T: Clone>(
    v: &[T],
    zero: &[T],
    rows: &[usize],
    bad: &[bool],
    inner: usize,
    count: usize,
) -> KResult<Vec<T>> {
    let mut out = Vec::with_capacity(count);
    for (&r, &b) in rows.iter().zip(bad) {
        match zero.first() {
            Some(z) if b => out.extend(std::iter::repeat_n(z.clone(), inner)),
            _ => take_rows(v, inner, &[r], &mut out)?,
        }
    }
    Ok(out)
}

/// OneHot's output: `on` where the index at (p, s) equals j, else `off`, for a `[before,
/// depth, after]` layout.
fn hot_fill<T: Clone>(
    on: &[T],
    off: &[T],
    idx: &[i64],
    (before, depth, after): (usize, usize, usize),
    count: usize,
) -> Vec<T> {
    let (Some(a), Some(b)) = (on.first(), off.first()) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(count);
    for p in 0..before {
        for j in 0..depth as i64 {
            for s in 0..after {
                let hot = idx.get(p * after + s) == Some(&j);
                out.push(if hot { a.clone() } else { b.clone() });
            }
        }
    }
    out
}

fn one_hot(node: &NodeSpec) -> Made {
    let axis = node.attrs.int_or("axis", -1)?;
    Ok(boxed(move |_, inputs| {
        let indices = tensor_input(inputs, 0)?;
        let depth = strict_scalar(&*tensor_input(inputs, 1)?, "depth")?;
        let on = tensor_input(inputs, 2)?;
        let off = tensor_input(inputs, 3)?;
        let depth = usize::try_from(depth)
            .map_err(|_| fail(format!("depth must be non-negative, got: {depth}")))?;
        let rank = indices.rank();
        if axis != -1 && !(0..=rank as i64).contains(&axis) {
            return Err(fail(format!(
                "Expected axis to be -1 or between [0, {}), but received: {axis}",
                rank + 1
            )));
        }
        if on.rank() != 0 || off.rank() != 0 {
            return Err(fail("on_value and off_value must be scalars"));
        }
        let at = if axis == -1 { rank } else { axis as usize };
        let mut out_shape = indices.shape().to_vec();
        out_shape.insert(at, depth);
        let count = checked_count(&out_shape)?;
        let idx = any_ints(&indices, "indices")?;
        let before: usize = super::copy::prod(&indices.shape()[..at]);
        let after: usize = super::copy::prod(&indices.shape()[at..]);
        let mismatch = fail("on_value and off_value must have the same dtype");
        let storage = map_storage2!(on.storage(), off.storage(), a, b =>
            hot_fill(a, b, &idx, (before, depth, after), count), mismatch);
        one(make(out_shape, storage)?)
    }))
}

fn invert_permutation(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let x = tensor_input(inputs, 0)?;
        if x.rank() != 1 {
            return Err(fail(format!(
                "invert_permutation expects a 1D vector, got shape {:?}",
                x.shape()
            )));
        }
        let values = any_ints(&x, "x")?;
        let n = values.len();
        let mut out = vec![-1i64; n];
        for (i, &v) in values.iter().enumerate() {
            let slot = usize::try_from(v)
                .ok()
                .and_then(|u| out.get_mut(u))
                .ok_or_else(|| fail(format!("{v} is not between 0 and {n}")))?;
            if *slot >= 0 {
                return Err(fail(format!("{v} is duplicated in the input.")));
            }
            *slot = i as i64;
        }
        one(super::int_tensor(x.dtype(), vec![n], out)?)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_rows_and_batches() {
        let params = Tensor::from_vec(vec![3, 2], (0..6).collect::<Vec<i32>>());
        let idx = Tensor::from_vec(vec![2], vec![2i32, 0]);
        let out = gather(&params, &idx, 0, 0).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[4, 5, 0, 1]);
        let out = gather(&params, &idx, 1, 0);
        assert!(out.is_err(), "index 2 is out of range on axis 1");
        let bidx = Tensor::from_vec(vec![3, 1], vec![1i32, 0, 1]);
        let out = gather(&params, &bidx, 1, 1).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[1, 2, 5]);
        let neg = Tensor::from_vec(vec![1], vec![-1i64]);
        assert!(gather(&params, &neg, 0, 0).is_err());
    }
}
