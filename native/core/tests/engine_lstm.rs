//! LSTM cell fusion (engine::fuse_lstm) on a hand-built cell as Keras writes it into a While
//! body: the fifteen ops compile to one `_SavedModelLstmCell` step whose outputs are what the
//! ops give run one by one, its cell state still reaches every reader, and a cell whose
//! intermediate result something else reads is left as it is. And whole-loop fusion
//! (engine::fuse_rnn): a Keras model's LSTM and GRU While loops compile to
//! `_SavedModelRnnLoop` steps that give what the While loops give run step by step.

mod common;

use common::node;
use std::collections::HashMap;
use std::sync::Arc;

use savedmodel_core::engine::context::FileAccess;
use savedmodel_core::engine::graph::{graph_body, Src};
use savedmodel_core::engine::library::Library;
use savedmodel_core::engine::plan::{Plan, Request};
use savedmodel_core::engine::{run_node, Value};
use savedmodel_core::kernels::registry;
use savedmodel_core::kernels::rnn_loop::RNN_LOOP;
use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::NodeDef;
use savedmodel_core::{LoadOptions, Model, Tensor};

const FLOAT: A = A::Type(1);
const FEEDS: [&str; 6] = ["x", "w", "h", "u", "b", "c"];

fn float_op(name: &str, op: &str, inputs: &[&str]) -> NodeDef {
    node(name, op, inputs, vec![("T", FLOAT)])
}

/// The cell: placeholders for x, kernel, h, recurrent kernel, bias and c, then the ops.
fn cell() -> Vec<NodeDef> {
    let mut nodes: Vec<NodeDef> = FEEDS
        .iter()
        .map(|n| node(n, "Placeholder", &[], vec![("dtype", FLOAT)]))
        .collect();
    let dim = savedmodel_core::protos::TensorProto {
        dtype: 3,
        tensor_shape: Some(savedmodel_core::tensor_proto::shape_proto(&[])),
        int_val: vec![1],
        ..Default::default()
    };
    nodes.extend([
        float_op("xw", "MatMul", &["x", "w"]),
        float_op("hu", "MatMul", &["h", "u"]),
        float_op("z", "AddV2", &["xw", "hu"]),
        float_op("zb", "BiasAdd", &["z", "b"]),
        node(
            "dim",
            "Const",
            &[],
            vec![("dtype", A::Type(3)), ("value", A::Tensor(Box::new(dim)))],
        ),
        node(
            "split",
            "Split",
            &["dim", "zb"],
            vec![("T", FLOAT), ("num_split", A::I(4))],
        ),
        float_op("i", "Sigmoid", &["split:0"]),
        float_op("f", "Sigmoid", &["split:1"]),
        float_op("g", "Tanh", &["split:2"]),
        float_op("o", "Sigmoid", &["split:3"]),
        float_op("kept", "Mul", &["f", "c"]),
        float_op("added", "Mul", &["i", "g"]),
        float_op("c_next", "AddV2", &["kept", "added"]),
        float_op("squashed", "Tanh", &["c_next"]),
        float_op("h_next", "Mul", &["o", "squashed"]),
        // Another reader of the new cell state, as the loop's next-state output is.
        float_op("c_twice", "AddV2", &["c_next", "c_next"]),
    ]);
    nodes
}

fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn feeds(n: usize, k: usize, units: usize) -> Vec<Tensor> {
    let shapes = [
        vec![n, k],
        vec![k, 4 * units],
        vec![n, units],
        vec![units, 4 * units],
        vec![4 * units],
        vec![n, units],
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| Tensor::from_vec(s.clone(), values(s.iter().product(), i as u64 + 1)))
        .collect()
}

fn compile(nodes: &[NodeDef], fetches: &[&str]) -> (Library, Plan) {
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(nodes, library.op_defs()).unwrap();
    let feeds: Vec<Src> = FEEDS.iter().map(|n| Src::Node(n.to_string(), 0)).collect();
    let fetches: Vec<Src> = fetches
        .iter()
        .map(|n| Src::Node(n.to_string(), 0))
        .collect();
    let request = Request {
        feeds: &feeds,
        fetches: &fetches,
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library).unwrap();
    (library, plan)
}

