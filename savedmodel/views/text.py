"""The compact text view: one line per node, attrs sorted, byte-stable across runs.

It is both what `savedmodel graph` prints by default and the golden format of tests, so it
depends only on the graph (file order of nodes, sorted attrs), never on dict or set order.

Grammar (two spaces of indentation per level)::

    view      = header NEWLINE { INDENT line NEWLINE }
    header    = "graph " NAME
              | "signature " NAME "(" [sig_in {", " sig_in}] ") -> (" [port {", " port}] ")"
              | "function @" NAME params
    node      = "%" NAME " = " OP "(" [input {", " input}] ")" [" {" attr {", " attr} "}"]
                [" on " STRING]
    input     = "%" NODE [":" INDEX]             index only when not 0
              | "%" NODE ":" OUTPUT_ARG ":" INDEX  function body, producer's op unknown
              | "^" NODE                         control input
    attr      = KEY "=" value                    keys sorted; "_"-prefixed keys only with all_attrs
    value     = INT | FLOAT | "true" | "false" | STRING | DTYPE | shape | tensor
              | "@" FUNCTION ["{" attr {", " attr} "}"] | "[" [value {", " value}] "]"
              | "$" PLACEHOLDER | "none"
    shape     = "[" dims "]" with "?" for unknown dimensions, "[...]" for unknown rank
    tensor    = DTYPE shape [" " (SCALAR | "[" SCALAR {", " SCALAR} [", ..."] "]")]
    callee    = LABEL ": @" FUNCTION params      after its call node, one level deeper,
                                                 followed by the function's body another level deeper
    params    = "(" ["%" ARG ": " TYPE {", " ...}] ") -> (" [port {", " port}] ")"
    sig_in    = KEY ": " TYPE " = " input        the tensor a signature input feeds
    port      = KEY ": " TYPE                    TYPE = DTYPE [shape]
    return    = "return " [KEY "=" input {", " ...}] [", "] ["^" NODE {", " ...}]

A callee's label is the attr naming it (`f`, `then_branch`, `branches[1]`) or `call` for a node
whose op is the function. A function already being expanded further up is not expanded again
(` (recursive: @f -> @g -> @f)`, naming the cycle), nor one missing from the library
(` (not in the library)`), nor calls nested deeper than `body.MAX_EXPAND_DEPTH` levels.
"""
from __future__ import annotations

import numpy as np

from savedmodel.protos import attr_value_pb2, node_def_pb2
from savedmodel.views.body import Body, Library, Port, Ref
from savedmodel.views.select import Selection
from savedmodel.views.values import dtype_name, float_text, quote, shape_text, tensor_text

INDENT = "  "


def render_text(selection: Selection, *, expand: bool = False, all_attrs: bool = False) -> str:
    """The text view of a selection; with `expand`, call nodes are followed by their callees."""
    body = selection.body
    printer = _Printer(selection.library, expand, all_attrs)
    stack = (body.name,) if body.kind == "function" else ()
    printer.body(body, 1, stack)
    return "\n".join([header(body)] + printer.lines) + "\n"


def header(body: Body) -> str:
    if body.kind == "signature":
        inputs = ", ".join(f"{p.name}: {port_type(p)} = {ref_text(p.ref)}" if p.ref else
                           f"{p.name}: {port_type(p)}" for p in body.inputs)
        return f"signature {body.name}({inputs}) -> ({_results(body.outputs)})"
    if body.kind == "function":
        return f"function @{body.name}{params(body)}"
    return f"graph {body.name}"


def params(body: Body) -> str:
    args = ", ".join(f"%{p.name}: {port_type(p)}" for p in body.inputs)
    return f"({args}) -> ({_results(body.outputs)})"


def _results(ports: tuple[Port, ...]) -> str:
    return ", ".join(f"{p.name}: {port_type(p)}" for p in ports)


def port_type(port: Port) -> str:
    return port.dtype + shape_text(port.shape) if port.has_shape else port.dtype


