//! Folding a Mul into the convolution that alone reads it. Squeeze-and-excitation blocks
//! (EfficientNet, MobileNetV3) multiply a feature map by one factor per channel computed at run
//! time, and a 1x1 convolution reads the product:
//!
//! ```text
//! m = Mul(x, s)                       x: [N, H, W, C], s: [N, 1, 1, C]
//! y = _FusedConv2D(m, weights, bias)  weights: [KH, KW, C, O]
//! ```
//!
//! Scaling a convolution's input channel c by s[c] is scaling the weights' input row c, so when
//! the Mul's product has no other reader, the convolution takes both Mul operands instead (the
//! second as its last input, marked by the attribute [`INPUT_SCALE`]). At run time its kernel
//! (kernels/fused_scale.rs) scales a copy of the weights when one operand holds one factor per
//! channel of the other and the weights are the smaller tensor; otherwise it runs TensorFlow's
//! Mul first, as the graph says.

use crate::engine::fuse::{float32, float32_nhwc, use_counts};
use crate::engine::graph::Src;
use crate::engine::ir::Ir;
use crate::engine::kernel::Registry;
use crate::engine::value::Value;
use crate::protos::attr_value::Value as A;
use crate::protos::AttrValue;

/// The attribute of a `_FusedConv2D` whose input is input 0 times its last input.
pub const INPUT_SCALE: &str = "_SavedModelInputScale";

/// Rewrites every float32 NHWC `_FusedConv2D` with constant weights whose input is a Mul that
/// nothing else reads; whether it rewrote any (the Mul is then left for pruning). Runs after
/// `fuse`, which makes the fused convolutions, and after the pruning that drops the nodes
/// fusion absorbed (until then they still count as readers).
pub fn fuse_input_scale(ir: &mut Ir, registry: &Registry) -> bool {
    if !registry.contains("_FusedConv2D") || !registry.contains("Mul") {
        return false;
    }
    let uses = use_counts(ir);
    let mut changed = false;
    for i in 0..ir.nodes.len() {
        let Some((x, s)) = scaled_input(ir, i, |name| uses.only_read(name, 1)) else {
            continue;
        };
        let conv = &mut ir.nodes[i];
        conv.inputs[0] = x;
        conv.inputs.push(s);
        conv.attrs.insert(
            INPUT_SCALE.to_string(),
            AttrValue {
                value: Some(A::B(true)),
            },
        );
        changed = true;
    }
    changed
}

/// The two operands of the Mul that node `i`, a fusable convolution, alone reads.
fn scaled_input(ir: &Ir, i: usize, only_read: impl Fn(&str) -> bool) -> Option<(Src, Src)> {
    let conv = &ir.nodes[i];
    let constant = matches!(ir.known(conv.inputs.get(1)?), Some(Value::Tensor(_)));
    if conv.op != "_FusedConv2D" || !float32_nhwc(conv) || !constant {
        return None;
    }
    if conv.attrs.contains_key(INPUT_SCALE) || conv.value.is_some() {
        return None;
    }
    let Src::Node(name, 0) = conv.inputs.first()? else {
        return None;
    };
    let mul = &ir.nodes[*ir.index.get(name)?];
    let plain = mul.op == "Mul" && mul.value.is_none() && mul.control.is_empty();
    if !plain || !float32(mul) || !only_read(name) {
        return None;
    }
    match mul.inputs.as_slice() {
        [x, s] => Some((x.clone(), s.clone())),
        _ => None,
    }
}
