//! Fusion: rewriting a convolution or matmul with constant weights, followed by a chain of
//! per-channel affine ops (BiasAdd, Add, Sub, Mul and RealDiv by constants: biases,
//! inference-mode batch normalization, Keras' Normalization), optionally an Add of a tensor
//! computed at run time (a residual connection) and an optional activation, into one node of
//! TensorFlow's internal fused ops (`_FusedConv2D`, `_FusedDepthwiseConv2dNative`,
//! `_FusedMatMul`: fused_ops `[BiasAdd, (Add,) (<activation>)]`, the residual as a fourth
//! input). The scales are multiplied into the weights and the shifts become the bias, so the
//! chain costs one pass over the output instead of one per op. Per-channel steps after the
//! activation (Keras' `Conv2D(activation=...)` then `BatchNormalization`) cannot move into the
//! weights; they become a scale and a shift the fused kernel applies in the same pass
//! (fused_ops ending in `_SavedModelChannelAffine`, the project's own, with the two as the last
//! inputs).
//!
//! Patterns are matched after folding, so weights and batch-norm statistics are constants;
//! only float32 NHWC chains whose intermediate results nothing else reads are rewritten.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::engine::attrs::Attrs;
use crate::engine::graph::Src;
use crate::engine::ir::{Ir, IrNode};
use crate::engine::kernel::Registry;
use crate::engine::value::Value;
use crate::protos::attr_value::{ListValue, Value as A};
use crate::protos::AttrValue;
use crate::tensor::Tensor;

/// Activations the fused kernels apply in their output pass.
pub const FUSED_ACTIVATIONS: [&str; 6] = ["Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh"];

/// The fused_ops name of swish, x * sigmoid(x): no single op in a graph, but the two or three
/// nodes `swish_of` recognizes (EfficientNet's activation after every convolution).
pub const SWISH: &str = "_MklSwish";

/// The op of a standalone chain of per-channel affine steps and an optional activation (the
/// project's own, not TensorFlow's): inputs x, scale and shift; attrs `fused_ops` (the
/// activation, or none), `leakyrelu_alpha` and `rank` (the output's least rank, the constants').
pub const CHANNEL_AFFINE: &str = "_SavedModelChannelAffine";

/// Rewrites the fusable chains of `ir` in place (for the fused ops `registry` has kernels of),
/// taking scaled weights other plans made from `shared`.
pub fn fuse(ir: &mut Ir, registry: &Registry, shared: &ScaledWeights) {
    let mut uses = use_counts(ir);
    for i in 0..ir.nodes.len() {
        if !registry.contains(&format!("_Fused{}", ir.nodes[i].op)) {
            continue;
        }
        if let Some(rewrite) = match_chain(ir, i, &uses, shared) {
            apply(ir, rewrite, &mut uses);
        }
    }
}

/// Rewrites chains of per-channel affine steps by constants (and an optional activation) that
/// follow no convolution or matmul (batch normalization and ReLU after a concatenation or a
/// pooling, as each of DenseNet's layers begins) into one `_SavedModelChannelAffine` node: one
/// pass over the tensor instead of one per op. Runs after `fuse`, which folds the chains that
/// follow weights into them.
pub fn fuse_affine(ir: &mut Ir, registry: &Registry) {
    if !registry.contains(CHANNEL_AFFINE) {
        return;
    }
    let Ok(order) = ir.order() else {
        return;
    };
    let mut uses = use_counts(ir);
    for i in order {
        if let Some(rewrite) = match_affine(ir, i, &uses) {
            apply_affine(ir, rewrite, &mut uses);
        }
    }
}

/// The weights fusion scaled, shared by every plan of a model that scales the same weights by
/// the same factors: a Keras export's `serve` and `serving_default` signatures each inline the
/// same function, and each copy of ResNet50's folded weights is 100 MB. Entries hold weak
/// references, so the scaled weights go with the last plan that uses them.
#[derive(Default)]
pub struct ScaledWeights {
    entries: Mutex<HashMap<usize, Vec<Scaled>>>,
}

struct Scaled {
    /// The weights scaled; alive, so no other tensor can have its address (the map's key).
    source: Weak<Tensor>,
    scale: Vec<u32>,
    layout: Layout,
    result: Weak<Tensor>,
}

