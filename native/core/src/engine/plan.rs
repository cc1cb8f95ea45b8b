//! Compiling a graph or function body once into a [`Plan`] (the nodes the outputs need, in
//! dependency order, each with its kernel made and its attrs read) and running it.
//!
//! A function body keeps what its outputs and control outputs need plus every stateful node
//! (TensorFlow's function semantics); a graph keeps only what the fetches and targets need
//! (session semantics). Fed tensors stop the walk. Each step's outputs are dropped after their
//! last use, so a call holds only the tensors still needed.

use std::collections::{HashMap, HashSet};

use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::graph::{Body, Node, Src};
use crate::engine::kernel::{fail, KResult, Kernel, NodeSpec};
use crate::engine::library::Library;
use crate::engine::value::Value;
use crate::error::{Error, MissingOp, Result};

/// Where a step's input or a plan's output is read from.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Arg(usize),
    Out(usize, usize),
}

struct Step {
    node: String,
    op: String,
    kernel: Box<dyn Kernel>,
    inputs: Vec<Slot>,
    /// Steps whose outputs are not needed after this one.
    frees: Vec<usize>,
}

/// A compiled graph or function: run it with its arguments (or feeds), get its outputs.
pub struct Plan {
    name: String,
    place: String,
    num_args: usize,
    steps: Vec<Step>,
    outputs: Vec<Slot>,
    /// The library functions its nodes call or name in attrs (branches, bodies).
    functions: Vec<String>,
}

/// What a plan computes: for a function, its rets from its args; for a graph, `fetches` from
/// `feeds` (fed node outputs) after running `targets` too.
pub struct Request<'b> {
    pub feeds: &'b [Src],
    pub fetches: &'b [Src],
    pub targets: &'b [String],
    /// Keep every stateful node (function semantics) or only what is needed (graph).
    pub keep_stateful: bool,
}

impl Plan {
    /// The function's name (or `graph`), as call chains in errors show it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The library functions this plan's nodes call or name.
    pub fn functions(&self) -> &[String] {
        &self.functions
    }

    pub fn compile(name: &str, body: &Body, request: &Request, library: &Library) -> Result<Plan> {
        let fed: HashMap<&Src, usize> = request
            .feeds
            .iter()
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let map_src = |src: &Src| -> Src {
            match fed.get(src) {
                Some(&i) => Src::Arg(i),
                None => src.clone(),
            }
        };
        let mut roots: Vec<&str> = Vec::new();
        for src in request.fetches {
            if let Src::Node(n, _) = map_src(src) {
                roots.push(body_name(body, &n)?);
            }
        }
        for target in request.targets.iter().chain(&body.control_rets) {
            roots.push(body_name(body, target)?);
        }
        if request.keep_stateful {
            roots.extend(
                body.order
                    .iter()
                    .copied()
                    .filter(|n| library.is_stateful(&body.nodes[n].def.op)),
            );
        }
        let order = topological(body, &roots, &map_src)?;
        let index: HashMap<&str, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let slot = |src: &Src| -> Slot {
            match map_src(src) {
                Src::Arg(i) => Slot::Arg(i),
                Src::Node(n, k) => Slot::Out(index[n.as_str()], k),
            }
        };
        let function = if body.place == "the graph" {
            String::new()
        } else {
            name.to_string()
        };
        let mut missing = Vec::new();
        let mut functions = Vec::new();
        let mut steps = Vec::with_capacity(order.len());
        for name in &order {
            let node = &body.nodes[name];
            functions.extend(
                Attrs::new(&node.attrs)
                    .all_functions()
                    .into_iter()
                    .map(String::from),
            );
            if library.has_function(&node.def.op) {
                functions.push(node.def.op.clone());
            }
            let inputs: Vec<Slot> = node.inputs.iter().map(slot).collect();
            match make_kernel(node, library) {
                Ok(Some(kernel)) => steps.push(Step {
                    node: node.def.name.clone(),
                    op: node.def.op.clone(),
                    kernel,
                    inputs,
                    frees: Vec::new(),
                }),
                Ok(None) => missing.push(MissingOp {
                    op: node.def.op.clone(),
                    node: node.def.name.clone(),
                    function: function.clone(),
                }),
                Err(detail) => {
                    return Err(Error::Graph {
                        detail: format!(
                            "{}: node {:?} (op {}): {detail}",
                            body.place, node.def.name, node.def.op
                        ),
                    })
                }
            }
        }
        if !missing.is_empty() {
            return Err(Error::UnsupportedOps { missing });
        }
        let outputs: Vec<Slot> = request.fetches.iter().map(slot).collect();
        plan_frees(&mut steps, &outputs);
        Ok(Plan {
            name: name.to_string(),
            place: body.place.clone(),
            num_args: if body.place == "the graph" {
                request.feeds.len()
            } else {
                body.args.len()
            },
            steps,
            outputs,
            functions,
        })
    }

