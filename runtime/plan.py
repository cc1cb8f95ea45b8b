"""Compiling a graph once into a Plan: the nodes the fetches need, in dependency order, with
kernels looked up, attrs decoded and each value's last use known.

The same compiler serves a GraphDef's top level (session semantics: only what the fetches and
targets need runs) and a FunctionDef body (non-strict function semantics: what the outputs and
control outputs need, plus every stateful node). Inputs that are fed (placeholders, function
arguments, pre-bound variable handles) stop the walk.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from savedmodel.protos import node_def_pb2, op_def_pb2
from savedmodel.runtime import registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.errors import SavedModelError

Ref = tuple[str, int]
"""A node output: (node name, flat output index)."""


class GraphError(SavedModelError, ValueError):
    """A graph that cannot be compiled: dangling references, cycles, unfed placeholders."""


@dataclass(frozen=True)
class Step:
    name: str
    op: str
    fn: Callable[..., tuple]
    context: bool
    attrs: dict
    slot: int
    inputs: tuple[tuple[int, int], ...]
    frees: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    where: str
    steps: tuple[Step, ...]
    num_slots: int
    feeds: tuple[tuple[int, int], ...]
    """(slot, output index) of each feed, in the order feeds are given."""
    fetches: tuple[tuple[int, int], ...]
    feed_slots: tuple[int, ...]
    whole_feeds: bool
    """Every feed is output 0 of its own node: the run loop's fast path."""


@dataclass(frozen=True)
class GraphSpec:
    """What to compile: nodes by name, how to resolve an input string, which ops are stateful,
    which ops call library functions, and op definitions for default attrs."""

    where: str
    nodes: dict[str, node_def_pb2.NodeDef]
    resolve: Callable[[str], Ref]
    op_defs: dict[str, op_def_pb2.OpDef]
    function_kernel: Callable[[str], registry.Kernel | None]


def compile_plan(spec: GraphSpec, feeds: Iterable[Ref], fetches: Iterable[Ref],
                 targets: Iterable[str] = (), keep_stateful: bool = False) -> Plan:
    feeds, fetches, targets = list(feeds), list(fetches), list(targets)
    fed = {name for name, _ in feeds}
    roots = [name for name, _ in fetches] + targets
    if keep_stateful:
        roots += [name for name, node in spec.nodes.items() if _is_stateful(spec, node)]
    order = _ordered(spec, _needed(spec, roots, fed), fed)
    slots = {name: i for i, name in enumerate(list(dict.fromkeys([n for n, _ in feeds])) + order)}
    last_use = _last_uses(spec, order, slots, {slots[name] for name, _ in fetches})
    steps = tuple(_step(spec, name, slots, last_use.get(name, ())) for name in order)
    feed_slots = tuple(slots[n] for n, _ in feeds)
    whole = all(k == 0 for _, k in feeds) and len(set(feed_slots)) == len(feeds)
    return Plan(spec.where, steps, len(slots), tuple((slots[n], k) for n, k in feeds),
                tuple((slots[n], k) for n, k in fetches), feed_slots, whole)


def _is_stateful(spec: GraphSpec, node) -> bool:
    op_def = spec.op_defs.get(node.op)
    if op_def is not None:
        return op_def.is_stateful
    return registry.is_supported(node.op) and registry.lookup(node.op).stateful


def _inputs(spec: GraphSpec, node) -> tuple[list[Ref], list[str]]:
    data, control = [], []
    for text in node.input:
        if text.startswith("^"):
            control.append(text[1:])
        else:
            data.append(spec.resolve(text))
    return data, control


def _needed(spec: GraphSpec, roots: list[str], fed: set[str]) -> set[str]:
    needed: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in needed or name in fed:
            continue
        node = spec.nodes.get(name)
        if node is None:
            raise GraphError(f"{spec.where}: reference to unknown node {name!r}")
        if node.op == "Placeholder":
            raise GraphError(f"{spec.where}: placeholder {name!r} is needed but not fed")
        needed.add(name)
        data, control = _inputs(spec, node)
        stack.extend(n for n, _ in data)
        stack.extend(control)
    return needed


