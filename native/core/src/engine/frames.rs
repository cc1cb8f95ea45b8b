//! Running graphs with TensorFlow 1 control flow: Switch/Merge conditionals and
//! Enter/Exit/NextIteration loops, with TensorFlow's frame semantics (the reference engine's
//! `runtime/frames.py` is the spec this follows step for step).
//!
//! Why a small executor of its own rather than rewriting loops into While: TensorFlow 1 graphs
//! nest loops, put conditionals inside loop bodies, pass invariants through two frames (an
//! Enter of an Enter) and leave loop variables without Exits; the dynamic rules below run all
//! of these as TensorFlow does, with no pattern that a graph can fall outside of. Graphs
//! without these ops never come here: they run as a straight-line plan (engine::plan).
//!
//! A graph with these ops is not a straight line: loops are cycles, and which nodes run depends
//! on values. Every value is a token tagged with the frame instance and iteration it belongs
//! to, and a node runs, for a tag, once all its inputs for that tag have arrived.
//! - Switch passes its data to output 1 when the predicate holds, to output 0 otherwise; the
//!   other output is *dead*. A node with a dead input (data or control) does not run and its
//!   outputs are dead, except Merge, which runs on its first live data input once its control
//!   inputs have arrived (dead only when every data input is), and ControlTrigger, never dead.
//! - Enter moves a value into a child frame (named by its `frame_name`, one instance per
//!   parent frame and iteration), iteration 0; with `is_constant` the value is a loop
//!   invariant, there in every iteration of that frame. NextIteration moves a value to the next
//!   iteration, Exit to the parent frame. A dead NextIteration stops there; a dead Exit of a
//!   frame's last iteration reaches the parent frame once the frame is done (all its Enters
//!   have run and nothing is left to run). A Merge fed a dead Enter is dead, so a loop on the
//!   untaken branch of a conditional runs one dead iteration and its Exits are dead.
//!
//! Iterations run one at a time, in order; the deadline is checked at each new iteration. A
//! fetched value that never arrives at the top level (dead, or never computed) is an error.

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::graph::Src;
use crate::engine::ir::Ir;
use crate::engine::kernel::{fail, KResult, Kernel};
use crate::engine::library::Library;
use crate::engine::value::Value;
use crate::error::{Error, MissingOp, Result};
use crate::tensor::Tensor;

/// The ops this executor routes itself (besides running kernels).
pub const FRAME_OPS: [&str; 11] = [
    "Switch",
    "RefSwitch",
    "Merge",
    "RefMerge",
    "Enter",
    "RefEnter",
    "Exit",
    "RefExit",
    "NextIteration",
    "RefNextIteration",
    "ControlTrigger",
];

/// How a node routes its outputs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A kernel whose outputs stay in the frame and iteration it ran in.
    Op,
    /// Outputs known when compiling (folded); starts the run at the top level.
    Const,
    /// A fed value (an argument of the plan).
    Arg,
    Switch,
    Merge,
    Enter,
    Exit,
    Next,
    Trigger,
}

fn kind_of(op: &str) -> Kind {
    match op {
        "Switch" | "RefSwitch" => Kind::Switch,
        "Merge" | "RefMerge" => Kind::Merge,
        "Enter" | "RefEnter" => Kind::Enter,
        "Exit" | "RefExit" => Kind::Exit,
        "NextIteration" | "RefNextIteration" => Kind::Next,
        "ControlTrigger" => Kind::Trigger,
        _ => Kind::Op,
    }
}

/// Whether a node of `op` feeds a Merge from the previous iteration (the edge that makes a
/// loop a cycle, which ordering passes leave out).
pub fn is_back_edge(consumer_op: &str, producer_op: &str) -> bool {
    matches!(consumer_op, "Merge" | "RefMerge")
        && matches!(producer_op, "NextIteration" | "RefNextIteration")
}

/// Whether the pruned graph has TensorFlow 1 control flow (and so runs here).
pub fn has_frames(ir: &Ir) -> bool {
    ir.nodes
        .iter()
        .any(|n| n.value.is_none() && FRAME_OPS.contains(&n.op.as_str()))
}

