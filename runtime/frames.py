"""Running graphs with TensorFlow 1 control flow: Switch/Merge conditionals and
Enter/Exit/NextIteration loops, with TensorFlow's frame semantics.

A graph with these ops is not a straight line: loops are cycles, and which nodes run depends on
values. It runs as TensorFlow's executor runs it (core/common_runtime/propagator_state.cc):
every value is a token tagged with the frame and iteration it belongs to, and a node runs, for
a tag, once all its inputs for that tag have arrived.

- Switch passes its data to output 1 when the predicate holds, to output 0 otherwise; the
  other output is *dead*. A node with a dead input (data or control) does not run and its
  outputs are dead, except Merge, which runs on its first live data input once its control
  inputs have arrived (dead only when every data input is), and ControlTrigger, never dead.
- Enter moves a value into a child frame (named by its `frame_name`, one instance per parent
  frame and iteration), iteration 0; with `is_constant` the value is a loop invariant, there in
  every iteration of that frame. NextIteration moves a value to the next iteration, Exit to
  the parent frame. A dead NextIteration stops there; a dead Exit of a frame's last iteration
  reaches the parent frame once the frame is done (all its Enters have run and nothing in it
  is left to run). A Merge fed a dead Enter is dead, so a loop on the untaken branch of a
  conditional runs one dead iteration and its Exits are dead.
Iterations run one at a time, in order, so `parallel_iterations` changes nothing but memory.
A fetched value that never arrives at the top level (dead, or on a path that never ran) is an
error, as TensorFlow's Session reports it.

Graphs without these ops never come here: they run as one generated straight-line function
(runtime.straight_line).
"""
from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field

from savedmodel.runtime import deadline
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.executor import LIMIT_ERRORS, NodeError
from savedmodel.runtime.plan import FRAME_OPS, Plan, Step, _attrs, _constant, _needed, _step, is_stateful


class _Dead:
    """The value of a dead tensor (the untaken output of a Switch, and what depends on it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()

_KINDS = {"Switch": "op", "RefSwitch": "op", "Merge": "merge", "RefMerge": "merge", "Enter": "enter",
          "RefEnter": "enter", "Exit": "exit", "RefExit": "exit", "NextIteration": "next",
          "RefNextIteration": "next", "ControlTrigger": "trigger"}

_IN_PLACE = frozenset({"op", "const", "merge", "trigger"})
"""Kinds of node whose outputs stay in the frame and iteration they ran in."""

ROOT = None
"""The top-level frame instance; a frame instance is otherwise (parent tag, frame name), a tag
(frame instance, iteration)."""


@dataclass
class FrameNode:
    """A node as the frame executor runs it: how it routes its outputs (`kind`), its step
    (kernel and attrs, runtime.plan.Step), where its inputs come from and its outputs go."""

    index: int
    name: str
    op: str
    kind: str
    step: Step | None
    """None for Consts and fed nodes, which run no kernel."""
    data_count: int
    control_count: int
    frame_name: str = ""
    is_constant: bool = False
    consumers: list[tuple[int, int, int]] = field(default_factory=list)
    """(output index, consumer, input position) of each data edge out of the node."""
    control_consumers: list[int] = field(default_factory=list)
    value: tuple | None = None
    """A Const's outputs, known when compiling."""
    enter_inputs: frozenset[int] = frozenset()
    """A Merge's input positions fed by an Enter: a dead value there makes the Merge dead."""
    arrivals: tuple[int, int] = (0, 0)
    """A Merge's inputs that can arrive in iteration 0 and in later ones (in a loop, Enter
    feeds it in the first and NextIteration in the others), so that its state for a tag is
    dropped once they have."""


@dataclass(frozen=True)
class FrameGraph:
    """What a run needs: the nodes, which of them start it (no inputs), which are fed (by the
    position of each feed), and the fetched outputs."""

    where: str
    nodes: tuple[FrameNode, ...]
    sources: tuple[int, ...]
    enters: dict[str, int]
    """How many Enter nodes feed each frame (by name): an instance is done only once they all
    have run."""
    feeds: tuple[tuple[int, int], ...]
    fetches: tuple[tuple[int, int], ...]


