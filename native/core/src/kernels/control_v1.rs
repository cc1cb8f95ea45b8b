//! TensorFlow 1 control flow (Enter, Exit, Merge, Switch, NextIteration, LoopCond,
//! ControlTrigger) and Assert.
//!
//! The frame ops route values between frames and iterations, which only the frame executor
//! (engine::frames) can do: a plan with any of them runs there, and the executor routes
//! them itself. Their kernels here serve a node run on its own (outside any graph), where
//! there is one frame and nothing is dead: Enter, Exit, NextIteration and LoopCond pass
//! their input on, Merge outputs its first input and index 0, and Switch, whose untaken
//! output would be dead, is an error. They are registered stateful so that no compile pass
//! folds them (a folded Enter would leave its loop).

use std::sync::Arc;

use crate::engine::kernel::{boxed, fail, tensor_input, NodeSpec};
use crate::engine::{Registry, Value};
use crate::tensor::{Storage, Tensor};

type Made = Result<Box<dyn crate::engine::Kernel>, String>;

pub fn register(r: &mut Registry) {
    for op in [
        "Enter",
        "RefEnter",
        "Exit",
        "RefExit",
        "NextIteration",
        "RefNextIteration",
        "LoopCond",
    ] {
        r.add_stateful(op, pass_on);
    }
    r.add_stateful("Merge", merge);
    r.add_stateful("RefMerge", merge);
    r.add_stateful("Switch", switch);
    r.add_stateful("RefSwitch", switch);
    r.add_stateful("ControlTrigger", control_trigger);
    r.add_stateful("Assert", assert);
}

fn pass_on(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        inputs
            .first()
            .cloned()
            .map(|v| vec![v])
            .ok_or_else(|| fail("missing input 0"))
    }))
}

fn merge(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let first = inputs
            .first()
            .cloned()
            .ok_or_else(|| fail("Merge needs at least one input"))?;
        Ok(vec![first, Value::tensor(Tensor::scalar(0i32))])
    }))
}

fn switch(_: &NodeSpec) -> Made {
    Ok(boxed(|_, _| {
        Err(fail(
            "Switch routes a value between the branches of a graph's control flow; it runs \
             only as part of a graph",
        ))
    }))
}

fn control_trigger(_: &NodeSpec) -> Made {
    Ok(boxed(|_, _| Ok(Vec::new())))
}

/// Assert: fails, when the condition is false, with TensorFlow's message: `assertion failed:`
/// and each data tensor's first `summarize` elements in brackets.
fn assert(node: &NodeSpec) -> Made {
    let summarize = node.attrs.int_or("summarize", 3)?;
    let summarize = usize::try_from(summarize).unwrap_or(usize::MAX);
    Ok(boxed(move |_, inputs| {
        let condition = tensor_input(inputs, 0)?;
        let holds = match (condition.storage(), condition.len()) {
            (Storage::Bool(v), 1) => v[0],
            _ => {
                return Err(fail(format!(
                    "In[0] expects a boolean scalar, got a {} tensor of shape {:?}",
                    condition.dtype(),
                    condition.shape()
                )))
            }
        };
        if holds {
            return Ok(Vec::new());
        }
        let mut parts = Vec::with_capacity(inputs.len().saturating_sub(1));
        for i in 1..inputs.len() {
            parts.push(format!(
                "[{}]",
                summary(&tensor_input(inputs, i)?, summarize)
            ));
        }
        Err(fail(format!("assertion failed: {}", parts.join(" "))))
    }))
}

