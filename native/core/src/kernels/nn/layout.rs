//! Axis permutations of row-major buffers: NCHW tensors are computed in NHWC (transposed in
//! and out), and einsum brings operands into matrix-product order.

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// `data` (row-major, of `shape`) with its axes reordered: output axis `i` is input axis
/// `perm[i]`. The caller passes a permutation of `0..shape.len()` and a matching buffer.
pub fn permute<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    let all = strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let out_strides: Vec<usize> = perm.iter().map(|&p| all[p]).collect();
    gather(data, &out_shape, &out_strides)
}

/// The row-major elements of a `shape` view of `data` whose element (i, j, ...) is
/// `data[i * strides[0] + j * strides[1] + ...]` (strides of a permutation, a diagonal or a
/// broadcast); the caller guarantees every such index is inside `data`.
pub fn gather<T: Copy>(data: &[T], shape: &[usize], strides: &[usize]) -> Vec<T> {
    let rank = shape.len();
    let count: usize = shape.iter().product();
    let mut out = Vec::with_capacity(count);
    if count == 0 {
        return out;
    }
    if rank == 0 {
        out.extend_from_slice(&data[..1]);
        return out;
    }
    let (inner, inner_stride) = (shape[rank - 1], strides[rank - 1]);
    let mut index = vec![0usize; rank - 1];
    let mut base = 0usize;
    loop {
        out.extend((0..inner).map(|i| data[base + i * inner_stride]));
        // Advance the outer index like an odometer, keeping `base` in step.
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            index[d] += 1;
            base += strides[d];
            if index[d] < shape[d] {
                break;
            }
            base -= strides[d] * shape[d];
            index[d] = 0;
        }
    }
}

/// An NCHW buffer of `shape` (in NCHW order) as NHWC.
pub fn to_nhwc<T: Copy>(data: &[T], shape: [usize; 4]) -> Vec<T> {
    permute(data, &shape, &[0, 2, 3, 1])
}

/// An NHWC buffer of `shape` (in NHWC order) as NCHW.
pub fn to_nchw<T: Copy>(data: &[T], shape: [usize; 4]) -> Vec<T> {
    permute(data, &shape, &[0, 3, 1, 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutes_like_numpy_transpose() {
        let x: Vec<i32> = (0..24).collect();
        // np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1)[1] == [[1, 5, 9], [13, 17, 21]]
        let y = permute(&x, &[2, 3, 4], &[2, 0, 1]);
        assert_eq!(&y[6..12], &[1, 5, 9, 13, 17, 21]);
        let back = to_nchw(&to_nhwc(&x, [2, 3, 2, 2]), [2, 2, 2, 3]);
        assert_eq!(back, x);
        assert!(permute::<i32>(&[], &[0, 3], &[1, 0]).is_empty());
        assert_eq!(permute(&[5], &[], &[]), vec![5]);
    }
}
