//! Fusion of an LSTM cell (Keras's `LSTMCell` as it exports into a While body: two MatMuls,
//! AddV2, BiasAdd, a four-way Split, sigmoid/tanh gates, the cell and hidden state updates)
//! into one `_SavedModelLstmCell` node (kernels::rnn), so that each time step runs one step of
//! the plan instead of fifteen.
//!
//! Only float32 chains whose intermediate results nothing else reads (no other consumer, no
//! control edge, not an output) are rewritten; the new cell state keeps its consumers, which
//! read it as the fused node's second output. The fused kernel falls back to the separate ops'
//! kernels for any shapes its fast path does not take, so a match never changes results.

use std::collections::{HashMap, HashSet};

use crate::engine::attrs::Attrs;
use crate::engine::graph::Src;
use crate::engine::ir::{Ir, IrNode};
use crate::engine::kernel::Registry;
use crate::kernels::rnn::LSTM_CELL;

/// Rewrites every LSTM cell of `ir` (if `registry` has the fused kernel).
pub fn fuse_lstm_cells(ir: &mut Ir, registry: &Registry) {
    if !registry.contains(LSTM_CELL) || !ir.nodes.iter().any(|n| n.op == "Split") {
        return;
    }
    let mut uses = Uses::of(ir);
    for i in 0..ir.nodes.len() {
        if ir.nodes[i].op != "Split" || uses.absorbed.contains(&i) {
            continue;
        }
        if let Some(cell) = match_cell(ir, i, &uses) {
            apply(ir, &cell, &mut uses);
        }
    }
}

/// Who reads each node output, and which nodes must stay as they are.
struct Uses {
    /// Consumers of each `(node, output)`, once per data input that reads it.
    readers: HashMap<(String, usize), Vec<usize>>,
    /// Named by a control edge or a root, or read as a plan output.
    pinned: HashSet<String>,
    /// Nodes of cells already rewritten.
    absorbed: HashSet<usize>,
}

impl Uses {
    fn of(ir: &Ir) -> Self {
        let mut readers: HashMap<(String, usize), Vec<usize>> = HashMap::new();
        let mut pinned: HashSet<String> = ir.roots.iter().cloned().collect();
        for (j, node) in ir.nodes.iter().enumerate() {
            for src in &node.inputs {
                if let Src::Node(n, k) = src {
                    readers.entry((n.clone(), *k)).or_default().push(j);
                }
            }
            pinned.extend(node.control.iter().cloned());
        }
        for src in &ir.outputs {
            if let Src::Node(n, _) = src {
                pinned.insert(n.clone());
            }
        }
        Self {
            readers,
            pinned,
            absorbed: HashSet::new(),
        }
    }

    /// The one node that reads output `k` of node `i`, if node `i` is not pinned and that is
    /// the output's only use (its other outputs are the caller's to check).
    fn only_reader(&self, ir: &Ir, i: usize, k: usize) -> Option<usize> {
        let name = &ir.nodes[i].name;
        if self.pinned.contains(name) {
            return None;
        }
        match self.readers.get(&(name.clone(), k)).map(Vec::as_slice) {
            Some(&[j]) if !self.absorbed.contains(&j) => Some(j),
            _ => None,
        }
    }
}

/// A matched cell: the nodes it absorbs, the fused node's inputs, and the node whose place
/// (and name) the fused node takes and the cell-state node whose readers move to output 1.
struct Cell {
    absorbed: Vec<usize>,
    inputs: Vec<Src>,
    hidden: usize,
    state: usize,
    split: usize,
}

/// The producer of a data input, if it is output 0 of a node computed at run time.
fn producer(ir: &Ir, src: &Src) -> Option<usize> {
    match src {
        Src::Node(n, 0) => {
            let i = *ir.index.get(n)?;
            ir.nodes[i].value.is_none().then_some(i)
        }
        _ => None,
    }
}

/// A float32 node of op `op` (one of `ops`) with `arity` data inputs and no control inputs.
fn is(node: &IrNode, ops: &[&str], arity: usize) -> bool {
    ops.contains(&node.op.as_str())
        && node.inputs.len() == arity
        && node.control.is_empty()
        && node.value.is_none()
        && Attrs::new(&node.attrs).dtype("T").ok() == Some(crate::DType::Float32)
}

/// The input of two-input node `node` that is not output 0 of node `i`, if the other is.
fn other_input(ir: &Ir, node: &IrNode, i: usize) -> Option<Src> {
    let name = &ir.nodes[i].name;
    let reads = |s: &Src| matches!(s, Src::Node(n, 0) if n == name);
    match &node.inputs[..] {
        [a, b] if reads(a) && !reads(b) => Some(b.clone()),
        [a, b] if reads(b) && !reads(a) => Some(a.clone()),
        _ => None,
    }
}

/// Both inputs of `node` are output 0 of nodes `a` and `b` (in either order).
fn reads_pair(ir: &Ir, node: &IrNode, a: usize, b: usize) -> bool {
    let (x, y) = (&ir.nodes[a].name, &ir.nodes[b].name);
    let reads = |s: &Src, n: &str| matches!(s, Src::Node(m, 0) if m == n);
    match &node.inputs[..] {
        [p, q] => (reads(p, x) && reads(q, y)) || (reads(p, y) && reads(q, x)),
        _ => false,
    }
}

