//! TensorFlow's internal fused ops, which the plan optimizer (engine::fuse) rewrites chains
//! into: `_FusedConv2D`, `_FusedDepthwiseConv2dNative` and `_FusedMatMul` with fused_ops
//! `[BiasAdd]`, `[BiasAdd, <activation>]`, `[BiasAdd, Add]` or `[BiasAdd, Add, <activation>]`
//! (Add: a residual input of the output's shape, the op's fourth input; the activation may be
//! `_MklSwish`, x * sigmoid(x), the name TensorFlow's oneDNN fusions give it), any of them
//! ending in `_SavedModelChannelAffine` after an activation: then `* scale + shift` per channel,
//! the last two inputs (a batch normalization after the activation). A float32 NHWC
//! convolution applies them to each block of output while it is still in cache; anything else
//! runs the base op and then one pass over its output.
//!
//! `_SavedModelChannelAffine` is the project's own: a chain of per-channel steps by constants
//! and an activation that follows no convolution (engine::fuse::fuse_affine), in one pass.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use crate::dtype::DType;
use crate::engine::context::RunContext;
use crate::engine::fuse::{CHANNEL_AFFINE, FUSED_ACTIVATIONS, SWISH};
use crate::engine::fuse_scale::INPUT_SCALE;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::fused_scale::scaled_input;
use crate::kernels::math::fast::{sigmoid, swish, tanh, Fma, Madd, Separate};
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::output::{zeroed_chunks, Split};
use crate::kernels::nn::{
    conv_fused, conv_out_shape, conv_spec, depthwise_fused, depthwise_out_shape, PackedFilter, Spec,
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

/// What follows the base op: its bias, an optional residual input, an activation, and an
/// optional scale and shift after it; and whether its input is a product (engine::fuse_scale:
/// the other factor is the last input).
#[derive(Clone, Copy)]
struct Tail {
    activation: Activation,
    residual: bool,
    post: bool,
    input_scale: bool,
}

/// The per-channel scale and shift applied after the activation.
#[derive(Clone, Copy)]
struct Post<'a> {
    scale: &'a [f32],
    shift: &'a [f32],
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
    let add = float32_kernel(node, "AddV2")?;
    let mul = match tail.input_scale {
        true if matches!(direct, Some(Direct::Conv(_))) => {
            Some(float32_kernel(node, "Mul")?.ok_or_else(|| "no kernel for Mul".to_string())?)
        }
        true => return Err(format!("{INPUT_SCALE} is only for an NHWC Conv2D")),
        false => None,
    };
    let post_at = 3 + usize::from(tail.residual);
    let arity = post_at + 2 * usize::from(tail.post) + usize::from(tail.input_scale);
    Ok(Box::new(Fused {
        inner,
        tail,
        direct,
        add,
        mul,
        post_at,
        arity,
        kept: OnceLock::new(),
        packed: None,
    }))
}

/// A `_Fused*` node: its base op's kernel, the output pass, and, for an NHWC Conv2D whose
/// filter the plan handed over ([`Kernel::absorb`]), that filter packed for its products.
struct Fused {
    inner: Box<dyn Kernel>,
    tail: Tail,
    direct: Option<Direct>,
    add: Option<Box<dyn Kernel>>,
    mul: Option<Box<dyn Kernel>>,
    /// Where the post-activation scale and shift inputs start, and how many inputs it takes.
    post_at: usize,
    arity: usize,
    kept: OnceLock<Patterns>,
    packed: Option<Arc<PackedFilter>>,
}

/// The filter a call multiplies by: its input, or the one the kernel keeps packed.
enum Filter<'a> {
    Input(Arc<Tensor>),
    Packed(&'a PackedFilter),
}

impl Filter<'_> {
    /// The filter as a tensor (rebuilt from the panels for a call they do not serve).
    fn tensor(&self) -> Arc<Tensor> {
        match self {
            Filter::Input(t) => Arc::clone(t),
            Filter::Packed(p) => Arc::new(p.tensor()),
        }
    }
}

