"""Loading a SavedModel into a runnable Model, without TensorFlow and without the code that
defined it.

Variables are restored the way TensorFlow 2 restores them: each variable of the object graph
gets its value from the checkpoint key that the checkpoint's own object graph (same node ids)
records for it. The top-level graph's `VarHandleOp` nodes that signatures capture are bound to
those same variables, so signatures and functions share state. Models without an object graph
(TensorFlow 1 exports) are restored by running the saver's restore op instead. Then the init op
runs, as in TensorFlow's loaders, with each asset's placeholder fed the path of the model's own
copy of the file (`assets/<name>`); functions that capture an asset object get that path too.
An asset whose name or symbolic links lead outside the model's directory is refused at load.

File-system ops the model runs (its init op restoring `variables/`, ReadFile, SaveV2, ...) may
read only inside the model's directory and write only inside the caller's `output_dir`, unless
the caller passes `allow_file_access=True` (runtime.file_access).

Lookup tables are resources made by their handle ops on first use and shared by (container,
shared_name). The init op initializes them (TensorFlow 1 exports without one get their
`table_initializer` collection run, as TensorFlow 2's loader does); functions that capture a
table object get the handle its `_create_resource` function makes, which names the same table;
state that objects save through functions (a mutable table's contents) is restored from the
checkpoint through their saved restore functions before the init op runs.
"""
from __future__ import annotations

import collections
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from savedmodel.protos import meta_graph_pb2, struct_pb2, trackable_object_graph_pb2
from savedmodel.runtime import executor, progress, structure
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.deadline import DeadlineExceededError
from savedmodel.runtime.dtypes import UnknownDTypeError, from_enum, from_name
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.executor import Context, NodeError
from savedmodel.runtime.feeds import FeedError, to_input
from savedmodel.runtime.file_access import UNRESTRICTED, FileAccess, FileAccessError, asset_path, model_file
from savedmodel.runtime.library import FunctionLibrary
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.object_graph import (ConcreteFunction, RestoredFunction, check_object_graph, object_paths,
                                           restored_functions)
from savedmodel.runtime.plan import GraphError, GraphNode, GraphSpec, Plan, Ref, check_ref, compile_plan
from savedmodel.runtime.protofiles import parse_message
from savedmodel.runtime.resources import ResourceManager, Variable
from savedmodel.runtime.saved_model_file import find_meta_graph, read_saved_model
from savedmodel.runtime.signatures import Signatures
from savedmodel.runtime.specs import TensorSpecInfo
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader, index_path
from savedmodel.runtime.tensor_proto import shape_from_proto, string_text

INIT_OP_SIGNATURE = "__saved_model_init_op"
INIT_OP_COLLECTIONS = ("saved_model_main_op", "legacy_init_op")
"""Where TensorFlow 1 exports without the init-op signature name their init op, by priority."""
TABLE_INITIALIZERS = "table_initializer"
"""Where TensorFlow 1 graphs list their table initializers (`tf.compat.v1.tables_initializer`);
TensorFlow 2's loader runs them when a TensorFlow 1 export names no init op."""
ASSETS_COLLECTION = "saved_model_assets"
"""Where TensorFlow 1 style exports (SavedModelBuilder) list their assets when the MetaGraphDef's
`asset_file_def` is empty (AssetFileDefs packed in Any)."""
VARIABLE_VALUE = "VARIABLE_VALUE"


def load_numpy(export_dir: str | Path, tags: Iterable[str] = ("serve",), *, allow_file_access: bool = False,
               output_dir: str | Path | None = None, limits: Limits = DEFAULT,
               reason: str = "engine='numpy' was asked for") -> Model:
    """The MetaGraphDef of `export_dir` tagged exactly `tags` on the numpy engine (what
    `runtime.load(..., engine="numpy")` does); `reason` becomes its `engine_reason`."""
    export_dir = Path(export_dir)
    meta_graph = find_meta_graph(read_saved_model(export_dir, limits), set(tags), str(export_dir))
    model = Model(export_dir, meta_graph, allow_file_access=allow_file_access, output_dir=output_dir,
                  limits=limits)
    model.engine_reason = reason
    return model


