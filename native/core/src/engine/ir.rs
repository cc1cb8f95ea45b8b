//! The compiler's working form of a graph or function body, and the passes that simplify it
//! before kernels are chosen: pruning to what is needed, inlining library function calls,
//! folding what can be computed at compile time (constants, and variable reads when nothing the
//! model runs can write a variable), and reading through identities.

use std::collections::{HashMap, HashSet};

use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::graph::{function_body, Body, Src};
use crate::engine::kernel::NodeSpec;
use crate::engine::library::Library;
use crate::engine::value::Value;
use crate::error::{Error, Result};
use crate::protos::AttrValue;

/// Call ops whose function is inlined (besides nodes whose op is a library function's name).
const CALL_OPS: [&str; 2] = ["PartitionedCall", "StatefulPartitionedCall"];

/// Ops whose outputs are their inputs: consumers read the inputs instead.
const PASS_THROUGH: [&str; 5] = [
    "Identity",
    "IdentityN",
    "StopGradient",
    "Snapshot",
    "PreventGradient",
];

/// Inlining stops growing a plan past this many nodes (a model built to explode by nested
/// calls then runs its remaining calls as calls).
const MAX_NODES: usize = 200_000;

/// Folded outputs larger than this many elements stay computed at run time, so that folding
/// never multiplies a model's memory (a Fill of a huge shape).
const MAX_FOLDED_ELEMENTS: usize = 1 << 24;

pub struct IrNode {
    pub name: String,
    pub op: String,
    pub attrs: HashMap<String, AttrValue>,
    pub inputs: Vec<Src>,
    pub control: Vec<String>,
    /// The outputs, when known at compile time.
    pub value: Option<Vec<Value>>,
    /// Functions inlined to produce this node, innermost last (stops recursive inlining).
    pub chain: Vec<String>,
}

pub struct Ir {
    pub nodes: Vec<IrNode>,
    pub index: HashMap<String, usize>,
    pub outputs: Vec<Src>,
    /// Nodes that run even if no output needs them (targets, control outputs, stateful nodes
    /// of function bodies).
    pub roots: Vec<String>,
    /// `the graph` or `function "f"`, for errors.
    pub place: String,
}

/// What a body computes: `fetches` from `feeds` (fed outputs become arguments), also running
/// `targets`; `keep_stateful` keeps every stateful node (function semantics).
pub fn build(
    body: &Body,
    feeds: &[Src],
    fetches: &[Src],
    targets: &[String],
    keep_stateful: bool,
    library: &Library,
) -> Result<Ir> {
    let fed: HashMap<&Src, usize> = feeds.iter().enumerate().map(|(i, s)| (s, i)).collect();
    let map = |src: &Src| fed.get(src).map_or_else(|| src.clone(), |&i| Src::Arg(i));
    let mut nodes = Vec::with_capacity(body.order.len());
    for name in &body.order {
        let node = &body.nodes[name];
        nodes.push(IrNode {
            name: node.def.name.clone(),
            op: node.def.op.clone(),
            attrs: node.attrs.clone(),
            inputs: node.inputs.iter().map(map).collect(),
            control: node.control.clone(),
            value: None,
            chain: Vec::new(),
        });
    }
    let mut roots: Vec<String> = targets.iter().chain(&body.control_rets).cloned().collect();
    if keep_stateful {
        roots.extend(
            nodes
                .iter()
                .filter(|n| library.is_stateful(&n.op))
                .map(|n| n.name.clone()),
        );
    }
    let mut ir = Ir {
        index: HashMap::new(),
        nodes,
        outputs: fetches.iter().map(map).collect(),
        roots,
        place: body.place.clone(),
    };
    ir.reindex();
    for name in ir
        .roots
        .iter()
        .chain(ir.outputs.iter().filter_map(src_node))
    {
        if !ir.index.contains_key(name) {
            return Err(Error::Graph {
                detail: format!("{}: no node named {name:?}", ir.place),
            });
        }
    }
    ir.prune();
    Ok(ir)
}

fn src_node(src: &Src) -> Option<&String> {
    match src {
        Src::Node(n, _) => Some(n),
        Src::Arg(_) => None,
    }
}

impl Ir {
    fn reindex(&mut self) {
        self.index = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
    }

    /// Keeps only the nodes the outputs and roots need (dangling inputs are left for the
    /// ordering pass to report).
    pub fn prune(&mut self) {
        let mut keep = HashSet::new();
        let mut stack: Vec<&str> = self
            .roots
            .iter()
            .chain(self.outputs.iter().filter_map(src_node))
            .map(String::as_str)
            .collect();
        while let Some(name) = stack.pop() {
            let Some(&i) = self.index.get(name) else {
                continue;
            };
            if !keep.insert(i) {
                continue;
            }
            let node = &self.nodes[i];
            if node.value.is_some() {
                continue;
            }
            stack.extend(node.inputs.iter().filter_map(src_node).map(String::as_str));
            stack.extend(node.control.iter().map(String::as_str));
        }
        let mut i = 0;
        self.nodes.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
        self.reindex();
    }

