//! `_SavedModelGelu` (the project's own op, made by engine/fuse_gelu.rs): GELU in its tanh
//! form, `0.5·x·(1 + tanh(s·(x + c·x³)))`, as tf.nn.gelu(approximate=True) writes it in a
//! graph (eight element-wise nodes, each a pass over memory and a tensor allocated; a
//! transformer's feed-forward layer spent more time in them than in its matrix products).
//! One pass, the steps in the graph's order in float32, with the engine's tanh.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, tensor_input, Kernel, NodeSpec, Registry};
use crate::engine::value::Value;
use crate::kernels::math::fast::tanh_f32;
use crate::tensor::Tensor;

pub const GELU: &str = "_SavedModelGelu";

/// Elements per task when a tensor is split over threads.
const CHUNK: usize = 1 << 15;

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
        let mut out = vec![0.0f32; values.len()];
        let run = |(o, x): (&mut [f32], &[f32])| apply(o, x, coefficient, scale);
        if values.len() <= CHUNK {
            run((&mut out, values));
        } else {
            out.par_chunks_mut(CHUNK)
                .zip(values.par_chunks(CHUNK))
                .for_each(run);
        }
        let out = Tensor::from_vec(x.shape().to_vec(), out);
        Ok(vec![Value::Tensor(Arc::new(out))])
    }))
}

/// The graph's steps per element. Compiled also for AVX-512 and AVX2 (chosen at run time);
/// Rust never contracts a multiply and an add into an FMA, so every variant gives the same
/// bits.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
fn apply(out: &mut [f32], x: &[f32], coefficient: f32, scale: f32) {
    for (o, &x) in out.iter_mut().zip(x) {
        let inner = scale * (x + coefficient * (x * x * x));
        *o = (0.5 * x) * (1.0 + tanh_f32(inner));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_in_f64() {
        let (c, s) = (0.044715f32, 0.797_884_6_f32);
        let x: Vec<f32> = (0..70_000).map(|i| (i as f32 - 35_000.0) * 3e-4).collect();
        let mut out = vec![0.0; x.len()];
        apply(&mut out, &x, c, s);
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
