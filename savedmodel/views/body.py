"""What every view renders: a body of nodes with its inputs and outputs, and the function
library that call nodes refer to.

A top-level graph, a signature's part of it and a function body are shown the same way, so they
share one shape. Node inputs are resolved once here, into `Ref`s that say which output of which
producer a node reads: in a function body TensorFlow writes `node:output_arg:index`, which is
turned into the flat output index a top-level graph would use (`node:index`) whenever the
producer's op definition is known (from the SavedModel's op list or the library), or the
producer has a single output (its `_output_shapes` attr says so); otherwise the reference keeps
its argument name, so a view never guesses an index. (TensorFlow's stripped op list can miss
ops used only in nested function bodies, such as a while loop's `Less`.)
"""
from __future__ import annotations

from dataclasses import dataclass

from savedmodel.protos import function_pb2, node_def_pb2, op_def_pb2
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.plan import arg_length
from savedmodel.views.values import Shape, dtype_name

CALLEE_ATTRS = {
    "PartitionedCall": ("f",),
    "StatefulPartitionedCall": ("f",),
    "If": ("then_branch", "else_branch"),
    "StatelessIf": ("then_branch", "else_branch"),
    "While": ("cond", "body"),
    "StatelessWhile": ("cond", "body"),
    "Case": ("branches",),
    "StatelessCase": ("branches",),
}
"""The order in which a control-flow or call op's functions are listed; other function-valued
attrs of any op follow in name order."""

MAX_EXPAND_DEPTH = 64
"""Calls nested deeper than this are not expanded. Each level indents the text view and nests a
container in the drawings, so deeper nesting is unreadable anyway, and a hostile file with
thousands of nested calls must not exhaust Python's stack while it is drawn."""

CALL_LABEL = "call"
"""How a node whose op is itself a library function names its callee."""


class ViewError(SavedModelError, ValueError):
    """A selection that does not exist, or a graph too malformed to show."""


@dataclass(frozen=True)
class Ref:
    """Which output of which producer a node reads (or a body returns).

    `index` is the flat output index, unless `output_arg` is set: then the producer's op
    definition was unknown and `index` counts within that output argument, as written.
    A control input has `control` set and index 0.
    """

    node: str
    index: int = 0
    output_arg: str | None = None
    control: bool = False


@dataclass(frozen=True)
class Port:
    """An input or output of a body: a signature key or a function argument.

    `dtype` is a dtype name, or for a polymorphic function argument the attr that sets it.
    `shape` is None for an unknown rank; `has_shape` is False where nothing declares a shape
    (function arguments). `ref` is the fed tensor of a signature input, or what an output
    returns; None for function arguments, which nodes name directly.
    """

    name: str
    dtype: str
    shape: Shape | None = None
    has_shape: bool = False
    ref: Ref | None = None


@dataclass(frozen=True)
class Body:
    """Nodes in file order, with every node's inputs resolved.

    `kind` is "graph", "signature" or "function"; in a function, a node input may name an
    argument (one of `inputs`) instead of a node. `control_outputs` pairs each control output
    name of a function with the node it waits for.
    """

    kind: str
    name: str
    nodes: tuple[node_def_pb2.NodeDef, ...]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    node_inputs: dict[str, tuple[Ref, ...]]
    control_outputs: tuple[tuple[str, str], ...] = ()


