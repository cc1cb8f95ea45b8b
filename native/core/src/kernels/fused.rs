//! TensorFlow's internal fused ops, which the plan optimizer (engine::fuse) rewrites chains
//! into: `_FusedConv2D`, `_FusedDepthwiseConv2dNative` and `_FusedMatMul` with fused_ops
//! `[BiasAdd]`, `[BiasAdd, <activation>]`, `[BiasAdd, Add]` or `[BiasAdd, Add, <activation>]`
//! (Add: a residual input of the output's shape, the op's fourth input; the activation may be
//! `_MklSwish`, x * sigmoid(x), the name TensorFlow's oneDNN fusions give it). A float32 NHWC
//! convolution applies them to each block of output while it is still in cache; anything else
//! runs the base op and then one pass over its output.
//!
//! `_SavedModelChannelAffine` is the project's own: a chain of per-channel steps by constants
//! and an activation that follows no convolution (engine::fuse::fuse_affine), in one pass.

use std::sync::{Arc, OnceLock};

use crate::dtype::DType;
use crate::engine::fuse::{CHANNEL_AFFINE, FUSED_ACTIVATIONS, SWISH};
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::math::fast::{sigmoid_f32, swish_f32, tanh_f32};
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::output::{zeroed_chunks, Split};
use crate::kernels::nn::{
    conv_fused, conv_out_shape, conv_spec, depthwise_fused, depthwise_out_shape, Spec,
};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    for base in ["Conv2D", "DepthwiseConv2dNative", "MatMul"] {
        if r.contains(base) {
            r.add(fused_name(base), fused);
        }
    }
    r.add(CHANNEL_AFFINE, channel_affine);
}

fn fused_name(base: &str) -> &'static str {
    match base {
        "Conv2D" => "_FusedConv2D",
        "DepthwiseConv2dNative" => "_FusedDepthwiseConv2dNative",
        _ => "_FusedMatMul",
    }
}

#[derive(Clone, Copy)]
enum Activation {
    None,
    Relu,
    Relu6,
    Elu,
    LeakyRelu(f32),
    Sigmoid,
    Tanh,
    Swish,
}

/// The convolutions whose kernels take the epilogue themselves.
#[derive(Clone)]
enum Direct {
    Conv(Spec),
    Depthwise(Spec),
}

/// What follows the base op: its bias, an optional residual input, an activation.
#[derive(Clone, Copy)]
struct Tail {
    activation: Activation,
    residual: bool,
}

fn fused(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let base = node.op.trim_start_matches("_Fused");
    let registry = crate::kernels::registry();
    let info = registry
        .get(base)
        .ok_or_else(|| format!("no kernel for the fused op's base {base}"))?;
    let inner = (info.factory)(&NodeSpec {
        name: node.name,
        op: base,
        attrs: crate::engine::attrs::Attrs::new(node.attrs.map()),
        num_inputs: 2,
    })?;
    let tail = tail(node)?;
    let direct = match base {
        "Conv2D" => Some(Direct::Conv(conv_spec(&node.attrs)?)),
        "DepthwiseConv2dNative" => Some(Direct::Depthwise(conv_spec(&node.attrs)?)),
        _ => None,
    }
    .filter(|d| match d {
        Direct::Conv(s) | Direct::Depthwise(s) => !s.channels_first,
    });
    let add = residual_add(node)?;
    let arity = 3 + usize::from(tail.residual);
    Ok(boxed(move |ctx, inputs| {
        if inputs.len() != arity {
            return Err(fail(format!("takes {arity} inputs, got {}", inputs.len())));
        }
        let bias = tensor_input(inputs, 2)?;
        let bias = bias
            .values::<f32>()
            .ok_or_else(|| fail(format!("bias must be float32, got {}", bias.dtype())))?;
        if bias.is_empty() {
            return Err(fail("bias must not be empty"));
        }
        let residual = match tail.residual {
            true => Some(tensor_input(inputs, 3)?),
            false => None,
        };
        if let Some(direct) = &direct {
            let (x, filter) = (tensor_input(inputs, 0)?, tensor_input(inputs, 1)?);
            if let Some(out) = convolve(direct, &x, &filter, bias, residual.as_deref(), tail)? {
                return Ok(vec![Value::Tensor(Arc::new(out))]);
            }
        }
        let mut outputs = inner.run(ctx, &inputs[..2])?;
        let Some(Value::Tensor(out)) = outputs.first_mut() else {
            return Err(fail("the base op gave no tensor"));
        };
        match (residual, &add) {
            (Some(r), Some(add)) if r.shape() != out.shape() => {
                // A residual that broadcasts: bias first, then TensorFlow's Add, then activation.
                finish(out, bias, None, Activation::None)?;
                let sum = add.run(ctx, &[Value::Tensor(out.clone()), Value::Tensor(r)])?;
                let mut sum = tensor_of(sum)?;
                activate(&mut sum, tail.activation)?;
                Ok(vec![Value::Tensor(sum)])
            }
            (residual, _) => {
                finish(out, bias, residual.as_deref(), tail.activation)?;
                Ok(outputs)
            }
        }
    }))
}