    /// Replaces calls of library functions by the functions' bodies, repeatedly, so a model's
    /// nested wrappers (signature -> call -> layers) become one graph that folding and fusion
    /// see whole. Recursive calls, and calls past the size bound, stay calls.
    pub fn inline_calls(&mut self, library: &Library) -> Result<()> {
        let mut i = 0;
        while i < self.nodes.len() {
            let node = &self.nodes[i];
            let function = if CALL_OPS.contains(&node.op.as_str()) {
                Attrs::new(&node.attrs)
                    .func("f")
                    .ok()
                    .map(|f| f.name.clone())
            } else if library.has_function(&node.op) {
                Some(node.op.clone())
            } else {
                None
            };
            match function {
                Some(f)
                    if !node.chain.contains(&f)
                        && self.nodes.len() < MAX_NODES
                        && library.function(&f).is_some() =>
                {
                    self.inline_at(i, &f, library)?;
                }
                _ => i += 1,
            }
        }
        self.reindex();
        Ok(())
    }

    fn inline_at(&mut self, at: usize, function: &str, library: &Library) -> Result<()> {
        let call = self.nodes.remove(at);
        let def = library.function(function).ok_or_else(|| Error::Graph {
            detail: format!("{}: no function {function:?}", self.place),
        })?;
        let body =
            function_body(def, library.op_defs()).map_err(|detail| Error::Graph { detail })?;
        if body.args.len() != call.inputs.len() {
            return Err(Error::Graph {
                detail: format!(
                    "{}: node {:?} calls {function:?} with {} inputs; it takes {}",
                    self.place,
                    call.name,
                    call.inputs.len(),
                    body.args.len()
                ),
            });
        }
        let inner = build(&body, &[], &body.rets, &[], true, library)?;
        let prefix = format!("{}/", call.name);
        let rename = |name: &str| format!("{prefix}{name}");
        let outer = |src: &Src| -> Src {
            match src {
                Src::Arg(k) => call.inputs[*k].clone(),
                Src::Node(n, k) => Src::Node(rename(n), *k),
            }
        };
        let mut chain = call.chain.clone();
        chain.push(function.to_string());
        let mut added = Vec::with_capacity(inner.nodes.len());
        for node in inner.nodes {
            let mut control: Vec<String> = node.control.iter().map(|c| rename(c)).collect();
            control.extend(call.control.iter().cloned());
            added.push(IrNode {
                name: rename(&node.name),
                op: node.op,
                attrs: node.attrs,
                inputs: node.inputs.iter().map(outer).collect(),
                control,
                value: node.value,
                chain: chain.clone(),
            });
        }
        let results: Vec<Src> = inner.outputs.iter().map(outer).collect();
        // What a control edge on the call now waits for: everything the body must run.
        let mut done: Vec<String> = inner.roots.iter().map(|r| rename(r)).collect();
        done.extend(results.iter().filter_map(src_node).cloned());
        done.extend(call.control.iter().cloned());
        if let Some(clash) = added.iter().find(|n| self.index.contains_key(&n.name)) {
            return Err(Error::Graph {
                detail: format!(
                    "{}: inlining {function:?} would make a second node {:?}",
                    self.place, clash.name
                ),
            });
        }
        let count = added.len();
        self.nodes.splice(at..at, added);
        for node in &mut self.nodes[at + count..] {
            redirect(node, &call.name, &results, &done);
        }
        for node in &mut self.nodes[..at] {
            redirect(node, &call.name, &results, &done);
        }
        for src in &mut self.outputs {
            if let Src::Node(n, k) = src {
                if *n == call.name {
                    if let Some(r) = results.get(*k) {
                        *src = r.clone();
                    }
                }
            }
        }
        // The body's effects (stateful nodes, control outputs) run whenever the call does,
        // even when the caller uses only some outputs, or none: they become the caller's roots
        // (its pure results need not run for their own sake).
        self.roots.retain(|r| *r != call.name);
        self.roots.extend(inner.roots.iter().map(|r| rename(r)));
        self.index.clear();
        for (i, n) in self.nodes.iter().enumerate() {
            self.index.insert(n.name.clone(), i);
        }
        Ok(())
    }

    /// Computes at compile time every node whose inputs are all known and whose op is pure (or
    /// a variable read, when `fold_variables`), in dependency order.
    pub fn fold(&mut self, order: &[usize], ctx: &RunContext, fold_variables: bool) {
        let library = ctx.library;
        for &i in order {
            let node = &self.nodes[i];
            // A node with control inputs waits for their effects (a saver's Identity after its
            // SaveV2): folding it would drop them.
            if node.value.is_some() || !node.control.is_empty() {
                continue;
            }
            let pure = match node.op.as_str() {
                "VarHandleOp" | "ReadVariableOp" => fold_variables,
                "Placeholder" | "NoOp" => false,
                op => library
                    .registry()
                    .get(op)
                    .is_some_and(|info| !info.stateful),
            };
            if !pure {
                continue;
            }
            let mut inputs = Vec::with_capacity(node.inputs.len());
            for src in &node.inputs {
                match self.known(src) {
                    Some(v) => inputs.push(v),
                    None => break,
                }
            }
            if inputs.len() != node.inputs.len() {
                continue;
            }
            let Some(info) = library.registry().get(&node.op) else {
                continue;
            };
            let spec = NodeSpec {
                name: &node.name,
                op: &node.op,
                attrs: Attrs::new(&node.attrs),
                num_inputs: inputs.len(),
            };
            let Ok(kernel) = (info.factory)(&spec) else {
                continue;
            };
            // A failure is left to happen at run time, where it is reported as TensorFlow would.
            let Ok(outputs) = kernel.run(ctx, &inputs) else {
                continue;
            };
            let small = outputs.iter().all(|v| match v {
                Value::Tensor(t) => {
                    t.len() <= MAX_FOLDED_ELEMENTS
                        || node.op == "ReadVariableOp"
                        || node.op == "Const"
                }
                Value::Resource(_) => true,
                _ => false,
            });
            if small {
                self.nodes[i].value = Some(outputs);
            }
        }
    }

