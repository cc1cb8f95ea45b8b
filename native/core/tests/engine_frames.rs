//! TensorFlow 1 control flow on small hand-built graphs: a Switch/Merge conditional, a
//! while loop of Enter/Merge/Switch/NextIteration/Exit, dead values fetched, an Exit outside
//! any loop, and an endless loop stopped at the deadline. (The recorded fixtures tf1_rnn and
//! tf1_dynamic_rnn check nested loops, conditionals inside loops and TensorArrays.)

use std::sync::Arc;

use savedmodel_core::engine::context::FileAccess;
use savedmodel_core::engine::graph::{graph_body, Src};
use savedmodel_core::engine::library::Library;
use savedmodel_core::engine::plan::{Plan, Request};
use savedmodel_core::engine::Value;
use savedmodel_core::kernels::registry;
use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::NodeDef;
use savedmodel_core::{Error, Tensor};

mod common;
use common::node;

fn enter(name: &str, input: &str, constant: bool) -> NodeDef {
    node(
        name,
        "Enter",
        &[input],
        vec![
            ("frame_name", A::S(b"loop".to_vec())),
            ("is_constant", A::B(constant)),
        ],
    )
}

/// The plan of `graph` fetching `out:0`, fed `x`, `one` and `flag`.
fn compile(graph: &[NodeDef]) -> (Library, Result<Plan, Error>) {
    let library = Library::new(None, &[], registry(), FileAccess::default());
    let body = graph_body(graph, library.op_defs()).unwrap();
    let request = Request {
        feeds: &[
            Src::Node("x".into(), 0),
            Src::Node("one".into(), 0),
            Src::Node("flag".into(), 0),
        ],
        fetches: &[Src::Node("out".into(), 0)],
        targets: &[],
        keep_stateful: false,
    };
    let plan = Plan::compile("graph", &body, &request, &library);
    (library, plan)
}

fn feeds(x: f32, flag: bool) -> Vec<Value> {
    vec![
        Value::Tensor(Arc::new(Tensor::scalar(x))),
        Value::Tensor(Arc::new(Tensor::scalar(1f32))),
        Value::Tensor(Arc::new(Tensor::scalar(flag))),
    ]
}

fn placeholders() -> Vec<NodeDef> {
    vec![
        node("x", "Placeholder", &[], vec![]),
        node("one", "Placeholder", &[], vec![]),
        node("flag", "Placeholder", &[], vec![]),
    ]
}

fn run(graph: &[NodeDef], x: f32, flag: bool) -> Result<f32, Error> {
    let (library, plan) = compile(graph);
    let out = plan?.run(&library.context(), &feeds(x, flag))?;
    match &out[0] {
        Value::Tensor(t) => Ok(t.values::<f32>().unwrap()[0]),
        other => panic!("{other:?}"),
    }
}

/// out = x > 0 ? x * x : -x
fn conditional() -> Vec<NodeDef> {
    let mut g = placeholders();
    g.extend([
        node("zero", "Sub", &["x", "x"], vec![]),
        node("p", "Greater", &["x", "zero"], vec![]),
        node("s", "Switch", &["x", "p"], vec![]),
        node("t", "Square", &["s:1"], vec![]),
        node("f", "Neg", &["s"], vec![]),
        node("out", "Merge", &["f", "t"], vec![]),
    ]);
    g
}

#[test]
fn a_conditional_runs_only_its_taken_branch() {
    let g = conditional();
    assert_eq!(run(&g, 3.0, true).unwrap(), 9.0);
    assert_eq!(run(&g, -2.0, true).unwrap(), 2.0);
}

#[test]
fn fetching_an_untaken_branch_is_an_error() {
    let mut g = conditional();
    g.retain(|n| n.name != "out");
    g.push(node("out", "Identity", &["t"], vec![]));
    // The fetch reads through the Identity: the tensor named is the branch's.
    let err = run(&g, -2.0, true).unwrap_err().to_string();
    assert!(
        err.contains("'t:0' has no value") && err.contains("untaken branch"),
        "{err}"
    );
}

/// i = 0; while i < x (and flag): i += 1; out = i
fn counting_loop() -> Vec<NodeDef> {
    let mut g = placeholders();
    g.extend([
        node("i0", "Sub", &["x", "x"], vec![]),
        enter("enter_i", "i0", false),
        enter("enter_x", "x", true),
        enter("enter_one", "one", true),
        enter("enter_flag", "flag", true),
        node("merge", "Merge", &["enter_i", "next"], vec![]),
        node("less", "Less", &["merge", "enter_x"], vec![]),
        node("both", "LogicalAnd", &["less", "enter_flag"], vec![]),
        node("cond", "LoopCond", &["both"], vec![]),
        node("switch", "Switch", &["merge", "cond"], vec![]),
        node("body", "Identity", &["switch:1"], vec![]),
        node("add", "AddV2", &["body", "enter_one"], vec![]),
        node("next", "NextIteration", &["add"], vec![]),
        node("out", "Exit", &["switch"], vec![]),
    ]);
    g
}

#[test]
fn a_while_loop_runs_to_its_condition() {
    let g = counting_loop();
    assert_eq!(run(&g, 3.5, true).unwrap(), 4.0);
    assert_eq!(run(&g, -1.0, true).unwrap(), 0.0);
    assert_eq!(run(&g, 5.0, false).unwrap(), 0.0);
}

#[test]
fn an_endless_v1_loop_stops_at_the_deadline() {
    let mut g = counting_loop();
    for n in &mut g {
        if n.name == "both" {
            n.input = vec!["enter_flag".into(), "enter_flag".into()];
        }
    }
    let (library, plan) = compile(&g);
    let mut ctx = library.context();
    ctx.deadline = Some(std::time::Instant::now() + std::time::Duration::from_millis(50));
    let err = plan.unwrap().run(&ctx, &feeds(1.0, true)).unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err}");
    assert!(err.to_string().contains("loop \"loop\""), "{err}");
}

#[test]
fn an_exit_outside_any_loop_is_an_error_naming_it() {
    let mut g = placeholders();
    g.push(node("out", "Exit", &["x"], vec![]));
    let err = run(&g, 1.0, true).unwrap_err().to_string();
    assert!(
        err.contains("\"out\" (op Exit)") && err.contains("outside of any loop"),
        "{err}"
    );
}
