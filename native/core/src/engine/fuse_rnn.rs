//! Recognizing a Keras recurrent layer's While loop (one LSTM or GRU step per iteration) and
//! rewriting the While into one `_SavedModelRnnLoop` node (kernels::rnn_loop), which runs the
//! whole loop with the input product of every step hoisted out of it.
//!
//! The body is read as the plan compiler would simplify it (calls inlined, constants folded,
//! identities read through, the LSTM cell fused by engine::fuse_lstm) and must be exactly:
//! a TensorListGetItem of a loop-invariant list at the time index, the cell on that item, the
//! hidden (and cell) state and three ReadVariableOps of loop-invariant handles, a
//! TensorListSetItem of the new hidden state into a list at the time index or a constant,
//! counters incremented by one, and every other loop variable passed through. The cond must
//! be a conjunction of `counter < bound` (a constant, or a variable passed through). Anything
//! else, any extra node, and the While stays a While; the fused kernel itself falls back to the
//! While for inputs its fast path does not take.

use std::collections::HashSet;

use crate::engine::attrs::Attrs;
use crate::engine::graph::{function_body, Src};
use crate::engine::ir::{self, Ir, IrNode};
use crate::engine::library::Library;
use crate::engine::value::Value;
use crate::kernels::rnn::LSTM_CELL;
use crate::kernels::rnn_loop::{Bound, Cell, LoopSpec, LOOP_ATTR, RNN_LOOP};
use crate::tensor::Storage;
use crate::DType;

/// Rewrites every recognized recurrent While of `ir`.
pub fn fuse_rnn_loops(ir: &mut Ir, library: &Library) {
    if !library.registry().contains(RNN_LOOP) {
        return;
    }
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        if !matches!(node.op.as_str(), "While" | "StatelessWhile") || node.value.is_some() {
            continue;
        }
        let attrs = Attrs::new(&node.attrs);
        let (Ok(cond), Ok(body)) = (attrs.func("cond"), attrs.func("body")) else {
            continue;
        };
        let Some(spec) = match_loop(library, &cond.name, &body.name, node.inputs.len()) else {
            continue;
        };
        let node = &mut ir.nodes[i];
        node.attrs.insert(LOOP_ATTR.to_string(), spec.to_attr());
        node.op = RNN_LOOP.to_string();
    }
}

/// Function `name` as a plan would see it, before kernels are chosen.
fn simplified(library: &Library, name: &str) -> Option<Ir> {
    let def = library.function(name)?;
    let body = function_body(def, library.op_defs()).ok()?;
    let mut ir = ir::build(&body, &[], &body.rets, &[], true, library).ok()?;
    ir.inline_calls(library).ok()?;
    ir.prune();
    let order = ir.order().ok()?;
    ir.fold(&order, &library.context(), false);
    ir.skip_identities();
    ir.prune();
    crate::engine::fuse_lstm::fuse_lstm_cells(&mut ir, library.registry());
    ir.prune();
    Some(ir)
}

/// A body or cond being matched: which of its nodes the pattern has accounted for.
struct Matcher<'a> {
    ir: &'a Ir,
    used: HashSet<usize>,
}

impl<'a> Matcher<'a> {
    fn new(ir: &'a Ir) -> Self {
        Self {
            ir,
            used: HashSet::new(),
        }
    }

    /// `src` read through Identity nodes (their control inputs wait only for NoOps and
    /// variable reads, which `all_used` checks are part of the pattern or effect-free).
    fn through(&self, src: &Src) -> Src {
        let mut current = src.clone();
        for _ in 0..self.ir.nodes.len() {
            match &current {
                Src::Node(n, 0) => match self.ir.index.get(n).map(|&i| &self.ir.nodes[i]) {
                    Some(node)
                        if node.op == "Identity"
                            && node.value.is_none()
                            && node.inputs.len() == 1 =>
                    {
                        current = node.inputs[0].clone();
                    }
                    _ => break,
                },
                _ => break,
            }
        }
        current
    }

