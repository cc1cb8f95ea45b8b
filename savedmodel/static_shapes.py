"""The static structure of a whole model: every node a signature runs, through function calls
and control flow, with its output dtypes and static shapes, the variables it reads, and the
Keras layer it belongs to. Nothing runs; no TensorFlow.

    structure = analyze("export_dir", signature="serving_default")   # or a GraphDef file
    for node in structure.nodes.values():            # producers before consumers
        node.path        # unique through calls: "StatefulPartitionedCall_1::StatefulPartitionedCall::seq/dense/MatMul"
        node.name, node.op, node.function           # name in its body, op type, "" or the function
        node.layer       # key of its Layer in structure.layers, or None
        node.inputs      # ((producer path, output index), ...): data inputs only, each naming
                         # the real producer: a function argument is followed to what the
                         # caller passed, a call's result to the node inside that returns it
        node.outputs     # (Output(dtype="float32", shape=(None, 16)), ...); shape None: unknown rank
        node.variables   # keys of structure.variables it reads (through resource inputs)
    structure.layers     # key -> Layer(key, name, scope, nodes, variables, outputs)
    structure.variables  # key -> Variable(key, name, dtype, shape, trainable, checkpoint_key, ...)
    structure.inputs, structure.outputs   # (Port(key, ref, Output), ...) sorted by key

How it works. The signature's part of the graph is chosen as `savedmodel graph` chooses it
(views.select). Values flow from the signature's input specs (placeholders' shapes), variables
(VarHandleOp / VariableV2 shapes, and for variables known only to the object graph, the
SavedObjectGraph's shapes), and constants. Each node's shapes come from the authoring side's
shape functions (savedmodel.shape_inference, per op type); small integer tensors computed from
constants and shapes (`Shape`, `StridedSlice`, `Pack`, ...) are folded with the reference
kernels, so reshape targets built at run time still give static shapes; a vector that is only
partly known (the shape of a `[None, 784]` tensor) is kept with unknown entries. A call
(PartitionedCall, StatefulPartitionedCall, or an op named after a library function) walks its
function body with the caller's values; If/Case walk every branch and merge their outputs
(dimensions that differ become None); While walks its body until the loop variables' shapes
stop changing (at most a few passes, then whatever still changes is relaxed). Where a shape
function is missing or gives up, the `_output_shapes` attr TensorFlow records on saved
function bodies is used if present (`recorded_shapes=False` ignores it); else the shape is
unknown. Output dtypes come from op definitions: the SavedModel's stripped op list, the
library's function signatures, savedmodel.op_defs; failing those, from the node's `T`-style attrs.

Variables are bound to the object graph through the concrete functions' `bound_inputs` (the
captured arguments of a function the graph calls with variable handles): that gives their
Keras path (`sequential/dense/kernel`), `trainable`, and with the checkpoint's object graph
their checkpoint key. TensorFlow 1 graphs take `trainable` from the `trainable_variables`
collection.

Layers are name scopes. Inside a function body, a node named `model/layer/op...` belongs to
the layer `model/layer` when all scoped names of that body share the first component
`model` (the Keras model's scope), otherwise to its first component (`dense/MatMul` ->
`dense`). Nodes of a function called from a layer belong to that layer; unscoped nodes
(`Identity`, `NoOp`) to none. A layer's display name is the Keras layer name of the
variables it reads (`sequential/conv2d/kernel` -> `conv2d`), else its last scope component.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from savedmodel import op_defs as authoring_op_defs
from savedmodel import shape_inference
from savedmodel.protos import (meta_graph_pb2, node_def_pb2, op_def_pb2, trackable_object_graph_pb2,
                              variable_pb2)
from savedmodel.runtime import dtypes, registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.plan import arg_length
from savedmodel.runtime.protofiles import parse_message
from savedmodel.runtime.saved_model_file import read_saved_model
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader, index_path
from savedmodel.runtime.tensor_proto import shape_from_proto, to_numpy
from savedmodel.shapes import TensorShape
from savedmodel.views.body import CALL_LABEL, Body, Library, Ref
from savedmodel.views.select import choose_meta_graph, select
from savedmodel.views.values import dtype_name

Shape = tuple[int | None, ...]
SEPARATOR = "::"
"""Joins the call nodes on a node's path to its name (TensorFlow node names never hold `:`)."""
FOLD_LIMIT = 1024
"""Constant tensors larger than this many elements are not computed (shape arithmetic is small)."""
WHILE_PASSES = 3
"""How often a loop body is walked before loop variables whose shapes still change are relaxed."""

_FOLDABLE = frozenset({
    "Identity", "Shape", "Size", "Rank", "StridedSlice", "Slice", "Pack", "Unpack", "ConcatV2",
    "Cast", "Add", "AddV2", "Sub", "Mul", "FloorDiv", "FloorMod", "RealDiv", "Div", "Maximum",
    "Minimum", "Neg", "Prod", "Sum", "Max", "Min", "Range", "Reshape", "GatherV2", "ExpandDims",
    "Squeeze", "Fill", "Transpose", "Equal", "NotEqual", "Less", "Greater", "LessEqual",
    "GreaterEqual", "Select", "SelectV2", "Floor", "Ceil", "Round", "Tile", "ZerosLike",
    "OnesLike", "BroadcastArgs", "LogicalAnd", "LogicalOr", "LogicalNot", "Abs", "Sqrt"})