class _Pending:
    """A node's inputs for one tag, as they arrive."""

    __slots__ = ("inputs", "waiting", "dead", "controls", "done")

    def __init__(self, node: FrameNode):
        self.inputs: list = [DEAD] * node.data_count
        self.waiting = node.data_count + node.control_count
        self.controls = node.control_count
        self.dead = 0
        self.done = False


class _Frame:
    """One instance of a frame: its loop invariants, how many iterations it has started, how
    many of its Enters have run, and its dead Exits (node, iteration) not passed on yet."""

    __slots__ = ("invariants", "iterations", "entered", "dead_exits")

    def __init__(self):
        self.invariants: list[tuple[FrameNode, tuple]] = []
        self.iterations = 1
        self.entered = 0
        self.dead_exits: list[tuple[FrameNode, int]] = []


class FrameRun:
    """One run of a FrameGraph: a work list of (node, tag, inputs, dead) and the state of the
    nodes still waiting for inputs."""

    def __init__(self, graph: FrameGraph, ctx):
        self.graph = graph
        self.ctx = ctx
        self.pending: dict[tuple[int, tuple], _Pending] = {}
        self.frames: dict[tuple, _Frame] = {}
        self.ready: list[tuple[FrameNode, tuple, list, bool]] = []
        self.results: dict[tuple[int, int], object] = {}
        self.fetched = {index for index, _ in graph.fetches}
        self.limit = deadline.current()

    def run(self, feeds: Sequence) -> tuple:
        root = (ROOT, 0)
        fed: dict[int, dict[int, object]] = {}
        for (index, output), value in zip(self.graph.feeds, feeds):
            fed.setdefault(index, {})[output] = value
        for index, values in fed.items():
            self.emit(self.graph.nodes[index], root, tuple(values.get(i, DEAD) for i in range(max(values) + 1)))
        for index in self.graph.sources:
            node = self.graph.nodes[index]
            if node.value is not None:
                self.emit(node, root, node.value)
            else:
                self.ready.append((node, root, [], False))
        while True:
            while self.ready:
                node, tag, inputs, dead = self.ready.pop()
                self.execute(node, tag, inputs, dead)
            if not self.pass_dead_exits():
                break
        return tuple(self.fetch(index, output) for index, output in self.graph.fetches)

    def fetch(self, index: int, output: int):
        value = self.results.get((index, output))
        if value is None or value is DEAD:
            why = ("it depends on an untaken branch of a conditional (a dead output of a Switch)"
                   if value is DEAD else "it never ran at the top level (inside a loop, or after one "
                                         "that never finished)")
            raise NodeError(f"{self.graph.where}: tensor '{self.graph.nodes[index].name}:{output}' "
                            f"has no value: {why}")
        return value

    def execute(self, node: FrameNode, tag: tuple, inputs: list, dead: bool) -> None:
        """Run one node for one tag (or propagate its deadness) and send its outputs on."""
        kind = node.kind
        if dead and kind != "trigger":
            outputs = None
        elif kind == "const":
            outputs = node.value
        else:
            outputs = self.call(node, tag, inputs)
        if kind in _IN_PLACE:
            self.emit(node, tag, outputs)
        elif kind == "enter":
            self.enter(node, tag, outputs)
        elif outputs is None:
            if kind == "exit" and tag[0] is not ROOT:
                self.frames[tag[0]].dead_exits.append((node, tag[1]))
            return  # a dead NextIteration stops the deadness there
        elif kind == "exit":
            frame = tag[0]
            if frame is ROOT:
                raise self.error(node, tag, SavedModelError("Exit outside of any loop frame"))
            self.emit(node, frame[0], outputs)
        else:
            self.next_iteration(node, tag, outputs)

    def call(self, node: FrameNode, tag: tuple, inputs: list) -> tuple:
        step = node.step
        try:
            if step.fast is not None:
                return step.fast(*inputs)
            if step.context:
                return step.fn(self.ctx, *inputs, **step.attrs)
            return step.fn(*inputs, **step.attrs)
        except Exception as err:  # noqa: BLE001  (named by the node that failed)
            raise self.error(node, tag, err) from (None if isinstance(err, SavedModelError) else err)

    def error(self, node: FrameNode, tag: tuple, err: Exception) -> Exception:
        where = f"{self.graph.where}: node {node.name!r} (op {node.op}){_describe(tag)}"
        if isinstance(err, LIMIT_ERRORS):
            return type(err)(f"{where}: {err}")
        if isinstance(err, SavedModelError):
            return NodeError(f"{where}: {err}")
        return NodeError(f"{where} failed: {type(err).__name__}: {err}")

    def enter(self, node: FrameNode, tag: tuple, outputs: tuple | None) -> None:
        instance = (tag, node.frame_name)
        frame = self.frames.get(instance)
        if frame is None:
            frame = self.frames[instance] = _Frame()
        frame.entered += 1
        if node.is_constant:
            frame.invariants.append((node, outputs))
            for iteration in range(frame.iterations):
                self.emit(node, (instance, iteration), outputs)
        else:
            self.emit(node, (instance, 0), outputs)

    def next_iteration(self, node: FrameNode, tag: tuple, outputs: tuple) -> None:
        instance, iteration = tag
        frame = self.frames[instance]
        following = (instance, iteration + 1)
        if iteration + 1 == frame.iterations:
            frame.iterations += 1
            if self.limit is not None:
                self.limit.check(f"{self.graph.where}: loop {instance[1]!r}, iteration {iteration + 1}")
            for invariant, values in frame.invariants:
                self.emit(invariant, following, values)
        self.emit(node, following, outputs)

    def pass_dead_exits(self) -> bool:
        """With nothing left to run: send the dead Exits of each done frame's last iteration to
        its parent frame (as TensorFlow does when it deletes the frame); whether any went."""
        passed = False
        for instance, frame in self.frames.items():
            if frame.dead_exits and frame.entered == self.graph.enters.get(instance[1], 0):
                last = frame.iterations - 1
                for node, iteration in frame.dead_exits:
                    if iteration == last:
                        self.emit(node, instance[0], None)
                        passed = True
                frame.dead_exits = []
        return passed

    def emit(self, node: FrameNode, tag: tuple, outputs: tuple | None) -> None:
        """Send a node's outputs (None: the node is dead) along its edges, for `tag`."""
        if tag[0] is ROOT and node.index in self.fetched:
            for index, output in self.graph.fetches:
                if index == node.index:
                    dead = outputs is None or output >= len(outputs)
                    self.results[(index, output)] = DEAD if dead else outputs[output]
        nodes = self.graph.nodes
        for output, consumer, position in node.consumers:
            value = DEAD if outputs is None or output >= len(outputs) else outputs[output]
            self.deliver(nodes[consumer], position, tag, value)
        live = outputs is not None
        for consumer in node.control_consumers:
            self.deliver(nodes[consumer], -1, tag, None if live else DEAD)

    def deliver(self, node: FrameNode, position: int, tag: tuple, value) -> None:
        """One input of `node` for `tag` has arrived (position -1: a control input)."""
        key = (node.index, tag)
        state = self.pending.get(key)
        if state is None:
            state = self.pending[key] = _Pending(node)
            if node.kind == "merge":
                state.waiting = node.arrivals[tag[1] > 0]
        if node.kind == "merge":
            self.deliver_to_merge(node, key, state, position, tag, value)
            return
        if position >= 0:
            state.inputs[position] = value
        if value is DEAD:
            state.dead += 1
        state.waiting -= 1
        if state.waiting == 0:
            del self.pending[key]
            dead = state.dead > 0 and node.kind != "trigger"
            self.ready.append((node, tag, state.inputs, dead))

    def deliver_to_merge(self, node: FrameNode, key: tuple, state: _Pending, position: int, tag: tuple,
                         value) -> None:
        """A Merge runs once per tag: on its first live data input once every control input has
        arrived, or dead once every data input has arrived dead. Its state goes once every input
        that can arrive for the tag has."""
        state.waiting -= 1
        if state.waiting == 0:
            del self.pending[key]
        if state.done:
            return
        if position < 0:
            state.controls -= 1
        elif value is DEAD:
            state.dead += 1
            if position in node.enter_inputs:  # a loop on the untaken branch of a conditional
                state.dead = node.data_count
        elif all(v is DEAD for v in state.inputs):
            state.inputs[position] = value
        live = any(v is not DEAD for v in state.inputs)
        if state.controls == 0 and (live or state.dead == node.data_count):
            state.done = True
            self.ready.append((node, tag, state.inputs, not live))