    /// The value of `src` if it is known at compile time.
    pub fn known(&self, src: &Src) -> Option<Value> {
        match src {
            Src::Node(n, k) => self
                .nodes
                .get(*self.index.get(n)?)?
                .value
                .as_ref()?
                .get(*k)
                .cloned(),
            Src::Arg(_) => None,
        }
    }

    /// Points consumers of pass-through ops (Identity and friends) at those ops' inputs.
    pub fn skip_identities(&mut self) {
        let mut through: HashMap<String, (Vec<Src>, Vec<String>)> = HashMap::new();
        for node in &self.nodes {
            // An identity with control inputs waits for their effects (an Assert before a
            // CheckSeqLen): reading through it would let them be pruned.
            if PASS_THROUGH.contains(&node.op.as_str())
                && node.value.is_none()
                && node.control.is_empty()
            {
                through.insert(
                    node.name.clone(),
                    (node.inputs.clone(), node.control.clone()),
                );
            }
        }
        if through.is_empty() {
            return;
        }
        let resolve = |src: &Src| -> Src {
            let mut current = src.clone();
            for _ in 0..through.len() + 1 {
                match &current {
                    Src::Node(n, k) => {
                        match through.get(n).and_then(|(inputs, _)| inputs.get(*k)) {
                            Some(next) => current = next.clone(),
                            None => break,
                        }
                    }
                    Src::Arg(_) => break,
                }
            }
            current
        };
        for node in &mut self.nodes {
            node.inputs = node.inputs.iter().map(resolve).collect();
        }
        self.outputs = self.outputs.iter().map(resolve).collect();
    }

    /// Node indices in dependency order (inputs and control inputs first); a cycle or an
    /// input naming no node is an error.
    pub fn order(&self) -> Result<Vec<usize>> {
        let n = self.nodes.len();
        let mut state = vec![0u8; n]; // 0 new, 1 open, 2 done
        let mut order = Vec::with_capacity(n);
        let deps_of = |i: usize| -> Result<Vec<usize>> {
            let node = &self.nodes[i];
            let mut deps = Vec::new();
            if node.value.is_some() {
                return Ok(deps);
            }
            for name in node
                .inputs
                .iter()
                .filter_map(src_node)
                .chain(node.control.iter())
            {
                let j = *self.index.get(name).ok_or_else(|| Error::Graph {
                    detail: format!(
                        "{}: node {:?} (op {}) has input {name:?}, which is not a node",
                        self.place, node.name, node.op
                    ),
                })?;
                // A loop's cycle closes at its Merges; the frame executor runs it.
                if !crate::engine::frames::is_back_edge(&node.op, &self.nodes[j].op) {
                    deps.push(j);
                }
            }
            Ok(deps)
        };
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, false)];
            while let Some((i, expanded)) = stack.pop() {
                if expanded {
                    state[i] = 2;
                    order.push(i);
                    continue;
                }
                match state[i] {
                    2 => continue,
                    1 => {
                        return Err(Error::Graph {
                            detail: format!(
                                "{}: node {:?} depends on itself (a cycle)",
                                self.place, self.nodes[i].name
                            ),
                        })
                    }
                    _ => {}
                }
                state[i] = 1;
                stack.push((i, true));
                for j in deps_of(i)? {
                    match state[j] {
                        2 => {}
                        1 => {
                            return Err(Error::Graph {
                                detail: format!(
                                    "{}: node {:?} depends on itself (a cycle)",
                                    self.place, self.nodes[j].name
                                ),
                            })
                        }
                        _ => stack.push((j, false)),
                    }
                }
            }
        }
        Ok(order)
    }
}

/// Rewrites `node`'s references to the inlined `call`: data inputs to the body's results,
/// control inputs to what the body runs.
fn redirect(node: &mut IrNode, call: &str, results: &[Src], done: &[String]) {
    for src in &mut node.inputs {
        if let Src::Node(n, k) = src {
            if n == call {
                if let Some(r) = results.get(*k) {
                    *src = r.clone();
                }
            }
        }
    }
    if node.control.iter().any(|c| c == call) {
        node.control.retain(|c| c != call);
        node.control.extend(done.iter().cloned());
    }
}
