//! The native engine: compiles a SavedModel's signatures into plans of kernels and runs them.

pub mod attrs;
pub mod context;
pub mod frames;
pub mod frozen;
pub mod fuse;
pub mod fuse_block;
pub mod fuse_gelu;
pub mod fuse_lstm;
pub mod fuse_rnn;
pub mod fuse_scale;
pub mod graph;
pub mod ir;
pub mod kernel;
pub mod library;
pub mod model;
pub mod object_graph;
pub mod pad_fold;
pub mod plan;
pub mod profile;
pub mod value;
pub mod variant;
pub mod workers;

pub use context::RunContext;
pub use kernel::{KResult, Kernel, NodeSpec, Registry};
pub use model::{LoadOptions, Model, RunOptions, Signature, TensorSpec};
pub use profile::Profile;
pub use value::Value;

use std::sync::Arc;

use crate::error::Result;
use crate::protos::NodeDef;
use crate::tensor::Tensor;

/// Runs one node on `inputs` outside any model (no functions, no variables): how the per-op
/// fixtures replay through the native kernels. Unknown ops are an `UnsupportedOps` error.
pub fn run_node(node: &NodeDef, inputs: Vec<Tensor>) -> Result<Vec<Value>> {
    let registry = crate::kernels::registry();
    let library =
        library::Library::new(None, &[], registry.clone(), context::FileAccess::default());
    let Some(info) = registry.get(&node.op) else {
        return Err(crate::error::Error::UnsupportedOps {
            missing: vec![crate::error::MissingOp {
                op: node.op.clone(),
                node: node.name.clone(),
                function: String::new(),
            }],
        });
    };
    let spec = NodeSpec {
        name: &node.name,
        op: &node.op,
        attrs: attrs::Attrs::new(&node.attr),
        num_inputs: inputs.len(),
    };
    let place = |detail: String| format!("node {:?} (op {}): {detail}", node.name, node.op);
    let kernel =
        (info.factory)(&spec).map_err(|d| crate::error::Error::Graph { detail: place(d) })?;
    let ctx = library.context();
    let values: Vec<Value> = inputs
        .into_iter()
        .map(|t| Value::Tensor(Arc::new(t)))
        .collect();
    kernel.run(&ctx, &values).map_err(|e| match e {
        crate::error::Error::Run { detail } => crate::error::Error::Run {
            detail: place(detail),
        },
        other => other,
    })
}