    /// The computed node `src` is output `k` of, if its op is `op` with `arity` data inputs;
    /// marks it used.
    fn node(&mut self, src: &Src, op: &str, arity: usize, k: usize) -> Option<&'a IrNode> {
        let src = self.through(src);
        let Src::Node(name, out) = &src else {
            return None;
        };
        let i = *self.ir.index.get(name)?;
        let node = &self.ir.nodes[i];
        if node.op != op || *out != k || node.value.is_some() || node.inputs.len() != arity {
            return None;
        }
        self.used.insert(i);
        Some(node)
    }

    /// [`Self::node`] of a node whose `T` is float32.
    fn float_node(&mut self, src: &Src, op: &str, arity: usize, k: usize) -> Option<&'a IrNode> {
        let node = self.node(src, op, arity, k)?;
        (Attrs::new(&node.attrs).dtype("T").ok() == Some(DType::Float32)).then_some(node)
    }

    fn arg(&self, src: &Src) -> Option<usize> {
        match self.through(src) {
            Src::Arg(i) => Some(i),
            Src::Node(..) => None,
        }
    }

    /// The value of a constant integer scalar input.
    fn int(&self, src: &Src) -> Option<i64> {
        match self.ir.known(&self.through(src))? {
            Value::Tensor(t) if t.rank() == 0 => match t.storage() {
                Storage::Int32(v) => v.first().map(|&x| i64::from(x)),
                Storage::Int64(v) => v.first().copied(),
                _ => None,
            },
            _ => None,
        }
    }

    /// The values of a constant integer vector input.
    fn ints(&self, src: &Src) -> Option<Vec<i64>> {
        match self.ir.known(&self.through(src))? {
            Value::Tensor(t) if t.rank() == 1 => match t.storage() {
                Storage::Int32(v) => Some(v.iter().map(|&x| i64::from(x)).collect()),
                Storage::Int64(v) => Some(v.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    fn float(&self, src: &Src) -> Option<f32> {
        match self.ir.known(&self.through(src))? {
            Value::Tensor(t) if t.rank() == 0 => t.values::<f32>()?.first().copied(),
            _ => None,
        }
    }

    /// The handle argument a float32 ReadVariableOp reads.
    fn read(&mut self, src: &Src) -> Option<usize> {
        let node = self.node(src, "ReadVariableOp", 1, 0)?;
        if Attrs::new(&node.attrs).dtype("dtype").ok() != Some(DType::Float32) {
            return None;
        }
        self.arg(&node.inputs[0])
    }

    /// Every computed node is part of the pattern, or an Identity or NoOp.
    fn all_used(&self) -> bool {
        self.ir.nodes.iter().enumerate().all(|(i, n)| {
            n.value.is_some()
                || self.used.contains(&i)
                || matches!(n.op.as_str(), "Identity" | "NoOp")
        })
    }
}

/// What a cell matcher found: the loop variables of the step's input item's list (read at
/// `time`), the states and the weights, and the srcs of the new states.
struct CellMatch {
    cell: Cell,
    item: Src,
    hidden: usize,
    state: Option<usize>,
    weights: [usize; 3],
    new_hidden: Src,
    new_state: Option<Src>,
    units: Option<usize>,
}

fn match_loop(library: &Library, cond: &str, body: &str, arity: usize) -> Option<LoopSpec> {
    let ir = simplified(library, body)?;
    if ir.outputs.len() != arity {
        return None;
    }
    let outs: Vec<Src> = {
        let m = Matcher::new(&ir);
        ir.outputs.iter().map(|s| m.through(s)).collect()
    };
    // The write: SetItem(list, time or a constant, new hidden state), the one SetItem.
    let mut sets = ir.nodes.iter().filter(|n| n.op == "TensorListSetItem");
    let (set, None) = (sets.next()?, sets.next()) else {
        return None;
    };
    if set.inputs.len() != 3 {
        return None;
    }
    let set_src = Src::Node(set.name.clone(), 0);
    let new_hidden = Matcher::new(&ir).through(&set.inputs[2]);
    // Each cell matcher starts afresh, so a failed one leaves no node counted as matched.
    let (mut m, cell) = {
        let mut m = Matcher::new(&ir);
        match lstm_cell(&mut m) {
            Some(cell) => (m, cell),
            None => {
                let mut m = Matcher::new(&ir);
                let cell = gru_cell(&mut m, &new_hidden)?;
                (m, cell)
            }
        }
    };
    if cell.new_hidden != new_hidden {
        return None;
    }
    // The item: GetItem(list, time, element_shape) of float32 elements.
    let get = m.node(&cell.item, "TensorListGetItem", 3, 0)?;
    if Attrs::new(&get.attrs).dtype("element_dtype").ok() != Some(DType::Float32) {
        return None;
    }
    let (inputs, time) = (m.arg(&get.inputs[0])?, m.arg(&get.inputs[1])?);
    m.node(&set_src, "TensorListSetItem", 3, 0)?;
    let set_attrs = Attrs::new(&set.attrs);
    if set_attrs.dtype("element_dtype").ok() != Some(DType::Float32)
        || set_attrs.bool_or("resize_if_index_out_of_bounds", false) != Ok(false)
    {
        return None;
    }
    let outputs = m.arg(&set.inputs[0])?;
    let write_at = match m.arg(&set.inputs[1]) {
        Some(t) if t == time => None,
        Some(_) => return None,
        None => Some(usize::try_from(m.int(&set.inputs[1])?).ok()?),
    };
    // Each loop variable's next value.
    let mut counters = Vec::new();
    for (j, out) in outs.iter().enumerate() {
        let expected = if j == cell.hidden {
            Some(&cell.new_hidden)
        } else if Some(j) == cell.state {
            cell.new_state.as_ref()
        } else if j == outputs {
            Some(&set_src)
        } else {
            None
        };
        match expected {
            Some(src) if out == src => {}
            Some(_) => return None,
            None if *out == Src::Arg(j) => {}
            None => {
                let add = m.node(out, "AddV2", 2, 0)?;
                if Attrs::new(&add.attrs).dtype("T").ok() != Some(DType::Int32)
                    || m.arg(&add.inputs[0]) != Some(j)
                    || m.int(&add.inputs[1]) != Some(1)
                {
                    return None;
                }
                counters.push(j);
            }
        }
    }
    let invariant = |j: usize| outs.get(j) == Some(&Src::Arg(j));
    let roles = [
        time,
        inputs,
        cell.hidden,
        outputs,
        cell.weights[0],
        cell.weights[1],
        cell.weights[2],
    ];
    let distinct: HashSet<usize> = roles.iter().chain(&cell.state).copied().collect();
    if !m.all_used()
        || !counters.contains(&time)
        || ![inputs, cell.weights[0], cell.weights[1], cell.weights[2]]
            .iter()
            .all(|&j| invariant(j))
        || distinct.len() != roles.len() + usize::from(cell.state.is_some())
    {
        return None;
    }
    let bounds = match_cond(library, cond, arity, &counters, &invariant)?;
    Some(LoopSpec {
        cell: cell.cell,
        time,
        inputs,
        hidden: cell.hidden,
        state: cell.state,
        outputs,
        write_at,
        units: cell.units,
        weights: cell.weights,
        counters,
        bounds,
    })
}

/// The cond: `counter < bound` terms joined by LogicalAnd, each counter one the body
/// increments, each variable bound one it passes through.
fn match_cond(
    library: &Library,
    cond: &str,
    arity: usize,
    counters: &[usize],
    invariant: &dyn Fn(usize) -> bool,
) -> Option<Vec<(usize, Bound)>> {
    let ir = simplified(library, cond)?;
    let [out] = ir.outputs.as_slice() else {
        return None;
    };
    let mut m = Matcher::new(&ir);
    let mut bounds = Vec::new();
    let mut pending = vec![out.clone()];
    while let Some(src) = pending.pop() {
        if let Some(and) = m.node(&src, "LogicalAnd", 2, 0) {
            pending.extend(and.inputs.iter().cloned());
            continue;
        }
        let less = m.node(&src, "Less", 2, 0)?;
        if Attrs::new(&less.attrs).dtype("T").ok() != Some(DType::Int32) {
            return None;
        }
        let var = m.arg(&less.inputs[0]).filter(|v| counters.contains(v))?;
        let bound = match m.arg(&less.inputs[1]) {
            Some(j) if invariant(j) && j < arity => Bound::Var(j),
            Some(_) => return None,
            None => Bound::Const(m.int(&less.inputs[1])?),
        };
        bounds.push((var, bound));
    }
    (m.all_used() && !bounds.is_empty() && ir.roots.is_empty()).then_some(bounds)
}

/// The LSTM step, as engine::fuse_lstm fused it: `_SavedModelLstmCell(x, W, h, U, b, c, 1)`.
fn lstm_cell(m: &mut Matcher) -> Option<CellMatch> {
    let ir = m.ir;
    let cell = ir.nodes.iter().find(|n| n.op == LSTM_CELL)?;
    let hidden_src = Src::Node(cell.name.clone(), 0);
    let node = m.node(&hidden_src, LSTM_CELL, 7, 0)?;
    let [x, w, h, u, b, c, dim] = node.inputs.as_slice() else {
        return None;
    };
    if !matches!(m.int(dim), Some(1 | -1)) {
        return None;
    }
    Some(CellMatch {
        cell: Cell::Lstm,
        item: x.clone(),
        hidden: m.arg(h)?,
        state: Some(m.arg(c)?),
        weights: [m.read(w)?, m.read(u)?, m.read(b)?],
        new_hidden: hidden_src,
        new_state: Some(Src::Node(cell.name.clone(), 1)),
        units: None,
    })
}

/// Keras's GRU step (`reset_after`), in the order Keras writes it:
///
/// ```text
/// b0, b1 = Squeeze(Split(0, ReadVariableOp(bias), 2))
/// xz, xr, xn = Split(-1, BiasAdd(MatMul(x, ReadVariableOp(kernel)), b0), 3)
/// hu = AddV2(MatMul(h, ReadVariableOp(recurrent)), b1)
/// hz, hr, hn = StridedSlice(hu, [0, 0:u]), (hu, [0, u:2u]), (hu, [0, 2u:])
/// z = Sigmoid(AddV2(xz, hz)); r = Sigmoid(AddV2(xr, hr)); n = Tanh(AddV2(xn, Mul(r, hn)))
/// h' = AddV2(Mul(z, h), Mul(Sub(1, z), n))
/// ```
fn gru_cell(m: &mut Matcher, new_hidden: &Src) -> Option<CellMatch> {
    let sum = m.float_node(new_hidden, "AddV2", 2, 0)?;
    let kept = m.float_node(&sum.inputs[0], "Mul", 2, 0)?;
    let added = m.float_node(&sum.inputs[1], "Mul", 2, 0)?;
    let z = m.float_node(&kept.inputs[0], "Sigmoid", 1, 0)?;
    let hidden = m.arg(&kept.inputs[1])?;
    let rest = m.float_node(&added.inputs[0], "Sub", 2, 0)?;
    if m.float(&rest.inputs[0]) != Some(1.0)
        || m.through(&rest.inputs[1]) != m.through(&kept.inputs[0])
    {
        return None;
    }
    let candidate = m.float_node(&added.inputs[1], "Tanh", 1, 0)?;
    let n_sum = m.float_node(&candidate.inputs[0], "AddV2", 2, 0)?;
    let reset_h = m.float_node(&n_sum.inputs[1], "Mul", 2, 0)?;
    let r = m.float_node(&reset_h.inputs[0], "Sigmoid", 1, 0)?;
    let z_sum = m.float_node(&z.inputs[0], "AddV2", 2, 0)?;
    let r_sum = m.float_node(&r.inputs[0], "AddV2", 2, 0)?;
    // The input side: the three outputs of one Split of BiasAdd(MatMul(x, W), b0).
    let x_parts = [&z_sum.inputs[0], &r_sum.inputs[0], &n_sum.inputs[0]];
    let mut split = None;
    for (k, part) in x_parts.iter().enumerate() {
        let node = m.float_node(part, "Split", 2, k)?;
        if split.is_some_and(|s: &IrNode| s.name != node.name) {
            return None;
        }
        split = Some(node);
    }
    let split = split?;
    if Attrs::new(&split.attrs).int("num_split").ok() != Some(3)
        || !matches!(m.int(&split.inputs[0]), Some(1 | -1))
    {
        return None;
    }
    let bias_add = m.float_node(&split.inputs[1], "BiasAdd", 2, 0)?;
    if Attrs::new(&bias_add.attrs).string_or("data_format", "NHWC") != Ok("NHWC") {
        return None;
    }
    let product = plain_matmul(m, &bias_add.inputs[0])?;
    let (item, kernel) = (product.inputs[0].clone(), m.read(&product.inputs[1])?);
    // The recurrent side: three column slices of AddV2(MatMul(h, U), b1).
    let h_parts = [&z_sum.inputs[1], &r_sum.inputs[1], &reset_h.inputs[1]];
    let mut hu = None;
    let mut units = None;
    for (k, part) in h_parts.iter().enumerate() {
        let slice = m.float_node(part, "StridedSlice", 4, 0)?;
        let width = column_slice(m, slice, k)?;
        if units.is_some_and(|u| u != width) {
            return None;
        }
        units = Some(width);
        let source = m.through(&slice.inputs[0]);
        if hu.as_ref().is_some_and(|h| *h != source) {
            return None;
        }
        hu = Some(source);
    }
    let hu_sum = m.float_node(&hu?, "AddV2", 2, 0)?;
    let recurrent_product = plain_matmul(m, &hu_sum.inputs[0])?;
    if m.arg(&recurrent_product.inputs[0]) != Some(hidden) {
        return None;
    }
    let recurrent = m.read(&recurrent_product.inputs[1])?;
    // The bias: b0 and b1 are the two rows of one Split(0, ReadVariableOp(bias), 2).
    let b0 = m.float_node(&bias_add.inputs[1], "Squeeze", 1, 0)?;
    let b1 = m.float_node(&hu_sum.inputs[1], "Squeeze", 1, 0)?;
    let mut bias_split = None;
    for (k, squeeze) in [b0, b1].iter().enumerate() {
        if Attrs::new(&squeeze.attrs).ints_or("squeeze_dims", &[]).ok() != Some(vec![0]) {
            return None;
        }
        let node = m.float_node(&squeeze.inputs[0], "Split", 2, k)?;
        if bias_split.is_some_and(|s: &IrNode| s.name != node.name) {
            return None;
        }
        bias_split = Some(node);
    }
    let bias_split = bias_split?;
    if Attrs::new(&bias_split.attrs).int("num_split").ok() != Some(2)
        || m.int(&bias_split.inputs[0]) != Some(0)
    {
        return None;
    }
    let bias = m.read(&bias_split.inputs[1])?;
    Some(CellMatch {
        cell: Cell::Gru,
        item,
        hidden,
        state: None,
        weights: [kernel, recurrent, bias],
        new_hidden: new_hidden.clone(),
        new_state: None,
        units: Some(units?),
    })
}

/// A float32 MatMul with neither side transposed.
fn plain_matmul<'a>(m: &mut Matcher<'a>, src: &Src) -> Option<&'a IrNode> {
    let node = m.float_node(src, "MatMul", 2, 0)?;
    let attrs = Attrs::new(&node.attrs);
    (attrs.bool_or("transpose_a", false) == Ok(false)
        && attrs.bool_or("transpose_b", false) == Ok(false))
    .then_some(node)
}

/// The `u` for which StridedSlice `slice` takes, of a `[n, 3u]` matrix, all rows and columns
/// `[k·u, (k+1)·u)`; None if it takes anything else.
fn column_slice(m: &Matcher, slice: &IrNode, k: usize) -> Option<usize> {
    let attrs = Attrs::new(&slice.attrs);
    let mask = |name: &str| attrs.int(name).unwrap_or(0);
    if mask("ellipsis_mask") != 0 || mask("new_axis_mask") != 0 || mask("shrink_axis_mask") != 0 {
        return None;
    }
    let (begin, end, strides) = (
        m.ints(&slice.inputs[1])?,
        m.ints(&slice.inputs[2])?,
        m.ints(&slice.inputs[3])?,
    );
    let (begin_mask, end_mask) = (mask("begin_mask"), mask("end_mask"));
    if begin.len() != 2 || end.len() != 2 || strides != [1, 1] {
        return None;
    }
    // Rows: all of them.
    if begin_mask & 1 == 0 || end_mask & 1 == 0 {
        return None;
    }
    let from = if begin_mask & 2 != 0 { 0 } else { begin[1] };
    let to = if end_mask & 2 != 0 {
        None
    } else {
        Some(end[1])
    };
    let k = k as i64;
    match (k, to) {
        // The first slice: [0, u).
        (0, Some(u)) if from == 0 && u > 0 => usize::try_from(u).ok(),
        // The middle slice: [u, 2u).
        (1, Some(e)) if from > 0 && e == 2 * from => usize::try_from(from).ok(),
        // The last slice: [2u, end), the end at 3u or the matrix's own.
        (2, None) if from > 0 && from % 2 == 0 => usize::try_from(from / 2).ok(),
        (2, Some(e)) if from > 0 && from % 2 == 0 && e == from / 2 * 3 => {
            usize::try_from(from / 2).ok()
        }
        _ => None,
    }
}
