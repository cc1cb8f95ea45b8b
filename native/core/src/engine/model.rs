//! Loading a SavedModel into a runnable [`Model`], as TensorFlow's loader does: variables
//! restored through the object graph (TensorFlow 2) or the saver's restore op (TensorFlow 1),
//! the top-level handle ops that signatures capture bound to those variables, then the init op
//! run with each asset's placeholder fed its path; every signature compiled once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use prost::Message;

use crate::bundle::{index_path, BundleReader};
use crate::dtype::DType;
use crate::engine::attrs::Attrs;
use crate::engine::context::{FileAccess, RunContext};
use crate::engine::graph::{graph_body, parse_graph_ref, Body, Src};
use crate::engine::library::Library;
use crate::engine::plan::{Plan, Request};
use crate::engine::value::{Resource, Stored, Value, Variable};
use crate::engine::workers;
use crate::error::{Error, MissingOp, Result};
use crate::protos::{
    collection_def, saved_object::Kind, tensor_info, AssetFileDef, MetaGraphDef, SignatureDef,
    TensorInfo, TrackableObjectGraph,
};
use crate::saved_model::{find_meta_graph, read_saved_model};
use crate::tensor::Tensor;

pub const INIT_OP_SIGNATURE: &str = "__saved_model_init_op";
const INIT_OP_COLLECTIONS: [&str; 3] =
    ["saved_model_main_op", "legacy_init_op", "table_initializer"];
const ASSETS_COLLECTION: &str = "saved_model_assets";
const OBJECT_GRAPH_KEY: &str = "_CHECKPOINTABLE_OBJECT_GRAPH";
const VARIABLE_VALUE: &str = "VARIABLE_VALUE";

/// How one call runs: past `deadline` it stops at the next function call or loop iteration;
/// with `profile`, every step's own time is charged to it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions<'p> {
    pub deadline: Option<std::time::Instant>,
    pub profile: Option<&'p crate::engine::profile::Profile>,
}

/// How a model is loaded.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub tags: Vec<String>,
    /// Let the model's file-system ops and assets use any file (TensorFlow's behaviour).
    pub allow_file_access: bool,
    /// Where the model's file-system ops may write (and read).
    pub output_dir: Option<PathBuf>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            tags: vec!["serve".into()],
            allow_file_access: false,
            output_dir: None,
        }
    }
}

/// One input or output of a signature.
#[derive(Clone, Debug)]
pub struct TensorSpec {
    pub key: String,
    /// The graph tensor (`node:index`) it is.
    pub tensor_name: String,
    pub dtype: DType,
    /// -1 for an unknown dimension; None for an unknown rank.
    pub shape: Option<Vec<i64>>,
}

/// A compiled SignatureDef.
pub struct Signature {
    pub name: String,
    pub method_name: String,
    /// Sorted by key.
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    plan: Plan,
    /// Whether the next call runs with rayon's workers kept awake: the last took long enough
    /// (engine/workers.rs).
    hot: AtomicBool,
}

pub struct Model {
    export_dir: PathBuf,
    meta_graph: MetaGraphDef,
    library: Library,
    signatures: Vec<Signature>,
    /// Restored variables by object-graph path (TensorFlow 2 models).
    object_variables: Vec<(String, Resource)>,
    /// The same variables by object-graph node id: what concrete functions capture.
    variables_by_node: HashMap<usize, Resource>,
    /// Resources (lookup tables) that functions capture, made once by their creator function.
    resources_by_node: std::sync::Mutex<HashMap<usize, Value>>,
    /// The model's copy of each asset file, in `asset_file_def` order.
    asset_paths: Vec<PathBuf>,
    /// Object-graph concrete functions that need ops without a native kernel, with those ops:
    /// the model loads (no signature needs them) and calling one is an `UnsupportedOps` error.
    unavailable: BTreeMap<String, Vec<MissingOp>>,
}

impl Model {
    /// Loads the MetaGraphDef of `export_dir` whose tag-set is exactly `options.tags`.
    pub fn load(export_dir: impl AsRef<Path>, options: &LoadOptions) -> Result<Model> {
        Self::load_with(export_dir, options, crate::kernels::registry())
    }

    /// [`Model::load`] with the kernels of `registry` (a test compares the plans a registry
    /// without a fused op compiles with the usual ones).
    pub fn load_with(
        export_dir: impl AsRef<Path>,
        options: &LoadOptions,
        registry: Arc<crate::engine::Registry>,
    ) -> Result<Model> {
        let export_dir = export_dir.as_ref().to_path_buf();
        let saved = read_saved_model(&export_dir)?;
        let tags: Vec<&str> = options.tags.iter().map(String::as_str).collect();
        let pb = export_dir.join(crate::saved_model::SAVED_MODEL_PB);
        let meta_graph = find_meta_graph(&saved, &tags, &pb)?.clone();
        drop(saved);
        Self::from_meta_graph(export_dir, meta_graph, options, registry)
    }

