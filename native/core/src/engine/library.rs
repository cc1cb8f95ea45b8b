//! A model's function library: FunctionDefs by name and their plans, each compiled on first
//! call and cached (a function may be called from many places, and recursion must not compile
//! forever).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::engine::context::{FileAccess, ResourceManager, RunContext};

use crate::engine::attrs::Attrs;
use crate::engine::graph::{function_body, OpDefs, Src};
use crate::engine::kernel::{fail, KResult, Registry};
use crate::engine::plan::{Plan, Request};
use crate::error::Error;
use crate::protos::{FunctionDef, FunctionDefLibrary, NodeDef, OpDef};

pub struct Library {
    functions: HashMap<String, FunctionDef>,
    op_defs: OpDefs,
    registry: Arc<Registry>,
    plans: Mutex<HashMap<String, Arc<Plan>>>,
    /// The model's variables and tables, which kernels share.
    pub resources: ResourceManager,
    pub files: FileAccess,
    /// Whether plans may read variables at compile time: set by the loader when nothing the
    /// model can run assigns a variable.
    fold_variables: AtomicBool,
    /// Tells this library from every other one in the process (see [`Library::id`]).
    id: u64,
    /// Fused weights shared by this model's plans.
    scaled_weights: crate::engine::fuse::ScaledWeights,
}

/// The next [`Library::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl Library {
    /// `op_list` is the SavedModel's stripped op list (empty for a frozen graph). Takes the
    /// function library rather than a copy: a model's functions are most of its graph.
    pub fn new(
        library: Option<FunctionDefLibrary>,
        op_list: &[OpDef],
        registry: Arc<Registry>,
        files: FileAccess,
    ) -> Self {
        let mut op_defs: OpDefs = op_list
            .iter()
            .map(|op| (op.name.clone(), op.clone()))
            .collect();
        let mut functions = HashMap::new();
        for function in library.map(|l| l.function).unwrap_or_default() {
            if let Some(sig) = &function.signature {
                op_defs.insert(sig.name.clone(), sig.clone());
                functions.insert(sig.name.clone(), function);
            }
        }
        Self {
            functions,
            op_defs,
            registry,
            plans: Mutex::new(HashMap::new()),
            resources: ResourceManager::default(),
            files,
            fold_variables: AtomicBool::new(false),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scaled_weights: Default::default(),
        }
    }

    /// The fused weights this model's plans share (see [`crate::engine::fuse::ScaledWeights`]).
    pub fn scaled_weights(&self) -> &crate::engine::fuse::ScaledWeights {
        &self.scaled_weights
    }

    /// A context for running kernels outside any call (the model's top level, or folding).
    pub fn context(&self) -> RunContext<'_> {
        RunContext {
            library: self,
            resources: &self.resources,
            calls: None,
            files: &self.files,
            deadline: None,
            profile: None,
        }
    }

    /// A number no other library in the process has: what lets a kernel keep the plan it calls
    /// (kernels::control) and be sure, unlike with an address, that it is this library's.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn fold_variables(&self) -> bool {
        self.fold_variables.load(Ordering::Relaxed)
    }

    /// Lets plans compiled from now on read variables at compile time.
    pub fn set_fold_variables(&self, fold: bool) {
        self.fold_variables.store(fold, Ordering::Relaxed);
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

    /// Every node of `roots` and of every function they call, transitively (call ops,
    /// branches, loop bodies), with the function it is in: what decides, before anything runs,
    /// whether the engine can run a model and whether it can write a variable.
    pub fn reachable_nodes(&self, roots: &[String]) -> Vec<(&str, &NodeDef)> {
        let mut queue: Vec<&str> = roots.iter().map(String::as_str).collect();
        let mut seen: HashSet<&str> = queue.iter().copied().collect();
        let mut found = Vec::new();
        while let Some(name) = queue.pop() {
            let Some((key, function)) = self.functions.get_key_value(name) else {
                continue;
            };
            for node in &function.node_def {
                found.push((key.as_str(), node));
                let mut called = Attrs::new(&node.attr).all_functions();
                if let Some((callee, _)) = self.functions.get_key_value(&node.op) {
                    called.push(callee.as_str());
                }
                for callee in called {
                    if seen.insert(callee) {
                        queue.push(callee);
                    }
                }
            }
        }
        found
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Plan>>> {
        match self.plans.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
