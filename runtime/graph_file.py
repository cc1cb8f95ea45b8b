"""Loading a GraphDef file (a TensorFlow 1 frozen graph, binary `.pb` or text `.pbtxt`) as a
model with one signature, `serving_default`.

A GraphDef has no signature of its own. The convention is the native engine's (native/core/src/
engine/frozen.rs), so both engines present the same one: inputs are the placeholders, outputs
the first output of each node that nothing reads, that is not an effect (NoOp, Const,
Placeholder, SaveV2, Assert, Print) and whose attrs declare its dtype; each is keyed by its
node name. `inputs` and `outputs` pick other tensors (`name` or `name:index`, keyed as given).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from google.protobuf import text_format

from savedmodel.protos import graph_pb2, meta_graph_pb2, saved_model_pb2, types_pb2
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.protofiles import read_file, read_message

TEXT_SUFFIXES = (".pbtxt",)
GRAPH_SUFFIXES = (".pb", *TEXT_SUFFIXES)
"""File names `runtime.load` and the command line read as GraphDef files."""

SIGNATURE = "serving_default"
_BOOL_OUTPUT = frozenset({"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
                          "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite", "ApproximateEqual"})
_NOT_OUTPUTS = frozenset({"NoOp", "Const", "Placeholder", "SaveV2", "Assert", "Print"})
_DTYPE_ATTRS = ("dtype", "out_type", "output_type", "DstT", "Tout", "T")


def is_graph_file(path: str | Path) -> bool:
    """Whether `path` names a GraphDef file (a regular file with a GraphDef suffix)."""
    path = Path(path)
    return path.suffix in GRAPH_SUFFIXES and path.is_file()


def read_graph(path: str | Path, limits: Limits = DEFAULT) -> graph_pb2.GraphDef:
    """The GraphDef in `path`: text format for `.pbtxt`, binary otherwise."""
    path = Path(path)
    if path.suffix not in TEXT_SUFFIXES:
        return read_message(path, graph_pb2.GraphDef, limits)
    try:
        return text_format.Parse(read_file(path, limits).decode("utf-8"), graph_pb2.GraphDef())
    except (text_format.ParseError, UnicodeDecodeError) as err:
        raise FileFormatError(f"{path}: not a valid GraphDef text file ({err})") from None
    except RecursionError:  # the text parser recurses once per nested message
        raise FileFormatError(f"{path}: not a valid GraphDef text file (messages nested too deeply)") from None


def load_graph(path: str | Path, inputs: Iterable[str] | None = None, outputs: Iterable[str] | None = None, *,
               engine: str = "auto", allow_file_access: bool = False, output_dir: str | Path | None = None,
               limits: Limits = DEFAULT):
    """A GraphDef file as a model whose `signatures["serving_default"]` runs it (see the module
    docstring for its inputs and outputs). `engine` as for `runtime.load`: "auto" runs it on
    the native engine when that has every op it needs and reads the file (a binary GraphDef
    with the default signature), on the numpy engine otherwise."""
    from savedmodel.runtime import engines, native  # both build on this module
    engines.check_engine(engine)
    path = Path(path)
    native_can = inputs is None and outputs is None and path.suffix not in TEXT_SUFFIXES
    if engine == "native":
        if not native_can:
            raise ValueError("the native engine loads binary GraphDef files with their default signature only")
        return native.load_native(path, allow_file_access=allow_file_access, output_dir=output_dir)
    reason = "engine='numpy' was asked for"
    if engine == "auto" and not native_can:
        reason = "the native engine reads binary GraphDef files with their default signature only"
    elif engine == "auto":
        model, reason = engines.try_native(path, (), allow_file_access, output_dir, limits)
        if model is not None:
            engines.log.info("%s: native engine: %s", path, model.engine_reason)
            return model
    engines.log.info("%s: numpy engine: %s", path, reason)
    from savedmodel.runtime.loader import Model
    meta_graph = graph_meta_graph(read_graph(path, limits), str(path), inputs, outputs)
    model = Model(path.parent, meta_graph, allow_file_access=allow_file_access, output_dir=output_dir,
                         limits=limits)
    model.export_dir = path
    model.engine_reason = reason
    return model


def graph_meta_graph(graph: graph_pb2.GraphDef, where: str, inputs: Iterable[str] | None = None,
                     outputs: Iterable[str] | None = None) -> meta_graph_pb2.MetaGraphDef:
    """A GraphDef as a MetaGraphDef tagged `serve` with its `serving_default` signature."""
    meta_graph = meta_graph_pb2.MetaGraphDef(graph_def=graph)
    meta_graph.meta_info_def.tags.append("serve")
    meta_graph.signature_def[SIGNATURE].CopyFrom(graph_signature(graph, where, inputs, outputs))
    return meta_graph


def as_saved_model(path: str | Path, limits: Limits = DEFAULT) -> saved_model_pb2.SavedModel:
    """A GraphDef file as a SavedModel of one MetaGraphDef (see `graph_meta_graph`), which is
    how the inspection commands (show, graph, ops, diff) read it."""
    graph = read_graph(path, limits)
    return saved_model_pb2.SavedModel(meta_graphs=[graph_meta_graph(graph, str(path))])


def graph_signature(graph: graph_pb2.GraphDef, where: str, inputs: Iterable[str] | None = None,
                    outputs: Iterable[str] | None = None) -> meta_graph_pb2.SignatureDef:
    """The `serving_default` signature of a GraphDef (see the module docstring)."""
    nodes = {node.name: node for node in graph.node}
    signature = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    if inputs is None:
        inputs = [node.name for node in graph.node if node.op == "Placeholder"]
    for name in inputs:
        signature.inputs[_key(name)].CopyFrom(_info(nodes, name, where, "input"))
    if outputs is None:
        read = {text.lstrip("^").split(":")[0] for node in graph.node for text in node.input}
        outputs = [node.name for node in graph.node if node.name not in read
                   and node.op not in _NOT_OUTPUTS and first_output_dtype(node) is not None]
        if not outputs:
            raise FileFormatError(f"{where}: no node could be an output (every node is read by another, "
                                  "or has no declared dtype)")
    for name in outputs:
        signature.outputs[_key(name)].CopyFrom(_info(nodes, name, where, "output"))
    return signature


def _key(name: str) -> str:
    return name[:-2] if name.endswith(":0") else name


def _info(nodes: dict, name: str, where: str, role: str) -> meta_graph_pb2.TensorInfo:
    node_name, _, index = name.partition(":")
    node = nodes.get(node_name)
    if node is None:
        raise FileFormatError(f"{where}: {role} {name!r} names no node of the graph")
    info = meta_graph_pb2.TensorInfo(name=f"{node_name}:{index or 0}")
    dtype = first_output_dtype(node) if not index or index == "0" else None
    if dtype is not None:
        info.dtype = dtype
    elif role == "input":
        raise FileFormatError(f"{where}: input {name!r} (op {node.op}) declares no dtype")
    if node.op == "Placeholder" and "shape" in node.attr and not index:
        info.tensor_shape.CopyFrom(node.attr["shape"].shape)
    else:
        info.tensor_shape.unknown_rank = True
    return info


def first_output_dtype(node) -> int | None:
    """The dtype of a node's first output as its attrs declare it."""
    if node.op in _BOOL_OUTPUT:
        return types_pb2.DT_BOOL
    for name in _DTYPE_ATTRS:
        if name in node.attr and node.attr[name].WhichOneof("value") == "type":
            return node.attr[name].type
    return None