def ref_text(ref: Ref) -> str:
    if ref.control:
        return f"^{ref.node}"
    if ref.output_arg is not None:
        return f"%{ref.node}:{ref.output_arg}:{ref.index}"
    return f"%{ref.node}:{ref.index}" if ref.index else f"%{ref.node}"


def node_line(node: node_def_pb2.NodeDef, inputs: tuple[Ref, ...], all_attrs: bool = False) -> str:
    """`%name = Op(%a, %b:1, ^c) {k=v, ...}`, with ` on "device"` when the node has one."""
    line = f"%{node.name} = {node.op}({', '.join(ref_text(r) for r in inputs)})"
    attrs = attrs_text(node.attr, all_attrs, f"node {node.name!r}")
    if attrs:
        line += f" {{{attrs}}}"
    if node.device:
        line += f" on {quote(node.device, 200)}"
    return line


def attrs_text(attr_map, all_attrs: bool, where: str) -> str:
    return ", ".join(f"{key}={value_text(attr_map[key], f'{where}: attr {key!r}')}"
                     for key in sorted(attr_map) if all_attrs or not key.startswith("_"))


def value_text(value: attr_value_pb2.AttrValue, where: str = "") -> str:
    """One attr value in the text view's spelling."""
    kind = value.WhichOneof("value")
    if kind is None:
        return "none"
    if kind == "list":
        return "[" + ", ".join(_list_items(value.list, where)) + "]"
    return _SCALARS[kind](getattr(value, kind), where)


def _list_items(values: attr_value_pb2.AttrValue.ListValue, where: str) -> list[str]:
    for kind in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(values, kind)
        if len(items):
            return [_SCALARS[kind](item, where) for item in items]
    return []


def _func_text(func: attr_value_pb2.NameAttrList, where: str) -> str:
    attrs = attrs_text(func.attr, True, where)
    return f"@{func.name}{{{attrs}}}" if attrs else f"@{func.name}"


def _shape_proto_text(proto, where: str) -> str:
    if proto.unknown_rank:
        return shape_text(None)
    return shape_text(tuple(None if d.size == -1 else d.size for d in proto.dim))


_SCALARS = {
    "s": lambda v, where: quote(v),
    "i": lambda v, where: str(v),
    "f": lambda v, where: float_text(np.float32(v)),
    "b": lambda v, where: "true" if v else "false",
    "type": lambda v, where: dtype_name(v),
    "shape": _shape_proto_text,
    "tensor": tensor_text,
    "func": _func_text,
    "placeholder": lambda v, where: f"${v}",
}


class _Printer:
    """Collects the lines of a body and, when expanding, of the functions it calls."""

    def __init__(self, library: Library, expand: bool, all_attrs: bool):
        self.library = library
        self.expand = expand
        self.all_attrs = all_attrs
        self.lines: list[str] = []

    def body(self, body: Body, depth: int, stack: tuple[str, ...]) -> None:
        pad = INDENT * depth
        for node in body.nodes:
            self.lines.append(pad + node_line(node, body.node_inputs[node.name], self.all_attrs))
            if self.expand:
                for label, name in self.library.callees(node):
                    self.callee(label, name, depth + 1, stack)
        returned = _return_line(body)
        if returned:
            self.lines.append(pad + returned)

    def callee(self, label: str, name: str, depth: int, stack: tuple[str, ...]) -> None:
        pad = INDENT * depth
        reason = self.library.not_expanded(name, stack)
        if reason is not None:
            self.lines.append(f"{pad}{label}: @{name} ({reason})")
        else:
            callee = self.library.body(name)
            self.lines.append(f"{pad}{label}: @{name}{params(callee)}")
            self.body(callee, depth + 1, stack + (name,))


def _return_line(body: Body) -> str:
    if body.kind == "graph":
        return ""
    parts = [f"{p.name}={ref_text(p.ref)}" for p in body.outputs if p.ref is not None]
    parts += [f"^{node}" if key == node else f"{key}=^{node}" for key, node in body.control_outputs]
    return "return " + ", ".join(parts) if parts else "return"
