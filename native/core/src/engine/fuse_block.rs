//! Fusing a depthwise convolution with the pointwise convolutions around it into one
//! `_SavedModelBottleneck` node (kernels/bottleneck.rs), as MobileNetV2's inverted residual
//! blocks and EfficientNet's (up to their squeeze-and-excitation) chain them once `fuse` has
//! folded each convolution's bias, batch normalization and activation into it:
//!
//! ```text
//! e = _FusedConv2D(x, 1x1 weights, bias)             expand (optional)
//! d = _FusedDepthwiseConv2dNative(e, filter, bias)
//! y = _FusedConv2D(d, 1x1 weights, bias[, x])        project (optional; a residual allowed)
//! ```
//!
//! `e` must have no reader but `d`, and `d` none but `y` when there is a project part; at
//! least one pointwise part must be there. The block node takes `y`'s place (or `d`'s), keeps
//! each part's op and attributes under the part's name and takes `x`, then each part's other
//! inputs in order; the absorbed nodes are left for pruning.

use std::collections::HashMap;

use crate::engine::attrs::Attrs;
use crate::engine::fuse::{float32_nhwc, use_counts, Uses};
use crate::engine::fuse_scale::INPUT_SCALE;
use crate::engine::graph::Src;
use crate::engine::ir::{Ir, IrNode};
use crate::engine::kernel::Registry;
use crate::engine::value::Value;
use crate::kernels::bottleneck::{BOTTLENECK, PARTS, PART_INPUTS, PART_OP};
use crate::protos::attr_value::Value as A;
use crate::protos::AttrValue;

/// Rewrites every depthwise convolution with a pointwise convolution before or after it (as
/// above) into a block; whether it rewrote any. Runs after the fusions that make the fused
/// convolutions and the pruning after them (until then absorbed nodes still count as readers).
pub fn fuse_blocks(ir: &mut Ir, registry: &Registry) -> bool {
    if !registry.contains(BOTTLENECK) {
        return false;
    }
    let Ok(order) = ir.order() else {
        return false;
    };
    let uses = use_counts(ir);
    let mut changed = false;
    for i in order {
        if let Some(parts) = match_block(ir, i, &uses) {
            rewrite(ir, parts);
            changed = true;
        }
    }
    changed
}

/// The nodes of the block around depthwise node `i`: expand, depthwise and project.
fn match_block(ir: &Ir, i: usize, uses: &Uses) -> Option<[Option<usize>; 3]> {
    let depthwise = &ir.nodes[i];
    if depthwise.op != "_FusedDepthwiseConv2dNative" || !plain(depthwise) {
        return None;
    }
    let expand = match depthwise.inputs.first()? {
        Src::Node(name, 0) if uses.only_read(name, 1) => ir
            .index
            .get(name)
            .copied()
            .filter(|&j| pointwise(ir, &ir.nodes[j])),
        _ => None,
    };
    let project = match uses.consumers.get(&depthwise.name).map(Vec::as_slice) {
        Some(&[j]) if uses.only_read(&depthwise.name, 1) => {
            let reads_it =
                ir.nodes[j].inputs.first() == Some(&Src::Node(depthwise.name.clone(), 0));
            (reads_it && pointwise(ir, &ir.nodes[j])).then_some(j)
        }
        _ => None,
    };
    (expand.is_some() || project.is_some()).then_some([expand, Some(i), project])
}

/// A fused float32 NHWC node not computed at compile time.
fn plain(node: &IrNode) -> bool {
    float32_nhwc(node) && node.value.is_none()
}

/// A `_FusedConv2D` of constant 1x1 weights at stride 1 that does not scale its input.
fn pointwise(ir: &Ir, node: &IrNode) -> bool {
    let attrs = Attrs::new(&node.attrs);
    let unit = attrs.ints_or("strides", &[1, 1, 1, 1]).ok() == Some(vec![1, 1, 1, 1]);
    let padded = attrs.string_or("padding", "VALID").ok() == Some("EXPLICIT");
    let one_by_one = match node.inputs.get(1).and_then(|w| ir.known(w)) {
        Some(Value::Tensor(w)) => w.shape().starts_with(&[1, 1]) && w.shape().len() == 4,
        _ => false,
    };
    node.op == "_FusedConv2D"
        && plain(node)
        && unit
        && !padded
        && one_by_one
        && !node.attrs.contains_key(INPUT_SCALE)
}

/// Replaces the block's last node by the block.
fn rewrite(ir: &mut Ir, parts: [Option<usize>; 3]) {
    let Some(last) = parts.iter().rev().flatten().next().copied() else {
        return;
    };
    let mut attrs = HashMap::new();
    let mut inputs = Vec::new();
    let mut control: Vec<String> = Vec::new();
    for (name, j) in PARTS.iter().zip(parts) {
        let Some(j) = j else {
            continue;
        };
        let node = &ir.nodes[j];
        if inputs.is_empty() {
            inputs.extend(node.inputs.first().cloned());
        }
        inputs.extend(node.inputs.iter().skip(1).cloned());
        for (key, value) in &node.attrs {
            attrs.insert(format!("{name}/{key}"), value.clone());
        }
        let op = A::S(node.op.as_bytes().to_vec());
        let count = A::I(node.inputs.len() as i64);
        for (key, value) in [(PART_OP, op), (PART_INPUTS, count)] {
            attrs.insert(format!("{name}/{key}"), AttrValue { value: Some(value) });
        }
        for c in &node.control {
            if !control.contains(c) {
                control.push(c.clone());
            }
        }
    }
    let node = &ir.nodes[last];
    ir.nodes[last] = IrNode {
        name: node.name.clone(),
        op: BOTTLENECK.into(),
        attrs,
        inputs,
        control,
        value: None,
        chain: node.chain.clone(),
    };
}