    /// Runs the steps in order on `args`; errors name this plan, the node and its op.
    pub fn run(&self, ctx: &RunContext, args: Vec<Value>) -> KResult {
        if args.len() != self.num_args {
            return Err(fail(format!(
                "{} takes {} inputs, got {}",
                self.place,
                self.num_args,
                args.len()
            )));
        }
        let mut outs: Vec<Vec<Value>> = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            let inputs = step
                .inputs
                .iter()
                .map(|&s| read(&args, &outs, s, self))
                .collect::<KResult<Vec<Value>>>()
                .map_err(|e| self.wrap(step, e))?;
            let result = step
                .kernel
                .run(ctx, &inputs)
                .map_err(|e| self.wrap(step, e))?;
            drop(inputs);
            outs.push(result);
            for &done in &step.frees {
                outs[done] = Vec::new();
            }
        }
        self.outputs
            .iter()
            .map(|&s| read(&args, &outs, s, self))
            .collect()
    }

    fn wrap(&self, step: &Step, err: Error) -> Error {
        let detail = match err {
            Error::Run { detail } => detail,
            other => other.to_string(),
        };
        fail(format!(
            "{}: node {:?} (op {}): {detail}",
            self.place, step.node, step.op
        ))
    }
}

fn read(args: &[Value], outs: &[Vec<Value>], slot: Slot, plan: &Plan) -> KResult<Value> {
    match slot {
        Slot::Arg(i) => args
            .get(i)
            .cloned()
            .ok_or_else(|| fail(format!("missing input {i}"))),
        Slot::Out(step, k) => outs[step].get(k).cloned().ok_or_else(|| {
            let s = &plan.steps[step];
            fail(format!(
                "node {:?} (op {}) has {} outputs; output {k} does not exist",
                s.node,
                s.op,
                outs[step].len()
            ))
        }),
    }
}

/// The kernel of a node: a registered op's, or a call of the library function the op names;
/// None if the engine has neither.
fn make_kernel(
    node: &Node,
    library: &Library,
) -> std::result::Result<Option<Box<dyn Kernel>>, String> {
    let spec = NodeSpec {
        name: &node.def.name,
        op: &node.def.op,
        attrs: Attrs::new(&node.attrs),
        num_inputs: node.inputs.len(),
    };
    if let Some(info) = library.registry().get(&node.def.op) {
        return (info.factory)(&spec).map(Some);
    }
    if library.has_function(&node.def.op) {
        return Ok(Some(crate::kernels::control::direct_call(&node.def.op)));
    }
    Ok(None)
}

fn body_name<'a>(body: &Body<'a>, name: &str) -> Result<&'a str> {
    body.nodes
        .get_key_value(name)
        .map(|(k, _)| *k)
        .ok_or_else(|| Error::Graph {
            detail: format!("{}: no node named {name:?}", body.place),
        })
}

/// The nodes `roots` need, dependencies first; a cycle or a dangling input is an error.
fn topological<'a>(
    body: &Body<'a>,
    roots: &[&'a str],
    map_src: &dyn Fn(&Src) -> Src,
) -> Result<Vec<&'a str>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    let mut order = Vec::new();
    for &root in roots {
        if marks.contains_key(root) {
            continue;
        }
        let mut stack: Vec<(&str, bool)> = vec![(root, false)];
        while let Some((name, expanded)) = stack.pop() {
            if expanded {
                marks.insert(name, Mark::Done);
                order.push(name);
                continue;
            }
            match marks.get(name) {
                Some(Mark::Done) => continue,
                Some(Mark::Open) => {
                    return Err(Error::Graph {
                        detail: format!(
                            "{}: node {name:?} depends on itself (a cycle)",
                            body.place
                        ),
                    })
                }
                None => {}
            }
            marks.insert(name, Mark::Open);
            stack.push((name, true));
            let node = &body.nodes[name];
            let deps = node
                .inputs
                .iter()
                .filter_map(|s| match map_src(s) {
                    Src::Node(n, _) => Some(n),
                    Src::Arg(_) => None,
                })
                .chain(node.control.iter().cloned());
            for dep in deps {
                let (key, _) =
                    body.nodes
                        .get_key_value(dep.as_str())
                        .ok_or_else(|| Error::Graph {
                            detail: format!(
                                "{}: node {name:?} (op {}) has input {dep:?}, which is not a node",
                                body.place, node.def.op
                            ),
                        })?;
                match marks.get(key) {
                    Some(Mark::Done) => {}
                    Some(Mark::Open) => {
                        return Err(Error::Graph {
                            detail: format!(
                                "{}: node {key:?} depends on itself (a cycle)",
                                body.place
                            ),
                        })
                    }
                    None => stack.push((key, false)),
                }
            }
        }
    }
    Ok(order)
}

/// Marks, on each step, the earlier steps whose outputs it is the last to read.
fn plan_frees(steps: &mut [Step], outputs: &[Slot]) {
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        for slot in &step.inputs {
            if let Slot::Out(s, _) = slot {
                last.insert(*s, i);
            }
        }
    }
    let kept: HashSet<usize> = outputs
        .iter()
        .filter_map(|s| match s {
            Slot::Out(step, _) => Some(*step),
            Slot::Arg(_) => None,
        })
        .collect();
    for (producer, consumer) in last {
        if !kept.contains(&producer) {
            steps[consumer].frees.push(producer);
        }
    }
}