impl Kernel for Fused {
    fn run(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        let (tail, arity) = (self.tail, self.arity);
        if inputs.len() != arity {
            return Err(fail(format!("takes {arity} inputs, got {}", inputs.len())));
        }
        let mut constants = vec![tensor_input(inputs, 2)?];
        if tail.post {
            constants.extend([
                tensor_input(inputs, self.post_at)?,
                tensor_input(inputs, self.post_at + 1)?,
            ]);
        }
        let channels = per_channel(&constants)?;
        let mut fresh = None;
        let pass = Pass::new(
            channels,
            tail,
            patterns_of(&self.kept, &mut fresh, &constants),
        );
        let residual = match tail.residual {
            true => Some(tensor_input(inputs, 3)?),
            false => None,
        };
        let x = tensor_input(inputs, 0)?;
        let (x, filter) = match (&self.packed, &self.mul) {
            (Some(packed), _) => (x, Filter::Packed(packed)),
            (None, Some(mul)) => {
                let factors = tensor_input(inputs, arity - 1)?;
                let filter = tensor_input(inputs, 1)?;
                let (x, filter) = scaled_input(ctx, mul.as_ref(), [x, factors], filter)?;
                (x, Filter::Input(filter))
            }
            (None, None) => (x, Filter::Input(tensor_input(inputs, 1)?)),
        };
        if let Some(direct) = &self.direct {
            if let Some(out) = convolve(direct, &x, &filter, residual.as_deref(), pass)? {
                return Ok(vec![Value::Tensor(Arc::new(out))]);
            }
        }
        let filter = filter.tensor();
        let mut outputs = self
            .inner
            .run(ctx, &[Value::Tensor(x), Value::Tensor(filter)])?;
        let Some(Value::Tensor(out)) = outputs.first_mut() else {
            return Err(fail("the base op gave no tensor"));
        };
        match (residual, &self.add) {
            (Some(r), Some(add)) if r.shape() != out.shape() => {
                // A residual that broadcasts: bias first, then TensorFlow's Add, then activation.
                let bias_only = Pass {
                    activation: Activation::None,
                    post: None,
                    ..pass
                };
                finish(out, None, bias_only)?;
                let sum = add.run(ctx, &[Value::Tensor(out.clone()), Value::Tensor(r)])?;
                let mut sum = tensor_of(sum)?;
                activate(&mut sum, pass)?;
                Ok(vec![Value::Tensor(sum)])
            }
            (residual, _) => {
                finish(out, residual.as_deref(), pass)?;
                Ok(outputs)
            }
        }
    }

    /// Keeps a Conv2D's constant filter packed (when the tiled path would multiply by it):
    /// not with an input scale, which changes the filter on every call.
    fn absorb(&mut self, input: usize, value: &Value) -> bool {
        let (Some(Direct::Conv(spec)), Value::Tensor(filter)) = (&self.direct, value) else {
            return false;
        };
        if input != 1 || self.tail.input_scale {
            return false;
        }
        self.packed = PackedFilter::of(spec, filter);
        self.packed.is_some()
    }
}

/// The output pass of a `_Fused*` node that another kernel runs inside its own loops
/// (kernels/bottleneck.rs): its fused_ops parsed once, its bias's patterns kept between
/// calls. Offered for passes whose extra inputs are a bias and a residual only.
pub(crate) struct OutputPass {
    tail: Tail,
    kept: OnceLock<Patterns>,
}

impl OutputPass {
    /// The node's pass; None when it also scales its input or scales and shifts its output.
    pub(crate) fn of(node: &NodeSpec) -> Result<Option<OutputPass>, String> {
        let tail = tail(node)?;
        Ok((!tail.post && !tail.input_scale).then(|| OutputPass {
            tail,
            kept: OnceLock::new(),
        }))
    }

    /// Whether the pass adds a residual input (the node's fourth).
    pub(crate) fn residual(&self) -> bool {
        self.tail.residual
    }

    /// The pass with the values of `bias`, which must be `channels` float32 values; `fresh`
    /// holds the patterns when `bias` is not the tensor of the first call.
    pub(crate) fn rows<'a>(
        &'a self,
        bias: &Arc<Tensor>,
        channels: usize,
        fresh: &'a mut Option<Patterns>,
    ) -> KResult<RowPass<'a>> {
        let bias = std::slice::from_ref(bias);
        check_bias(per_channel(bias)?, channels)?;
        let patterns = patterns_of(&self.kept, fresh, bias);
        Ok(RowPass(Pass::new(channels, self.tail, patterns)))
    }
}

/// An [`OutputPass`] ready to apply.
#[derive(Clone, Copy)]
pub(crate) struct RowPass<'a>(Pass<'a>);

impl<'a> RowPass<'a> {
    /// The pass over whole rows of output pixels (channels last), `residual` holding the
    /// residual input's values at the same places.
    pub(crate) fn apply(&self, rows: &mut [f32], residual: Option<&[f32]>) {
        let pass = self.0;
        apply(rows, pass.bias, residual, pass.activation, pass.post);
    }

