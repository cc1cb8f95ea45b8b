//! Inverted residual blocks (a 1x1 expand, a depthwise convolution and a 1x1 project, each with
//! its bias and activation, and optionally a residual add) compile to one
//! `_SavedModelBottleneck` step, and that step gives what the graph's ops give run one by one
//! through their own kernels: on images large enough for the banded path (every band
//! boundary, stride, padding and kernel size below), on smaller ones (split by expanded
//! channels between threads, or banded on one thread) and on tiny ones, which run the parts
//! one after another.

mod common;

use common::{constant, ints, node, values};
use std::collections::HashMap;
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

fn tensor(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let count = shape.iter().product();
    let v = values(count, seed).into_iter().map(|v| v * scale).collect();
    Tensor::from_vec(shape.to_vec(), v)
}

/// One block's shapes and windows.
struct Block {
    x: [usize; 4],
    expand: Option<usize>,
    kernel: usize,
    stride: i64,
    dilation: i64,
    padding: &'static str,
    project: Option<usize>,
    residual: bool,
    activation: &'static str,
}

/// The block's graph: placeholder x, constants, and its ops in order; the last node's name.
fn graph(b: &Block) -> (Vec<NodeDef>, Vec<(String, Tensor)>, String) {
    let mut nodes = vec![node("x", "Placeholder", &[], vec![("dtype", FLOAT)])];
    let mut constants = Vec::new();
    let mut last = "x".to_string();
    let mut channels = b.x[3];
    let add = |nodes: &mut Vec<NodeDef>, op: &str, inputs: &[&str], attrs| {
        let name = format!("n{}", nodes.len());
        let mut all = vec![("T", FLOAT)];
        all.extend(attrs);
        nodes.push(node(&name, op, inputs, all));
        name
    };
    let mut conv_layer = |nodes: &mut Vec<NodeDef>, last: &str, op: &str, w: Tensor, attrs| {
        let seed = nodes.len() as u64;
        let channels = match op {
            "Conv2D" => w.shape()[3],
            _ => w.shape()[2] * w.shape()[3],
        };
        let bias = tensor(&[channels], seed + 100, 0.5);
        let (wn, bn) = (format!("w{seed}"), format!("b{seed}"));
        nodes.push(constant(&wn, &w));
        nodes.push(constant(&bn, &bias));
        constants.push((wn.clone(), w));
        constants.push((bn.clone(), bias));
        let conv = add(nodes, op, &[last, &wn], attrs);
        add(nodes, "BiasAdd", &[&conv, &bn], vec![])
    };
    let unit = || {
        vec![
            ("strides", ints(&[1, 1, 1, 1])),
            ("padding", A::S(b"VALID".to_vec())),
        ]
    };
    if let Some(e) = b.expand {
        let w = tensor(&[1, 1, channels, e], 1, 0.4);
        last = conv_layer(&mut nodes, &last, "Conv2D", w, unit());
        last = add(&mut nodes, b.activation, &[&last], vec![]);
        channels = e;
    }
    let w = tensor(&[b.kernel, b.kernel, channels, 1], 2, 0.4);
    let window = vec![
        ("strides", ints(&[1, b.stride, b.stride, 1])),
        ("dilations", ints(&[1, b.dilation, b.dilation, 1])),
        ("padding", A::S(b.padding.as_bytes().to_vec())),
    ];
    last = conv_layer(&mut nodes, &last, "DepthwiseConv2dNative", w, window);
    last = add(&mut nodes, b.activation, &[&last], vec![]);
    if let Some(p) = b.project {
        let w = tensor(&[1, 1, channels, p], 3, 0.4);
        last = conv_layer(&mut nodes, &last, "Conv2D", w, unit());
        if b.residual {
            last = add(&mut nodes, "AddV2", &["x", &last], vec![]);
        }
    }
    (nodes, constants, last)
}

fn tensor_of(v: &Value) -> Tensor {
    match v {
        Value::Tensor(t) => (**t).clone(),
        other => panic!("{other:?}"),
    }
}

