//! Function calls and control flow v2: PartitionedCall, If, Case and While run library
//! functions through the context, which compiles each once and bounds how deep calls nest.

use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
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

/// A node whose op is a library function's name.
pub fn direct_call(function: &str) -> Box<dyn Kernel> {
    let name = function.to_string();
    boxed(move |ctx, inputs| ctx.call(&name, inputs))
}

fn call(node: &NodeSpec) -> Made {
    Ok(direct_call(&node.attrs.func("f")?.name))
}

fn if_op(node: &NodeSpec) -> Made {
    let then_branch = node.attrs.func("then_branch")?.name.clone();
    let else_branch = node.attrs.func("else_branch")?.name.clone();
    Ok(boxed(move |ctx, inputs| {
        let branch = if truth(inputs)? {
            &then_branch
        } else {
            &else_branch
        };
        ctx.call(branch, &inputs[1..])
    }))
}

fn case(node: &NodeSpec) -> Made {
    let branches: Vec<String> = node
        .attrs
        .funcs("branches")?
        .iter()
        .map(|f| f.name.clone())
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
        ctx.call(&branches[chosen], &inputs[1..])
    }))
}

fn while_op(node: &NodeSpec) -> Made {
    let cond = node.attrs.func("cond")?.name.clone();
    let body = node.attrs.func("body")?.name.clone();
    Ok(boxed(move |ctx, inputs| {
        run_while(ctx, &cond, &body, inputs.to_vec())
    }))
}

fn run_while(ctx: &RunContext, cond: &str, body: &str, mut state: Vec<Value>) -> KResult {
    loop {
        ctx.check_deadline(&format!("an iteration of the loop with body {body:?}"))?;
        let verdict = ctx.call(cond, &state)?;
        if !truth(&verdict)? {
            return Ok(state);
        }
        let next = ctx.call(body, &state)?;
        if next.len() != state.len() {
            return Err(fail(format!(
                "loop body {body:?} returned {} values for {} loop variables",
                next.len(),
                state.len()
            )));
        }
        state = next;
    }
}

/// The truth of input 0 as TensorFlow's If and While read a predicate: a scalar is its value
/// being nonzero; a non-scalar is whether it has elements.
fn truth(inputs: &[Value]) -> KResult<bool> {
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