    /// The pass over channels `range` of the pass's only: for rows of `range.len()` values
    /// (a kernel that splits its work between threads by channels).
    pub(crate) fn part(&self, range: Range<usize>) -> KResult<RowPass<'a>> {
        let pass = self.0;
        let outside = || fail(format!("internal: channels {range:?} of {}", pass.channels));
        if range.end > pass.channels {
            return Err(outside());
        }
        let slice = |values: &'a [f32]| values.get(range.clone()).ok_or_else(outside);
        let post = match pass.post {
            Some(p) => Some(Post {
                scale: slice(p.scale)?,
                shift: slice(p.shift)?,
            }),
            None => None,
        };
        Ok(RowPass(Pass {
            channels: range.len(),
            bias: slice(pass.bias)?,
            activation: pass.activation,
            post,
        }))
    }
}

/// The activation, whether there is a residual input and whether a scale and shift follow
/// the activation, from fused_ops and num_args.
fn tail(node: &NodeSpec) -> Result<Tail, String> {
    let ops = node.attrs.strings("fused_ops")?;
    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
    let (residual, rest) = match ops.as_slice() {
        ["BiasAdd", "Add", rest @ ..] => (true, rest),
        ["BiasAdd", rest @ ..] => (false, rest),
        other => return Err(format!("fused_ops {other:?} is not supported")),
    };
    let (post, rest) = match rest {
        [act, CHANNEL_AFFINE] => (true, std::slice::from_ref(act)),
        rest => (false, rest),
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
        post,
        input_scale: node.attrs.bool_or(INPUT_SCALE, false)?,
    })
}

/// The channels of the bias (the first of `constants`), checked to be float32 and not empty,
/// with the scale and shift after the activation (the others) as many float32 values.
fn per_channel(constants: &[Arc<Tensor>]) -> KResult<usize> {
    let mut channels = 0;
    for (i, (t, what)) in constants.iter().zip(["bias", "scale", "shift"]).enumerate() {
        let values = t
            .values::<f32>()
            .ok_or_else(|| fail(format!("the {what} must be float32, got {}", t.dtype())))?;
        if i == 0 {
            channels = values.len();
        }
        if values.is_empty() || values.len() != channels {
            return Err(fail(format!(
                "the {what} has {} values, the bias {channels}; neither may be empty",
                values.len()
            )));
        }
    }
    Ok(channels)
}

/// What the output pass applies: the bias, the activation and the scale and shift after it,
/// as patterns (see `Patterns`) of `channels` channels.
#[derive(Clone, Copy)]
struct Pass<'a> {
    channels: usize,
    bias: &'a [f32],
    activation: Activation,
    post: Option<Post<'a>>,
}

impl<'a> Pass<'a> {
    fn new(channels: usize, tail: Tail, patterns: &'a Patterns) -> Pass<'a> {
        let post = match patterns.tiled.as_slice() {
            [_, scale, shift] => Some(Post { scale, shift }),
            _ => None,
        };
        Pass {
            channels,
            bias: patterns.tiled.first().map_or(&[], Vec::as_slice),
            activation: tail.activation,
            post,
        }
    }
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
        let mut fresh = None;
        let patterns = patterns_of(&kept, &mut fresh, &[scale, shift]);
        affine(&x, patterns, rank, activation).map(|t| vec![Value::Tensor(Arc::new(t))])
    }))
}

/// A node's per-channel constants (a bias; a scale and a shift), each repeated into a pattern
/// of whole channel rows at least `PATTERN` values long. The output passes run over rows of
/// the pattern's length: a row of 8 channels (a small model's) alone vectorizes only 4 lanes
/// wide with a scalar tail, and one flat loop for a single bias value ran 3x slower than rows
/// (measured, `bench_epilogue`). The constants come from the plan, so the patterns are made on
/// a kernel's first call and kept while the same tensors come back: no copy per output tile.
pub(crate) struct Patterns {
    sources: Vec<Arc<Tensor>>,
    tiled: Vec<Vec<f32>>,
}

/// The least length of a pattern.
const PATTERN: usize = 1024;

impl Patterns {
    fn new(sources: &[Arc<Tensor>]) -> Patterns {
        let tiled = sources
            .iter()
            .map(|t| repeated(t.values::<f32>().unwrap_or(&[])))
            .collect();
        Patterns {
            sources: sources.to_vec(),
            tiled,
        }
    }

