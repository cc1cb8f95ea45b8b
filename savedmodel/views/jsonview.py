"""The JSON view: a graph as data, for scripts. Schema `savedmodel.graph/1`, also documented in
docs/json-schemas.md (section "graph"); it changes only with a new version number.

Document::

    {
      "schema": "savedmodel.graph/1",
      "graph": str,                  signature key, function name, or graph name
      "kind": "graph" | "signature" | "function",
      "inputs": [port],              signature inputs (sorted by key) or function arguments
      "outputs": [port],             signature outputs (sorted by key) or function results
      "control_outputs": [{"name": str, "node": str}],   functions only, else []
      "nodes": [node],               in file order
      "functions": {name: body}      with expand: every library function the nodes call,
                                     directly or not, by name; else {}
    }
    body = {"inputs": [port], "outputs": [port], "control_outputs": [...], "nodes": [node]}
    port = {"name": str, "dtype": str, "shape"?: [int | null] | null, "tensor"?: str}
           dtype is a name such as "float32" (a function argument's may name the attr that
           sets it); shape only where declared (signatures), null for an unknown rank and
           null dimensions for unknown sizes; tensor is what a signature input feeds or what
           an output returns
    node = {"name": str, "op": str, "inputs": [str], "control_inputs": [str],
            "attrs": {key: attr}, "device"?: str, "function"?: {label: str}}
           inputs are "node:index" (flat output index) or, in a function body whose producer's
           op is unknown, "node:output_arg:index"; a function argument is "arg:0".
           control_inputs are node names. attrs starting with "_" only with all_attrs.
           function (with expand) maps each callee's label ("f", "then_branch",
           "branches[0]", "call") to a key of "functions".
    attr = exactly one of
           {"s": str}          UTF-8 text; bytes that are not UTF-8 as \\xNN escapes
           {"i": int} | {"b": bool} | {"type": str} | {"placeholder": str}
           {"f": number | "nan" | "inf" | "-inf"}
           {"shape": [int | null] | null}
           {"tensor": {"dtype": str, "shape": [int | null] | null, "size": int | null,
                       "values": [...], "truncated": bool, "error"?: str}}
                       values: the first few elements in row-major order (numbers, bools,
                       strings, [re, im] for complex); none for types without values
           {"func": {"name": str, "attrs": {key: attr}}}
           {"list": [attr]}
           {}                  an empty value
"""
from __future__ import annotations

import json

import numpy as np

from savedmodel.protos import attr_value_pb2
from savedmodel.views.body import Body, Library, Port, Ref
from savedmodel.views.select import Selection
from savedmodel.views.values import dtype_name, float_json, preview

SCHEMA = "savedmodel.graph/1"


def render_json(selection: Selection, *, expand: bool = False, all_attrs: bool = False) -> str:
    return json.dumps(graph_document(selection, expand=expand, all_attrs=all_attrs), indent=1,
                      ensure_ascii=False) + "\n"


def graph_document(selection: Selection, *, expand: bool = False, all_attrs: bool = False) -> dict:
    """The view as JSON-ready data (see the module docstring for the schema)."""
    body, library = selection.body, selection.library
    functions = {}
    if expand:
        names = sorted(library.reachable(body.nodes))
        functions = {name: _body(library.body(name), library, expand, all_attrs) for name in names}
    return {"schema": SCHEMA, "graph": body.name, "kind": body.kind,
            **_body(body, library, expand, all_attrs), "functions": functions}


def _body(body: Body, library: Library, expand: bool, all_attrs: bool) -> dict:
    return {"inputs": [_port(p) for p in body.inputs], "outputs": [_port(p) for p in body.outputs],
            "control_outputs": [{"name": k, "node": n} for k, n in body.control_outputs],
            "nodes": [_node(node, body.node_inputs[node.name], library, expand, all_attrs)
                      for node in body.nodes]}


def _port(port: Port) -> dict:
    found = {"name": port.name, "dtype": port.dtype}
    if port.has_shape:
        found["shape"] = _shape(port.shape)
    if port.ref is not None:
        found["tensor"] = _ref(port.ref)
    return found


def _ref(ref: Ref) -> str:
    if ref.output_arg is not None:
        return f"{ref.node}:{ref.output_arg}:{ref.index}"
    return f"{ref.node}:{ref.index}"


def _node(node, inputs: tuple[Ref, ...], library: Library, expand: bool, all_attrs: bool) -> dict:
    found = {"name": node.name, "op": node.op,
             "inputs": [_ref(r) for r in inputs if not r.control],
             "control_inputs": [r.node for r in inputs if r.control],
             "attrs": {k: attr_json(node.attr[k]) for k in sorted(node.attr)
                       if all_attrs or not k.startswith("_")}}
    if node.device:
        found["device"] = node.device
    callees = library.callees(node) if expand else []
    if callees:
        found["function"] = dict(callees)
    return found


def attr_json(value: attr_value_pb2.AttrValue):
    """One AttrValue as a single-key object named for the AttrValue field that holds it."""
    kind = value.WhichOneof("value")
    if kind is None:
        return {}
    if kind == "list":
        for item_kind in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            items = getattr(value.list, item_kind)
            if len(items):
                return {"list": [{item_kind: _SCALARS[item_kind](item)} for item in items]}
        return {"list": []}
    return {kind: _SCALARS[kind](getattr(value, kind))}


def _shape(shape) -> list | None:
    return None if shape is None else list(shape)


def _shape_proto(proto) -> list | None:
    return None if proto.unknown_rank else [None if d.size == -1 else d.size for d in proto.dim]


def _tensor(proto) -> dict:
    found = preview(proto)
    tensor = {"dtype": found.dtype, "shape": _shape(found.shape), "size": found.size,
              "values": [_element(v) for v in found.values], "truncated": found.truncated}
    if found.error:
        tensor["error"] = found.error
    return tensor


def _element(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.complexfloating):
        return [float_json(value.real), float_json(value.imag)]
    return float_json(value)


_SCALARS = {
    "s": lambda v: v.decode("utf-8", "backslashreplace"),
    "i": int,
    "f": lambda v: float_json(np.float32(v)),
    "b": bool,
    "type": dtype_name,
    "shape": _shape_proto,
    "tensor": _tensor,
    "func": lambda v: {"name": v.name, "attrs": {k: attr_json(v.attr[k]) for k in sorted(v.attr)}},
    "placeholder": str,
}
