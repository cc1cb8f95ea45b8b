//! Compiling a graph or function body once into a [`Plan`] and running it.
//!
//! A function body keeps what its outputs and control outputs need plus every stateful node
//! (TensorFlow's function semantics); a graph keeps only what the fetches and targets need
//! (session semantics). Fed tensors stop the walk. Before kernels are chosen the body is
//! simplified (engine::ir): calls inlined, constants and read-only variables folded, identities
//! read through, then fused (engine::fuse). Each step's outputs are dropped after their last
//! use, so a call holds only the tensors still needed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::graph::{Body, Src};
use crate::engine::ir::{self, Ir, IrNode};
use crate::engine::kernel::{fail, KResult, Kernel, NodeSpec};
use crate::engine::library::Library;
use crate::engine::value::Value;
use crate::error::{Error, MissingOp, Result};
use crate::tensor::Tensor;

/// Where a step's input or a plan's output is read from.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Arg(usize),
    Out(usize, usize),
    Const(usize),
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
    consts: Vec<Value>,
    outputs: Vec<Slot>,
    /// The library functions its remaining nodes call or name in attrs (branches, bodies).
    functions: Vec<String>,
    /// A graph with TensorFlow 1 control flow runs on the frame executor instead of `steps`.
    frames: Option<crate::engine::frames::FrameGraph>,
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

    /// How many kernels a call runs (after inlining, folding and fusion).
    pub fn len(&self) -> usize {
        self.ops().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements of the constant tensors the plan holds itself (weights no kernel took over):
    /// what tests of its memory read.
    pub fn constant_elements(&self) -> usize {
        self.consts
            .iter()
            .map(|c| match c {
                Value::Tensor(t) => t.len(),
                _ => 0,
            })
            .sum()
    }

    /// The ops of the steps, in order (for tests of the optimizer and for profiles).
    pub fn ops(&self) -> Vec<&str> {
        if let Some(frames) = &self.frames {
            return frames.ops();
        }
        self.steps.iter().map(|s| s.op.as_str()).collect()
    }

    /// Compiles the body for `request`; kernels take over the constants they keep in their own
    /// form ([`Plan::absorb_together`]).
    pub fn compile(name: &str, body: &Body, request: &Request, library: &Library) -> Result<Plan> {
        let mut plan = Self::compile_holding(name, body, request, library)?;
        Self::absorb_together(&mut [&mut plan]);
        Ok(plan)
    }

    /// [`Plan::compile`] with every constant kept by the plan: for plans compiled together
    /// that fold the same weights (a model's signatures; Keras exports `serve` and
    /// `serving_default` over one function), which then hand them to their kernels together.
    pub fn compile_holding(
        name: &str,
        body: &Body,
        request: &Request,
        library: &Library,
    ) -> Result<Plan> {
        let mut ir = ir::build(
            body,
            request.feeds,
            request.fetches,
            request.targets,
            request.keep_stateful,
            library,
        )?;
        let num_args = if body.place == "the graph" {
            request.feeds.len()
        } else {
            body.args.len()
        };
        ir.inline_calls(library)?;
        ir.prune();
        let order = ir.order()?;
        ir.fold(&order, &library.context(), library.fold_variables());
        ir.skip_identities();
        ir.prune();
        crate::engine::pad_fold::fold_pads(&mut ir);
        crate::engine::fuse_lstm::fuse_lstm_cells(&mut ir, library.registry());
        crate::engine::fuse_rnn::fuse_rnn_loops(&mut ir, library);
        crate::engine::fuse_gelu::fuse_gelu(&mut ir, library.registry());
        crate::engine::fuse::fuse(&mut ir, library.registry(), library.scaled_weights());
        crate::engine::fuse::fuse_affine(&mut ir, library.registry());
        ir.prune();
        if crate::engine::fuse_scale::fuse_input_scale(&mut ir, library.registry()) {
            ir.prune();
        }
        if crate::engine::fuse_block::fuse_blocks(&mut ir, library.registry()) {
            ir.prune();
        }
        let function = if body.place == "the graph" {
            String::new()
        } else {
            name.to_string()
        };
        Self::from_ir(name, ir, num_args, &function, library)
    }

    fn from_ir(
        name: &str,
        ir: Ir,
        num_args: usize,
        function: &str,
        library: &Library,
    ) -> Result<Plan> {
        if crate::engine::frames::has_frames(&ir) {
            return Self::with_frames(name, ir, num_args, function, library);
        }
        let order = ir.order()?;
        let mut consts = Vec::new();
        let mut const_slot: HashMap<(usize, usize), usize> = HashMap::new();
        let mut step_of: HashMap<usize, usize> = HashMap::new();
        let mut missing = Vec::new();
        let mut steps = Vec::new();
        let mut slot =
            |src: &Src, consts: &mut Vec<Value>, step_of: &HashMap<usize, usize>| -> Result<Slot> {
                match src {
                    Src::Arg(i) if *i < num_args => Ok(Slot::Arg(*i)),
                    Src::Arg(i) => Err(Error::Graph {
                        detail: format!(
                            "{}: argument {i} does not exist ({num_args} arguments)",
                            ir.place
                        ),
                    }),
                    Src::Node(n, k) => {
                        let i = *ir.index.get(n).ok_or_else(|| Error::Graph {
                            detail: format!("{}: no node {n:?}", ir.place),
                        })?;
                        if let Some(values) = &ir.nodes[i].value {
                            let value = values.get(*k).cloned().ok_or_else(|| Error::Graph {
                                detail: format!(
                                    "{}: node {n:?} has {} outputs; output {k} does not exist",
                                    ir.place,
                                    values.len()
                                ),
                            })?;
                            let c = *const_slot.entry((i, *k)).or_insert_with(|| {
                                consts.push(value);
                                consts.len() - 1
                            });
                            return Ok(Slot::Const(c));
                        }
                        let step = step_of.get(&i).ok_or_else(|| Error::Graph {
                            detail: format!("{}: node {n:?} is used before it runs", ir.place),
                        })?;
                        Ok(Slot::Out(*step, *k))
                    }
                }
            };
        for &i in &order {
            let node = &ir.nodes[i];
            if node.value.is_some() {
                continue;
            }
            let inputs = node
                .inputs
                .iter()
                .map(|s| slot(s, &mut consts, &step_of))
                .collect::<Result<Vec<Slot>>>()?;
            match make_kernel(node, library) {
                Ok(Some(kernel)) => {
                    step_of.insert(i, steps.len());
                    steps.push(Step {
                        node: node.name.clone(),
                        op: node.op.clone(),
                        kernel,
                        inputs,
                        frees: Vec::new(),
                    });
                }
                Ok(None) => missing.push(MissingOp {
                    op: node.op.clone(),
                    node: node.name.clone(),
                    function: function.to_string(),
                }),
                Err(detail) => {
                    return Err(Error::Graph {
                        detail: format!(
                            "{}: node {:?} (op {}): {detail}",
                            ir.place, node.name, node.op
                        ),
                    })
                }
            }
        }
        if !missing.is_empty() {
            return Err(Error::UnsupportedOps { missing });
        }
        let outputs = ir
            .outputs
            .iter()
            .map(|s| slot(s, &mut consts, &step_of))
            .collect::<Result<Vec<Slot>>>()?;
        plan_frees(&mut steps, &outputs);
        let functions = called_functions(&ir, library);
        Ok(Plan {
            name: name.to_string(),
            place: ir.place,
            num_args,
            steps,
            consts,
            outputs,
            functions,
            frames: None,
        })
    }

    /// Offers each constant tensor that one input of one step alone reads, in its plan, to
    /// that step's kernel ([`Kernel::absorb`]); a plan whose kernel keeps it in its own form
    /// replaces it with an empty tensor, so the weights are held once. A tensor several of
    /// `plans` fold (the same `Arc`) goes to each of their kernels in turn before the next
    /// one, so that it is freed as soon as the last lets go of it: one filter at a time
    /// beside its packed copy, where handing over one plan's constants at a time would hold
    /// every packed copy beside every original until the last plan's turn.
    pub fn absorb_together(plans: &mut [&mut Plan]) {
        let mut order: Vec<usize> = Vec::new();
        let mut readers_of: HashMap<usize, Vec<(usize, usize, usize, usize)>> = HashMap::new();
        for (p, plan) in plans.iter().enumerate() {
            let mut readers = vec![0usize; plan.consts.len()];
            let slots = plan
                .steps
                .iter()
                .flat_map(|s| &s.inputs)
                .chain(&plan.outputs);
            for slot in slots {
                if let Slot::Const(c) = slot {
                    readers[*c] += 1;
                }
            }
            for (s, step) in plan.steps.iter().enumerate() {
                for (input, slot) in step.inputs.iter().enumerate() {
                    let Slot::Const(c) = *slot else {
                        continue;
                    };
                    let Value::Tensor(t) = &plan.consts[c] else {
                        continue;
                    };
                    if readers[c] == 1 {
                        let key = Arc::as_ptr(t) as usize;
                        let group = readers_of.entry(key).or_default();
                        if group.is_empty() {
                            order.push(key);
                        }
                        group.push((p, s, input, c));
                    }
                }
            }
        }
        for key in order {
            for &(p, s, input, c) in &readers_of[&key] {
                let Plan { steps, consts, .. } = &mut *plans[p];
                if steps[s].kernel.absorb(input, &consts[c]) {
                    consts[c] = Value::tensor(Tensor::from_vec(vec![0], Vec::<f32>::new()));
                }
            }
        }
    }

    /// The plan of a graph with TensorFlow 1 control flow: run by engine::frames.
    fn with_frames(
        name: &str,
        ir: Ir,
        num_args: usize,
        function: &str,
        library: &Library,
    ) -> Result<Plan> {
        let graph = crate::engine::frames::FrameGraph::build(&ir, num_args, function, library)?;
        let functions = called_functions(&ir, library);
        Ok(Plan {
            name: name.to_string(),
            place: ir.place,
            num_args,
            steps: Vec::new(),
            consts: Vec::new(),
            outputs: Vec::new(),
            functions,
            frames: Some(graph),
        })
    }

    /// Runs the steps in order on `args`; errors name this plan, the node and its op.
    pub fn run(&self, ctx: &RunContext, args: &[Value]) -> KResult {
        if let Some(frames) = &self.frames {
            return frames.run(ctx, args);
        }
        if args.len() != self.num_args {
            return Err(fail(format!(
                "{} takes {} inputs, got {}",
                self.place,
                self.num_args,
                args.len()
            )));
        }
        let mut outs: Vec<Vec<Value>> = Vec::with_capacity(self.steps.len());
        let mut inputs: Vec<Value> = Vec::new();
        for step in &self.steps {
            inputs.clear();
            for &s in &step.inputs {
                inputs.push(self.read(args, &outs, s).map_err(|e| self.wrap(step, e))?);
            }
            // What this step reads last goes before it runs (frees name earlier steps only),
            // so that an input nothing else holds reaches the kernel as its only reference.
            for &done in &step.frees {
                outs[done] = Vec::new();
            }
            let result = match ctx.profile {
                None => step.kernel.run_owned(ctx, &mut inputs),
                Some(profile) => profile.time(&step.op, &step.node, || {
                    step.kernel.run_owned(ctx, &mut inputs)
                }),
            }
            .map_err(|e| self.wrap(step, e))?;
            inputs.clear();
            outs.push(result);
        }
        self.outputs
            .iter()
            .map(|&s| self.read(args, &outs, s))
            .collect()
    }

    fn read(&self, args: &[Value], outs: &[Vec<Value>], slot: Slot) -> KResult<Value> {
        match slot {
            Slot::Arg(i) => args
                .get(i)
                .cloned()
                .ok_or_else(|| fail(format!("missing input {i}"))),
            Slot::Const(i) => Ok(self.consts[i].clone()),
            Slot::Out(step, k) => outs[step].get(k).cloned().ok_or_else(|| {
                let s = &self.steps[step];
                fail(format!(
                    "node {:?} (op {}) has {} outputs; output {k} does not exist",
                    s.node,
                    s.op,
                    outs[step].len()
                ))
            }),
        }
    }

    fn wrap(&self, step: &Step, err: Error) -> Error {
        let detail = match err {
            Error::Run { detail } => detail,
            Error::DeadlineExceeded { detail } => {
                return Error::DeadlineExceeded {
                    detail: format!(
                        "{}: node {:?} (op {}): {detail}",
                        self.place, step.node, step.op
                    ),
                }
            }
            Error::FileAccess { detail } => {
                return Error::FileAccess {
                    detail: format!(
                        "{}: node {:?} (op {}): {detail}",
                        self.place, step.node, step.op
                    ),
                }
            }
            other => other.to_string(),
        };
        fail(format!(
            "{}: node {:?} (op {}): {detail}",
            self.place, step.node, step.op
        ))
    }
}

