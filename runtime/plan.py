"""Compiling a graph once into a Plan: the nodes the fetches need, in dependency order, with
kernels looked up, attrs decoded and each value's last use known.

The same compiler serves a GraphDef's top level (session semantics: only what the fetches and
targets need runs) and a FunctionDef body (non-strict function semantics: what the outputs and
control outputs need, plus every stateful node). Inputs that are fed (placeholders, function
arguments, pre-bound variable handles) stop the walk.

Before planning, the graph is simplified (runtime.inline): calls of library functions are
inlined, identities become aliases, constants become values of the plan; so a call does no
work for them at run time. Stateless nodes whose inputs are all constants are computed once,
when compiling (constant folding), and become values of the plan too. Each step calls its
kernel's fast path for the node's attrs where the kernel has one (registry.fast_path), and
passes only the attrs the kernel names. While bodies are split once more (`LoopBody`), so that
what every iteration would compute alike is computed once per loop.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from savedmodel.protos import op_def_pb2
from savedmodel.runtime import registry
from savedmodel.runtime.attrs import decode_attrs
from savedmodel.runtime.errors import GraphError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.straight_line import Layout, PlanFunction, compile_plan_function

Ref = tuple[str, int]
"""A node output: (node name, flat output index)."""

FRAME_OPS = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit",
                       "RefExit", "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"})
"""TensorFlow 1 control flow: a graph that needs one of these runs in runtime.frames."""

PASS_THROUGH_OPS = frozenset({"Identity", "IdentityN", "StopGradient", "Snapshot", "PreventGradient"})
"""Ops whose outputs are their inputs: the plan reads their inputs instead of running them."""


class NestingError(GraphError):
    """Function calls nested past `Limits.max_function_depth`. Its message names the whole
    chain of calls, so the executor passes it on as it is instead of prefixing every level's
    call node (64 of them)."""


def too_deep_for_python(where: str) -> NestingError:
    """Calls inline and run as nested Python calls: a `max_function_depth` raised beyond what
    Python's stack holds ends in a RecursionError, reported as this instead of a traceback."""
    return NestingError(f"{where}: function calls nest deeper than Python's stack allows; "
                        "lower the limit max_function_depth")


def nesting_error(where: str, chain: tuple[str, ...], limits: Limits) -> NestingError:
    shown = chain if len(chain) <= 8 else (*chain[:3], "...", *chain[-3:])
    return NestingError(f"{where}: function calls nest more than "
                        f"{limits.exceeded('max_function_depth')} deep ({' -> '.join(shown)}); "
                        "does a function call itself?")


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
    """The attrs `fn` takes by name (kernels swallow the rest with `**_`, so those are not
    passed at all)."""
    slot: int
    inputs: tuple[tuple[int, int], ...]
    frees: tuple[int, ...]
    fast: Callable[..., tuple] | None = None
    """The kernel's fast path for this node's attrs (see registry.fast_path), called with the
    inputs alone, or None."""
    stateful: bool = False
    """The op has side effects or reads state (see `is_stateful`): never hoisted out of loops."""


@functools.lru_cache(maxsize=1024)
def _named_parameters(fn: Callable) -> frozenset[str] | None:
    """The names `fn` takes as keywords when it ignores all others (`**_`, the kernels'
    convention); None when it may use any (`**attrs`) or takes no `**` at all (then every attr
    is passed, and an unexpected one fails as it always did)."""
    parameters = inspect.signature(fn).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD and p.name == "_" for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def _taken_attrs(fn: Callable, attrs: dict) -> dict:
    """The attrs `fn` names: the ones a `**_` would swallow cost a dict per call for nothing."""
    names = _named_parameters(fn)
    return attrs if names is None else {k: v for k, v in attrs.items() if k in names}


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
    """Every feed is output 0 of its own node (so the feeds are slots 0..n-1, in order): the
    run loop's fast path."""
    takes_rest: bool = False
    """The slots after the feeds start from the values a loop body's invariant part left (see
    LoopBody) instead of `initial`."""
    returns_slots: bool = False
    """The plan returns every slot after the feeds (a loop body's invariant part) instead of
    the fetches."""
    straight_line: PlanFunction = None
    """`straight_line(feeds, ctx, rest)`: the plan as one generated function
    (runtime.straight_line), what the executor calls; given instead for a graph with TensorFlow
    1 control flow, which runtime.frames runs (and which has no steps)."""

    def __post_init__(self):
        if self.straight_line is not None:
            return
        layout = Layout(self.initial, self.feeds, self.fetches, self.whole_feeds, self.takes_rest,
                        self.returns_slots)
        object.__setattr__(self, "straight_line",
                           compile_plan_function(self.steps, layout, self.where))


