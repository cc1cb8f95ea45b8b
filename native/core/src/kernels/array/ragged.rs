//! Densifying ragged tensors: RaggedTensorToTensor, and the counting ops that
//! `RowPartition.from_value_rowids` uses (DenseBincount, Bincount); Keras' TextVectorization
//! emits both when it pads token ids to a fixed length.
//!
//! A ragged tensor is flat `values` plus row partitions, outermost first: ROW_SPLITS (row i is
//! `values[splits[i]..splits[i+1]]`), or FIRST_DIM_SIZE followed by VALUE_ROWIDS (the row of
//! each value, sorted). Each partition becomes row splits; each value's place in the dense
//! result is then found by walking the partitions from the inside out.

use super::copy::checked_count;
use super::layout::broadcast;
use super::{any_ints, Made};
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("DenseBincount", |n| bincount_op(n, true));
    r.add("Bincount", |n| bincount_op(n, false));
    r.add("RaggedTensorToTensor", ragged_to_tensor);
}

fn bincount_op(node: &NodeSpec, dense: bool) -> Made {
    let binary = dense && node.attrs.bool_or("binary_output", false)?;
    Ok(boxed(move |_, inputs| {
        let values = tensor_input(inputs, 0)?;
        let size_t = tensor_input(inputs, 1)?;
        let weights = tensor_input(inputs, 2)?;
        let size = match any_ints(&size_t, "size")?.as_slice() {
            [s] if size_t.rank() == 0 => *s,
            _ => return Err(fail("size must be a scalar")),
        };
        let bins = usize::try_from(size)
            .map_err(|_| fail(format!("size ({size}) must be non-negative")))?;
        if !matches!(values.dtype(), DType::Int32 | DType::Int64) {
            return Err(fail(format!(
                "input must be int32 or int64, got {}",
                values.dtype()
            )));
        }
        // Bincount counts every element of an input of any shape; DenseBincount takes a
        // vector or a matrix (one count per row).
        let matrix = match values.rank() {
            _ if !dense => false,
            1 => false,
            2 => true,
            _ => {
                return Err(fail(format!(
                    "input must be a vector or a matrix, got shape {:?}",
                    values.shape()
                )))
            }
        };
        if !weights.is_empty() && weights.shape() != values.shape() {
            return Err(fail(format!(
                "weights must have the input's shape {:?} or be empty, got {:?}",
                values.shape(),
                weights.shape()
            )));
        }
        let ids = any_ints(&values, "input")?;
        if ids.iter().any(|&v| v < 0) {
            return Err(fail("Input arr must be non-negative!"));
        }
        let rows = if matrix { values.shape()[0] } else { 1 };
        let per = ids.len() / rows.max(1);
        let mut out_shape = if matrix { vec![rows] } else { Vec::new() };
        out_shape.push(bins);
        let total = checked_count(&out_shape)?;
        // (flat bin, index of the value) for every counted value.
        let hits: Vec<(usize, usize)> = ids
            .iter()
            .enumerate()
            .filter(|(_, &v)| (v as u64) < bins as u64)
            .map(|(i, &v)| ((i / per.max(1)) * bins + v as usize, i))
            .collect();
        let use_weights = !weights.is_empty() && !binary;
        let storage = match weights.storage() {
            Storage::Int32(w) => Storage::Int32(count(&hits, w, use_weights, binary, total)),
            Storage::Int64(w) => Storage::Int64(count(&hits, w, use_weights, binary, total)),
            Storage::Float32(w) => Storage::Float32(count(&hits, w, use_weights, binary, total)),
            Storage::Float64(w) => Storage::Float64(count(&hits, w, use_weights, binary, total)),
            _ => {
                return Err(fail(format!(
                    "weights must be int32, int64, float32 or float64, got {}",
                    weights.dtype()
                )))
            }
        };
        one(make(out_shape, storage)?)
    }))
}

/// Each bin's weight sum (or count, or 1 for a bin hit at all when `binary`).
fn count<T>(hits: &[(usize, usize)], w: &[T], use_weights: bool, binary: bool, n: usize) -> Vec<T>
where
    T: Copy + Default + std::ops::AddAssign + From<u8>,
{
    let mut out = vec![T::default(); n];
    for &(bin, i) in hits {
        let Some(slot) = out.get_mut(bin) else {
            continue;
        };
        if binary {
            *slot = T::from(1);
        } else if use_weights {
            *slot += w.get(i).copied().unwrap_or_default();
        } else {
            *slot += T::from(1);
        }
    }
    out
}