/// The graph's nodes run one by one through their own kernels (no fusion).
fn reference(nodes: &[NodeDef], constants: &[(String, Tensor)], x: &Tensor) -> Tensor {
    let mut known: HashMap<String, Tensor> = constants.iter().cloned().collect();
    known.insert("x".into(), x.clone());
    let mut last = x.clone();
    for n in nodes
        .iter()
        .filter(|n| n.op != "Const" && n.op != "Placeholder")
    {
        let inputs = n.input.iter().map(|i| known[i].clone()).collect();
        last = tensor_of(&run_node(n, inputs).unwrap()[0]);
        known.insert(n.name.clone(), last.clone());
    }
    last
}

/// The block's graph compiled (one `_SavedModelBottleneck` step), with its library.
fn compiled(b: &Block) -> (Plan, Library) {
    let (nodes, _, last) = graph(b);
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(&nodes, library.op_defs()).unwrap();
    let request = Request {
        feeds: &[Src::Node("x".into(), 0)],
        fetches: &[Src::Node(last, 0)],
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library).unwrap();
    assert_eq!(plan.ops(), vec!["_SavedModelBottleneck"]);
    (plan, library)
}

fn check(b: &Block) {
    let (nodes, constants, _) = graph(b);
    let (plan, library) = compiled(b);
    let x = tensor(&b.x, 7, 1.0);
    let got = plan
        .run(&library.context(), &[Value::Tensor(Arc::new(x.clone()))])
        .unwrap();
    let (got, want) = (tensor_of(&got[0]), reference(&nodes, &constants, &x));
    assert_eq!(got.shape(), want.shape());
    let (g, w) = (got.values::<f32>().unwrap(), want.values::<f32>().unwrap());
    for (i, (a, e)) in g.iter().zip(w).enumerate() {
        assert!(
            (a - e).abs() <= 1e-5 + 1e-5 * e.abs(),
            "element {i}: {a} vs {e}"
        );
    }
}

fn mobilenet(x: [usize; 4], stride: i64) -> Block {
    Block {
        x,
        expand: Some(x[3] * 4),
        kernel: 3,
        stride,
        dilation: 1,
        padding: "SAME",
        project: Some(x[3]),
        residual: stride == 1,
        activation: "Relu6",
    }
}

#[test]
fn an_inverted_residual_block_at_stride_1_runs_in_bands() {
    // 66 rows of 64 pixels: bands of 3 rows, 22 of them an image, two images.
    check(&mobilenet([2, 66, 64, 8], 1));
}

#[test]
fn a_block_at_stride_2_with_odd_sizes_runs_in_bands() {
    let mut b = mobilenet([1, 129, 130, 8], 2);
    b.project = Some(12);
    check(&b);
}

#[test]
fn wide_dilated_and_valid_windows_run_in_bands() {
    for (kernel, stride, dilation, padding) in
        [(5, 2, 1, "VALID"), (3, 1, 2, "SAME"), (5, 1, 1, "SAME")]
    {
        let b = Block {
            kernel,
            stride,
            dilation,
            padding,
            residual: stride == 1,
            activation: "Relu",
            ..mobilenet([1, 70, 90, 16], 1)
        };
        check(&b);
    }
}

#[test]
fn a_block_without_expand_or_without_project_runs_in_bands() {
    let mut no_expand = mobilenet([1, 100, 100, 16], 1);
    no_expand.expand = None;
    check(&no_expand);
    let mut no_project = mobilenet([2, 64, 64, 8], 2);
    no_project.project = None;
    no_project.activation = "Sigmoid";
    check(&no_project);
}

#[test]
fn small_blocks_run_part_by_part() {
    check(&mobilenet([3, 10, 9, 4], 1));
    check(&mobilenet([1, 7, 7, 6], 2));
}

#[test]
fn a_small_image_is_cut_into_a_band_per_thread() {
    // 14x14 pixels make one band of 196; at batch 1 it is cut in two.
    check(&mobilenet([1, 14, 14, 192], 1));
}

