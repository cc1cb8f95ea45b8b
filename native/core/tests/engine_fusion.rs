//! Fusion on small hand-built graphs: a convolution or matmul followed by a bias, a batch
//! normalization's scale and shift, a residual Add and an activation compiles to one fused
//! step, and that step gives what the graph's ops give run one by one (the unfused reference:
//! each node through its own kernel).

mod common;

use common::{constant, ints, node, values};
use std::sync::Arc;

use savedmodel_core::engine::context::FileAccess;
use savedmodel_core::engine::graph::{graph_body, Src};
use savedmodel_core::engine::library::Library;
use savedmodel_core::engine::plan::{Plan, Request};
use savedmodel_core::engine::{run_node, Value};
use savedmodel_core::kernels::registry;
use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::NodeDef;
use savedmodel_core::Tensor;

const FLOAT: A = A::Type(1);

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    Tensor::from_vec(shape.to_vec(), values(shape.iter().product(), seed))
}

/// One layer: `base` of input x by weights w, then `rest` (op, second input) in order.
struct Layer {
    base: NodeDef,
    weights: Tensor,
    rest: Vec<(&'static str, Option<Src>)>,
}

/// The layer's graph: placeholders x and r (a residual), constants w and c<i>, nodes n<i>.
fn graph(layer: &Layer, constants: &[Tensor]) -> (Vec<NodeDef>, String) {
    let mut nodes = vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
        constant("w", &layer.weights),
        layer.base.clone(),
    ];
    let mut last = layer.base.name.clone();
    for (i, (op, other)) in layer.rest.iter().enumerate() {
        let name = format!("n{i}");
        let inputs = match other {
            None => vec![last.clone()],
            Some(Src::Node(n, _)) if n == "r" => vec!["r".to_string(), last.clone()],
            Some(_) => {
                nodes.push(constant(&format!("c{i}"), &constants[i]));
                vec![last.clone(), format!("c{i}")]
            }
        };
        let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        nodes.push(node(&name, op, &refs, vec![("T", FLOAT)]));
        last = name;
    }
    (nodes, last)
}

fn compile(nodes: &[NodeDef], fetch: &str) -> (Library, Plan) {
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(nodes, library.op_defs()).unwrap();
    let request = Request {
        feeds: &[Src::Node("x".into(), 0), Src::Node("r".into(), 0)],
        fetches: &[Src::Node(fetch.into(), 0)],
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library).unwrap();
    (library, plan)
}

fn tensor_of(v: &Value) -> Tensor {
    match v {
        Value::Tensor(t) => (**t).clone(),
        other => panic!("{other:?}"),
    }
}

/// The graph's nodes run one by one through their own kernels (no fusion).
fn reference(layer: &Layer, constants: &[Tensor], x: &Tensor, r: &Tensor) -> Tensor {
    let mut value =
        tensor_of(&run_node(&layer.base, vec![x.clone(), layer.weights.clone()]).unwrap()[0]);
    for (i, (op, other)) in layer.rest.iter().enumerate() {
        let n = node("n", op, &[], vec![("T", FLOAT)]);
        let inputs = match other {
            None => vec![value],
            Some(Src::Node(name, _)) if name == "r" => vec![r.clone(), value],
            Some(_) => vec![value, constants[i].clone()],
        };
        value = tensor_of(&run_node(&n, inputs).unwrap()[0]);
    }
    value
}

fn assert_close(got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape());
    let (g, w) = (got.values::<f32>().unwrap(), want.values::<f32>().unwrap());
    for (i, (a, b)) in g.iter().zip(w).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-5 * b.abs(),
            "element {i}: {a} vs {b}"
        );
    }
}

/// Compiles the layer, checks it fused into `fused` alone, and compares a run against the
/// reference for the residual `r`.
fn check(layer: &Layer, x_shape: &[usize], r_shape: &[usize], fused: &str) {
    let shape = layer.weights.shape();
    let channels = match layer.base.op.as_str() {
        "DepthwiseConv2dNative" => shape[2] * shape[3],
        _ => shape[shape.len() - 1],
    };
    let constants: Vec<Tensor> = (0..layer.rest.len())
        .map(|i| tensor(&[channels], 10 + i as u64))
        .collect();
    let (nodes, last) = graph(layer, &constants);
    let (library, plan) = compile(&nodes, &last);
    assert_eq!(plan.ops(), vec![fused], "{:?}", layer.rest);
    let (x, r) = (tensor(x_shape, 1), tensor(r_shape, 2));
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(r.clone())),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    assert_close(&tensor_of(&got[0]), &reference(layer, &constants, &x, &r));
}

