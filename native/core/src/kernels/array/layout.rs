//! Ops that rearrange a whole tensor: Transpose, ConjugateTranspose, ReverseV2, Tile,
//! BroadcastTo. Each builds per-axis source-offset tables for [`axis_gather`]; transposes that
//! swap the last two axes go through a cache-blocked matrix transpose instead.

use super::copy::{axis_gather, gather_tensor, if_empty, strides};
use super::{axis_index, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{int_values, make, shape_values};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Transpose", |_| transpose_op(false));
    r.add("ConjugateTranspose", |_| transpose_op(true));
    r.add("ReverseV2", reverse);
    r.add("Tile", tile);
    r.add("BroadcastTo", broadcast_to);
}

/// A checked permutation of `rank` axes (negative entries count from the end).
fn permutation(perm: &[i64], rank: usize) -> KResult<Vec<usize>> {
    if perm.len() != rank {
        return Err(fail(format!(
            "perm {perm:?} has {} entries for a tensor of rank {rank}",
            perm.len()
        )));
    }
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(rank);
    for &p in perm {
        let a = axis_index(p, rank).map_err(|_| {
            fail(format!(
                "{perm:?} is not a valid permutation of {rank} dims"
            ))
        })?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(fail(format!(
                "{perm:?} is not a valid permutation of {rank} dims"
            )));
        }
        out.push(a);
    }
    Ok(out)
}

fn transpose_op(conjugate: bool) -> Made {
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let perm = int_values(&*tensor_input(inputs, 1)?, "perm")?;
        let perm = permutation(&perm, t.rank())?;
        if perm.iter().enumerate().all(|(i, &p)| i == p) && !conjugate {
            return Ok(vec![inputs[0].clone()]);
        }
        let mut out = transpose(&t, &perm)?;
        if conjugate {
            out = conjugated(out)?;
        }
        one(out)
    }))
}

/// `t` with its axes permuted: output axis `i` is input axis `perm[i]`.
pub fn transpose(t: &Tensor, perm: &[usize]) -> KResult<Tensor> {
    let shape = t.shape();
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let (dims, perm) = coalesce(shape, perm);
    let rank = dims.len();
    let swaps_last_two = rank >= 2
        && perm[rank - 1] == rank - 2
        && perm[rank - 2] == rank - 1
        && perm[..rank - 2].iter().enumerate().all(|(i, &p)| i == p);
    if swaps_last_two {
        let (rows, cols) = (dims[rank - 2], dims[rank - 1]);
        let storage = map_storage!(t.storage(), v => batched_transpose(v, rows, cols));
        return make(out_shape, storage);
    }
    let st = strides(&dims);
    let tables: Vec<Vec<usize>> = perm
        .iter()
        .map(|&p| (0..dims[p]).map(|j| j * st[p]).collect())
        .collect();
    make(
        out_shape,
        super::copy::gather_storage(t.storage(), &tables)?,
    )
}

/// The same transpose over fewer axes: size-1 axes dropped, and input axes that stay adjacent
/// and in order merged (NHWC to NCHW is a batch of `[H*W, C]` matrix transposes).
fn coalesce(shape: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let kept: Vec<usize> = perm.iter().copied().filter(|&p| shape[p] != 1).collect();
    // Groups of input axes, in output order: runs of consecutive input axes.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &p in &kept {
        match groups.last_mut() {
            Some((_, end)) if *end + 1 == p => *end = p,
            _ => groups.push((p, p)),
        }
    }
    let mut by_input: Vec<usize> = (0..groups.len()).collect();
    by_input.sort_by_key(|&g| groups[g].0);
    let dims: Vec<usize> = by_input
        .iter()
        .map(|&g| shape[groups[g].0..=groups[g].1].iter().product())
        .collect();
    let mut new_perm = vec![0; groups.len()];
    for (new_axis, &g) in by_input.iter().enumerate() {
        new_perm[g] = new_axis;
    }
    (dims, new_perm)
}

