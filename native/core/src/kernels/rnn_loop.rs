//! `_SavedModelRnnLoop`: a whole recurrent loop (a While whose body is one Keras LSTM or GRU
//! step, recognized by engine::fuse_rnn) run as one kernel. Why: run step by step, each time
//! step costs a cond call and a body call of about ten kernels (outputs allocated, steps
//! dispatched), more than the arithmetic of a small cell; and the input product `x_t · W` of
//! every step does not depend on the recurrence. Here the inputs of all the steps go through
//! one matrix product before the loop (as onnxruntime's LSTM and GRU ops do), and each step
//! computes only `h · U` and the gates (rnn_gates: vectorized over the batch), in buffers
//! allocated once per call.
//!
//! The node keeps the While's inputs, outputs and attrs (`cond`, `body`), plus `_rnn_loop`
//! ([`LoopSpec`]): which loop variables are the time index, the input and output lists, the
//! states, the weights (resource handles), the counters and the cond's bounds. Anything the
//! fast path does not take (other dtypes or shapes, unset list items, an index out of range,
//! an uninitialized variable) runs the While itself, so results and errors stay its own.

use std::sync::Arc;

use crate::dtype::DType;
use crate::engine::attrs::Attrs;
use crate::engine::kernel::{KResult, Kernel, NodeSpec, Registry};
use crate::engine::value::TensorList;
use crate::engine::{RunContext, Value};
use crate::kernels::rnn::{matmul, small_product};
use crate::kernels::rnn_gates::{gru_step, lstm_step};
use crate::protos::attr_value::{ListValue, Value as A};
use crate::protos::AttrValue;
use crate::tensor::Tensor;

/// The fused op's name (internal: docs/ops.md leaves out names starting with `_`).
pub const RNN_LOOP: &str = "_SavedModelRnnLoop";

/// The attr holding the [`LoopSpec`].
pub const LOOP_ATTR: &str = "_rnn_loop";

pub fn register(r: &mut Registry) {
    if r.contains("While") {
        r.add_stateful(RNN_LOOP, rnn_loop);
    }
}

/// The cell a loop body computes (Keras's default activations: sigmoid gates, tanh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// `z = x·W + h·U + b`; i, f, g, o = split(z, 4); `c' = σ(f)c + σ(i)tanh(g)`,
    /// `h' = σ(o)tanh(c')`.
    Lstm,
    /// Keras's GRU with `reset_after`: bias `[2, 3u]` (input and recurrent rows);
    /// `x̂ = x·W + b₀`, `ĥ = h·U + b₁`, `z = σ(x̂_z + ĥ_z)`, `r = σ(x̂_r + ĥ_r)`,
    /// `n = tanh(x̂_n + r·ĥ_n)`, `h' = z·h + (1 - z)·n`.
    Gru,
}

/// What bounds a counter in the loop's cond: `counter < bound`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Const(i64),
    /// A loop variable the body passes through unchanged.
    Var(usize),
}

/// The roles of the loop variables (indices into the While's inputs and outputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopSpec {
    pub cell: Cell,
    /// The step index the body reads the input list at (one of `counters`).
    pub time: usize,
    /// The list of per-step inputs `[n, k]`, passed through unchanged.
    pub inputs: usize,
    /// The hidden state `[n, u]`, replaced by the cell's new one.
    pub hidden: usize,
    /// The LSTM's cell state `[n, u]`.
    pub state: Option<usize>,
    /// The list each step's hidden state is written into.
    pub outputs: usize,
    /// Where it is written: a constant index, or (None) the time index.
    pub write_at: Option<usize>,
    /// The number of units the body's constants assume (a GRU slices its recurrent product
    /// at multiples of it), if any.
    pub units: Option<usize>,
    /// Resource handles of the kernel, recurrent kernel and bias.
    pub weights: [usize; 3],
    /// Loop variables the body increments by one (int32 scalars).
    pub counters: Vec<usize>,
    /// The cond: every `counter < bound` holds.
    pub bounds: Vec<(usize, Bound)>,
}

impl LoopSpec {
    /// The spec as one list-of-ints attr.
    pub fn to_attr(&self) -> AttrValue {
        let opt = |o: Option<usize>| o.map_or(-1, |v| v as i64);
        let mut v = vec![
            match self.cell {
                Cell::Lstm => 0,
                Cell::Gru => 1,
            },
            self.time as i64,
            self.inputs as i64,
            self.hidden as i64,
            opt(self.state),
            self.outputs as i64,
            opt(self.write_at),
            opt(self.units),
        ];
        v.extend(self.weights.iter().map(|&w| w as i64));
        v.push(self.counters.len() as i64);
        v.extend(self.counters.iter().map(|&c| c as i64));
        v.push(self.bounds.len() as i64);
        for &(var, bound) in &self.bounds {
            let (kind, value) = match bound {
                Bound::Const(c) => (0, c),
                Bound::Var(j) => (1, j as i64),
            };
            v.extend([var as i64, kind, value]);
        }
        AttrValue {
            value: Some(A::List(Box::new(ListValue {
                i: v,
                ..Default::default()
            }))),
        }
    }