impl ScaledWeights {
    /// `weights` with output channel `c` multiplied by `scale[c]`, made once per model.
    fn get(&self, weights: &Arc<Tensor>, scale: &[f32], layout: Layout) -> Option<Arc<Tensor>> {
        if scale.iter().all(|&s| s == 1.0) {
            return Some(Arc::clone(weights));
        }
        let bits: Vec<u32> = scale.iter().map(|s| s.to_bits()).collect();
        let key = Arc::as_ptr(weights) as usize;
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let same = |e: &Scaled| {
            e.source.upgrade().is_some_and(|s| Arc::ptr_eq(&s, weights))
                && e.scale == bits
                && e.layout == layout
        };
        if let Some(found) = entries
            .get(&key)
            .and_then(|list| list.iter().find(|e| same(e)))
            .and_then(|e| e.result.upgrade())
        {
            return Some(found);
        }
        let result = Arc::new(scaled(weights, scale, layout)?);
        entries.retain(|_, list| {
            list.retain(|e| e.source.strong_count() > 0 && e.result.strong_count() > 0);
            !list.is_empty()
        });
        entries.entry(key).or_default().push(Scaled {
            source: Arc::downgrade(weights),
            scale: bits,
            layout,
            result: Arc::downgrade(&result),
        });
        Some(result)
    }
}

/// How many times each node output is read (data inputs, plan outputs), and which nodes are
/// named by control edges or roots (those are never fused away).
pub(crate) struct Uses {
    data: HashMap<(String, usize), usize>,
    pinned: std::collections::HashSet<String>,
    /// The nodes reading each node's outputs.
    pub(crate) consumers: HashMap<String, Vec<usize>>,
    /// Nodes inside a chain already rewritten: still in the IR until pruned, but no longer
    /// computed, so no other chain may extend through them.
    absorbed: std::collections::HashSet<usize>,
}

pub(crate) fn use_counts(ir: &Ir) -> Uses {
    let mut data: HashMap<(String, usize), usize> = HashMap::new();
    let mut pinned: std::collections::HashSet<String> = ir.roots.iter().cloned().collect();
    let mut consumers: HashMap<String, Vec<usize>> = HashMap::new();
    for (j, node) in ir.nodes.iter().enumerate() {
        for src in &node.inputs {
            if let Src::Node(n, k) = src {
                *data.entry((n.clone(), *k)).or_default() += 1;
                let list = consumers.entry(n.clone()).or_default();
                if list.last() != Some(&j) {
                    list.push(j);
                }
            }
        }
        pinned.extend(node.control.iter().cloned());
    }
    for src in &ir.outputs {
        if let Src::Node(n, _) = src {
            pinned.insert(n.clone());
        }
    }
    Uses {
        data,
        pinned,
        consumers,
        absorbed: Default::default(),
    }
}

impl Uses {
    /// Whether the node `name` is unpinned and its first output is read exactly `count` times
    /// (all of them data reads), so that a rewrite consuming those reads may remove it.
    pub(crate) fn only_read(&self, name: &str, count: usize) -> bool {
        !self.pinned.contains(name) && self.data.get(&(name.to_string(), 0)) == Some(&count)
    }
}

struct Rewrite {
    producer: usize,
    /// The chain's last node, which the fused node replaces (consumers keep its name).
    last: usize,
    weights: Arc<Tensor>,
    bias: Vec<f32>,
    activation: Option<(String, f32)>,
    /// A run-time tensor of the output's shape added before the activation.
    residual: Option<Src>,
    /// Scale and shift applied after the activation.
    post: Option<(Vec<f32>, Vec<f32>)>,
    /// The chain's nodes (the last one becomes the fused node).
    absorbed: Vec<usize>,
}

