"""Simplifying a graph before it is planned, so that running it does less.

- Calls of library functions (`PartitionedCall`, `StatefulPartitionedCall`, a function's name
  used as an op) are replaced by the callee's body, its nodes renamed under the call node's
  name; the call node becomes an `IdentityN` of the callee's results that also waits for the
  callee's control outputs and stateful nodes. The caller's control inputs gate every inlined
  node. Recursive functions stay calls. Nesting deeper than `Limits.max_function_depth` is an
  error naming the chain of calls.
- `Identity`-like nodes without control inputs become aliases: their consumers read the
  producer directly.
Control-flow bodies (If, While, Case branches) are not inlined here: they run as functions,
whose own plans are simplified in turn.
"""
from __future__ import annotations

from savedmodel.runtime.plan import (PASS_THROUGH_OPS, GraphError, GraphNode, GraphSpec, Ref, is_stateful,
                                     nesting_error)

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})


def simplify(spec: GraphSpec, fed: set[str], fetches: list[Ref], targets: list[str]):
    """(nodes, fetches, targets) of the simplified graph."""
    nodes = spec.nodes if spec.library is None else _inline(spec, spec.nodes, ())
    aliases = _aliases(nodes, fed)
    resolved = {name: _rewired(node, aliases, nodes) for name, node in nodes.items() if name not in aliases}
    fetches = [_resolve(ref, aliases) for ref in fetches]
    targets = [t for target in targets for t in _control_targets(target, aliases, nodes)]
    return resolved, fetches, targets


def callee(node: GraphNode, library) -> str | None:
    """The library function a node calls directly, if it is such a call."""
    if node.op in CALL_OPS:
        return node.attr["f"].func.name
    return node.op if node.op in library.functions else None


def _inline(spec: GraphSpec, nodes: dict[str, GraphNode], stack: tuple[str, ...]) -> dict[str, GraphNode]:
    out: dict[str, GraphNode] = {}
    for name, node in nodes.items():
        function = callee(node, spec.library)
        if function is None or function in stack or function not in spec.library.functions:
            out[name] = node
            continue
        out.update(_inlined_call(spec, node, function, stack))
    return out


def _inlined_call(spec: GraphSpec, call: GraphNode, function: str, stack: tuple[str, ...]) -> dict:
    if len(stack) >= spec.limits.max_function_depth:
        raise nesting_error(spec.where, stack + (function,), spec.limits)
    body = spec.library.body(function)
    if len(call.data) != len(body.args):
        raise GraphError(f"{spec.where}: node {call.name!r} passes {len(call.data)} inputs to "
                         f"function {function!r}, which takes {len(body.args)}")
    inner = _inline(spec, body.nodes, stack + (function,))
    prefix = call.name + "/"
    out = {}
    for arg, source in zip(body.args, call.data):
        out[prefix + arg] = GraphNode(prefix + arg, "Identity", {}, [source], list(call.control))
    for node in inner.values():
        out[prefix + node.name] = GraphNode(
            prefix + node.name, node.op, node.attr, [(prefix + n, k) for n, k in node.data],
            [prefix + c for c in node.control] + list(call.control), node.function or function)
    effects = list(body.control_rets) + [n.name for n in inner.values() if is_stateful(spec.op_defs, n)]
    out[call.name] = GraphNode(call.name, "IdentityN", {}, [(prefix + n, k) for n, k in body.rets],
                               [prefix + c for c in dict.fromkeys(effects)])
    return out


def _aliases(nodes: dict[str, GraphNode], fed: set[str]) -> dict[str, list[Ref]]:
    """Nodes that only pass their inputs on, with the inputs they pass."""
    return {name: node.data for name, node in nodes.items()
            if node.op in PASS_THROUGH_OPS and not node.control and name not in fed
            and (node.op == "IdentityN" or len(node.data) == 1)}


def _resolve(ref: Ref, aliases: dict[str, list[Ref]]) -> Ref:
    seen = set()
    while ref[0] in aliases:
        if ref[0] in seen:
            raise GraphError(f"identity nodes form a cycle through {ref[0]!r}")
        seen.add(ref[0])
        sources = aliases[ref[0]]
        if ref[1] >= len(sources):
            raise GraphError(f"reference to output {ref[1]} of {ref[0]!r}, which has {len(sources)}")
        ref = sources[ref[1]]
    return ref


def _control_targets(name: str, aliases: dict[str, list[Ref]], nodes) -> list[str]:
    """What waiting for `name` means once aliases are gone: waiting for what it passes on."""
    if name not in aliases:
        return [name]
    return list(dict.fromkeys(_resolve(ref, aliases)[0] for ref in aliases[name]))


def _rewired(node: GraphNode, aliases: dict[str, list[Ref]], nodes) -> GraphNode:
    if not any(n in aliases for n, _ in node.data) and not any(c in aliases for c in node.control):
        return node
    control = [t for c in node.control for t in _control_targets(c, aliases, nodes)]
    return GraphNode(node.name, node.op, node.attr, [_resolve(ref, aliases) for ref in node.data],
                     list(dict.fromkeys(control)), node.function)
