//! A model's function library: FunctionDefs by name and their plans, each compiled on first
//! call and cached (a function may be called from many places, and recursion must not compile
//! forever).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::engine::attrs::Attrs;
use crate::engine::graph::{function_body, OpDefs, Src};
use crate::engine::kernel::{fail, KResult, Registry};
use crate::engine::plan::{Plan, Request};
use crate::error::{Error, MissingOp};
use crate::protos::{FunctionDef, FunctionDefLibrary, OpDef};

pub struct Library {
    functions: HashMap<String, FunctionDef>,
    op_defs: OpDefs,
    registry: Arc<Registry>,
    plans: Mutex<HashMap<String, Arc<Plan>>>,
}

impl Library {
    /// `op_list` is the SavedModel's stripped op list (empty for a frozen graph).
    pub fn new(
        library: Option<&FunctionDefLibrary>,
        op_list: &[OpDef],
        registry: Arc<Registry>,
    ) -> Self {
        let mut op_defs: OpDefs = op_list
            .iter()
            .map(|op| (op.name.clone(), op.clone()))
            .collect();
        let mut functions = HashMap::new();
        for function in library.map(|l| l.function.as_slice()).unwrap_or_default() {
            if let Some(sig) = &function.signature {
                op_defs.insert(sig.name.clone(), sig.clone());
                functions.insert(sig.name.clone(), function.clone());
            }
        }
        Self {
            functions,
            op_defs,
            registry,
            plans: Mutex::new(HashMap::new()),
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn op_defs(&self) -> &OpDefs {
        &self.op_defs
    }

    pub fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    pub fn function(&self, name: &str) -> Option<&FunctionDef> {
        self.functions.get(name)
    }

    /// Whether an op has effects or state: the kernel registry says so for ops it knows, the
    /// op definition for the rest.
    pub fn is_stateful(&self, op: &str) -> bool {
        match self.registry.get(op) {
            Some(info) => info.stateful,
            None => self.op_defs.get(op).is_some_and(|d| d.is_stateful),
        }
    }

    /// The compiled plan of function `name`.
    pub fn plan(&self, name: &str) -> KResult<Arc<Plan>> {
        if let Some(plan) = self.lock().get(name) {
            return Ok(plan.clone());
        }
        let plan = Arc::new(self.compile(name)?);
        Ok(self.lock().entry(name.to_string()).or_insert(plan).clone())
    }

    fn compile(&self, name: &str) -> KResult<Plan> {
        let function = self
            .functions
            .get(name)
            .ok_or_else(|| fail(format!("the library has no function {name:?}")))?;
        let body =
            function_body(function, &self.op_defs).map_err(|detail| Error::Graph { detail })?;
        let fetches: Vec<Src> = body.rets.clone();
        let request = Request {
            feeds: &[],
            fetches: &fetches,
            targets: &[],
            keep_stateful: true,
        };
        Plan::compile(name, &body, &request, self)
    }

    /// The ops without a kernel in `roots` and every function they call, transitively (call
    /// ops, branches, loop bodies): what decides whether the engine can run a model, known
    /// before anything runs.
    pub fn missing_ops(&self, roots: &[String]) -> Vec<MissingOp> {
        let mut queue: Vec<&str> = roots.iter().map(String::as_str).collect();
        let mut seen: HashSet<&str> = queue.iter().copied().collect();
        let mut missing = Vec::new();
        while let Some(name) = queue.pop() {
            let Some(function) = self.functions.get(name) else {
                continue;
            };
            for node in &function.node_def {
                let attrs = Attrs::new(&node.attr);
                let called = if self.registry.contains(&node.op) {
                    attrs.all_functions()
                } else if let Some((key, _)) = self.functions.get_key_value(&node.op) {
                    vec![key.as_str()]
                } else {
                    missing.push(MissingOp {
                        op: node.op.clone(),
                        node: node.name.clone(),
                        function: name.to_string(),
                    });
                    continue;
                };
                for callee in called {
                    if seen.insert(callee) {
                        queue.push(callee);
                    }
                }
            }
        }
        missing.sort();
        missing
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Plan>>> {
        match self.plans.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