class Library:
    """The FunctionDefs of a graph by name, plus the op definitions that give output layouts."""

    def __init__(self, functions: dict[str, function_pb2.FunctionDef],
                 op_defs: dict[str, op_def_pb2.OpDef]):
        self.functions = functions
        self.op_defs = op_defs
        self._bodies: dict[str, Body] = {}

    @classmethod
    def of(cls, library: function_pb2.FunctionDefLibrary,
           op_list: op_def_pb2.OpList | None = None) -> Library:
        return cls({f.signature.name: f for f in library.function},
                   {op.name: op for op in op_list.op} if op_list is not None else {})

    def body(self, name: str) -> Body:
        """The body of library function `name` (built once: expansion asks for it per call)."""
        if name not in self._bodies:
            self._bodies[name] = self._build_body(name)
        return self._bodies[name]

    def _build_body(self, name: str) -> Body:
        function = self.functions.get(name)
        if function is None:
            raise ViewError(f"no function {name!r} in the graph's library "
                            f"(functions: {', '.join(sorted(self.functions)) or 'none'})")
        nodes = {node.name: node for node in function.node_def}
        where = f"function {name!r}"
        signature = function.signature
        inputs = tuple(Port(arg.name, _arg_type(arg)) for arg in signature.input_arg)
        outputs = tuple(Port(arg.name, _arg_type(arg), ref=self._function_ref(
            nodes, function.ret[arg.name], where) if arg.name in function.ret else None)
            for arg in signature.output_arg)
        control = tuple((key, function.control_ret.get(key, key)) for key in signature.control_output)
        resolved = {node.name: tuple(self._function_ref(nodes, text, f"{where}: node {node.name!r}")
                                     for text in node.input) for node in function.node_def}
        return Body("function", name, tuple(function.node_def), inputs, outputs, resolved, control)

    def not_expanded(self, name: str, stack: tuple[str, ...]) -> str | None:
        """Why the call of `name` made inside the functions `stack` is not expanded, or None
        when it is: a missing function, a cycle, or nesting beyond MAX_EXPAND_DEPTH."""
        if name not in self.functions:
            return "not in the library"
        if name in stack:
            cycle = stack[stack.index(name):] + (name,)
            return "recursive: " + " -> ".join(f"@{f}" for f in cycle)
        if len(stack) >= MAX_EXPAND_DEPTH:
            return f"not expanded: calls nested deeper than {MAX_EXPAND_DEPTH} levels"
        return None

    def callees(self, node: node_def_pb2.NodeDef) -> list[tuple[str, str]]:
        """(label, function name) of every function the node calls: the functions its attrs
        name (labelled by attr, `branches[1]` for lists) and its op if that is a function."""
        known = CALLEE_ATTRS.get(node.op, ())
        names = [a for a in known if a in node.attr]
        names += sorted(a for a in node.attr if a not in known and not a.startswith("_"))
        found = []
        for attr in names:
            value = node.attr[attr]
            if value.HasField("func"):
                found.append((attr, value.func.name))
            elif value.HasField("list"):
                found += [(f"{attr}[{i}]", f.name) for i, f in enumerate(value.list.func)]
        if node.op in self.functions:
            found.append((CALL_LABEL, node.op))
        return found

    def reachable(self, nodes) -> list[str]:
        """Names of the library functions the nodes call, directly or through other functions,
        in library order."""
        seen: set[str] = set()
        stack = [name for node in nodes for _, name in self.callees(node)]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.functions:
                continue
            seen.add(name)
            stack += [callee for node in self.functions[name].node_def for _, callee in self.callees(node)]
        return [name for name in self.functions if name in seen]

    def _function_ref(self, nodes: dict, text: str, where: str) -> Ref:
        if text.startswith("^"):
            return Ref(text[1:], control=True)
        parts = text.split(":")
        if len(parts) == 1:
            return Ref(text)
        if len(parts) == 2:
            return graph_ref(text, where)
        if len(parts) != 3 or not parts[2].isdigit():
            raise ViewError(f"{where}: malformed input reference {text!r}")
        name, arg, index = parts[0], parts[1], int(parts[2])
        node = nodes.get(name)
        offset = self._output_offset(node, arg)
        if offset is None and index == 0 and _output_count(node) == 1:
            offset = 0
        if offset is None:
            return Ref(name, index, output_arg=arg)
        return Ref(name, offset + index)

    def _output_offset(self, node, arg_name: str) -> int | None:
        if node is None:
            return None
        op_def = self.op_defs.get(node.op)
        if op_def is None and node.op in self.functions:
            op_def = self.functions[node.op].signature
        if op_def is None:
            return None
        offset = 0
        for arg in op_def.output_arg:
            if arg.name == arg_name:
                return offset
            offset += arg_length(arg, node.attr)
        return None


def graph_ref(text: str, where: str) -> Ref:
    """A top-level graph's input reference: `^node`, `node` or `node:index`."""
    if text.startswith("^"):
        return Ref(text[1:], control=True)
    name, colon, index = text.partition(":")
    if colon and not index.isdigit():
        raise ViewError(f"{where}: malformed input reference {text!r}")
    return Ref(name, int(index or 0))


def graph_inputs(nodes, where: str) -> dict[str, tuple[Ref, ...]]:
    """Every node's resolved inputs, for nodes of a top-level graph."""
    return {node.name: tuple(graph_ref(text, f"{where}: node {node.name!r}") for text in node.input)
            for node in nodes}


def _output_count(node) -> int | None:
    """How many outputs a node has according to the `_output_shapes` attr TensorFlow writes
    into saved function bodies (one shape per output), if it has one."""
    if node is None or "_output_shapes" not in node.attr:
        return None
    return len(node.attr["_output_shapes"].list.shape)


def _arg_type(arg: op_def_pb2.OpDef.ArgDef) -> str:
    element = dtype_name(arg.type) if arg.type else arg.type_attr
    if arg.number_attr:
        return f"{arg.number_attr}*{element}"
    if arg.type_list_attr:
        return arg.type_list_attr
    return element
