"""Compiling a graph once into a Plan: the nodes the fetches need, in dependency order, with
kernels looked up, attrs decoded and each value's last use known.

The same compiler serves a GraphDef's top level (session semantics: only what the fetches and
targets need runs) and a FunctionDef body (non-strict function semantics: what the outputs and
control outputs need, plus every stateful node). Inputs that are fed (placeholders, function
arguments, pre-bound variable handles) stop the walk.

Before planning, the graph is simplified (runtime.inline): calls of library functions are
inlined, identities become aliases, constants become values of the plan; so a call does no
work for them at run time.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from savedmodel.protos import op_def_pb2
from savedmodel.runtime import registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.errors import SavedModelError

Ref = tuple[str, int]
"""A node output: (node name, flat output index)."""

PASS_THROUGH_OPS = frozenset({"Identity", "IdentityN", "StopGradient", "Snapshot", "PreventGradient"})
"""Ops whose outputs are their inputs: the plan reads their inputs instead of running them."""


class GraphError(SavedModelError, ValueError):
    """A graph that cannot be compiled: dangling references, cycles, unfed placeholders."""


@dataclass
class GraphNode:
    """A node with its inputs resolved to (node, flat output index) references, so graphs and
    function bodies (whose input strings differ) are planned alike."""

    name: str
    op: str
    attr: Mapping
    data: list[Ref]
    control: list[str] = field(default_factory=list)
    function: str | None = None
    """The library function this node comes from when it was inlined into a caller."""

    def describe(self, where: str) -> str:
        origin = f"function {self.function!r}, inlined in {where}" if self.function else where
        return f"{self.name!r} in {origin}"


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
    call: Callable[[list, object], tuple] = None
    """`call(values, ctx)`: the kernel applied to its inputs read from the slots, built once so
    the run loop does no argument packing of its own."""

    def __post_init__(self):
        object.__setattr__(self, "call", _caller(self.fn, self.context, self.attrs, self.inputs))


def _caller(fn, context: bool, attrs: dict, inputs) -> Callable[[list, object], tuple]:
    if context:
        return lambda values, ctx: fn(ctx, *[values[s][i] for s, i in inputs], **attrs)
    if len(inputs) == 1:
        ((s0, i0),) = inputs
        return lambda values, ctx: fn(values[s0][i0], **attrs)
    if len(inputs) == 2:
        (s0, i0), (s1, i1) = inputs
        return lambda values, ctx: fn(values[s0][i0], values[s1][i1], **attrs)
    return lambda values, ctx: fn(*[values[s][i] for s, i in inputs], **attrs)


@dataclass(frozen=True)
class Plan:
    where: str
    steps: tuple[Step, ...]
    initial: tuple
    """Starting value of every slot: constants' outputs, None elsewhere."""
    feeds: tuple[tuple[int, int], ...]
    """(slot, output index) of each feed, in the order feeds are given."""
    fetches: tuple[tuple[int, int], ...]
    feed_slots: tuple[int, ...]
    whole_feeds: bool
    """Every feed is output 0 of its own node: the run loop's fast path."""


@dataclass(frozen=True)
class GraphSpec:
    """What to compile: nodes by name, op definitions (defaults, statefulness, refs), and the
    function library (None: calls stay calls)."""

    where: str
    nodes: dict[str, GraphNode]
    op_defs: dict[str, op_def_pb2.OpDef]
    library: object = None
    resources: object = None
    """The model's variables: a VarHandleOp of an existing variable is then a constant."""


