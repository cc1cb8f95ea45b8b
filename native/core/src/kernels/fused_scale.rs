//! The run-time half of engine::fuse_scale: a `_FusedConv2D` whose input is the product of
//! two tensors (a Mul folded into it) convolves one of them by weights whose input rows are
//! scaled by the other, when the other holds one factor per channel and scaling the weights is
//! less work than multiplying the feature map; else it runs TensorFlow's Mul first.

use std::sync::Arc;

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult, Kernel};
use crate::engine::{RunContext, Value};
use crate::tensor::Tensor;

/// The convolution's input and weights for the product `a * b` (in either order) convolved by
/// `filter` (HWIO): the feature map and the weights with input row c scaled by the factor of
/// channel c, or the Mul's result (`mul`, TensorFlow's broadcasting Mul) and `filter` itself.
pub(super) fn scaled_input(
    ctx: &RunContext,
    mul: &dyn Kernel,
    [a, b]: [Arc<Tensor>; 2],
    filter: Arc<Tensor>,
) -> KResult<(Arc<Tensor>, Arc<Tensor>)> {
    for (x, s) in [(&a, &b), (&b, &a)] {
        if let Some(weights) = folded(x, s, &filter) {
            return Ok((Arc::clone(x), Arc::new(weights)));
        }
    }
    let product = mul.run(ctx, &[Value::Tensor(a), Value::Tensor(b)])?;
    match product.into_iter().next() {
        Some(Value::Tensor(x)) => Ok((x, filter)),
        _ => Err(fail("the folded Mul gave no tensor")),
    }
}

/// `filter` with input row c multiplied by `s[c]`, when `s` broadcasts to `x` as one factor
/// per channel (its last dimension x's channels, every other dimension 1, no higher rank) and
/// the weights are fewer values than `x` (scaling them is then the cheaper pass).
fn folded(x: &Tensor, s: &Tensor, filter: &Tensor) -> Option<Tensor> {
    let (&[_, _, _, channels], &[_, _, rows, outputs]) = (x.shape(), filter.shape()) else {
        return None;
    };
    let per_channel = s.shape().last() == Some(&channels) && s.len() == channels;
    let float32 = [x, s, filter].iter().all(|t| t.dtype() == DType::Float32);
    if !per_channel || !float32 || rows != channels || s.shape().len() > 4 {
        return None;
    }
    if channels == 0 || outputs == 0 || filter.len() >= x.len() {
        return None;
    }
    let (factors, weights) = (s.values::<f32>()?, filter.values::<f32>()?);
    let mut scaled = Vec::with_capacity(weights.len());
    for (row, values) in weights.chunks_exact(outputs).enumerate() {
        let k = factors[row % channels];
        scaled.extend(values.iter().map(|w| w * k));
    }
    Some(Tensor::from_vec(filter.shape().to_vec(), scaled))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[usize]) -> Tensor {
        let count = shape.iter().product();
        Tensor::from_vec(shape.to_vec(), (0..count).map(|i| i as f32 + 1.0).collect())
    }

    #[test]
    fn channel_factors_scale_the_weights_input_rows() {
        let (x, s, filter) = (
            tensor(&[1, 4, 4, 3]),
            tensor(&[1, 1, 1, 3]),
            tensor(&[2, 1, 3, 2]),
        );
        let scaled = folded(&x, &s, &filter).unwrap();
        assert_eq!(scaled.shape(), filter.shape());
        let want = [1., 2., 6., 8., 15., 18., 7., 8., 18., 20., 33., 36.];
        assert_eq!(scaled.values::<f32>().unwrap(), want);
    }

    #[test]
    fn other_factors_or_larger_weights_do_not_fold() {
        let x = tensor(&[2, 4, 4, 3]);
        let filter = tensor(&[1, 1, 3, 2]);
        for s in [
            &[2, 1, 1, 3][..],
            &[1, 4, 4, 1],
            &[3, 1],
            &[1, 1, 1, 1, 3],
            &[1, 1, 1, 2],
        ] {
            assert!(folded(&x, &tensor(s), &filter).is_none(), "{s:?}");
        }
        assert!(folded(&x, &tensor(&[3]), &tensor(&[3, 3, 3, 12])).is_none());
        let ints = Tensor::from_vec(vec![3], vec![1i32, 2, 3]);
        assert!(folded(&x, &ints, &filter).is_none());
    }
}