"""Ops computed when all their inputs are known constants (their kernels are cheap on the small
integer tensors that shape arithmetic works with)."""
_SHAPE_INPUT = {"Fill": 0, "BroadcastTo": 1, "Conv2DBackpropInput": 0,
                "Conv3DBackpropInputV2": 0, "RandomUniform": 0, "RandomStandardNormal": 0,
                "TruncatedNormal": 0, "StatelessRandomUniformV2": 0, "Empty": 0}
"""Ops whose output shape is the value of one input (`tf.fill(shape, ...)`), by input index."""
_EXTRA_DTYPES = {("Merge", 1): "int32", ("RefMerge", 1): "int32"}
"""Outputs of undefined ops whose dtype is not their first output's."""
_READS = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VariableShape"})
_TF1_VARIABLES = frozenset({"VariableV2", "Variable"})
_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
_IFS = frozenset({"If", "StatelessIf"})
_CASES = frozenset({"Case", "StatelessCase"})
_WHILES = frozenset({"While", "StatelessWhile"})


@dataclass(frozen=True)
class Output:
    """One output tensor: dtype name (`float32`, `resource`, ...) and static shape (a tuple
    with None for unknown dimensions, or None for an unknown rank)."""

    dtype: str
    shape: Shape | None


@dataclass(frozen=True)
class Port:
    """A signature input or output: its key, the tensor it is (node path, output index), and
    that tensor's static dtype and shape."""

    key: str
    ref: tuple[str, int] | None
    output: Output


@dataclass
class Variable:
    """A variable the graph reads. `key` is the path of the node that creates its handle;
    `name` its Keras path or variable name (`sequential/dense/kernel`); `trainable` None when
    the files do not say; `checkpoint_key` the key of its value in variables/variables, when
    known; `object_id` its node in the SavedObjectGraph."""

    key: str
    name: str
    dtype: str
    shape: Shape | None
    trainable: bool | None = None
    checkpoint_key: str | None = None
    object_id: int | None = None

    @property
    def elements(self) -> int | None:
        if self.shape is None or None in self.shape:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def bytes(self) -> int | None:
        """Bytes of its value (None for strings and unknown shapes)."""
        try:
            itemsize = dtypes.from_name(self.dtype).itemsize
        except dtypes.UnknownDTypeError:
            return None
        return None if not itemsize or self.elements is None else itemsize * self.elements


@dataclass(frozen=True)
class Node:
    """One node as the signature runs it (see the module docstring)."""

    path: str
    name: str
    op: str
    function: str
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[Output, ...]
    variables: tuple[str, ...]
    attrs: node_def_pb2.NodeDef = field(repr=False, compare=False)
    layer: str | None = None

    @property
    def scope(self) -> str:
        return self.name.rpartition("/")[0]


@dataclass
class Layer:
    """Nodes grouped by name scope. `key` is unique (the call path plus the scope); `outputs`
    are the (node path, index) tensors that nodes outside the layer read (or the signature
    returns); `variables` the keys of the variables its nodes read, in first-read order."""

    key: str
    name: str
    scope: str
    nodes: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ModelStructure:
    """What `analyze` returns. `nodes` are in an order where producers come first."""

    name: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    nodes: dict[str, Node]
    layers: dict[str, Layer]
    variables: dict[str, Variable]

    def output(self, ref: tuple[str, int]) -> Output | None:
        node = self.nodes.get(ref[0])
        if node is None or ref[1] >= len(node.outputs):
            return None
        return node.outputs[ref[1]]


def analyze(path: str | Path, *, signature: str | None = None, tags: set[str] | None = None,
            whole_graph: bool = False, recorded_shapes: bool = True) -> ModelStructure:
    """The structure of the SavedModel directory or GraphDef file at `path`: of `signature`
    (default serving_default when there is one), or of the whole top-level graph."""
    path = Path(path)
    meta_graph = choose_meta_graph(read_saved_model(path), tags, str(path))
    prefix = path / "variables" / "variables" if path.is_dir() else None
    return analyze_meta_graph(meta_graph, signature=signature, whole_graph=whole_graph,
                              variables_prefix=prefix, recorded_shapes=recorded_shapes,
                              where=str(path))


def analyze_meta_graph(meta_graph: meta_graph_pb2.MetaGraphDef, *, signature: str | None = None,
                       whole_graph: bool = False, variables_prefix: Path | None = None,
                       recorded_shapes: bool = True, where: str = "") -> ModelStructure:
    selection = select(meta_graph, signature=signature, whole_graph=whole_graph, where=where)
    op_defs = {**authoring_op_defs.all_op_defs(), **selection.library.op_defs}
    library = Library(selection.library.functions, op_defs)
    walker = _Walker(library, meta_graph, recorded_shapes)
    walker.bind_objects(variables_prefix)
    body = selection.body
    feeds = {port.ref.node: port for port in body.inputs if port.ref is not None}
    values = walker.walk(body, "", {}, (), feeds=feeds)
    inputs = tuple(_port(p, values) for p in body.inputs)
    outputs = tuple(_port(p, values) for p in body.outputs)
    walker.mark_trainable_collection()
    layers = _group_layers(walker, [o.ref for o in outputs if o.ref is not None])
    return ModelStructure(body.name, inputs, outputs, walker.nodes, layers, walker.variables)


