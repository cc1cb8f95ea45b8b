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
    /// The median of the node's runs' own times (zero in the op totals of [`Profile::ops`]).
    pub median: Duration,
}

/// A node's entry and each of its runs' own time.
#[derive(Debug, Default)]
struct Runs {
    entry: Entry,
    each: Vec<Duration>,
}

impl Runs {
    /// The entry, with the median of the runs.
    fn summary(&self) -> Entry {
        let mut each = self.each.clone();
        each.sort_unstable();
        Entry {
            median: each.get(each.len() / 2).copied().unwrap_or_default(),
            ..self.entry.clone()
        }
    }
}

/// Per-node own time, filled by plans run with a context that carries it.
#[derive(Debug, Default)]
pub struct Profile {
    /// Entries by op, then node: looked up by borrowed names, so charging a step that was
    /// charged before allocates nothing (its cost would count in the enclosing step's time).
    by_node: Mutex<HashMap<String, HashMap<String, Runs>>>,
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
            let entry = Entry {
                op: op.to_string(),
                node: node.to_string(),
                ..Entry::default()
            };
            let runs = Runs {
                entry,
                each: Vec::new(),
            };
            nodes.insert(node.to_string(), runs);
        }
        let Some(runs) = nodes.get_mut(node) else {
            return;
        };
        runs.entry.runs += 1;
        runs.entry.own += own;
        runs.each.push(own);
    }

    /// Every node profiled, most time first, with its median run.
    pub fn nodes(&self) -> Vec<Entry> {
        let map = match self.by_node.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut entries: Vec<Entry> = map
            .values()
            .flat_map(|n| n.values().map(Runs::summary))
            .collect();
        entries.sort_by(|a, b| b.own.cmp(&a.own).then_with(|| a.node.cmp(&b.node)));
        entries
    }

    /// The nodes' time summed per op type (`node` empty), most time first.
    pub fn ops(&self) -> Vec<Entry> {
        let mut by_op: HashMap<String, Entry> = HashMap::new();
        for entry in self.nodes() {
            let total = by_op.entry(entry.op.clone()).or_insert_with(|| Entry {
                op: entry.op.clone(),
                ..Entry::default()
            });
            total.runs += entry.runs;
            total.own += entry.own;
        }
        let mut entries: Vec<Entry> = by_op.into_values().collect();
        entries.sort_by(|a, b| b.own.cmp(&a.own).then_with(|| a.op.cmp(&b.op)));
        entries
    }

    /// The total own time of every step profiled.
    pub fn total(&self) -> Duration {
        self.nodes().iter().map(|e| e.own).sum()
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
        assert_eq!(profile.ops()[0].median, Duration::ZERO);
    }

    #[test]
    fn ops_sum_their_nodes() {
        let profile = Profile::new();
        for node in ["a", "b", "a"] {
            profile.time("Relu", node, || spin(Duration::from_micros(50)));
        }
        profile.time("Add", "c", || ());
        let ops = profile.ops();
        assert_eq!(ops[0].op, "Relu");
        assert_eq!(ops[0].runs, 3);
        assert_eq!(profile.nodes().len(), 3);
        assert_eq!(profile.total(), ops.iter().map(|e| e.own).sum());
    }
}