/// The chain starting at producer `i`, if it is worth fusing.
fn match_chain(ir: &Ir, i: usize, uses: &Uses, shared: &ScaledWeights) -> Option<Rewrite> {
    if uses.absorbed.contains(&i) {
        return None;
    }
    let producer = &ir.nodes[i];
    let (channels, layout) = output_channels(ir, producer)?;
    let weights = weights_of(ir, producer)?;
    let rank = if producer.op == "MatMul" { 2 } else { 4 };
    let mut scale = vec![1f32; channels];
    let mut shift = vec![0f32; channels];
    let mut current = i;
    let mut activation = None;
    let mut residual = None;
    let mut length = 0;
    let mut absorbed = vec![i];
    loop {
        if let Some(nodes) = swish_of(ir, uses, current) {
            activation = Some((SWISH.to_string(), 0.0));
            current = *nodes.last()?;
            absorbed.extend(nodes);
            length += 1;
            break;
        }
        let name = &ir.nodes[current].name;
        if !uses.only_read(name, 1) {
            break;
        }
        let next = match uses.consumers.get(name).map(Vec::as_slice) {
            Some(&[j]) if !uses.absorbed.contains(&j) => j,
            _ => break,
        };
        let node = &ir.nodes[next];
        if let Some(alpha) = activation_of(node) {
            activation = Some((node.op.clone(), alpha));
            absorbed.push(next);
            current = next;
            length += 1;
            break;
        }
        if residual.is_some() || constant_rank(ir, node) > rank {
            break;
        }
        if !affine_step(ir, node, &output(name), channels, &mut scale, &mut shift) {
            match residual_of(ir, node, name) {
                Some(other) => residual = Some(other),
                None => break,
            }
        }
        absorbed.push(next);
        current = next;
        length += 1;
    }
    if length == 0 {
        return None;
    }
    let post = match activation {
        Some(_) => post_affine(ir, uses, &mut current, &mut absorbed, channels, rank),
        None => None,
    };
    let weights = shared.get(&weights, &scale, layout)?;
    Some(Rewrite {
        producer: i,
        last: current,
        weights,
        bias: shift,
        activation,
        residual,
        post,
        absorbed,
    })
}

/// The per-channel steps by constants that follow the activation at `current` (a batch
/// normalization after `Conv2D(activation="relu")`), folded into one scale and shift and added
/// to the chain; None when there are none. A constant of a higher rank than the output's
/// would broadcast it, so it ends the chain.
fn post_affine(
    ir: &Ir,
    uses: &Uses,
    current: &mut usize,
    absorbed: &mut Vec<usize>,
    channels: usize,
    rank: usize,
) -> Option<(Vec<f32>, Vec<f32>)> {
    let mut scale = vec![1f32; channels];
    let mut shift = vec![0f32; channels];
    let mut steps = 0;
    loop {
        let name = &ir.nodes[*current].name;
        let Some(next) = sole_reader(ir, uses, name) else {
            break;
        };
        let node = &ir.nodes[next];
        if constant_rank(ir, node) > rank
            || !affine_step(ir, node, &output(name), channels, &mut scale, &mut shift)
        {
            break;
        }
        absorbed.push(next);
        *current = next;
        steps += 1;
    }
    (steps > 0).then_some((scale, shift))
}

struct AffineRewrite {
    input: Src,
    /// The chain's nodes, first to last (the last one becomes the fused node).
    absorbed: Vec<usize>,
    scale: Vec<f32>,
    shift: Vec<f32>,
    rank: usize,
    activation: Option<(String, f32)>,
}