/// The activation and whether there is a residual input, from fused_ops and num_args.
fn tail(node: &NodeSpec) -> Result<Tail, String> {
    let ops = node.attrs.strings("fused_ops")?;
    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
    let (residual, rest) = match ops.as_slice() {
        ["BiasAdd", "Add", rest @ ..] => (true, rest),
        ["BiasAdd", rest @ ..] => (false, rest),
        other => return Err(format!("fused_ops {other:?} is not supported")),
    };
    let activation = activation_of(node, rest)
        .ok_or_else(|| format!("fused_ops {ops:?} is not supported"))??;
    let num_args = node.attrs.int_or("num_args", 1)?;
    if num_args != 1 + i64::from(residual) {
        return Err(format!(
            "fused_ops {ops:?} take {} extra inputs, num_args is {num_args}",
            1 + usize::from(residual)
        ));
    }
    Ok(Tail {
        activation,
        residual,
    })
}

/// The activation fused_ops ends with (`rest`: none or one op); None if it is not one.
fn activation_of(node: &NodeSpec, rest: &[&str]) -> Option<Result<Activation, String>> {
    let activation = match rest {
        [] => Activation::None,
        [act] if *act == SWISH => Activation::Swish,
        [act] if FUSED_ACTIVATIONS.contains(act) => match *act {
            "Relu" => Activation::Relu,
            "Relu6" => Activation::Relu6,
            "Elu" => Activation::Elu,
            "LeakyRelu" => {
                return Some(
                    node.attrs
                        .float_or("leakyrelu_alpha", 0.2)
                        .map(Activation::LeakyRelu),
                )
            }
            "Sigmoid" => Activation::Sigmoid,
            _ => Activation::Tanh,
        },
        _ => return None,
    };
    Some(Ok(activation))
}

/// `_SavedModelChannelAffine`: activation(x * scale + shift) per channel (the last dimension,
/// which may also be 1 and broadcast), one pass; two roundings per element, as the Mul and Add
/// it replaces make them. Scale and shift are the plan's constants, so their repeated patterns
/// are made on the first call and kept while the same tensors come back.
fn channel_affine(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let ops = node.attrs.strings("fused_ops")?;
    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
    let activation = activation_of(node, &ops)
        .ok_or_else(|| format!("fused_ops {ops:?} is not supported"))??;
    let rank = node.attrs.int_or("rank", 1)?;
    let rank = usize::try_from(rank)
        .ok()
        .filter(|r| (1..=8).contains(r))
        .ok_or_else(|| format!("rank {rank} is not between 1 and 8"))?;
    let kept: OnceLock<Patterns> = OnceLock::new();
    Ok(boxed(move |_ctx, inputs| {
        if inputs.len() != 3 {
            return Err(fail(format!("takes 3 inputs, got {}", inputs.len())));
        }
        let floats = |i: usize| {
            let t = tensor_input(inputs, i)?;
            match t.dtype() {
                DType::Float32 => Ok(t),
                other => Err(fail(format!("input {i} must be float32, got {other}"))),
            }
        };
        let (x, scale, shift) = (floats(0)?, floats(1)?, floats(2)?);
        let first = kept.get_or_init(|| Patterns::new(&scale, &shift));
        let fresh;
        let patterns = if first.made_of(&scale, &shift) {
            first
        } else {
            fresh = Patterns::new(&scale, &shift);
            &fresh
        };
        affine(&x, patterns, rank, activation).map(|t| vec![Value::Tensor(Arc::new(t))])
    }))
}

