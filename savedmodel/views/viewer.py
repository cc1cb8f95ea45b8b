"""The interactive viewer's document: a model's nodes grouped into layers, laid out, with the
shapes, attrs and weight statistics its side panel shows. `viewer_page` embeds it in one HTML
file with the script (viewer.js) that draws it.

What is drawn: every node of the signature with calls inlined (`flat_graph`), except the
plumbing that would bury the model's ops: constants, variable handles and reads, and `NoOp`s.
A node's constant and weight inputs are listed in its side panel instead, weights under their
variable's name with min/max/mean/std. Nodes are grouped into layers by name scope; the page
starts with every layer collapsed into one box, so a large model draws as a short chain of
boxes, and each layer's inside is laid out separately so opening it needs no new layout.

Document (JSON)::

    {"title": str, "signature": str, "width": float, "height": float,
     "nodes": [{"name", "path", "op", "label", "kind": "op"|"input"|"output", "layer": int|null,
                "attrs": [[key, text]],
                "inputs": [{"source": str, "dtype": str, "shape": str|null}],
                "outputs": [{"dtype": str, "shape": str|null}], "variables": [int]}],
     "layers": [{"name", "type", "params": int, "nodes": [int], "x", "y", "w", "h",
                 "open_w", "open_h", "positions": {node: [x, y, w, h]}, "edges": [edge]}],
     "items": [{"layer": int} | {"node": int, "x", "y", "w", "h"}],   top-level boxes
     "edges": [edge], "variables": [{"name", "dtype", "shape", "stats"?, "error"?}]}
    edge = {"points": [[x, y]], "label": str}   label: the tensor's shape, `?` where unknown
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from savedmodel.protos import meta_graph_pb2
from savedmodel.views.flat_graph import SEPARATOR, FlatGraph, FlatNode, flatten
from savedmodel.views.jsonview import attr_json
from savedmodel.views.layout import layered_layout
from savedmodel.views.select import Selection
from savedmodel.views.svg import elide
from savedmodel.views.text import value_text
from savedmodel.views.values import Shape
from savedmodel.views.weights import WeightInfo, model_weights

HIDDEN_OPS = frozenset({"Const", "VarHandleOp", "ReadVariableOp", "NoOp"})
RESHAPING_OPS = frozenset({"Reshape", "Squeeze", "ExpandDims", "Identity", "Cast", "Transpose"})
"""Ops that only reshape a weight: a layer is named for what it then does with it."""
CHAR = 0.61
NODE_HEIGHT, LAYER_HEIGHT = 34.0, 40.0
HEADER, PAD = 22.0, 10.0
MAX_LABEL = 30
GAP_Y = 48.0
"""Rows are far enough apart for an edge's shape label."""


@dataclass
class _Item:
    """A node as drawn: index into the document's nodes, its layer, its drawn producers."""

    index: int
    flat: FlatNode | None
    layer: str | None


def build_document(selection: Selection, meta_graph: meta_graph_pb2.MetaGraphDef,
                   export_dir: Path | None, title: str) -> dict:
    """The viewer document of a selection (a signature, usually) of `meta_graph`."""
    graph = flatten(selection)
    weights = model_weights(export_dir, meta_graph)
    return _Builder(graph, weights, selection.body.name, title).document()


