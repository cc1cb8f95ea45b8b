//! Helpers the kernel families' unit tests share (compiled only for tests).

use crate::engine::{run_node, Value};
use crate::protos::NodeDef;
use crate::tensor::Tensor;

/// Runs a node of op `op` (no attrs, named after the op) on `inputs`; its first output, which
/// must be a tensor.
pub(crate) fn run_op(op: &str, inputs: Vec<Tensor>) -> crate::error::Result<Tensor> {
    let node = NodeDef {
        name: op.into(),
        op: op.into(),
        ..Default::default()
    };
    match run_node(&node, inputs)?.remove(0) {
        Value::Tensor(t) => Ok((*t).clone()),
        other => panic!("not a tensor: {other:?}"),
    }
}

/// `count` reproducible pseudo-random values in [-scale, scale) (xorshift from `seed`), in steps
/// of 0.001.
pub(crate) fn values(seed: u32, count: usize, scale: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).max(1);
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % (2000 * scale)) as f32 / 1000.0 - scale as f32
        })
        .collect()
}
