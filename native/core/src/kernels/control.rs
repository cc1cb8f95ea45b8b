//! Function calls and control flow v2: PartitionedCall, If, Case and While run library
//! functions through the context, which compiles each once and bounds how deep calls nest.

use std::sync::{Arc, OnceLock, Weak};

use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::engine::plan::Plan;
use crate::engine::{RunContext, Value};
use crate::tensor::Storage;

pub fn register(r: &mut Registry) {
    r.add_stateful("PartitionedCall", call);
    r.add_stateful("StatefulPartitionedCall", call);
    r.add_stateful("If", if_op);
    r.add_stateful("StatelessIf", if_op);
    r.add_stateful("Case", case);
    r.add_stateful("StatelessCase", case);
    r.add_stateful("While", while_op);
    r.add_stateful("StatelessWhile", while_op);
}

type Made = Result<Box<dyn Kernel>, String>;

/// A library function a kernel calls, with its plan kept after the first call so that later
/// calls (every iteration of a While) neither lock nor search the library's plan table. The
/// plan is held weakly (a recursive function's plan would otherwise own itself) together with
/// the id of the library it came from: a kernel is only ever run by its own model, but should
/// another library run it, that library's own plan is looked up.
struct Callee {
    name: String,
    plan: OnceLock<(u64, Weak<Plan>)>,
}

impl Callee {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            plan: OnceLock::new(),
        }
    }

    fn call(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        ctx.call_plan(&self.name, || self.plan(ctx), inputs)
    }

    fn plan(&self, ctx: &RunContext) -> KResult<Arc<Plan>> {
        let library = ctx.library.id();
        if let Some((id, plan)) = self.plan.get() {
            if let Some(plan) = plan.upgrade().filter(|_| *id == library) {
                return Ok(plan);
            }
        }
        let plan = ctx.library.plan(&self.name)?;
        // Taken by the first library to run this kernel (another one's is looked up each time).
        let _ = self.plan.set((library, Arc::downgrade(&plan)));
        Ok(plan)
    }
}

/// A node whose op is a library function's name.
pub fn direct_call(function: &str) -> Box<dyn Kernel> {
    let callee = Callee::new(function);
    boxed(move |ctx, inputs| callee.call(ctx, inputs))
}

fn call(node: &NodeSpec) -> Made {
    Ok(direct_call(&node.attrs.func("f")?.name))
}

fn if_op(node: &NodeSpec) -> Made {
    let then_branch = Callee::new(&node.attrs.func("then_branch")?.name);
    let else_branch = Callee::new(&node.attrs.func("else_branch")?.name);
    Ok(boxed(move |ctx, inputs| {
        let branch = if truth(inputs)? {
            &then_branch
        } else {
            &else_branch
        };
        branch.call(ctx, &inputs[1..])
    }))
}

fn case(node: &NodeSpec) -> Made {
    let branches: Vec<Callee> = node
        .attrs
        .funcs("branches")?
        .iter()
        .map(|f| Callee::new(&f.name))
        .collect();
    if branches.is_empty() {
        return Err("Case has no branches".into());
    }
    Ok(boxed(move |ctx, inputs| {
        let index = tensor_input(inputs, 0)?;
        let i = match index.values::<i32>() {
            Some([i]) => *i,
            _ => {
                return Err(fail(format!(
                    "branch_index must be an int32 scalar, got {}",
                    Value::Tensor(index.clone()).describe()
                )))
            }
        };
        // Out-of-range indices run the last branch, as TensorFlow's Case does.
        let chosen = usize::try_from(i)
            .ok()
            .filter(|&i| i < branches.len())
            .unwrap_or(branches.len() - 1);
        branches[chosen].call(ctx, &inputs[1..])
    }))
}

fn while_op(node: &NodeSpec) -> Made {
    let cond = Callee::new(&node.attrs.func("cond")?.name);
    let body = Callee::new(&node.attrs.func("body")?.name);
    Ok(boxed(move |ctx, inputs| {
        run_while(ctx, &cond, &body, inputs.to_vec())
    }))
}

/// Runs `body` on the loop variables while `cond` holds; cond and body read the variables in
/// place (no copy of them per iteration), and the deadline is checked once per iteration.
fn run_while(ctx: &RunContext, cond: &Callee, body: &Callee, mut state: Vec<Value>) -> KResult {
    loop {
        ctx.check_deadline(|| format!("an iteration of the loop with body {:?}", body.name))?;
        let verdict = cond.call(ctx, &state)?;
        if !truth(&verdict)? {
            return Ok(state);
        }
        let count = state.len();
        let next = body.call(ctx, &state)?;
        if next.len() != count {
            return Err(fail(format!(
                "loop body {:?} returned {} values for {count} loop variables",
                body.name,
                next.len(),
            )));
        }
        state = next;
    }
}

/// The truth of input 0 as TensorFlow's If and While read a predicate: a scalar is its value
/// being nonzero; a non-scalar is whether it has elements.
pub(crate) fn truth(inputs: &[Value]) -> KResult<bool> {
    let t = tensor_input(inputs, 0)?;
    if t.rank() > 0 {
        return Ok(!t.is_empty());
    }
    Ok(match t.storage() {
        Storage::Bool(v) => v[0],
        Storage::Float32(v) => v[0] != 0.0,
        Storage::Float64(v) => v[0] != 0.0,
        Storage::Int32(v) => v[0] != 0,
        Storage::Int64(v) => v[0] != 0,
        Storage::Int8(v) => v[0] != 0,
        Storage::Int16(v) => v[0] != 0,
        Storage::UInt8(v) => v[0] != 0,
        Storage::UInt16(v) => v[0] != 0,
        Storage::Float16(v) | Storage::BFloat16(v) => v[0] & 0x7fff != 0,
        Storage::UInt32(v) => v[0] != 0,
        Storage::UInt64(v) => v[0] != 0,
        Storage::String(v) => !v[0].is_empty(),
        Storage::Complex64(_) | Storage::Complex128(_) => {
            return Err(fail(format!(
                "a {} predicate has no truth value",
                t.dtype()
            )))
        }
    })
}
