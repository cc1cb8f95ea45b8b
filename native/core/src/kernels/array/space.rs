//! Rearrangements between space, batch and depth: SpaceToBatchND and BatchToSpaceND (which
//! TensorFlow 2 wraps around a convolution to dilate it: Keras's dilated Conv1D/Conv2D export
//! as SpaceToBatchND -> Conv2D -> BatchToSpaceND), their 4-D ancestors SpaceToBatch and
//! BatchToSpace, and DepthToSpace / SpaceToDepth.
//!
//! TensorFlow defines each as a pad or crop plus a reshape-transpose-reshape. Every such
//! rearrangement is one [`gather_tensor`]: the source offset of an output element is a sum of
//! one term per output axis (a block digit of the batch index, or of a spatial index, moves the
//! source by a fixed stride), so the whole op is a set of per-axis offset tables and runs of
//! the innermost (untouched) dimensions are copied whole. Crops are folded into the tables;
//! padding is written first. Values are never computed on, so every dtype works. TensorFlow's
//! CPU kernels of DepthToSpace and SpaceToDepth take only NHWC.

use super::copy::{gather_tensor, if_empty, prod, strides};
use super::slice::pad_constant;
use super::Made;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{int_values, make};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("SpaceToBatchND", |_| nd_op(true));
    r.add("BatchToSpaceND", |_| nd_op(false));
    r.add("SpaceToBatch", |n| four_d_op(n, true));
    r.add("BatchToSpace", |n| four_d_op(n, false));
    r.add("DepthToSpace", |n| depth_op(n, true));
    r.add("SpaceToDepth", |n| depth_op(n, false));
}

fn nd_op(to_batch: bool) -> Made {
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let block_t = tensor_input(inputs, 1)?;
        if block_t.rank() != 1 {
            return Err(fail(format!(
                "block_shape must be one-dimensional, got shape {:?}",
                block_t.shape()
            )));
        }
        let block = int_values(&block_t, "block_shape")?;
        let pairs = tensor_input(inputs, 2)?;
        let what = if to_batch { "paddings" } else { "crops" };
        let (block, pairs) = block_and_pairs(&t, &block, &pairs, what)?;
        one(if to_batch {
            space_to_batch(&t, &block, &pairs)?
        } else {
            batch_to_space(&t, &block, &pairs)?
        })
    }))
}

fn four_d_op(node: &NodeSpec, to_batch: bool) -> Made {
    let size = node.attrs.int("block_size")?;
    if size <= 1 {
        return Err(format!("block_size should be > 1, got {size}"));
    }
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        check_4d(&t)?;
        let pairs = tensor_input(inputs, 1)?;
        let what = if to_batch { "paddings" } else { "crops" };
        let (block, pairs) = block_and_pairs(&t, &[size, size], &pairs, what)?;
        one(if to_batch {
            space_to_batch(&t, &block, &pairs)?
        } else {
            batch_to_space(&t, &block, &pairs)?
        })
    }))
}

fn check_4d(t: &Tensor) -> KResult<()> {
    if t.rank() != 4 {
        return Err(fail(format!(
            "input should be 4-dimensional, got shape {:?}",
            t.shape()
        )));
    }
    Ok(())
}

/// (start, end) per block dimension.
type Pairs = Vec<(usize, usize)>;

/// The block sizes and the (start, end) paddings or crops, checked against the input's rank.
fn block_and_pairs(
    t: &Tensor,
    block: &[i64],
    pairs: &Tensor,
    what: &str,
) -> KResult<(Vec<usize>, Pairs)> {
    let dims = block.len();
    if pairs.shape() != [dims, 2] {
        return Err(fail(format!(
            "{what} should have shape [{dims}, 2] instead of {:?}",
            pairs.shape()
        )));
    }
    if t.rank() < 1 + dims {
        return Err(fail(format!(
            "input rank should be >= {} instead of {}",
            1 + dims,
            t.rank()
        )));
    }
    let block: Vec<usize> = block
        .iter()
        .map(|&b| usize::try_from(b).ok().filter(|&b| b >= 1))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            fail(format!(
                "All values in block_shape must be positive, got {block:?}"
            ))
        })?;
    let values = int_values(pairs, what)?;
    let pairs = values
        .chunks_exact(2)
        .map(|c| Some((usize::try_from(c[0]).ok()?, usize::try_from(c[1]).ok()?)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            fail(format!(
                "All values in {what} must be non-negative, got {values:?}"
            ))
        })?;
    Ok((block, pairs))
}