/// Scale and shift, and both repeated into patterns of at least `PATTERN` values (whole
/// channel rows), so that the inner loops of `tiled_affine` are long enough to vectorize.
struct Patterns {
    scale: Arc<Tensor>,
    shift: Arc<Tensor>,
    tiled_scale: Vec<f32>,
    tiled_shift: Vec<f32>,
}

impl Patterns {
    const PATTERN: usize = 1024;

    fn new(scale: &Arc<Tensor>, shift: &Arc<Tensor>) -> Patterns {
        let repeat = |t: &Tensor| -> Vec<f32> {
            let values = t.values::<f32>().unwrap_or(&[]);
            let len = values.len() * Self::PATTERN.div_ceil(values.len().max(1));
            values.iter().copied().cycle().take(len).collect()
        };
        Patterns {
            tiled_scale: repeat(scale),
            tiled_shift: repeat(shift),
            scale: scale.clone(),
            shift: shift.clone(),
        }
    }

    /// Whether these patterns were made of these very tensors (held here, so never reused).
    fn made_of(&self, scale: &Arc<Tensor>, shift: &Arc<Tensor>) -> bool {
        Arc::ptr_eq(&self.scale, scale) && Arc::ptr_eq(&self.shift, shift)
    }
}

/// The body of `_SavedModelChannelAffine` on float32 tensors.
fn affine(x: &Tensor, patterns: &Patterns, rank: usize, activation: Activation) -> KResult<Tensor> {
    let (Some(xs), Some(scale), Some(shift)) = (
        x.values::<f32>(),
        patterns.scale.values::<f32>(),
        patterns.shift.values::<f32>(),
    ) else {
        return Err(fail("inputs must be float32"));
    };
    let channels = scale.len();
    if channels == 0 || shift.len() != channels {
        return Err(fail(format!(
            "scale has {channels} values and shift {}",
            shift.len()
        )));
    }
    let mut shape = vec![1; rank.saturating_sub(x.shape().len())];
    shape.extend_from_slice(x.shape());
    let width = shape.last().copied().unwrap_or(1);
    if width != channels && width != 1 {
        return Err(fail(format!(
            "Incompatible shapes: {:?} vs. [{channels}]",
            x.shape()
        )));
    }
    if let Some(last) = shape.last_mut() {
        *last = channels;
    }
    let out = if width == channels {
        tiled_affine(xs, &patterns.tiled_scale, &patterns.tiled_shift, activation)?
    } else {
        let mut out = Vec::with_capacity(xs.len() * channels);
        for &x in xs {
            let start = out.len();
            out.extend(scale.iter().map(|s| x * s));
            apply(&mut out[start..], shift, None, activation);
        }
        out
    };
    Ok(Tensor::from_vec(shape, out))
}