def _describe(tag: tuple) -> str:
    """Where in which loops a node ran, innermost first (empty at the top level)."""
    parts = []
    while tag[0] is not ROOT:
        instance, iteration = tag
        parts.append(f"frame {instance[1]!r} iteration {iteration}")
        tag = instance[0]
    return f" in {', '.join(parts)}" if parts else ""


def frame_plan(spec, feeds: list, fetches: list, targets: list, keep_stateful: bool):
    """The plan (runtime.plan.Plan) of a graph whose needed nodes include TensorFlow 1 control
    flow, run by this module; None when they include none (the straight-line plan serves)."""
    nodes = spec.nodes
    fed = {name for name, _ in feeds}
    roots = [name for name, _ in fetches] + list(targets)
    if keep_stateful:
        roots += [name for name, node in nodes.items() if is_stateful(spec.op_defs, node)]
    needed = _needed(spec.where, nodes, roots, fed)
    if not any(nodes[name].op in FRAME_OPS for name in needed):
        return None
    graph = _frame_graph(spec, [n for n in nodes if n in needed or n in fed], fed, feeds, fetches)

    def run(feeds, ctx, rest):
        return FrameRun(graph, ctx).run(feeds)

    run.step_lines = {}
    return Plan(spec.where, (), (), tuple((0, k) for _, k in feeds), tuple((0, k) for _, k in fetches),
                (), False, straight_line=run)