struct FrameNode {
    name: String,
    op: String,
    kind: Kind,
    kernel: Option<Box<dyn Kernel>>,
    value: Option<Vec<Value>>,
    data_count: usize,
    control_count: usize,
    frame_name: String,
    is_constant: bool,
    /// (output index, consumer, input position) of each data edge out of the node.
    consumers: Vec<(usize, usize, usize)>,
    control_consumers: Vec<usize>,
    /// A Merge's input positions fed by an Enter: a dead value there makes the Merge dead.
    enter_inputs: Vec<usize>,
    /// A Merge's inputs that can arrive in iteration 0 and in later ones, so that its state
    /// for a tag is dropped once they have.
    arrivals: (usize, usize),
}

/// A compiled graph with frames: its nodes, which start a run, and what it returns.
pub struct FrameGraph {
    place: String,
    nodes: Vec<FrameNode>,
    sources: Vec<usize>,
    /// The node standing for each argument.
    args: Vec<usize>,
    /// How many Enter nodes feed each frame (by name): an instance is done only once they all
    /// have run.
    enters: HashMap<String, usize>,
    fetches: Vec<(usize, usize)>,
}

impl FrameGraph {
    /// The graph of `ir` (already pruned, folded and fused); `function` names the function
    /// for missing-op errors (empty for a graph).
    pub fn build(ir: &Ir, num_args: usize, function: &str, library: &Library) -> Result<Self> {
        let count = ir.nodes.len();
        let mut nodes = Vec::with_capacity(count + num_args);
        let mut missing = Vec::new();
        for node in &ir.nodes {
            let folded = node.value.is_some();
            let kind = if folded {
                Kind::Const
            } else {
                kind_of(&node.op)
            };
            let attrs = Attrs::new(&node.attrs);
            let kernel = if matches!(kind, Kind::Op | Kind::Trigger) {
                match crate::engine::plan::make_kernel(node, library) {
                    Ok(Some(k)) => Some(k),
                    Ok(None) => {
                        missing.push(MissingOp {
                            op: node.op.clone(),
                            node: node.name.clone(),
                            function: function.to_string(),
                        });
                        None
                    }
                    Err(detail) => {
                        return Err(Error::Graph {
                            detail: format!(
                                "{}: node {:?} (op {}): {detail}",
                                ir.place, node.name, node.op
                            ),
                        })
                    }
                }
            } else {
                None
            };
            let (frame_name, is_constant) = if kind == Kind::Enter {
                (
                    attrs.string("frame_name").unwrap_or_default().to_string(),
                    attrs.bool("is_constant").unwrap_or(false),
                )
            } else {
                (String::new(), false)
            };
            nodes.push(FrameNode {
                name: node.name.clone(),
                op: node.op.clone(),
                kind,
                kernel,
                value: node.value.clone(),
                data_count: if folded { 0 } else { node.inputs.len() },
                control_count: if folded { 0 } else { node.control.len() },
                frame_name,
                is_constant,
                consumers: Vec::new(),
                control_consumers: Vec::new(),
                enter_inputs: Vec::new(),
                arrivals: (0, 0),
            });
        }
        if !missing.is_empty() {
            return Err(Error::UnsupportedOps { missing });
        }
        for k in 0..num_args {
            nodes.push(FrameNode {
                name: format!("argument {k}"),
                op: "Arg".into(),
                kind: Kind::Arg,
                kernel: None,
                value: None,
                data_count: 0,
                control_count: 0,
                frame_name: String::new(),
                is_constant: false,
                consumers: Vec::new(),
                control_consumers: Vec::new(),
                enter_inputs: Vec::new(),
                arrivals: (0, 0),
            });
        }
        let producer = |src: &Src| -> Result<(usize, usize)> {
            match src {
                Src::Arg(k) if *k < num_args => Ok((count + k, 0)),
                Src::Arg(k) => Err(Error::Graph {
                    detail: format!(
                        "{}: argument {k} does not exist ({num_args} arguments)",
                        ir.place
                    ),
                }),
                Src::Node(n, k) => ir
                    .index
                    .get(n)
                    .map(|&i| (i, *k))
                    .ok_or_else(|| Error::Graph {
                        detail: format!("{}: no node {n:?}", ir.place),
                    }),
            }
        };
        for (i, node) in ir.nodes.iter().enumerate() {
            if node.value.is_some() {
                continue;
            }
            for (position, src) in node.inputs.iter().enumerate() {
                let (p, out) = producer(src)?;
                nodes[p].consumers.push((out, i, position));
            }
            for name in &node.control {
                let (p, _) = producer(&Src::Node(name.clone(), 0))?;
                nodes[p].control_consumers.push(i);
            }
        }
        for (i, node) in ir.nodes.iter().enumerate() {
            if nodes[i].kind != Kind::Merge {
                continue;
            }
            let mut kinds = Vec::with_capacity(node.inputs.len());
            for src in &node.inputs {
                kinds.push(nodes[producer(src)?.0].kind);
            }
            let controls = node.control.len();
            nodes[i].arrivals = (
                controls + kinds.iter().filter(|k| **k != Kind::Next).count(),
                controls + kinds.iter().filter(|k| **k != Kind::Enter).count(),
            );
            nodes[i].enter_inputs = (0..kinds.len())
                .filter(|&p| kinds[p] == Kind::Enter)
                .collect();
        }
        let sources = (0..count)
            .filter(|&i| {
                let n = &nodes[i];
                n.kind == Kind::Const || (n.data_count == 0 && n.control_count == 0)
            })
            .collect();
        let mut enters: HashMap<String, usize> = HashMap::new();
        for node in nodes.iter().filter(|n| n.kind == Kind::Enter) {
            *enters.entry(node.frame_name.clone()).or_default() += 1;
        }
        let fetches = ir
            .outputs
            .iter()
            .map(producer)
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            place: ir.place.clone(),
            nodes,
            sources,
            args: (count..count + num_args).collect(),
            enters,
            fetches,
        })
    }

    /// The ops of the nodes that run kernels (for tests and profiles).
    pub fn ops(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| !matches!(n.kind, Kind::Const | Kind::Arg))
            .map(|n| n.op.as_str())
            .collect()
    }

    pub fn run(&self, ctx: &RunContext, args: &[Value]) -> KResult {
        if args.len() != self.args.len() {
            return Err(fail(format!(
                "{} takes {} inputs, got {}",
                self.place,
                self.args.len(),
                args.len()
            )));
        }
        let mut run = FrameRun::new(self, ctx);
        run.start(args)?;
        loop {
            while let Some(item) = run.ready.pop() {
                run.execute(item)?;
            }
            if !run.pass_dead_exits() {
                break;
            }
        }
        self.fetches
            .iter()
            .map(|&(node, output)| run.fetch(node, output))
            .collect()
    }
}

