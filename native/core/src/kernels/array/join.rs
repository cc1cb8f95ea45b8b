//! Joining and splitting along an axis: ConcatV2, Concat, Pack, Unpack, Split, SplitV. With
//! `outer` the product of the dimensions before the axis, each input or piece is `outer` runs
//! of contiguous elements, so both directions are run copies (row memcpys on the last axis).

use std::sync::Arc;

use super::{any_ints, axis_index, scalar_int, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::{Registry, Value};
use crate::kernels::nn::output::{copied, written_chunks, Split};
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("ConcatV2", |_| concat_op(Axis::Last));
    r.add("Concat", |_| concat_op(Axis::First));
    r.add("Pack", pack);
    r.add("Unpack", unpack);
    r.add("Split", split);
    r.add("SplitV", split_v);
}

/// Where a concat's axis input is: last (ConcatV2) or first (Concat).
#[derive(Clone, Copy)]
enum Axis {
    First,
    Last,
}

fn concat_op(at: Axis) -> Made {
    Ok(boxed(move |_, inputs| {
        let n = inputs.len();
        if n < 2 {
            return Err(fail("ConcatOp needs at least one value and an axis"));
        }
        let (axis_i, values) = match at {
            Axis::First => (0, 1..n),
            Axis::Last => (n - 1, 0..n - 1),
        };
        let axis = scalar_int(&*tensor_input(inputs, axis_i)?, "axis")?;
        let tensors: Vec<Arc<Tensor>> = values
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<_>>()?;
        if tensors.len() == 1 {
            let r = tensors[0].rank() as i64;
            if r == 0 || axis < -r || axis >= r {
                return Err(fail(format!("axis {axis} is out of range for rank {r}")));
            }
            return Ok(vec![Value::Tensor(tensors[0].clone())]);
        }
        one(concat(&tensors, axis)?)
    }))
}

/// The tensors joined along `axis`; every other dimension must match.
pub fn concat(tensors: &[Arc<Tensor>], axis: i64) -> KResult<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| fail("nothing to concatenate"))?;
    if first.rank() == 0 {
        return Err(fail(
            "ConcatOp : Can't concatenate scalars (use tf.stack instead)",
        ));
    }
    let axis = axis_index(axis, first.rank())?;
    let shape = first.shape();
    let mut total = 0usize;
    for (i, t) in tensors.iter().enumerate() {
        let s = t.shape();
        let same = s.len() == shape.len()
            && s[..axis] == shape[..axis]
            && s[axis + 1..] == shape[axis + 1..];
        if !same {
            return Err(fail(format!(
                "ConcatOp : Dimension mismatch of inputs on all axes but {axis}: shape[0] = \
                 {shape:?} vs. shape[{i}] = {s:?}"
            )));
        }
        total = total
            .checked_add(s[axis])
            .ok_or_else(|| fail("concatenated dimension overflows"))?;
    }
    let mut out_shape = shape.to_vec();
    out_shape[axis] = total;
    if let Some(empty) = super::copy::if_empty(first.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let outer: usize = super::copy::prod(&shape[..axis]);
    let inner: usize = super::copy::prod(&shape[axis + 1..]);
    let runs: Vec<usize> = tensors.iter().map(|t| t.shape()[axis] * inner).collect();
    let storages: Vec<&Storage> = tensors.iter().map(|t| t.storage()).collect();
    let mismatch = || {
        fail(format!(
            "ConcatOp : Expected all inputs to be {}",
            first.dtype()
        ))
    };
    let large = outer * runs.iter().sum::<usize>() >= PARALLEL_COPY;
    let floats = || -> Option<Vec<&[f32]>> { tensors.iter().map(|t| t.values()).collect() };
    if let Some(parts) = large.then(floats).flatten() {
        return make(
            out_shape,
            Storage::Float32(interleave_rows(&parts, &runs, outer)?),
        );
    }
    let storage = map_storages!(&storages, parts => interleave(&parts, &runs, outer)?, mismatch());
    make(out_shape, storage)
}

/// Float32 concatenations of at least this many elements (1 MB) split their rows between
/// threads. DenseNet121 concatenates 58 times a call along channels (its 56x56 ones 1-2 MB):
/// on one thread, row by row, they took 10% of its time at batch 1, twice onnxruntime's.
const PARALLEL_COPY: usize = 1 << 18;

/// [`interleave`] for float32 on rayon's threads, a share of the rows each.
fn interleave_rows(parts: &[&[f32]], runs: &[usize], outer: usize) -> KResult<Vec<f32>> {
    let row: usize = runs.iter().sum();
    let threads = rayon::current_num_threads().max(1);
    let share = outer.div_ceil(threads) * row;
    let split = Split {
        count: outer * row,
        chunk: share,
        share,
        parallel: threads > 1,
    };
    written_chunks(
        split,
        || (),
        |(), first, out| {
            let rows = first / row..(first + out.len()) / row;
            let pieces = rows.flat_map(|o| {
                parts
                    .iter()
                    .zip(runs)
                    .map(move |(part, &run)| part.get(o * run..(o + 1) * run).unwrap_or(&[]))
            });
            copied(out, pieces)
        },
    )
}

