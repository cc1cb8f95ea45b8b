//! Constants, placeholders, identities, and state: resource variables (VarHandleOp and the
//! ops on its handle), TensorFlow 1 reference variables (VariableV2, Assign), and RestoreV2,
//! through which TensorFlow 1 savers restore them.

use std::path::Path;
use std::sync::Arc;

use crate::bundle::BundleReader;
use crate::engine::kernel::{
    boxed, fail, one, resource_input, tensor_input, KResult, Kernel, NodeSpec, Registry,
};
use crate::engine::value::Resource;
use crate::engine::Value;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Const", constant);
    for op in [
        "Identity",
        "StopGradient",
        "Snapshot",
        "PreventGradient",
        "IdentityN",
    ] {
        r.add(op, identity);
    }
    r.add_stateful("NoOp", no_op);
    r.add("Placeholder", placeholder);
    r.add("PlaceholderWithDefault", identity);
    r.add_stateful("VarHandleOp", var_handle);
    r.add_stateful("ReadVariableOp", read_variable);
    r.add_stateful("AssignVariableOp", assign_variable);
    r.add_stateful("AssignAddVariableOp", |n| assign_update(n, Update::Add));
    r.add_stateful("AssignSubVariableOp", |n| assign_update(n, Update::Sub));
    r.add_stateful("VarIsInitializedOp", var_is_initialized);
    r.add_stateful("DisableCopyOnRead", no_op);
    r.add_stateful("VariableV2", variable_v2);
    r.add_stateful("Assign", assign_ref);
    r.add_stateful("AssignAdd", |n| assign_ref_update(n, Update::Add));
    r.add_stateful("AssignSub", |n| assign_ref_update(n, Update::Sub));
    r.add_stateful("RestoreV2", restore_v2);
}

type Made = Result<Box<dyn Kernel>, String>;

fn constant(node: &NodeSpec) -> Made {
    let value = Value::tensor(node.attrs.tensor("value")?);
    Ok(boxed(move |_, _| Ok(vec![value.clone()])))
}

fn identity(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| Ok(inputs.to_vec())))
}

fn no_op(_: &NodeSpec) -> Made {
    Ok(boxed(|_, _| Ok(Vec::new())))
}

fn placeholder(node: &NodeSpec) -> Made {
    let name = node.name.to_string();
    Ok(boxed(move |_, _| {
        Err(fail(format!("placeholder {name:?} must be fed")))
    }))
}

/// (container, shared name) of a handle op; an empty shared name means the node's own name.
fn resource_name(node: &NodeSpec) -> Result<(String, String), String> {
    let container = node.attrs.string_or("container", "")?.to_string();
    let shared = node.attrs.string_or("shared_name", "")?;
    let shared = if shared.is_empty() { node.name } else { shared };
    Ok((container, shared.to_string()))
}

fn var_handle(node: &NodeSpec) -> Made {
    let (container, shared) = resource_name(node)?;
    let dtype = node.attrs.dtype("dtype").ok();
    Ok(boxed(move |ctx, _| {
        Ok(vec![Value::Resource(
            ctx.resources.variable(&container, &shared, dtype),
        )])
    }))
}

fn variable_v2(node: &NodeSpec) -> Made {
    let (container, shared) = resource_name(node)?;
    let dtype = node.attrs.dtype("dtype").ok();
    Ok(boxed(move |ctx, _| {
        Ok(vec![Value::Ref(
            ctx.resources.variable(&container, &shared, dtype),
        )])
    }))
}

fn variable_of(inputs: &[Value]) -> KResult<(&Resource, &crate::engine::value::Variable)> {
    let handle = resource_input(inputs, 0)?;
    let variable = handle
        .as_variable()
        .ok_or_else(|| fail(format!("resource {} is not a variable", handle.name())))?;
    Ok((handle, variable))
}

fn read_variable(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let (handle, variable) = variable_of(inputs)?;
        let value = variable
            .read()?
            .ok_or_else(|| fail(format!("variable {} is not initialized", handle.name())))?;
        Ok(vec![Value::Tensor(value)])
    }))
}

fn assign_variable(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let (handle, variable) = variable_of(inputs)?;
        let value = tensor_input(inputs, 1)?;
        check_dtype(handle, variable.dtype, &value)?;
        variable.assign(value);
        Ok(Vec::new())
    }))
}

fn check_dtype(handle: &Resource, dtype: Option<crate::DType>, value: &Tensor) -> KResult<()> {
    match dtype {
        Some(d) if d != value.dtype() => Err(fail(format!(
            "variable {} holds {d}, cannot assign a {} value",
            handle.name(),
            value.dtype()
        ))),
        _ => Ok(()),
    }
}