class _Builder:
    def __init__(self, graph: FlatGraph, weights: dict[str, WeightInfo], signature: str, title: str):
        self.graph = graph
        self.weights = weights
        self.signature = signature
        self.title = title
        self.variables: list[WeightInfo] = []
        self.variable_index: dict[str, int] = {}
        self.nodes: list[dict] = []
        self.index: dict[str, int] = {}
        self.scope_root = _dominant_root(graph)

    def document(self) -> dict:
        visible = [n for n in self.graph.nodes.values() if n.op not in HIDDEN_OPS]
        for flat in visible:
            self.index[flat.path] = len(self.nodes)
            self.nodes.append(self._node(flat))
        outputs = []
        for key, source in self.graph.outputs:
            outputs.append((len(self.nodes), source))
            self.nodes.append({"name": key, "path": key, "op": "output", "label": key, "kind": "output", "layer": None,
                               "attrs": [], "inputs": [self._input(source)],
                               "outputs": [], "variables": []})
        edges = self._edges(visible, outputs)
        layers = self._layers()
        document = {"title": self.title, "signature": self.signature, "nodes": self.nodes}
        document.update(_lay_out(self.nodes, layers, edges))
        document["variables"] = [_variable(v) for v in self.variables]
        return document

    def _node(self, flat: FlatNode) -> dict:
        variables = [self._variable(h) for h in self._handles(flat)]
        kind = "input" if flat.op == "Placeholder" else "op"
        label = flat.name.rsplit("/", 1)[-1]
        return {"name": flat.name, "path": flat.path.replace(SEPARATOR, "/"), "op": flat.op,
                "label": "" if label == flat.op else elide(label, MAX_LABEL), "kind": kind,
                "layer": self._scope(flat),
                "attrs": [[k, _attr_text(flat.node.attr[k])] for k in sorted(flat.node.attr) if not k.startswith("_")],
                "inputs": [self._input(source) for source in flat.inputs],
                "outputs": [_tensor(dtype, shape) for dtype, shape in flat.outputs],
                "variables": variables}

    def _input(self, source: tuple[str, int]) -> dict:
        """An input as the panel lists it: its variable's name when it reads one, else the
        producer (`name:index` past the first output)."""
        path, index = source
        producer = self.graph.nodes.get(path)
        handle = self._handle_of(producer)
        if handle is not None and handle in self.weights:
            info = self.weights[handle]
            return {"source": info.name, **_tensor(info.dtype, info.shape)}
        name = (producer.name if producer is not None else path) + (f":{index}" if index else "")
        if producer is None or index >= len(producer.outputs):
            return {"source": name, "dtype": "?", "shape": None}
        return {"source": name, **_tensor(*producer.outputs[index])}

    def _handle_of(self, producer: FlatNode | None) -> str | None:
        """The VarHandleOp a producer is, or reads through ReadVariableOp."""
        if producer is None:
            return None
        if producer.op == "ReadVariableOp" and producer.inputs:
            producer = self.graph.nodes.get(producer.inputs[0][0])
        return producer.path if producer is not None and producer.op == "VarHandleOp" else None

    def _handles(self, flat: FlatNode) -> list[str]:
        found = [self._handle_of(self.graph.nodes.get(path)) for path, _ in flat.inputs]
        return list(dict.fromkeys(h for h in found if h is not None and h in self.weights))

    def _variable(self, handle: str) -> int:
        if handle not in self.variable_index:
            self.variable_index[handle] = len(self.variables)
            self.variables.append(self.weights[handle])
        return self.variable_index[handle]

    def _scope(self, flat: FlatNode) -> str | None:
        """The layer a node belongs to: its name scope below the model's own (Keras names ops
        `model/layer/op`), or its first scope when the graph has no common root."""
        parts = flat.name.split("/")
        depth = 2 if self.scope_root is not None and parts[0] == self.scope_root else 1
        if len(parts) <= depth or flat.op == "Placeholder":
            return None
        return "/".join(parts[:depth])

    def _edges(self, visible: list[FlatNode], outputs: list[tuple[int, tuple[str, int]]]) -> list[tuple[int, int, str]]:
        edges = []
        for flat in visible:
            for path, index in flat.inputs:
                if path in self.index:
                    edges.append((self.index[path], self.index[flat.path], self._label(path, index)))
        for target, (path, index) in outputs:
            if path in self.index:
                edges.append((self.index[path], target, self._label(path, index)))
        return edges

    def _label(self, path: str, index: int) -> str:
        outputs = self.graph.nodes[path].outputs
        return _shape_label(outputs[index][1]) if index < len(outputs) else "?"

    def _layers(self) -> list[dict]:
        """Layers in order of first appearance, each named after its variables' scope when it
        reads any (`dense_2` for `sequential_1_1/dense_2_1`), else its own scope."""
        scopes: dict[str, list[int]] = {}
        for i, node in enumerate(self.nodes):
            if node["layer"] is not None:
                scopes.setdefault(node["layer"], []).append(i)
        layers = []
        for scope, members in scopes.items():
            variables = sorted({v for i in members for v in self.nodes[i]["variables"]})
            for i in members:
                self.nodes[i]["layer"] = len(layers)
            layers.append({"name": _layer_name(scope, [self.variables[v] for v in variables]),
                           "type": _layer_type([self.nodes[i] for i in members], self.variables),
                           "params": sum(_size(self.variables[v].shape) for v in variables),
                           "nodes": members})
        return layers