    /// Whether these patterns were made of these very tensors (held here, so never reused).
    fn made_of(&self, sources: &[Arc<Tensor>]) -> bool {
        self.sources.len() == sources.len()
            && self
                .sources
                .iter()
                .zip(sources)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// `values` repeated into a pattern of at least `PATTERN` values (itself when longer).
fn repeated(values: &[f32]) -> Vec<f32> {
    let len = values.len() * PATTERN.div_ceil(values.len().max(1));
    values.iter().copied().cycle().take(len).collect()
}

/// The patterns of `sources`: those `kept` from the first call when made of the same tensors,
/// else new ones, held in `fresh`.
fn patterns_of<'a>(
    kept: &'a OnceLock<Patterns>,
    fresh: &'a mut Option<Patterns>,
    sources: &[Arc<Tensor>],
) -> &'a Patterns {
    let first = kept.get_or_init(|| Patterns::new(sources));
    if first.made_of(sources) {
        return first;
    }
    fresh.insert(Patterns::new(sources))
}

/// The body of `_SavedModelChannelAffine` on float32 tensors.
fn affine(x: &Tensor, patterns: &Patterns, rank: usize, activation: Activation) -> KResult<Tensor> {
    let (Some(xs), [scale, shift], [tiled_scale, tiled_shift]) = (
        x.values::<f32>(),
        patterns.sources.as_slice(),
        patterns.tiled.as_slice(),
    ) else {
        return Err(fail("inputs must be float32"));
    };
    let (Some(scale), Some(shift)) = (scale.values::<f32>(), shift.values::<f32>()) else {
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
        tiled_affine(xs, tiled_scale, tiled_shift, activation)?
    } else {
        let mut out = Vec::with_capacity(xs.len() * channels);
        for &x in xs {
            let start = out.len();
            out.extend(scale.iter().map(|s| x * s));
            apply(&mut out[start..], shift, None, activation, None);
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
            apply(
                &mut out[start..],
                &shift[..block.len()],
                None,
                activation,
                None,
            );
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
            apply(out, &shift[..out.len()], None, activation, None);
            Ok(())
        },
    )
}