def _ordered(spec: GraphSpec, needed: set[str], fed: set[str]) -> list[str]:
    """Needed nodes in dependency order; ties keep the graph's own order."""
    position = {name: i for i, name in enumerate(spec.nodes)}
    waiting: dict[str, int] = {}
    consumers: dict[str, list[str]] = {name: [] for name in needed}
    for name in needed:
        data, control = _inputs(spec, spec.nodes[name])
        producers = {n for n, _ in data} | set(control)
        producers = {p for p in producers if p in needed and p not in fed}
        waiting[name] = len(producers)
        for producer in producers:
            consumers[producer].append(name)
    ready = sorted((n for n, count in waiting.items() if count == 0), key=position.__getitem__)
    order = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for consumer in consumers[name]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                ready.append(consumer)
        ready.sort(key=position.__getitem__)
    if len(order) != len(needed):
        stuck = sorted(set(needed) - set(order), key=position.__getitem__)[:5]
        raise GraphError(f"{spec.where}: the graph has a cycle through {stuck}; TensorFlow 1 "
                         "control flow (Switch/Merge/NextIteration) is not supported")
    return order


def _last_uses(spec: GraphSpec, order: list[str], slots: dict[str, int],
               keep: set[int]) -> dict[str, tuple[int, ...]]:
    """For each node, the slots whose last reader it is (never the fetched ones)."""
    last_reader: dict[int, str] = {}
    for name in order:
        data, _ = _inputs(spec, spec.nodes[name])
        for producer, _ in data:
            last_reader[slots[producer]] = name
    frees: dict[str, list[int]] = {}
    for slot, reader in last_reader.items():
        if slot not in keep:
            frees.setdefault(reader, []).append(slot)
    return {name: tuple(sorted(s)) for name, s in frees.items()}


def _step(spec: GraphSpec, name: str, slots: dict[str, int], frees: tuple[int, ...]) -> Step:
    node = spec.nodes[name]
    where = f"{spec.where}: node {name!r} (op {node.op})"
    kernel = spec.function_kernel(node.op) or registry.lookup(node.op, f"{name!r} in {spec.where}")
    attrs = decode_attrs(_with_defaults(node, spec.op_defs.get(node.op)), where)
    if kernel.named:
        attrs["node_name"] = name
    data, _ = _inputs(spec, node)
    fn = kernel.fn
    derefs = _dereferenced_inputs(spec, node, data)
    if derefs:
        fn = _reading_refs(fn, tuple(p + kernel.context for p in derefs))
    return Step(name, node.op, fn, kernel.context, attrs, slots[name],
                tuple((slots[n], k) for n, k in data), frees)


def arg_length(arg: op_def_pb2.OpDef.ArgDef, node) -> int:
    """How many tensors an op argument stands for in this node."""
    if arg.number_attr:
        return node.attr[arg.number_attr].i
    if arg.type_list_attr:
        return len(node.attr[arg.type_list_attr].list.type)
    return 1


def _ref_flags(args, node) -> list[bool]:
    return [flag for arg in args for flag in [arg.is_ref] * arg_length(arg, node)]


def _dereferenced_inputs(spec: GraphSpec, node, data: list[Ref]) -> list[int]:
    """Positions of inputs where a TensorFlow 1 reference (a ref variable) meets an argument
    that takes a value: TensorFlow reads the variable there."""
    consumer = spec.op_defs.get(node.op)
    takes_ref = _ref_flags(consumer.input_arg, node) if consumer else []
    positions = []
    for position, (producer_name, index) in enumerate(data):
        producer = spec.nodes.get(producer_name)
        producer_def = spec.op_defs.get(producer.op) if producer is not None else None
        if producer_def is None or not any(a.is_ref for a in producer_def.output_arg):
            continue
        gives_ref = _ref_flags(producer_def.output_arg, producer)
        if index < len(gives_ref) and gives_ref[index] and not (
                position < len(takes_ref) and takes_ref[position]):
            positions.append(position)
    return positions


def _reading_refs(fn: Callable[..., tuple], positions: tuple[int, ...]) -> Callable[..., tuple]:
    def call(*args, **attrs):
        args = list(args)
        for position in positions:
            args[position] = args[position].read()
        return fn(*args, **attrs)
    return call


def _with_defaults(node, op_def):
    """The node's attrs, with the op's defaults for attrs it omits or leaves empty (TensorFlow
    strips default-valued attrs when saving, and writes an empty value for an empty string)."""
    if op_def is None:
        return node.attr
    merged = dict(node.attr)
    for attr in op_def.attr:
        present = attr.name in merged and merged[attr.name].WhichOneof("value") is not None
        if not present and attr.HasField("default_value"):
            merged[attr.name] = attr.default_value
    return merged
