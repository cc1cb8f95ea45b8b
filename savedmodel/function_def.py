"""A traced FuncGraph as a library FunctionDef, written as TensorFlow writes one.

- Arguments are the graph's inputs (parameters, then captures) named after their placeholders,
  lowercased with `/` and other separators as `_` (`AssignAddVariableOp/resource` becomes
  `assignaddvariableop_resource`; a name that does not start with a letter, such as the number a
  captured eager tensor is named with, becomes `unknown`, `unknown_0`, ...). Each carries its
  `_user_specified_name` (when it has one) and, unless it is a resource, its `_output_shapes`
  (an argument with neither has no `arg_attr` entry).
- Results are named after their `Identity` nodes (or the argument a loop body passes through),
  normalized as arguments are (`identity`, `cond_identity_1`); they are named first, so an
  argument whose name a result took gets `_0` (`while_n` returns argument `while_n_0`).
- Body nodes refer to other nodes' outputs as `node:output_arg:index` and to arguments by name.
- Stateful nodes are the control outputs (`control_ret`), sorted by name.
"""
from __future__ import annotations

import re

from savedmodel.graph import RESOURCE, FuncGraph, Operation
from savedmodel.protos import function_pb2
from savedmodel.runtime.tensor_proto import shape_to_proto
from savedmodel.tensor import GraphTensor

_SEPARATORS = re.compile(r"[^a-z0-9_]")


def to_function_def(graph: FuncGraph, name: str) -> function_pb2.FunctionDef:
    function = function_pb2.FunctionDef()
    signature = function.signature
    signature.name = name
    results = _unique([_arg_name(t.op.name) for t in graph.outputs])
    inputs = {t.op.name: t for t in graph.inputs}
    arg_names = _unique([_arg_name(op_name) for op_name in inputs], taken=set(results))
    args = dict(zip(inputs, arg_names))
    for index, (op_name, tensor) in enumerate(inputs.items()):
        signature.input_arg.add(name=args[op_name], type=tensor.dtype.enum)
        node_attrs = tensor.op.node_def.attr
        if "_user_specified_name" in node_attrs:
            attrs = function.arg_attr[index].attr
            attrs["_user_specified_name"].CopyFrom(node_attrs["_user_specified_name"])
        if tensor.dtype is not RESOURCE:
            attrs = function.arg_attr[index].attr
            attrs["_output_shapes"].list.shape.append(shape_to_proto(tensor.shape.as_tuple()))
    for op in graph.get_operations():
        if op.name in inputs:
            continue
        node = function.node_def.add()
        node.CopyFrom(op.node_def)
        del node.input[:]
        node.input.extend(_reference(t, args) for t in op.inputs)
        node.input.extend("^" + c for c in sorted(o.name for o in op.control_inputs))
    for result, tensor in zip(results, graph.outputs):
        signature.output_arg.add(name=result, type=tensor.dtype.enum)
        function.ret[result] = _reference(tensor, args)
    for op_name in sorted(op.name for op in graph.control_outputs):
        signature.control_output.append(op_name)
        function.control_ret[op_name] = op_name
    signature.is_stateful = graph.is_stateful()
    function.attr["_construction_context"].s = b"kEagerRuntime"
    return function


def _arg_name(op_name: str) -> str:
    name = _SEPARATORS.sub("_", op_name.lower())
    return name if name[:1].isalpha() else "unknown"


def _unique(names: list[str], taken: set[str] | None = None) -> list[str]:
    """TensorFlow's renaming of repeated argument names: the first keeps its name, later ones
    get `_0`, `_1`, ... (skipping names already taken, such as the results' names when naming
    arguments)."""
    taken = set() if taken is None else taken
    counters: dict[str, int] = {}
    out = []
    for name in names:
        candidate = name
        while candidate in taken:
            candidate = f"{name}_{counters.get(name, 0)}"
            counters[name] = counters.get(name, 0) + 1
        taken.add(candidate)
        out.append(candidate)
    return out


def _reference(tensor: GraphTensor, args: dict[str, str]) -> str:
    if tensor.op.name in args:
        return args[tensor.op.name]
    arg, index = output_arg(tensor.op, tensor.value_index)
    return f"{tensor.op.name}:{arg}:{index}"


def output_arg(op: Operation, flat_index: int) -> tuple[str, int]:
    """The output argument that flat output `flat_index` of `op` belongs to, and its index
    within that argument."""
    offset = 0
    for arg in op.op_def.output_arg:
        if arg.number_attr:
            count = op.node_def.attr[arg.number_attr].i
        elif arg.type_list_attr:
            count = len(op.node_def.attr[arg.type_list_attr].list.type)
        else:
            count = 1
        if flat_index < offset + count:
            return arg.name, flat_index - offset
        offset += count
    raise IndexError(f"op {op.name!r} has no output {flat_index}")
