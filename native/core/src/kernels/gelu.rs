//! `_SavedModelGelu` (the project's own op, made by engine/fuse_gelu.rs): GELU in its tanh
//! form, `0.5·x·(1 + tanh(s·(x + c·x³)))`, as tf.nn.gelu(approximate=True) writes it in a
//! graph (eight element-wise nodes, each a pass over memory and a tensor allocated; a
//! transformer's feed-forward layer spent more time in them than in its matrix products).
//! One pass, the steps in the graph's order in float32, with the engine's tanh.

use std::sync::Arc;

use crate::engine::kernel::{boxed, fail, tensor_input, Kernel, NodeSpec, Registry};
use crate::engine::value::Value;
use crate::kernels::math::fast::{map_f32, tanh, Madd, Pointwise};
use crate::tensor::Tensor;

pub const GELU: &str = "_SavedModelGelu";

pub fn register(r: &mut Registry) {
    r.add(GELU, gelu);
}

fn gelu(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let coefficient = node.attrs.float("coefficient")?;
    let scale = node.attrs.float("scale")?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let values = x
            .values::<f32>()
            .ok_or_else(|| fail(format!("x must be float32, got {}", x.dtype())))?;
        let out = Tensor::from_vec(x.shape().to_vec(), apply(values, coefficient, scale));
        Ok(vec![Value::Tensor(Arc::new(out))])
    }))
}

/// The graph's steps per element, in its order; `map_f32` vectorizes and splits the pass.
fn apply(x: &[f32], coefficient: f32, scale: f32) -> Vec<f32> {
    map_f32(x, Gelu { coefficient, scale })
}

struct Gelu {
    coefficient: f32,
    scale: f32,
}

impl Pointwise for Gelu {
    #[inline(always)]
    fn at<M: Madd>(&self, x: f32) -> f32 {
        let inner = self.scale * (x + self.coefficient * (x * x * x));
        (0.5 * x) * (1.0 + tanh::<M>(inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_in_f64() {
        let (c, s) = (0.044715f32, 0.797_884_6_f32);
        let x: Vec<f32> = (0..70_000).map(|i| (i as f32 - 35_000.0) * 3e-4).collect();
        let out = apply(&x, c, s);
        for (&x, &y) in x.iter().zip(&out) {
            let x64 = f64::from(x);
            let want =
                0.5 * x64 * (1.0 + (f64::from(s) * (x64 + f64::from(c) * x64.powi(3))).tanh());
            assert!(
                (f64::from(y) - want).abs() <= 2e-6 * (1.0 + want.abs()),
                "{x}: {y} vs {want}"
            );
        }
    }
}
