"""A signature's graph with its function calls inlined: what the viewer draws.

Keras and tf.function exports hide a model behind one or two `StatefulPartitionedCall` nodes
whose callees take the weights as arguments named `unknown_N`. Inlining each call (its callee's
nodes get the call's path as prefix, its arguments become the caller's inputs, its results the
callee's return values) shows the real ops and lets every `ReadVariableOp` reach the top-level
`VarHandleOp` it reads, so weights are named after their variables. Control flow (`While`,
`If`, `Case`) stays one node: its bodies run many times or not at all.

Output shapes come from the `_output_shapes` attrs TensorFlow writes into saved function bodies
(and from the signature's declared inputs for placeholders); a node without them shows `?`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.views.body import Body, Library, Ref
from savedmodel.views.select import Selection
from savedmodel.views.values import Shape, dtype_name

CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
SEPARATOR = "::"
"""Joins a call's path to its callee's node names (`::` cannot occur in a node name)."""


@dataclass
class FlatNode:
    """One node of the inlined graph. `path` is unique (call path plus name); `inputs` are the
    producers' (path, output index) after inlining; `outputs` (dtype, shape) per output where
    known."""

    path: str
    name: str
    op: str
    node: object
    inputs: list[tuple[str, int]] = field(default_factory=list)
    outputs: list[tuple[str, Shape | None]] = field(default_factory=list)


@dataclass
class FlatGraph:
    nodes: dict[str, FlatNode]
    outputs: list[tuple[str, tuple[str, int]]]
    """Signature output keys and the (path, index) each returns."""


def flatten(selection: Selection) -> FlatGraph:
    """The selection's body with every call inlined (recursively, cycles left as calls)."""
    flattener = _Flattener(selection.library)
    body = selection.body
    flattener.body(body, "", {}, ())
    declared = {p.ref.node: p for p in body.inputs if p.ref is not None}
    for path, port in declared.items():
        if path in flattener.nodes:
            flattener.nodes[path].outputs = [(port.dtype, port.shape)]
    outputs = [(p.name, flattener.resolve(("", p.ref))) for p in body.outputs if p.ref is not None]
    return FlatGraph(flattener.nodes, outputs)


class _Flattener:
    def __init__(self, library: Library):
        self.library = library
        self.nodes: dict[str, FlatNode] = {}
        self.alias: dict[tuple[str, int], tuple[str, int]] = {}

    def resolve(self, scoped: tuple[str, Ref]) -> tuple[str, int]:
        prefix, ref = scoped
        key = (prefix + ref.node, ref.index)
        seen = 0
        while key in self.alias and seen < 10_000:
            key, seen = self.alias[key], seen + 1
        return key

    def body(self, body: Body, prefix: str, args: dict[str, tuple[str, int]], stack: tuple[str, ...]) -> None:
        for name, source in args.items():
            self.alias[(prefix + name, 0)] = source
        for node in body.nodes:
            refs = [r for r in body.node_inputs[node.name] if not r.control]
            inputs = [self.resolve((prefix, r)) for r in refs]
            callee = self._callee(node, stack)
            if callee is not None:
                self._inline(node, prefix, inputs, callee, stack)
                continue
            path = prefix + node.name
            self.nodes[path] = FlatNode(path, node.name, node.op, node, inputs, _declared_outputs(node))

    def _callee(self, node, stack: tuple[str, ...]) -> str | None:
        if node.op not in CALL_OPS and node.op not in self.library.functions:
            return None
        name = node.attr["f"].func.name if node.op in CALL_OPS else node.op
        return name if self.library.not_expanded(name, stack) is None else None

    def _inline(self, node, prefix: str, inputs: list[tuple[str, int]], callee: str,
                stack: tuple[str, ...]) -> None:
        body = self.library.body(callee)
        inner = f"{prefix}{node.name}{SEPARATOR}"
        self.body(body, inner, {port.name: src for port, src in zip(body.inputs, inputs)}, stack + (callee,))
        for index, port in enumerate(body.outputs):
            if port.ref is not None:
                self.alias[(prefix + node.name, index)] = self.resolve((inner, port.ref))


def _declared_outputs(node) -> list[tuple[str, Shape | None]]:
    """(dtype, shape) per output from the attrs TensorFlow records: `_output_shapes` for shapes,
    `T`/`dtype`/`out_type`/`Tout` for dtypes where they say it."""
    shapes = [shape_from_proto(s) for s in node.attr["_output_shapes"].list.shape] if "_output_shapes" in node.attr else []
    dtypes = _output_dtypes(node)
    count = max(len(shapes), len(dtypes), 1)
    return [(dtypes[i] if i < len(dtypes) else "?", shapes[i] if i < len(shapes) else None) for i in range(count)]


def _output_dtypes(node) -> list[str]:
    for key in ("Tout", "out_type", "dtype", "T", "output_type", "DstT"):
        if key in node.attr:
            value = node.attr[key]
            if value.HasField("list"):
                return [dtype_name(t) for t in value.list.type]
            if value.type:
                return [dtype_name(value.type)]
    return []