/// For each of `outer` rows, run `k` of each part in turn (the parts' rows side by side).
fn interleave<T: Clone>(parts: &[&[T]], runs: &[usize], outer: usize) -> KResult<Vec<T>> {
    let mut out = Vec::with_capacity(runs.iter().sum::<usize>() * outer);
    for o in 0..outer {
        for (part, &run) in parts.iter().zip(runs) {
            let chunk = part
                .get(o * run..(o + 1) * run)
                .ok_or_else(|| fail("internal: concat run out of bounds"))?;
            out.extend_from_slice(chunk);
        }
    }
    Ok(out)
}

fn pack(node: &NodeSpec) -> Made {
    let axis = node.attrs.int_or("axis", 0)?;
    Ok(boxed(move |_, inputs| {
        let tensors: Vec<Arc<Tensor>> = (0..inputs.len())
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<_>>()?;
        let first = tensors.first().ok_or_else(|| fail("Pack needs an input"))?;
        let shape = first.shape().to_vec();
        let at = axis_index(axis, shape.len() + 1)?;
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != shape.as_slice() {
                return Err(fail(format!(
                    "Shapes of all inputs must match: values[0].shape = {shape:?} != \
                     values[{i}].shape = {:?}",
                    t.shape()
                )));
            }
        }
        let mut expanded = shape.clone();
        expanded.insert(at, 1);
        let views: Vec<Arc<Tensor>> = tensors
            .iter()
            .map(|t| make(expanded.clone(), t.storage().clone()).map(Arc::new))
            .collect::<KResult<_>>()?;
        if views.len() == 1 {
            return one(Arc::unwrap_or_clone(views[0].clone()));
        }
        one(concat(&views, at as i64)?)
    }))
}

fn unpack(node: &NodeSpec) -> Made {
    let num = output_count(node, "num", 0)? as i64;
    let axis = node.attrs.int_or("axis", 0)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        if t.rank() == 0 {
            return Err(fail("Can not unpack a scalar"));
        }
        let at = axis_index(axis, t.rank())?;
        if t.shape()[at] as i64 != num {
            return Err(fail(format!(
                "Input shape {:?} has {} entries along axis {axis}, but num is {num}",
                t.shape(),
                t.shape()[at]
            )));
        }
        let mut piece = t.shape().to_vec();
        piece.remove(at);
        let bounds: Vec<(usize, usize)> = (0..t.shape()[at]).map(|i| (i, 1)).collect();
        let pieces = split_along(&t, at, &bounds)?;
        pieces
            .into_iter()
            .map(|s| make(piece.clone(), s).map(Value::tensor))
            .collect()
    }))
}

/// The pieces of `t` along `axis` given as (start, length) bounds, as storages.
pub fn split_along(t: &Tensor, axis: usize, bounds: &[(usize, usize)]) -> KResult<Vec<Storage>> {
    let shape = t.shape();
    let outer: usize = super::copy::prod(&shape[..axis]);
    let inner: usize = super::copy::prod(&shape[axis + 1..]);
    if t.is_empty() {
        return Ok(bounds
            .iter()
            .map(|_| super::copy::zeros(t.dtype(), 0))
            .collect());
    }
    let row = shape[axis] * inner;
    Ok(split_storage!(t.storage(), v => cut(v, outer, row, inner, bounds)?))
}

fn cut<T: Clone>(
    v: &[T],
    outer: usize,
    row: usize,
    inner: usize,
    bounds: &[(usize, usize)],
) -> KResult<Vec<Vec<T>>> {
    bounds
        .iter()
        .map(|&(start, len)| {
            let mut out = Vec::with_capacity(outer * len * inner);
            for o in 0..outer {
                let from = o * row + start * inner;
                let chunk = v
                    .get(from..from + len * inner)
                    .ok_or_else(|| fail("internal: split run out of bounds"))?;
                out.extend_from_slice(chunk);
            }
            Ok(out)
        })
        .collect()
}

/// The outputs of a split of `t` along `axis` into pieces of the given lengths.
fn pieces(t: &Tensor, axis: usize, lengths: &[usize]) -> KResult {
    let mut bounds = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for &len in lengths {
        bounds.push((start, len));
        start += len;
    }
    let storages = split_along(t, axis, &bounds)?;
    storages
        .into_iter()
        .zip(lengths)
        .map(|(s, &len)| {
            let mut shape = t.shape().to_vec();
            shape[axis] = len;
            make(shape, s).map(Value::tensor)
        })
        .collect()
}

/// An attr giving the number of outputs: at least `min` and no more than a graph could have (a
/// huge count must not allocate that many pieces of an empty tensor).
fn output_count(node: &NodeSpec, name: &str, min: usize) -> Result<usize, String> {
    const MAX: usize = 1 << 24;
    let n = node.attrs.int(name)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n >= min && n <= MAX)
        .ok_or_else(|| format!("attr {name:?} must be in [{min}, {MAX}], got {n}"))
}