def compile_plan(spec: GraphSpec, feeds: Iterable[Ref], fetches: Iterable[Ref],
                 targets: Iterable[str] = (), keep_stateful: bool = False) -> Plan:
    from savedmodel.runtime.inline import simplify

    feeds, fetches, targets = list(feeds), list(fetches), list(targets)
    fed = {name for name, _ in feeds}
    nodes, fetches, targets = simplify(spec, fed, fetches, targets)
    roots = [name for name, _ in fetches] + targets
    if keep_stateful:
        roots += [name for name, node in nodes.items() if is_stateful(spec.op_defs, node)]
    needed = _needed(spec.where, nodes, roots, fed)
    known = {name: value for name in needed if (value := _constant(spec, nodes[name])) is not None}
    constants = list(known)
    order = _ordered(spec.where, nodes, needed - set(known), fed)
    order, nodes, fetches = _without_pass_through(spec, nodes, order, fetches)
    names = list(dict.fromkeys([n for n, _ in feeds])) + constants + order
    slots = {name: i for i, name in enumerate(names)}
    last_use = _last_uses(nodes, order, slots, {slots[name] for name, _ in fetches})
    steps = tuple(_step(spec, nodes, nodes[name], slots, last_use.get(name, ())) for name in order)
    initial = [None] * len(slots)
    for name, value in known.items():
        initial[slots[name]] = (value,)
    feed_slots = tuple(slots[n] for n, _ in feeds)
    whole = all(k == 0 for _, k in feeds) and len(set(feed_slots)) == len(feeds)
    return Plan(spec.where, steps, tuple(initial), tuple((slots[n], k) for n, k in feeds),
                tuple((slots[n], k) for n, k in fetches), feed_slots, whole)


def _without_pass_through(spec: GraphSpec, nodes: dict[str, GraphNode], order: list[str],
                          fetches: list[Ref]) -> tuple[list[str], dict[str, GraphNode], list[Ref]]:
    """Drop NoOps and identities from an ordered plan, rewiring their readers to their inputs.

    Done after ordering, so their control inputs have already placed everything correctly; an
    identity that reads a TensorFlow 1 reference stays, because reading is what it does."""
    sources: dict[str, list[Ref]] = {}

    def resolve(ref: Ref) -> Ref:
        while ref[0] in sources:
            ref = sources[ref[0]][ref[1]]
        return ref

    kept, rewired = [], dict(nodes)
    for name in order:
        node = nodes[name]
        data = [resolve(r) for r in node.data]
        if node.op == "NoOp" and not node.data or (
                node.op in PASS_THROUGH_OPS and not _dereferenced_inputs(spec, nodes, node)):
            sources[name] = data
            continue
        kept.append(name)
        if data != node.data:
            rewired[name] = GraphNode(node.name, node.op, node.attr, data, node.control, node.function)
    return kept, rewired, [resolve(r) for r in fetches]


def is_stateful(op_defs: dict, node: GraphNode) -> bool:
    op_def = op_defs.get(node.op)
    if op_def is not None:
        return op_def.is_stateful
    return registry.is_supported(node.op) and registry.lookup(node.op).stateful


def _needed(where: str, nodes: dict[str, GraphNode], roots: list[str], fed: set[str]) -> set[str]:
    needed: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in needed or name in fed:
            continue
        node = nodes.get(name)
        if node is None:
            raise GraphError(f"{where}: reference to unknown node {name!r}")
        if node.op == "Placeholder":
            raise GraphError(f"{where}: placeholder {name!r} is needed but not fed")
        needed.add(name)
        stack.extend(n for n, _ in node.data)
        stack.extend(node.control)
    return needed


def _ordered(where: str, nodes: dict[str, GraphNode], needed: set[str], fed: set[str]) -> list[str]:
    """Needed nodes in dependency order; ties keep the graph's own order."""
    position = {name: i for i, name in enumerate(nodes)}
    waiting: dict[str, int] = {}
    consumers: dict[str, list[str]] = {name: [] for name in needed}
    for name in needed:
        node = nodes[name]
        producers = {n for n, _ in node.data} | set(node.control)
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
        raise GraphError(f"{where}: the graph has a cycle through {stuck}; TensorFlow 1 "
                         "control flow (Switch/Merge/NextIteration) is not supported")
    return order