/// A frame instance (0: the top level) and an iteration of it.
type Tag = (usize, usize);

const ROOT: Tag = (0, 0);

/// One instance of a frame: where it was entered from, its loop invariants, how many
/// iterations it has started, how many of its Enters have run, and its dead Exits
/// (node, iteration) not passed on yet.
struct Frame {
    parent: Tag,
    name: String,
    invariants: Vec<(usize, Outputs)>,
    iterations: usize,
    entered: usize,
    dead_exits: Vec<(usize, usize)>,
}

/// A node's outputs for one tag: None when the node is dead, else each output (None where
/// that output is dead, as a Switch's untaken one).
type Outputs = Option<Vec<Option<Value>>>;

/// A node's inputs for one tag, as they arrive.
struct Pending {
    inputs: Vec<Option<Value>>,
    waiting: usize,
    controls: usize,
    dead: usize,
    done: bool,
}

struct Ready {
    node: usize,
    tag: Tag,
    inputs: Vec<Option<Value>>,
    dead: bool,
}

struct FrameRun<'g, 'c, 'l> {
    graph: &'g FrameGraph,
    ctx: &'c RunContext<'l>,
    pending: HashMap<(usize, Tag), Pending>,
    frames: Vec<Frame>,
    instances: HashMap<(Tag, String), usize>,
    ready: Vec<Ready>,
    results: HashMap<(usize, usize), Option<Value>>,
    fetched: Vec<bool>,
}

impl<'g, 'c, 'l> FrameRun<'g, 'c, 'l> {
    fn new(graph: &'g FrameGraph, ctx: &'c RunContext<'l>) -> Self {
        let mut fetched = vec![false; graph.nodes.len()];
        for &(node, _) in &graph.fetches {
            fetched[node] = true;
        }
        Self {
            graph,
            ctx,
            pending: HashMap::new(),
            frames: vec![Frame {
                parent: ROOT,
                name: String::new(),
                invariants: Vec::new(),
                iterations: 1,
                entered: 0,
                dead_exits: Vec::new(),
            }],
            instances: HashMap::new(),
            ready: Vec::new(),
            results: HashMap::new(),
            fetched,
        }
    }