class Model:
    """A loaded SavedModel: `signatures`, `functions` (the object graph's methods by dotted
    path), and `variables` (current values by name)."""

    engine = "numpy"
    engine_reason = ""

    def __init__(self, export_dir: Path, meta_graph: meta_graph_pb2.MetaGraphDef, *,
                 allow_file_access: bool = False, output_dir: str | Path | None = None,
                 limits: Limits = DEFAULT):
        self.export_dir = export_dir
        self._meta_graph = meta_graph
        self._limits = limits
        check_object_graph(meta_graph.object_graph_def, str(export_dir))
        op_defs = {op.name: op for op in meta_graph.meta_info_def.stripped_op_list.op}
        self._library = FunctionLibrary(meta_graph.graph_def.library, op_defs, limits)
        self._context = Context(self._library, ResourceManager(), file_access=UNRESTRICTED if allow_file_access
                                else FileAccess.confined(export_dir, output_dir))
        self._assets = self._read_assets()
        self._graph = graph_spec(meta_graph, op_defs, self._library, self._context.resources, limits)
        self._variables_by_node: dict[int, Variable] = {}
        self._resources_by_node: dict[int, object] = {}
        self._object_variables = self._restore_variables()
        self._run_init_op()
        self.signatures = Signatures({key: Signature(self, key, sig) for key, sig in
                                      sorted(meta_graph.signature_def.items()) if key != INIT_OP_SIGNATURE})
        self.functions = self._restored_functions()

    @property
    def variables(self) -> dict[str, np.ndarray]:
        """Current value of every variable: by object-graph path in TensorFlow 2 models, by
        shared name in TensorFlow 1 models."""
        found = self._object_variables or self._context.resources.by_name()
        return {name: var.value for name, var in found.items()}

    # What the authoring side's `sm.saved_model.load` builds its object tree on.

    @property
    def _object_graph(self):
        """The SavedObjectGraph, as runtime.object_graph reads it from either engine's model."""
        return self._meta_graph.object_graph_def

    @property
    def meta_graph(self) -> meta_graph_pb2.MetaGraphDef:
        return self._meta_graph

    @property
    def library(self) -> FunctionLibrary:
        return self._library

    def object_variable(self, node_id: int) -> Variable | None:
        """The restored variable of object-graph node `node_id` (None if it is not one)."""
        return self._variables_by_node.get(node_id)

    def object_value(self, node_id: int, where: str):
        """What a function that captures object `node_id` is fed: a variable or a constant."""
        return self._capture(node_id, where)

    def object_paths(self) -> dict[int, str]:
        """The dotted path of every object reachable from the root (the root has none)."""
        return object_paths(self._meta_graph.object_graph_def.nodes)

    def resource_variables(self) -> dict[str, Variable]:
        """Every variable the top-level graph's ops created or were bound to, by shared name."""
        return self._context.resources.by_name()

    def call_function(self, name: str, inputs: list) -> tuple:
        """Run library function `name` on flat inputs (arguments, then captured values)."""
        with np.errstate(all="ignore"):
            return self._context.call(name, inputs)

    def run_graph(self, feeds: dict[Ref, object], fetches: list[Ref], targets=()) -> list:
        """Run the top-level graph with session semantics (only what fetches need)."""
        plan = compile_plan(self._graph, feeds.keys(), fetches, targets)
        return executor.run(plan, feeds.values(), self._context)

    def _compile(self, feeds: list[Ref], fetches: list[Ref], targets=()) -> Plan:
        return compile_plan(self._graph, feeds, fetches, targets)

    def _run(self, plan: Plan, values: list) -> list:
        return executor.run(plan, values, self._context)

    def _restore_variables(self) -> dict[str, Variable]:
        objects = self._meta_graph.object_graph_def
        if any(node.HasField("variable") or node.saveable_objects for node in objects.nodes):
            return self._restore_object_variables()
        if self._meta_graph.saver_def.restore_op_name:
            self._restore_with_saver()
        return {}

    def _variables_prefix(self) -> Path:
        return self.export_dir / "variables" / "variables"

    def _confine(self, path: Path, what: str) -> None:
        """Refuse a checkpoint file outside the model directory (a link in `variables/`, or
        `variables/` itself a link), unless the caller allowed any file."""
        model_file(self.export_dir, path, f"{what} {path}", self._context.file_access)

    def _restore_object_variables(self) -> dict[str, Variable]:
        prefix = self._variables_prefix()
        reader = BundleReader(prefix, self._limits, self._confine)
        checkpoint_graph = parse_message(reader.read(OBJECT_GRAPH_KEY)[()],
                                         trackable_object_graph_pb2.TrackableObjectGraph,
                                         f"{index_path(prefix)}: {OBJECT_GRAPH_KEY}")
        nodes = self._meta_graph.object_graph_def.nodes
        paths = object_paths(nodes)
        variables = {}
        count = sum(node.HasField("variable") for node in nodes)
        with progress.task("restoring variables", count, "variables") as advance:
            for node_id, node in enumerate(nodes):
                if not node.HasField("variable"):
                    continue
                saved = node.variable
                try:
                    dtype = from_enum(saved.dtype)
                except UnknownDTypeError as err:
                    raise FileFormatError(f"{self.export_dir}: variable {saved.name!r} (object "
                                          f"{node_id}): {err}") from None
                variable = Variable(saved.name, dtype, shape_from_proto(saved.shape))
                variable.assign(_checkpoint_value(reader, checkpoint_graph, node_id, variable, prefix))
                self._variables_by_node[node_id] = variable
                variables[paths.get(node_id, saved.name)] = variable
                advance()
        self._bind_captured_handles()
        self._restore_saveables(reader, checkpoint_graph, prefix)
        return variables

    def _restore_saveables(self, reader: BundleReader, checkpoint_graph, prefix: Path) -> None:
        """Restore the state that objects save through functions (a mutable table's keys and
        values), as TensorFlow's loader does: the save function, called with an empty
        checkpoint key, gives the suffix of each of its tensors' keys; the restore function
        takes the tensors read from the checkpoint."""
        nodes = self._meta_graph.object_graph_def.nodes
        for node_id, node in enumerate(nodes):
            for name, saveable in sorted(node.saveable_objects.items()):
                where = f"{index_path(prefix)}: object {node_id}, saveable {name!r}"
                key = _attribute_key(checkpoint_graph, node_id, name, where)
                specs = self._call_object_function(saveable.save_function, [np.array(b"", object)], where)
                tensors = [reader.read(key + string_text(spec["name"])) for spec in specs]
                self._call_object_function(saveable.restore_function, tensors, where)

    def _call_object_function(self, node_id: int, args: list, where: str):
        """Call the concrete function of object `node_id` (a bare concrete function) with
        `args` and its captures; its outputs come back in their saved structure."""
        nodes = self._meta_graph.object_graph_def.nodes
        if not 0 <= node_id < len(nodes) or not nodes[node_id].HasField("bare_concrete_function"):
            raise FileFormatError(f"{where}: object {node_id} is not a saved concrete function")
        name = nodes[node_id].bare_concrete_function.concrete_function_name
        saved = self._meta_graph.object_graph_def.concrete_functions.get(name)
        if saved is None:
            raise FileFormatError(f"{where}: the object graph has no concrete function {name!r}")
        captures = [self._capture(i, f"concrete function {name!r}") for i in saved.bound_inputs]
        outputs = self.call_function(name, list(args) + captures)
        return structure.pack_tensors(structure.decode(saved.output_signature, where), list(outputs), where)

    def _bind_captured_handles(self) -> None:
        """Point the top-level VarHandleOps that call nodes capture at the restored variables:
        a call's last inputs are its concrete function's bound inputs, in order."""
        concrete = self._meta_graph.object_graph_def.concrete_functions
        for node in self._graph.nodes.values():
            if node.op not in ("StatefulPartitionedCall", "PartitionedCall"):
                continue
            bound = concrete[node.attr["f"].func.name].bound_inputs if node.attr["f"].func.name in concrete else []
            for (producer, _), node_id in zip(node.data[len(node.data) - len(bound):], bound):
                handle = self._graph.nodes.get(producer)
                variable = self._variables_by_node.get(node_id)
                if handle is not None and handle.op == "VarHandleOp" and variable is not None:
                    # names decoded as the VarHandleOp kernel gets them, so that it finds the variable
                    attrs = decode_attrs(handle.attr, f"node {handle.name!r} (op VarHandleOp)")
                    self._context.resources.bind(attrs.get("container", ""), attrs.get("shared_name", ""),
                                                 variable)

    def _restore_with_saver(self) -> None:
        saver = self._meta_graph.saver_def
        if not index_path(self._variables_prefix()).is_file():
            raise FileFormatError(f"{index_path(self._variables_prefix())}: no such file; the "
                                  "model's saver needs its variables")
        prefix = np.array(str(self._variables_prefix()).encode(), dtype=object)
        self.run_graph({parse_ref(saver.filename_tensor_name): prefix}, [],
                       [saver.restore_op_name.split(":")[0]])

    def _run_init_op(self) -> None:
        """Run the init op as TensorFlow's loaders do, with each asset's placeholder fed the
        path of the model's own copy of the file (a do-nothing NoOp is skipped)."""
        targets = self._init_op_targets()
        if any(self._graph.nodes[t].op != "NoOp" or self._graph.nodes[t].control for t in targets):
            self.run_graph(self._asset_feeds(), [], targets)

    def _init_op_targets(self) -> list[str]:
        init = self._meta_graph.signature_def.get(INIT_OP_SIGNATURE)
        if init is not None:
            names = [info.name for info in init.outputs.values()]
        else:
            collections = self._meta_graph.collection_def
            names = next((list(collections[key].node_list.value)
                          for key in (*INIT_OP_COLLECTIONS, TABLE_INITIALIZERS) if key in collections), [])
        targets = [name.split(":")[0].lstrip("^") for name in names]
        missing = [t for t in targets if t not in self._graph.nodes]
        if missing:
            raise FileFormatError(f"{self.export_dir}: the init op {missing[0]!r} is not a node "
                                  "of the graph")
        return targets

    def asset_paths(self) -> list[Path]:
        """The path of each asset file of the model (its copy under `assets/`), in the order
        of the MetaGraphDef's AssetFileDefs, which asset objects refer to by index."""
        return [path for _, path in self._assets]

    def _read_assets(self) -> list[tuple[meta_graph_pb2.AssetFileDef, Path]]:
        """Each AssetFileDef with the path of its copy, parsed and checked once, at load: the
        init op's feeds and every captured asset object read them."""
        if self._meta_graph.asset_file_def:
            objects = self._asset_objects()
            found = [(asset, f"asset_file_def {i}{objects.get(i, '')}")
                     for i, asset in enumerate(self._meta_graph.asset_file_def)]
        else:
            found = self._collection_assets()
        return [(asset, asset_path(self.export_dir, asset.filename, origin, self._context.file_access))
                for asset, origin in found]

    def _asset_objects(self) -> dict[int, str]:
        """For errors: the object-graph assets that refer to each AssetFileDef, by its index
        (one pass over the objects, and their paths found only when there are assets)."""
        nodes = self._meta_graph.object_graph_def.nodes
        by_index: dict[int, list[int]] = collections.defaultdict(list)
        for node_id, node in enumerate(nodes):
            if node.HasField("asset"):
                by_index[node.asset.asset_file_def_index].append(node_id)
        paths = object_paths(nodes) if by_index else {}
        return {index: ", asset object " + ", ".join(paths.get(n, f"object {n}") for n in node_ids)
                for index, node_ids in by_index.items()}

    def _collection_assets(self) -> list[tuple[meta_graph_pb2.AssetFileDef, str]]:
        """The AssetFileDefs of a TensorFlow 1 export's `saved_model_assets` collection."""
        collection = self._meta_graph.collection_def.get(ASSETS_COLLECTION)
        assets = []
        where = f"{self.export_dir}: collection {ASSETS_COLLECTION!r}"
        for i, packed in enumerate(collection.any_list.value if collection is not None else ()):
            if packed.type_url.rsplit(".", 1)[-1] != "AssetFileDef":
                raise FileFormatError(f"{where} holds a {packed.type_url}, not an AssetFileDef")
            assets.append((parse_message(packed.value, meta_graph_pb2.AssetFileDef, where),
                           f"collection {ASSETS_COLLECTION!r}, item {i}"))
        return assets

    def _asset_feeds(self) -> dict[Ref, np.ndarray]:
        """The path of each asset's copy, for the placeholder its AssetFileDef names."""
        feeds = {}
        for asset, path in self._assets:
            ref = parse_ref(asset.tensor_info.name)
            if ref[0] not in self._graph.nodes:
                raise FileFormatError(f"{self.export_dir}: asset {asset.filename!r} names tensor "
                                      f"{asset.tensor_info.name!r}, which the graph does not have")
            feeds[ref] = _path_tensor(path)
        return feeds

    def _restored_functions(self) -> dict[str, RestoredFunction]:
        return restored_functions(self, ConcreteFunction)

    def _capture(self, node_id: int, where: str):
        variable = self._variables_by_node.get(node_id)
        if variable is not None:
            return variable
        node = self._meta_graph.object_graph_def.nodes[node_id]
        if node.HasField("constant"):
            name = node.constant.operation
            return self.run_graph({}, [(name, 0)])[0]
        if node.HasField("resource"):
            return self._resource(node_id, where)
        if node.HasField("asset"):
            paths = self.asset_paths()
            index = node.asset.asset_file_def_index
            if not 0 <= index < len(paths):
                raise FileFormatError(f"{self.export_dir}: asset object {node_id} refers to "
                                      f"asset file {index}, but the model has {len(paths)}")
            return _path_tensor(paths[index])
        raise SavedModelError(f"{where}: captures object {node_id} ({node.WhichOneof('kind')}), "
                              "which the runtime cannot provide")

    def _resource(self, node_id: int, where: str):
        """The handle of resource object `node_id` (a lookup table): what its `_create_resource`
        function returns, made once. That function names the resource as the top-level graph's
        handle op does, so functions and signatures share one table, which the init op has
        initialized."""
        found = self._resources_by_node.get(node_id)
        if found is None:
            creator = self._child_function(node_id, "_create_resource", where)
            found = self._resources_by_node[node_id] = self.call_function(creator, [])[0]
        return found

    def _child_function(self, node_id: int, local_name: str, where: str) -> str:
        """The (first) concrete function of the function object that is child `local_name` of
        object `node_id`."""
        nodes = self._meta_graph.object_graph_def.nodes
        child = next((c.node_id for c in nodes[node_id].children if c.local_name == local_name), None)
        if child is None or not nodes[child].function.concrete_functions:
            raise FileFormatError(f"{where}: captures object {node_id}, which has no {local_name} function")
        return nodes[child].function.concrete_functions[0]