    /// Loads a TensorFlow 1 frozen GraphDef file (`.pb`) as a model with one signature,
    /// `serving_default` (see `frozen::signature`): its inputs are the graph's placeholders and
    /// its outputs the nodes nothing else reads, each keyed by its node name.
    pub fn load_graph_def(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Model> {
        let path = path.as_ref();
        let graph = crate::saved_model::read_graph_def(path)?;
        let signature = crate::engine::frozen::signature(&graph, path)?;
        let meta_graph = MetaGraphDef {
            graph_def: Some(graph),
            signature_def: HashMap::from([("serving_default".to_string(), signature)]),
            ..Default::default()
        };
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Self::from_meta_graph(dir, meta_graph, options, crate::kernels::registry())
    }

    fn from_meta_graph(
        export_dir: PathBuf,
        mut meta_graph: MetaGraphDef,
        options: &LoadOptions,
        registry: Arc<crate::engine::Registry>,
    ) -> Result<Model> {
        if let Some(objects) = &meta_graph.object_graph_def {
            crate::engine::object_graph::check(objects, &export_dir)?;
        }
        let files = file_access(&export_dir, options);
        let op_list = meta_graph
            .meta_info_def
            .as_ref()
            .and_then(|m| m.stripped_op_list.as_ref())
            .map(|l| l.op.clone())
            .unwrap_or_default();
        let functions = meta_graph.graph_def.as_mut().and_then(|g| g.library.take());
        let graph = meta_graph.graph_def.clone().unwrap_or_default();
        let library = Library::new(functions, &op_list, registry, files);
        let mut model = Model {
            export_dir,
            meta_graph,
            library,
            signatures: Vec::new(),
            object_variables: Vec::new(),
            variables_by_node: HashMap::new(),
            resources_by_node: Default::default(),
            asset_paths: Vec::new(),
            unavailable: BTreeMap::new(),
        };
        let body = graph_body(&graph.node, model.library.op_defs())
            .map_err(|detail| Error::Graph { detail })?;
        let mut reached = model.signature_nodes(&body)?;
        if let Some(missing) = model.missing_ops(&reached) {
            return Err(Error::UnsupportedOps { missing });
        }
        reached.extend(model.object_function_nodes());
        model.unavailable = model.unavailable_functions();
        let assets = model.assets()?;
        model.asset_paths = assets.iter().map(|(_, path)| path.clone()).collect();
        model.restore_variables(&body)?;
        model.run_init_op(&body, &assets)?;
        model
            .library
            .set_fold_variables(!model.writes_variables(&reached));
        model.signatures = model.compile_signatures(&body)?;
        Ok(model)
    }

    pub fn export_dir(&self) -> &Path {
        &self.export_dir
    }

    pub fn meta_graph(&self) -> &MetaGraphDef {
        &self.meta_graph
    }

    /// The MetaGraphDef's SavedObjectGraph, serialized (None when it has none): what a caller
    /// in another language reads of the model's structure, without parsing the file again.
    pub fn object_graph_bytes(&self) -> Option<Vec<u8>> {
        self.meta_graph
            .object_graph_def
            .as_ref()
            .map(Message::encode_to_vec)
    }

    /// The signatures, sorted by name (the init op's is not one).
    pub fn signatures(&self) -> &[Signature] {
        &self.signatures
    }

    /// Signature `name`, or an error listing the available ones.
    pub fn signature(&self, name: &str) -> Result<&Signature> {
        self.signatures
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.signatures.iter().map(|s| s.name.as_str()).collect();
                Error::UnknownSignature {
                    name: name.into(),
                    available: if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    },
                }
            })
    }

    /// Runs signature `name` on `inputs` (by key; every input exactly once); outputs by key.
    pub fn run(
        &self,
        name: &str,
        inputs: Vec<(String, Tensor)>,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        self.run_until(name, inputs, None)
    }

    /// [`Model::run`] with a time limit: past `deadline` the run stops at the next function call
    /// or loop iteration with `Error::DeadlineExceeded` (one long kernel is not interrupted).
    pub fn run_until(
        &self,
        name: &str,
        inputs: Vec<(String, Tensor)>,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        let options = RunOptions {
            deadline,
            ..RunOptions::default()
        };
        self.run_with(name, inputs, &options)
    }

    /// [`Model::run`] under `options` (a time limit, a profile to charge each step to).
    pub fn run_with(
        &self,
        name: &str,
        inputs: Vec<(String, Tensor)>,
        options: &RunOptions,
    ) -> Result<Vec<(String, Arc<Tensor>)>> {
        let signature = self.signature(name)?;
        let args = signature.arrange(inputs)?;
        let outputs = self.run_args(signature, args, options)?;
        Ok(signature
            .outputs
            .iter()
            .map(|spec| spec.key.clone())
            .zip(outputs)
            .collect())
    }

    /// [`Model::run_with`] on inputs given in the order of the signature's `inputs` (sorted by
    /// key), each checked against its spec; outputs in the order of its `outputs`. For callers
    /// that bind keys to positions once per signature (the Python module), so that a call
    /// builds no map of keys.
    pub fn run_ordered(
        &self,
        name: &str,
        inputs: Vec<Tensor>,
        options: &RunOptions,
    ) -> Result<Vec<Arc<Tensor>>> {
        let signature = self.signature(name)?;
        if inputs.len() != signature.inputs.len() {
            return Err(Error::Feed {
                detail: format!(
                    "signature {:?} takes {} inputs ({}), got {}",
                    signature.name,
                    signature.inputs.len(),
                    signature.describe_inputs(),
                    inputs.len()
                ),
            });
        }
        let args = signature
            .inputs
            .iter()
            .zip(inputs)
            .map(|(spec, tensor)| {
                spec.check(&signature.name, &tensor)?;
                Ok(Value::tensor(tensor))
            })
            .collect::<Result<Vec<Value>>>()?;
        self.run_args(signature, args, options)
    }

    /// Runs a signature's plan on its arranged arguments; its outputs as tensors, in order.
    fn run_args(
        &self,
        signature: &Signature,
        args: Vec<Value>,
        options: &RunOptions,
    ) -> Result<Vec<Arc<Tensor>>> {
        let mut ctx = self.context();
        ctx.deadline = options.deadline;
        ctx.profile = options.profile;
        let run = || {
            let started = std::time::Instant::now();
            let values = signature.plan.run(&ctx, &args);
            (values, started.elapsed())
        };
        let hot = signature.hot.load(Ordering::Relaxed);
        let (values, took) = match hot {
            true => workers::run_hot(run),
            false => run(),
        };
        signature
            .hot
            .store(workers::next_hot(took), Ordering::Relaxed);
        let values = values.map_err(|e| named(&signature.name, e))?;
        signature
            .outputs
            .iter()
            .zip(values)
            .map(|(spec, value)| match value {
                Value::Tensor(t) => Ok(t),
                // A TensorFlow 1 graph may fetch a reference variable: its current value.
                Value::Ref(r) => r
                    .as_variable()
                    .map_or(Ok(None), |v| v.read())?
                    .ok_or_else(|| Error::Run {
                        detail: format!(
                            "signature {:?}: output {:?}: variable {} is not initialized",
                            signature.name,
                            spec.key,
                            r.name()
                        ),
                    }),
                other => Err(Error::Run {
                    detail: format!(
                        "signature {:?}: output {:?} is a {}, not a tensor",
                        signature.name,
                        spec.key,
                        other.describe()
                    ),
                }),
            })
            .collect()
    }

    /// The current value of every variable: by object-graph path in TensorFlow 2 models, by
    /// shared name in TensorFlow 1 models. Uninitialized ones are left out. An error only when
    /// a restored value can no longer be read from its checkpoint.
    pub fn variables(&self) -> Result<Vec<(String, Arc<Tensor>)>> {
        let found = if self.object_variables.is_empty() {
            self.library.resources.variables()
        } else {
            self.object_variables.clone()
        };
        let mut values = Vec::with_capacity(found.len());
        for (name, resource) in found {
            if let Some(value) = resource.as_variable().map_or(Ok(None), Variable::peek)? {
                values.push((name, value));
            }
        }
        Ok(values)
    }

    /// Calls concrete function `name` of the object graph (a method of a saved object) on its
    /// flat tensor arguments; the objects it captures (variables, constants, assets, lookup
    /// tables) are supplied as TensorFlow's loader supplies them, so functions and signatures
    /// share state. Argument dtypes and shapes are the caller's to check (the Python layer binds
    /// arguments to the saved input signature first).
    pub fn call_function(
        &self,
        name: &str,
        args: Vec<Tensor>,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<Arc<Tensor>>> {
        if let Some(missing) = self.unavailable.get(name) {
            return Err(Error::UnsupportedOps {
                missing: missing.clone(),
            });
        }
        let objects = self.meta_graph.object_graph_def.as_ref();
        let concrete = objects
            .and_then(|o| o.concrete_functions.get(name))
            .ok_or_else(|| Error::Graph {
                detail: format!("the object graph has no concrete function {name:?}"),
            })?;
        let mut inputs: Vec<Value> = args.into_iter().map(Value::tensor).collect();
        for &node_id in &concrete.bound_inputs {
            inputs.push(self.capture(node_id, name, deadline)?);
        }
        let mut ctx = self.context();
        ctx.deadline = deadline;
        let outputs = ctx.call(name, &inputs).map_err(|e| match e {
            Error::Run { detail } => Error::Run {
                detail: format!("function {name:?}: {detail}"),
            },
            other => other,
        })?;
        outputs
            .into_iter()
            .enumerate()
            .map(|(i, value)| match value {
                Value::Tensor(t) => Ok(t),
                other => Err(Error::Run {
                    detail: format!(
                        "function {name:?}: output {i} is a {}, not a tensor",
                        other.describe()
                    ),
                }),
            })
            .collect()
    }

    /// What a concrete function that captures object `node_id` is fed.
    fn capture(
        &self,
        node_id: i32,
        function: &str,
        deadline: Option<std::time::Instant>,
    ) -> Result<Value> {
        let unknown = |what: &str| {
            Error::Graph {
            detail: format!("function {function:?}: captures object {node_id} ({what}), which the native engine cannot provide"),
        }
        };
        let index = usize::try_from(node_id).map_err(|_| unknown("a negative id"))?;
        if let Some(variable) = self.variables_by_node.get(&index) {
            return Ok(Value::Resource(variable.clone()));
        }
        let objects = self.meta_graph.object_graph_def.as_ref();
        let node = objects
            .and_then(|o| o.nodes.get(index))
            .ok_or_else(|| unknown("not in the object graph"))?;
        match &node.kind {
            Some(Kind::Constant(constant)) => self.constant(&constant.operation, function),
            Some(Kind::Asset(asset)) => {
                let path = usize::try_from(asset.asset_file_def_index)
                    .ok()
                    .and_then(|i| self.asset_paths.get(i))
                    .ok_or_else(|| unknown("an asset the model does not list"))?;
                let text = path.to_string_lossy().into_owned().into_bytes();
                Ok(Value::tensor(Tensor::strings(Vec::new(), vec![text])))
            }
            Some(Kind::Resource(_)) => self.resource(index, node, function, deadline),
            _ => Err(unknown("neither variable, constant, asset nor resource")),
        }
    }

    /// The value of a top-level Const node that a function captures.
    fn constant(&self, operation: &str, function: &str) -> Result<Value> {
        let graph = self.meta_graph.graph_def.as_ref();
        let node = graph
            .and_then(|g| g.node.iter().find(|n| n.name == operation))
            .filter(|n| n.op == "Const")
            .ok_or_else(|| Error::Graph {
                detail: format!(
                    "function {function:?}: captures constant {operation:?}, which is not a Const node of the graph"
                ),
            })?;
        let tensor = Attrs::new(&node.attr)
            .tensor("value")
            .map_err(|detail| Error::Graph {
                detail: format!("constant {operation:?}: {detail}"),
            })?;
        Ok(Value::tensor(tensor))
    }

    /// The handle of resource object `index` (a lookup table): what its `_create_resource`
    /// function returns, made once; it names the same table as the graph's handle op.
    fn resource(
        &self,
        index: usize,
        node: &crate::protos::SavedObject,
        function: &str,
        deadline: Option<std::time::Instant>,
    ) -> Result<Value> {
        let made = self
            .resources_by_node
            .lock()
            .map_err(|_| Error::Run {
                detail: "a resource creator failed in another thread".into(),
            })?
            .get(&index)
            .cloned();
        if let Some(value) = made {
            return Ok(value);
        }
        let objects = self.meta_graph.object_graph_def.as_ref();
        let creator = node
            .children
            .iter()
            .find(|c| c.local_name == "_create_resource")
            .and_then(|c| objects?.nodes.get(usize::try_from(c.node_id).ok()?))
            .and_then(|n| match &n.kind {
                Some(Kind::Function(f)) => f.concrete_functions.first().cloned(),
                _ => None,
            })
            .ok_or_else(|| Error::Graph {
                detail: format!(
                    "function {function:?}: captures object {index}, which has no _create_resource function"
                ),
            })?;
        let mut ctx = self.context();
        ctx.deadline = deadline;
        let value = ctx
            .call(&creator, &[])?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Graph {
                detail: format!("{creator:?} returns no resource"),
            })?;
        if let Ok(mut made) = self.resources_by_node.lock() {
            made.insert(index, value.clone());
        }
        Ok(value)
    }

    fn context(&self) -> RunContext<'_> {
        self.library.context()
    }

    /// The ops the signatures reach: top-level nodes they need, and every node of the functions
    /// those call, each with its function ("" for the top level).
    fn signature_nodes<'m>(&'m self, body: &'m Body) -> Result<Vec<(String, String, String)>> {
        let mut reached = Vec::new();
        let mut roots: Vec<String> = Vec::new();
        for (name, def) in &self.meta_graph.signature_def {
            if name == INIT_OP_SIGNATURE {
                continue;
            }
            let mut fetches = Vec::new();
            let mut feeds = Vec::new();
            for (list, map) in [(&mut feeds, &def.inputs), (&mut fetches, &def.outputs)] {
                for info in map.values() {
                    if let Some(text) = tensor_name(info) {
                        let src = parse_graph_ref(text).map_err(|e| Error::Graph {
                            detail: format!("signature {name:?}: {e}"),
                        })?;
                        self.check_ref(body, &src, text).map_err(|e| Error::Graph {
                            detail: format!("signature {name:?}: {e}"),
                        })?;
                        list.push(src);
                    }
                }
            }
            let ir = crate::engine::ir::build(body, &feeds, &fetches, &[], false, &self.library)
                .map_err(|e| named(name, e))?;
            for node in &ir.nodes {
                reached.push((node.op.clone(), node.name.clone(), String::new()));
                roots.extend(
                    Attrs::new(&node.attrs)
                        .all_functions()
                        .into_iter()
                        .map(String::from),
                );
                if self.library.has_function(&node.op) {
                    roots.push(node.op.clone());
                }
            }
        }
        reached.extend(self.function_nodes(&roots));
        Ok(reached)
    }

    /// `(op, node, function)` of every node in `roots` and the functions they call.
    fn function_nodes(&self, roots: &[String]) -> Vec<(String, String, String)> {
        self.library
            .reachable_nodes(roots)
            .into_iter()
            .map(|(function, node)| (node.op.clone(), node.name.clone(), function.to_string()))
            .collect()
    }

    /// The object graph's concrete functions, sorted by name.
    fn object_functions(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .meta_graph
            .object_graph_def
            .iter()
            .flat_map(|o| o.concrete_functions.keys().cloned())
            .collect();
        names.sort();
        names
    }

    /// The nodes of the object graph's functions (and what they call).
    fn object_function_nodes(&self) -> Vec<(String, String, String)> {
        self.function_nodes(&self.object_functions())
    }

    /// Each object-graph function that reaches an op without a native kernel, with those ops.
    fn unavailable_functions(&self) -> BTreeMap<String, Vec<MissingOp>> {
        if self.missing_ops(&self.object_function_nodes()).is_none() {
            return BTreeMap::new();
        }
        self.object_functions()
            .into_iter()
            .filter_map(|name| {
                let nodes = self.function_nodes(std::slice::from_ref(&name));
                self.missing_ops(&nodes).map(|missing| (name, missing))
            })
            .collect()
    }

    /// The object-graph functions that need ops without a native kernel, with those ops (use
    /// of each, sorted): calling one is an `UnsupportedOps` error.
    pub fn unavailable(&self) -> &BTreeMap<String, Vec<MissingOp>> {
        &self.unavailable
    }

    /// Whether tensor `src` (written `text`) is an output the graph's node has.
    fn check_ref(&self, body: &Body, src: &Src, text: &str) -> std::result::Result<(), String> {
        let Src::Node(node, index) = src else {
            return Ok(());
        };
        let def = body
            .nodes
            .get(node.as_str())
            .ok_or_else(|| format!("tensor {text:?} names no node of the graph"))?
            .def;
        match crate::engine::graph::output_count(def, self.library.op_defs()) {
            Some(Ok(count)) if *index < count => Ok(()),
            Some(Ok(count)) => Err(format!(
                "tensor {text:?} names output {index} of node {node:?}, which has {count} output(s)"
            )),
            Some(Err(e)) => Err(format!("node {node:?} (op {}): {e}", def.op)),
            None => Ok(()),
        }
    }

    /// Every use, among `reached`, of an op that has no kernel; None when there is none.
    fn missing_ops(&self, reached: &[(String, String, String)]) -> Option<Vec<MissingOp>> {
        let mut missing: Vec<MissingOp> = reached
            .iter()
            .filter(|(op, _, _)| {
                !self.library.registry().contains(op) && !self.library.has_function(op)
            })
            .map(|(op, node, function)| MissingOp {
                op: op.clone(),
                node: node.clone(),
                function: function.clone(),
            })
            .collect();
        if missing.is_empty() {
            return None;
        }
        missing.sort();
        missing.dedup();
        Some(missing)
    }

    /// Whether any op the signatures or object-graph functions reach can assign a variable;
    /// if none can, variable reads are folded into the plans as constants.
    fn writes_variables(&self, reached: &[(String, String, String)]) -> bool {
        const WRITERS: [&str; 5] = [
            "Assign",
            "ResourceApply",
            "ResourceSparseApply",
            "ResourceScatter",
            "ResourceStridedSliceAssign",
        ];
        reached
            .iter()
            .any(|(op, _, _)| WRITERS.iter().any(|w| op.starts_with(w)))
    }

    fn compile_signatures(&self, body: &Body) -> Result<Vec<Signature>> {
        let mut sorted: Vec<(&String, &SignatureDef)> =
            self.meta_graph.signature_def.iter().collect();
        sorted.sort_by_key(|(name, _)| name.as_str());
        let mut signatures = sorted
            .into_iter()
            .filter(|(name, _)| *name != INIT_OP_SIGNATURE)
            .map(|(name, def)| Signature::compile(name, def, body, &self.library))
            .collect::<Result<Vec<Signature>>>()?;
        let mut plans: Vec<&mut Plan> = signatures.iter_mut().map(|s| &mut s.plan).collect();
        Plan::absorb_together(&mut plans);
        Ok(signatures)
    }

    /// Runs the top-level graph: `feeds` in, `fetches` out, after `targets`.
    fn run_graph(
        &self,
        body: &Body,
        feeds: Vec<(Src, Value)>,
        fetches: &[Src],
        targets: &[String],
    ) -> Result<Vec<Value>> {
        let (srcs, values): (Vec<Src>, Vec<Value>) = feeds.into_iter().unzip();
        let request = Request {
            feeds: &srcs,
            fetches,
            targets,
            keep_stateful: false,
        };
        let plan = Plan::compile("graph", body, &request, &self.library)?;
        plan.run(&self.context(), &values)
    }

    fn assets(&self) -> Result<Vec<(AssetFileDef, PathBuf)>> {
        let mut defs: Vec<AssetFileDef> = self.meta_graph.asset_file_def.clone();
        if defs.is_empty() {
            if let Some(collection_def::Kind::AnyList(list)) = self
                .meta_graph
                .collection_def
                .get(ASSETS_COLLECTION)
                .and_then(|c| c.kind.as_ref())
            {
                for (i, any) in list.value.iter().enumerate() {
                    defs.push(AssetFileDef::decode(any.value.as_slice()).map_err(|e| {
                        self.damaged(format!(
                        "collection {ASSETS_COLLECTION:?} item {i} is not an AssetFileDef ({e})"
                    ))
                    })?);
                }
            }
        }
        defs.into_iter()
            .map(|def| {
                let path = self.asset_path(&def.filename)?;
                Ok((def, path))
            })
            .collect()
    }

    /// The model's copy of asset `filename`, which must stay inside `assets/`.
    fn asset_path(&self, filename: &str) -> Result<PathBuf> {
        let relative = Path::new(filename);
        let plain = relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let path = self.export_dir.join("assets").join(relative);
        if !plain && !self.library.files.unrestricted {
            return Err(self.damaged(format!(
                "asset {filename:?} names a file outside the model's assets/"
            )));
        }
        self.library
            .files
            .readable(&path.to_string_lossy(), &format!("asset {filename:?}"))
            .map_err(|e| self.damaged(e.to_string()))
    }

    /// Refuses checkpoint files outside the model directory (a link in `variables/`, or
    /// `variables/` itself a link), unless the caller allowed any file.
    fn confine_variables(&self, prefix: &Path) -> Result<()> {
        let index = index_path(prefix);
        let mut files = vec![index];
        if let Ok(entries) = std::fs::read_dir(prefix.parent().unwrap_or(prefix)) {
            files.extend(
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("variables.data-"))
                    }),
            );
        }
        for file in files.iter().filter(|f| f.symlink_metadata().is_ok()) {
            let text = file.to_string_lossy();
            self.library
                .files
                .readable(&text, &format!("variables file {text}"))?;
        }
        Ok(())
    }

    fn damaged(&self, detail: String) -> Error {
        Error::Corrupt {
            path: self.export_dir.join(crate::saved_model::SAVED_MODEL_PB),
            what: "MetaGraphDef".into(),
            detail,
        }
    }

    /// Restores the variables; returns the values the signatures' plans will read, to be held
    /// while they compile (see [`Self::restore_object_variables`]).
    fn restore_variables(&mut self, body: &Body) -> Result<Vec<Arc<Tensor>>> {
        let objects = self.meta_graph.object_graph_def.clone().unwrap_or_default();
        let has_variables = objects
            .nodes
            .iter()
            .any(|n| matches!(n.kind, Some(Kind::Variable(_))));
        let has_saveables = objects.nodes.iter().any(|n| !n.saveable_objects.is_empty());
        if has_variables || has_saveables {
            return self.restore_object_variables(body, &objects);
        }
        let saver = self.meta_graph.saver_def.clone().unwrap_or_default();
        if saver.restore_op_name.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = self.export_dir.join("variables").join("variables");
        self.confine_variables(&prefix)?;
        if !index_path(&prefix).is_file() {
            return Err(Error::Missing {
                path: index_path(&prefix),
            });
        }
        let feed = parse_graph_ref(&saver.filename_tensor_name)
            .map_err(|detail| Error::Graph { detail })?;
        let path = Tensor::strings(
            Vec::new(),
            vec![prefix.to_string_lossy().into_owned().into_bytes()],
        );
        let target = saver
            .restore_op_name
            .split(':')
            .next()
            .unwrap_or_default()
            .to_string();
        self.run_graph(body, vec![(feed, Value::tensor(path))], &[], &[target])
            .map(|_| Vec::new())
            .map_err(|e| named_load("restoring variables", e))
    }

    /// Restores a TensorFlow 2 model's variables. Each value is read and checked, then left in
    /// the checkpoint (see `Variable::restore`): plans fold variable reads into constants, often
    /// weights scaled by batch norm, so holding the raw values too would double a model's
    /// memory. The values of variables some function captures are returned, for the loader to
    /// hold while the signatures compile, so that the plans share one copy.
    fn restore_object_variables(
        &mut self,
        body: &Body,
        objects: &crate::protos::SavedObjectGraph,
    ) -> Result<Vec<Arc<Tensor>>> {
        let prefix = self.export_dir.join("variables").join("variables");
        self.confine_variables(&prefix)?;
        let reader = Arc::new(BundleReader::open(&prefix)?);
        let captured: HashSet<i32> = objects
            .concrete_functions
            .values()
            .flat_map(|f| f.bound_inputs.iter().copied())
            .collect();
        let mut held = Vec::new();
        let index = index_path(&prefix);
        let graph_tensor = reader.read(OBJECT_GRAPH_KEY)?;
        let bytes = graph_tensor
            .string_values()
            .and_then(|v| v.first())
            .ok_or_else(|| Error::Corrupt {
                path: index.clone(),
                what: OBJECT_GRAPH_KEY.into(),
                detail: "is not a string".into(),
            })?;
        let checkpoint =
            TrackableObjectGraph::decode(bytes.as_slice()).map_err(|source| Error::Decode {
                path: index.clone(),
                message: "TrackableObjectGraph",
                key: Some(OBJECT_GRAPH_KEY.into()),
                source,
            })?;
        let paths = crate::engine::object_graph::object_paths(objects);
        let mut by_node: HashMap<usize, Resource> = HashMap::new();
        for (node_id, node) in objects.nodes.iter().enumerate() {
            let Some(Kind::Variable(saved)) = &node.kind else {
                continue;
            };
            let place = format!("variable {:?} (object {node_id})", saved.name);
            let dtype = DType::from_proto(saved.dtype).ok_or_else(|| Error::Corrupt {
                path: index.clone(),
                what: place.clone(),
                detail: format!("DataType {} is not supported", saved.dtype),
            })?;
            let key = checkpoint
                .nodes
                .get(node_id)
                .and_then(|n| n.attributes.iter().find(|a| a.name == VARIABLE_VALUE))
                .map(|a| a.checkpoint_key.clone())
                .ok_or_else(|| Error::Corrupt {
                    path: index.clone(),
                    what: place.clone(),
                    detail: "the checkpoint holds no value for it".into(),
                })?;
            let value = Arc::new(reader.read(&key)?);
            if value.dtype() != dtype {
                return Err(Error::Corrupt {
                    path: index.clone(),
                    what: place,
                    detail: format!(
                        "checkpoint holds {}, the model declares {dtype}",
                        value.dtype()
                    ),
                });
            }
            let name = paths
                .get(&node_id)
                .cloned()
                .unwrap_or_else(|| saved.name.clone());
            let variable = Resource::variable(name.clone(), Some(dtype));
            if let Some(v) = variable.as_variable() {
                let source = Arc::new(Checkpointed {
                    reader: Arc::clone(&reader),
                    key,
                });
                v.restore(&value, source);
            }
            if i32::try_from(node_id).is_ok_and(|id| captured.contains(&id)) {
                held.push(value);
            }
            by_node.insert(node_id, variable.clone());
            self.object_variables.push((name, variable));
        }
        self.object_variables.sort_by(|a, b| a.0.cmp(&b.0));
        self.bind_captured_handles(body, objects, &by_node);
        self.variables_by_node = by_node;
        self.restore_saveables(&reader, &checkpoint, objects, &index)?;
        reader.release_shards();
        Ok(held)
    }

    /// Restores the state objects save through functions (a mutable table's keys and values),
    /// as TensorFlow's loader does: the save function, called with an empty checkpoint key,
    /// names the suffix of each of its tensors' keys; the restore function takes the tensors
    /// read from the checkpoint under those keys.
    fn restore_saveables(
        &self,
        reader: &BundleReader,
        checkpoint: &TrackableObjectGraph,
        objects: &crate::protos::SavedObjectGraph,
        index: &Path,
    ) -> Result<()> {
        for (node_id, node) in objects.nodes.iter().enumerate() {
            let mut saveables: Vec<_> = node.saveable_objects.iter().collect();
            saveables.sort_by_key(|(name, _)| name.as_str());
            for (name, saveable) in saveables {
                let place = format!("object {node_id}, saveable {name:?}");
                let damaged = |detail: String| Error::Corrupt {
                    path: index.to_path_buf(),
                    what: place.clone(),
                    detail,
                };
                let key = checkpoint
                    .nodes
                    .get(node_id)
                    .and_then(|n| n.attributes.iter().find(|a| a.name == *name))
                    .map(|a| a.checkpoint_key.clone())
                    .ok_or_else(|| damaged("the checkpoint holds no value for it".into()))?;
                let (save, save_outputs) = self.bare_function(objects, saveable.save_function)?;
                let empty = Tensor::strings(Vec::new(), vec![Vec::new()]);
                let specs = self.call_function(&save, vec![empty], None)?;
                let names = leaf_keys(save_outputs);
                let mut tensors = Vec::new();
                for (spec, leaf) in specs.iter().zip(&names) {
                    if leaf.as_deref() != Some("name") {
                        continue;
                    }
                    let suffix = spec
                        .string_values()
                        .and_then(|v| v.first())
                        .ok_or_else(|| damaged("the save function names no key".into()))?;
                    let full = format!("{key}{}", String::from_utf8_lossy(suffix));
                    tensors.push(reader.read(&full)?);
                }
                let (restore, _) = self.bare_function(objects, saveable.restore_function)?;
                self.call_function(&restore, tensors, None)
                    .map_err(|e| named_load(&format!("restoring {place}"), e))?;
            }
        }
        Ok(())
    }

    /// The concrete function of object `node_id` (a bare concrete function), with its output
    /// structure.
    fn bare_function<'o>(
        &self,
        objects: &'o crate::protos::SavedObjectGraph,
        node_id: i32,
    ) -> Result<(String, Option<&'o crate::protos::StructuredValue>)> {
        let name = usize::try_from(node_id)
            .ok()
            .and_then(|i| objects.nodes.get(i))
            .and_then(|n| match &n.kind {
                Some(Kind::BareConcreteFunction(f)) => Some(f.concrete_function_name.clone()),
                _ => None,
            })
            .ok_or_else(|| {
                self.damaged(format!("object {node_id} is not a saved concrete function"))
            })?;
        let outputs = objects
            .concrete_functions
            .get(&name)
            .and_then(|f| f.output_signature.as_ref());
        Ok((name, outputs))
    }

    /// Points the top-level VarHandleOps that call nodes capture at the restored variables: a
    /// call's last inputs are its concrete function's bound inputs, in order.
    fn bind_captured_handles(
        &self,
        body: &Body,
        objects: &crate::protos::SavedObjectGraph,
        by_node: &HashMap<usize, Resource>,
    ) {
        for name in &body.order {
            let node = &body.nodes[name];
            if node.def.op != "StatefulPartitionedCall" && node.def.op != "PartitionedCall" {
                continue;
            }
            let Ok(f) = Attrs::new(&node.attrs).func("f") else {
                continue;
            };
            let Some(concrete) = objects.concrete_functions.get(&f.name) else {
                continue;
            };
            let bound = &concrete.bound_inputs;
            let first = node.inputs.len().saturating_sub(bound.len());
            for (src, node_id) in node.inputs[first..].iter().zip(bound) {
                let Src::Node(producer, _) = src else {
                    continue;
                };
                let Some(handle) = body.nodes.get(producer.as_str()) else {
                    continue;
                };
                let variable = usize::try_from(*node_id).ok().and_then(|i| by_node.get(&i));
                if let (true, Some(variable)) = (handle.def.op == "VarHandleOp", variable) {
                    let attrs = Attrs::new(&handle.attrs);
                    let container = attrs.string_or("container", "").unwrap_or_default();
                    let shared = attrs.string_or("shared_name", "").unwrap_or_default();
                    let shared = if shared.is_empty() {
                        handle.def.name.as_str()
                    } else {
                        shared
                    };
                    self.library
                        .resources
                        .bind(container, shared, variable.clone());
                }
            }
        }
    }

    fn run_init_op(&self, body: &Body, assets: &[(AssetFileDef, PathBuf)]) -> Result<()> {
        let names: Vec<String> = match self.meta_graph.signature_def.get(INIT_OP_SIGNATURE) {
            Some(init) => init
                .outputs
                .values()
                .filter_map(tensor_name)
                .map(String::from)
                .collect(),
            None => INIT_OP_COLLECTIONS
                .iter()
                .find_map(|key| {
                    match self
                        .meta_graph
                        .collection_def
                        .get(*key)
                        .and_then(|c| c.kind.as_ref())
                    {
                        Some(collection_def::Kind::NodeList(list)) => Some(list.value.clone()),
                        _ => None,
                    }
                })
                .unwrap_or_default(),
        };
        let targets: Vec<String> = names
            .iter()
            .map(|n| {
                n.split(':')
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches('^')
                    .to_string()
            })
            .collect();
        for target in &targets {
            if !body.nodes.contains_key(target.as_str()) {
                return Err(
                    self.damaged(format!("the init op {target:?} is not a node of the graph"))
                );
            }
        }
        let trivial = targets.iter().all(|t| {
            body.nodes[t.as_str()].def.op == "NoOp" && body.nodes[t.as_str()].control.is_empty()
        });
        if targets.is_empty() || trivial {
            return Ok(());
        }
        let mut feeds = Vec::new();
        for (asset, path) in assets {
            let name = asset
                .tensor_info
                .as_ref()
                .and_then(tensor_name)
                .unwrap_or_default();
            let src = parse_graph_ref(name).map_err(|detail| Error::Graph { detail })?;
            let path = Tensor::strings(
                Vec::new(),
                vec![path.to_string_lossy().into_owned().into_bytes()],
            );
            feeds.push((src, Value::tensor(path)));
        }
        self.run_graph(body, feeds, &[], &targets)
            .map(drop)
            .map_err(|e| named_load("running the init op", e))
    }
}