    fn start(&mut self, args: &[Value]) -> KResult<()> {
        for (&node, value) in self.graph.args.iter().zip(args) {
            self.emit(node, ROOT, &Some(vec![Some(value.clone())]))?;
        }
        for &node in &self.graph.sources {
            match &self.graph.nodes[node].value {
                Some(values) => {
                    let outputs = Some(values.iter().cloned().map(Some).collect());
                    self.emit(node, ROOT, &outputs)?;
                }
                None => self.ready.push(Ready {
                    node,
                    tag: ROOT,
                    inputs: Vec::new(),
                    dead: false,
                }),
            }
        }
        Ok(())
    }

    fn fetch(&self, node: usize, output: usize) -> KResult<Value> {
        match self.results.get(&(node, output)) {
            Some(Some(value)) => Ok(value.clone()),
            found => {
                let why = if found.is_some() {
                    "it depends on an untaken branch of a conditional (a dead output of a Switch)"
                } else {
                    "it never ran at the top level (inside a loop, or after one that never \
                     finished)"
                };
                Err(fail(format!(
                    "{}: tensor '{}:{output}' has no value: {why}",
                    self.graph.place, self.graph.nodes[node].name
                )))
            }
        }
    }

    /// Runs one node for one tag (or propagates its deadness) and sends its outputs on.
    fn execute(&mut self, item: Ready) -> KResult<()> {
        let Ready {
            node: index,
            tag,
            inputs,
            dead,
        } = item;
        let node = &self.graph.nodes[index];
        let outputs: Outputs = if dead && node.kind != Kind::Trigger {
            None
        } else {
            match node.kind {
                Kind::Const | Kind::Arg => node
                    .value
                    .as_ref()
                    .map(|v| v.iter().cloned().map(Some).collect()),
                Kind::Switch => Some(self.switch(index, tag, inputs)?),
                Kind::Merge => Some(merge(inputs)),
                Kind::Enter | Kind::Exit | Kind::Next => {
                    Some(vec![inputs.into_iter().next().flatten()])
                }
                Kind::Op | Kind::Trigger => Some(self.call(index, tag, inputs)?),
            }
        };
        match node.kind {
            Kind::Enter => self.enter(index, tag, outputs),
            _ if outputs.is_none() && matches!(node.kind, Kind::Exit | Kind::Next) => {
                if node.kind == Kind::Exit && tag.0 != 0 {
                    self.frames[tag.0].dead_exits.push((index, tag.1));
                }
                Ok(()) // a dead NextIteration stops the deadness there
            }
            Kind::Exit => {
                if tag.0 == 0 {
                    return Err(self.error(index, tag, fail("Exit outside of any loop frame")));
                }
                let parent = self.frames[tag.0].parent;
                self.emit(index, parent, &outputs)
            }
            Kind::Next => self.next_iteration(index, tag, outputs),
            _ => self.emit(index, tag, &outputs),
        }
    }

    fn switch(
        &self,
        index: usize,
        tag: Tag,
        inputs: Vec<Option<Value>>,
    ) -> KResult<Vec<Option<Value>>> {
        let mut inputs = inputs.into_iter();
        let data = inputs.next().flatten();
        let pred = inputs
            .next()
            .flatten()
            .ok_or_else(|| self.error(index, tag, fail("Switch needs a predicate input")))?;
        let taken =
            crate::kernels::control::truth(&[pred]).map_err(|e| self.error(index, tag, e))?;
        Ok(if taken {
            vec![None, data]
        } else {
            vec![data, None]
        })
    }

    fn call(
        &self,
        index: usize,
        tag: Tag,
        inputs: Vec<Option<Value>>,
    ) -> KResult<Vec<Option<Value>>> {
        let node = &self.graph.nodes[index];
        let inputs: Vec<Value> = inputs.into_iter().flatten().collect();
        let Some(kernel) = &node.kernel else {
            return Err(self.error(index, tag, fail("the node has no kernel")));
        };
        let result = match self.ctx.profile {
            None => kernel.run(self.ctx, &inputs),
            Some(profile) => profile.time(&node.op, &node.name, || kernel.run(self.ctx, &inputs)),
        };
        result
            .map(|outputs| outputs.into_iter().map(Some).collect())
            .map_err(|e| self.error(index, tag, e))
    }

