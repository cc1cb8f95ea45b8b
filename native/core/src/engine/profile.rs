//! Where a call's time goes: each kernel's own time (a call, branch or loop kernel's time
//! without the kernels it ran), summed per node over the calls profiled, and each node's
//! median run. What `savedmodel-run --profile` prints; off unless a caller asks, and then one
//! clock read per step. The median is there for busy machines: a run the system stalls for
//! milliseconds (seen on shared virtual machines) moves a node's total, not its median.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

thread_local! {
    /// Time spent in steps finished on this thread so far, nested ones included: a step's own
    /// time is its elapsed time less what this grew by while it ran.
    static STEPS_TIME: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// One node's (or op type's) share of the profiled calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    pub op: String,
    pub node: String,
    pub runs: u64,
    pub own: Duration,
    /// The median of the node's runs' own times (zero in the op totals of [`Summary::ops`]).
    pub median: Duration,
}

impl Entry {
    /// Node `node`'s entry from each of its runs' own time.
    fn of(op: &str, node: &str, each: &[Duration]) -> Entry {
        let mut sorted = each.to_vec();
        sorted.sort_unstable();
        Entry {
            op: op.to_string(),
            node: node.to_string(),
            runs: each.len() as u64,
            own: each.iter().sum(),
            median: sorted.get(sorted.len() / 2).copied().unwrap_or_default(),
        }
    }
}

/// What a report prints: the total own time, the time per op type and per node, most first.
#[derive(Debug, Default)]
pub struct Summary {
    pub total: Duration,
    /// Per op type (`node` empty, `median` zero).
    pub ops: Vec<Entry>,
    pub nodes: Vec<Entry>,
}

/// Per-node own time, filled by plans run with a context that carries it.
#[derive(Debug, Default)]
pub struct Profile {
    /// Each run's own time by op, then node: looked up by borrowed names, so charging a step
    /// that was charged before allocates nothing (its cost would count in the enclosing
    /// step's time).
    by_node: Mutex<HashMap<String, HashMap<String, Vec<Duration>>>>,
}

impl Profile {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `step` (node `node` of op `op`) and charges it its own time.
    pub fn time<T>(&self, op: &str, node: &str, step: impl FnOnce() -> T) -> T {
        let nested_before = STEPS_TIME.with(Cell::get);
        let start = Instant::now();
        let result = step();
        let elapsed = start.elapsed();
        let nested = STEPS_TIME.with(Cell::get).saturating_sub(nested_before);
        STEPS_TIME.with(|t| t.set(nested_before + elapsed));
        self.charge(op, node, elapsed.saturating_sub(nested));
        result
    }

    fn charge(&self, op: &str, node: &str, own: Duration) {
        let mut map = match self.by_node.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !map.contains_key(op) {
            map.insert(op.to_string(), HashMap::new());
        }
        let Some(nodes) = map.get_mut(op) else {
            return;
        };
        if !nodes.contains_key(node) {
            nodes.insert(node.to_string(), Vec::new());
        }
        if let Some(each) = nodes.get_mut(node) {
            each.push(own);
        }
    }

    /// Every node profiled, most time first, with its median run.
    pub fn nodes(&self) -> Vec<Entry> {
        let map = match self.by_node.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut entries: Vec<Entry> = map
            .iter()
            .flat_map(|(op, nodes)| {
                nodes
                    .iter()
                    .map(move |(node, each)| Entry::of(op, node, each))
            })
            .collect();
        entries.sort_by(|a, b| b.own.cmp(&a.own).then_with(|| a.node.cmp(&b.node)));
        entries
    }

    /// The nodes, their time summed per op type, and the total (the nodes read once).
    pub fn summary(&self) -> Summary {
        let nodes = self.nodes();
        let mut by_op: HashMap<&str, Entry> = HashMap::new();
        for entry in &nodes {
            let total = by_op.entry(&entry.op).or_insert_with(|| Entry {
                op: entry.op.clone(),
                ..Entry::default()
            });
            total.runs += entry.runs;
            total.own += entry.own;
        }
        let mut ops: Vec<Entry> = by_op.into_values().collect();
        ops.sort_by(|a, b| b.own.cmp(&a.own).then_with(|| a.op.cmp(&b.op)));
        Summary {
            total: nodes.iter().map(|e| e.own).sum(),
            ops,
            nodes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {}
    }

    #[test]
    fn nested_steps_are_not_charged_to_their_caller() {
        let profile = Profile::new();
        profile.time("PartitionedCall", "call", || {
            spin(Duration::from_millis(2));
            profile.time("MatMul", "inner", || spin(Duration::from_millis(20)));
        });
        let nodes = profile.nodes();
        assert_eq!(nodes[0].node, "inner");
        assert!(nodes[0].own >= Duration::from_millis(20));
        let call = &nodes[1];
        assert_eq!(call.node, "call");
        assert!(call.own >= Duration::from_millis(2));
        assert!(call.own < Duration::from_millis(20), "{:?}", call.own);
    }

    #[test]
    fn a_node_s_median_run_ignores_one_stall() {
        let profile = Profile::new();
        for d in [1, 2, 30, 2, 2] {
            profile.time("Conv2D", "stem", || spin(Duration::from_millis(d)));
        }
        let stem = &profile.nodes()[0];
        assert_eq!(stem.runs, 5);
        assert!(stem.own >= Duration::from_millis(37));
        assert!(stem.median >= Duration::from_millis(2));
        assert!(stem.median < Duration::from_millis(30), "{:?}", stem.median);
        assert_eq!(profile.summary().ops[0].median, Duration::ZERO);
    }

    #[test]
    fn ops_sum_their_nodes() {
        let profile = Profile::new();
        for node in ["a", "b", "a"] {
            profile.time("Relu", node, || spin(Duration::from_micros(50)));
        }
        profile.time("Add", "c", || ());
        let Summary { total, ops, nodes } = profile.summary();
        assert_eq!(ops[0].op, "Relu");
        assert_eq!(ops[0].runs, 3);
        assert_eq!(nodes.len(), 3);
        assert_eq!(total, ops.iter().map(|e| e.own).sum());
    }
}
