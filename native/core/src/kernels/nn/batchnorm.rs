//! FusedBatchNorm, V2 and V3. Inference normalizes with the given mean and variance (passed
//! through as batch_mean/batch_variance; the reserve spaces, uninitialized on TensorFlow's
//! CPU, are zeros). Training normalizes with the batch's mean and biased variance, outputs
//! the unbiased variance blended into the running values by exponential_avg_factor, and keeps
//! the batch mean and biased variance in the reserve spaces. Statistics accumulate in f64;
//! the normalization is one multiply-add per element with per-channel factors in f32.

use std::borrow::Cow;

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::Value;
use crate::kernels::util::{f32_to_half, half_to_f32, make};
use crate::tensor::{Storage, Tensor};

#[derive(Clone, Copy)]
struct Attrs {
    epsilon: f32,
    factor: f32,
    channels_last: bool,
    training: bool,
    v3: bool,
}

pub fn fused_batch_norm(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let channels_last = match node.attrs.string_or("data_format", "NHWC")? {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => return Err(format!("unsupported data_format {other:?}")),
    };
    let attrs = Attrs {
        epsilon: node.attrs.float_or("epsilon", 1e-4)?,
        factor: node.attrs.float_or("exponential_avg_factor", 1.0)?,
        channels_last,
        training: node.attrs.bool_or("is_training", true)?,
        v3: node.op == "FusedBatchNormV3",
    };
    Ok(boxed(move |_, inputs| {
        let tensors = (0..5)
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<_>>>()?;
        let refs: Vec<&Tensor> = tensors.iter().map(|t| &**t).collect();
        Ok(normalize(&attrs, &refs)?
            .into_iter()
            .map(Value::tensor)
            .collect())
    }))
}

/// x viewed as (outer, channels, inner).
#[derive(Clone, Copy)]
struct Shape {
    outer: usize,
    channels: usize,
    inner: usize,
}

fn shape_of(x: &Tensor, channels_last: bool) -> KResult<Shape> {
    let dims = x.shape();
    if !(4..=5).contains(&dims.len()) {
        return Err(fail(format!(
            "input must be 4 or 5-dimensional, got shape {dims:?}"
        )));
    }
    let axis = if channels_last { dims.len() - 1 } else { 1 };
    Ok(Shape {
        outer: dims[..axis].iter().product(),
        channels: dims[axis],
        inner: dims[axis + 1..].iter().product(),
    })
}

/// A per-channel input as f32, checked to have `channels` elements.
fn per_channel<'a>(t: &'a Tensor, name: &str, channels: usize) -> KResult<&'a [f32]> {
    let values = t
        .values::<f32>()
        .ok_or_else(|| fail(format!("{name} must be float32, got {}", t.dtype())))?;
    if t.rank() != 1 || values.len() != channels {
        return Err(fail(format!(
            "{name} must be 1-dimensional with the {channels} channels of x, got shape {:?}",
            t.shape()
        )));
    }
    Ok(values)
}

fn normalize(attrs: &Attrs, inputs: &[&Tensor]) -> KResult<Vec<Tensor>> {
    let [x, scale, offset, mean, variance] = inputs else {
        return Err(fail("FusedBatchNorm takes 5 inputs"));
    };
    let s = shape_of(x, attrs.channels_last)?;
    let scale = per_channel(scale, "scale", s.channels)?;
    let offset = per_channel(offset, "offset", s.channels)?;
    let running = !attrs.training || attrs.factor != 1.0;
    let (mean, variance) = if running {
        (
            per_channel(mean, "mean", s.channels)?,
            per_channel(variance, "variance", s.channels)?,
        )
    } else {
        (&[][..], &[][..])
    };
    let xv: Cow<[f32]> = match x.storage() {
        Storage::Float32(v) => Cow::Borrowed(v),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            Cow::Owned(half_to_f32(x).unwrap_or_default())
        }
        _ => {
            return Err(fail(format!(
                "x must be float16, bfloat16 or float32, got {}",
                x.dtype()
            )))
        }
    };
    let stats = if attrs.training {
        training_stats(attrs, &xv, s, mean, variance)
    } else {
        Stats {
            batch_mean: mean.to_vec(),
            batch_var: variance.to_vec(),
            use_mean: mean.to_vec(),
            use_var: variance.to_vec(),
            saved_mean: vec![0.0; s.channels],
            saved_var: vec![0.0; s.channels],
        }
    };
    let y = apply(&xv, s, scale, offset, &stats, attrs.epsilon);
    let y = match x.dtype() {
        DType::Float32 => Storage::Float32(y),
        half => f32_to_half(half, &y).ok_or_else(|| fail("internal: not a half type"))?,
    };
    let vector = |v: Vec<f32>| Tensor::from_vec(vec![s.channels], v);
    let empty = x.is_empty();
    let nan_if_empty = |v: Vec<f32>| vector(if empty { vec![f32::NAN; s.channels] } else { v });
    let mut outputs = vec![
        make(x.shape().to_vec(), y)?,
        nan_if_empty(stats.batch_mean),
        nan_if_empty(stats.batch_var),
        vector(stats.saved_mean),
        vector(stats.saved_var),
    ];
    if attrs.v3 {
        outputs.push(Tensor::scalar(0.0f32));
    }
    Ok(outputs)
}