impl Signature {
    /// The ops its plan runs, in order (after inlining, folding and fusion).
    pub fn ops(&self) -> Vec<&str> {
        self.plan.ops()
    }

    fn compile(
        name: &str,
        def: &SignatureDef,
        body: &Body,
        library: &Library,
    ) -> Result<Signature> {
        let inputs = specs(name, &def.inputs)?;
        let outputs = specs(name, &def.outputs)?;
        let parse = |spec: &TensorSpec| {
            parse_graph_ref(&spec.tensor_name).map_err(|e| Error::Graph {
                detail: format!("signature {name:?}: {:?}: {e}", spec.key),
            })
        };
        let feeds: Vec<Src> = inputs.iter().map(parse).collect::<Result<_>>()?;
        let fetches: Vec<Src> = outputs.iter().map(parse).collect::<Result<_>>()?;
        let request = Request {
            feeds: &feeds,
            fetches: &fetches,
            targets: &[],
            keep_stateful: false,
        };
        let plan =
            Plan::compile_holding("graph", body, &request, library).map_err(|e| named(name, e))?;
        Ok(Signature {
            name: name.into(),
            method_name: def.method_name.clone(),
            inputs,
            outputs,
            plan,
            hot: AtomicBool::new(false),
        })
    }

    /// The caller's inputs in the plan's order, each checked against its spec.
    fn arrange(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<Value>> {
        let mut by_key: BTreeMap<String, Tensor> = BTreeMap::new();
        for (key, tensor) in inputs {
            by_key.insert(key, tensor);
        }
        let expected: HashSet<&str> = self.inputs.iter().map(|s| s.key.as_str()).collect();
        let missing: Vec<&str> = self
            .inputs
            .iter()
            .map(|s| s.key.as_str())
            .filter(|k| !by_key.contains_key(*k))
            .collect();
        let extra: Vec<&str> = by_key
            .keys()
            .map(String::as_str)
            .filter(|k| !expected.contains(k))
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            let mut problems = Vec::new();
            if !missing.is_empty() {
                problems.push(format!("missing {missing:?}"));
            }
            if !extra.is_empty() {
                problems.push(format!("unexpected {extra:?}"));
            }
            return Err(Error::Feed {
                detail: format!(
                    "signature {:?} takes inputs {}; {}",
                    self.name,
                    self.describe_inputs(),
                    problems.join("; ")
                ),
            });
        }
        self.inputs
            .iter()
            .map(|spec| {
                let tensor = by_key
                    .remove(&spec.key)
                    .unwrap_or_else(|| Tensor::strings(Vec::new(), vec![Vec::new()]));
                spec.check(&self.name, &tensor)?;
                Ok(Value::tensor(tensor))
            })
            .collect()
    }