fn ragged_to_tensor(node: &NodeSpec) -> Made {
    let types = node.attrs.strings("row_partition_types")?;
    for t in &types {
        if !matches!(t.as_str(), "ROW_SPLITS" | "VALUE_ROWIDS" | "FIRST_DIM_SIZE") {
            return Err(format!("unsupported row partition type {t:?}"));
        }
    }
    Ok(boxed(move |_, inputs| {
        let shape = tensor_input(inputs, 0)?;
        let values = tensor_input(inputs, 1)?;
        let default = tensor_input(inputs, 2)?;
        if values.rank() < 1 {
            return Err(fail("values must have at least one dimension"));
        }
        let partitions = (3..inputs.len())
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<_>>>()?;
        let splits = row_splits(&types, &partitions)?;
        let n = values.shape()[0];
        if splits.last().and_then(|s| s.last()) != Some(&(n as i64)) {
            return Err(fail(format!(
                "the row partitions do not cover the {n} values"
            )));
        }
        let inner_shape = &values.shape()[1..];
        let out_shape = dense_shape(&shape, &splits, inner_shape)?;
        let filled = broadcast(&default, &out_shape).map_err(|_| {
            fail(format!(
                "default_value of shape {:?} does not broadcast to the values' inner shape \
                 {inner_shape:?}",
                default.shape()
            ))
        })?;
        if filled.dtype() != values.dtype() {
            return Err(fail("default_value must have the values' dtype"));
        }
        let moves = placements(&splits, n, &out_shape);
        let inner: usize = super::copy::prod(inner_shape);
        let mut storage = filled.into_storage();
        let out = map_storage2!(&mut storage, values.storage(), o, v =>
            place(std::mem::take(o), v, &moves, inner), fail("internal: dtype"));
        one(make(out_shape, out)?)
    }))
}

/// Row splits for each ragged dimension, outermost first.
fn row_splits(types: &[String], tensors: &[std::sync::Arc<Tensor>]) -> KResult<Vec<Vec<i64>>> {
    if types.len() != tensors.len() {
        return Err(fail(format!(
            "{} row partition types for {} row partition tensors",
            types.len(),
            tensors.len()
        )));
    }
    let mut kinds = types.iter().zip(tensors).peekable();
    let mut nrows = None;
    if let Some((k, t)) = kinds.peek() {
        if k.as_str() == "FIRST_DIM_SIZE" {
            nrows = Some(super::scalar_int(t, "FIRST_DIM_SIZE")?);
            kinds.next();
        }
    }
    let mut splits: Vec<Vec<i64>> = Vec::new();
    for (kind, t) in kinds {
        let parents = match splits.last() {
            Some(s) => s.last().copied(),
            None => nrows,
        };
        let v = any_ints(t, "row partition")?;
        let s = match kind.as_str() {
            "ROW_SPLITS" => {
                let ok = t.rank() == 1
                    && v.first() == Some(&0)
                    && v.windows(2).all(|w| w[0] <= w[1])
                    && parents.is_none_or(|p| v.len() as i64 == p + 1);
                if !ok {
                    return Err(fail(
                        "row splits must be a non-decreasing vector starting at 0, one longer \
                         than the number of rows",
                    ));
                }
                v
            }
            "VALUE_ROWIDS" => {
                let p = parents.ok_or_else(|| fail("VALUE_ROWIDS needs FIRST_DIM_SIZE first"))?;
                splits_from_rowids(&v, p)?
            }
            other => return Err(fail(format!("unsupported row partition type {other:?}"))),
        };
        splits.push(s);
    }
    if splits.is_empty() {
        return Err(fail("needs at least one row partition"));
    }
    Ok(splits)
}

fn splits_from_rowids(rowids: &[i64], nrows: i64) -> KResult<Vec<i64>> {
    let n = usize::try_from(nrows).map_err(|_| fail(format!("negative FIRST_DIM_SIZE {nrows}")))?;
    checked_count(&[n, 8])?;
    if rowids.windows(2).any(|w| w[0] > w[1]) {
        return Err(fail("value_rowids must be sorted"));
    }
    let mut splits = vec![0i64; n + 1];
    for &r in rowids {
        let slot = usize::try_from(r)
            .ok()
            .filter(|&u| u < n)
            .ok_or_else(|| fail(format!("value_rowids must be in [0, {nrows}), got {r}")))?;
        splits[slot + 1] += 1;
    }
    for i in 1..splits.len() {
        splits[i] += splits[i - 1];
    }
    Ok(splits)
}

/// The requested shape with its unknown (-1) dimensions (all of them for an unknown rank)
/// taken from the data: the number of rows, the longest row of each ragged dimension.
fn dense_shape(shape: &Tensor, splits: &[Vec<i64>], inner: &[usize]) -> KResult<Vec<usize>> {
    let mut natural = vec![splits[0].len().saturating_sub(1)];
    for s in splits {
        let longest = s.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        natural.push(longest as usize);
    }
    natural.extend_from_slice(inner);
    let requested = any_ints(shape, "shape")?;
    if requested.is_empty() || requested == [-1] {
        checked_count(&natural)?;
        return Ok(natural);
    }
    if requested.len() != natural.len() {
        return Err(fail(format!(
            "shape {requested:?} has rank {}, the ragged tensor has rank {}",
            requested.len(),
            natural.len()
        )));
    }
    let ragged = splits.len() + 1;
    let mut out = Vec::with_capacity(natural.len());
    for (i, (&r, &n)) in requested.iter().zip(&natural).enumerate() {
        if i >= ragged && r != -1 && r != n as i64 {
            return Err(fail(format!(
                "shape {requested:?} does not match the values' inner shape {inner:?}"
            )));
        }
        out.push(if r == -1 {
            n
        } else {
            usize::try_from(r).map_err(|_| fail(format!("shape {requested:?} is negative")))?
        });
    }
    checked_count(&out)?;
    Ok(out)
}

