//! TensorFlow's internal fused ops, which the plan optimizer (engine::fuse) rewrites chains
//! into: `_FusedConv2D`, `_FusedDepthwiseConv2dNative` and `_FusedMatMul` with fused_ops
//! `[BiasAdd]` or `[BiasAdd, <activation>]`. The base op runs through its own kernel; the bias
//! and activation are then applied in one pass over its output, in place.

use std::sync::Arc;

use crate::engine::fuse::FUSED_ACTIVATIONS;
use crate::engine::kernel::{boxed, fail, tensor_input, Kernel, NodeSpec, Registry};
use crate::engine::Value;

pub fn register(r: &mut Registry) {
    for base in ["Conv2D", "DepthwiseConv2dNative", "MatMul"] {
        if r.contains(base) {
            r.add(fused_name(base), fused);
        }
    }
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
    let ops = node.attrs.strings("fused_ops")?;
    let activation = match ops
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["BiasAdd"] => Activation::None,
        ["BiasAdd", act] if FUSED_ACTIVATIONS.contains(act) => match *act {
            "Relu" => Activation::Relu,
            "Relu6" => Activation::Relu6,
            "Elu" => Activation::Elu,
            "LeakyRelu" => Activation::LeakyRelu(node.attrs.float_or("leakyrelu_alpha", 0.2)?),
            "Sigmoid" => Activation::Sigmoid,
            _ => Activation::Tanh,
        },
        other => return Err(format!("fused_ops {other:?} is not supported")),
    };
    Ok(boxed(move |ctx, inputs| {
        if inputs.len() != 3 {
            return Err(fail(format!("takes 3 inputs, got {}", inputs.len())));
        }
        let mut outputs = inner.run(ctx, &inputs[..2])?;
        let bias = tensor_input(inputs, 2)?;
        let bias = bias
            .values::<f32>()
            .ok_or_else(|| fail(format!("bias must be float32, got {}", bias.dtype())))?;
        let Some(Value::Tensor(out)) = outputs.first_mut() else {
            return Err(fail("the base op gave no tensor"));
        };
        let values = Arc::make_mut(out)
            .values_mut::<f32>()
            .ok_or_else(|| fail("the base op's output is not float32"))?;
        if bias.is_empty() || values.len() % bias.len() != 0 {
            return Err(fail(format!(
                "bias of {} values does not divide the output's {} values",
                bias.len(),
                values.len()
            )));
        }
        epilogue(values, bias, activation);
        Ok(outputs)
    }))
}

/// Adds the per-channel bias (channels last) and applies the activation, in one pass; the
/// activation is chosen once, outside the loop, so each loop is specialized and vectorizes.
fn epilogue(values: &mut [f32], bias: &[f32], activation: Activation) {
    match activation {
        Activation::None => bias_then(values, bias, |x| x),
        Activation::Relu => bias_then(values, bias, |x| x.max(0.0)),
        Activation::Relu6 => bias_then(values, bias, |x| x.clamp(0.0, 6.0)),
        Activation::Elu => bias_then(values, bias, |x| if x > 0.0 { x } else { x.exp_m1() }),
        Activation::LeakyRelu(alpha) => {
            bias_then(values, bias, |x| if x > 0.0 { x } else { alpha * x })
        }
        Activation::Sigmoid => bias_then(values, bias, |x| 1.0 / (1.0 + (-x).exp())),
        Activation::Tanh => bias_then(values, bias, f32::tanh),
    }
}

#[inline(always)]
fn bias_then(values: &mut [f32], bias: &[f32], f: impl Fn(f32) -> f32) {
    for row in values.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = f(*v + b);
        }
    }
}
