//! The plan compiler on small hand-built graphs: calls are inlined (recursion left as calls and
//! bounded at run time), identities read through, constants folded, and graph errors named.

use std::collections::HashMap;
use std::sync::Arc;

use savedmodel_core::engine::context::FileAccess;
use savedmodel_core::engine::graph::{graph_body, Src};
use savedmodel_core::engine::library::Library;
use savedmodel_core::engine::plan::{Plan, Request};
use savedmodel_core::engine::Value;
use savedmodel_core::kernels::registry;
use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::op_def::ArgDef;
use savedmodel_core::protos::{
    AttrValue, FunctionDef, FunctionDefLibrary, NameAttrList, NodeDef, OpDef,
};
use savedmodel_core::{Error, Tensor};

fn node(name: &str, op: &str, inputs: &[&str], attrs: &[(&str, A)]) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: op.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        attr: attrs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    AttrValue {
                        value: Some(v.clone()),
                    },
                )
            })
            .collect(),
        ..Default::default()
    }
}

fn func(name: &str) -> A {
    A::Func(NameAttrList {
        name: name.into(),
        attr: HashMap::new(),
    })
}

/// A one-argument, one-output function whose output is `ret`.
fn function(name: &str, nodes: Vec<NodeDef>, ret: &str) -> FunctionDef {
    let arg = |n: &str| ArgDef {
        name: n.into(),
        r#type: 1,
        ..Default::default()
    };
    FunctionDef {
        signature: Some(OpDef {
            name: name.into(),
            input_arg: vec![arg("x")],
            output_arg: vec![arg("y")],
            ..Default::default()
        }),
        node_def: nodes,
        ret: HashMap::from([("y".to_string(), ret.to_string())]),
        ..Default::default()
    }
}

/// The op definitions the graphs use, as a SavedModel's stripped op list gives them.
fn op_list() -> Vec<OpDef> {
    let op = |name: &str, list: &str| OpDef {
        name: name.into(),
        output_arg: vec![ArgDef {
            name: "output".into(),
            type_list_attr: list.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    vec![
        op("Identity", ""),
        op("Const", ""),
        op("PartitionedCall", "Tout"),
        op("StatefulPartitionedCall", "Tout"),
    ]
}

/// A call of `name` returning one float.
fn call(name: &str) -> [(&'static str, A); 2] {
    [
        ("f", func(name)),
        (
            "Tout",
            A::List(Box::new(savedmodel_core::protos::attr_value::ListValue {
                r#type: vec![1],
                ..Default::default()
            })),
        ),
    ]
}

fn compile(graph: &[NodeDef], functions: Vec<FunctionDef>) -> (Library, Result<Plan, Error>) {
    let library = Library::new(
        Some(FunctionDefLibrary {
            function: functions,
            ..Default::default()
        }),
        &op_list(),
        registry(),
        FileAccess::default(),
    );
    let body = graph_body(graph, library.op_defs()).unwrap();
    let request = Request {
        feeds: &[Src::Node("x".into(), 0)],
        fetches: &[Src::Node("call".into(), 0)],
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library);
    (library, plan)
}

fn scalar(v: f32) -> Value {
    Value::Tensor(Arc::new(Tensor::scalar(v)))
}

fn as_f32(v: &Value) -> f32 {
    match v {
        Value::Tensor(t) => t.values::<f32>().unwrap()[0],
        other => panic!("{other:?}"),
    }
}

#[test]
fn nested_calls_are_inlined_and_identities_read_through() {
    let inner = function(
        "inner",
        vec![node("id", "Identity", &["x"], &[])],
        "id:output:0",
    );
    let outer = function(
        "outer",
        vec![node("c", "PartitionedCall", &["x"], &call("inner"))],
        "c:output:0",
    );
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("call", "StatefulPartitionedCall", &["x"], &call("outer")),
    ];
    let (library, plan) = compile(&graph, vec![inner, outer]);
    let plan = plan.unwrap();
    assert!(plan.is_empty(), "left to run: {:?}", plan.ops());
    let out = plan.run(&library.context(), &[scalar(2.5)]).unwrap();
    assert_eq!(as_f32(&out[0]), 2.5);
}

#[test]
fn constants_fold_through_calls() {
    let inner = function(
        "inner",
        vec![
            node(
                "k",
                "Const",
                &[],
                &[(
                    "value",
                    A::Tensor(Box::new(savedmodel_core::protos::TensorProto {
                        dtype: 1,
                        float_val: vec![7.0],
                        ..Default::default()
                    })),
                )],
            ),
            node("id", "Identity", &["k:output:0"], &[]),
        ],
        "id:output:0",
    );
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("call", "PartitionedCall", &["x"], &call("inner")),
    ];
    let (library, plan) = compile(&graph, vec![inner]);
    let plan = plan.unwrap();
    assert!(plan.is_empty(), "left to run: {:?}", plan.ops());
    assert_eq!(
        as_f32(&plan.run(&library.context(), &[scalar(0.0)]).unwrap()[0]),
        7.0
    );
}

#[test]
fn recursion_stays_a_call_and_is_bounded_when_run() {
    let looping = function(
        "again",
        vec![node("c", "PartitionedCall", &["x"], &call("again"))],
        "c:output:0",
    );
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("call", "PartitionedCall", &["x"], &call("again")),
    ];
    let (library, plan) = compile(&graph, vec![looping]);
    let plan = plan.unwrap();
    assert_eq!(plan.ops(), vec!["PartitionedCall"]);
    let err = plan
        .run(&library.context(), &[scalar(1.0)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("nest more than 64 deep"), "{err}");
}

#[test]
fn cycles_and_dangling_inputs_are_errors_naming_the_node() {
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("a", "Identity", &["b"], &[]),
        node("b", "Identity", &["a"], &[]),
        node("call", "Identity", &["a"], &[]),
    ];
    let (_, plan) = compile(&graph, vec![]);
    let err = plan.err().unwrap().to_string();
    assert!(err.contains("cycle"), "{err}");
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("call", "Identity", &["nowhere"], &[]),
    ];
    let (_, plan) = compile(&graph, vec![]);
    let err = plan.err().unwrap().to_string();
    assert!(
        err.contains("\"nowhere\"") && err.contains("\"call\""),
        "{err}"
    );
}

#[test]
fn unknown_ops_are_listed_with_their_node() {
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node("call", "NoSuchOp", &["x"], &[]),
    ];
    let (_, plan) = compile(&graph, vec![]);
    let err = plan.err().unwrap().to_string();
    assert!(
        err.contains("op NoSuchOp (node \"call\" in the graph)"),
        "{err}"
    );
}

#[test]
fn an_endless_loop_stops_at_the_deadline() {
    let cond = function(
        "cond",
        vec![node("id", "Identity", &["x"], &[])],
        "id:output:0",
    );
    let body = function(
        "body",
        vec![node("id", "Identity", &["x"], &[])],
        "id:output:0",
    );
    let graph = [
        node("x", "Placeholder", &[], &[]),
        node(
            "call",
            "While",
            &["x"],
            &[("cond", func("cond")), ("body", func("body"))],
        ),
    ];
    let (library, plan) = compile(&graph, vec![cond, body]);
    let plan = plan.unwrap();
    let mut ctx = library.context();
    ctx.deadline = Some(std::time::Instant::now() + std::time::Duration::from_millis(50));
    let truth = Value::Tensor(Arc::new(Tensor::scalar(true)));
    let err = plan.run(&ctx, &[truth]).unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err}");
    assert!(
        err.to_string().contains("node \"call\" (op While)"),
        "{err}"
    );
}