_NAMED_BY_SIGNATURE = (GraphError, NodeError, DeadlineExceededError, FileAccessError)
"""Errors of planning and running the graph, which name the node but not the signature that
ran it (each class takes its message alone)."""


class Signature:
    """One SignatureDef: call with keyword feeds, get a dict of numpy arrays."""

    def __init__(self, model: Model, name: str, signature: meta_graph_pb2.SignatureDef):
        self.name = name
        self.method_name = signature.method_name
        self.inputs = {k: TensorSpecInfo.from_proto(k, signature.inputs[k]) for k in sorted(signature.inputs)}
        self.outputs = {k: TensorSpecInfo.from_proto(k, signature.outputs[k]) for k in sorted(signature.outputs)}
        self._model = model
        self._plan: Plan | None = None
        inputs = [_endpoint(name, "input", key, signature.inputs[key], model._graph) for key in self.inputs]
        self._outputs = [_endpoint(name, "output", key, signature.outputs[key], model._graph) for key in self.outputs]
        self._feed_refs = [ref for _, _, refs in inputs for ref in refs]
        self._conversions = [(key, spec, _input_parts(name, key, spec, self.inputs[key]),
                              f"input {key!r} of signature {name!r}") for key, spec, _ in inputs]

    def __call__(self, **feeds) -> dict:
        """The outputs by key: numpy arrays, and RaggedTensor / SparseTensor values for the
        composite outputs (a RaggedTensorSpec or SparseTensorSpec in the SignatureDef). A
        composite input (a TensorFlow 1 sparse placeholder) takes such a value too."""
        if len(feeds) != len(self._conversions) or not all(k in feeds for k, *_ in self._conversions):
            self._reject(feeds)
        values = []
        for key, spec, parts, where in self._conversions:
            given = (feeds[key],) if spec is None else spec.unpack(feeds[key], where)
            values += [to_input(value, dtype, shape, where) for value, (dtype, shape) in zip(given, parts)]
        try:
            if self._plan is None:
                self._plan = self._model._compile(self._feed_refs,
                                                  [ref for _, _, refs in self._outputs for ref in refs])
            results = iter(self._model._run(self._plan, values))
        except _NAMED_BY_SIGNATURE as err:
            raise type(err)(f"signature {self.name!r}: {err}") from None
        return {key: np.asarray(next(results)) if spec is None else
                spec.pack([np.asarray(next(results)) for _ in refs]) for key, spec, refs in self._outputs}

    def _reject(self, feeds: dict):
        missing = sorted(set(self.inputs) - set(feeds))
        extra = sorted(set(feeds) - set(self.inputs))
        raise FeedError(f"signature {self.name!r} takes inputs {self._input_list()}; "
                        + "; ".join(filter(None, [f"missing {missing}" if missing else "",
                                                  f"unexpected {extra}" if extra else ""])))

    def _input_list(self) -> str:
        return ", ".join(f"{k}: {s.dtype} {s.shape}" for k, s in self.inputs.items())

    def __repr__(self) -> str:
        return f"<Signature {self.name!r} inputs={list(self.inputs)} outputs={list(self.outputs)}>"


