//! The signature of a TensorFlow 1 frozen GraphDef, which has none of its own: inputs are the
//! placeholders (dtype and shape from their attrs), outputs the first output of each node that
//! nothing else reads and that has a declared output dtype, each keyed by its node name, as
//! TensorFlow 1 tools name a frozen graph's tensors (`name:0`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::dtype::DType;
use crate::engine::attrs::Attrs;
use crate::error::{Error, Result};
use crate::protos::{tensor_info, GraphDef, NodeDef, SignatureDef, TensorInfo};

/// Ops whose single output is bool whatever their `T` attr says.
const BOOL_OUTPUT: [&str; 13] = [
    "Equal",
    "NotEqual",
    "Less",
    "LessEqual",
    "Greater",
    "GreaterEqual",
    "LogicalAnd",
    "LogicalOr",
    "LogicalNot",
    "IsNan",
    "IsInf",
    "IsFinite",
    "ApproximateEqual",
];

/// Sinks that are effects, not results.
const NOT_OUTPUTS: [&str; 6] = ["NoOp", "Const", "Placeholder", "SaveV2", "Assert", "Print"];

/// The synthesized `serving_default` signature of a frozen graph read from `path`.
pub fn signature(graph: &GraphDef, path: &Path) -> Result<SignatureDef> {
    let read: HashSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| n.input.iter())
        .map(|i| {
            i.trim_start_matches('^')
                .split(':')
                .next()
                .unwrap_or_default()
        })
        .collect();
    let mut inputs = HashMap::new();
    let mut outputs = HashMap::new();
    for node in &graph.node {
        if node.op == "Placeholder" {
            let dtype = output_dtype(node).ok_or_else(|| Error::Corrupt {
                path: path.into(),
                what: format!("placeholder {:?}", node.name),
                detail: "has no dtype attr".into(),
            })?;
            let shape = Attrs::new(&node.attr).shape("shape").ok().cloned();
            inputs.insert(node.name.clone(), info(node, dtype, shape));
        } else if !read.contains(node.name.as_str()) && !NOT_OUTPUTS.contains(&node.op.as_str()) {
            if let Some(dtype) = output_dtype(node) {
                outputs.insert(node.name.clone(), info(node, dtype, None));
            }
        }
    }
    if outputs.is_empty() {
        return Err(Error::Corrupt {
            path: path.into(),
            what: "GraphDef".into(),
            detail: "no node could be an output (every node is read by another, or has no declared dtype)".into(),
        });
    }
    Ok(SignatureDef {
        inputs,
        outputs,
        method_name: "tensorflow/serving/predict".into(),
        defaults: HashMap::new(),
    })
}

fn info(
    node: &NodeDef,
    dtype: DType,
    shape: Option<crate::protos::TensorShapeProto>,
) -> TensorInfo {
    TensorInfo {
        dtype: dtype.to_proto(),
        tensor_shape: shape,
        encoding: Some(tensor_info::Encoding::Name(format!("{}:0", node.name))),
    }
}

/// The dtype of a node's first output as its attrs declare it.
fn output_dtype(node: &NodeDef) -> Option<DType> {
    if BOOL_OUTPUT.contains(&node.op.as_str()) {
        return Some(DType::Bool);
    }
    let attrs = Attrs::new(&node.attr);
    ["dtype", "out_type", "output_type", "DstT", "Tout", "T"]
        .iter()
        .find_map(|name| attrs.dtype(name).ok())
}
