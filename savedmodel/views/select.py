"""Choosing what a view shows: a signature, a library function, or a whole graph.

A signature is shown as the part of the top-level graph its outputs need (walking data and
control inputs back from its output tensors), together with its input placeholders even when
no output uses them: that is what serving the signature touches. A function is its FunctionDef
body. Names that do not exist are errors that list the names that do.
"""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import Message

from savedmodel.protos import graph_pb2, meta_graph_pb2, saved_model_pb2
from savedmodel.runtime.saved_model_file import find_meta_graph, format_tags, needed_nodes, tag_set
from savedmodel.runtime.loader import INIT_OP_SIGNATURE
from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.views.body import Body, Library, Port, ViewError, graph_inputs, graph_ref
from savedmodel.views.values import dtype_name

DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAGS = frozenset({"serve"})


@dataclass(frozen=True)
class Selection:
    """A body to render, the library its call nodes refer to, and the protobuf message it came
    from (a GraphDef, pruned for a signature, or a FunctionDef) for the protobuf text view."""

    body: Body
    library: Library
    proto: Message


def choose_meta_graph(model: saved_model_pb2.SavedModel, tags: set[str] | None,
                      where: str) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef tagged exactly `tags`; without tags, the only one, else `serve`."""
    if tags is None and len(model.meta_graphs) == 1:
        return model.meta_graphs[0]
    return find_meta_graph(model, DEFAULT_TAGS if tags is None else tags, where)


def select(meta_graph: meta_graph_pb2.MetaGraphDef, *, signature: str | None = None,
           function: str | None = None, whole_graph: bool = False, graph_name: str = "graph",
           where: str = "") -> Selection:
    """What to show of a MetaGraphDef: `signature`, `function`, the whole graph, or by default
    the `serving_default` signature when there is one and the whole graph otherwise."""
    if sum([signature is not None, function is not None, whole_graph]) > 1:
        raise ViewError("choose one of a signature, a function or the whole graph")
    graph_def = meta_graph.graph_def
    library = Library.of(graph_def.library, meta_graph.meta_info_def.stripped_op_list)
    prefix = f"{where}: " if where else ""
    if function is not None:
        try:
            return Selection(library.body(function), library, library.functions[function])
        except ViewError as err:
            raise ViewError(f"{prefix}{err}") from None
    if signature is None and not whole_graph and DEFAULT_SIGNATURE in meta_graph.signature_def:
        signature = DEFAULT_SIGNATURE
    if signature is None:
        return select_graph_def(graph_def, graph_name, library)
    known = meta_graph.signature_def
    if signature not in known:
        # The init-op pseudo-signature stays selectable but is not offered: it is not a model entry point.
        offered = sorted(key for key in known if key != INIT_OP_SIGNATURE)
        raise ViewError(f"{prefix}no signature {signature!r} in tag-set "
                        f"'{format_tags(tag_set(meta_graph))}' (signatures: {', '.join(offered) or 'none'})")
    return _signature_selection(graph_def, library, signature, known[signature])


def select_graph_def(graph_def: graph_pb2.GraphDef, name: str,
                     library: Library | None = None) -> Selection:
    """The whole of a GraphDef, e.g. one printed by `as_graph_def()`."""
    library = library or Library.of(graph_def.library)
    body = Body("graph", name, tuple(graph_def.node), (), (), graph_inputs(graph_def.node, f"graph {name!r}"))
    return Selection(body, library, graph_def)


def _signature_selection(graph_def: graph_pb2.GraphDef, library: Library, key: str,
                         signature: meta_graph_pb2.SignatureDef) -> Selection:
    where = f"signature {key!r}"
    inputs = tuple(_port(k, signature.inputs[k], where) for k in sorted(signature.inputs))
    outputs = tuple(_port(k, signature.outputs[k], where) for k in sorted(signature.outputs))
    by_name = {node.name: node for node in graph_def.node}
    roots = []
    for k, info in list(signature.inputs.items()) + list(signature.outputs.items()):
        for tensor in _tensor_names(info):
            ref = graph_ref(tensor, where)
            if ref.node not in by_name:
                raise ViewError(f"{where}: {k!r} names tensor {tensor!r}, which is not in the graph")
            roots.append(ref.node)
    needed = needed_nodes(by_name, roots)
    nodes = tuple(node for node in graph_def.node if node.name in needed)
    pruned = graph_pb2.GraphDef(node=nodes)
    if graph_def.HasField("versions"):
        pruned.versions.CopyFrom(graph_def.versions)
    pruned.library.function.extend(library.functions[name] for name in library.reachable(nodes))
    body = Body("signature", key, nodes, inputs, outputs, graph_inputs(nodes, where))
    return Selection(body, library, pruned)


def _tensor_names(info: meta_graph_pb2.TensorInfo) -> list[str]:
    """Every tensor a TensorInfo names: one, the three of a sparse tensor, or the components
    of a composite tensor."""
    encoding = info.WhichOneof("encoding")
    if encoding == "coo_sparse":
        sparse = info.coo_sparse
        return [sparse.values_tensor_name, sparse.indices_tensor_name, sparse.dense_shape_tensor_name]
    if encoding == "composite_tensor":
        return [name for part in info.composite_tensor.components for name in _tensor_names(part)]
    return [info.name] if info.name else []


def _port(key: str, info: meta_graph_pb2.TensorInfo, where: str) -> Port:
    names = _tensor_names(info)
    ref = graph_ref(names[0], where) if names else None
    return Port(key, dtype_name(info.dtype), shape_from_proto(info.tensor_shape), True, ref)