fn split(node: &NodeSpec) -> Made {
    let num = output_count(node, "num_split", 1)?;
    Ok(boxed(move |_, inputs| {
        if num == 1 {
            return Ok(vec![Value::Tensor(tensor_input(inputs, 1)?)]);
        }
        let axis = scalar_int(&*tensor_input(inputs, 0)?, "split_dim")?;
        let t = tensor_input(inputs, 1)?;
        let axis = axis_index(axis, t.rank())?;
        let total = t.shape()[axis];
        if total % num != 0 {
            return Err(fail(format!(
                "Number of ways to split should evenly divide the split dimension, but got \
                 split_dim {axis} (size = {total}) and num_split {num}"
            )));
        }
        pieces(&t, axis, &vec![total / num; num])
    }))
}

fn split_v(node: &NodeSpec) -> Made {
    let num = output_count(node, "num_split", 1)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        if num == 1 {
            return Ok(vec![Value::Tensor(t)]);
        }
        let sizes = any_ints(&*tensor_input(inputs, 1)?, "size_splits")?;
        let axis = scalar_int(&*tensor_input(inputs, 2)?, "split_dim")?;
        let axis = axis_index(axis, t.rank())?;
        let lengths = split_sizes(&sizes, t.shape()[axis], num)?;
        pieces(&t, axis, &lengths)
    }))
}

/// SplitV's sizes with the one -1 resolved to what the others leave of the dimension.
fn split_sizes(sizes: &[i64], total: usize, count: usize) -> KResult<Vec<usize>> {
    if sizes.len() != count {
        return Err(fail(format!(
            "size_splits has {} entries, but num_split is {count}",
            sizes.len()
        )));
    }
    if sizes.iter().filter(|&&s| s == -1).count() > 1 {
        return Err(fail("There can only be one -1 in the input."));
    }
    if sizes.iter().any(|&s| s < -1) {
        return Err(fail(format!("size_splits {sizes:?} has a negative size")));
    }
    let known: i64 = sizes.iter().filter(|&&s| s != -1).sum();
    let total_i = total as i64;
    let resolved: Vec<i64> = sizes
        .iter()
        .map(|&s| if s == -1 { total_i - known } else { s })
        .collect();
    if resolved.iter().any(|&s| s < 0) || resolved.iter().sum::<i64>() != total_i {
        return Err(fail(format!(
            "Determined shape must either match input shape along split_dim exactly if fully \
             specified, or be less than the size of the input along split_dim if not fully \
             specified. Got: size_splits {sizes:?}, dimension {total}"
        )));
    }
    Ok(resolved.into_iter().map(|s| s as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_joins_rows_of_every_dtype() {
        let a = Arc::new(Tensor::strings(vec![1, 1], vec![b"a".to_vec()]));
        let b = Arc::new(Tensor::strings(
            vec![1, 2],
            vec![b"b".to_vec(), b"c".to_vec()],
        ));
        let out = concat(&[a.clone(), b], -1).unwrap();
        assert_eq!(out.shape(), &[1, 3]);
        let c = Arc::new(Tensor::from_vec(vec![1, 1], vec![1.0f32]));
        assert!(concat(&[a, c], 1).is_err());
    }

    /// Large float32 concatenations (split between threads by rows) give what the row-by-row
    /// copy gives, along the last axis and a middle one, with three parts of odd widths.
    #[test]
    fn large_float_concatenations_match_the_row_by_row_copy() {
        let part = |shape: Vec<usize>, base: f32| {
            let count = shape.iter().product::<usize>();
            let values = (0..count).map(|i| base + i as f32).collect();
            Arc::new(Tensor::from_vec(shape, values))
        };
        let cases = [
            (
                vec![vec![3, 50, 20, 96], vec![3, 50, 20, 32], vec![3, 50, 20, 5]],
                3,
            ),
            (
                vec![vec![4, 9, 3000], vec![4, 31, 3000], vec![4, 1, 3000]],
                1,
            ),
        ];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for (shapes, axis) in cases {
            let parts: Vec<Arc<Tensor>> = shapes
                .into_iter()
                .enumerate()
                .map(|(i, shape)| part(shape, 1e6 * i as f32))
                .collect();
            let got = pool.install(|| concat(&parts, axis as i64)).unwrap();
            let shape = parts[0].shape();
            let outer = shape[..axis].iter().product::<usize>();
            let inner = shape[axis + 1..].iter().product::<usize>();
            let runs: Vec<usize> = parts.iter().map(|t| t.shape()[axis] * inner).collect();
            assert!(outer * runs.iter().sum::<usize>() >= PARALLEL_COPY);
            let slices: Vec<&[f32]> = parts.iter().map(|t| t.values().unwrap()).collect();
            let want = interleave(&slices, &runs, outer).unwrap();
            assert_eq!(got.values::<f32>().unwrap(), want.as_slice());
        }
    }

    #[test]
    fn split_sizes_resolve_one_unknown() {
        assert_eq!(split_sizes(&[1, -1], 5, 2).unwrap(), vec![1, 4]);
        assert!(split_sizes(&[6, -1], 5, 2).is_err());
        assert!(split_sizes(&[-1, -1], 5, 2).is_err());
    }
}