def _endpoint(signature: str, role: str, key: str, info: meta_graph_pb2.TensorInfo, graph: GraphSpec) -> tuple:
    """(key, composite spec or None, its tensors) for one signature input or output: a plain
    tensor is one tensor; a sparse one (`coo_sparse`) names its indices, values and dense
    shape; a ragged one (`composite_tensor`) lists its components' tensors in its TypeSpec's
    component order."""
    where = f"signature {signature!r}: {role} {key!r}"
    encoding = info.WhichOneof("encoding") or "name"
    if encoding == "name":
        spec, names = None, [info.name]
    elif encoding == "coo_sparse":
        coo = info.coo_sparse
        dtype = structure.decode(struct_pb2.StructuredValue(tensor_dtype_value=info.dtype), where)
        spec = structure.SparseTensorSpec(shape_from_proto(info.tensor_shape), dtype)
        names = [coo.indices_tensor_name, coo.values_tensor_name, coo.dense_shape_tensor_name]
    elif encoding == "composite_tensor":
        spec = structure.decode(struct_pb2.StructuredValue(type_spec_value=info.composite_tensor.type_spec), where)
        names = [component.name for component in info.composite_tensor.components]
        if not isinstance(spec, (structure.RaggedTensorSpec, structure.SparseTensorSpec)):
            raise FileFormatError(f"{where} is a {spec.class_name}, which the runtime does not support")
        if len(names) != structure.tensor_count(spec):
            raise FileFormatError(f"{where}: {len(names)} components for a {type(spec).__name__} "
                                  f"of {structure.tensor_count(spec)}")
    else:
        raise FileFormatError(f"{where} is a {encoding} tensor, which the runtime does not support")
    refs = [parse_ref(name) for name in names]
    for ref in refs:
        check_ref(graph, ref, where)
    return key, spec, refs