/// TensorFlow's binary `op` on float32: AddV2 for residuals that broadcast, Mul for an input
/// product that cannot fold into the weights.
fn float32_kernel(node: &NodeSpec, op: &str) -> Result<Option<Box<dyn Kernel>>, String> {
    let registry = crate::kernels::registry();
    let Some(info) = registry.get(op) else {
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
        op,
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

/// The convolution with the output pass applied to each block of output as it is computed;
/// None when the inputs are not float32 or the residual's shape is not the output's (the
/// caller then runs the general path).
fn convolve(
    direct: &Direct,
    x: &Tensor,
    filter: &Filter,
    residual: Option<&Tensor>,
    pass: Pass,
) -> KResult<Option<Tensor>> {
    let float32 = match filter {
        Filter::Input(f) => f.dtype() == DType::Float32,
        Filter::Packed(_) => true,
    };
    if x.dtype() != DType::Float32 || !float32 {
        return Ok(None);
    }
    let shape = match (direct, filter) {
        (Direct::Conv(spec), Filter::Packed(p)) => p.out_shape(spec, x)?,
        (Direct::Conv(spec), Filter::Input(f)) => conv_out_shape(spec, x, f)?,
        (Direct::Depthwise(spec), f) => depthwise_out_shape(spec, x, &f.tensor())?,
    };
    check_bias(pass.channels, shape[3])?;
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
        apply(rows, pass.bias, side, pass.activation, pass.post);
    };
    let out = match (direct, filter) {
        (Direct::Conv(spec), Filter::Packed(p)) => p.conv_fused(spec, x, &epilogue)?,
        (Direct::Conv(spec), f) => conv_fused(spec, x, &f.tensor(), &epilogue)?,
        (Direct::Depthwise(spec), f) => depthwise_fused(spec, x, &f.tensor(), &epilogue)?,
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

/// The output pass over the base op's whole output, in place (the residual, when given, of
/// the same shape as `out`).
fn finish(out: &mut Arc<Tensor>, residual: Option<&Tensor>, pass: Pass) -> KResult<()> {
    let channels = out.shape().last().copied().unwrap_or(1);
    check_bias(pass.channels, channels)?;
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
    apply(values, pass.bias, residual, pass.activation, pass.post);
    Ok(())
}

/// The activation and the scale and shift after it, in place, after a broadcasting residual
/// add (whose output may have more channels than the bias when the bias has one).
fn activate(out: &mut Arc<Tensor>, pass: Pass) -> KResult<()> {
    if matches!(pass.activation, Activation::None) && pass.post.is_none() {
        return Ok(());
    }
    let channels = out.shape().last().copied().unwrap_or(1);
    if pass.post.is_some() && pass.channels != 1 {
        check_bias(pass.channels, channels)?;
    }
    let values = Arc::make_mut(out)
        .values_mut::<f32>()
        .ok_or_else(|| fail("Add's output is not float32"))?;
    let zeros = vec![0f32; pass.post.map_or(PATTERN, |p| p.scale.len())];
    apply(values, &zeros, None, pass.activation, pass.post);
    Ok(())
}

/// `f(value + bias [+ residual]) [* scale + shift]` over rows of whole pixels (channels last;
/// `bias`, and the scale and shift when given, are patterns of one length), in one pass; the
/// activation is chosen once, outside the loop, so each loop is specialized and vectorizes.
/// Compiled also for AVX-512 and AVX2 (chosen at run time): 16 or 8 lanes instead of SSE2's 4
/// for the exponentials of sigmoid, tanh and swish, whose polynomials take FMA steps there
/// (`fast::Madd`), as the Sigmoid and Tanh ops do. Rust never contracts a multiply and an add
/// by itself, so the bias, residual, scale and shift round as the ops they replace.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn apply(
    values: &mut [f32],
    bias: &[f32],
    residual: Option<&[f32]>,
    activation: Activation,
    post: Option<Post>,
) {
    if multiversion::target::target_cfg_f!(target_feature = "fma") {
        activate_with::<Fma>(values, bias, residual, activation, post);
    } else {
        activate_with::<Separate>(values, bias, residual, activation, post);
    }
}

#[inline(always)]
fn activate_with<M: Madd>(
    values: &mut [f32],
    bias: &[f32],
    residual: Option<&[f32]>,
    activation: Activation,
    post: Option<Post>,
) {
    match activation {
        Activation::None => each(values, bias, residual, post, |x| x),
        Activation::Relu => each(values, bias, residual, post, |x| x.max(0.0)),
        Activation::Relu6 => each(values, bias, residual, post, |x| x.clamp(0.0, 6.0)),
        Activation::Elu => each(values, bias, residual, post, |x| {
            if x > 0.0 {
                x
            } else {
                x.exp_m1()
            }
        }),
        Activation::LeakyRelu(alpha) => each(values, bias, residual, post, |x| {
            if x > 0.0 {
                x
            } else {
                alpha * x
            }
        }),
        Activation::Sigmoid => each(values, bias, residual, post, sigmoid::<M>),
        Activation::Tanh => each(values, bias, residual, post, tanh::<M>),
        Activation::Swish => each(values, bias, residual, post, swish::<M>),
    }
}

#[inline(always)]
fn each(
    values: &mut [f32],
    bias: &[f32],
    residual: Option<&[f32]>,
    post: Option<Post>,
    f: impl Fn(f32) -> f32,
) {
    match post {
        None => rows(values, bias, residual, [bias, bias], |x, _, _| f(x)),
        Some(p) => rows(values, bias, residual, [p.scale, p.shift], |x, s, t| {
            f(x) * s + t
        }),
    }
}

#[inline(always)]
fn rows(
    values: &mut [f32],
    bias: &[f32],
    residual: Option<&[f32]>,
    [scale, shift]: [&[f32]; 2],
    g: impl Fn(f32, f32, f32) -> f32,
) {
    // No channels: no values either (the bias has one value per channel).
    if bias.is_empty() {
        return;
    }
    let steps = || bias.iter().zip(scale).zip(shift);
    match residual {
        None => {
            for row in values.chunks_mut(bias.len()) {
                for (v, ((b, s), t)) in row.iter_mut().zip(steps()) {
                    *v = g(*v + b, *s, *t);
                }
            }
        }
        Some(side) => {
            let rows = values.chunks_mut(bias.len()).zip(side.chunks(bias.len()));
            for (row, side) in rows {
                for ((v, ((b, s), t)), r) in row.iter_mut().zip(steps()).zip(side) {
                    *v = g(*v + b + r, *s, *t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::math::fast::{as_here, Swish};

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
            let want = as_here(&Swish, v * scale[i % 3] + shift[i % 3]);
            assert_eq!(g.to_bits(), want.to_bits(), "value {i}");
        }
    }

    /// The per-channel constants are repeated into patterns: every value still gets its own
    /// channel's bias (residual, scale and shift), bit for bit what a loop over single pixels
    /// gives, also when the values end in a partial pattern.
    #[test]
    fn patterns_give_every_value_its_own_channel() {
        for channels in [1, 3, 8, 24, 64, 65, 200, 1500] {
            for pixels in [1, 2, 5, 17, 130, 300] {
                let bias: Vec<f32> = (0..channels).map(|i| i as f32 * 0.37 - 3.0).collect();
                let scale: Vec<f32> = (0..channels).map(|i| 1.5 - i as f32 * 0.11).collect();
                let shift: Vec<f32> = (0..channels).map(|i| i as f32 * 0.07 - 0.5).collect();
                let base: Vec<f32> = (0..channels * pixels)
                    .map(|i| ((i * 7919) % 61) as f32 * 0.25 - 7.0)
                    .collect();
                let side: Vec<f32> = base.iter().map(|v| v * 0.5 + 1.0).collect();
                let patterns = [repeated(&scale), repeated(&shift)];
                let post = Post {
                    scale: &patterns[0],
                    shift: &patterns[1],
                };
                for (residual, post) in [
                    (None, None),
                    (Some(&side[..]), None),
                    (None, Some(post)),
                    (Some(&side[..]), Some(post)),
                ] {
                    let mut got = base.clone();
                    apply(
                        &mut got,
                        &repeated(&bias),
                        residual,
                        Activation::Swish,
                        post,
                    );
                    let want = base.iter().enumerate().map(|(i, v)| {
                        let x = v + bias[i % channels];
                        let y = as_here(&Swish, residual.map_or(x, |r| x + r[i]));
                        post.map_or(y, |_| y * scale[i % channels] + shift[i % channels])
                    });
                    let same = got
                        .iter()
                        .zip(want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    let (with, after) = (residual.is_some(), post.is_some());
                    assert!(
                        same,
                        "{channels} channels, {pixels} pixels, residual {with}, post {after}"
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
                let bias = repeated(bias);
                let mut best = f64::INFINITY;
                for _ in 0..30 {
                    let mut values = base.clone();
                    let start = std::time::Instant::now();
                    apply(&mut values, &bias, None, activation, None);
                    best = best.min(start.elapsed().as_secs_f64());
                }
                println!(
                    "{name:8} {what:12} {:.3} ns/element",
                    best * 1e9 / base.len() as f64
                );
            }
        }
    }

    /// Wall and CPU time (bench::time) of fused convolutions with a swish epilogue on batch-1
    /// layer shapes of EfficientNetB0 and ResNet50 (`cargo test --release -p savedmodel-core
    /// --lib bench_fused_conv -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn bench_fused_conv() {
        use crate::kernels::nn::bench::{spec, tensor, time};
        let layers: [(&[usize], &[usize], usize); 12] = [
            (&[1, 112, 112, 16], &[1, 1, 16, 96], 1),
            (&[1, 56, 56, 24], &[1, 1, 24, 144], 1),
            (&[1, 56, 56, 144], &[1, 1, 144, 24], 1),
            (&[1, 28, 28, 40], &[1, 1, 40, 240], 1),
            (&[1, 28, 28, 240], &[1, 1, 240, 40], 1),
            (&[1, 14, 14, 112], &[1, 1, 112, 672], 1),
            (&[1, 14, 14, 672], &[1, 1, 672, 112], 1),
            (&[1, 7, 7, 320], &[1, 1, 320, 1280], 1),
            (&[1, 14, 14, 256], &[1, 1, 256, 1024], 1),
            (&[1, 14, 14, 1024], &[1, 1, 1024, 256], 1),
            (&[1, 28, 28, 128], &[3, 3, 128, 128], 1),
            (&[1, 14, 14, 256], &[3, 3, 256, 256], 2),
        ];
        for (xs, fs, stride) in layers {
            let (x, f, s) = (tensor(xs), tensor(fs), spec(stride));
            let bias = repeated(&vec![0.1f32; fs[3]]);
            let epilogue = |_: usize, rows: &mut [f32]| {
                apply(rows, &bias, None, Activation::Swish, None);
            };
            let out = xs[1].div_ceil(stride) * xs[2].div_ceil(stride);
            let flops = 2.0 * (out * fs[0] * fs[1] * fs[2] * fs[3]) as f64;
            time(&format!("{xs:?} {fs:?} /{stride}"), flops, || {
                conv_fused(&s, &x, &f, &epilogue).unwrap();
            });
        }
    }
}