def _port(port, values: dict) -> Port:
    if port.ref is None:
        return Port(port.name, None, Output(port.dtype, port.shape))
    ref = (port.ref.node, port.ref.index)
    value = values.get(ref)
    if value is None:
        return Port(port.name, ref, Output(port.dtype, port.shape))
    shape = _merge(TensorShape(port.shape), value.shape) if port.has_shape else value.shape
    return Port(port.name, value.source or ref, Output(value.dtype, shape.as_tuple()))


@dataclass
class _Value:
    """A tensor while walking: what shape functions read (`shape`, `constant`), its dtype,
    the variable a resource handle refers to, and an integer vector known in part
    (`partial`: entries None where unknown)."""

    dtype: str
    shape: TensorShape
    constant: np.ndarray | None = None
    handle: str | None = None
    partial: tuple | None = None
    source: tuple[str, int] | None = None


_UNKNOWN = TensorShape(None)


class _Walker:
    def __init__(self, library: Library, meta_graph: meta_graph_pb2.MetaGraphDef, recorded: bool):
        self.library = library
        self.meta_graph = meta_graph
        self.recorded = recorded
        self.nodes: dict[str, Node] = {}
        self.variables: dict[str, Variable] = {}
        self.callers: dict[str, str] = {}
        """Path prefix of a function body walked from a call -> that call node's path."""
        self.bound: dict[str, list[int]] = {}
        self.objects = meta_graph.object_graph_def.nodes
        self.checkpoint_keys: dict[int, str] = {}

    # -- variables and the object graph

    def bind_objects(self, prefix: Path | None) -> None:
        """Which object graph node each captured argument of each concrete function is, and
        each object's checkpoint key (from the checkpoint's own object graph)."""
        for name, function in self.meta_graph.object_graph_def.concrete_functions.items():
            if function.bound_inputs:
                self.bound[name] = list(function.bound_inputs)
        if prefix is None or not index_path(prefix).is_file():
            return
        reader = BundleReader(prefix)
        if OBJECT_GRAPH_KEY not in reader.entries:
            return
        graph = parse_message(reader.read(OBJECT_GRAPH_KEY)[()],
                              trackable_object_graph_pb2.TrackableObjectGraph,
                              f"{index_path(prefix)}: {OBJECT_GRAPH_KEY}")
        for node_id, node in enumerate(graph.nodes):
            for attribute in node.attributes:
                if attribute.name == "VARIABLE_VALUE":
                    self.checkpoint_keys[node_id] = attribute.checkpoint_key

    def _bind(self, function: str, args: list[_Value]) -> None:
        objects = self.bound.get(function)
        if not objects or len(objects) > len(args):
            return
        for value, object_id in zip(args[len(args) - len(objects):], objects):
            variable = self.variables.get(value.handle) if value.handle else None
            if variable is None or variable.object_id is not None:
                continue
            if not 0 <= object_id < len(self.objects):
                continue
            saved = self.objects[object_id]
            if not saved.HasField("variable"):
                continue
            variable.object_id = object_id
            variable.trainable = saved.variable.trainable
            variable.name = saved.variable.name or variable.name
            variable.checkpoint_key = self.checkpoint_keys.get(object_id)

    def mark_trainable_collection(self) -> None:
        """TensorFlow 1 graphs list their trainable variables in a collection of VariableDefs."""
        collection = self.meta_graph.collection_def.get("trainable_variables")
        if collection is None or not collection.HasField("bytes_list"):
            return
        names = set()
        for data in collection.bytes_list.value:
            try:
                names.add(variable_pb2.VariableDef.FromString(data).variable_name.split(":")[0])
            except Exception:  # a damaged entry names nothing
                continue
        for variable in self.variables.values():
            if variable.trainable is None and variable.object_id is None:
                variable.trainable = variable.key.rpartition(SEPARATOR)[2] in names

    # -- walking bodies

    def walk(self, body: Body, prefix: str, args: dict[str, _Value], stack: tuple[str, ...],
             feeds: dict | None = None) -> dict[tuple[str, int], _Value]:
        """Walk `body` with its arguments' values; returns every value by (path, index),
        function arguments under (name, 0)."""
        values = {(prefix + name, 0): value for name, value in args.items()}
        by_name = {node.name: node for node in body.nodes}
        function = body.name if body.kind == "function" else ""
        for node in _topological(body, by_name):
            path = prefix + node.name
            refs = [r for r in body.node_inputs[node.name] if not r.control]
            inputs = [self._input(values, prefix, r) for r in refs]
            self.nodes[path] = None  # a call node comes before the nodes of its body
            outputs = self._node_values(node, path, inputs, stack, (feeds or {}).get(node.name))
            for index, value in enumerate(outputs):
                value.source = value.source or (path, index)
                values[(path, index)] = value
            reads = tuple(dict.fromkeys(v.handle for v in inputs if v.handle in self.variables))
            sources = tuple(v.source or self._unresolved(prefix, r) for v, r in zip(inputs, refs))
            self.nodes[path] = Node(path, node.name, node.op, function, sources,
                                    tuple(Output(v.dtype, v.shape.as_tuple()) for v in outputs),
                                    reads, node)
        return values

    def _unresolved(self, prefix: str, ref: Ref) -> tuple[str, int]:
        """Where an input with no known producer comes from: the call that entered the body
        (an argument it did not pass), else the reference as written."""
        caller = self.callers.get(prefix)
        return (caller, 0) if caller is not None else (prefix + ref.node, ref.index)

    def _input(self, values: dict, prefix: str, ref: Ref) -> _Value:
        if ref.output_arg is not None:
            return _Value("unknown", _UNKNOWN)
        return values.get((prefix + ref.node, ref.index), _Value("unknown", _UNKNOWN))

    def _node_values(self, node, path: str, inputs: list[_Value], stack: tuple[str, ...],
                     feed) -> list[_Value]:
        dtypes_out = self._output_dtypes(node)
        if node.op in ("VarHandleOp",) or node.op in _TF1_VARIABLES:
            return [self._variable(node, path)]
        if node.op in _READS and inputs and inputs[0].handle in self.variables:
            return self._read(node, inputs, dtypes_out)
        called = self._call(node, path, inputs, stack, dtypes_out)
        if called is not None:
            return called
        if node.op == "Const":
            return [_constant(node, dtypes_out)]
        try:
            attrs = decode_attrs(node.attr, f"node {node.name!r}")
        except SavedModelError:
            attrs = {}
        shapes = self._shapes(node, inputs, attrs, len(dtypes_out))
        if len(shapes) > len(dtypes_out) and not self._defined(node.op):
            dtypes_out = dtypes_out + [_EXTRA_DTYPES.get((node.op, i), dtypes_out[0] if dtypes_out
                                                       else "unknown")
                                       for i in range(len(dtypes_out), len(shapes))]
        if feed is not None and feed.shape is not None:
            shapes[0] = _merge(shapes[0], TensorShape(feed.shape))
        outputs = [_Value(d, s) for d, s in zip(dtypes_out, shapes)]
        self._fold(node.op, inputs, attrs, outputs)
        return outputs

    def _variable(self, node, path: str) -> _Value:
        dtype = dtype_name(node.attr["dtype"].type) if "dtype" in node.attr else "unknown"
        shape = shape_from_proto(node.attr["shape"].shape) if "shape" in node.attr else None
        name = node.attr["shared_name"].s.decode("utf-8", "replace") if "shared_name" in node.attr else ""
        self.variables[path] = Variable(path, name or node.name, dtype, shape)
        out_dtype = "resource" if node.op == "VarHandleOp" else dtype + "_ref"
        out_shape = TensorShape(()) if node.op == "VarHandleOp" else TensorShape(shape)
        return _Value(out_dtype, out_shape, handle=path)

    def _read(self, node, inputs: list[_Value], dtypes_out: list[str]) -> list[_Value]:
        variable = self.variables[inputs[0].handle]
        shape = TensorShape(variable.shape)
        if node.op == "VariableShape":
            return [_Value(dtypes_out[0], TensorShape((shape.rank,)), partial=_dims(shape))]
        if node.op == "ResourceGather":
            indices = inputs[1].shape if len(inputs) > 1 else _UNKNOWN
            known = shape.rank and indices.rank is not None and not (
                "batch_dims" in node.attr and node.attr["batch_dims"].i)
            shape = indices.concatenate(shape[1:]) if known else _UNKNOWN
        elif node.op == "ResourceGatherNd":
            shape = _UNKNOWN
        return [_Value(dtypes_out[0] if dtypes_out else variable.dtype, shape)]

    def _defined(self, op: str) -> bool:
        """Whether the op's outputs are known from a definition (else its shape function
        tells how many there are: GraphDef files carry no op list)."""
        return op in self.library.op_defs or op in self.library.functions

    def _output_dtypes(self, node) -> list[str]:
        op_def = self.library.op_defs.get(node.op)
        if op_def is None and node.op in self.library.functions:
            op_def = self.library.functions[node.op].signature
        if op_def is None:
            return _guessed_dtypes(node)
        attrs = dict(node.attr)
        for attr in op_def.attr:
            if attr.name not in attrs and attr.HasField("default_value"):
                attrs[attr.name] = attr.default_value
        found = []
        for arg in op_def.output_arg:
            found += _arg_dtypes(arg, attrs)
        return found

    def _shapes(self, node, inputs: list[_Value], attrs: dict, count: int) -> list[TensorShape]:
        if node.op == "Placeholder" or node.op == "PlaceholderWithDefault":
            declared = attrs.get("shape")
            shapes = [TensorShape(declared) if declared is not None or node.op == "Placeholder"
                      else _UNKNOWN]
            if node.op == "PlaceholderWithDefault" and inputs:
                shapes = [_merge(shapes[0], inputs[0].shape)]
        elif node.op == "Reshape" and len(inputs) == 2 and inputs[1].partial is not None \
                and inputs[1].constant is None:
            shapes = [_partial_reshape(inputs[0].shape, inputs[1].partial)]
        elif node.op in _SHAPE_INPUT and len(inputs) > _SHAPE_INPUT[node.op] \
                and inputs[_SHAPE_INPUT[node.op]].constant is None \
                and inputs[_SHAPE_INPUT[node.op]].partial is not None:
            shapes = [TensorShape(inputs[_SHAPE_INPUT[node.op]].partial)]
        else:
            try:
                shapes = shape_inference.infer(node.op, inputs, attrs, count)
            except (shape_inference.ShapeError, ValueError, TypeError, IndexError, KeyError):
                shapes = [_UNKNOWN] * count
        if self._defined(node.op):
            shapes = list(shapes)[:count]
        shapes = list(shapes) + [_UNKNOWN] * (count - len(shapes))
        recorded = self._recorded(node, len(shapes))
        return [_merge(s, r) if r is not None else s for s, r in zip(shapes, recorded)]

    def _recorded(self, node, count: int) -> list[TensorShape | None]:
        """The `_output_shapes` TensorFlow wrote on the node (saved function bodies)."""
        if not self.recorded or "_output_shapes" not in node.attr:
            return [None] * count
        found = [TensorShape(shape_from_proto(s)) for s in node.attr["_output_shapes"].list.shape]
        return found[:count] + [None] * (count - len(found))

    def _fold(self, op: str, inputs: list[_Value], attrs: dict, outputs: list[_Value]) -> None:
        """Constant values of small integer outputs: computed by the reference kernel from
        constant inputs, or known in part (shapes with unknown dimensions)."""
        if op == "Shape" and inputs and inputs[0].shape.rank is not None:
            outputs[0].partial = _dims(inputs[0].shape)
            if inputs[0].shape.is_fully_defined():
                outputs[0].constant = np.array(inputs[0].shape.as_tuple(),
                                               dtype=np.int64 if outputs[0].dtype == "int64" else np.int32)
            return
        if op not in _FOLDABLE or not outputs:
            return
        if all(v.constant is not None for v in inputs) and inputs:
            known = [s.num_elements() for s in (o.shape for o in outputs)]
            if any(k is not None and k > FOLD_LIMIT for k in known):
                return
            try:
                kernel = registry.lookup(op)
                if kernel.context or kernel.named:
                    return
                results = kernel.fn(*[v.constant for v in inputs], **attrs)
            except Exception:  # a kernel refusing constants leaves the value unknown
                return
            for value, result in zip(outputs, results):
                if isinstance(result, np.ndarray) or np.isscalar(result):
                    array = np.asarray(result)
                    if array.size <= FOLD_LIMIT:
                        value.constant = array
                        value.shape = _merge(value.shape, TensorShape(array.shape))
            return
        _fold_partial(op, inputs, attrs, outputs)

    # -- calls and control flow

    def _call(self, node, path: str, inputs: list[_Value], stack: tuple[str, ...],
              dtypes_out: list[str]) -> list[_Value] | None:
        callees = dict(self.library.callees(node))
        if node.op in _CALLS or CALL_LABEL in callees:
            name = callees.get("f") or callees.get(CALL_LABEL)
            results = self._enter(node, path, name, "", inputs, stack)
            return _with_dtypes(results, dtypes_out)
        if node.op in _IFS or node.op in _CASES:
            labels = [k for k in callees if k in ("then_branch", "else_branch") or k.startswith("branches[")]
            branches = [self._enter(node, path, callees[k], k, inputs[1:], stack) for k in labels]
            return _with_dtypes(_merged_branches(branches), dtypes_out, node)
        if node.op in _WHILES and "body" in callees:
            return _with_dtypes(self._loop(node, path, callees, inputs, stack), dtypes_out, node)
        return None

    def _enter(self, node, path: str, function: str | None, label: str, args: list[_Value],
               stack: tuple[str, ...]) -> list[_Value] | None:
        if function is None or self.library.not_expanded(function, stack) is not None:
            return None
        body = self.library.body(function)
        prefix = path + (f"[{label}]" if label else "") + SEPARATOR
        self.callers[prefix] = path
        self._bind(function, args)
        named = {port.name: arg for port, arg in zip(body.inputs, args)}
        values = self.walk(body, prefix, named, stack + (function,))
        results = []
        for port in body.outputs:
            ref = port.ref
            value = None if ref is None else self._input(values, prefix, ref)
            results.append(value or _Value(port.dtype, _UNKNOWN))
        return results

    def _loop(self, node, path: str, callees: dict, inputs: list[_Value],
              stack: tuple[str, ...]) -> list[_Value] | None:
        current = [_Value(v.dtype, v.shape, v.constant, v.handle, v.partial, (path, i))
                   for i, v in enumerate(inputs)]
        for attempt in range(WHILE_PASSES + 1):
            if "cond" in callees:
                self._enter(node, path, callees["cond"], "cond", current, stack)
            results = self._enter(node, path, callees["body"], "body", current, stack)
            if results is None:
                return None
            relaxed = [_Value(v.dtype, _relaxed(v.shape, r.shape), handle=v.handle, source=v.source)
                       for v, r in zip(current, results)]
            if all(a.shape == b.shape for a, b in zip(current, relaxed)) and attempt:
                return relaxed
            if attempt == WHILE_PASSES - 1:
                relaxed = [_Value(v.dtype, v.shape if v.shape == old.shape else _UNKNOWN,
                                  handle=v.handle, source=v.source)
                           for v, old in zip(relaxed, current)]
            current = relaxed
        return current