fn conv(op: &str, strides: i64, padding: &str) -> NodeDef {
    node(
        "conv",
        op,
        &["x", "w"],
        vec![
            ("T", FLOAT),
            ("strides", ints(&[1, strides, strides, 1])),
            ("padding", A::S(padding.as_bytes().to_vec())),
        ],
    )
}

fn residual() -> Option<Src> {
    Some(Src::Node("r".into(), 0))
}

fn constant_input() -> Option<Src> {
    Some(Src::Node("c".into(), 0))
}

#[test]
fn conv_batch_norm_residual_and_relu_become_one_step() {
    let layer = Layer {
        base: conv("Conv2D", 1, "SAME"),
        weights: tensor(&[3, 3, 5, 7], 3),
        rest: vec![
            ("BiasAdd", constant_input()),
            ("Mul", constant_input()),
            ("AddV2", constant_input()),
            ("AddV2", residual()),
            ("Relu", None),
        ],
    };
    check(&layer, &[2, 9, 8, 5], &[2, 9, 8, 7], "_FusedConv2D");
}

#[test]
fn a_residual_that_broadcasts_gives_tensorflows_add() {
    let layer = Layer {
        base: conv("Conv2D", 2, "VALID"),
        weights: tensor(&[3, 3, 4, 6], 3),
        rest: vec![
            ("BiasAdd", constant_input()),
            ("AddV2", residual()),
            ("Relu6", None),
        ],
    };
    check(&layer, &[1, 9, 9, 4], &[1, 1, 1, 6], "_FusedConv2D");
    check(&layer, &[1, 9, 9, 4], &[6], "_FusedConv2D");
}

#[test]
fn pointwise_convolutions_fuse_over_tiles() {
    // 1x1: each tile of pixels multiplies the input in place; enough pixels for several tiles
    // and threads.
    let layer = Layer {
        base: conv("Conv2D", 1, "VALID"),
        weights: tensor(&[1, 1, 16, 24], 3),
        rest: vec![("BiasAdd", constant_input()), ("AddV2", residual())],
    };
    check(&layer, &[2, 60, 70, 16], &[2, 60, 70, 24], "_FusedConv2D");
}

/// A filter the tiled path multiplies by is handed to the fused kernel, which keeps it packed
/// (the plan keeps no copy of it), for a few rows (a 7x7 output, the AVX-512 block where the
/// CPU has it), many (the gemm crate a panel at a time) and a grouped input (the filter
/// rebuilt for the call); a filter Winograd may take stays the plan's.
#[test]
fn large_filters_are_kept_packed_by_the_kernel() {
    for (weights, strides, shapes) in [
        (
            [3, 3, 64, 80],
            2,
            vec![[1, 15, 15, 64], [2, 40, 41, 64], [1, 9, 9, 128]],
        ),
        ([1, 1, 512, 100], 1, vec![[1, 7, 7, 512], [3, 20, 20, 512]]),
        // Tiles of 256 rows: the gemm crate a panel at a time.
        ([1, 1, 256, 128], 1, vec![[1, 30, 30, 256]]),
    ] {
        let layer = Layer {
            base: conv("Conv2D", strides, "SAME"),
            weights: tensor(&weights, 3),
            rest: vec![("BiasAdd", constant_input()), ("Relu", None)],
        };
        let constants = vec![tensor(&[weights[3]], 10), tensor(&[1], 11)];
        let (nodes, last) = graph(&layer, &constants);
        let (library, plan) = compile(&nodes, &last);
        assert_eq!(plan.ops(), vec!["_FusedConv2D"]);
        assert!(plan.constant_elements() < layer.weights.len());
        for x_shape in shapes {
            let out = weights[3];
            let r = tensor(&[out], 2);
            let x = tensor(&x_shape, 1);
            let args = vec![
                Value::Tensor(Arc::new(x.clone())),
                Value::Tensor(Arc::new(r.clone())),
            ];
            let got = plan.run(&library.context(), &args).unwrap();
            assert_close(&tensor_of(&got[0]), &reference(&layer, &constants, &x, &r));
        }
    }
    let winograd = Layer {
        base: conv("Conv2D", 1, "SAME"),
        weights: tensor(&[3, 3, 64, 80], 3),
        rest: vec![("BiasAdd", constant_input())],
    };
    let (nodes, last) = graph(&winograd, &[tensor(&[80], 10)]);
    let (_, plan) = compile(&nodes, &last);
    assert!(plan.constant_elements() > winograd.weights.len());
}

