//! Fusion of GELU's tanh form: tf.nn.gelu(x, approximate=True), which Keras and keras-hub
//! transformers (BERT, GPT-2) use in every feed-forward layer, is eight element-wise nodes in
//! a graph:
//!
//! ```text
//! half = Mul(0.5, x)          cube = Pow(x, 3)         small = Mul(c, cube)
//! inner = AddV2(x, small)     arg = Mul(s, inner)      t = Tanh(arg)
//! one_plus = AddV2(1, t)      out = Mul(half, one_plus)
//! ```
//!
//! Each is a pass over memory and a fresh tensor. When every intermediate value is read only
//! by the next step (and no control edge or output names it), `out` becomes one
//! `_SavedModelGelu` node on `x` (kernels/gelu.rs), with `c` and `s` as attributes; the rest
//! is pruned. Operands of Mul and AddV2 may come in either order.

use std::collections::HashMap;

use crate::engine::attrs::Attrs;
use crate::engine::fuse::{use_counts, Uses};
use crate::engine::graph::Src;
use crate::engine::ir::{Ir, IrNode};
use crate::engine::kernel::Registry;
use crate::engine::value::Value;
use crate::kernels::gelu::GELU;
use crate::protos::attr_value::Value as A;
use crate::protos::AttrValue;

/// Rewrites every GELU subgraph of `ir` whose values nothing else reads.
pub fn fuse_gelu(ir: &mut Ir, registry: &Registry) {
    if !registry.contains(GELU) {
        return;
    }
    let uses = use_counts(ir);
    let found: Vec<Found> = (0..ir.nodes.len())
        .filter_map(|i| match_at(ir, &uses, i))
        .collect();
    for f in found {
        let last = &ir.nodes[f.last];
        let mut attrs = HashMap::new();
        attrs.insert(
            "T".to_string(),
            last.attrs.get("T").cloned().unwrap_or_default(),
        );
        for (name, value) in [("coefficient", f.coefficient), ("scale", f.scale)] {
            attrs.insert(
                name.to_string(),
                AttrValue {
                    value: Some(A::F(value)),
                },
            );
        }
        ir.nodes[f.last] = IrNode {
            name: last.name.clone(),
            op: GELU.into(),
            attrs,
            inputs: vec![f.x],
            control: last.control.clone(),
            value: None,
            chain: last.chain.clone(),
        };
    }
}

/// A GELU subgraph: its input, its constants, and its final Mul (the node replaced).
struct Found {
    x: Src,
    coefficient: f32,
    scale: f32,
    last: usize,
}

/// The GELU subgraph ending at node `last`, if it is one.
fn match_at(ir: &Ir, uses: &Uses, last: usize) -> Option<Found> {
    let step = |i: usize, op: &str| -> Option<&IrNode> {
        let node = &ir.nodes[i];
        let float = Attrs::new(&node.attrs).dtype("T").ok() == Some(crate::DType::Float32);
        (node.op == op && float && node.value.is_none()).then_some(node)
    };
    // out = Mul(half, one_plus)
    let [p, q] = binary(step(last, "Mul")?)?;
    let (half, one_plus) = [(p, q), (q, p)].into_iter().find_map(|(h, o)| {
        let (h, o) = (node_of(ir, h)?, node_of(ir, o)?);
        (step(h, "Mul").is_some() && step(o, "AddV2").is_some()).then_some((h, o))
    })?;
    // half = Mul(0.5, x); one_plus = AddV2(1, t)
    let x = scaled_by(ir, step(half, "Mul")?, 0.5)?.clone();
    let t = node_of(ir, scaled_by(ir, step(one_plus, "AddV2")?, 1.0)?)?;
    // t = Tanh(arg); arg = Mul(s, inner)
    let arg = node_of(ir, step(t, "Tanh")?.inputs.first()?)?;
    let (scale, inner) = constant_and(ir, step(arg, "Mul")?)?;
    let inner = node_of(ir, inner)?;
    // inner = AddV2(x, small); small = Mul(c, cube); cube = Pow(x, 3)
    let [p, q] = binary(step(inner, "AddV2")?)?;
    let small = match (p == &x, q == &x) {
        (true, false) => node_of(ir, q)?,
        (false, true) => node_of(ir, p)?,
        _ => return None,
    };
    let (coefficient, cube) = constant_and(ir, step(small, "Mul")?)?;
    let cube = node_of(ir, cube)?;
    let [base, power] = binary(step(cube, "Pow")?)?;
    if base != &x || scalar(ir, power) != Some(3.0) {
        return None;
    }
    let steps = [half, one_plus, t, arg, inner, small, cube];
    steps
        .iter()
        .all(|&i| uses.only_read(&ir.nodes[i].name, 1))
        .then_some(Found {
            x,
            coefficient,
            scale,
            last,
        })
}

fn binary(node: &IrNode) -> Option<[&Src; 2]> {
    match node.inputs.as_slice() {
        [a, b] => Some([a, b]),
        _ => None,
    }
}

/// The node that computes `src` (its first output only).
fn node_of(ir: &Ir, src: &Src) -> Option<usize> {
    match src {
        Src::Node(name, 0) => ir.index.get(name).copied(),
        _ => None,
    }
}

/// A float32 scalar constant's value.
fn scalar(ir: &Ir, src: &Src) -> Option<f32> {
    match ir.known(src)? {
        Value::Tensor(t) if t.shape().is_empty() => t.values::<f32>()?.first().copied(),
        _ => None,
    }
}

/// A binary node's scalar constant operand and its other operand.
fn constant_and<'a>(ir: &Ir, node: &'a IrNode) -> Option<(f32, &'a Src)> {
    let [p, q] = binary(node)?;
    match (scalar(ir, p), scalar(ir, q)) {
        (Some(c), None) => Some((c, q)),
        (None, Some(c)) => Some((c, p)),
        _ => None,
    }
}

/// The operand a binary node combines with the scalar constant `value`.
fn scaled_by<'a>(ir: &Ir, node: &'a IrNode, value: f32) -> Option<&'a Src> {
    let (c, other) = constant_and(ir, node)?;
    (c == value).then_some(other)
}