/// `t` with `before`/`after` zeros on each axis.
fn pad_zeros(t: &Tensor, widths: &[(usize, usize)]) -> KResult<Tensor> {
    let shape: Vec<usize> = t
        .shape()
        .iter()
        .zip(widths)
        .map(|(&d, &(a, b))| d.checked_add(a)?.checked_add(b))
        .collect::<Option<_>>()
        .ok_or_else(|| fail("padded shape overflows"))?;
    super::copy::checked_count(&shape)?;
    let storage = map_storage!(t.storage(), v =>
        pad_constant(v, t.shape(), &shape, widths, &Default::default()));
    make(shape, storage)
}

/// The row-major digits of `index` over `dims`.
fn digits(mut index: usize, dims: &[usize]) -> Vec<usize> {
    let mut out = vec![0; dims.len()];
    for (d, &n) in out.iter_mut().zip(dims).rev() {
        *d = index % n.max(1);
        index /= n.max(1);
    }
    out
}

fn space_to_batch(t: &Tensor, block: &[usize], pads: &[(usize, usize)]) -> KResult<Tensor> {
    let dims = block.len();
    let mut widths = vec![(0, 0); t.rank()];
    widths[1..=dims].copy_from_slice(pads);
    let owned;
    let padded = if pads.iter().any(|&(a, b)| a != 0 || b != 0) {
        owned = pad_zeros(t, &widths)?;
        &owned
    } else {
        t
    };
    let shape = padded.shape();
    let mut out_shape = vec![shape[0].saturating_mul(prod(block))];
    for (i, &b) in block.iter().enumerate() {
        let size = shape[1 + i];
        if !size.is_multiple_of(b) {
            return Err(fail(format!(
                "padded_shape[{i}]={size} is not divisible by block_shape[{i}]={b}"
            )));
        }
        out_shape.push(size / b);
    }
    out_shape.extend_from_slice(&shape[1 + dims..]);
    if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let s = strides(shape);
    let batch = shape[0];
    let first = (0..out_shape[0])
        .map(|ob| {
            let js = digits(ob / batch, block);
            (ob % batch) * s[0] + js.iter().zip(&s[1..]).map(|(j, st)| j * st).sum::<usize>()
        })
        .collect();
    let mut tables = vec![first];
    for i in 0..dims {
        tables.push(
            (0..out_shape[1 + i])
                .map(|k| k * block[i] * s[1 + i])
                .collect(),
        );
    }
    for a in 1 + dims..shape.len() {
        tables.push((0..shape[a]).map(|k| k * s[a]).collect());
    }
    gather_tensor(padded, &tables)
}

fn batch_to_space(t: &Tensor, block: &[usize], crops: &[(usize, usize)]) -> KResult<Tensor> {
    let dims = block.len();
    let shape = t.shape();
    let blocks = prod(block);
    let batch = shape[0];
    if !batch.is_multiple_of(blocks) {
        return Err(fail(format!(
            "Input batch dimension ({batch}) is not divisible by product of block sizes \
             ({blocks})"
        )));
    }
    let out_batch = batch / blocks;
    let mut out_shape = vec![out_batch];
    for (i, (&b, &(start, end))) in block.iter().zip(crops).enumerate() {
        let size = shape[1 + i]
            .checked_mul(b)
            .ok_or_else(|| fail("output shape overflows"))?;
        if start.saturating_add(end) > size {
            return Err(fail(format!(
                "Cropped size must be non-negative: crop_start[{i}] = {start}, crop_end[{i}] = \
                 {end}, size {size}"
            )));
        }
        out_shape.push(size - start - end);
    }
    out_shape.extend_from_slice(&shape[1 + dims..]);
    if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let s = strides(shape);
    let mut tables = vec![(0..out_batch).map(|b| b * s[0]).collect::<Vec<_>>()];
    for i in 0..dims {
        // Digit i of the block index counts in units of the later digits' block sizes.
        let digit_stride = prod(&block[i + 1..]) * out_batch * s[0];
        let (b, start) = (block[i], crops[i].0);
        tables.push(
            (0..out_shape[1 + i])
                .map(|y| {
                    let full = y + start;
                    (full / b) * s[1 + i] + (full % b) * digit_stride
                })
                .collect(),
        );
    }
    for a in 1 + dims..shape.len() {
        tables.push((0..shape[a]).map(|k| k * s[a]).collect());
    }
    gather_tensor(t, &tables)
}