/// Plans compiled together (a model's signatures) hand their filters over together: each
/// keeps none of its own, and both still give the unfused graph's outputs.
#[test]
fn plans_compiled_together_hand_their_filters_over_together() {
    let layer = Layer {
        base: conv("Conv2D", 1, "VALID"),
        weights: tensor(&[1, 1, 512, 100], 3),
        rest: vec![("BiasAdd", constant_input())],
    };
    let constants = vec![tensor(&[100], 10)];
    let (nodes, last) = graph(&layer, &constants);
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(&nodes, library.op_defs()).unwrap();
    let request = Request {
        feeds: &[Src::Node("x".into(), 0), Src::Node("r".into(), 0)],
        fetches: &[Src::Node(last.clone(), 0)],
        targets: &[],
        keep_stateful: false,
    };
    let compile = || Plan::compile_holding("graph", &body, &request, &library).unwrap();
    let (mut first, mut second) = (compile(), compile());
    assert!(first.constant_elements() > layer.weights.len());
    Plan::absorb_together(&mut [&mut first, &mut second]);
    let (x, r) = (tensor(&[1, 7, 7, 512], 1), tensor(&[100], 2));
    let want = reference(&layer, &constants, &x, &r);
    for plan in [&first, &second] {
        assert!(plan.constant_elements() < layer.weights.len());
        let args = vec![
            Value::Tensor(Arc::new(x.clone())),
            Value::Tensor(Arc::new(r.clone())),
        ];
        let got = plan.run(&library.context(), &args).unwrap();
        assert_close(&tensor_of(&got[0]), &want);
    }
}

#[test]
fn depthwise_convolutions_fuse_with_a_residual() {
    let layer = Layer {
        base: conv("DepthwiseConv2dNative", 1, "SAME"),
        weights: tensor(&[3, 3, 6, 1], 3),
        rest: vec![
            ("Mul", constant_input()),
            ("AddV2", constant_input()),
            ("AddV2", residual()),
            ("Relu6", None),
        ],
    };
    check(
        &layer,
        &[1, 12, 10, 6],
        &[1, 12, 10, 6],
        "_FusedDepthwiseConv2dNative",
    );
}

#[test]
fn matmul_fuses_with_a_residual() {
    let layer = Layer {
        base: node("conv", "MatMul", &["x", "w"], vec![("T", FLOAT)]),
        weights: tensor(&[5, 3], 3),
        rest: vec![
            ("BiasAdd", constant_input()),
            ("AddV2", residual()),
            ("Tanh", None),
        ],
    };
    check(&layer, &[4, 5], &[4, 3], "_FusedMatMul");
}

#[test]
fn a_batch_norm_after_the_activation_fuses_into_the_convolution() {
    // Keras' Conv2D(activation="relu") then BatchNormalization: the Mul and Add by constants
    // after the Relu become the fused node's scale and shift after its activation. One input
    // channel (the narrow direct kernel) and eight (im2col and a GEMM).
    for (weights, padding) in [([3, 3, 1, 8], "VALID"), ([3, 3, 8, 16], "SAME")] {
        let layer = Layer {
            base: conv("Conv2D", 1, padding),
            weights: tensor(&weights, 3),
            rest: vec![
                ("BiasAdd", constant_input()),
                ("Relu", None),
                ("Mul", constant_input()),
                ("AddV2", constant_input()),
            ],
        };
        check(&layer, &[3, 11, 9, weights[2]], &[1], "_FusedConv2D");
    }
}