    /// Reads the spec back; `arity` is the number of loop variables (every index below it).
    pub fn from_attrs(attrs: &Attrs, arity: usize) -> Result<Self, String> {
        let v = attrs.ints(LOOP_ATTR)?;
        let bad = || format!("attr {LOOP_ATTR:?} is malformed: {v:?}");
        let cell = match v.first() {
            Some(0) => Cell::Lstm,
            Some(1) => Cell::Gru,
            _ => return Err(bad()),
        };
        let mut cursor = Cursor {
            v: &v,
            at: 1,
            arity,
        };
        let time = cursor.index().ok_or_else(bad)?;
        let inputs = cursor.index().ok_or_else(bad)?;
        let hidden = cursor.index().ok_or_else(bad)?;
        let state = cursor.optional().ok_or_else(bad)?;
        let outputs = cursor.index().ok_or_else(bad)?;
        let write_at = match cursor.next().ok_or_else(bad)? {
            -1 => None,
            x => Some(usize::try_from(x).map_err(|_| bad())?),
        };
        let units = match cursor.next().ok_or_else(bad)? {
            -1 => None,
            x => Some(usize::try_from(x).map_err(|_| bad())?),
        };
        let weights = [
            cursor.index().ok_or_else(bad)?,
            cursor.index().ok_or_else(bad)?,
            cursor.index().ok_or_else(bad)?,
        ];
        let count = cursor.count().ok_or_else(bad)?;
        let counters = (0..count)
            .map(|_| cursor.index().ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        let count = cursor.count().ok_or_else(bad)?;
        let mut bounds = Vec::with_capacity(count);
        for _ in 0..count {
            let var = cursor.index().ok_or_else(bad)?;
            let bound = match cursor.next().ok_or_else(bad)? {
                0 => Bound::Const(cursor.next().ok_or_else(bad)?),
                1 => Bound::Var(cursor.index().ok_or_else(bad)?),
                _ => return Err(bad()),
            };
            bounds.push((var, bound));
        }
        if cursor.at != v.len() || (cell == Cell::Lstm) != state.is_some() {
            return Err(bad());
        }
        Ok(Self {
            cell,
            time,
            inputs,
            hidden,
            state,
            outputs,
            write_at,
            units,
            weights,
            counters,
            bounds,
        })
    }
}

/// Reads a spec's ints in order.
struct Cursor<'a> {
    v: &'a [i64],
    at: usize,
    arity: usize,
}

impl Cursor<'_> {
    fn next(&mut self) -> Option<i64> {
        let x = *self.v.get(self.at)?;
        self.at += 1;
        Some(x)
    }

    fn index(&mut self) -> Option<usize> {
        usize::try_from(self.next()?)
            .ok()
            .filter(|&i| i < self.arity)
    }

    fn optional(&mut self) -> Option<Option<usize>> {
        match self.next()? {
            -1 => Some(None),
            x => usize::try_from(x)
                .ok()
                .filter(|&i| i < self.arity)
                .map(Some),
        }
    }

    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.next()?)
            .ok()
            .filter(|&c| c <= self.arity)
    }
}

struct RnnLoop {
    spec: LoopSpec,
    /// The While the node was: what runs whatever the fast path does not take.
    fallback: Box<dyn Kernel>,
}

fn rnn_loop(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = LoopSpec::from_attrs(&node.attrs, node.num_inputs)?;
    let registry = crate::kernels::registry();
    let info = registry
        .get("While")
        .ok_or("no kernel for While, which the recurrent loop falls back to")?;
    let fallback = (info.factory)(&NodeSpec {
        name: node.name,
        op: "While",
        attrs: Attrs::new(node.attrs.map()),
        num_inputs: node.num_inputs,
    })?;
    Ok(Box::new(RnnLoop { spec, fallback }))
}

impl Kernel for RnnLoop {
    fn run(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        ctx.check_deadline(|| "a recurrent loop".to_string())?;
        if let Some(outputs) = self.fast(inputs) {
            return Ok(outputs);
        }
        self.fallback.run(ctx, inputs)
    }
}

/// An int32 scalar loop variable.
fn scalar(v: &Value) -> Option<i32> {
    match v {
        Value::Tensor(t) if t.rank() == 0 => t.values::<i32>()?.first().copied(),
        _ => None,
    }
}

fn float_tensor(v: &Value) -> Option<&Arc<Tensor>> {
    match v {
        Value::Tensor(t) if t.dtype() == DType::Float32 => Some(t),
        _ => None,
    }
}

