"""The interactive viewer's document: a model's nodes grouped into layers, laid out, with the
shapes, attrs and weight statistics its side panel shows. `viewer_page` embeds it in one HTML
file with the script (viewer.js) that draws it.

The nodes, their shapes, layers and variables are `static_shapes`'s: every node the signature
runs, through function calls and control-flow bodies. What is drawn leaves out the plumbing
that would bury the model's ops: constants, variable handles and reads, `NoOp`s, call nodes
whose bodies are drawn instead, and Identity nodes that only pass those on. A node's constant
and weight inputs are listed in its side panel instead, weights under their variable's name
(not the `unknown_N` argument of a wrapper function) with min/max/mean/std. The page starts
with every layer collapsed into one box, so a large model draws as a short chain of boxes;
each layer's inside is laid out on its own, so opening one needs no new layout (viewer.js
inserts room for it).

Document (JSON)::

    {"title": str, "signature": str, "width": float, "height": float,
     "nodes": [{"name", "path", "op", "label", "kind": "op"|"input"|"output", "layer": int|null,
                "attrs": [[key, text]],
                "inputs": [{"source": str, "dtype": str, "shape": str|null, "value"?: str}],
                           value: a constant input's first elements
                "outputs": [{"dtype": str, "shape": str|null}], "variables": [int]}],
     "layers": [{"name", "type", "params": int, "trainable": int, "flops": int|null,
                 "outputs": [str], "variables": [int], "nodes": [int], "x", "y", "w", "h",
                 "open_w", "open_h", "positions": {node: [x, y, w, h]}, "edges": [edge]}],
                type, params, trainable and flops as `savedmodel summary` gives them (flops
                null when some op's count is unknown)
     "items": [{"layer": int} | {"node": int, "x", "y", "w", "h"}],   top-level boxes
     "edges": [edge],
     "variables": [{"name", "dtype", "shape", "stats"?: {"min", "max", "mean", "std"},
                    "error"?: str}]}
    edge = {"points": [[x, y]], "label": str}   label: the tensor's shape, `?` where unknown
"""
from __future__ import annotations

import json
from pathlib import Path

from savedmodel.model_summary import summarize_structure
from savedmodel.protos import attr_value_pb2
from savedmodel.static_shapes import SEPARATOR, ModelStructure, Node, Output, Variable
from savedmodel.views.jsonview import attr_json
from savedmodel.views.layout import layered_layout
from savedmodel.views.svg import elide
from savedmodel.views.text import value_text
from savedmodel.views.values import Shape
from savedmodel.views.weights import WeightStats, weight_stats

HIDDEN_OPS = frozenset({"Const", "VarHandleOp", "VariableV2", "Variable", "ReadVariableOp", "NoOp"})
CHAR = 0.61
NODE_HEIGHT, LAYER_HEIGHT = 34.0, 40.0
HEADER, PAD = 22.0, 10.0
MAX_LABEL = 30
GAP_Y = 48.0
"""Rows are far enough apart for an edge's shape label."""


def build_document(structure: ModelStructure, variables_prefix: Path | None, title: str) -> dict:
    """The viewer document of a model's structure; weight statistics from the checkpoint at
    `variables_prefix` (None: a GraphDef file, no weights)."""
    stats = weight_stats(variables_prefix, list(structure.variables.values()))
    return _Builder(structure, stats, title).document()