/// The standalone affine chain starting at node `i` (a step by a constant on a run-time
/// tensor), if it has at least two ops and one of its constants has several channels. Steps
/// by a single value may come before the first per-channel one (Keras' Rescaling, then
/// Normalization: x * (1/255) + 0, - mean, / std over an image's three channels).
fn match_affine(ir: &Ir, i: usize, uses: &Uses) -> Option<AffineRewrite> {
    let first = &ir.nodes[i];
    if uses.absorbed.contains(&i) || first.inputs.len() != 2 || !float32(first) {
        return None;
    }
    let (input, constant) = match (ir.known(&first.inputs[0]), ir.known(&first.inputs[1])) {
        (None, Some(Value::Tensor(c))) => (first.inputs[0].clone(), c),
        (Some(Value::Tensor(c)), None) => (first.inputs[1].clone(), c),
        _ => return None,
    };
    let mut channels = constant.shape().last().copied().unwrap_or(1);
    let mut scale = vec![1f32; channels];
    let mut shift = vec![0f32; channels];
    if !affine_step(ir, first, &input, channels, &mut scale, &mut shift) {
        return None;
    }
    let mut rank = constant.shape().len();
    let mut absorbed = vec![i];
    let mut activation = None;
    let mut current = i;
    loop {
        let name = &ir.nodes[current].name;
        let Some(next) = sole_reader(ir, uses, name) else {
            break;
        };
        let node = &ir.nodes[next];
        if let Some(alpha) = activation_of(node) {
            activation = Some((node.op.clone(), alpha));
            absorbed.push(next);
            break;
        }
        let wider = constant_channels(ir, node).filter(|&c| channels == 1 && c > 1);
        let (mut s, mut h) = match wider {
            Some(c) => (vec![scale[0]; c], vec![shift[0]; c]),
            None => (scale.clone(), shift.clone()),
        };
        let width = wider.unwrap_or(channels);
        if !affine_step(ir, node, &output(name), width, &mut s, &mut h) {
            break;
        }
        (scale, shift, channels) = (s, h, width);
        rank = rank.max(constant_rank(ir, node));
        absorbed.push(next);
        current = next;
    }
    (absorbed.len() >= 2 && channels >= 2).then_some(AffineRewrite {
        input,
        absorbed,
        scale,
        shift,
        rank,
        activation,
    })
}

/// The node that alone reads node `name`'s one output, once, when it is still free to join a
/// chain and has no control inputs.
fn sole_reader(ir: &Ir, uses: &Uses, name: &str) -> Option<usize> {
    if !uses.only_read(name, 1) {
        return None;
    }
    match uses.consumers.get(name).map(Vec::as_slice) {
        Some(&[j]) if !uses.absorbed.contains(&j) && ir.nodes[j].control.is_empty() => Some(j),
        _ => None,
    }
}

/// A node's first output.
fn output(name: &str) -> Src {
    Src::Node(name.to_string(), 0)
}

/// The last dimension of the constant operand of an affine step (1 for a scalar).
fn constant_channels(ir: &Ir, node: &IrNode) -> Option<usize> {
    node.inputs.iter().find_map(|s| match ir.known(s) {
        Some(Value::Tensor(c)) => Some(c.shape().last().copied().unwrap_or(1)),
        _ => None,
    })
}