fn depth_op(node: &NodeSpec, to_space: bool) -> Made {
    let size = node.attrs.int("block_size")?;
    let format = node.attrs.string_or("data_format", "NHWC")?;
    if format != "NHWC" {
        return Err(format!(
            "Only NHWC data_format supported on CPU. Got {format}"
        ));
    }
    let bs = usize::try_from(size)
        .ok()
        .filter(|&b| b >= 2)
        .ok_or_else(|| format!("block_size must be at least 2, got {size}"))?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        check_4d(&t)?;
        one(if to_space {
            depth_to_space(&t, bs)?
        } else {
            space_to_depth(&t, bs)?
        })
    }))
}

fn depth_to_space(t: &Tensor, bs: usize) -> KResult<Tensor> {
    let &[n, h, w, c] = t.shape() else {
        return Err(fail("input should be 4-dimensional"));
    };
    let square = bs * bs;
    if !c.is_multiple_of(square) {
        return Err(fail(format!(
            "Input depth dimension {c} should be divisible by: {square}"
        )));
    }
    let depth = c / square;
    let out_shape = [n, h.saturating_mul(bs), w.saturating_mul(bs), depth];
    if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let s = strides(t.shape());
    gather_tensor(
        t,
        &[
            (0..n).map(|i| i * s[0]).collect(),
            (0..out_shape[1])
                .map(|y| (y / bs) * s[1] + (y % bs) * bs * depth)
                .collect(),
            (0..out_shape[2])
                .map(|x| (x / bs) * s[2] + (x % bs) * depth)
                .collect(),
            (0..depth).collect(),
        ],
    )
}

fn space_to_depth(t: &Tensor, bs: usize) -> KResult<Tensor> {
    let &[n, h, w, c] = t.shape() else {
        return Err(fail("input should be 4-dimensional"));
    };
    if !h.is_multiple_of(bs) || !w.is_multiple_of(bs) {
        return Err(fail(format!(
            "Image width {w} and height {h} should be divisible by block_size: {bs}"
        )));
    }
    let out_shape = [n, h / bs, w / bs, c.saturating_mul(bs * bs)];
    if let Some(empty) = if_empty(t.dtype(), &out_shape)? {
        return Ok(empty);
    }
    let s = strides(t.shape());
    gather_tensor(
        t,
        &[
            (0..n).map(|i| i * s[0]).collect(),
            (0..out_shape[1]).map(|i| i * bs * s[1]).collect(),
            (0..out_shape[2]).map(|j| j * bs * s[2]).collect(),
            (0..out_shape[3])
                .map(|k| {
                    let (cell, d) = (k / c, k % c);
                    (cell / bs) * s[1] + (cell % bs) * s[2] + d
                })
                .collect(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_to_batch_and_back_round_trip() {
        let t = Tensor::from_vec(vec![1, 4, 4, 1], (0..16).collect::<Vec<i32>>());
        let b = space_to_batch(&t, &[2, 2], &[(0, 0), (0, 0)]).unwrap();
        assert_eq!(b.shape(), &[4, 2, 2, 1]);
        assert_eq!(b.values::<i32>().unwrap()[..4], [0, 2, 8, 10]);
        assert_eq!(b.values::<i32>().unwrap()[4..8], [1, 3, 9, 11]);
        let back = batch_to_space(&b, &[2, 2], &[(0, 0), (0, 0)]).unwrap();
        assert_eq!(back.values::<i32>(), t.values::<i32>());
        let padded = space_to_batch(&t, &[2, 2], &[(1, 1), (0, 0)]).unwrap();
        assert_eq!(padded.shape(), &[4, 3, 2, 1]);
        let cropped = batch_to_space(&padded, &[2, 2], &[(1, 1), (0, 0)]).unwrap();
        assert_eq!(cropped.values::<i32>(), t.values::<i32>());
    }

    #[test]
    fn depth_and_space_are_inverse() {
        let t = Tensor::from_vec(vec![1, 2, 2, 4], (0..16).collect::<Vec<i32>>());
        let d = depth_to_space(&t, 2).unwrap();
        assert_eq!(d.shape(), &[1, 4, 4, 1]);
        assert_eq!(d.values::<i32>().unwrap()[..4], [0, 1, 4, 5]);
        let back = space_to_depth(&d, 2).unwrap();
        assert_eq!(back.values::<i32>(), t.values::<i32>());
    }
}