class _Builder:
    def __init__(self, structure: ModelStructure, stats: dict[str, WeightStats], title: str):
        self.structure = structure
        self.stats = stats
        self.title = title
        self.variables: list[dict] = []
        self.variable_index: dict[str, int] = {}
        self.nodes: list[dict] = []
        self.index: dict[str, int] = {}
        self.hidden = _hidden(structure)
        self.shown = [n for n in structure.nodes.values() if n.path not in self.hidden]

    def document(self) -> dict:
        layer_keys = {}
        for node in self.shown:
            self.index[node.path] = len(self.nodes)
            self.nodes.append(self._node(node))
            if node.layer is not None:
                layer_keys.setdefault(node.layer, []).append(self.index[node.path])
        outputs = []
        for port in self.structure.outputs:
            outputs.append((len(self.nodes), port.ref))
            self.nodes.append({"name": port.key, "path": port.key, "op": "output", "label": port.key,
                               "kind": "output", "layer": None, "attrs": [],
                               "inputs": [self._input(port.ref)] if port.ref else [],
                               "outputs": [], "variables": []})
        layers = self._layers(layer_keys)
        document = {"title": self.title, "signature": self.structure.name, "nodes": self.nodes}
        document.update(_lay_out(self.nodes, layers, self._edges(outputs)))
        document["variables"] = self.variables
        return document

    def _node(self, node: Node) -> dict:
        reads = list(node.variables)
        for path, _ in node.inputs:
            producer = self._behind(path)
            if producer is not None and producer.path in self.hidden:
                reads += producer.variables
        label = node.name.rsplit("/", 1)[-1]
        return {"name": node.name, "path": _display(node.path), "op": node.op,
                "label": "" if label == node.op else elide(label, MAX_LABEL),
                "kind": "input" if node.op in ("Placeholder", "PlaceholderWithDefault") else "op",
                "layer": node.layer, "attrs": _attrs(node.attrs.attr),
                "inputs": [self._input(ref) for ref in node.inputs],
                "outputs": [_tensor(o) for o in node.outputs],
                "variables": [self._variable(key) for key in dict.fromkeys(reads)]}

    def _input(self, ref: tuple[str, int]) -> dict:
        """An input as the panel lists it: its variable's name when it is a weight, else
        its producer's name (`name:index` past the first output)."""
        producer = self.structure.nodes.get(ref[0])
        origin = self._behind(ref[0])
        output = self.structure.output(ref) or Output("?", None)
        if origin is not None and origin.path in self.hidden and len(origin.variables) == 1:
            return {"source": self.structure.variables[origin.variables[0]].name, **_tensor(output)}
        name = producer.name if producer is not None else _display(ref[0])
        found = {"source": name + (f":{ref[1]}" if ref[1] else ""), **_tensor(output)}
        if origin is not None and origin.op == "Const" and "value" in origin.attrs.attr:
            found["value"] = _preview(origin.attrs.attr["value"])
        return found

    def _behind(self, path: str) -> Node | None:
        """The node behind a chain of hidden `Identity` nodes (a frozen graph's weights pass
        through two: the inliner's input and the former ReadVariableOp)."""
        node = self.structure.nodes.get(path)
        for _ in range(len(self.hidden)):
            if node is None or node.op != "Identity" or node.path not in self.hidden or not node.inputs:
                break
            node = self.structure.nodes.get(node.inputs[0][0])
        return node

    def _variable(self, key: str) -> int:
        if key not in self.variable_index:
            self.variable_index[key] = len(self.variables)
            self.variables.append(_variable(self.structure.variables[key], self.stats.get(key)))
        return self.variable_index[key]

    def _edges(self, outputs: list[tuple[int, tuple[str, int] | None]]) -> list[tuple[int, int, str]]:
        edges = []
        for node in self.shown:
            for ref in node.inputs:
                if ref[0] in self.index and ref[0] != node.path:
                    edges.append((self.index[ref[0]], self.index[node.path], self._label(ref)))
        for target, ref in outputs:
            if ref is not None and ref[0] in self.index:
                edges.append((self.index[ref[0]], target, self._label(ref)))
        return edges

    def _label(self, ref: tuple[str, int]) -> str:
        output = self.structure.output(ref)
        return "?" if output is None else _shape_label(output.shape)

    def _layers(self, members_by_key: dict[str, list[int]]) -> list[dict]:
        """The layers that have drawn nodes, in static_shapes's order (data order), described
        as `savedmodel summary` describes them (type, parameters, FLOPs, output shapes)."""
        described = dict(zip(self.structure.layers, summarize_structure(self.structure)["layers"]))
        layers = []
        for key, layer in self.structure.layers.items():
            members = members_by_key.get(key)
            if not members:
                continue
            for i in members:
                self.nodes[i]["layer"] = len(layers)
            summary = described[key]
            layers.append({"name": layer.name, "type": summary["type"], "params": summary["params"],
                           "trainable": summary["trainable_params"],
                           "flops": summary["flops"] if summary["flops_known"] else None,
                           "outputs": [_shape_text(self.structure.output(ref).shape) or "?" for ref in layer.outputs],
                           "variables": [self._variable(v) for v in layer.variables], "nodes": members})
        return layers


_KEPT_CALLERS = frozenset({"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase"})
"""Control flow stays drawn beside its bodies: it is where their loop or branch values come from."""


def _hidden(structure: ModelStructure) -> set[str]:
    """Paths of the nodes not drawn: constants, variables and their reads, NoOps, call nodes
    whose bodies are drawn, and Identity nodes that only pass a hidden node on (producers come
    before their consumers in `structure.nodes`)."""
    called = {path.rpartition(SEPARATOR)[0] for path in structure.nodes if SEPARATOR in path}
    hidden: set[str] = set()
    for node in structure.nodes.values():
        if (node.op in HIDDEN_OPS or (node.path in called and node.op not in _KEPT_CALLERS)
                or (node.op == "Identity" and node.inputs and all(p in hidden for p, _ in node.inputs))):
            hidden.add(node.path)
    return hidden


def _display(path: str) -> str:
    return path.replace(SEPARATOR, "/")