#[test]
fn scale_and_shift_after_the_activation_follow_every_base_op() {
    let depthwise = Layer {
        base: conv("DepthwiseConv2dNative", 1, "SAME"),
        weights: tensor(&[3, 3, 6, 1], 3),
        rest: vec![
            ("AddV2", residual()),
            ("Relu6", None),
            ("Sub", constant_input()),
            ("Mul", constant_input()),
        ],
    };
    check(
        &depthwise,
        &[1, 12, 10, 6],
        &[1, 12, 10, 6],
        "_FusedDepthwiseConv2dNative",
    );
    let matmul = Layer {
        base: node("conv", "MatMul", &["x", "w"], vec![("T", FLOAT)]),
        weights: tensor(&[5, 3], 3),
        rest: vec![
            ("BiasAdd", constant_input()),
            ("Tanh", None),
            ("Mul", constant_input()),
            ("AddV2", constant_input()),
        ],
    };
    check(&matmul, &[4, 5], &[1], "_FusedMatMul");
    // A residual that broadcasts: TensorFlow's Add, then the activation, scale and shift.
    let broadcast = Layer {
        base: conv("Conv2D", 2, "VALID"),
        weights: tensor(&[3, 3, 4, 6], 3),
        rest: vec![
            ("BiasAdd", constant_input()),
            ("AddV2", residual()),
            ("Elu", None),
            ("Mul", constant_input()),
            ("AddV2", constant_input()),
        ],
    };
    check(&broadcast, &[1, 9, 9, 4], &[1, 1, 1, 6], "_FusedConv2D");
}

#[test]
fn a_residual_read_elsewhere_stops_the_chain_after_the_add() {
    // The Add's output is also a plan output: the Add is not fused away, the bias still is.
    let layer = Layer {
        base: conv("Conv2D", 1, "SAME"),
        weights: tensor(&[1, 1, 3, 4], 3),
        rest: vec![("BiasAdd", constant_input()), ("AddV2", residual())],
    };
    let constants: Vec<Tensor> = (0..2).map(|i| tensor(&[4], 10 + i)).collect();
    let (mut nodes, last) = graph(&layer, &constants);
    nodes.push(node("relu", "Relu", &[&last], vec![("T", FLOAT)]));
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(&nodes, library.op_defs()).unwrap();
    let fetches = [Src::Node("relu".into(), 0), Src::Node(last.clone(), 0)];
    let request = Request {
        feeds: &[Src::Node("x".into(), 0), Src::Node("r".into(), 0)],
        fetches: &fetches,
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library).unwrap();
    assert_eq!(plan.ops(), vec!["_FusedConv2D", "Relu"]);
    let (x, r) = (tensor(&[1, 4, 4, 3], 1), tensor(&[1, 4, 4, 4], 2));
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(r.clone())),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    assert_close(&tensor_of(&got[1]), &reference(&layer, &constants, &x, &r));
}

#[test]
fn two_branches_meeting_at_a_residual_add_both_fuse() {
    // ResNet's projection block: each branch's conv and batch norm fuse; one of them also takes
    // the Add and the Relu, with the other branch's result as its residual.
    let (wa, wb) = (tensor(&[3, 3, 4, 6], 3), tensor(&[1, 1, 4, 6], 4));
    let (ca, cb) = (tensor(&[6], 5), tensor(&[6], 6));
    let conv_named = |name: &str, w: &str| {
        let mut n = conv("Conv2D", 1, "SAME");
        n.name = name.into();
        n.input = vec!["x".into(), w.into()];
        n
    };
    let mut nodes = vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
        constant("wa", &wa),
        constant("wb", &wb),
        constant("ca", &ca),
        constant("cb", &cb),
        conv_named("a", "wa"),
        conv_named("b", "wb"),
    ];
    nodes.push(node("a_bias", "BiasAdd", &["a", "ca"], vec![("T", FLOAT)]));
    nodes.push(node("b_scale", "Mul", &["b", "cb"], vec![("T", FLOAT)]));
    nodes.push(node(
        "add",
        "AddV2",
        &["a_bias", "b_scale"],
        vec![("T", FLOAT)],
    ));
    nodes.push(node("out", "Relu", &["add"], vec![("T", FLOAT)]));
    let (library, plan) = compile(&nodes, "out");
    assert_eq!(plan.ops(), vec!["_FusedConv2D", "_FusedConv2D"]);
    let x = tensor(&[2, 7, 5, 4], 1);
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(tensor(&[1], 2))),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    let run = |n: &NodeDef, inputs: Vec<Tensor>| tensor_of(&run_node(n, inputs).unwrap()[0]);
    let a = run(&conv("Conv2D", 1, "SAME"), vec![x.clone(), wa]);
    let a = run(&node("n", "BiasAdd", &[], vec![("T", FLOAT)]), vec![a, ca]);
    let b = run(&conv("Conv2D", 1, "SAME"), vec![x, wb]);
    let b = run(&node("n", "Mul", &[], vec![("T", FLOAT)]), vec![b, cb]);
    let sum = run(&node("n", "AddV2", &[], vec![("T", FLOAT)]), vec![a, b]);
    let want = run(&node("n", "Relu", &[], vec![("T", FLOAT)]), vec![sum]);
    assert_close(&tensor_of(&got[0]), &want);
}