/// Each node through its own kernel, in the order written.
fn reference(nodes: &[NodeDef], inputs: &[Tensor]) -> HashMap<String, Vec<Value>> {
    let mut done: HashMap<String, Vec<Value>> = HashMap::new();
    for (name, t) in FEEDS.iter().zip(inputs) {
        done.insert(name.to_string(), vec![Value::Tensor(Arc::new(t.clone()))]);
    }
    for n in nodes.iter().filter(|n| n.op != "Placeholder") {
        let args = n
            .input
            .iter()
            .map(|i| {
                let (name, k) = i.split_once(':').unwrap_or((i, "0"));
                match &done[name][k.parse::<usize>().unwrap()] {
                    Value::Tensor(t) => (**t).clone(),
                    _ => panic!("not a tensor"),
                }
            })
            .collect();
        done.insert(n.name.clone(), run_node(n, args).unwrap());
    }
    done
}

fn floats(v: &Value) -> Vec<f32> {
    match v {
        Value::Tensor(t) => t.values::<f32>().unwrap().to_vec(),
        _ => panic!("not a tensor"),
    }
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn an_lstm_cell_compiles_to_one_step_with_the_ops_results() {
    let nodes = cell();
    let (library, plan) = compile(&nodes, &["h_next", "c_twice", "c_next"]);
    assert_eq!(plan.ops(), ["_SavedModelLstmCell", "AddV2"]);
    for (n, k, units) in [(1, 3, 8), (2, 8, 5), (4, 64, 48)] {
        let inputs = feeds(n, k, units);
        let args: Vec<Value> = inputs.iter().cloned().map(Value::tensor).collect();
        let got = plan.run(&library.context(), &args).unwrap();
        let want = reference(&nodes, &inputs);
        for (g, name) in got.iter().zip(["h_next", "c_twice", "c_next"]) {
            close(&floats(g), &floats(&want[name][0]));
        }
    }
}

#[test]
fn a_cell_state_that_broadcasts_runs_the_ops_themselves() {
    let nodes = cell();
    let (library, plan) = compile(&nodes, &["h_next", "c_next"]);
    let mut inputs = feeds(3, 2, 4);
    inputs[5] = Tensor::from_vec(vec![1, 4], values(4, 9));
    let args: Vec<Value> = inputs.iter().cloned().map(Value::tensor).collect();
    let got = plan.run(&library.context(), &args).unwrap();
    let want = reference(&nodes, &inputs);
    close(&floats(&got[0]), &floats(&want["h_next"][0]));
    close(&floats(&got[1]), &floats(&want["c_next"][0]));
}

#[test]
fn a_cell_whose_gate_is_read_elsewhere_is_not_fused() {
    let nodes = cell();
    let (_, plan) = compile(&nodes, &["h_next", "f"]);
    assert!(
        !plan.ops().contains(&"_SavedModelLstmCell"),
        "{:?}",
        plan.ops()
    );
}

/// The fixture model `name` loaded with the usual kernels and without the fused loop.
fn fused_and_plain(name: &str) -> (Model, Model) {
    let dir = common::data_dir().join("models").join(name);
    let options = LoadOptions::default();
    let fused = Model::load(&dir, &options).unwrap();
    let plain = Model::load_with(&dir, &options, Arc::new(registry().without(RNN_LOOP))).unwrap();
    (fused, plain)
}

fn loops(model: &Model) -> usize {
    let signature = model.signature("serving_default").unwrap();
    signature.ops().iter().filter(|op| **op == RNN_LOOP).count()
}

#[test]
fn keras_recurrent_loops_fuse_and_match_the_while_loops() {
    // Two stacked LSTMs (the first returns sequences); a GRU returning sequences under one
    // running backwards.
    for (name, steps, features) in [("lstm_stacked", 6, 3), ("gru", 5, 4)] {
        let (fused, plain) = fused_and_plain(name);
        assert_eq!(
            loops(&fused),
            2,
            "{name}: {:?}",
            fused.signature("serving_default").unwrap().ops()
        );
        assert_eq!(loops(&plain), 0, "{name}");
        for batch in [1, 3, 32] {
            let shape = vec![batch, steps, features];
            let x = Tensor::from_vec(shape, values(batch * steps * features, batch as u64));
            let feeds = vec![("sequence".to_string(), x)];
            let got = fused.run("serving_default", feeds.clone()).unwrap();
            let want = plain.run("serving_default", feeds).unwrap();
            assert_eq!(got.len(), want.len());
            for ((key, g), (key2, w)) in got.iter().zip(&want) {
                assert_eq!(key, key2);
                assert_eq!(g.shape(), w.shape(), "{name} {key}");
                close(g.values::<f32>().unwrap(), w.values::<f32>().unwrap());
            }
        }
    }
}
