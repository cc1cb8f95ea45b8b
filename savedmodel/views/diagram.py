"""A selection as boxes and arrows, the common ground of the DOT and SVG views.

A `Block` holds one body: a box per node, per function argument and per output, links for data
and control inputs, and, when expanding, the blocks of the functions each call node calls. Box
ids are unique across the whole tree and readable: a top-level node's id is its name, a callee's
node is `<call id>::<label>::<name>`, and ports are `arg::<name>` / `out::<name>` within their
block. `::` cannot occur in a TensorFlow node name, so ids never collide.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from savedmodel.views.body import CALLEE_ATTRS, Body, Library, Ref
from savedmodel.views.select import Selection
from savedmodel.views.text import header, node_line, port_type

SEPARATOR = "::"
VARIABLE_OPS = frozenset({
    "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
    "AssignSubVariableOp", "VarIsInitializedOp", "VariableV2", "Variable", "Assign",
    "DestroyResourceOp", "DisableCopyOnRead",
})


@dataclass(frozen=True)
class Box:
    """One drawn box. `kind` is "node", "input", "output" or "missing" (a producer that the body
    references but does not hold); `title` is the op or port name, `subtitle` the node name or
    port type, `tooltip` the node's full text line."""

    id: str
    kind: str
    title: str
    subtitle: str
    tooltip: str
    category: str = "op"


@dataclass(frozen=True)
class Link:
    source: str
    target: str
    control: bool = False


@dataclass
class Block:
    """One body's boxes and links; `children` maps a call box's id to its callees' blocks."""

    id: str
    label: str
    boxes: list[Box] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    children: dict[str, list[Block]] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        """Boxes of `kind` here and in every nested block."""
        return (sum(b.kind == kind for b in self.boxes)
                + sum(c.count(kind) for blocks in self.children.values() for c in blocks))


def build(selection: Selection, expand: bool = False, all_attrs: bool = False) -> Block:
    """The block tree of a selection; with `expand`, call nodes hold their callees."""
    body = selection.body
    stack = (body.name,) if body.kind == "function" else ()
    return _Builder(selection.library, expand, all_attrs).block(body, "", header(body), stack)


class _Builder:
    def __init__(self, library: Library, expand: bool, all_attrs: bool):
        self.library = library
        self.expand = expand
        self.all_attrs = all_attrs
        self.seen: set[Link] = set()

    def block(self, body: Body, prefix: str, label: str, stack: tuple[str, ...]) -> Block:
        block = Block(prefix, label)
        ids = {node.name: prefix + node.name for node in body.nodes}
        if body.kind == "function":
            for port in body.inputs:
                ids.setdefault(port.name, f"{prefix}arg{SEPARATOR}{port.name}")
                block.boxes.append(Box(ids[port.name], "input", port.name, port_type(port),
                                       f"%{port.name}: {port_type(port)}", "input"))
        for node in body.nodes:
            inputs = body.node_inputs[node.name]
            block.boxes.append(Box(ids[node.name], "node", node.op, node.name,
                                   node_line(node, inputs, self.all_attrs), self._category(node)))
            for ref in inputs:
                self._link(block, ids, prefix, ref, ids[node.name])
            if self.expand:
                self._expand(block, node, ids[node.name], stack)
        for port in body.outputs:
            out_id = f"{prefix}out{SEPARATOR}{port.name}"
            block.boxes.append(Box(out_id, "output", port.name, port_type(port),
                                   f"{port.name}: {port_type(port)}", "output"))
            if port.ref is not None:
                self._link(block, ids, prefix, port.ref, out_id)
        return block

    def _link(self, block: Block, ids: dict, prefix: str, ref: Ref, target: str) -> None:
        if ref.node not in ids:
            ids[ref.node] = prefix + ref.node
            block.boxes.append(Box(ids[ref.node], "missing", "?", ref.node,
                                   f"{ref.node}: not in this graph", "missing"))
        link = Link(ids[ref.node], target, ref.control)
        if link not in self.seen:
            self.seen.add(link)
            block.links.append(link)

    def _expand(self, block: Block, node, node_id: str, stack: tuple[str, ...]) -> None:
        for label, name in self.library.callees(node):
            if self.library.not_expanded(name, stack) is None:
                child = self.block(self.library.body(name), f"{node_id}{SEPARATOR}{label}{SEPARATOR}",
                                   f"{label}: @{name}", stack + (name,))
                block.children.setdefault(node_id, []).append(child)

    def _category(self, node) -> str:
        if node.op == "Placeholder":
            return "input"
        if node.op == "Const":
            return "const"
        if node.op in VARIABLE_OPS:
            return "variable"
        if node.op in CALLEE_ATTRS or self.library.callees(node):
            return "call"
        return "op"


PALETTE = {
    "op": ("#e8eef9", "#5b7bb5"),
    "input": ("#e2f3df", "#4c9a45"),
    "output": ("#fdebd3", "#c27c1e"),
    "const": ("#f1f1f1", "#8c8c8c"),
    "variable": ("#fff4d4", "#c39a2b"),
    "call": ("#efe5f8", "#8759b3"),
    "missing": ("#ffffff", "#c0392b"),
}
"""Fill and stroke colour of each box category, shared by the DOT and SVG views."""