#[test]
fn small_images_run_by_channels_or_in_bands() {
    // On two threads or more: split by expanded channels (96, 72 in uneven shares, 384),
    // with and without a residual, any window. On one: 14x14x96 expanded (75 KB) in bands
    // with a 3x3 window, part by part with a 5x5 one; 7x7 in one band.
    check(&mobilenet([1, 14, 14, 24], 1));
    check(&mobilenet([1, 14, 14, 24], 2));
    check(&Block {
        kernel: 5,
        ..mobilenet([1, 14, 14, 24], 1)
    });
    check(&mobilenet([1, 9, 9, 18], 1));
    check(&mobilenet([1, 7, 7, 96], 1));
    check(&Block {
        activation: "Relu",
        dilation: 2,
        ..mobilenet([2, 7, 7, 96], 1)
    });
    // Without a project part: in bands on two threads (16 expanded rows for 14).
    check(&Block {
        project: None,
        residual: false,
        activation: "Sigmoid",
        ..mobilenet([1, 14, 14, 24], 1)
    });
}

#[test]
fn a_window_larger_than_the_image_gives_an_empty_output() {
    let b = Block {
        expand: Some(8192),
        kernel: 5,
        padding: "VALID",
        residual: false,
        ..mobilenet([1, 4, 4, 8], 1)
    };
    check(&b);
}

#[test]
fn a_block_whose_inputs_disagree_with_its_parts_is_an_error() {
    // As a graph could name the op itself: the project part adds a residual, but the block
    // gives it no input for one. Large enough for the banded path, which must not take it.
    let s = |v: &str| A::S(v.as_bytes().to_vec());
    let strings = |v: &[&str]| {
        A::List(Box::new(savedmodel_core::protos::attr_value::ListValue {
            s: v.iter().map(|x| x.as_bytes().to_vec()).collect(),
            ..Default::default()
        }))
    };
    let mut attrs = Vec::new();
    for (part, op, ops, args) in [
        (
            "depthwise",
            "_FusedDepthwiseConv2dNative",
            &["BiasAdd"][..],
            1,
        ),
        ("project", "_FusedConv2D", &["BiasAdd", "Add"][..], 2),
    ] {
        let key = |k: &str| format!("{part}/{k}");
        attrs.extend([
            (key("_op"), s(op)),
            (key("_inputs"), A::I(3)),
            (key("T"), FLOAT),
            (key("strides"), ints(&[1, 1, 1, 1])),
            (key("padding"), s("SAME")),
            (key("fused_ops"), strings(ops)),
            (key("num_args"), A::I(args)),
        ]);
    }
    let attrs = attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let block = node("block", "_SavedModelBottleneck", &[], attrs);
    let inputs = vec![
        tensor(&[1, 64, 64, 32], 1, 1.0),
        tensor(&[3, 3, 32, 1], 2, 1.0),
        tensor(&[32], 3, 1.0),
        tensor(&[1, 1, 32, 16], 4, 1.0),
        tensor(&[16], 5, 1.0),
    ];
    let error = run_node(&block, inputs).unwrap_err().to_string();
    assert!(error.contains("takes 4 inputs, got 3"), "{error}");
}

/// Milliseconds a call (best of 20 runs of 50 calls) of one block, its shape from the
/// environment: B_HW x B_HW x B_C input, B_E expanded channels (0: no expand part), a B_K x
/// B_K window at stride B_S, B_O output channels (0: no project part). The default is
/// MobileNetV2's first block (no expand, 112x112x32, project to 16).
#[test]
#[ignore = "timing only"]
fn bench_block() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n, hw, c) = (env("B_N", 1), env("B_HW", 112), env("B_C", 32));
    let (expand, project) = (env("B_E", 0), env("B_O", 16));
    let b = Block {
        x: [n, hw, hw, c],
        expand: (expand > 0).then_some(expand),
        kernel: env("B_K", 3),
        stride: env("B_S", 1) as i64,
        project: (project > 0).then_some(project),
        residual: false,
        ..mobilenet([n, hw, hw, c], 1)
    };
    let (plan, library) = compiled(&b);
    let x = vec![Value::Tensor(Arc::new(tensor(&b.x, 7, 1.0)))];
    let ctx = library.context();
    let mut best = f64::MAX;
    for _ in 0..20 {
        let start = std::time::Instant::now();
        for _ in 0..50 {
            plan.run(&ctx, &x).unwrap();
        }
        best = best.min(start.elapsed().as_secs_f64() / 50.0);
    }
    println!("block {:?}: {:.3} ms", b.x, best * 1e3);
}
