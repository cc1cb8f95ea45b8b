"""Exposing every intermediate tensor of a signature, so that two engines can be compared node
by node (`savedmodel compare --per-node`).

A signature's work hides inside function calls (a Keras model is one StatefulPartitionedCall),
and no engine can fetch a tensor inside a function body. So the signature's graph is inlined
as the numpy engine inlines it (runtime.inline: a node `f/x` of a call `f`), and a copy of the
model is written whose graph also holds those inlined nodes, under a prefix, with one more
signature, PER_NODE_SIGNATURE, whose outputs are every output of every inlined node. Each
engine (numpy, native, TensorFlow through its TensorFlow 1 loader) loads that copy as it loads
any SavedModel and runs that signature: the same nodes, the same variables, the same inputs.

The inliner's own nodes (the argument identities and the IdentityN standing for a call's
results, which carry no attrs) are not written: their readers read what they pass on, and wait
for a NoOp that stands for them. Loop and branch bodies (While, If, Case) stay functions, so
their insides are compared through the node that runs them. A graph with TensorFlow 1 control
flow (Switch, Merge, ...) is refused: a tensor on an untaken branch has no value to compare.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from savedmodel.op_defs import all_op_defs
from savedmodel.protos import graph_pb2, meta_graph_pb2, node_def_pb2, saved_model_pb2, types_pb2
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.graph_file import first_output_dtype
from savedmodel.runtime.graph_file import graph_meta_graph, is_graph_file, read_graph
from savedmodel.runtime.inline import simplify
from savedmodel.runtime.library import FunctionLibrary
from savedmodel.runtime.errors import UnknownSignatureError
from savedmodel.runtime.loader import graph_spec, parse_ref
from savedmodel.runtime.plan import FRAME_OPS, GraphNode, GraphSpec, Ref, ordered_nodes
from savedmodel.runtime.saved_model_file import find_meta_graph, read_saved_model

PER_NODE_SIGNATURE = "__savedmodel_per_node__"
"""The signature of the copy that returns every intermediate tensor."""

_REF = types_pb2.DT_FLOAT_REF - types_pb2.DT_FLOAT
"""A TensorFlow 1 reference's DataType is its value's plus this."""


def _comparable(dtype: int) -> bool:
    """Handles, variants and TensorFlow 1 references (a ref variable's output) are not values:
    they are not exposed (what reads a reference is)."""
    return dtype not in (types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT) and dtype < _REF


class PerNodeError(SavedModelError):
    """A model whose intermediates cannot be exposed."""


@dataclass(frozen=True)
class Tensor:
    """One exposed tensor: output `index` of inlined node `node`."""

    node: str
    index: int
    op: str
    function: str | None
    """The library function the node comes from (None: the top-level graph)."""
    inputs: tuple[str, ...]
    """The keys of the exposed tensors it reads."""

    @property
    def key(self) -> str:
        return f"{self.node}:{self.index}"


@dataclass(frozen=True)
class Exposed:
    """A model copy with PER_NODE_SIGNATURE, and its tensors in execution order."""

    export_dir: Path
    signature: str
    tensors: tuple[Tensor, ...]


@contextmanager
def exposed_copy(export_dir: str | Path, signature: str, tags: set[str]) -> Iterator[Exposed]:
    """A temporary copy of the model at `export_dir` (a SavedModel directory or a GraphDef
    file) whose PER_NODE_SIGNATURE takes `signature`'s inputs and returns every intermediate
    tensor; removed when the block ends."""
    export_dir = Path(export_dir)
    meta_graph = _meta_graph(export_dir, tags)
    tensors = _expose(meta_graph, signature, str(export_dir))
    with tempfile.TemporaryDirectory(prefix="savedmodel-per-node-") as work:
        copy = Path(work) / "model"
        _write_copy(export_dir, meta_graph, copy)
        yield Exposed(copy, signature, tensors)


def _meta_graph(export_dir: Path, tags: set[str]) -> meta_graph_pb2.MetaGraphDef:
    if is_graph_file(export_dir):
        return graph_meta_graph(read_graph(export_dir), str(export_dir))
    return find_meta_graph(read_saved_model(export_dir), tags, str(export_dir))


def _expose(meta_graph: meta_graph_pb2.MetaGraphDef, signature: str, where: str) -> tuple[Tensor, ...]:
    """Add the inlined nodes and PER_NODE_SIGNATURE to `meta_graph`; the exposed tensors."""
    found = meta_graph.signature_def.get(signature)
    if found is None:
        available = ", ".join(k for k in meta_graph.signature_def if not k.startswith("__")) or "none"
        raise UnknownSignatureError(f"no signature {signature!r}; available: {available}")
    op_defs = {op.name: op for op in meta_graph.meta_info_def.stripped_op_list.op}
    library = FunctionLibrary(meta_graph.graph_def.library, op_defs)
    spec = graph_spec(meta_graph, op_defs, library, None, library.limits)
    feeds = {parse_ref(name)[0] for info in found.inputs.values() for name in _tensor_names(info)}
    fetches = [parse_ref(name) for info in found.outputs.values() for name in _tensor_names(info)]
    nodes, fetches, _ = simplify(spec, feeds, fetches, [])
    needed = _needed(nodes, [name for name, _ in fetches], feeds)
    frames = sorted({nodes[n].op for n in needed} & FRAME_OPS)
    if frames:
        raise PerNodeError(f"{where}: signature {signature!r} uses TensorFlow 1 control flow "
                           f"({', '.join(frames)}), whose untaken branches have no values to "
                           "compare node by node")
    order = ordered_nodes(where, nodes, needed - feeds, feeds)  # as the numpy engine orders them
    writer = _Writer(spec, nodes, _prefix(meta_graph.graph_def))
    tensors = writer.write(order, meta_graph.graph_def)
    exposed = meta_graph.signature_def[PER_NODE_SIGNATURE]
    exposed.method_name = found.method_name
    for key, info in found.inputs.items():
        exposed.inputs[key].CopyFrom(info)
    for tensor, dtype in tensors:
        exposed.outputs[tensor.key].CopyFrom(meta_graph_pb2.TensorInfo(
            name=f"{writer.renamed(tensor.node)}:{tensor.index}", dtype=dtype))
    return tuple(tensor for tensor, _ in tensors)


def _tensor_names(info: meta_graph_pb2.TensorInfo) -> list[str]:
    """The graph tensors of a signature input or output: itself, or a sparse or ragged
    tensor's components."""
    encoding = info.WhichOneof("encoding")
    if encoding == "coo_sparse":
        coo = info.coo_sparse
        return [coo.indices_tensor_name, coo.values_tensor_name, coo.dense_shape_tensor_name]
    if encoding == "composite_tensor":
        return [component.name for component in info.composite_tensor.components]
    return [info.name]


def _prefix(graph: graph_pb2.GraphDef) -> str:
    """A name scope no node of the graph is in."""
    names = [node.name for node in graph.node]
    prefix, n = "savedmodel_per_node", 0
    while any(name.startswith(f"{prefix}/") for name in names):
        n += 1
        prefix = f"savedmodel_per_node_{n}"
    return prefix


def _needed(nodes: dict[str, GraphNode], roots: list[str], fed: set[str]) -> set[str]:
    """The nodes the roots need (their data and control inputs, transitively; not past feeds)."""
    needed, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in needed or name not in nodes:
            continue
        needed.add(name)
        if name not in fed:
            stack.extend(n for n, _ in nodes[name].data)
            stack.extend(nodes[name].control)
    return needed


def _is_made_by_inliner(node: GraphNode) -> bool:
    """The argument identities and call results runtime.inline makes carry no attrs."""
    return type(node.attr) is dict and node.op in ("Identity", "IdentityN")


class _Writer:
    """Writes the inlined nodes into the graph: renamed under `prefix`, except top-level
    sources (placeholders, variable handles, constants), which are shared with the graph."""

    def __init__(self, spec: GraphSpec, nodes: dict[str, GraphNode], prefix: str):
        self.nodes, self.prefix = nodes, prefix
        self.op_defs = {**all_op_defs(), **spec.op_defs}

    def renamed(self, name: str) -> str:
        node = self.nodes[name]
        shared = node.function is None and not node.data and not _is_made_by_inliner(node)
        return name if shared else f"{self.prefix}/{name}"

    def write(self, order: list[str], graph: graph_pb2.GraphDef) -> list[tuple[Tensor, int]]:
        tensors = []
        for name in order:
            node = self.nodes[name]
            if self.renamed(name) != name:
                graph.node.append(self._node_def(node))
            if _is_made_by_inliner(node):
                continue
            inputs = tuple(self._source_key(ref) for ref in node.data)
            for index, dtype in enumerate(_output_dtypes(self.op_defs, node)):
                if _comparable(dtype):
                    tensors.append((Tensor(name, index, node.op, node.function, inputs), dtype))
        return tensors

    def _source_key(self, ref: Ref) -> str:
        name, index = self._resolved(ref)[0]
        return f"{name}:{index}"

    def _resolved(self, ref: Ref) -> tuple[Ref, list[str]]:
        """The real node output behind `ref`, and the inliner's nodes it passed through."""
        passed = []
        while ref[0] in self.nodes and _is_made_by_inliner(self.nodes[ref[0]]):
            passed.append(ref[0])
            ref = self.nodes[ref[0]].data[ref[1]]
        return ref, passed

    def _node_def(self, node: GraphNode):
        out = node_def_pb2.NodeDef(name=self.renamed(node.name))
        waits = list(node.control)
        if _is_made_by_inliner(node):
            out.op = "NoOp"
            waits += [self._resolved(ref)[0][0] for ref in node.data]
        else:
            out.op = node.op
            for key, value in node.attr.items():
                if key != "_class":  # colocation with nodes of the original function body
                    out.attr[key].CopyFrom(value)
            for ref in node.data:
                (name, index), passed = self._resolved(ref)
                out.input.append(f"{self.renamed(name)}:{index}")
                waits += passed
        out.input.extend(f"^{self.renamed(n)}" for n in dict.fromkeys(waits))
        return out


def _output_dtypes(op_defs: dict, node: GraphNode) -> list[int]:
    """The DataType of each output, from the op's definition and the node's attrs. A GraphDef
    file carries no op definitions: without one, its first output's as the attrs declare it
    (runtime.graph_file's convention for the outputs of a frozen graph), or none."""
    op_def = op_defs.get(node.op)
    if op_def is None:
        dtype = first_output_dtype(node)
        return [] if dtype is None else [dtype]
    attrs = dict(node.attr)
    for attr in op_def.attr:
        if attr.name not in attrs and attr.HasField("default_value"):
            attrs[attr.name] = attr.default_value
    dtypes = []
    for arg in op_def.output_arg:
        if arg.type_list_attr:
            dtypes += list(attrs[arg.type_list_attr].list.type)
            continue
        dtype = (arg.type or attrs[arg.type_attr].type) + (_REF if arg.is_ref else 0)
        dtypes += [dtype] * (attrs[arg.number_attr].i if arg.number_attr else 1)
    return dtypes


def _write_copy(export_dir: Path, meta_graph: meta_graph_pb2.MetaGraphDef, copy: Path) -> None:
    """The model's files with `meta_graph` as its only MetaGraphDef (the variables linked, or
    copied where links cannot be made; a GraphDef file has none)."""
    copy.mkdir()
    (copy / "saved_model.pb").write_bytes(
        saved_model_pb2.SavedModel(saved_model_schema_version=1, meta_graphs=[meta_graph]).SerializeToString())
    if is_graph_file(export_dir):
        return
    for part in ("variables", "assets", "assets.extra"):
        if (export_dir / part).is_dir():
            shutil.copytree(export_dir / part, copy / part, copy_function=_link_or_copy)


def _link_or_copy(source: str, target: str) -> None:
    try:
        Path(target).hardlink_to(source)
    except OSError:
        shutil.copy2(source, target)
