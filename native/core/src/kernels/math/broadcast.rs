//! Elementwise binary maps with numpy broadcasting, with contiguous fast paths for what models
//! do most: equal shapes, a scalar operand, and a vector (or any trailing block) repeated over
//! rows, such as a per-channel bias or scale. Everything else runs row by row along the last
//! output axis, so the inner loops stay contiguous.

use rayon::prelude::*;

use super::num::{par_map, PARALLEL_MIN};
use crate::engine::kernel::{fail, KResult};
use crate::kernels::util::{broadcast_shape, broadcast_strides};
use crate::tensor::element_count;

/// `f(a, b)` elementwise with broadcasting: the output shape and its elements in row-major order.
pub fn map2<A: Copy + Sync, B: Copy + Sync, O: Send>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    f: impl Fn(A, B) -> O + Sync + Send,
) -> KResult<(Vec<usize>, Vec<O>)> {
    if same_shape(a_shape, b_shape) {
        return Ok((a_shape.to_vec(), zip(a, b, &f)));
    }
    let out = broadcast_shape(a_shape, b_shape)?;
    let count = element_count(&out).ok_or_else(|| fail(format!("shape {out:?} is too large")))?;
    let values = if count == 0 {
        Vec::new()
    } else if a.len() == count && b.len() == 1 {
        let y = b[0];
        par_map(a, |x| f(x, y))
    } else if b.len() == count && a.len() == 1 {
        let x = a[0];
        par_map(b, |y| f(x, y))
    } else if a.len() == count && is_trailing_block(b_shape, &out) {
        tiled(a, b, &f)
    } else if b.len() == count && is_trailing_block(a_shape, &out) {
        tiled(b, a, |y, x| f(x, y))
    } else {
        by_rows(a, a_shape, b, b_shape, &out, count, &f)
    };
    Ok((out, values))
}

/// Whether two shapes are equal, compared inline: the shapes are short, and for the scalars and
/// small tensors of loop counters and recurrent cells a call of `memcmp` costs more than the op.
fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Equal shapes: across threads when the work is large.
fn zip<A: Copy + Sync, B: Copy + Sync, O: Send>(
    a: &[A],
    b: &[B],
    f: &(impl Fn(A, B) -> O + Sync),
) -> Vec<O> {
    if a.len() < PARALLEL_MIN {
        return a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
    }
    let mut out = Vec::with_capacity(a.len());
    a.par_iter()
        .zip(b)
        .with_min_len(PARALLEL_MIN / 4)
        .map(|(&x, &y)| f(x, y))
        .collect_into_vec(&mut out);
    out
}

/// Whether `shape` (leading ones aside) is the trailing dimensions of `out`, so its elements
/// repeat in order over `out`'s row-major elements.
fn is_trailing_block(shape: &[usize], out: &[usize]) -> bool {
    let first = shape.iter().position(|&d| d != 1).unwrap_or(shape.len());
    let kept = &shape[first..];
    !kept.is_empty() && out.ends_with(kept)
}

/// `f(big, small)` with `small` repeated over `big` block by block. A short `small` (a
/// per-channel scale over 8 channels) is first repeated into a pattern of at least
/// `PATTERN_MIN` elements, so that each pass of the loop is long enough to vectorize instead
/// of paying its setup every few elements.
fn tiled<A: Copy, B: Copy, O>(big: &[A], small: &[B], f: impl Fn(A, B) -> O) -> Vec<O> {
    let mut out = Vec::with_capacity(big.len());
    if small.is_empty() {
        return out;
    }
    let repeated: Vec<B>;
    let pattern = if small.len() >= PATTERN_MIN {
        small
    } else {
        let len = small.len() * PATTERN_MIN.div_ceil(small.len());
        repeated = small.iter().copied().cycle().take(len).collect();
        &repeated
    };
    // `big` holds whole blocks of `small`, so every chunk (the last included) starts at the
    // pattern's start.
    for block in big.chunks(pattern.len()) {
        out.extend(block.iter().zip(pattern).map(|(&x, &y)| f(x, y)));
    }
    out
}

/// The shortest repeating pattern [`tiled`] runs over.
const PATTERN_MIN: usize = 256;

/// The general case: one output row (last axis) at a time, each operand either running along
/// the row or repeating one element.
fn by_rows<A: Copy, B: Copy, O>(
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out: &[usize],
    count: usize,
    f: &impl Fn(A, B) -> O,
) -> Vec<O> {
    let rank = out.len();
    let sa = broadcast_strides(a_shape, out);
    let sb = broadcast_strides(b_shape, out);
    let width = out[rank - 1];
    let (step_a, step_b) = (sa[rank - 1], sb[rank - 1]);
    let mut values = Vec::with_capacity(count);
    let mut index = vec![0usize; rank - 1];
    let (mut oa, mut ob) = (0usize, 0usize);
    for _ in 0..count / width {
        match (step_a != 0, step_b != 0) {
            (true, true) => {
                let pairs = a[oa..oa + width].iter().zip(&b[ob..ob + width]);
                values.extend(pairs.map(|(&x, &y)| f(x, y)));
            }
            (true, false) => {
                let y = b[ob];
                values.extend(a[oa..oa + width].iter().map(|&x| f(x, y)));
            }
            (false, true) => {
                let x = a[oa];
                values.extend(b[ob..ob + width].iter().map(|&y| f(x, y)));
            }
            (false, false) => values.extend((0..width).map(|_| f(a[oa], b[ob]))),
        }
        for d in (0..rank - 1).rev() {
            index[d] += 1;
            oa += sa[d];
            ob += sb[d];
            if index[d] < out[d] {
                break;
            }
            oa -= sa[d] * index[d];
            ob -= sb[d] * index[d];
            index[d] = 0;
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(a: &[i32], sa: &[usize], b: &[i32], sb: &[usize]) -> (Vec<usize>, Vec<i32>) {
        map2(a, sa, b, sb, |x, y| x + y).unwrap()
    }

    #[test]
    fn every_path_broadcasts_like_numpy() {
        let six: Vec<i32> = (0..6).collect();
        assert_eq!(
            add(&six, &[2, 3], &[10], &[]).1,
            vec![10, 11, 12, 13, 14, 15]
        );
        assert_eq!(
            add(&[1, 2, 3], &[1, 3], &six, &[2, 3]).1,
            vec![1, 3, 5, 4, 6, 8]
        );
        assert_eq!(
            add(&six, &[2, 3], &[10, 20], &[2, 1]).1,
            vec![10, 11, 12, 23, 24, 25]
        );
        assert_eq!(
            add(&[1, 2], &[2, 1], &[10, 20, 30], &[3]),
            (vec![2, 3], vec![11, 21, 31, 12, 22, 32])
        );
        assert_eq!(add(&[1, 2, 3], &[1, 3], &[], &[0, 3]).0, vec![0, 3]);
        assert!(map2(&six, &[2, 3], &[1, 2], &[2], |x, y| x + y).is_err());
    }
}