def _dominant_root(graph: FlatGraph) -> str | None:
    """The first name scope most scoped nodes share (a Keras model's own name), if any."""
    roots = Counter(n.name.split("/")[0] for n in graph.nodes.values() if "/" in n.name and n.op not in HIDDEN_OPS)
    if not roots:
        return None
    root, count = roots.most_common(1)[0]
    return root if count * 2 > sum(roots.values()) else None


def _layer_name(scope: str, variables: list[WeightInfo]) -> str:
    """The name of the layer whose variables a scope reads: Keras 3 calls layer `conv2d_1`
    under the scope `conv2d_1_2`, so the longest scope part of a variable's name that the
    scope's last part equals or extends with `_N` wins; the scope's last part otherwise."""
    own = scope.rsplit("/", 1)[-1]
    parts = {p for v in variables for p in v.name.split("/")[:-1]}
    matches = [p for p in parts if own == p or (own.startswith(p + "_") and own[len(p) + 1:].replace("_", "").isdigit())]
    return max(matches, key=len) if matches else own


def _layer_type(nodes: list[dict], variables: list[WeightInfo]) -> str:
    """The op that says what a layer does: the one that reads the layer's largest weight
    (the kernel, not the bias) other than by reshaping it, else the commonest op."""
    reading = [(n["op"] not in RESHAPING_OPS, max(_size(variables[v].shape) for v in n["variables"]), -i, n["op"])
               for i, n in enumerate(nodes) if n["variables"]]
    if reading:
        return max(reading)[3]
    return Counter(n["op"] for n in nodes).most_common(1)[0][0]


def _size(shape: Shape | None) -> int:
    if shape is None or any(d is None for d in shape):
        return 0
    total = 1
    for d in shape:
        total *= d
    return total


def _shape_label(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "\u00d7".join("?" if d is None else str(d) for d in shape) if shape else "scalar"


def _tensor(dtype: str, shape: Shape | None) -> dict:
    return {"dtype": dtype, "shape": None if shape is None else _shape_text(shape)}


def _shape_text(shape: Shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _attr_text(value) -> str:
    if value.WhichOneof("value") == "tensor":
        tensor = attr_json(value)["tensor"]
        return f"{tensor['dtype']}{tensor['shape']} {tensor['values']}{'...' if tensor['truncated'] else ''}"
    return value_text(value)


def _variable(info: WeightInfo) -> dict:
    found = {"name": info.name, "dtype": info.dtype, "shape": _shape_text(info.shape) if info.shape is not None else "?"}
    if info.stats is not None:
        found["stats"] = {k: f"{v:.6g}" if isinstance(v, float) else v for k, v in info.stats.items()}
    if info.error is not None:
        found["error"] = info.error
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
    top_edges, labels = [], []
    for s, t, label in edges:
        pair = (item_of[s], item_of[t])
        if pair[0] != pair[1] and pair not in top_edges:
            top_edges.append(pair)
            labels.append(label)
    layout = layered_layout(sizes, top_edges, gap_y=GAP_Y, margin=PAD)
    items = []
    for key, (x, y) in layout.positions.items():
        w, h = sizes[key]
        if key.startswith("L"):
            layers[int(key[1:])].update(x=x, y=y, w=w, h=h)
            items.append({"layer": int(key[1:])})
        else:
            items.append({"node": int(key[1:]), "x": x, "y": y, "w": w, "h": h})
    return {"width": layout.width, "height": layout.height, "items": items, "layers": layers,
            "edges": [{"points": [list(p) for p in route], "label": label}
                      for route, label in zip(layout.routes, labels) if route]}


def _lay_out_layer(layer: dict, nodes: list[dict], edges: list[tuple[int, int, str]]) -> None:
    sizes = {str(i): _box(nodes[i]) for i in layer["nodes"]}
    pairs, labels = [], []
    for s, t, label in edges:
        if (str(s), str(t)) not in pairs:
            pairs.append((str(s), str(t)))
            labels.append(label)
    layout = layered_layout(sizes, pairs, gap_y=GAP_Y)
    layer["positions"] = {key: [x, y + PAD, *sizes[key]] for key, (x, y) in layout.positions.items()}
    layer["edges"] = [{"points": [[x, y + PAD] for x, y in route], "label": label}
                      for route, label in zip(layout.routes, labels) if route]
    layer["open_w"] = layout.width + 2 * PAD
    layer["open_h"] = layout.height + HEADER + 2 * PAD