/// The kernel of a node: a registered op's, or a call of the library function the op names;
/// None if the engine has neither.
pub(crate) fn make_kernel(
    node: &IrNode,
    library: &Library,
) -> std::result::Result<Option<Box<dyn Kernel>>, String> {
    let spec = NodeSpec {
        name: &node.name,
        op: &node.op,
        attrs: Attrs::new(&node.attrs),
        num_inputs: node.inputs.len(),
    };
    if let Some(info) = library.registry().get(&node.op) {
        return (info.factory)(&spec).map(Some);
    }
    if library.has_function(&node.op) {
        return Ok(Some(crate::kernels::control::direct_call(&node.op)));
    }
    Ok(None)
}

/// The library functions a plan's nodes call, by attribute (If/While bodies, PartitionedCall's
/// `f`) or as their op type, sorted and unique: what the plan needs compiled beside it.
fn called_functions(ir: &Ir, library: &Library) -> Vec<String> {
    let mut functions: Vec<String> = Vec::new();
    for node in ir.nodes.iter().filter(|n| n.value.is_none()) {
        functions.extend(
            Attrs::new(&node.attrs)
                .all_functions()
                .into_iter()
                .map(String::from),
        );
        if library.has_function(&node.op) {
            functions.push(node.op.clone());
        }
    }
    functions.sort();
    functions.dedup();
    functions
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
            _ => None,
        })
        .collect();
    for (producer, consumer) in last {
        if !kept.contains(&producer) {
            steps[consumer].frees.push(producer);
        }
    }
}
