"""`sm.cond`, `sm.switch_case` and `sm.while_loop`: control flow as TensorFlow 2 builds it.

Eagerly these are Python: the predicate's value picks the branch, the loop runs as a Python
loop. While a function is traced, each branch, loop condition and loop body is traced into a
FuncGraph of its own (`tracing.trace_control_flow`), which joins the library as a FunctionDef,
and one functional node runs them: `StatelessIf`/`If`, `StatelessCase`/`Case`,
`StatelessWhile`/`While` (the stateful form when a function holds a stateful op), with the
attrs TensorFlow sets (`_lower_using_switch_merge`, `_read_only_resource_inputs`, ...).

Values a branch or body uses from outside become its inputs (TensorFlow's "captures"): the
branches of a cond all take the union of what any of them captured, each with stand-in
placeholders for what it does not use; a loop threads its captures through as extra loop
variables, which the condition receives as `..._redundant_placeholder` inputs it ignores.
Names follow TensorFlow's: library functions are `cond_true_<uid>`, `while_body_<uid>`;
nodes inside a branch continue the caller's scope (`cond/add`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from savedmodel import context, nest
from savedmodel.dtypes import int32
from savedmodel.function_def import to_function_def
from savedmodel.graph import RESOURCE, FuncGraph, Graph
from savedmodel.op_builder import apply_op, convert_to_tensor, int_list
from savedmodel.protos import attr_value_pb2
from savedmodel.runtime.dtypes import DType
from savedmodel.shapes import TensorShape
from savedmodel.tensor import EagerTensor, GraphTensor, Tensor
from savedmodel.tracing import trace_control_flow

__all__ = ["cond", "switch_case", "while_loop"]

_LOWER = attr_value_pb2.AttrValue(b=True)


# ----------------------------------------------------------------------------- cond

def cond(pred: Any, true_fn: Callable | None = None, false_fn: Callable | None = None,
         name: str | None = None) -> Any:
    """`tf.cond`: `true_fn()` if `pred` else `false_fn()`; while tracing, both branches are
    traced and a `StatelessIf` (or `If`) node picks one when the graph runs. Both must return
    the same structure of tensors, with the same dtypes."""
    _check_callable(true_fn, "true_fn")
    _check_callable(false_fn, "false_fn")
    if context.executing_eagerly():
        return true_fn() if _eager_truth(pred) else false_fn()
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool", pred)
    graph = context.current_graph()
    with graph.name_scope(name or "cond") as scope:
        true_name = function_name(scope, "true")
        false_name = function_name(scope, "false")
        pred = _scalar_predicate(pred)
        branches = [trace_control_flow(true_fn, true_name),
                    trace_control_flow(false_fn, false_name)]
        _check_same_outputs(branches, ("true_fn", "false_fn"), "sm.cond")
        return _build_branching("If", graph, pred, branches, scope,
                                {"then_branch": true_name, "else_branch": false_name})


def switch_case(branch_index: Any, branch_fns: Any, default: Callable | None = None,
                name: str | None = None) -> Any:
    """`tf.switch_case`: the result of `branch_fns[branch_index]()` (a list, or a dict keyed
    by index), `default` (else the last branch) for any other index; while tracing, a
    `StatelessCase` (or `Case`) node."""
    branches = _case_branches(branch_fns, default)
    if context.executing_eagerly():
        index = int(convert_to_tensor(branch_index)._value)
        return (branches[index] if 0 <= index < len(branches) else branches[-1])()
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    graph = context.current_graph()
    with graph.name_scope(name or "switch_case"), graph.name_scope("indexed_case") as scope:
        index = convert_to_tensor(branch_index)
        names = [function_name(scope, f"branch{i}") for i in range(len(branches))]
        traced = [trace_control_flow(fn, n) for fn, n in zip(branches, names)]
        labels = tuple(f"branches[{i}]" for i in range(len(traced)))
        _check_same_outputs(traced, labels, "sm.switch_case")
        return _build_branching("Case", graph, index, traced, scope, {"branches": names})


def _case_branches(branch_fns: Any, default: Callable | None) -> list[Callable]:
    if isinstance(branch_fns, dict):
        keys = sorted(branch_fns)
        if keys != list(range(len(keys))):
            raise ValueError(f"branch_fns keys must be 0 ... {len(keys) - 1}, got {keys}")
        branch_fns = [branch_fns[k] for k in keys]
    branches = list(branch_fns)
    if not branches:
        raise ValueError("branch_fns must not be empty")
    if default is not None:
        branches.append(default)
    for i, fn in enumerate(branches):
        _check_callable(fn, f"branch_fns[{i}]")
    return branches


def _check_callable(fn: Any, what: str) -> None:
    if fn is None:
        raise TypeError(f"cond(): '{what}' argument required")
    if not callable(fn):
        raise TypeError(f"'{what}' must be callable.")


def _eager_truth(pred: Any) -> bool:
    return bool(pred if isinstance(pred, (bool, EagerTensor)) else convert_to_tensor(pred))


def function_name(scope: str, kind: str) -> str:
    """A library function's name as TensorFlow makes it: scope and kind with a unique number,
    `/` as `_` (`cond/` and `true` give `cond_true_29`)."""
    return f"{scope}{kind}_{context.uid()}".replace("/", "_")


def _scalar_predicate(pred: Any) -> Tensor:
    """The predicate as a tensor; one whose rank is not known to be 0 is squeezed."""
    pred = convert_to_tensor(pred)
    if pred.shape.rank != 0:
        pred = apply_op("Squeeze", [pred], {"squeeze_dims": []}, name="Squeeze")[0]
    return pred


def _check_same_outputs(graphs: Sequence[FuncGraph], labels: Sequence[str], op: str) -> None:
    first = graphs[0]
    for label, graph in zip(labels[1:], graphs[1:]):
        detail = nest.structure_difference(first.structured_outputs, graph.structured_outputs)
        if detail is None and len(first.outputs) != len(graph.outputs):
            detail = "they return different numbers of tensors"
        if detail is None:
            detail = next((f"{a} and {b} have different types"
                           for a, b in zip(first.outputs, graph.outputs) if a.dtype is not b.dtype),
                          None)
        if detail is not None:
            raise TypeError(
                f"{labels[0]} and {label} arguments to {op} must have the same number, type, "
                f"and overall structure of return values.\n\n{labels[0]} output: "
                f"{first.structured_outputs}\n{label} output: {graph.structured_outputs}\n\n"
                f"Error details:\n{detail}")


def _build_branching(kind: str, graph: Graph, selector: Tensor, branches: Sequence[FuncGraph],
                     scope: str, function_attrs: dict) -> Any:
    """The If or Case node over traced branches (inputs matched), and an `Identity` per output,
    packed as the first branch's results are."""
    externals = _match_inputs(branches)
    inputs = [outer_tensor(graph, value, f"input_{i}") for i, value in enumerate(externals)]
    add_library(graph, branches)
    stateful = any(b.is_stateful() for b in branches)
    op_type = kind if stateful else f"Stateless{kind}"
    shapes = [_common_shape([b.outputs[i].shape for b in branches])
              for i in range(len(branches[0].outputs))]
    attrs = {"Tout": [t.dtype for t in branches[0].outputs], "output_shapes": shapes,
             **function_attrs}
    read_only = set.intersection(*(set(b.read_only_resource_inputs()) for b in branches))
    extra = {"_lower_using_switch_merge": _LOWER,
             "_read_only_resource_inputs": int_list(sorted(read_only))}
    outputs = apply_op(op_type, [selector, inputs], attrs, name=scope, graph_attrs=extra,
                       output_shapes=shapes)
    results = iter([apply_op("Identity", [t], name="Identity")[0] for t in outputs])
    return nest.map_structure(lambda leaf: None if leaf is None else next(results),
                              branches[0].structured_outputs)