/// activation(x * scale + shift) with `x` whole rows of channels and `scale`/`shift` their
/// repeated patterns, in one pass: each block is still in cache for the shift's pass. A large
/// tensor (DenseNet's batch-normalized concatenations at batch 32: a tenth of the call on one
/// thread) is split over rayon's threads.
fn tiled_affine(
    x: &[f32],
    scale: &[f32],
    shift: &[f32],
    activation: Activation,
) -> KResult<Vec<f32>> {
    let threads = rayon::current_num_threads().max(1);
    if x.len() < PARALLEL_WORK || threads < 2 {
        let mut out = Vec::with_capacity(x.len());
        // Every block (the last included) starts at a row's start, so at the patterns' start.
        for block in x.chunks(scale.len()) {
            let start = out.len();
            out.extend(block.iter().zip(scale).map(|(x, s)| x * s));
            apply(&mut out[start..], &shift[..block.len()], None, activation);
        }
        return Ok(out);
    }
    let chunk = scale.len();
    let split = Split {
        count: x.len(),
        chunk,
        share: x.len().div_ceil(chunk).div_ceil(4 * threads) * chunk,
        parallel: true,
    };
    zeroed_chunks(
        split,
        || (),
        |_, first, out| {
            let block = x
                .get(first..first + out.len())
                .ok_or_else(|| fail("the affine's output outgrew its input"))?;
            for ((o, x), s) in out.iter_mut().zip(block).zip(scale) {
                *o = x * s;
            }
            apply(out, &shift[..out.len()], None, activation);
            Ok(())
        },
    )
}

/// TensorFlow's AddV2 on float32, for residuals that broadcast.
fn residual_add(node: &NodeSpec) -> Result<Option<Box<dyn Kernel>>, String> {
    let registry = crate::kernels::registry();
    let Some(info) = registry.get("AddV2") else {
        return Ok(None);
    };
    let mut attrs = std::collections::HashMap::new();
    attrs.insert(
        "T".to_string(),
        crate::protos::AttrValue {
            value: Some(crate::protos::attr_value::Value::Type(
                DType::Float32.to_proto(),
            )),
        },
    );
    (info.factory)(&NodeSpec {
        name: node.name,
        op: "AddV2",
        attrs: crate::engine::attrs::Attrs::new(&attrs),
        num_inputs: 2,
    })
    .map(Some)
}

fn tensor_of(outputs: Vec<Value>) -> KResult<Arc<Tensor>> {
    match outputs.into_iter().next() {
        Some(Value::Tensor(t)) => Ok(t),
        _ => Err(fail("Add gave no tensor")),
    }
}

/// The convolution with the tail applied to each block of output as it is computed; None when
/// the inputs are not float32 or the residual's shape is not the output's (the caller then
/// runs the general path).
fn convolve(
    direct: &Direct,
    x: &Tensor,
    filter: &Tensor,
    bias: &[f32],
    residual: Option<&Tensor>,
    tail: Tail,
) -> KResult<Option<Tensor>> {
    if x.dtype() != DType::Float32 || filter.dtype() != DType::Float32 {
        return Ok(None);
    }
    let shape = match direct {
        Direct::Conv(spec) => conv_out_shape(spec, x, filter)?,
        Direct::Depthwise(spec) => depthwise_out_shape(spec, x, filter)?,
    };
    check_bias(bias.len(), shape[3])?;
    let residual = match residual {
        None => None,
        Some(r) if r.shape() == shape.as_slice() => Some(
            r.values::<f32>()
                .ok_or_else(|| fail(format!("residual must be float32, got {}", r.dtype())))?,
        ),
        Some(_) => return Ok(None),
    };
    let epilogue = |offset: usize, rows: &mut [f32]| {
        let side = residual.map(|r| &r[offset..offset + rows.len()]);
        apply(rows, bias, side, tail.activation);
    };
    let out = match direct {
        Direct::Conv(spec) => conv_fused(spec, x, filter, &epilogue)?,
        Direct::Depthwise(spec) => depthwise_fused(spec, x, filter, &epilogue)?,
    };
    Ok(Some(out))
}

fn check_bias(bias: usize, channels: usize) -> KResult<()> {
    if bias == channels {
        return Ok(());
    }
    Err(fail(format!(
        "bias has {bias} values, the output has {channels} channels"
    )))
}