    fn describe_inputs(&self) -> String {
        self.inputs
            .iter()
            .map(|s| format!("{}: {} {}", s.key, s.dtype, shape_text(s.shape.as_deref())))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl TensorSpec {
    fn check(&self, signature: &str, tensor: &Tensor) -> Result<()> {
        let fail = |what: String| Error::Feed {
            detail: format!("input {:?} of signature {signature:?}: {what}", self.key),
        };
        if tensor.dtype() != self.dtype {
            return Err(fail(format!(
                "expected {}, got {}",
                self.dtype,
                tensor.dtype()
            )));
        }
        if let Some(dims) = &self.shape {
            let fits = dims.len() == tensor.rank()
                && dims
                    .iter()
                    .zip(tensor.shape())
                    .all(|(&d, &n)| d < 0 || d as usize == n);
            if !fits {
                return Err(fail(format!(
                    "expected shape {}, got {:?}",
                    shape_text(Some(dims)),
                    tensor.shape()
                )));
            }
        }
        Ok(())
    }
}

/// `(None, 3)`-style text of a partial shape.
pub fn shape_text(shape: Option<&[i64]>) -> String {
    match shape {
        None => "unknown rank".into(),
        Some(dims) => {
            let parts: Vec<String> = dims
                .iter()
                .map(|&d| if d < 0 { "None".into() } else { d.to_string() })
                .collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
    }
}

fn specs(signature: &str, map: &HashMap<String, TensorInfo>) -> Result<Vec<TensorSpec>> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let info = &map[key];
            let fail = |what: &str| Error::Graph {
                detail: format!("signature {signature:?}: {key:?} {what}"),
            };
            let name = tensor_name(info).ok_or_else(|| {
                fail("is a sparse or composite tensor, which the native engine does not support")
            })?;
            let dtype = DType::from_proto(info.dtype).ok_or_else(|| {
                fail(&format!(
                    "has DataType {}, which the native engine does not support",
                    info.dtype
                ))
            })?;
            let shape = info
                .tensor_shape
                .as_ref()
                .and_then(|s| (!s.unknown_rank).then(|| s.dim.iter().map(|d| d.size).collect()));
            Ok(TensorSpec {
                key: key.clone(),
                tensor_name: name.to_string(),
                dtype,
                shape,
            })
        })
        .collect()
}