def _frame_graph(spec, names: list[str], fed: set[str], feeds: list, fetches: list) -> FrameGraph:
    slots = {name: index for index, name in enumerate(names)}
    frame_nodes = []
    for index, name in enumerate(names):
        node = spec.nodes[name]
        frame_nodes.append(_frame_node(spec, node, index, name in fed, slots))
    for index, name in enumerate(names):
        if name in fed:
            continue
        node = spec.nodes[name]
        for position, (producer, output) in enumerate(node.data):
            frame_nodes[slots[producer]].consumers.append((output, index, position))
        for producer in node.control:
            frame_nodes[slots[producer]].control_consumers.append(index)
    for node in frame_nodes:
        if node.kind == "merge":
            _merge_inputs(node, spec.nodes[node.name], frame_nodes, slots)
    sources = tuple(i for i, name in enumerate(names) if name not in fed
                    and not spec.nodes[name].data and not spec.nodes[name].control)
    enters = collections.Counter(node.frame_name for node in frame_nodes if node.kind == "enter")
    return FrameGraph(spec.where, tuple(frame_nodes), sources, dict(enters),
                      tuple((slots[n], k) for n, k in feeds), tuple((slots[n], k) for n, k in fetches))


def _merge_inputs(made: FrameNode, merge, frame_nodes: list[FrameNode], slots: dict) -> None:
    """What feeds a Merge: which inputs can arrive in iteration 0 and in later ones
    (FrameNode.arrivals), and which come from an Enter (FrameNode.enter_inputs)."""
    kinds = [frame_nodes[slots[producer]].kind for producer, _ in merge.data]
    controls = len(merge.control)
    made.arrivals = (controls + sum(kind != "next" for kind in kinds),
                     controls + sum(kind != "enter" for kind in kinds))
    made.enter_inputs = frozenset(position for position, kind in enumerate(kinds) if kind == "enter")


def _frame_node(spec, node, index: int, fed: bool, slots: dict) -> FrameNode:
    if fed:
        return FrameNode(index, node.name, node.op, "fed", None, 0, 0)
    kind = _KINDS.get(node.op, "op")
    value = _constant(spec, node) if node.op in ("Const", "VarHandleOp") else None
    if value is not None:
        kind = "const"
    made = FrameNode(index, node.name, node.op, kind, None, len(node.data), len(node.control),
                     value=None if value is None else (value,))
    if value is None:
        made.step = _step(spec, spec.nodes, node, slots, ())
    if kind == "enter":
        decoded = _attrs(spec, node)
        made.frame_name = decoded.get("frame_name") or ""
        made.is_constant = bool(decoded.get("is_constant"))
    return made