/// A conv (or depthwise conv) with a bias, then swish as `tail` writes it on the bias's
/// output "b"; returns the nodes and the fetched node's name.
fn swish_graph(op: &str, w: &Tensor, c: &Tensor, tail: &[NodeDef]) -> Vec<NodeDef> {
    let mut nodes = vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
        constant("w", w),
        constant("c", c),
        conv(op, 1, "SAME"),
    ];
    nodes[4].name = "conv".into();
    nodes.push(node("b", "BiasAdd", &["conv", "c"], vec![("T", FLOAT)]));
    nodes.extend(tail.iter().cloned());
    nodes
}

/// Runs `nodes` fetching `fetch`, and the same computation op by op: conv, bias, then
/// b * sigmoid(beta * b).
fn check_swish(
    nodes: &[NodeDef],
    fetch: &str,
    op: &str,
    w: &Tensor,
    c: &Tensor,
    beta: f32,
    ops: &[&str],
) {
    let (library, plan) = compile(nodes, fetch);
    assert_eq!(plan.ops(), ops);
    let x = tensor(&[2, 6, 5, 4], 1);
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(tensor(&[1], 2))),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    let run = |n: &NodeDef, inputs: Vec<Tensor>| tensor_of(&run_node(n, inputs).unwrap()[0]);
    let t = || node("n", "Mul", &[], vec![("T", FLOAT)]);
    let b = run(&conv(op, 1, "SAME"), vec![x, w.clone()]);
    let b = run(
        &node("n", "BiasAdd", &[], vec![("T", FLOAT)]),
        vec![b, c.clone()],
    );
    let scaled = run(&t(), vec![Tensor::from_vec(vec![], vec![beta]), b.clone()]);
    let s = run(&node("n", "Sigmoid", &[], vec![("T", FLOAT)]), vec![scaled]);
    assert_close(&tensor_of(&got[0]), &run(&t(), vec![b, s]));
}

fn beta(value: f32) -> NodeDef {
    constant("beta", &Tensor::from_vec(vec![], vec![value]))
}

fn mul(name: &str, a: &str, b: &str) -> NodeDef {
    node(name, "Mul", &[a, b], vec![("T", FLOAT)])
}

fn sigmoid(name: &str, input: &str) -> NodeDef {
    node(name, "Sigmoid", &[input], vec![("T", FLOAT)])
}

#[test]
fn swish_as_keras_writes_it_fuses_into_the_convolution() {
    // tf.nn.silu: b * sigmoid(beta * b), beta a constant 1.
    let (w, c) = (tensor(&[3, 3, 4, 6], 3), tensor(&[6], 4));
    let tail = [
        beta(1.0),
        mul("m", "beta", "b"),
        sigmoid("s", "m"),
        mul("y", "b", "s"),
    ];
    let nodes = swish_graph("Conv2D", &w, &c, &tail);
    check_swish(&nodes, "y", "Conv2D", &w, &c, 1.0, &["_FusedConv2D"]);
}

#[test]
fn plain_swish_fuses_into_a_depthwise_convolution() {
    let (w, c) = (tensor(&[3, 3, 4, 1], 3), tensor(&[4], 4));
    let tail = [sigmoid("s", "b"), mul("y", "s", "b")];
    let nodes = swish_graph("DepthwiseConv2dNative", &w, &c, &tail);
    let fused = ["_FusedDepthwiseConv2dNative"];
    check_swish(&nodes, "y", "DepthwiseConv2dNative", &w, &c, 1.0, &fused);
}