@dataclass(frozen=True)
class LoopBody:
    """A While body prepared for running many times.

    Steps whose inputs are the same in every iteration (constants, loop variables the body
    passes on unchanged, and what such steps compute) give the same values in every iteration;
    `invariant` computes them once, before the first iteration, and `varying` runs the other
    steps each iteration, starting from the values `invariant` left (see executor.start_loop).
    Stateful steps stay in the loop, except variable reads when nothing in the loop can write
    a variable (no other stateful op, no function call). `plain` is the whole body, which runs
    when nothing could be hoisted (`invariant` is None) or an invariant step fails."""

    plain: Plan
    invariant: Plan | None
    varying: Plan


_READ_OPS = frozenset({"ReadVariableOp"})


def loop_body(body: Plan, cond: Plan) -> LoopBody:
    """`body` split into its loop-invariant steps and the rest (see LoopBody)."""
    if not body.whole_feeds or len(body.fetches) != len(body.feeds):
        return LoopBody(body, None, body)
    fixed = {slot for slot, fetch in zip(body.feed_slots, body.fetches) if fetch == (slot, 0)}
    fixed.update(i for i, value in enumerate(body.initial) if value is not None)
    writes = any(s.context or (s.stateful and s.op not in _READ_OPS)
                 for s in body.steps + cond.steps)
    hoisted = []
    for step in body.steps:
        if (not step.context and (not step.stateful or (step.op in _READ_OPS and not writes))
                and all(slot in fixed for slot, _ in step.inputs)):
            hoisted.append(step)
            fixed.add(step.slot)
    if not hoisted:
        return LoopBody(body, None, body)
    invariant = replace(body, steps=tuple(replace(s, frees=()) for s in hoisted), fetches=(),
                        returns_slots=True)
    varying = replace(body, steps=tuple(replace(s, frees=tuple(f for f in s.frees if f not in fixed))
                                        for s in body.steps if s.slot not in fixed),
                      takes_rest=True)
    return LoopBody(body, invariant, varying)


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
    limits: Limits = DEFAULT
    """What Const values may expand to and how deep calls may nest (see runtime.limits)."""


def output_count(spec: GraphSpec, node: GraphNode) -> int | None:
    """How many outputs `node` has, by its op definition or the signature of the library
    function it names; None when the model defines neither."""
    op_def = spec.op_defs.get(node.op)
    if op_def is None and spec.library is not None and node.op in spec.library.functions:
        op_def = spec.library.functions[node.op].signature
    if op_def is None:
        return None
    attrs = _with_defaults(node, op_def)
    needed = [arg.number_attr or arg.type_list_attr for arg in op_def.output_arg]
    missing = [name for name in needed if name and name not in attrs]
    if missing:
        raise GraphError(f"{spec.where}: node {node.name!r} (op {node.op}) has no attr "
                         f"{missing[0]!r}, which says how many outputs it has")
    return sum(arg_length(arg, attrs) for arg in op_def.output_arg)