/// Transposes each `rows x cols` matrix of `v` in square tiles, so reads and writes both stay
/// within a few cache lines; each output row segment is written contiguously.
fn batched_transpose<T: Clone>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
    const TILE: usize = 16;
    let mut out = v.to_vec();
    let matrix = rows * cols;
    if matrix == 0 {
        return out;
    }
    for (m, block) in v.chunks_exact(matrix).zip(out.chunks_exact_mut(matrix)) {
        for r0 in (0..rows).step_by(TILE) {
            let r1 = (r0 + TILE).min(rows);
            for c0 in (0..cols).step_by(TILE) {
                for c in c0..(c0 + TILE).min(cols) {
                    let dst = &mut block[c * rows + r0..c * rows + r1];
                    let src = m[r0 * cols + c..].iter().step_by(cols);
                    for (d, s) in dst.iter_mut().zip(src) {
                        *d = s.clone();
                    }
                }
            }
        }
    }
    out
}

/// Complex elements conjugated; other dtypes unchanged.
fn conjugated(t: Tensor) -> KResult<Tensor> {
    let shape = t.shape().to_vec();
    let storage = match t.into_storage() {
        Storage::Complex64(v) => Storage::Complex64(v.into_iter().map(|[a, b]| [a, -b]).collect()),
        Storage::Complex128(v) => {
            Storage::Complex128(v.into_iter().map(|[a, b]| [a, -b]).collect())
        }
        other => other,
    };
    make(shape, storage)
}

fn reverse(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let axes = int_values(&*tensor_input(inputs, 1)?, "axis")?;
        if t.rank() == 0 || t.is_empty() {
            return Ok(vec![inputs[0].clone()]);
        }
        let mut flip = vec![false; t.rank()];
        for &a in &axes {
            let i = axis_index(a, t.rank())?;
            if std::mem::replace(&mut flip[i], true) {
                return Err(fail(format!(
                    "axis {a} is specified more than once in {axes:?}"
                )));
            }
        }
        let st = strides(t.shape());
        let tables: Vec<Vec<usize>> = (0..t.rank())
            .map(|i| {
                let d = t.shape()[i];
                (0..d)
                    .map(|j| if flip[i] { d - 1 - j } else { j } * st[i])
                    .collect()
            })
            .collect();
        one(gather_tensor(&t, &tables)?)
    }))
}

fn tile(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let reps = shape_values(&*tensor_input(inputs, 1)?, "multiples")?;
        if reps.len() != t.rank() {
            return Err(fail(format!(
                "multiples {reps:?} must have one entry per dimension of the input of shape {:?}",
                t.shape()
            )));
        }
        let out_shape = t
            .shape()
            .iter()
            .zip(&reps)
            .map(|(&d, &m)| d.checked_mul(m))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| fail(format!("multiples {reps:?} make too large a tensor")))?;
        if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
            return one(empty);
        }
        let st = strides(t.shape());
        let tables: Vec<Vec<usize>> = (0..t.rank())
            .map(|i| {
                (0..out_shape[i])
                    .map(|j| (j % t.shape()[i]) * st[i])
                    .collect()
            })
            .collect();
        one(gather_tensor(&t, &tables)?)
    }))
}

fn broadcast_to(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let target = shape_values(&*tensor_input(inputs, 1)?, "shape")?;
        if target == t.shape() {
            return Ok(vec![inputs[0].clone()]);
        }
        one(broadcast(&t, &target)?)
    }))
}