#[test]
fn swish_with_another_beta_or_another_reader_is_left_alone() {
    let (w, c) = (tensor(&[3, 3, 4, 6], 3), tensor(&[6], 4));
    let tail = [
        beta(1.5),
        mul("m", "beta", "b"),
        sigmoid("s", "m"),
        mul("y", "b", "s"),
    ];
    let nodes = swish_graph("Conv2D", &w, &c, &tail);
    let unfused = ["_FusedConv2D", "Mul", "Sigmoid", "Mul"];
    check_swish(&nodes, "y", "Conv2D", &w, &c, 1.5, &unfused);
    // The sigmoid is read twice: its Mul cannot take it, and swish stays three ops.
    let tail = [
        sigmoid("s", "b"),
        mul("y0", "b", "s"),
        node("y", "AddV2", &["y0", "s"], vec![("T", FLOAT)]),
    ];
    let nodes = swish_graph("Conv2D", &w, &c, &tail);
    let (_, plan) = compile(&nodes, "y");
    assert_eq!(plan.ops(), vec!["_FusedConv2D", "Sigmoid", "Mul", "AddV2"]);
}

/// x -> Neg -> Mul by `scale` -> AddV2 of `shift` -> `activation`: a batch normalization and
/// activation after an op they cannot fold into (DenseNet's concatenations).
fn affine_graph(scale: &Tensor, shift: &Tensor, activation: &str) -> Vec<NodeDef> {
    vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
        constant("s", scale),
        constant("b", shift),
        node("neg", "Neg", &["x"], vec![("T", FLOAT)]),
        node("m", "Mul", &["neg", "s"], vec![("T", FLOAT)]),
        node("a", "AddV2", &["m", "b"], vec![("T", FLOAT)]),
        node("y", activation, &["a"], vec![("T", FLOAT)]),
    ]
}

/// The same op by op, each through its own kernel.
fn affine_reference(x: &Tensor, scale: &Tensor, shift: &Tensor, activation: &str) -> Tensor {
    let run = |op: &str, inputs: Vec<Tensor>| {
        tensor_of(&run_node(&node("n", op, &[], vec![("T", FLOAT)]), inputs).unwrap()[0])
    };
    let m = run("Mul", vec![run("Neg", vec![x.clone()]), scale.clone()]);
    run(activation, vec![run("AddV2", vec![m, shift.clone()])])
}

fn check_affine(x_shape: &[usize], scale: &Tensor, shift: &Tensor, activation: &str) {
    let nodes = affine_graph(scale, shift, activation);
    let (library, plan) = compile(&nodes, "y");
    assert_eq!(plan.ops(), vec!["Neg", "_SavedModelChannelAffine"]);
    let x = tensor(x_shape, 1);
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(tensor(&[1], 2))),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    assert_close(
        &tensor_of(&got[0]),
        &affine_reference(&x, scale, shift, activation),
    );
}

#[test]
fn a_batch_norm_and_activation_after_no_convolution_become_one_step() {
    let (s, b) = (tensor(&[6], 3), tensor(&[6], 4));
    check_affine(&[2, 5, 5, 6], &s, &b, "Relu");
    check_affine(&[3, 6], &s, &b, "Relu6");
    // Large enough to spread over threads.
    check_affine(&[4, 64, 64, 6], &s, &b, "Elu");
}

#[test]
fn an_affine_step_that_broadcasts_keeps_tensorflows_shape() {
    // One channel in, six out; constants of rank 4 on an input of rank 2.
    let (s, b) = (tensor(&[6], 3), tensor(&[6], 4));
    check_affine(&[2, 5, 1], &s, &b, "Relu");
    let (s4, b4) = (tensor(&[1, 1, 1, 6], 3), tensor(&[1, 1, 1, 6], 4));
    check_affine(&[3, 6], &s4, &b4, "Sigmoid");
}

#[test]
fn an_affine_chain_read_elsewhere_is_left_alone() {
    let (s, b) = (tensor(&[6], 3), tensor(&[6], 4));
    let mut nodes = affine_graph(&s, &b, "Relu");
    nodes.push(node("z", "AddV2", &["m", "y"], vec![("T", FLOAT)]));
    let (_, plan) = compile(&nodes, "z");
    assert_eq!(
        plan.ops(),
        vec!["Neg", "Mul", "_SavedModelChannelAffine", "AddV2"]
    );
}