/// A float32 variable's value, read through its handle as ReadVariableOp would.
fn variable(v: &Value) -> Option<Arc<Tensor>> {
    match v {
        Value::Resource(r) => r
            .as_variable()?
            .read()
            .ok()?
            .filter(|t| t.dtype() == DType::Float32),
        _ => None,
    }
}

fn float_list(v: &Value) -> Option<&Arc<TensorList>> {
    match v {
        Value::List(l) if l.element_dtype == DType::Float32 => Some(l),
        _ => None,
    }
}

/// Whether a list's partial element shape admits `shape` (as TensorListSetItem checks).
fn admits(partial: &Option<Vec<i64>>, shape: &[usize]) -> bool {
    match partial {
        None => true,
        Some(p) => {
            p.len() == shape.len() && p.iter().zip(shape).all(|(&a, &d)| a < 0 || a == d as i64)
        }
    }
}

/// The loop's state as the fast path reads it.
struct Run<'a> {
    steps: usize,
    start: usize,
    /// Every step's input, `[steps · n, k]`.
    x: Tensor,
    n: usize,
    k: usize,
    units: usize,
    out_list: &'a TensorList,
    weights: [Arc<Tensor>; 3],
    /// Every step writes the same list item.
    constant: bool,
}

impl RnnLoop {
    /// The loop's outputs, or None when the While should run instead.
    fn fast(&self, inputs: &[Value]) -> Option<Vec<Value>> {
        let s = &self.spec;
        let run = self.prepare(inputs)?;
        let h0 = float_tensor(inputs.get(s.hidden)?)?;
        let (mut hidden, mut cell_state) = (h0.values::<f32>()?.to_vec(), Vec::new());
        let written = match s.cell {
            Cell::Lstm => {
                let c0 = float_tensor(inputs.get(s.state?)?)?;
                if c0.shape() != [run.n, run.units] {
                    return None;
                }
                cell_state = c0.values::<f32>()?.to_vec();
                lstm(&run, &mut hidden, &mut cell_state)?
            }
            Cell::Gru => gru(&run, &mut hidden)?,
        };
        let mut out = inputs.to_vec();
        for &c in &s.counters {
            let v = scalar(&inputs[c])?.checked_add(i32::try_from(run.steps).ok()?)?;
            out[c] = Value::tensor(Tensor::scalar(v));
        }
        // Value semantics: the input list stays as it was. Its items are shared tensors, so the
        // copy is one pointer per item; a constant write index (Keras without return_sequences)
        // comes with a list of one item.
        let mut list = run.out_list.clone();
        for (step, h) in written {
            let at = s.write_at.unwrap_or(run.start + step);
            *list.items.get_mut(at)? = Some(h);
        }
        out[s.outputs] = Value::List(Arc::new(list));
        if run.steps > 0 {
            let shape = vec![run.n, run.units];
            out[s.hidden] = Value::tensor(Tensor::from_vec(shape.clone(), hidden));
            if let Some(c) = s.state {
                out[c] = Value::tensor(Tensor::from_vec(shape, cell_state));
            }
        }
        Some(out)
    }

    /// How many steps run, and their inputs and weights, if the fast path takes them.
    fn prepare<'a>(&self, inputs: &'a [Value]) -> Option<Run<'a>> {
        let s = &self.spec;
        if inputs.len() <= s.counters.iter().chain(&s.weights).copied().max()? {
            return None;
        }
        let mut steps = i64::MAX;
        for &(var, bound) in &s.bounds {
            let limit = match bound {
                Bound::Const(c) => c,
                Bound::Var(j) => i64::from(scalar(inputs.get(j)?)?),
            };
            steps = steps.min(limit - i64::from(scalar(inputs.get(var)?)?));
        }
        for &c in &s.counters {
            scalar(inputs.get(c)?)?;
        }
        let steps = usize::try_from(steps.max(0)).ok()?;
        let start = usize::try_from(scalar(inputs.get(s.time)?)?).ok()?;
        let in_list = float_list(inputs.get(s.inputs)?)?;
        let out_list = float_list(inputs.get(s.outputs)?)?;
        let h0 = float_tensor(inputs.get(s.hidden)?)?;
        let &[n, units] = h0.shape() else {
            return None;
        };
        if units == 0 || s.units.is_some_and(|u| u != units) {
            return None;
        }
        let weights = [
            variable(inputs.get(s.weights[0])?)?,
            variable(inputs.get(s.weights[1])?)?,
            variable(inputs.get(s.weights[2])?)?,
        ];
        let &[k, _] = weights[0].shape() else {
            return None;
        };
        let end = start.checked_add(steps)?;
        let last_write = match s.write_at {
            Some(at) => at,
            None => end.saturating_sub(1),
        };
        if end > in_list.items.len()
            || (steps > 0 && last_write >= out_list.items.len())
            || !admits(&out_list.element_shape, &[n, units])
        {
            return None;
        }
        let mut x = Vec::with_capacity(steps.checked_mul(n)?.checked_mul(k)?);
        for item in &in_list.items[start..end] {
            let item = item.as_ref()?;
            if item.shape() != [n, k] {
                return None;
            }
            x.extend_from_slice(item.values::<f32>()?);
        }
        Some(Run {
            steps,
            start,
            x: Tensor::from_vec(vec![steps * n, k], x),
            n,
            k,
            units,
            out_list,
            weights,
            constant: s.write_at.is_some(),
        })
    }
}