/// `t` broadcast to `target` (numpy's rule); an error naming both shapes when it cannot be.
pub fn broadcast(t: &Tensor, target: &[usize]) -> KResult<Tensor> {
    let shape = t.shape();
    let bad = || {
        fail(format!(
            "Unable to broadcast tensor of shape {shape:?} to tensor of shape {target:?}"
        ))
    };
    if shape.len() > target.len() {
        return Err(bad());
    }
    if let Some(empty) = if_empty(t.dtype(), target)? {
        return Ok(empty);
    }
    let lead = target.len() - shape.len();
    let st = strides(shape);
    let mut tables = Vec::with_capacity(target.len());
    for (o, &n) in target.iter().enumerate() {
        if o < lead {
            tables.push(vec![0; n]);
            continue;
        }
        let i = o - lead;
        match shape[i] {
            d if d == n => tables.push((0..n).map(|j| j * st[i]).collect()),
            1 => tables.push(vec![0; n]),
            _ => return Err(bad()),
        }
    }
    let storage = map_storage!(t.storage(), v => axis_gather(v, &tables)?);
    make(target.to_vec(), storage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_match_numpy() {
        let t = Tensor::from_vec(vec![2, 3], (0..6).collect::<Vec<i32>>());
        let out = transpose(&t, &[1, 0]).unwrap();
        assert_eq!(out.shape(), &[3, 2]);
        assert_eq!(out.values::<i32>().unwrap(), &[0, 3, 1, 4, 2, 5]);
        let t = Tensor::from_vec(vec![1, 2, 2, 2], (0..8).collect::<Vec<i32>>());
        let out = transpose(&t, &[0, 2, 1, 3]).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[0, 1, 4, 5, 2, 3, 6, 7]);
        assert!(permutation(&[0, 0], 2).is_err());
        assert!(permutation(&[0], 2).is_err());
    }

    #[test]
    fn transposes_coalesce_adjacent_axes() {
        assert_eq!(
            coalesce(&[2, 3, 4, 5], &[0, 3, 1, 2]),
            (vec![2, 12, 5], vec![0, 2, 1])
        );
        assert_eq!(coalesce(&[2, 1, 4], &[1, 2, 0]), (vec![2, 4], vec![1, 0]));
        assert_eq!(coalesce(&[2, 3], &[0, 1]), (vec![6], vec![0]));
        let t = Tensor::from_vec(vec![2, 3, 2, 2], (0..24).collect::<Vec<i32>>());
        let out = transpose(&t, &[0, 3, 1, 2]).unwrap();
        assert_eq!(out.shape(), &[2, 2, 3, 2]);
        assert_eq!(&out.values::<i32>().unwrap()[..6], &[0, 2, 4, 6, 8, 10]);
    }

    #[test]
    fn tiled_transpose_matches_the_general_path() {
        let t = Tensor::from_vec(vec![2, 17, 33], (0..2 * 17 * 33).collect::<Vec<i32>>());
        let fast = transpose(&t, &[0, 2, 1]).unwrap();
        let st = strides(t.shape());
        let tables: Vec<Vec<usize>> = [0, 2, 1]
            .iter()
            .map(|&p| (0..t.shape()[p]).map(|j| j * st[p]).collect())
            .collect();
        assert_eq!(fast, gather_tensor(&t, &tables).unwrap());
    }

    #[test]
    fn empty_tensors_with_huge_dimensions_build_no_tables() {
        let t = Tensor::new(vec![0, 1 << 40], Storage::Float32(Vec::new())).unwrap();
        let out = transpose(&t, &[1, 0]).unwrap();
        assert_eq!(out.shape(), &[1 << 40, 0]);
        assert!(broadcast(&t, &[3, 0, 1 << 40]).unwrap().is_empty());
    }

    #[test]
    fn broadcast_rejects_incompatible_shapes() {
        let t = Tensor::from_vec(vec![2, 1], vec![1.0f32, 2.0]);
        let out = broadcast(&t, &[2, 2, 3]).unwrap();
        assert_eq!(
            out.values::<f32>().unwrap()[..6],
            [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
        );
        assert!(broadcast(&t, &[3, 3]).is_err());
        assert!(broadcast(&t, &[1]).is_err());
    }
}