/// x, then each of `steps` (op, constant) on the previous node; the last node's name.
fn chain_graph(steps: &[(&str, Tensor)]) -> (Vec<NodeDef>, String) {
    let mut nodes = vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
    ];
    let mut last = "x".to_string();
    for (i, (op, c)) in steps.iter().enumerate() {
        let (name, constant_name) = (format!("n{i}"), format!("c{i}"));
        nodes.push(constant(&constant_name, c));
        nodes.push(node(
            &name,
            op,
            &[&last, &constant_name],
            vec![("T", FLOAT)],
        ));
        last = name;
    }
    (nodes, last)
}

fn scalar(value: f32) -> Tensor {
    Tensor::from_vec(vec![], vec![value])
}

/// Keras' Rescaling then Normalization on an RGB image: x * (1/255) + 0 by single values,
/// then - mean and / std per channel, becomes one affine step (scale and shift per channel)
/// that gives what the four ops give one by one.
#[test]
fn rescaling_then_normalization_become_one_step() {
    let std = Tensor::from_vec(vec![3], vec![0.23f32, 0.5, 1.7]);
    let steps = [
        ("Mul", scalar(1.0 / 255.0)),
        ("AddV2", scalar(0.0)),
        ("Sub", tensor(&[3], 3)),
        ("RealDiv", std),
    ];
    let (nodes, last) = chain_graph(&steps);
    let (library, plan) = compile(&nodes, &last);
    assert_eq!(plan.ops(), vec!["_SavedModelChannelAffine"]);
    let pixels = (0..210).map(|i| (i * 37 % 256) as f32).collect();
    let x = Tensor::from_vec(vec![2, 7, 5, 3], pixels);
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(tensor(&[1], 2))),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    let mut want = x;
    for (op, c) in steps {
        let n = node("n", op, &[], vec![("T", FLOAT)]);
        want = tensor_of(&run_node(&n, vec![want, c]).unwrap()[0]);
    }
    assert_close(&tensor_of(&got[0]), &want);
}

#[test]
fn division_by_zero_or_single_value_steps_alone_stay_ops() {
    let zero = Tensor::from_vec(vec![3], vec![1.0f32, 0.0, 2.0]);
    let divided = [("Sub", tensor(&[3], 3)), ("RealDiv", zero)];
    let scalars = [("Mul", scalar(0.5)), ("AddV2", scalar(1.0))];
    for (steps, ops) in [(divided, ["Sub", "RealDiv"]), (scalars, ["Mul", "AddV2"])] {
        let (nodes, last) = chain_graph(&steps);
        assert_eq!(compile(&nodes, &last).1.ops(), ops);
    }
}

/// GELU's tanh form as Keras writes it (tanh_gelu: after a Dense layer, read also by a
/// residual Add, and as the output) becomes one `_SavedModelGelu` node each time, and the
/// model gives what its eight element-wise ops give run one by one.
#[test]
fn keras_tanh_gelu_fuses_into_one_node_with_the_ops_results() {
    use savedmodel_core::kernels::gelu::GELU;
    use savedmodel_core::{LoadOptions, Model};
    let dir = common::data_dir().join("models").join("tanh_gelu");
    let options = LoadOptions::default();
    let fused = Model::load(&dir, &options).unwrap();
    let plain = Model::load_with(&dir, &options, Arc::new(registry().without(GELU))).unwrap();
    let count = |m: &Model, op: &str| {
        let ops = m.signature("serving_default").unwrap().ops();
        ops.iter().filter(|o| **o == op).count()
    };
    assert_eq!(count(&fused, GELU), 3);
    assert_eq!(count(&fused, "Tanh"), 0);
    assert_eq!(count(&plain, "Tanh"), 3);
    for batch in [1, 7, 1100] {
        let x = Tensor::from_vec(vec![batch, 12], values(batch * 12, batch as u64));
        let feeds = vec![("features".to_string(), x)];
        let got = fused.run("serving_default", feeds.clone()).unwrap();
        let want = plain.run("serving_default", feeds).unwrap();
        assert_close(&got[0].1, &want[0].1);
    }
}