fn tensor_name(info: &TensorInfo) -> Option<&str> {
    match &info.encoding {
        Some(tensor_info::Encoding::Name(name)) => Some(name),
        _ => None,
    }
}

fn file_access(export_dir: &Path, options: &LoadOptions) -> FileAccess {
    let mut roots = vec![export_dir.to_path_buf()];
    roots.extend(options.output_dir.clone());
    FileAccess {
        read_roots: roots,
        write_roots: options.output_dir.clone().into_iter().collect(),
        unrestricted: options.allow_file_access,
    }
}

/// For each tensor leaf of a structure, in TensorFlow's flattening order (dict entries sorted
/// by key), the key of the dict entry that holds it directly (None outside a dict).
fn leaf_keys(structure: Option<&crate::protos::StructuredValue>) -> Vec<Option<String>> {
    use crate::protos::structured_value::Kind as S;
    fn walk(
        value: &crate::protos::StructuredValue,
        key: Option<&str>,
        out: &mut Vec<Option<String>>,
    ) {
        match &value.kind {
            Some(S::ListValue(l)) => l.values.iter().for_each(|v| walk(v, None, out)),
            Some(S::TupleValue(t)) => t.values.iter().for_each(|v| walk(v, None, out)),
            Some(S::DictValue(d)) => {
                let mut entries: Vec<_> = d.fields.iter().collect();
                entries.sort_by_key(|(k, _)| k.as_str());
                entries.into_iter().for_each(|(k, v)| walk(v, Some(k), out));
            }
            Some(S::NamedTupleValue(n)) => n.values.iter().for_each(|p| {
                if let Some(v) = &p.value {
                    walk(v, Some(&p.key), out)
                }
            }),
            Some(S::TensorSpecValue(_) | S::BoundedTensorSpecValue(_)) => {
                out.push(key.map(String::from))
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(value) = structure {
        walk(value, None, &mut out);
    }
    out
}

fn named(signature: &str, err: Error) -> Error {
    match err {
        Error::DeadlineExceeded { detail } => Error::DeadlineExceeded {
            detail: format!("signature {signature:?}: {detail}"),
        },
        Error::Run { detail } => Error::Run {
            detail: format!("signature {signature:?}: {detail}"),
        },
        Error::Graph { detail } => Error::Graph {
            detail: format!("signature {signature:?}: {detail}"),
        },
        Error::FileAccess { detail } => Error::FileAccess {
            detail: format!("signature {signature:?}: {detail}"),
        },
        other => other,
    }
}

fn named_load(what: &str, err: Error) -> Error {
    match err {
        Error::Run { detail } => Error::Run {
            detail: format!("{what}: {detail}"),
        },
        Error::FileAccess { detail } => Error::FileAccess {
            detail: format!("{what}: {detail}"),
        },
        other => other,
    }
}

/// A model is shared by threads that run signatures at once (a server, Python without the GIL).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Model>();
};

/// A restored variable's value in the model's checkpoint, read again when asked for.
struct Checkpointed {
    reader: Arc<BundleReader>,
    key: String,
}

impl Stored for Checkpointed {
    fn load(&self) -> Result<Tensor> {
        self.reader.read(&self.key)
    }
}