/// Adds the bias (and the residual, when given: same shape as `out`) and activates, in place.
fn finish(
    out: &mut Arc<Tensor>,
    bias: &[f32],
    residual: Option<&Tensor>,
    activation: Activation,
) -> KResult<()> {
    let channels = out.shape().last().copied().unwrap_or(1);
    check_bias(bias.len(), channels)?;
    let residual = residual
        .map(|r| {
            r.values::<f32>()
                .ok_or_else(|| fail(format!("residual must be float32, got {}", r.dtype())))
        })
        .transpose()?;
    let values = Arc::make_mut(out)
        .values_mut::<f32>()
        .ok_or_else(|| fail("the base op's output is not float32"))?;
    if residual.is_some_and(|r| r.len() != values.len()) {
        return Err(fail("the residual input's shape is not the output's"));
    }
    apply(values, bias, residual, activation);
    Ok(())
}

/// The activation alone, in place (after a broadcasting residual add).
fn activate(out: &mut Arc<Tensor>, activation: Activation) -> KResult<()> {
    if matches!(activation, Activation::None) {
        return Ok(());
    }
    let values = Arc::make_mut(out)
        .values_mut::<f32>()
        .ok_or_else(|| fail("Add's output is not float32"))?;
    apply(values, &[0.0], None, activation);
    Ok(())
}

/// `f(value + bias [+ residual])` over whole pixels (channels last), in one pass; the
/// activation is chosen once, outside the loop, so each loop is specialized and vectorizes.
/// Compiled also for AVX-512 and AVX2 (chosen at run time): 16 or 8 lanes instead of SSE2's 4
/// for the exponentials of sigmoid, tanh and swish. Rust never contracts a multiply and an add
/// into an FMA, so every variant gives the same bits.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn apply(values: &mut [f32], bias: &[f32], residual: Option<&[f32]>, activation: Activation) {
    match activation {
        Activation::None => each(values, bias, residual, |x| x),
        Activation::Relu => each(values, bias, residual, |x| x.max(0.0)),
        Activation::Relu6 => each(values, bias, residual, |x| x.clamp(0.0, 6.0)),
        Activation::Elu => each(
            values,
            bias,
            residual,
            |x| {
                if x > 0.0 {
                    x
                } else {
                    x.exp_m1()
                }
            },
        ),
        Activation::LeakyRelu(alpha) => {
            each(
                values,
                bias,
                residual,
                |x| {
                    if x > 0.0 {
                        x
                    } else {
                        alpha * x
                    }
                },
            )
        }
        Activation::Sigmoid => each(values, bias, residual, sigmoid_f32),
        Activation::Tanh => each(values, bias, residual, tanh_f32),
        Activation::Swish => each(values, bias, residual, swish_f32),
    }
}

#[inline(always)]
fn each(values: &mut [f32], bias: &[f32], residual: Option<&[f32]>, f: impl Fn(f32) -> f32) {
    // No channels: no values either (the bias has one value per channel).
    if bias.is_empty() {
        return;
    }
    let mut wide = [0f32; WIDE_ROW];
    let bias = widened(bias, &mut wide);
    match residual {
        None => {
            for row in values.chunks_mut(bias.len()) {
                for (v, b) in row.iter_mut().zip(bias) {
                    *v = f(*v + b);
                }
            }
        }
        Some(side) => {
            let rows = values.chunks_mut(bias.len()).zip(side.chunks(bias.len()));
            for (row, side) in rows {
                for ((v, b), s) in row.iter_mut().zip(bias).zip(side) {
                    *v = f(*v + b + s);
                }
            }
        }
    }
}

/// Rows of fewer channels than half this are run several pixels at a time.
const WIDE_ROW: usize = 128;