#[derive(Clone, Copy)]
enum Update {
    Add,
    Sub,
}

fn assign_update(_: &NodeSpec, how: Update) -> Made {
    Ok(boxed(move |_, inputs| {
        let (handle, variable) = variable_of(inputs)?;
        let delta = tensor_input(inputs, 1)?;
        variable.update(|old| {
            let old =
                old.ok_or_else(|| fail(format!("variable {} is not initialized", handle.name())))?;
            updated(old, &delta, how).map(Arc::new)
        })?;
        Ok(Vec::new())
    }))
}

fn assign_ref_update(_: &NodeSpec, how: Update) -> Made {
    Ok(boxed(move |_, inputs| {
        let (handle, variable) = variable_of(inputs)?;
        let delta = tensor_input(inputs, 1)?;
        variable.update(|old| {
            let old =
                old.ok_or_else(|| fail(format!("variable {} is not initialized", handle.name())))?;
            updated(old, &delta, how).map(Arc::new)
        })?;
        Ok(vec![inputs[0].clone()])
    }))
}

/// `old + delta` (or minus) for same-shaped tensors of one numeric dtype.
fn updated(old: &Tensor, delta: &Tensor, how: Update) -> KResult<Tensor> {
    if old.shape() != delta.shape() || old.dtype() != delta.dtype() {
        return Err(fail(format!(
            "cannot update a {} variable of shape {:?} by a {} value of shape {:?}",
            old.dtype(),
            old.shape(),
            delta.dtype(),
            delta.shape()
        )));
    }
    macro_rules! apply {
        ($a:expr, $b:expr, $variant:ident, $add:expr, $sub:expr) => {{
            let values = $a
                .iter()
                .zip($b.iter())
                .map(|(&x, &y)| match how {
                    Update::Add => $add(x, y),
                    Update::Sub => $sub(x, y),
                })
                .collect();
            Storage::$variant(values)
        }};
    }
    let storage = match (old.storage(), delta.storage()) {
        (Storage::Float32(a), Storage::Float32(b)) => {
            apply!(a, b, Float32, |x, y| x + y, |x, y| x - y)
        }
        (Storage::Float64(a), Storage::Float64(b)) => {
            apply!(a, b, Float64, |x, y| x + y, |x, y| x - y)
        }
        (Storage::Int32(a), Storage::Int32(b)) => {
            apply!(a, b, Int32, i32::wrapping_add, i32::wrapping_sub)
        }
        (Storage::Int64(a), Storage::Int64(b)) => {
            apply!(a, b, Int64, i64::wrapping_add, i64::wrapping_sub)
        }
        _ => return Err(fail(format!("cannot add to a {} variable", old.dtype()))),
    };
    Tensor::new(old.shape().to_vec(), storage).ok_or_else(|| fail("element count mismatch"))
}

fn var_is_initialized(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let (_, variable) = variable_of(inputs)?;
        one(Tensor::scalar(variable.read()?.is_some()))
    }))
}

fn assign_ref(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let (handle, variable) = variable_of(inputs)?;
        let value = tensor_input(inputs, 1)?;
        check_dtype(handle, variable.dtype, &value)?;
        variable.assign(value);
        Ok(vec![inputs[0].clone()])
    }))
}

/// RestoreV2(prefix, tensor_names, shape_and_slices): whole tensors from a checkpoint the
/// model may read (runtime file access), one output per name.
fn restore_v2(_: &NodeSpec) -> Made {
    Ok(boxed(|ctx, inputs| {
        let prefix = scalar_string(&*tensor_input(inputs, 0)?, "prefix")?;
        let names = tensor_input(inputs, 1)?;
        let slices = tensor_input(inputs, 2)?;
        let names = names
            .string_values()
            .ok_or_else(|| fail("tensor_names must be strings"))?;
        let slices = slices
            .string_values()
            .ok_or_else(|| fail("shape_and_slices must be strings"))?;
        if slices.iter().any(|s| !s.is_empty()) {
            return Err(fail("restoring slices of tensors is not supported"));
        }
        let index = format!("{prefix}.index");
        ctx.files.readable(&index, "RestoreV2")?;
        let reader = BundleReader::open(Path::new(&prefix)).map_err(|e| fail(e.to_string()))?;
        names
            .iter()
            .map(|name| {
                let key = String::from_utf8_lossy(name);
                reader
                    .read(&key)
                    .map(Value::tensor)
                    .map_err(|e| fail(e.to_string()))
            })
            .collect()
    }))
}

fn scalar_string(t: &Tensor, what: &str) -> KResult<String> {
    match t.string_values() {
        Some([s]) => Ok(String::from_utf8_lossy(s).into_owned()),
        _ => Err(fail(format!("{what} must be a string scalar"))),
    }
}