/// The rank of the constant operand of an affine step.
fn constant_rank(ir: &Ir, node: &IrNode) -> usize {
    node.inputs
        .iter()
        .filter_map(|s| match ir.known(s) {
            Some(Value::Tensor(c)) => Some(c.shape().len()),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn apply_affine(ir: &mut Ir, rewrite: AffineRewrite, uses: &mut Uses) {
    let (Some(&first), Some(&last)) = (rewrite.absorbed.first(), rewrite.absorbed.last()) else {
        return;
    };
    let last_name = ir.nodes[last].name.clone();
    let mut attrs = HashMap::new();
    let activation: Vec<Vec<u8>> = rewrite
        .activation
        .iter()
        .map(|(op, _)| op.as_bytes().to_vec())
        .collect();
    let alpha = rewrite.activation.as_ref().map_or(0.2, |(_, a)| *a);
    for (key, value) in [
        ("T", A::Type(crate::DType::Float32.to_proto())),
        (
            "fused_ops",
            A::List(Box::new(ListValue {
                s: activation,
                ..Default::default()
            })),
        ),
        ("leakyrelu_alpha", A::F(alpha)),
        ("rank", A::I(rewrite.rank as i64)),
    ] {
        attrs.insert(key.to_string(), AttrValue { value: Some(value) });
    }
    let channels = rewrite.scale.len();
    let mut inputs = vec![rewrite.input];
    for (suffix, values) in [("scale", rewrite.scale), ("shift", rewrite.shift)] {
        let name = format!("{last_name}/fused_{suffix}");
        ir.nodes.push(IrNode {
            name: name.clone(),
            op: "Const".into(),
            attrs: HashMap::new(),
            inputs: Vec::new(),
            control: Vec::new(),
            value: Some(vec![Value::Tensor(Arc::new(Tensor::from_vec(
                vec![channels],
                values,
            )))]),
            chain: Vec::new(),
        });
        ir.index.insert(name.clone(), ir.nodes.len() - 1);
        inputs.push(Src::Node(name, 0));
    }
    let control = ir.nodes[first].control.clone();
    let chain = ir.nodes[first].chain.clone();
    ir.nodes[last] = IrNode {
        name: last_name,
        op: CHANNEL_AFFINE.into(),
        attrs,
        inputs,
        control,
        value: None,
        chain,
    };
    uses.absorbed.extend(rewrite.absorbed);
}

/// The nodes computing swish of node `at`'s output, the final Mul last: `x * Sigmoid(x)`, or
/// `x * Sigmoid(1 * x)` as tf.nn.silu writes it with its beta a constant 1, when nothing else
/// reads x or the intermediate values.
fn swish_of(ir: &Ir, uses: &Uses, at: usize) -> Option<Vec<usize>> {
    let x = &ir.nodes[at].name;
    if !uses.only_read(x, 2) {
        return None;
    }
    let readers = uses.consumers.get(x)?;
    let [a, b] = readers.as_slice() else {
        return None;
    };
    let reads = |j: usize, name: &str| {
        ir.nodes[j]
            .inputs
            .iter()
            .any(|s| matches!(s, Src::Node(n, 0) if n == name))
    };
    let is = |j: usize, op: &str| {
        !uses.absorbed.contains(&j) && ir.nodes[j].op == op && float32(&ir.nodes[j])
    };
    for (first, last) in [(*a, *b), (*b, *a)] {
        if !is(last, "Mul") || ir.nodes[last].inputs.len() != 2 || !reads(last, x) {
            continue;
        }
        let mut chain = vec![first];
        let mut sigmoid = first;
        if is(first, "Mul") && scales_by_one(ir, &ir.nodes[first], x) {
            let name = &ir.nodes[first].name;
            match uses.consumers.get(name).map(Vec::as_slice) {
                Some(&[j]) if uses.only_read(name, 1) => sigmoid = j,
                _ => continue,
            }
            chain.push(sigmoid);
        }
        let name = &ir.nodes[sigmoid].name;
        let feeds_last = uses.consumers.get(name).map(Vec::as_slice) == Some(&[last]);
        if is(sigmoid, "Sigmoid") && uses.only_read(name, 1) && feeds_last && reads(last, name) {
            chain.push(last);
            return Some(chain);
        }
    }
    None
}

/// Whether `node` multiplies `input` by a scalar constant 1 (a shaped one could broadcast).
fn scales_by_one(ir: &Ir, node: &IrNode, input: &str) -> bool {
    let ours = |s: &Src| matches!(s, Src::Node(n, 0) if n == input);
    let other = match node.inputs.as_slice() {
        [a, b] if ours(a) && !ours(b) => b,
        [a, b] if ours(b) && !ours(a) => a,
        _ => return false,
    };
    match ir.known(other) {
        Some(Value::Tensor(c)) => c.shape().is_empty() && c.values::<f32>() == Some(&[1.0][..]),
        _ => false,
    }
}

/// The other input of an Add/AddV2 of the chain's value `input` and a tensor computed at run
/// time (a residual connection), which the fused kernel adds in its output pass.
fn residual_of(ir: &Ir, node: &IrNode, input: &str) -> Option<Src> {
    if !matches!(node.op.as_str(), "Add" | "AddV2") || node.inputs.len() != 2 || !float32(node) {
        return None;
    }
    let ours = |s: &Src| matches!(s, Src::Node(n, 0) if n == input);
    let other = match (&node.inputs[0], &node.inputs[1]) {
        (a, b) if ours(a) && !ours(b) => b,
        (a, b) if ours(b) && !ours(a) => a,
        _ => return None,
    };
    ir.known(other).is_none().then(|| other.clone())
}

/// Folds one BiasAdd/Add/AddV2/Sub/Mul/RealDiv by a per-channel constant into (scale, shift)
/// (a RealDiv only by finite nonzero divisors, which then divide the scale and shift as they
/// would the values); false if `node` is not such a step on `input`.
fn affine_step(
    ir: &Ir,
    node: &IrNode,
    input: &Src,
    channels: usize,
    scale: &mut [f32],
    shift: &mut [f32],
) -> bool {
    if node.inputs.len() != 2 || !float32(node) {
        return false;
    }
    let ours = |s: &Src| s == input;
    let (first_is_ours, other) = match (&node.inputs[0], &node.inputs[1]) {
        (a, b) if ours(a) && !ours(b) => (true, b),
        (a, b) if ours(b) && !ours(a) => (false, a),
        _ => return false,
    };
    let Some(Value::Tensor(c)) = ir.known(other) else {
        return false;
    };
    let Some(per_channel) = per_channel(&c, channels) else {
        return false;
    };
    match node.op.as_str() {
        "BiasAdd"
            if first_is_ours
                && Attrs::new(&node.attrs).string_or("data_format", "NHWC") == Ok("NHWC") =>
        {
            shift
                .iter_mut()
                .zip(&per_channel)
                .for_each(|(s, c)| *s += c);
        }
        "Add" | "AddV2" => shift
            .iter_mut()
            .zip(&per_channel)
            .for_each(|(s, c)| *s += c),
        "Sub" if first_is_ours => shift
            .iter_mut()
            .zip(&per_channel)
            .for_each(|(s, c)| *s -= c),
        "Mul" => {
            for ((sc, sh), c) in scale.iter_mut().zip(shift.iter_mut()).zip(&per_channel) {
                *sc *= c;
                *sh *= c;
            }
        }
        "RealDiv" if first_is_ours && per_channel.iter().all(|c| c.is_finite() && *c != 0.0) => {
            for ((sc, sh), c) in scale.iter_mut().zip(shift.iter_mut()).zip(&per_channel) {
                *sc /= c;
                *sh /= c;
            }
        }
        _ => return false,
    }
    true
}

/// A constant's values per output channel: a single value broadcast, or a trailing dimension
/// of `channels` with every other dimension 1.
fn per_channel(c: &Tensor, channels: usize) -> Option<Vec<f32>> {
    let values = c.values::<f32>()?;
    let shape = c.shape();
    if values.len() == 1 && shape.iter().all(|&d| d == 1) {
        return Some(vec![values[0]; channels]);
    }
    let (last, rest) = shape.split_last()?;
    (*last == channels && rest.iter().all(|&d| d == 1) && shape.len() <= 4).then(|| values.to_vec())
}

fn activation_of(node: &IrNode) -> Option<f32> {
    if !FUSED_ACTIVATIONS.contains(&node.op.as_str()) || node.inputs.len() != 1 || !float32(node) {
        return None;
    }
    Some(
        Attrs::new(&node.attrs)
            .float_or("alpha", 0.2)
            .unwrap_or(0.2),
    )
}

pub(crate) fn float32(node: &IrNode) -> bool {
    Attrs::new(&node.attrs).dtype("T").ok() == Some(crate::DType::Float32)
}

/// A float32 node whose data format is NHWC (stated or by default): the layout the
/// channel-wise rewrites (fuse_scale, fuse_block) read their channels in.
pub(crate) fn float32_nhwc(node: &IrNode) -> bool {
    let nhwc = Attrs::new(&node.attrs)
        .string_or("data_format", "NHWC")
        .ok()
        == Some("NHWC");
    float32(node) && nhwc
}

/// The constant weights of a fusable producer.
fn weights_of(ir: &Ir, node: &IrNode) -> Option<Arc<Tensor>> {
    match ir.known(node.inputs.get(1)?)? {
        Value::Tensor(t) if t.values::<f32>().is_some() => Some(t),
        _ => None,
    }
}

/// Where a weight's output channel is: the last dimension (convolutions, MatMul), or the first
/// of a `[channels, k]` matrix (MatMul with transpose_b).
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Last(usize),
    First(usize),
}

/// How many output channels a fusable producer has, and where they are in its weights.
fn output_channels(ir: &Ir, node: &IrNode) -> Option<(usize, Layout)> {
    let attrs = Attrs::new(&node.attrs);
    if !float32(node) || node.inputs.len() != 2 || node.value.is_some() {
        return None;
    }
    let Value::Tensor(w) = ir.known(&node.inputs[1])? else {
        return None;
    };
    let shape = w.shape();
    match node.op.as_str() {
        "Conv2D" | "DepthwiseConv2dNative"
            if attrs.string_or("data_format", "NHWC") == Ok("NHWC") && shape.len() == 4 =>
        {
            let channels = if node.op == "Conv2D" {
                shape[3]
            } else {
                shape[2] * shape[3]
            };
            Some((channels, Layout::Last(channels)))
        }
        "MatMul" if shape.len() == 2 && !attrs.bool_or("transpose_a", false).ok()? => {
            Some(if attrs.bool_or("transpose_b", false).ok()? {
                (shape[0], Layout::First(shape[1]))
            } else {
                (shape[1], Layout::Last(shape[1]))
            })
        }
        _ => None,
    }
}

/// The weights with output channel `c` multiplied by `scale[c]`.
fn scaled(weights: &Tensor, scale: &[f32], layout: Layout) -> Option<Tensor> {
    let values = weights.values::<f32>()?;
    let out = values
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let c = match layout {
                Layout::Last(channels) => i % channels,
                Layout::First(k) => i / k,
            };
            w * scale[c]
        })
        .collect();
    Some(Tensor::from_vec(weights.shape().to_vec(), out))
}