/// `bias` repeated to fill most of `wide` when it is short, else `bias` itself. A row of 8
/// channels (a small model's) vectorizes only 4 lanes wide with a scalar tail, and one flat
/// loop for a single bias value ran 3x slower than rows (measured, `bench_epilogue`); rows of
/// up to 128 values take whole 16-lane registers. The rows' values are a whole number of pixels, so
/// a last row shorter than the repeated bias still lines up with it.
#[inline(always)]
fn widened<'a>(bias: &'a [f32], wide: &'a mut [f32; WIDE_ROW]) -> &'a [f32] {
    if bias.len() > WIDE_ROW / 2 {
        return bias;
    }
    let len = WIDE_ROW / bias.len() * bias.len();
    for row in wide[..len].chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
    }
    &wide[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tensor large enough to be split over threads gets, value by value, what the
    /// definition gives.
    #[test]
    fn large_affines_split_over_threads_match_the_definition() {
        let (scale, shift) = ([0.5f32, -2.0, 3.25], [1.0f32, 0.25, -4.0]);
        let tiled = |v: &[f32]| -> Vec<f32> { v.iter().copied().cycle().take(1023).collect() };
        let x: Vec<f32> = (0..(PARALLEL_WORK / 3 + 77) * 3)
            .map(|i| ((i * 7919) % 61) as f32 * 0.25 - 7.0)
            .collect();
        let got = tiled_affine(&x, &tiled(&scale), &tiled(&shift), Activation::Swish).unwrap();
        assert_eq!(got.len(), x.len());
        for (i, (g, v)) in got.iter().zip(&x).enumerate() {
            let want = swish_f32(v * scale[i % 3] + shift[i % 3]);
            assert_eq!(g.to_bits(), want.to_bits(), "value {i}");
        }
    }

    /// Short biases are repeated to fill wide rows: every value still gets its own channel's
    /// bias (and residual), bit for bit what a loop over single pixels gives, also when the
    /// values end in a partial repeat.
    #[test]
    fn short_rows_see_their_own_channels() {
        for channels in [1, 3, 8, 24, 64, 65, 200] {
            for pixels in [1, 2, 5, 17, 130] {
                let bias: Vec<f32> = (0..channels).map(|i| i as f32 * 0.37 - 3.0).collect();
                let base: Vec<f32> = (0..channels * pixels)
                    .map(|i| ((i * 7919) % 61) as f32 * 0.25 - 7.0)
                    .collect();
                let side: Vec<f32> = base.iter().map(|v| v * 0.5 + 1.0).collect();
                for residual in [None, Some(&side[..])] {
                    let mut got = base.clone();
                    apply(&mut got, &bias, residual, Activation::Swish);
                    let want: Vec<f32> = base
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let x = v + bias[i % channels];
                            swish_f32(residual.map_or(x, |r| x + r[i]))
                        })
                        .collect();
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    let with = residual.is_some();
                    assert!(
                        same,
                        "{channels} channels, {pixels} pixels, residual {with}"
                    );
                }
            }
        }
    }

    /// The epilogue's cost per element for each activation over a MobileNet-sized block
    /// (`cargo test --release -p savedmodel-core --lib bench_epilogue -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn bench_epilogue() {
        let channels = 96;
        let bias: Vec<f32> = (0..channels).map(|i| i as f32 * 0.01).collect();
        let narrow = &bias[..8];
        let base: Vec<f32> = (0..112 * 112 * channels)
            .map(|i| ((i % 97) as f32 - 48.0) * 0.1)
            .collect();
        let activations = [
            ("relu6", Activation::Relu6),
            ("sigmoid", Activation::Sigmoid),
            ("tanh", Activation::Tanh),
            ("swish", Activation::Swish),
        ];
        for (name, activation) in activations {
            let biases = [
                ("per channel", &bias[..]),
                ("8 channels", narrow),
                ("scalar", &bias[..1]),
            ];
            for (what, bias) in biases {
                let mut best = f64::INFINITY;
                for _ in 0..30 {
                    let mut values = base.clone();
                    let start = std::time::Instant::now();
                    apply(&mut values, bias, None, activation);
                    best = best.min(start.elapsed().as_secs_f64());
                }
                println!(
                    "{name:8} {what:12} {:.3} ns/element",
                    best * 1e9 / base.len() as f64
                );
            }
        }
    }
}