fn match_cell(ir: &Ir, split: usize, uses: &Uses) -> Option<Cell> {
    let node = &ir.nodes[split];
    if !is(node, &["Split"], 2) || Attrs::new(&node.attrs).int("num_split").ok() != Some(4) {
        return None;
    }
    // BiasAdd(AddV2(MatMul(x, W), MatMul(h, U)), b) feeds the split and nothing else.
    let bias_add = producer(ir, &node.inputs[1])?;
    let bias_node = &ir.nodes[bias_add];
    let format = Attrs::new(&bias_node.attrs).string_or("data_format", "NHWC");
    if !is(bias_node, &["BiasAdd"], 2)
        || format != Ok("NHWC")
        || uses.only_reader(ir, bias_add, 0) != Some(split)
    {
        return None;
    }
    let add = producer(ir, &bias_node.inputs[0])?;
    if !is(&ir.nodes[add], &["AddV2", "Add"], 2) || uses.only_reader(ir, add, 0) != Some(bias_add) {
        return None;
    }
    let mut products = Vec::new();
    for src in &ir.nodes[add].inputs {
        let m = producer(ir, src)?;
        let attrs = Attrs::new(&ir.nodes[m].attrs);
        if !is(&ir.nodes[m], &["MatMul"], 2)
            || attrs.bool_or("transpose_a", false) != Ok(false)
            || attrs.bool_or("transpose_b", false) != Ok(false)
            || uses.only_reader(ir, m, 0) != Some(add)
            || products.contains(&m)
        {
            return None;
        }
        products.push(m);
    }
    // The gates: i, f, o through sigmoids, g through tanh, each read once.
    let mut gates = [0usize; 4];
    for (k, op) in ["Sigmoid", "Sigmoid", "Tanh", "Sigmoid"].iter().enumerate() {
        let g = uses.only_reader(ir, split, k)?;
        let gate = &ir.nodes[g];
        if !is(gate, &[*op], 1) || !matches!(&gate.inputs[0], Src::Node(_, j) if *j == k) {
            return None;
        }
        gates[k] = g;
    }
    let [i, f, g, o] = gates;
    // kept = f · c, added = i · g, state = kept + added, hidden = o · tanh(state).
    let kept = uses.only_reader(ir, f, 0)?;
    let c = other_input(ir, &ir.nodes[kept], f)?;
    let added = uses.only_reader(ir, i, 0)?;
    let state = uses.only_reader(ir, kept, 0)?;
    if !is(&ir.nodes[kept], &["Mul"], 2)
        || !is(&ir.nodes[added], &["Mul"], 2)
        || uses.only_reader(ir, g, 0) != Some(added)
        || !reads_pair(ir, &ir.nodes[added], i, g)
        || uses.only_reader(ir, added, 0) != Some(state)
        || !is(&ir.nodes[state], &["AddV2", "Add"], 2)
        || !reads_pair(ir, &ir.nodes[state], kept, added)
    {
        return None;
    }
    let state_name = &ir.nodes[state].name;
    if ir.roots.contains(state_name) || ir.nodes.iter().any(|n| n.control.contains(state_name)) {
        return None;
    }
    let squash = uses
        .readers
        .get(&(state_name.clone(), 0))?
        .iter()
        .copied()
        .find(|&t| is(&ir.nodes[t], &["Tanh"], 1) && !uses.absorbed.contains(&t))?;
    let hidden = uses.only_reader(ir, squash, 0)?;
    if uses.only_reader(ir, o, 0) != Some(hidden)
        || !is(&ir.nodes[hidden], &["Mul"], 2)
        || !reads_pair(ir, &ir.nodes[hidden], o, squash)
    {
        return None;
    }
    let [p, q] = [products[0], products[1]].map(|m| ir.nodes[m].inputs.clone());
    let inputs = [
        p,
        q,
        vec![bias_node.inputs[1].clone(), c, node.inputs[0].clone()],
    ]
    .concat();
    Some(Cell {
        absorbed: vec![
            products[0],
            products[1],
            add,
            bias_add,
            split,
            i,
            f,
            g,
            o,
            kept,
            added,
            state,
            squash,
            hidden,
        ],
        inputs,
        hidden,
        state,
        split,
    })
}

/// Puts the fused node in the hidden state's place and points the cell state's readers at
/// its second output; the absorbed nodes, now unread, go with the next prune.
fn apply(ir: &mut Ir, cell: &Cell, uses: &mut Uses) {
    let hidden = &ir.nodes[cell.hidden];
    let fused = IrNode {
        name: hidden.name.clone(),
        op: LSTM_CELL.to_string(),
        attrs: ir.nodes[cell.split].attrs.clone(),
        inputs: cell.inputs.clone(),
        control: Vec::new(),
        value: None,
        chain: hidden.chain.clone(),
    };
    let state = Src::Node(ir.nodes[cell.state].name.clone(), 0);
    let moved = Src::Node(fused.name.clone(), 1);
    ir.nodes[cell.hidden] = fused;
    for (j, node) in ir.nodes.iter_mut().enumerate() {
        if j == cell.hidden {
            continue;
        }
        for src in node.inputs.iter_mut().filter(|s| **s == state) {
            *src = moved.clone();
        }
    }
    for src in ir.outputs.iter_mut().filter(|s| **s == state) {
        *src = moved.clone();
    }
    uses.absorbed.extend(cell.absorbed.iter().copied());
}