/// What a loop writes into its output list: each step's hidden state, by step.
type Written = Vec<(usize, Arc<Tensor>)>;

/// Each step's hidden state as a list item; with a constant write index only the last is
/// kept (every step overwrites the same item).
fn keep(written: &mut Written, step: usize, run: &Run, h: &[f32]) {
    if run.constant && step + 1 < run.steps {
        return;
    }
    let item = Tensor::from_vec(vec![run.n, run.units], h.to_vec());
    written.push((step, Arc::new(item)));
}

/// `[rows, k] × [k, cols]` of the weights' shapes, None unless they fit.
fn input_product(run: &Run, gates: usize) -> Option<Vec<f32>> {
    let w = &run.weights[0];
    if w.shape() != [run.k, gates] {
        return None;
    }
    let rows = run.steps * run.n;
    matmul(
        &run.x,
        w,
        run.x.values()?,
        w.values()?,
        [rows, run.k, gates],
    )
}

/// `h · U` into `out` (`[n, cols]`).
fn recurrent_product(h: &[f32], u: &Tensor, n: usize, out: &mut [f32]) -> Option<()> {
    let &[units, cols] = u.shape() else {
        return None;
    };
    let uv = u.values::<f32>()?;
    if n * units * cols > crate::kernels::rnn::SMALL_PRODUCT {
        let ht = Tensor::from_vec(vec![n, units], h.to_vec());
        let p = matmul(&ht, u, h, uv, [n, units, cols])?;
        out.copy_from_slice(&p);
        return Some(());
    }
    small_product(h, uv, units, cols, out);
    Some(())
}

/// The loop both cells share: checks the recurrent kernel (`[units, gates]`) and the bias
/// (`bias_shape`), computes every step's input product at once, then for each step `h · U` and
/// `cell([x·W, h·U, bias], hidden, scratch)` over the whole batch, and keeps what the output
/// list receives.
fn for_each_step(
    run: &Run,
    hidden: &mut [f32],
    gates: usize,
    bias_shape: &[usize],
    mut cell: impl FnMut([&[f32]; 3], &mut [f32], &mut Vec<f32>) -> Option<()>,
) -> Option<Written> {
    let n = run.n;
    let [_, u, b] = &run.weights;
    if u.shape() != [run.units, gates] || b.shape() != bias_shape {
        return None;
    }
    let bias = b.values::<f32>()?;
    let xw = input_product(run, gates)?;
    let (mut hu, mut planar) = (vec![0f32; n * gates], Vec::new());
    let mut written = Written::new();
    for step in 0..run.steps {
        recurrent_product(hidden, u, n, &mut hu)?;
        let xw_step = xw.get(step * n * gates..(step + 1) * n * gates)?;
        cell([xw_step, &hu, bias], hidden, &mut planar)?;
        keep(&mut written, step, run, hidden);
    }
    Some(written)
}

fn lstm(run: &Run, hidden: &mut [f32], state: &mut [f32]) -> Option<Written> {
    let units = run.units;
    let gates = 4 * units;
    for_each_step(run, hidden, gates, &[gates], |step, h, planar| {
        lstm_step(units, step, state, h, planar)
    })
}

fn gru(run: &Run, hidden: &mut [f32]) -> Option<Written> {
    let gates = 3 * run.units;
    for_each_step(run, hidden, gates, &[2, gates], |step, h, planar| {
        gru_step(run.units, step, h, planar)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_spec_reads_back_as_written() {
        let spec = LoopSpec {
            cell: Cell::Lstm,
            time: 2,
            inputs: 6,
            hidden: 4,
            state: Some(5),
            outputs: 3,
            write_at: Some(0),
            units: None,
            weights: [7, 8, 9],
            counters: vec![0, 2],
            bounds: vec![(0, Bound::Var(1)), (2, Bound::Const(6))],
        };
        let mut attrs = std::collections::HashMap::new();
        attrs.insert(LOOP_ATTR.to_string(), spec.to_attr());
        assert_eq!(LoopSpec::from_attrs(&Attrs::new(&attrs), 10), Ok(spec));
        // An index past the loop variables is an error, not a panic later.
        assert!(LoopSpec::from_attrs(&Attrs::new(&attrs), 8).is_err());
    }
}