/// TensorFlow's summary of a tensor's first `limit` elements: space-separated, each inner
/// row in brackets, `...` where it stops short (Assert's and Print's format).
fn summary(t: &Arc<Tensor>, limit: usize) -> String {
    let limit = limit.min(t.len());
    let items: Vec<String> = match t.storage() {
        Storage::String(v) => v
            .iter()
            .take(limit)
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        Storage::Bool(v) => v.iter().take(limit).map(|b| b.to_string()).collect(),
        Storage::Float32(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::Float64(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::Int8(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::Int16(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::Int32(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::Int64(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::UInt8(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::UInt32(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        Storage::UInt64(v) => v.iter().take(limit).map(|x| x.to_string()).collect(),
        _ => return format!("<{} tensor of shape {:?}>", t.dtype(), t.shape()),
    };
    let mut out = String::new();
    if t.rank() == 0 {
        out.extend(items.first().cloned());
        return out;
    }
    let mut next = 0;
    print_dim(0, t.shape(), &items, &mut next, &mut out);
    if t.len() > items.len() {
        out.push_str("...");
    }
    out
}

/// Prints dimension `dim` of a tensor whose first elements are `items`, from `items[*next]`.
fn print_dim(dim: usize, shape: &[usize], items: &[String], next: &mut usize, out: &mut String) {
    if *next >= items.len() {
        return;
    }
    let count = shape.get(dim).copied().unwrap_or(0);
    if dim + 1 == shape.len() {
        for i in 0..count {
            let Some(item) = items.get(*next) else {
                if dim != 0 {
                    out.push_str("...");
                }
                return;
            };
            if i > 0 {
                out.push(' ');
            }
            out.push_str(item);
            *next += 1;
        }
        return;
    }
    for _ in 0..count {
        let opened = *next < items.len();
        if opened {
            out.push('[');
        }
        print_dim(dim + 1, shape, items, next, out);
        if opened {
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kernel::KResult;
    use crate::engine::library::Library;
    use crate::engine::RunContext;

    fn run(op: &str, attrs: &[(&str, crate::protos::AttrValue)], inputs: Vec<Value>) -> KResult {
        let attrs: std::collections::HashMap<String, crate::protos::AttrValue> = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let spec = NodeSpec {
            name: "n",
            op,
            attrs: crate::engine::attrs::Attrs::new(&attrs),
            num_inputs: inputs.len(),
        };
        let registry = crate::kernels::registry();
        let kernel = (registry.get(op).expect("registered").factory)(&spec).expect("factory");
        let library = Library::new(None, &[], registry.clone(), Default::default());
        let ctx: RunContext = library.context();
        kernel.run(&ctx, &inputs)
    }

    #[test]
    fn assert_passes_and_fails_with_summaries() {
        let ok = run("Assert", &[], vec![Value::tensor(Tensor::scalar(true))]);
        assert!(ok.expect("holds").is_empty());
        let data = vec![
            Value::tensor(Tensor::scalar(false)),
            Value::tensor(Tensor::strings(
                vec![],
                vec![b"Expected shape is ".to_vec()],
            )),
            Value::tensor(Tensor::from_vec(vec![4], vec![1i32, 2, 3, 4])),
            Value::tensor(Tensor::scalar(2.5f32)),
            Value::tensor(Tensor::from_vec(vec![2, 2], vec![1i64, 2, 3, 4])),
        ];
        let err = run("Assert", &[], data).expect_err("fails").to_string();
        // As TensorFlow 2.21 words it for these inputs.
        assert!(
            err.contains(
                "assertion failed: [Expected shape is ] [1 2 3...] [2.5] [[1 2][3...]...]"
            ),
            "{err}"
        );
    }

    #[test]
    fn standalone_frame_ops_pass_values_and_switch_refuses() {
        let x = Value::tensor(Tensor::scalar(1.5f32));
        let out = run("Enter", &[], vec![x.clone()]).expect("enter");
        assert_eq!(out.len(), 1);
        let err = run(
            "Switch",
            &[],
            vec![x.clone(), Value::tensor(Tensor::scalar(true))],
        );
        assert!(err.is_err());
        let merged = run("Merge", &[], vec![x]).expect("merge");
        assert_eq!(merged.len(), 2);
    }
}