/// x (fed as "x") times s (fed as "r") in `order`, then a convolution by constant weights `w`
/// and a bias: the Mul of a squeeze-and-excitation block before its projection.
fn scaled_conv_graph(w: &Tensor, c: &Tensor, order: [&str; 2]) -> Vec<NodeDef> {
    vec![
        node("x", "Placeholder", &[], vec![("dtype", FLOAT)]),
        node("r", "Placeholder", &[], vec![("dtype", FLOAT)]),
        constant("w", w),
        constant("c", c),
        mul("m", order[0], order[1]),
        node(
            "conv",
            "Conv2D",
            &["m", "w"],
            vec![
                ("T", FLOAT),
                ("strides", ints(&[1, 1, 1, 1])),
                ("padding", A::S(b"SAME".to_vec())),
            ],
        ),
        node("y", "BiasAdd", &["conv", "c"], vec![("T", FLOAT)]),
    ]
}

/// Compiles the graph, checks its steps, and compares a run on x and s with the ops run one
/// by one (Mul, Conv2D, BiasAdd).
fn check_scaled_conv(w_shape: &[usize], x_shape: &[usize], s_shape: &[usize], order: [&str; 2]) {
    let (w, c) = (tensor(w_shape, 3), tensor(&[w_shape[3]], 4));
    let (library, plan) = compile(&scaled_conv_graph(&w, &c, order), "y");
    assert_eq!(plan.ops(), vec!["_FusedConv2D"], "{x_shape:?} {s_shape:?}");
    let (x, s) = (tensor(x_shape, 1), tensor(s_shape, 2));
    let args = vec![
        Value::Tensor(Arc::new(x.clone())),
        Value::Tensor(Arc::new(s.clone())),
    ];
    let got = plan.run(&library.context(), &args).unwrap();
    let run = |n: &NodeDef, inputs: Vec<Tensor>| tensor_of(&run_node(n, inputs).unwrap()[0]);
    let product = match order {
        ["x", _] => vec![x, s],
        _ => vec![s, x],
    };
    let m = run(&node("n", "Mul", &[], vec![("T", FLOAT)]), product);
    let conv = run(&conv("Conv2D", 1, "SAME"), vec![m, w]);
    let want = run(
        &node("n", "BiasAdd", &[], vec![("T", FLOAT)]),
        vec![conv, c],
    );
    assert_close(&tensor_of(&got[0]), &want);
}

#[test]
fn a_mul_by_channel_factors_folds_into_the_next_convolution() {
    // Folded into the weights: one factor per channel, fewer weights than feature values.
    check_scaled_conv(&[1, 1, 16, 8], &[1, 9, 8, 16], &[1, 1, 1, 16], ["x", "r"]);
    check_scaled_conv(&[1, 1, 16, 8], &[1, 9, 8, 16], &[1, 1, 1, 16], ["r", "x"]);
    check_scaled_conv(&[1, 1, 16, 8], &[3, 9, 8, 16], &[16], ["x", "r"]);
    check_scaled_conv(&[3, 3, 16, 8], &[1, 12, 10, 16], &[1, 16], ["x", "r"]);
    // TensorFlow's Mul first: factors per image of a batch, factors per pixel, more weights
    // than feature values.
    check_scaled_conv(&[1, 1, 16, 8], &[2, 9, 8, 16], &[2, 1, 1, 16], ["x", "r"]);
    check_scaled_conv(&[1, 1, 16, 8], &[1, 9, 8, 16], &[1, 9, 8, 1], ["x", "r"]);
    check_scaled_conv(&[3, 3, 16, 64], &[1, 4, 4, 16], &[1, 1, 1, 16], ["x", "r"]);
}

#[test]
fn a_mul_read_elsewhere_stays_a_mul() {
    let (w, c) = (tensor(&[1, 1, 4, 4], 3), tensor(&[4], 4));
    let mut nodes = scaled_conv_graph(&w, &c, ["x", "r"]);
    nodes.push(node(
        "z",
        "AddN",
        &["y", "m"],
        vec![("T", FLOAT), ("N", A::I(2))],
    ));
    let (_, plan) = compile(&nodes, "z");
    let mut ops = plan.ops();
    ops.sort_unstable();
    assert_eq!(ops, vec!["AddN", "Mul", "_FusedConv2D"]);
}