def _attrs(attr_map) -> list[list[str]]:
    return [[k, _attr_text(attr_map[k])] for k in sorted(attr_map) if not k.startswith("_")]


def _shape_label(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "\u00d7".join("?" if d is None else str(d) for d in shape) if shape else "scalar"


def _tensor(output: Output) -> dict:
    return {"dtype": output.dtype, "shape": _shape_text(output.shape)}


def _shape_text(shape: Shape | None) -> str | None:
    return None if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _attr_text(value: attr_value_pb2.AttrValue) -> str:
    if value.WhichOneof("value") == "tensor":
        tensor = attr_json(value)["tensor"]
        return f"{tensor['dtype']}{_shape_text(tensor['shape']) or '[...]'} {_preview(value)}"
    return value_text(value)


def _preview(value: attr_value_pb2.AttrValue) -> str:
    """A tensor attr's first elements, `...` when there are more."""
    tensor = attr_json(value)["tensor"]
    return json.dumps(tensor["values"], ensure_ascii=False)[:-1] + (", ...]" if tensor["truncated"] else "]")


def _variable(variable: Variable, stats: WeightStats | None) -> dict:
    found = {"name": variable.name, "dtype": variable.dtype, "shape": _shape_text(variable.shape) or "?"}
    if stats is not None and stats.stats is not None:
        found["stats"] = {k: f"{v:.6g}" if isinstance(v, float) else v for k, v in stats.stats.items()}
    if stats is not None and stats.error is not None:
        found["error"] = stats.error
    return found


def _box(node: dict) -> tuple[float, float]:
    width = max(len(node["op"]) * 11 * CHAR, len(node["label"]) * 9 * CHAR) + 2 * PAD
    return max(width, 60.0), NODE_HEIGHT


def _lay_out(nodes: list[dict], layers: list[dict], edges: list[tuple[int, int, str]]) -> dict:
    """Positions: each layer's inside on its own, then the top level with layers as boxes."""
    sizes: dict[str, tuple[float, float]] = {}
    item_of = {}
    for i, node in enumerate(nodes):
        if node["layer"] is None:
            item_of[i] = f"n{i}"
            sizes[f"n{i}"] = _box(node)
    for j, layer in enumerate(layers):
        _lay_out_layer(layer, nodes, [(s, t, label) for s, t, label in edges
                                      if nodes[s]["layer"] == j and nodes[t]["layer"] == j])
        for i in layer["nodes"]:
            item_of[i] = f"L{j}"
        text = max(len(layer["name"]) * 12, (len(layer["type"]) + 16) * 10) * CHAR
        sizes[f"L{j}"] = (max(text + 2 * PAD + 12, 140.0), LAYER_HEIGHT)
    top = _labelled((item_of[s], item_of[t], label) for s, t, label in edges if item_of[s] != item_of[t])
    layout = layered_layout(sizes, list(top), gap_y=GAP_Y, margin=PAD)
    items = []
    for key, (x, y) in layout.positions.items():
        w, h = sizes[key]
        if key.startswith("L"):
            layers[int(key[1:])].update(x=_n(x), y=_n(y), w=_n(w), h=_n(h))
            items.append({"layer": int(key[1:])})
        else:
            items.append({"node": int(key[1:]), "x": _n(x), "y": _n(y), "w": _n(w), "h": _n(h)})
    return {"width": _n(layout.width), "height": _n(layout.height), "items": items, "layers": layers,
            "edges": [{"points": [[_n(x), _n(y)] for x, y in route], "label": label}
                      for route, label in zip(layout.routes, top.values()) if route]}


def _labelled(edges) -> dict[tuple[str, str], str]:
    """One edge per (source, target) box pair, labelled with the first tensor's shape."""
    found: dict[tuple[str, str], str] = {}
    for source, target, label in edges:
        found.setdefault((source, target), label)
    return found


def _lay_out_layer(layer: dict, nodes: list[dict], edges: list[tuple[int, int, str]]) -> None:
    sizes = {str(i): _box(nodes[i]) for i in layer["nodes"]}
    inner = _labelled((str(s), str(t), label) for s, t, label in edges)
    layout = layered_layout(sizes, list(inner), gap_y=GAP_Y)
    layer["positions"] = {key: [_n(x), _n(y + PAD), *map(_n, sizes[key])] for key, (x, y) in layout.positions.items()}
    layer["edges"] = [{"points": [[_n(x), _n(y + PAD)] for x, y in route], "label": label}
                      for route, label in zip(layout.routes, inner.values()) if route]
    layer["open_w"] = _n(layout.width + 2 * PAD)
    layer["open_h"] = _n(layout.height + HEADER + 2 * PAD)


def _n(value: float) -> float:
    """Coordinates to a tenth of a pixel: the page gets no smaller drawing from more digits."""
    return round(value, 1)