def _topological(body: Body, by_name: dict) -> list:
    """The body's nodes with producers first (function bodies are not stored in order),
    otherwise in file order; a cycle (a TensorFlow 1 loop) is entered at its Merge."""
    waiting = {}
    users: dict[str, list[str]] = {}
    for node in body.nodes:
        producers = {r.node for r in body.node_inputs[node.name] if r.node in by_name and r.node != node.name}
        waiting[node.name] = len(producers)
        for producer in producers:
            users.setdefault(producer, []).append(node.name)
    position = {node.name: i for i, node in enumerate(body.nodes)}
    ready = [(position[node.name], node.name) for node in body.nodes if not waiting[node.name]]
    heapq.heapify(ready)
    order = []
    while len(order) < len(body.nodes):
        if not ready:  # a cycle: enter it at a Merge (where a loop's back edge arrives)
            stuck = [node for node in body.nodes if waiting[node.name] > 0]
            entry = next((n for n in stuck if n.op in ("Merge", "RefMerge")), stuck[0])
            waiting[entry.name] = 0
            ready = [(position[entry.name], entry.name)]
        _, name = heapq.heappop(ready)
        order.append(name)
        for user in users.get(name, ()):
            waiting[user] -= 1
            if not waiting[user]:
                heapq.heappush(ready, (position[user], user))
    return [by_name[name] for name in order]