    fn error(&self, index: usize, tag: Tag, err: Error) -> Error {
        let node = &self.graph.nodes[index];
        let place = format!(
            "{}: node {:?} (op {}){}",
            self.graph.place,
            node.name,
            node.op,
            self.describe(tag)
        );
        match err {
            Error::Run { detail } => fail(format!("{place}: {detail}")),
            Error::DeadlineExceeded { detail } => Error::DeadlineExceeded {
                detail: format!("{place}: {detail}"),
            },
            Error::FileAccess { detail } => Error::FileAccess {
                detail: format!("{place}: {detail}"),
            },
            other => fail(format!("{place}: {other}")),
        }
    }

    /// Where in which loops a node ran, innermost first (empty at the top level).
    fn describe(&self, mut tag: Tag) -> String {
        let mut parts = Vec::new();
        while tag.0 != 0 {
            let frame = &self.frames[tag.0];
            parts.push(format!("frame {:?} iteration {}", frame.name, tag.1));
            tag = frame.parent;
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" in {}", parts.join(", "))
        }
    }

    fn enter(&mut self, index: usize, tag: Tag, outputs: Outputs) -> KResult<()> {
        let node = &self.graph.nodes[index];
        let key = (tag, node.frame_name.clone());
        let frame = match self.instances.get(&key) {
            Some(&f) => f,
            None => {
                self.frames.push(Frame {
                    parent: tag,
                    name: node.frame_name.clone(),
                    invariants: Vec::new(),
                    iterations: 1,
                    entered: 0,
                    dead_exits: Vec::new(),
                });
                let f = self.frames.len() - 1;
                self.instances.insert(key, f);
                f
            }
        };
        self.frames[frame].entered += 1;
        if node.is_constant {
            self.frames[frame].invariants.push((index, outputs.clone()));
            for iteration in 0..self.frames[frame].iterations {
                self.emit(index, (frame, iteration), &outputs)?;
            }
            Ok(())
        } else {
            self.emit(index, (frame, 0), &outputs)
        }
    }

    fn next_iteration(&mut self, index: usize, tag: Tag, outputs: Outputs) -> KResult<()> {
        let (frame, iteration) = tag;
        if frame == 0 {
            return Err(self.error(index, tag, fail("NextIteration outside of any loop frame")));
        }
        let following = (frame, iteration + 1);
        if iteration + 1 == self.frames[frame].iterations {
            self.frames[frame].iterations += 1;
            let name = &self.frames[frame].name;
            self.ctx.check_deadline(|| {
                format!(
                    "{}: loop {name:?}, iteration {}",
                    self.graph.place,
                    iteration + 1
                )
            })?;
            let invariants = self.frames[frame].invariants.clone();
            for (invariant, values) in &invariants {
                self.emit(*invariant, following, values)?;
            }
        }
        self.emit(index, following, &outputs)
    }

    /// With nothing left to run: sends the dead Exits of each done frame's last iteration to
    /// its parent frame (as TensorFlow does when it deletes the frame); whether any went.
    fn pass_dead_exits(&mut self) -> bool {
        let mut passed = false;
        for f in 1..self.frames.len() {
            let frame = &self.frames[f];
            let expected = self.graph.enters.get(&frame.name).copied().unwrap_or(0);
            if frame.dead_exits.is_empty() || frame.entered != expected {
                continue;
            }
            let last = frame.iterations - 1;
            let parent = frame.parent;
            let exits = std::mem::take(&mut self.frames[f].dead_exits);
            for (node, iteration) in exits {
                if iteration == last {
                    // Emitting a dead value runs no kernel, so it cannot fail.
                    let _ = self.emit(node, parent, &None);
                    passed = true;
                }
            }
        }
        passed
    }

    /// Sends a node's outputs (None: the node is dead) along its edges, for `tag`.
    fn emit(&mut self, index: usize, tag: Tag, outputs: &Outputs) -> KResult<()> {
        let node = &self.graph.nodes[index];
        let output = |k: usize| outputs.as_ref().and_then(|o| o.get(k).cloned().flatten());
        if tag == ROOT && self.fetched[index] {
            for &(n, k) in &self.graph.fetches {
                if n == index {
                    self.results.insert((n, k), output(k));
                }
            }
        }
        for &(k, consumer, position) in &node.consumers {
            self.deliver(consumer, Some(position), tag, output(k));
        }
        let live = outputs.is_some();
        for &consumer in &node.control_consumers {
            self.deliver_control(consumer, tag, live);
        }
        Ok(())
    }

    fn pending_for(&mut self, index: usize, tag: Tag) -> &mut Pending {
        let node = &self.graph.nodes[index];
        self.pending.entry((index, tag)).or_insert_with(|| Pending {
            inputs: vec![None; node.data_count],
            waiting: if node.kind == Kind::Merge {
                if tag.1 > 0 {
                    node.arrivals.1
                } else {
                    node.arrivals.0
                }
            } else {
                node.data_count + node.control_count
            },
            controls: node.control_count,
            dead: 0,
            done: false,
        })
    }

    fn deliver_control(&mut self, index: usize, tag: Tag, live: bool) {
        self.deliver_any(index, None, tag, None, !live);
    }

    /// One data input of `index` for `tag` has arrived (None: a dead one).
    fn deliver(&mut self, index: usize, position: Option<usize>, tag: Tag, value: Option<Value>) {
        let dead = value.is_none();
        self.deliver_any(index, position, tag, value, dead);
    }

    /// One input has arrived (position None: a control input).
    fn deliver_any(
        &mut self,
        index: usize,
        position: Option<usize>,
        tag: Tag,
        value: Option<Value>,
        dead: bool,
    ) {
        let node = &self.graph.nodes[index];
        if node.kind == Kind::Merge {
            self.deliver_to_merge(index, position, tag, value, dead);
            return;
        }
        let is_trigger = node.kind == Kind::Trigger;
        let state = self.pending_for(index, tag);
        if let (Some(p), Some(v)) = (position, value) {
            if let Some(slot) = state.inputs.get_mut(p) {
                *slot = Some(v);
            }
        }
        if dead {
            state.dead += 1;
        }
        state.waiting = state.waiting.saturating_sub(1);
        if state.waiting == 0 {
            if let Some(state) = self.pending.remove(&(index, tag)) {
                let dead = state.dead > 0 && !is_trigger;
                self.ready.push(Ready {
                    node: index,
                    tag,
                    inputs: state.inputs,
                    dead,
                });
            }
        }
    }

    /// A Merge runs once per tag: on its first live data input once every control input has
    /// arrived, or dead once every data input has arrived dead. Its state goes once every input
    /// that can arrive for the tag has.
    fn deliver_to_merge(
        &mut self,
        index: usize,
        position: Option<usize>,
        tag: Tag,
        value: Option<Value>,
        dead: bool,
    ) {
        let node = &self.graph.nodes[index];
        let data_count = node.data_count;
        let from_enter = position.is_some_and(|p| node.enter_inputs.contains(&p));
        let state = self.pending_for(index, tag);
        state.waiting = state.waiting.saturating_sub(1);
        let finished = state.waiting == 0;
        let mut fire = None;
        if !state.done {
            match position {
                None => state.controls = state.controls.saturating_sub(1),
                Some(_) if dead => {
                    state.dead += 1;
                    if from_enter {
                        // a loop on the untaken branch of a conditional
                        state.dead = data_count;
                    }
                }
                Some(p) => {
                    if state.inputs.iter().all(Option::is_none) {
                        if let Some(slot) = state.inputs.get_mut(p) {
                            *slot = value;
                        }
                    }
                }
            }
            let live = state.inputs.iter().any(Option::is_some);
            if state.controls == 0 && (live || state.dead >= data_count) {
                state.done = true;
                fire = Some((state.inputs.clone(), !live));
            }
        }
        if finished {
            self.pending.remove(&(index, tag));
        }
        if let Some((inputs, dead)) = fire {
            self.ready.push(Ready {
                node: index,
                tag,
                inputs,
                dead,
            });
        }
    }
}

/// A Merge's outputs: its live input and that input's position.
fn merge(inputs: Vec<Option<Value>>) -> Vec<Option<Value>> {
    let found = inputs
        .into_iter()
        .enumerate()
        .find_map(|(i, v)| v.map(|v| (i, v)));
    match found {
        Some((i, v)) => {
            let index = i32::try_from(i).unwrap_or(i32::MAX);
            vec![
                Some(v),
                Some(Value::Tensor(Arc::new(Tensor::scalar(index)))),
            ]
        }
        None => vec![None, None],
    }
}