def _match_inputs(graphs: Sequence[FuncGraph]) -> list[Any]:
    """The values any of the graphs captured, in first-capture order; each graph's inputs are
    made that list, with an unannotated `Placeholder` standing in for a value it does not use."""
    externals: dict[int, Any] = {}
    for graph in graphs:
        for external in graph.external_captures:
            externals.setdefault(id(external), external)
    for graph in graphs:
        own = {id(external): internal for external, internal in graph.captures}
        inputs = []
        for key, external in externals.items():
            internal = own.get(key)
            if internal is None:
                dtype, shape = value_type(external)
                with context.building(graph):
                    internal = graph.placeholder(dtype, shape, "Placeholder", annotate=False)
            inputs.append(internal)
        graph.inputs = inputs
    return list(externals.values())


def value_type(value: Any) -> tuple[DType, TensorShape]:
    """The dtype and shape of a captured value (a variable stands for its resource handle)."""
    if isinstance(value, Tensor):
        return value.dtype, value.shape
    return RESOURCE, TensorShape(())


def outer_tensor(graph: Graph, value: Any, name: str) -> GraphTensor:
    """`value` (captured by a control-flow function) as a tensor of the graph the control-flow
    node goes in: captured there too when it comes from further out, an eager tensor or a
    variable named `name` in the current scope (`cond/input_0`)."""
    if isinstance(value, GraphTensor) and value.graph is graph:
        return value
    if not isinstance(graph, FuncGraph):
        return convert_to_tensor(value)
    return graph.capture(value, None if isinstance(value, GraphTensor) else name)