def _merge(a: TensorShape, b: TensorShape) -> TensorShape:
    """What two descriptions of one tensor's shape agree on; a conflict keeps the first."""
    if a.rank is None:
        return b
    if b.rank is None or not a.is_compatible_with(b):
        return a
    return a.merge_with(b)


def _relaxed(a: TensorShape, b: TensorShape) -> TensorShape:
    return a.most_specific_compatible_shape(b)


def _merged_branches(branches: list[list[_Value] | None]) -> list[_Value] | None:
    known = [b for b in branches if b is not None]
    if not known or len(known) < len(branches):
        return None
    merged = []
    for values in zip(*known):
        shape = values[0].shape
        for value in values[1:]:
            shape = _relaxed(shape, value.shape)
        merged.append(_Value(values[0].dtype, shape))
    return merged


def _with_dtypes(results: list[_Value] | None, dtypes_out: list[str], node=None) -> list[_Value]:
    """Results of a call, with the dtypes the call node declares; None (not walked): the
    node's recorded `output_shapes`, else unknown shapes."""
    if results is None:
        shapes = []
        if node is not None and "output_shapes" in node.attr:
            shapes = [TensorShape(shape_from_proto(s)) for s in node.attr["output_shapes"].list.shape]
        shapes += [_UNKNOWN] * (len(dtypes_out) - len(shapes))
        return [_Value(d, s) for d, s in zip(dtypes_out, shapes)]
    out = []
    for index, dtype in enumerate(dtypes_out):
        value = results[index] if index < len(results) else _Value(dtype, _UNKNOWN)
        out.append(_Value(dtype, value.shape, value.constant, value.handle, value.partial, value.source))
    return out


