"""Keras layers of a model's nodes: name scopes, followed through function calls.

Inside a function body, a node named `model/layer/op...` belongs to the layer `model/layer`
when every scoped name of that body is inside `model` (the Keras model's scope; in a frozen
graph `StatefulPartitionedCall/model`) and some node is nested two levels below it; otherwise
to its first scope component (`dense/MatMul` -> `dense`). Nodes of a function called from a
layer belong to that layer; unscoped nodes (`Identity`, `NoOp`), names made by TensorFlow's
function inliner (`Func/...`) and layers made only of variable handles to none. A layer's
name is the Keras layer owning the variables it reads (`sequential/conv2d/kernel` ->
`conv2d`), else its last scope component, less the `_N` suffix TensorFlow added to every
scope of the same body whose name is known. Layers come in the order data reaches them.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from savedmodel.model_structure import SEPARATOR, Layer, Node, Variable

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "Case",
                      "StatelessCase", "While", "StatelessWhile"})


def group_layers(nodes: dict[str, Node], variables: dict[str, Variable], callers: dict[str, str],
                 calls: Callable[[Node], bool], returned: list[tuple[str, int]]) -> dict[str, Layer]:
    """Assign every node to a layer, replacing it in `nodes`, and describe the layers.
    `callers` maps the path prefix of each walked function body to its call node's path;
    `calls` tells whether a node calls a function (its reads are its callee's)."""
    roots = _scope_roots(nodes.values())
    layers: dict[str, Layer] = {}
    for path, node in list(nodes.items()):
        prefix = path[:len(path) - len(node.name)]
        key = _layer_key(node, prefix, roots.get(prefix), nodes, callers)
        if key is None:
            continue
        nodes[path] = node = replace(node, layer=key)
        layer = layers.get(key)
        if layer is None:
            layer = layers[key] = Layer(key, "", key[len(_call_prefix(key)):])
        layer.nodes.append(path)
        if node.op not in CALL_OPS and not calls(node):
            layer.variables += [v for v in node.variables if v not in layer.variables]
    for key in [k for k, layer in layers.items() if all(
            nodes[p].op in VARIABLE_OPS for p in layer.nodes)]:
        for path in layers.pop(key).nodes:
            nodes[path] = replace(nodes[path], layer=None)
    _name_layers(layers, variables)
    _layer_outputs(nodes, layers, returned)
    return _in_data_order(nodes, layers)


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


def _layer_key(node: Node, prefix: str, root: str | None, nodes: dict[str, Node],
               callers: dict[str, str]) -> str | None:
    caller = callers.get(prefix)
    if caller is not None and nodes[caller].layer is not None:
        return nodes[caller].layer
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
            if producer.op in CALL_OPS or ref[1] >= len(producer.outputs):
                continue
            outputs = layers[producer.layer].outputs
            if ref not in outputs and producer.outputs[ref[1]].dtype != "resource":
                outputs.append(ref)
    for ref in returned:
        producer = nodes.get(ref[0])
        if producer is not None and producer.layer is not None and ref not in layers[producer.layer].outputs:
            layers[producer.layer].outputs.append(ref)
