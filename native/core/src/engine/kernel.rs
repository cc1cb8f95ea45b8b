//! The kernel interface: one factory per op, called once per node when a plan is compiled (it
//! reads and checks the node's attrs then), returning a kernel that runs the node on each call.

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::value::Value;
use crate::error::Error;
use crate::tensor::Tensor;

/// What a kernel's run returns: its outputs, or an error (usually [`fail`]'s message, which the
/// executor prefixes with the node, op and function).
pub type KResult<T = Vec<Value>> = std::result::Result<T, Error>;

/// A compiled node.
pub trait Kernel: Send + Sync {
    fn run(&self, ctx: &RunContext, inputs: &[Value]) -> KResult;

    /// `run`, called by a plan with inputs it no longer holds itself: where an input's `Arc`
    /// is the only reference left, a kernel whose output is that input's buffer (a reshape)
    /// may change it in place instead of copying it.
    fn run_owned(&self, ctx: &RunContext, inputs: &mut [Value]) -> KResult {
        self.run(ctx, inputs)
    }

    /// Offered once, when the plan is compiled, for a constant input that this kernel alone
    /// reads (`input` is its position): a kernel that keeps the value in a form of its own
    /// (weights packed for its products) returns true, and from then on ignores what it is
    /// passed at `input`, since the plan drops its copy of the constant. Without this, a
    /// prepared copy would sit beside the plan's, doubling the memory of the weights.
    fn absorb(&mut self, _input: usize, _value: &Value) -> bool {
        false
    }
}

impl<F> Kernel for F
where
    F: Fn(&RunContext, &[Value]) -> KResult + Send + Sync,
{
    fn run(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        self(ctx, inputs)
    }
}

/// The node a factory compiles: its name, op, attrs and how many data inputs it has.
pub struct NodeSpec<'a> {
    pub name: &'a str,
    pub op: &'a str,
    pub attrs: Attrs<'a>,
    pub num_inputs: usize,
}

/// Makes the kernel of one node; an error is a message about the node's attrs or inputs.
pub type Factory = fn(&NodeSpec) -> std::result::Result<Box<dyn Kernel>, String>;

/// Properties of an op that the compiler needs beyond its kernel.
#[derive(Clone, Copy)]
pub struct OpInfo {
    pub factory: Factory,
    /// Changes or reads state, or has effects: never folded, and run in a function body even
    /// when nothing uses its outputs.
    pub stateful: bool,
}

/// Every op the native engine has a kernel for.
#[derive(Default)]
pub struct Registry {
    ops: HashMap<&'static str, OpInfo>,
}

impl Registry {
    /// Registers a stateless op (its outputs depend only on its inputs and attrs).
    pub fn add(&mut self, op: &'static str, factory: Factory) {
        self.ops.insert(
            op,
            OpInfo {
                factory,
                stateful: false,
            },
        );
    }

    /// Registers an op that touches state or has effects.
    pub fn add_stateful(&mut self, op: &'static str, factory: Factory) {
        self.ops.insert(
            op,
            OpInfo {
                factory,
                stateful: true,
            },
        );
    }

    pub fn get(&self, op: &str) -> Option<&OpInfo> {
        self.ops.get(op)
    }

    pub fn contains(&self, op: &str) -> bool {
        self.ops.contains_key(op)
    }

    /// A copy without `op` (what a plan compiles to when a fused op does not exist).
    pub fn without(&self, op: &str) -> Registry {
        Registry {
            ops: self
                .ops
                .iter()
                .filter(|(name, _)| **name != op)
                .map(|(name, info)| (*name, *info))
                .collect(),
        }
    }

    /// The op names, sorted (for documentation and `--help`).
    pub fn op_names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.ops.keys().copied().collect();
        names.sort_unstable();
        names
    }
}

/// A kernel failure with `detail` as its message.
pub fn fail(detail: impl Into<String>) -> Error {
    Error::Run {
        detail: detail.into(),
    }
}

/// Input `i` as a tensor: a reference variable's output reads its current value.
pub fn tensor_input(inputs: &[Value], i: usize) -> KResult<Arc<Tensor>> {
    match inputs.get(i) {
        Some(Value::Tensor(t)) => Ok(t.clone()),
        Some(Value::Ref(r)) => r
            .as_variable()
            .map_or(Ok(None), |v| v.read())?
            .ok_or_else(|| {
                fail(format!(
                    "input {i}: variable {} is not initialized",
                    r.name()
                ))
            }),
        Some(Value::Resource(_)) => Err(fail(format!(
            "input {i} is a resource handle, expected a tensor"
        ))),
        Some(other @ (Value::List(_) | Value::Variant(_) | Value::VariantList(_))) => Err(fail(
            format!("input {i} is a {}, expected a tensor", other.describe()),
        )),
        None => Err(fail(format!("missing input {i}"))),
    }
}

/// Input `i` as a resource handle.
pub fn resource_input(inputs: &[Value], i: usize) -> KResult<&crate::engine::value::Resource> {
    match inputs.get(i) {
        Some(Value::Resource(r) | Value::Ref(r)) => Ok(r),
        Some(other) => Err(fail(format!(
            "input {i} is a {}, expected a resource",
            other.describe()
        ))),
        None => Err(fail(format!("missing input {i}"))),
    }
}

/// Input `i` as a slice of `T`, with an error naming the dtype it has instead.
pub fn typed<T: crate::tensor::Element>(t: &Tensor, what: &str) -> KResult<Vec<T>> {
    t.values::<T>()
        .map(<[T]>::to_vec)
        .ok_or_else(|| fail(format!("{what} must be {}, got {}", T::DTYPE, t.dtype())))
}

/// One output.
pub fn one(t: Tensor) -> KResult {
    Ok(vec![Value::tensor(t)])
}

/// Wraps a kernel closure, for factories: `Ok(boxed(move |ctx, inputs| ...))`.
pub fn boxed<F>(f: F) -> Box<dyn Kernel>
where
    F: Fn(&RunContext, &[Value]) -> KResult + Send + Sync + 'static,
{
    Box::new(f)
}