def _constant(node, dtypes_out: list[str]) -> _Value:
    """A Const's shape from its TensorProto's header; its value only when small."""
    tensor = node.attr["value"].tensor if "value" in node.attr else None
    if tensor is None:
        return _Value(dtypes_out[0] if dtypes_out else "unknown", _UNKNOWN)
    shape = TensorShape(shape_from_proto(tensor.tensor_shape))
    value = _Value(dtype_name(tensor.dtype), shape)
    count = shape.num_elements()
    if count is not None and count <= FOLD_LIMIT:
        try:
            value.constant = to_numpy(tensor, f"node {node.name!r}")
        except SavedModelError:
            pass  # a damaged constant has a shape but no value
    return value


def _arg_dtypes(arg: op_def_pb2.OpDef.ArgDef, attr) -> list[str]:
    try:
        count = arg_length(arg, attr)
    except (KeyError, IndexError):
        return ["unknown"]
    if arg.type_list_attr:
        return [dtype_name(t) for t in attr[arg.type_list_attr].list.type]
    if arg.type:
        return [dtype_name(arg.type)] * count
    if arg.type_attr in attr:
        return [dtype_name(attr[arg.type_attr].type)] * count
    return ["unknown"] * count


_DTYPE_ATTRS = ("dtype", "T", "out_type", "DstT", "output_type", "Tparams", "element_dtype", "Tout")