def check_ref(spec: GraphSpec, ref: Ref, where: str) -> None:
    """`ref` must name an existing node and one of its outputs (checked before planning: an
    index such as `x:2147483647` would otherwise stand for that many outputs)."""
    name, index = ref
    node = spec.nodes.get(name)
    if node is None:
        raise GraphError(f"{where}: tensor '{name}:{index}' names node {name!r}, which the "
                         f"{spec.where} does not have")
    count = output_count(spec, node)
    if count is not None and not 0 <= index < count:
        raise GraphError(f"{where}: tensor '{name}:{index}' names output {index} of node "
                         f"{name!r} (op {node.op}), which has {count} output(s)")


def compile_plan(spec: GraphSpec, feeds: Iterable[Ref], fetches: Iterable[Ref],
                 targets: Iterable[str] = (), keep_stateful: bool = False) -> Plan:
    from savedmodel.runtime.inline import simplify

    feeds, fetches, targets = list(feeds), list(fetches), list(targets)
    for ref in feeds + fetches:
        if ref[0] in spec.nodes:  # unknown names are reported with the walk below
            check_ref(spec, ref, spec.where)
    if any(node.op in FRAME_OPS for node in spec.nodes.values()):
        from savedmodel.runtime.frames import frame_plan
        plan = frame_plan(spec, feeds, fetches, targets, keep_stateful)
        if plan is not None:
            return plan
    fed = {name for name, _ in feeds}
    try:
        nodes, fetches, targets = simplify(spec, fed, fetches, targets)
    except RecursionError:
        raise too_deep_for_python(spec.where) from None
    roots = [name for name, _ in fetches] + targets
    if keep_stateful:
        roots += [name for name, node in nodes.items() if is_stateful(spec.op_defs, node)]
    needed = _needed(spec.where, nodes, roots, fed)
    known = {name: value for name in needed if (value := _constant(spec, nodes[name])) is not None}
    order = ordered_nodes(spec.where, nodes, needed - set(known), fed)
    order, nodes, fetches = _without_pass_through(spec, nodes, order, fetches)
    outputs = {name: (value,) for name, value in known.items()}
    outputs.update(_folded(spec, nodes, order, outputs, {name for name, _ in fetches} | fed))
    order = [name for name in order if name not in outputs]
    names = list(dict.fromkeys([n for n, _ in feeds])) + list(outputs) + order
    slots = {name: i for i, name in enumerate(names)}
    last_use = _last_uses(nodes, order, slots, {slots[name] for name, _ in fetches})
    steps = tuple(_step(spec, nodes, nodes[name], slots, last_use.get(name, ())) for name in order)
    initial = [None] * len(slots)
    for name, value in outputs.items():
        initial[slots[name]] = value
    feed_slots = tuple(slots[n] for n, _ in feeds)
    whole = all(k == 0 for _, k in feeds) and feed_slots == tuple(range(len(feeds)))
    return Plan(spec.where, steps, tuple(initial), tuple((slots[n], k) for n, k in feeds),
                tuple((slots[n], k) for n, k in fetches), feed_slots, whole)


FOLD_MAX_BYTES = 1 << 20
"""Larger results of constant subgraphs are recomputed on every run rather than held by the
plan (TensorFlow's constant folding has a similar limit)."""


def _folded(spec: GraphSpec, nodes: dict[str, GraphNode], order: list[str],
            constants: dict[str, tuple], keep: set[str]) -> dict[str, tuple]:
    """Constant folding: the outputs of stateless nodes whose inputs are all constants (or
    folded themselves), computed once now instead of on every run. A node whose kernel fails
    stays in the plan, so that the failure is reported when it runs, as before; fetched
    values are not folded, so that a caller never holds an array the plan keeps."""
    folded: dict[str, tuple] = {}
    for name in order:
        node = nodes[name]
        known = [constants.get(p) or folded.get(p) for p, _ in node.data]
        if (name in keep or not node.data or any(k is None for k in known)
                or any(c not in constants and c not in folded for c in node.control)):
            continue
        value = _fold(spec, nodes, node, [k[i] for k, (_, i) in zip(known, node.data)])
        if value is not None:
            folded[name] = value
    return folded