def _last_uses(nodes: dict[str, GraphNode], order: list[str], slots: dict[str, int],
               keep: set[int]) -> dict[str, tuple[int, ...]]:
    """For each node, the slots whose last reader it is (never the fetched ones)."""
    last_reader: dict[int, str] = {}
    for name in order:
        for producer, _ in nodes[name].data:
            last_reader[slots[producer]] = name
    frees: dict[str, list[int]] = {}
    for slot, reader in last_reader.items():
        if slot not in keep:
            frees.setdefault(reader, []).append(slot)
    return {name: tuple(sorted(s)) for name, s in frees.items()}


def _kernel(spec: GraphSpec, node: GraphNode) -> registry.Kernel:
    found = spec.library.function_kernel(node.op) if spec.library is not None else None
    return found or registry.lookup(node.op, node.describe(spec.where))


def _step(spec: GraphSpec, nodes: dict[str, GraphNode], node: GraphNode, slots: dict[str, int],
          frees: tuple[int, ...]) -> Step:
    kernel = _kernel(spec, node)
    attrs = _attrs(spec, node)
    if kernel.named:
        attrs["node_name"] = node.name
    fn = kernel.fn
    derefs = _dereferenced_inputs(spec, nodes, node)
    if derefs:
        fn = _reading_refs(fn, tuple(p + kernel.context for p in derefs))
    label = node.name if node.function is None else f"{node.name} (from function {node.function!r})"
    return Step(label, node.op, fn, kernel.context, attrs, slots[node.name],
                tuple((slots[n], k) for n, k in node.data), frees)


def _attrs(spec: GraphSpec, node: GraphNode) -> dict:
    where = f"{spec.where}: node {node.name!r} (op {node.op})"
    return decode_attrs(_with_defaults(node, spec.op_defs.get(node.op)), where)


def _constant(spec: GraphSpec, node: GraphNode):
    """The value a node always produces, known when compiling: a Const's tensor, or the
    variable a VarHandleOp names when that variable already exists (handles never change)."""
    if node.op == "Const":
        value = _attrs(spec, node).get("value")
        if value is None:
            raise GraphError(f"{spec.where}: Const node {node.name!r} has no value")
        return value
    if node.op == "VarHandleOp" and spec.resources is not None:
        attrs = _attrs(spec, node)
        return spec.resources.existing(attrs.get("container") or "", attrs.get("shared_name") or "")
    return None


def _with_defaults(node: GraphNode, op_def):
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


def arg_length(arg: op_def_pb2.OpDef.ArgDef, attr: Mapping) -> int:
    """How many tensors an op argument stands for in a node with these attrs."""
    if arg.number_attr:
        return attr[arg.number_attr].i
    if arg.type_list_attr:
        return len(attr[arg.type_list_attr].list.type)
    return 1


def _ref_flags(args, attr: Mapping) -> list[bool]:
    """Whether each flat input or output is a reference; nodes the planner made itself (the
    IdentityN standing for an inlined call) carry no attrs and take no references."""
    if not any(arg.is_ref for arg in args):
        return []
    return [flag for arg in args for flag in [arg.is_ref] * arg_length(arg, attr)]


def _dereferenced_inputs(spec: GraphSpec, nodes: dict[str, GraphNode], node: GraphNode) -> list[int]:
    """Positions of inputs where a TensorFlow 1 reference (a ref variable) meets an argument
    that takes a value: TensorFlow reads the variable there."""
    consumer = spec.op_defs.get(node.op)
    takes_ref = _ref_flags(consumer.input_arg, node.attr) if consumer else []
    positions = []
    for position, (producer_name, index) in enumerate(node.data):
        producer = nodes.get(producer_name)
        producer_def = spec.op_defs.get(producer.op) if producer is not None else None
        if producer_def is None or not any(a.is_ref for a in producer_def.output_arg):
            continue
        gives_ref = _ref_flags(producer_def.output_arg, producer.attr)
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