def _guessed_dtypes(node) -> list[str]:
    """Output dtypes of an op with no known definition: `_output_shapes` gives the count,
    the usual type attrs the type."""
    count = len(node.attr["_output_shapes"].list.shape) if "_output_shapes" in node.attr else 1
    for name in _DTYPE_ATTRS:
        if name in node.attr:
            value = node.attr[name]
            if value.HasField("list") and value.list.type:
                return [dtype_name(t) for t in value.list.type]
            if value.WhichOneof("value") == "type":
                return [dtype_name(value.type)] * count
    return ["unknown"] * count


def _dims(shape: TensorShape) -> tuple | None:
    return None if shape.rank is None else tuple(shape.as_tuple())


def _entries(value: _Value) -> tuple | None:
    """An integer scalar or vector as a tuple with None where unknown."""
    if value.constant is not None and value.constant.ndim <= 1 and value.constant.dtype.kind in "iu":
        return tuple(int(v) for v in np.ravel(value.constant))
    return value.partial


def _fold_partial(op: str, inputs: list[_Value], attrs: dict, outputs: list[_Value]) -> None:
    """Integer vectors known in part: a shape's dimensions, picked, stacked and joined."""
    if op in ("Identity", "Cast") and inputs:
        outputs[0].partial = _entries(inputs[0])
    elif op == "StridedSlice" and len(inputs) == 4 and inputs[0].partial is not None:
        outputs[0].partial = _sliced(inputs, attrs)
    elif op == "Pack" and inputs and all(v.shape.rank == 0 for v in inputs):
        parts = [_entries(v) for v in inputs]
        outputs[0].partial = tuple(p[0] if p else None for p in parts)
    elif op == "ConcatV2" and len(inputs) > 1:
        parts = [_entries(v) for v in inputs[:-1]]
        if all(p is not None for p in parts) and all(v.shape.rank == 1 for v in inputs[:-1]):
            outputs[0].partial = tuple(d for p in parts for d in p)


def _sliced(inputs: list[_Value], attrs: dict) -> tuple | None:
    """A strided slice of a partly known vector, by slicing the positions of its entries."""
    bounds = [v.constant for v in inputs[1:]]
    entries = inputs[0].partial
    if any(b is None for b in bounds) or entries is None:
        return None
    positions = np.arange(len(entries))
    masks = {k: attrs.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                          "new_axis_mask", "shrink_axis_mask")}
    try:
        (picked,) = registry.lookup("StridedSlice").fn(positions, *bounds, **masks)
    except Exception:  # bounds the kernel refuses leave the value unknown
        return None
    return tuple(entries[int(i)] for i in np.ravel(picked))