def _input_parts(signature: str, key: str, spec, info: TensorSpecInfo) -> list[tuple]:
    """(dtype, shape) of each tensor an input takes: itself, or a composite's components."""
    if spec is None:
        return [(_input_dtype(signature, key, info), info.shape)]
    return [(part.dtype, part.shape) for part in spec.component_specs()]


def _input_dtype(signature: str, key: str, spec: TensorSpecInfo):
    """The dtype of a signature input, which must be one the runtime knows."""
    try:
        return from_name(spec.dtype)
    except UnknownDTypeError:
        raise FileFormatError(f"signature {signature!r}: input {key!r} has data type "
                              f"{spec.dtype}, which is not a DataType the runtime knows") from None


def _checkpoint_value(reader: BundleReader, graph, node_id: int, variable: Variable, prefix) -> np.ndarray:
    where = f"{index_path(prefix)}: variable {variable.name!r} (object {node_id})"
    value = reader.read(_attribute_key(graph, node_id, VARIABLE_VALUE, where))
    if value.dtype != variable.dtype.numpy and not variable.dtype.is_string:
        raise FileFormatError(f"{where}: checkpoint holds {value.dtype}, the model declares "
                              f"{variable.dtype.name}")
    return value


def _attribute_key(graph, node_id: int, name: str, where: str) -> str:
    """The checkpoint key that the checkpoint's object graph records for attribute `name` of
    object `node_id`."""
    if node_id >= len(graph.nodes):
        raise FileFormatError(f"{where}: the checkpoint's object graph has no node {node_id}")
    keys = [a.checkpoint_key for a in graph.nodes[node_id].attributes if a.name == name]
    if not keys:
        raise FileFormatError(f"{where}: the checkpoint holds no value for it")
    return keys[0]


def _path_tensor(path: Path) -> np.ndarray:
    """A file path as a scalar string tensor, as TensorFlow feeds asset paths."""
    return np.array(str(path).encode(), dtype=object)


def parse_ref(text: str) -> Ref:
    """`node:index` (or `node`, index 0) as the (node, index) pair plans use."""
    name, _, index = text.partition(":")
    if index and not index.isdigit():
        raise GraphError(f"malformed tensor name {text!r}")
    return name, int(index or 0)


def graph_spec(meta_graph, op_defs, library: FunctionLibrary, resources: ResourceManager | None,
               limits: Limits) -> GraphSpec:
    """The top-level graph of a MetaGraphDef as the numpy engine plans it (per-node comparisons
    build theirs the same way, so both sides see the same nodes)."""
    nodes = {}
    for node in meta_graph.graph_def.node:
        data = [parse_ref(text) for text in node.input if not text.startswith("^")]
        control = [text[1:] for text in node.input if text.startswith("^")]
        nodes[node.name] = GraphNode(node.name, node.op, node.attr, data, control)
    return GraphSpec("graph", nodes, op_defs, library, resources, limits)