def _fold(spec: GraphSpec, nodes: dict[str, GraphNode], node: GraphNode, inputs: list) -> tuple | None:
    """The node's outputs for these constant inputs, or None if it must run each time."""
    kernel = _kernel(spec, node)
    if (kernel.context or kernel.named or kernel.stateful or is_stateful(spec.op_defs, node)
            or any(type(i) is not np.ndarray for i in inputs)
            or _dereferenced_inputs(spec, nodes, node)):
        return None
    try:
        with np.errstate(all="ignore"):
            outputs = kernel.fn(*inputs, **_attrs(spec, node))
    except Exception:  # noqa: BLE001  (it fails again, with the node named, when it runs)
        return None
    if (type(outputs) is not tuple or any(type(o) is not np.ndarray for o in outputs)
            or sum(o.nbytes for o in outputs) > FOLD_MAX_BYTES):
        return None
    return outputs


def _without_pass_through(spec: GraphSpec, nodes: dict[str, GraphNode], order: list[str],
                          fetches: list[Ref]) -> tuple[list[str], dict[str, GraphNode], list[Ref]]:
    """Drop NoOps and identities from an ordered plan, rewiring their readers to their inputs.

    Done after ordering, so their control inputs have already placed everything correctly; an
    identity that reads a TensorFlow 1 reference stays, because reading is what it does."""
    sources: dict[str, list[Ref]] = {}

    def resolve(ref: Ref) -> Ref:
        while ref[0] in sources:
            passed = sources[ref[0]]
            if ref[1] >= len(passed):
                raise GraphError(f"{spec.where}: reference to output {ref[1]} of node "
                                 f"{ref[0]!r} (op {nodes[ref[0]].op}), which has {len(passed)}")
            ref = passed[ref[1]]
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
    stack: list[tuple[str, GraphNode | None]] = [(name, None) for name in roots]
    while stack:
        name, consumer = stack.pop()
        if name in needed or name in fed:
            continue
        node = nodes.get(name)
        if node is None:
            by = f"node {consumer.name!r} (op {consumer.op}) takes an input from" if consumer else "reference to"
            raise GraphError(f"{where}: {by} unknown node {name!r}")
        if node.op == "Placeholder":
            raise GraphError(f"{where}: placeholder {name!r} is needed but not fed")
        needed.add(name)
        stack.extend((n, node) for n, _ in node.data)
        stack.extend((n, node) for n in node.control)
    return needed


def ordered_nodes(where: str, nodes: dict[str, GraphNode], needed: set[str], fed: set[str]) -> list[str]:
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
        raise GraphError(f"{where}: the graph has a cycle through {stuck}")
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
        attrs["node_function"] = node.function
    fn = kernel.fn
    fast = None
    derefs = _dereferenced_inputs(spec, nodes, node)
    if derefs:
        fn = _reading_refs(fn, tuple(p + kernel.context for p in derefs))
    elif kernel.specialize is not None:
        fast = kernel.specialize(attrs)
        if fast is not None and not _takes(fast, len(node.data)):
            fast = None  # a malformed node: the kernel reports it
    label = node.name if node.function is None else f"{node.name} (from function {node.function!r})"
    return Step(label, node.op, fn, kernel.context, _taken_attrs(fn, attrs), slots[node.name],
                tuple((slots[n], k) for n, k in node.data), frees, fast,
                kernel.stateful or is_stateful(spec.op_defs, node))


def _takes(fn: Callable, count: int) -> bool:
    """Whether `fn` (a plain function) takes `count` positional arguments."""
    code = fn.__code__
    return code.co_argcount == count or bool(code.co_flags & inspect.CO_VARARGS
                                             and count >= code.co_argcount)


def _attrs(spec: GraphSpec, node: GraphNode) -> dict:
    where = f"{spec.where}: node {node.name!r} (op {node.op})"
    return decode_attrs(_with_defaults(node, spec.op_defs.get(node.op)), where, spec.limits)


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
