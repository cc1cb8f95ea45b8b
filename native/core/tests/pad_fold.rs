//! Zero Pads folded into the convolutions that read them (engine::pad_fold), end to end: a
//! hand-built graph Pad -> Conv2D / DepthwiseConv2dNative -> BiasAdd -> Relu compiles to one
//! fused convolution with explicit padding and no Pad, and gives what the kernels give when
//! run one node at a time on the materialized padded tensor.

mod common;

use common::node;
use std::sync::Arc;

use savedmodel_core::engine::context::FileAccess;
use savedmodel_core::engine::graph::{graph_body, Src};
use savedmodel_core::engine::library::Library;
use savedmodel_core::engine::plan::{Plan, Request};
use savedmodel_core::engine::{run_node, Value};
use savedmodel_core::kernels::registry;
use savedmodel_core::protos::attr_value::{ListValue, Value as A};
use savedmodel_core::protos::{NodeDef, TensorProto};
use savedmodel_core::tensor_proto::shape_proto;
use savedmodel_core::Tensor;

const FLOAT: i32 = 1;
const INT32: i32 = 3;

fn constant(name: &str, proto: TensorProto) -> NodeDef {
    let dtype = proto.dtype;
    node(
        name,
        "Const",
        &[],
        vec![
            ("value", A::Tensor(Box::new(proto))),
            ("dtype", A::Type(dtype)),
        ],
    )
}

fn floats(shape: &[usize], values: Vec<f32>) -> TensorProto {
    TensorProto {
        dtype: FLOAT,
        tensor_shape: Some(shape_proto(
            &shape.iter().map(|&d| d as i64).collect::<Vec<_>>(),
        )),
        float_val: values,
        ..Default::default()
    }
}

fn ints(list: &[i64]) -> A {
    A::List(Box::new(ListValue {
        i: list.to_vec(),
        ..Default::default()
    }))
}

/// Deterministic values in [-1, 1) (inputs, not expectations).
fn values(count: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..count)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// One case: the op, its stride, the Pad's spatial (before, after) for H and W.
struct Case {
    op: &'static str,
    stride: i64,
    pads: [[i32; 2]; 2],
}

impl Case {
    /// The filter's shape: HWIO for Conv2D, (H, W, C, multiplier) for depthwise.
    fn filter_shape(&self, channels: usize) -> [usize; 4] {
        if self.op == "Conv2D" {
            [3, 3, channels, 5]
        } else {
            [3, 3, channels, 2]
        }
    }

    fn graph(&self, channels: usize) -> Vec<NodeDef> {
        let [h, w] = self.pads;
        let filter = self.filter_shape(channels);
        let out_channels = if self.op == "Conv2D" {
            filter[3]
        } else {
            channels * filter[3]
        };
        let t = || ("T", A::Type(FLOAT));
        vec![
            node("x", "Placeholder", &[], vec![("dtype", A::Type(FLOAT))]),
            constant(
                "paddings",
                TensorProto {
                    dtype: INT32,
                    tensor_shape: Some(shape_proto(&[4, 2])),
                    int_val: vec![0, 0, h[0], h[1], w[0], w[1], 0, 0],
                    ..Default::default()
                },
            ),
            constant("w", floats(&filter, values(filter.iter().product(), 7))),
            constant("b", floats(&[out_channels], values(out_channels, 11))),
            node(
                "pad",
                "Pad",
                &["x", "paddings"],
                vec![t(), ("Tpaddings", A::Type(INT32))],
            ),
            node(
                "conv",
                self.op,
                &["pad", "w"],
                vec![
                    t(),
                    ("strides", ints(&[1, self.stride, self.stride, 1])),
                    ("padding", A::S(b"VALID".to_vec())),
                    ("data_format", A::S(b"NHWC".to_vec())),
                ],
            ),
            node("bias", "BiasAdd", &["conv", "b"], vec![t()]),
            node("relu", "Relu", &["bias"], vec![t()]),
        ]
    }
}

fn tensor(v: &Value) -> Tensor {
    match v {
        Value::Tensor(t) => (**t).clone(),
        other => panic!("not a tensor: {other:?}"),
    }
}

/// The graph's output computed node by node through the kernels, the Pad materialized.
fn unfolded(graph: &[NodeDef], x: &Tensor) -> Tensor {
    let constant = |name: &str| {
        let def = graph.iter().find(|n| n.name == name).unwrap();
        tensor(&run_node(def, vec![]).unwrap()[0])
    };
    let mut current = x.clone();
    for (name, other) in [
        ("pad", "paddings"),
        ("conv", "w"),
        ("bias", "b"),
        ("relu", ""),
    ] {
        let def = graph.iter().find(|n| n.name == name).unwrap();
        let mut inputs = vec![current];
        if !other.is_empty() {
            inputs.push(constant(other));
        }
        current = tensor(&run_node(def, inputs).unwrap()[0]);
    }
    current
}

#[test]
fn folded_convolutions_match_the_padded_ones() {
    let channels = 4;
    let shape = [2, 9, 8, channels];
    let x = Tensor::from_vec(shape.to_vec(), values(shape.iter().product(), 3));
    for op in ["Conv2D", "DepthwiseConv2dNative"] {
        for stride in [1, 2] {
            for pads in [[[0, 1], [0, 1]], [[1, 1], [1, 1]], [[2, 0], [1, 3]]] {
                let case = Case { op, stride, pads };
                let graph = case.graph(channels);
                let library = Library::new(None, &[], registry(), FileAccess::default());
                let body = graph_body(&graph, library.op_defs()).unwrap();
                let request = Request {
                    feeds: &[Src::Node("x".into(), 0)],
                    fetches: &[Src::Node("relu".into(), 0)],
                    targets: &[],
                    keep_stateful: false,
                };
                let plan = Plan::compile("graph", &body, &request, &library).unwrap();
                let what = format!("{op} stride {stride} pads {pads:?}");
                assert_eq!(plan.ops(), [format!("_Fused{op}")], "{what}");
                let ours = plan
                    .run(&library.context(), &[Value::Tensor(Arc::new(x.clone()))])
                    .unwrap();
                let ours = tensor(&ours[0]);
                let expected = unfolded(&graph, &x);
                assert_eq!(ours.shape(), expected.shape(), "{what}");
                let (a, b) = (
                    ours.values::<f32>().unwrap(),
                    expected.values::<f32>().unwrap(),
                );
                for (i, (p, q)) in a.iter().zip(b).enumerate() {
                    assert!(
                        (p - q).abs() <= 1e-5 * (1.0 + q.abs()),
                        "{what}: element {i}: {p} vs {q}"
                    );
                }
            }
        }
    }
}