fn apply(ir: &mut Ir, rewrite: Rewrite, uses: &mut Uses) {
    let producer = &ir.nodes[rewrite.producer];
    let last_name = ir.nodes[rewrite.last].name.clone();
    let fused_op = format!("_Fused{}", producer.op);
    let mut attrs = producer.attrs.clone();
    let mut fused_ops = vec![b"BiasAdd".to_vec()];
    if rewrite.residual.is_some() {
        fused_ops.push(b"Add".to_vec());
    }
    if let Some((op, alpha)) = &rewrite.activation {
        fused_ops.push(op.as_bytes().to_vec());
        attrs.insert(
            "leakyrelu_alpha".into(),
            AttrValue {
                value: Some(A::F(*alpha)),
            },
        );
    }
    if rewrite.post.is_some() {
        fused_ops.push(CHANNEL_AFFINE.as_bytes().to_vec());
    }
    attrs.insert(
        "fused_ops".into(),
        AttrValue {
            value: Some(A::List(Box::new(ListValue {
                s: fused_ops,
                ..Default::default()
            }))),
        },
    );
    attrs.insert(
        "num_args".into(),
        AttrValue {
            value: Some(A::I(1 + i64::from(rewrite.residual.is_some()))),
        },
    );
    let input = producer.inputs[0].clone();
    let control = producer.control.clone();
    let chain = producer.chain.clone();
    let weights_name = format!("{last_name}/fused_weights");
    let bias_name = format!("{last_name}/fused_bias");
    let channels = rewrite.bias.len();
    let vector = |values: Vec<f32>| Arc::new(Tensor::from_vec(vec![channels], values));
    let mut constants = vec![
        (weights_name.clone(), rewrite.weights),
        (bias_name.clone(), vector(rewrite.bias)),
    ];
    let mut post_inputs = Vec::new();
    if let Some((scale, shift)) = rewrite.post {
        for (suffix, values) in [("post_scale", scale), ("post_shift", shift)] {
            let name = format!("{last_name}/fused_{suffix}");
            post_inputs.push(Src::Node(name.clone(), 0));
            constants.push((name, vector(values)));
        }
    }
    for (name, tensor) in constants {
        ir.nodes.push(IrNode {
            name: name.clone(),
            op: "Const".into(),
            attrs: HashMap::new(),
            inputs: Vec::new(),
            control: Vec::new(),
            value: Some(vec![Value::Tensor(tensor)]),
            chain: Vec::new(),
        });
        ir.index.insert(name, ir.nodes.len() - 1);
    }
    ir.nodes[rewrite.last] = IrNode {
        name: last_name,
        op: fused_op,
        attrs,
        inputs: [input, Src::Node(weights_name, 0), Src::Node(bias_name, 0)]
            .into_iter()
            .chain(rewrite.residual)
            .chain(post_inputs)
            .collect(),
        control,
        value: None,
        chain,
    };
    uses.pinned.insert(ir.nodes[rewrite.producer].name.clone());
    uses.absorbed.extend(rewrite.absorbed);
}