def add_library(graph: Graph, functions: Sequence[FuncGraph]) -> None:
    """Make the traced functions (and what they call) part of `graph`'s library."""
    for function in functions:
        graph.add_function(to_function_def(function, function.name), function.functions)


def _common_shape(shapes: Sequence[TensorShape]) -> TensorShape:
    shape = shapes[0]
    for other in shapes[1:]:
        shape = shape.most_specific_compatible_shape(other)
    return shape


# ----------------------------------------------------------------------------- while_loop

def while_loop(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, maximum_iterations: Any = None,
               name: str | None = None) -> Any:
    """`tf.while_loop`: `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (at most
    `maximum_iterations` times), returning the final loop variables in their structure. While
    tracing, a `StatelessWhile` (or `While`) node; `shape_invariants` (a structure of shapes
    like `loop_vars`) lets a variable's shape change between iterations."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if not nest.is_nested(loop_vars) or not nest.flatten(loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    if context.executing_eagerly():
        return _eager_while(cond, body, loop_vars, maximum_iterations)
    return _graph_while(cond, body, loop_vars, shape_invariants, parallel_iterations,
                        maximum_iterations, name or "while")


def _eager_while(cond: Callable, body: Callable, loop_vars: Any, maximum_iterations: Any):
    limit = None if maximum_iterations is None else int(convert_to_tensor(maximum_iterations))
    count = 0
    while (limit is None or count < limit) and _eager_truth(cond(*loop_vars)):
        result = body(*loop_vars)
        _check_loop_structure(loop_vars, result if nest.is_nested(result) else [result])
        loop_vars = result if nest.is_nested(result) else [result]
        count += 1
    return nest.map_structure(_as_loop_value, loop_vars)


def _as_loop_value(value: Any) -> Any:
    return value if hasattr(value, "_sm_flow") else convert_to_tensor(value)


def _check_loop_structure(loop_vars: Any, result: Any) -> None:
    detail = nest.structure_difference(loop_vars, result, check_types=False)
    if detail is not None:
        raise ValueError(f"The body of sm.while_loop must return its loop variables' structure."
                         f"\n\n{detail}")


def _graph_while(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any,
                 parallel_iterations: int, maximum_iterations: Any, name: str) -> Any:
    graph = context.current_graph()
    flat = [convert_to_tensor(_flow(v)) for v in nest.flatten(loop_vars)]
    invariants = _invariants(flat, shape_invariants)
    count = len(flat)
    with graph.name_scope(name) as scope:
        cond_name = function_name(scope, "cond")
        body_name = function_name(scope, "body")
        limit = convert_to_tensor(-1 if maximum_iterations is None else maximum_iterations,
                                  int32, name="maximum_iterations")
        counter = convert_to_tensor(0, limit.dtype, name="loop_counter")
        signature = [(counter.dtype, (), counter.op.name), (limit.dtype, (), limit.op.name)]
        signature += [(t.dtype, shape.as_tuple(), None) for t, shape in zip(flat, invariants)]

        def wrapped_cond(step, bound, *args):
            pred = cond(*_repack(loop_vars, args))
            if isinstance(pred, Tensor) and pred.shape.rank != 0:
                pred = apply_op("Squeeze", [pred], {"squeeze_dims": []}, name="Squeeze")[0]
            if maximum_iterations is None:
                return pred
            return apply_op("LogicalAnd", [step < bound, pred], name="LogicalAnd")[0]

        cond_graph = trace_control_flow(wrapped_cond, cond_name, signature)

        def wrapped_body(step, bound, *args):
            for external in cond_graph.external_captures:
                context.current_graph().capture(external)
            result = body(*_repack(loop_vars, args))
            result = result if nest.is_nested(result) else [result]
            _check_loop_structure(loop_vars, result)
            return [step + 1, bound, *[_flow(v) for v in nest.flatten(result)]]

        body_graph = trace_control_flow(wrapped_body, body_name, signature)
        _check_body_outputs(body_graph, flat, invariants)
        body_graph.outputs.extend(body_graph.internal_captures)
        _add_redundant_inputs(cond_graph, body_graph)
        inputs = [counter, limit, *flat]
        inputs += [outer_tensor(graph, value, f"input_{len(inputs) + i}")
                   for i, value in enumerate(body_graph.external_captures)]
        add_library(graph, [cond_graph, body_graph])
        stateful = cond_graph.is_stateful() or body_graph.is_stateful()
        shapes = [t.shape for t in body_graph.outputs]
        shapes[2:2 + count] = invariants
        read_only = (set(cond_graph.read_only_resource_inputs())
                     & set(body_graph.read_only_resource_inputs()))
        extra = {"_lower_using_switch_merge": _LOWER,
                 "_read_only_resource_inputs": int_list(sorted(read_only)),
                 "_num_original_outputs": attr_value_pb2.AttrValue(i=len(body_graph.outputs))}
        attrs = {"cond": cond_name, "body": body_name, "output_shapes": shapes,
                 "parallel_iterations": parallel_iterations}
        outputs = apply_op("While" if stateful else "StatelessWhile", [inputs], attrs,
                           name=scope, graph_attrs=extra, output_shapes=shapes)
    return _repack(loop_vars, outputs[2:2 + count])


def _flow(value: Any) -> Any:
    """A TensorArray travels through a loop as its flow (a TensorList)."""
    flow = getattr(value, "_sm_flow", None)
    return value if flow is None else flow


def _repack(loop_vars: Any, flat: Sequence) -> Any:
    """Loop variables in their structure from flat tensors, TensorArrays rebuilt around their
    new flows."""
    originals = nest.flatten(loop_vars)
    values = [original._with_flow(value) if hasattr(original, "_sm_flow") else value
              for original, value in zip(originals, flat)]
    return nest.pack_sequence_as(loop_vars, values)


def _invariants(flat: Sequence[Tensor],
                shape_invariants: Any) -> list[TensorShape]:
    """One shape per loop variable: its invariant, or its own shape where none is given."""
    if shape_invariants is None:
        return [t.shape for t in flat]
    shapes = nest.flatten(shape_invariants)
    if len(shapes) != len(flat):
        raise ValueError(f"shape_invariants must have the structure of loop_vars: "
                         f"{len(flat)} shapes, got {shape_invariants!r}")
    out = []
    for tensor, shape in zip(flat, shapes):
        shape = tensor.shape if shape is None else TensorShape(shape)
        if not _less_or_equal(tensor.shape, shape):
            raise ValueError(f"The shape invariant specified for {tensor.name} is not compatible "
                             f"with the initial shape of the loop variable. It enters the loop "
                             f"with shape {tensor.shape}, but the specified shape invariant is "
                             f"{shape}.")
        out.append(shape)
    return out


def _less_or_equal(shape: TensorShape, invariant: TensorShape) -> bool:
    """Whether `shape` is at least as specific as `invariant`."""
    if invariant.rank is None:
        return True
    if shape.rank != invariant.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape, invariant))


def _check_body_outputs(body_graph: FuncGraph, flat: Sequence[Tensor],
                        invariants: Sequence[TensorShape]) -> None:
    outputs = body_graph.outputs[2:]
    for tensor, output, shape in zip(flat, outputs, invariants):
        if output.dtype is not tensor.dtype:
            raise TypeError(f"Loop var {tensor.name} enters the loop with type "
                            f"{tensor.dtype.name} but has type {output.dtype.name} after 1 "
                            f"iteration. {tensor.name} type should remain constant.")
        if not _less_or_equal(output.shape, shape):
            raise ValueError(f"Input tensor `{tensor.name}` enters the loop with shape {shape}, "
                             f"but has shape {output.shape} after one iteration. To allow the "
                             "shape to vary across iterations, use the `shape_invariants` "
                             "argument of sm.while_loop to specify a less-specific shape.")


def _add_redundant_inputs(cond_graph: FuncGraph, body_graph: FuncGraph) -> None:
    """The condition takes every loop variable the body does: the body's own captures reach it
    as unknown-shape placeholders `<cond>___redundant_placeholder<i>`, which it ignores."""
    extra = body_graph.external_captures[len(cond_graph.external_captures):]
    if not extra:
        return
    prefix = cond_graph.unique_name(f"{cond_graph.name}___redundant_placeholder")
    with context.building(cond_graph), cond_graph.name_scope(None):
        for i, value in enumerate(extra):
            dtype, _ = value_type(value)
            cond_graph.inputs.append(cond_graph.placeholder(
                dtype, TensorShape(None), f"{prefix}{i}", annotate=False))