struct Stats {
    batch_mean: Vec<f32>,
    batch_var: Vec<f32>,
    use_mean: Vec<f32>,
    use_var: Vec<f32>,
    saved_mean: Vec<f32>,
    saved_var: Vec<f32>,
}

/// The batch's statistics per channel (f64 sums), blended with the running values when
/// exponential_avg_factor is not 1.
fn training_stats(
    attrs: &Attrs,
    x: &[f32],
    s: Shape,
    running_mean: &[f32],
    running_var: &[f32],
) -> Stats {
    let count = s.outer * s.inner;
    let mut sum = vec![0f64; s.channels];
    each_channel_run(x, s, |c, run| {
        sum[c] += run.iter().map(|&v| f64::from(v)).sum::<f64>();
    });
    let mean: Vec<f64> = sum.iter().map(|&t| t / count.max(1) as f64).collect();
    let mut squares = vec![0f64; s.channels];
    each_channel_run(x, s, |c, run| {
        squares[c] += run
            .iter()
            .map(|&v| (f64::from(v) - mean[c]).powi(2))
            .sum::<f64>();
    });
    let var: Vec<f64> = squares.iter().map(|&t| t / count.max(1) as f64).collect();
    let correction = count as f64 / count.saturating_sub(1).max(1) as f64;
    let factor = f64::from(attrs.factor);
    let blend = |running: &[f32], batch: f64, c: usize| {
        if attrs.factor == 1.0 {
            batch
        } else {
            (1.0 - factor) * f64::from(running[c]) + factor * batch
        }
    };
    let narrow = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    Stats {
        batch_mean: (0..s.channels)
            .map(|c| blend(running_mean, mean[c], c) as f32)
            .collect(),
        batch_var: (0..s.channels)
            .map(|c| blend(running_var, var[c] * correction, c) as f32)
            .collect(),
        use_mean: narrow(&mean),
        use_var: narrow(&var),
        saved_mean: narrow(&mean),
        saved_var: narrow(&var),
    }
}

/// Calls `f(channel, run)` for every contiguous run of one channel's values.
fn each_channel_run(x: &[f32], s: Shape, mut f: impl FnMut(usize, &[f32])) {
    if s.inner == 1 {
        for row in x.chunks_exact(s.channels.max(1)) {
            for (c, v) in row.iter().enumerate() {
                f(c, std::slice::from_ref(v));
            }
        }
        return;
    }
    for (i, run) in x.chunks_exact(s.inner.max(1)).enumerate() {
        f(i % s.channels.max(1), run);
    }
}

/// y = x · multiplier + shift per channel, multiplier = scale / sqrt(var + epsilon).
fn apply(
    x: &[f32],
    s: Shape,
    scale: &[f32],
    offset: &[f32],
    stats: &Stats,
    epsilon: f32,
) -> Vec<f32> {
    let multiplier: Vec<f32> = scale
        .iter()
        .zip(&stats.use_var)
        .map(|(&g, &v)| g * (1.0 / (v + epsilon).sqrt()))
        .collect();
    let shift: Vec<f32> = offset
        .iter()
        .zip(&stats.use_mean)
        .zip(&multiplier)
        .map(|((&b, &m), &k)| b - m * k)
        .collect();
    let mut y = x.to_vec();
    if y.is_empty() || s.channels == 0 {
        return y;
    }
    if s.inner == 1 {
        for row in y.chunks_exact_mut(s.channels) {
            for ((v, &k), &b) in row.iter_mut().zip(&multiplier).zip(&shift) {
                *v = *v * k + b;
            }
        }
        return y;
    }
    for (i, run) in y.chunks_exact_mut(s.inner).enumerate() {
        let c = i % s.channels;
        let (k, b) = (multiplier[c], shift[c]);
        for v in run {
            *v = *v * k + b;
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inference_uses_the_given_statistics() {
        let attrs = Attrs {
            epsilon: 0.0,
            factor: 1.0,
            channels_last: true,
            training: false,
            v3: true,
        };
        let x = Tensor::from_vec(vec![1, 1, 2, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
        let c = |v: [f32; 2]| Tensor::from_vec(vec![2], v.to_vec());
        let (scale, offset, mean, var) =
            (c([2.0, 1.0]), c([1.0, 0.0]), c([1.0, 2.0]), c([4.0, 1.0]));
        let out = normalize(&attrs, &[&x, &scale, &offset, &mean, &var]).unwrap();
        assert_eq!(out.len(), 6);
        assert_eq!(out[0].values::<f32>().unwrap(), &[1.0, 0.0, 3.0, 2.0]);
        assert_eq!(out[1].values::<f32>().unwrap(), &[1.0, 2.0]);
        let short = c([1.0, 2.0]).reshaped(vec![1, 2]).unwrap();
        assert!(normalize(&attrs, &[&x, &scale, &offset, &short, &var]).is_err());
    }
}