def _partial_reshape(shape: TensorShape, target: tuple) -> TensorShape:
    """A reshape to a target known in part (`[batch, -1]` with batch unknown)."""
    count = shape.num_elements()
    known = [d for d in target if d is not None and d != -1]
    if -1 in target and None not in target and count is not None and known:
        fill = count // int(np.prod(known))
        return TensorShape(fill if d == -1 else d for d in target)
    if -1 in target and shape.rank is not None and None in target:
        rest = [d for d in shape.as_tuple()]
        inner = [d for d in target if d not in (None, -1)]
        if None not in rest[1:] and rest and target[0] is None and target.count(-1) == 1:
            tail = int(np.prod(rest[1:], dtype=np.int64))
            denominator = int(np.prod(inner, dtype=np.int64)) if inner else 1
            if denominator and tail % denominator == 0:
                return TensorShape(tail // denominator if d == -1 else d for d in target)
    return TensorShape(None if d == -1 else d for d in target)


def _group_layers(walker: _Walker, returned: list[tuple[str, int]]) -> dict[str, Layer]:
    """Assign every node to a layer (see the module docstring) and describe the layers."""
    roots = _scope_roots(walker.nodes.values())
    layers: dict[str, Layer] = {}
    for path, node in list(walker.nodes.items()):
        prefix = path[:len(path) - len(node.name)]
        key = _layer_key(node, prefix, roots.get(prefix), walker)
        if key is None:
            continue
        walker.nodes[path] = node = replace(node, layer=key)
        layer = layers.get(key)
        if layer is None:
            layer = layers[key] = Layer(key, "", key[len(_call_prefix(key)):])
        layer.nodes.append(path)
        if node.op not in _CALL_OPS and not walker.library.callees(node.attrs):
            layer.variables += [v for v in node.variables if v not in layer.variables]
    for key in [k for k, layer in layers.items() if all(
            walker.nodes[p].op in _VARIABLE_OPS for p in layer.nodes)]:
        for path in layers.pop(key).nodes:
            walker.nodes[path] = replace(walker.nodes[path], layer=None)
    _name_layers(layers, walker.variables)
    _layer_outputs(walker.nodes, layers, returned)
    return _in_data_order(walker.nodes, layers)


def _in_data_order(nodes: dict[str, Node], layers: dict[str, Layer]) -> dict[str, Layer]:
    """Layers in the order data reaches them: by their first node that depends on a fed
    input (reading weights and building constants happens in any order)."""
    fed: set[str] = set()
    first: dict[str, int] = {}
    for position, node in enumerate(nodes.values()):
        if node.op in ("Placeholder", "PlaceholderWithDefault") or any(r[0] in fed for r in node.inputs):
            fed.add(node.path)
            if node.layer is not None:
                first.setdefault(node.layer, position)
    order = sorted(layers, key=lambda k: first.get(k, len(nodes)))
    return {key: layers[key] for key in order}


_VARIABLE_OPS = _TF1_VARIABLES | {"VarHandleOp"}


_CALL_OPS = _CALLS | _IFS | _CASES | _WHILES


def _scope_roots(nodes) -> dict[str, str | None]:
    """Per body (path prefix): the scope every scoped node is in (`model`, or in a frozen
    graph `StatefulPartitionedCall/model`), as long as some node is nested two levels
    below it (`model/layer/op`). Names made by TensorFlow's function inliner (`Func/...`)
    are left out."""
    names: dict[str, list[list[str]]] = {}
    for node in nodes:
        if "/" in node.name and not node.name.startswith(_INLINER_SCOPE):
            prefix = node.path[:len(node.path) - len(node.name)]
            names.setdefault(prefix, []).append(node.name.split("/"))
    return {prefix: _shared_scope(parts) for prefix, parts in names.items()}


_INLINER_SCOPE = "Func/"


def _shared_scope(names: list[list[str]]) -> str | None:
    root: list[str] = []
    while True:
        scoped = [n for n in names if len(n) > len(root) + 1]
        firsts = {n[len(root)] for n in scoped}
        if len(firsts) != 1 or not any(len(n) > len(root) + 2 for n in scoped):
            return "/".join(root) or None
        root.append(firsts.pop())
        names = scoped


def _layer_key(node: Node, prefix: str, root: str | None, walker: _Walker) -> str | None:
    caller = walker.callers.get(prefix)
    if caller is not None and walker.nodes[caller].layer is not None:
        return walker.nodes[caller].layer
    if node.name.startswith(_INLINER_SCOPE):
        return None
    parts = node.name.split("/")
    if root is not None:
        depth = root.count("/") + 1
        if node.name.startswith(root + "/"):
            return prefix + "/".join(parts[:depth + 1]) if len(parts) > depth + 1 else None
        if parts[0] == root.split("/")[0]:
            return None
    if len(parts) >= 2:
        return prefix + parts[0]
    return None


def _call_prefix(key: str) -> str:
    head, separator, _ = key.rpartition(SEPARATOR)
    return head + separator


def _name_layers(layers: dict[str, Layer], variables: dict[str, Variable]) -> None:
    """Keras names: from the variables a layer reads; for the others, their scope less the
    `_N` suffix TensorFlow added to every scope of the same body whose name is known."""
    suffixed: dict[str, list[bool]] = {}
    for layer in layers.values():
        scope = layer.scope.rpartition("/")[2]
        layer.name = _variables_owner(layer, variables) or ""
        if layer.name:
            suffixed.setdefault(_call_prefix(layer.key), []).append(
                re.fullmatch(re.escape(layer.name) + r"_\d+", scope) is not None)
    for layer in layers.values():
        if layer.name:
            continue
        scope = layer.scope.rpartition("/")[2]
        votes = suffixed.get(_call_prefix(layer.key), [])
        layer.name = re.sub(r"_\d+$", "", scope) if votes and all(votes) else scope


def _variables_owner(layer: Layer, variables: dict[str, Variable]) -> str | None:
    """The Keras layer owning the variables a layer reads: of the components their paths
    share (`model/lstm/lstm_cell`), the deepest the scope is named after (`lstm_1` ->
    `lstm`), else the deepest."""
    paths = [variables[v].name.split("/")[:-1] for v in layer.variables]
    paths = [p for p in paths if p]
    if not paths:
        return None
    shared = []
    for parts in zip(*paths):
        if len(set(parts)) > 1:
            break
        shared.append(parts[0])
    if not shared:
        return Counter(p[-1] for p in paths).most_common(1)[0][0]
    scope = layer.scope.rpartition("/")[2]
    for name in reversed(shared):
        if scope == name or re.fullmatch(re.escape(name) + r"_\d+", scope):
            return name
    return shared[-1]


def _layer_outputs(nodes: dict[str, Node], layers: dict[str, Layer],
                   returned: list[tuple[str, int]]) -> None:
    """A layer's outputs: its tensors read outside it. Values passed through a call's
    arguments and results are followed to the real producers."""
    for node in nodes.values():
        for ref in node.inputs:
            producer = nodes.get(ref[0])
            if producer is None or producer.layer is None or producer.layer == node.layer:
                continue
            if producer.op in _CALL_OPS or ref[1] >= len(producer.outputs):
                continue
            outputs = layers[producer.layer].outputs
            if ref not in outputs and producer.outputs[ref[1]].dtype != "resource":
                outputs.append(ref)
    for ref in returned:
        producer = nodes.get(ref[0])
        if producer is not None and producer.layer is not None and ref not in layers[producer.layer].outputs:
            layers[producer.layer].outputs.append(ref)