/// (value index, output row offset) of every value that lands inside `out_shape`.
fn placements(splits: &[Vec<i64>], count: usize, out_shape: &[usize]) -> Vec<(usize, usize)> {
    let ragged = splits.len() + 1;
    let strides = super::copy::strides(out_shape);
    // For each level (innermost first), the row of each element of that level.
    let mut coords: Vec<Vec<usize>> = vec![Vec::with_capacity(count); ragged];
    let mut element: Vec<usize> = (0..count).collect();
    for (level, s) in splits.iter().enumerate().rev() {
        let mut row_of = Vec::with_capacity(element.len());
        let mut r = 0usize;
        for &e in &element {
            while r + 1 < s.len() && s[r + 1] <= e as i64 {
                r += 1;
            }
            row_of.push(r);
        }
        let cols: Vec<usize> = element
            .iter()
            .zip(&row_of)
            .map(|(&e, &r)| e - s[r] as usize)
            .collect();
        coords[level + 1] = cols;
        element = row_of;
    }
    coords[0] = element;
    (0..count)
        .filter_map(|k| {
            let mut offset = 0;
            for d in 0..ragged {
                let c = coords[d][k];
                if c >= out_shape[d] {
                    return None;
                }
                offset += c * strides[d];
            }
            Some((k, offset))
        })
        .collect()
}

/// `out` with each `(k, at)` move copying value row `k` (of `inner` elements) to offset `at`.
fn place<T: Clone>(mut out: Vec<T>, v: &[T], moves: &[(usize, usize)], inner: usize) -> Vec<T> {
    for &(k, at) in moves {
        if let (Some(src), Some(dst)) = (
            v.get(k * inner..(k + 1) * inner),
            out.get_mut(at..at + inner),
        ) {
            dst.clone_from_slice(src);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Value;

    #[test]
    fn rowids_become_splits() {
        assert_eq!(
            splits_from_rowids(&[0, 0, 2], 4).unwrap(),
            vec![0, 2, 2, 3, 3]
        );
        assert!(splits_from_rowids(&[1, 0], 2).is_err());
        assert!(splits_from_rowids(&[2], 2).is_err());
    }

    fn run_to_tensor(shape: &[i64], types: &[&str], partitions: Vec<Tensor>) -> KResult<Tensor> {
        use crate::protos::attr_value::{ListValue, Value as A};
        let list = ListValue {
            s: types.iter().map(|t| t.as_bytes().to_vec()).collect(),
            ..Default::default()
        };
        let mut inputs = vec![
            Value::tensor(Tensor::from_vec(vec![shape.len()], shape.to_vec())),
            Value::tensor(Tensor::from_vec(vec![4], vec![1i64, 2, 3, 4])),
            Value::tensor(Tensor::scalar(0i64)),
        ];
        inputs.extend(partitions.into_iter().map(Value::tensor));
        let out = super::super::test_util::run(
            "RaggedTensorToTensor",
            &[("row_partition_types", A::List(Box::new(list)))],
            inputs,
        )?;
        match &out[0] {
            Value::Tensor(t) => Ok((**t).clone()),
            other => Err(fail(format!("not a tensor: {other:?}"))),
        }
    }

    #[test]
    fn value_rowids_pad_and_truncate() {
        let rowids = || {
            vec![
                Tensor::scalar(3i64),
                Tensor::from_vec(vec![4], vec![0i64, 0, 2, 2]),
            ]
        };
        let types = ["FIRST_DIM_SIZE", "VALUE_ROWIDS"];
        let out = run_to_tensor(&[-1, 3], &types, rowids()).unwrap();
        assert_eq!(out.shape(), &[3, 3]);
        assert_eq!(out.values::<i64>().unwrap(), &[1, 2, 0, 0, 0, 0, 3, 4, 0]);
        let cut = run_to_tensor(&[2, 1], &types, rowids()).unwrap();
        assert_eq!(cut.values::<i64>().unwrap(), &[1, 0]);
        let splits = vec![Tensor::from_vec(vec![4], vec![0i64, 2, 2, 4])];
        let same = run_to_tensor(&[-1, 3], &["ROW_SPLITS"], splits).unwrap();
        assert_eq!(same, out);
        let short = vec![Tensor::from_vec(vec![3], vec![0i64, 2, 3])];
        assert!(run_to_tensor(&[-1, -1], &["ROW_SPLITS"], short).is_err());
    }

    #[test]
    fn values_land_in_their_rows() {
        let splits = vec![vec![0, 2, 2, 3]];
        let moves = placements(&splits, 3, &[3, 2]);
        assert_eq!(moves, vec![(0, 0), (1, 1), (2, 4)]);
        let cut = placements(&splits, 3, &[3, 1]);
        assert_eq!(cut, vec![(0, 0), (2, 2)]);
    }
}
