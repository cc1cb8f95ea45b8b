"""`sm.function`: Python functions traced into graphs, one ConcreteFunction per input signature.

(The module is named as TensorFlow's is; a module named `function` would shadow `sm.function`
as an attribute of the package once imported.)

A `Function` binds each call's arguments to the Python function's parameters and looks up the
trace for them (`tracing.trace_key`: tensors by dtype and shape, Python values by value,
variables and other objects by identity); an existing trace whose unknown dimensions accept
the call's shapes also serves it. A miss traces the Python function again (Python side effects
such as `print` happen only then). With `reduce_retracing`, a miss traces with the shapes
generalized against an earlier trace (`(1,)` then `(2,)` gives `(None,)`). With an
`input_signature`, there is one trace, and calls are converted to its specs or rejected.

A `ConcreteFunction` is one trace: its FuncGraph and how its arguments and results are
structured. Called eagerly, it runs the graph through the runtime: the graph is compiled once
into a plan (`savedmodel.runtime.plan`), with the functions it calls in a `FunctionLibrary`,
and every call feeds that plan with the arguments' arrays and the captured values (variables'
handles, large eager tensors). Called while another function is being traced, it becomes a
`PartitionedCall` (or `StatefulPartitionedCall`) node calling its FunctionDef, which joins the
caller's library.

Methods: decorating a method gives each instance its own Function (and its own traces).
AutoGraph conversion (`autograph=True`, savedmodel.autograph) applies where the Python function
is traced (`Function._traced_callable`).
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from savedmodel import context, nest
from savedmodel.convert import to_array
from savedmodel.errors import InputSignatureError, InvalidArgumentError
from savedmodel.function_def import to_function_def
from savedmodel.graph import FuncGraph
from savedmodel.op_builder import apply_op, convert_to_tensor, int_list
from savedmodel.op_defs import all_op_defs
from savedmodel.protos import function_pb2
from savedmodel.runtime import executor
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.library import FunctionLibrary
from savedmodel.runtime.plan import GraphNode, GraphSpec, Plan, compile_plan
from savedmodel.tensor import EagerTensor, GraphTensor, Tensor
from savedmodel.tensor_spec import TensorSpec
from savedmodel.tracing import (
    Argument,
    FunctionSpec,
    arguments_key,
    cast_to_signature,
    fits,
    leaf_spec,
    output_spec,
    relaxed,
    trace,
    trace_key,
)

CONFIG_PROTO = (b"\n\x07\n\x03CPU\x10\x01\n\x07\n\x03GPU\x10\x002\x02J\x008\x01"
                b"\x82\x01\x00\x92\x01\x02J\x00")
"""The serialized ConfigProto TensorFlow 2.21 writes on the function call nodes it builds."""


def function(func: Callable | None = None, input_signature: Sequence | None = None,
             autograph: bool = True, reduce_retracing: bool = False, *,
             experimental_relax_shapes: bool | None = None, jit_compile: bool | None = None,
             name: str | None = None):
    """`tf.function`: a decorator (with or without arguments) or a wrapper. `jit_compile` is
    accepted and ignored (there is no XLA); `experimental_relax_shapes` is the old name of
    `reduce_retracing`."""
    relax = bool(reduce_retracing or experimental_relax_shapes)

    def decorate(python_function: Callable) -> Function:
        return Function(python_function, input_signature, autograph, relax, name)
    return decorate if func is None else decorate(func)


class Function:
    """A polymorphic callable over traced graphs (see the module docstring)."""

    def __init__(self, python_function: Callable, input_signature: Sequence | None = None,
                 autograph: bool = True, reduce_retracing: bool = False,
                 name: str | None = None, instance: Any = None):
        if not callable(python_function):
            raise TypeError(f"sm.function needs a callable, got {python_function!r}")
        self._python_function = python_function
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._name = name or getattr(python_function, "__name__", "function")
        self._instance = None if instance is None else _reference(instance)
        self._spec = FunctionSpec(python_function, instance is not None, input_signature)
        self._traces: dict[tuple, ConcreteFunction] = {}
        self._concrete: list[ConcreteFunction] = []
        self._bound: dict[int, Function] = {}
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self) -> Callable:
        return self._python_function

    @property
    def input_signature(self) -> tuple | None:
        return self._spec.input_signature

    def __get__(self, instance: Any, owner: type | None = None) -> Function:
        """A method: the Function of this instance (made once per instance)."""
        if instance is None:
            return self
        key = id(instance)
        bound = self._bound.get(key)
        if bound is None or bound._instance() is not instance:
            bound = Function(self._python_function, self._spec.input_signature, self._autograph,
                             self._reduce_retracing, self._name, instance)
            self._bound[key] = bound
            _on_collect(instance, lambda: self._bound.pop(key, None))
        return bound

    def __call__(self, *args, **kwargs):
        if context.functions_run_eagerly():
            return self._call_python(list(args), kwargs)
        concrete, arguments = self._concrete_for(args, kwargs)
        return concrete._call_arguments(arguments, fitted=self._spec.input_signature is None)

    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The trace for these arguments (tensors or TensorSpecs), tracing if needed."""
        if self._spec.input_signature is not None and not args and not kwargs:
            return self._signature_trace()
        return self._concrete_for(args, kwargs, specs=True)[0]

    def experimental_get_tracing_count(self) -> int:
        return len(self._concrete)

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        """Every trace's signature, in trace order (`verbose` is TensorFlow's default listing,
        the only one there is here)."""
        return "\n\n".join(c.pretty_printed_signature() for c in self._concrete)

    def _concrete_for(self, args: tuple, kwargs: dict,
                      specs: bool = False) -> tuple[ConcreteFunction, list[Argument]]:
        """The trace for a call (`specs`: for get_concrete_function, which also takes specs)."""
        arguments = self._spec.bind(args, kwargs)
        if self._spec.input_signature is not None:
            arguments = cast_to_signature(self._spec, arguments, args, kwargs, specs)
            return self._signature_trace(), arguments
        key = arguments_key(arguments)
        found = self._traces.get(key)
        if found is None:
            found = self._compatible(arguments) or self._trace(arguments)
            self._traces[key] = found
        return found, arguments

    def _signature_trace(self) -> ConcreteFunction:
        if not self._concrete:
            specs = self._spec.input_signature
            names = [p.name for p in self._spec.parameters.values()][:len(specs)]
            arguments = [Argument(n, "POSITIONAL_OR_KEYWORD", s) for n, s in zip(names, specs)]
            self._trace(arguments)
        return self._concrete[0]

    def _compatible(self, arguments: list[Argument]) -> ConcreteFunction | None:
        for concrete in self._concrete:
            if fits(arguments, concrete._arguments):
                return concrete
        return None

    def _trace(self, arguments: list[Argument]) -> ConcreteFunction:
        if self._reduce_retracing:
            for concrete in reversed(self._concrete):
                general = relaxed(arguments, concrete._arguments)
                if general is not None:
                    arguments = general
                    break
        arguments = [Argument(a.name, a.kind, nest.map_structure(_as_spec, a.value))
                     for a in arguments]
        name = f"__inference_{self._name}_{context.uid()}"
        outermost = context.current_graph() is None
        try:
            graph = trace(self._traced_callable(), arguments, name, self._caller())
        except Exception as err:
            from savedmodel.autograph.user_code import in_user_code
            rewritten = in_user_code(err) if outermost else None
            if rewritten is None:
                raise
            raise rewritten.with_traceback(err.__traceback__) from None
        concrete = ConcreteFunction(graph, self._spec, arguments, name)
        self._concrete.append(concrete)
        return concrete

    def _traced_callable(self) -> Callable:
        """The Python function as it is traced: converted by AutoGraph unless `autograph`
        is off (or it cannot be converted, when it runs as it is)."""
        if not self._autograph:
            return self._python_function
        from savedmodel.autograph.conversion import converted
        return converted(self._python_function)

    def _caller(self) -> Callable[[Callable, list, dict], Any] | None:
        if self._instance is None:
            return None
        instance = self._instance

        def call_method(python_function: Callable, args: list, kwargs: dict):
            return python_function(instance(), *args, **kwargs)
        return call_method

    def _call_python(self, args: list, kwargs: dict):
        if self._instance is not None:
            args.insert(0, self._instance())
        return self._python_function(*args, **kwargs)


def _as_spec(value: Any) -> Any:
    spec = leaf_spec(value)
    return value if spec is None else spec


def _reference(instance: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(instance)
    except TypeError:
        return lambda: instance


def _on_collect(instance: Any, callback: Callable[[], Any]) -> None:
    try:
        weakref.finalize(instance, callback)
    except TypeError:
        pass


class ConcreteFunction:
    """One trace of a Function: a graph with a fixed input signature."""

    def __init__(self, graph: FuncGraph, spec: FunctionSpec, arguments: list[Argument],
                 name: str):
        self._graph = graph
        self._spec = spec
        self._arguments = arguments
        """The arguments it was traced with (specs for tensors), which calls must fit."""
        self._name = name
        self._compiled: tuple[Plan, FunctionLibrary] | None = None
        self._function_def: function_pb2.FunctionDef | None = None

    @property
    def graph(self) -> FuncGraph:
        return self._graph

    @property
    def name(self) -> str:
        return self._name

    @property
    def inputs(self) -> list[GraphTensor]:
        return list(self._graph.inputs)

    @property
    def outputs(self) -> list[GraphTensor]:
        return list(self._graph.outputs)

    @property
    def structured_input_signature(self) -> tuple:
        return self._graph.structured_input_signature

    @property
    def structured_outputs(self) -> Any:
        return self._graph.structured_outputs

    @property
    def captured_inputs(self) -> list:
        return [external for external, _ in self._graph.fed_captures]

    @property
    def function_def(self) -> function_pb2.FunctionDef:
        if self._function_def is None:
            self._function_def = to_function_def(self._graph, self._name)
        return self._function_def

    def __call__(self, *args, **kwargs):
        return self._call_arguments(self._spec.bind(args, kwargs))

    # ------------------------------------------------------------------ calling

    def _call_arguments(self, arguments: list[Argument], fitted: bool = False):
        """Run the trace on `arguments`. `fitted`: their structure and Python values are known
        to be the trace's (the Function found this trace by their trace key, which holds
        both), so only the tensor leaves need picking out."""
        flat = self._tensor_leaves(arguments) if fitted else self._flat_inputs(arguments)
        if context.current_graph() is not None:
            return self._call_in_graph(flat)
        values = [self._input_value(i, value) for i, value in enumerate(flat)]
        values += [_capture_value(external) for external, _ in self._graph.fed_captures]
        plan, run_context = self._plan()[0], self._run_context
        try:
            results = executor.run(plan, values, run_context)
        except executor.LIMIT_ERRORS:
            raise
        except SavedModelError as err:
            raise InvalidArgumentError(str(err)) from None
        return self._pack([EagerTensor(np.asarray(r), t.dtype)
                           for r, t in zip(results, self._graph.outputs)])

    @functools.cached_property
    def _run_context(self) -> executor.Context:
        return executor.Context(self._plan()[1], None)

    @functools.cached_property
    def _tensor_positions(self) -> list[bool]:
        """For each leaf of the traced arguments, in flatten order: is it a tensor input?"""
        return [isinstance(leaf, TensorSpec) for argument in self._arguments
                for leaf in nest.flatten(argument.value)]

    def _tensor_leaves(self, arguments: list[Argument]) -> list:
        leaves = [leaf for argument in arguments for leaf in nest.flatten(argument.value)]
        return [leaf for leaf, is_tensor in zip(leaves, self._tensor_positions) if is_tensor]

    def _flat_inputs(self, arguments: list[Argument]) -> list:
        """The tensors (or values for them) a call passes for the trace's placeholders."""
        if len(arguments) != len(self._arguments):
            raise TypeError(f"{self._name} takes {len(self._arguments)} arguments, got "
                            f"{len(arguments)}")
        flat = []
        for given, traced in zip(arguments, self._arguments):
            traced_leaves = nest.flatten(traced.value)
            given_leaves = nest.flatten(given.value)
            if len(traced_leaves) != len(given_leaves):
                raise TypeError(f"argument {given.name!r} does not have the structure the "
                                f"function was traced with: {traced.value!r}")
            for value, spec in zip(given_leaves, traced_leaves):
                if isinstance(spec, TensorSpec):
                    flat.append(value)
                elif not _same_literal(value, spec):
                    raise TypeError(f"argument {given.name!r} was traced with {spec!r}, got "
                                    f"{value!r}")
        return flat

    def _input_value(self, index: int, value: Any) -> np.ndarray:
        placeholder = self._graph.inputs[index]
        dtype = placeholder.dtype
        if isinstance(value, EagerTensor):
            if value.dtype is not dtype:
                raise InvalidArgumentError(
                    f"cannot compute {self._name} as input #{index}(zero-based) was expected to "
                    f"be a {_type_string(dtype)} tensor but is a {_type_string(value.dtype)} "
                    f"tensor [Op:{self._name}]", self._name)
            array = value._value
        else:
            array = to_array(value, dtype, f"input #{index} of {self._name}")
        if array.shape != self._input_dims[index] and not placeholder.shape.is_compatible_with(
                array.shape):
            raise InputSignatureError(
                f"Binding inputs to tf.function failed due to `Can not cast "
                f"{TensorSpec(array.shape, dtype)!r} to {TensorSpec(placeholder.shape, dtype)!r}`")
        return array

    @functools.cached_property
    def _input_dims(self) -> list[tuple | None]:
        """Each input's declared dimensions: a value of exactly these needs no further check."""
        return [t.shape.as_tuple() for t in self._graph.inputs]

    def _plan(self) -> tuple[Plan, FunctionLibrary]:
        """The graph compiled once: feeds are the inputs (parameters, then captures), fetches
        the outputs, targets the stateful ops that must run."""
        if self._compiled is None:
            graph = self._graph
            nodes = {op.name: GraphNode(op.name, op.type, op.node_def.attr,
                                        [(t.op.name, t.value_index) for t in op.inputs],
                                        [c.name for c in op.control_inputs])
                     for op in graph.get_operations()}
            op_defs = all_op_defs()
            library = FunctionLibrary(function_pb2.FunctionDefLibrary(function=graph.functions),
                                      op_defs)
            spec = GraphSpec(f"function {self._name!r}", nodes, op_defs, library)
            plan = compile_plan(spec, [(t.op.name, 0) for t in graph.inputs],
                                [(t.op.name, t.value_index) for t in graph.outputs],
                                [op.name for op in graph.control_outputs])
            self._compiled = (plan, library)
        return self._compiled

    def _pack(self, flat: list) -> Any:
        if isinstance(self._graph.structured_outputs, Tensor):
            return flat[0]
        tensors = iter(flat)
        return nest.map_structure(lambda leaf: None if leaf is None else next(tensors),
                                  self._graph.structured_outputs)

    def _call_in_graph(self, flat: list, captured: list | None = None):
        """A call node in the graph being traced, with this function in its library.

        `captured` are the tensors passed for the captures (default: the captured values,
        captured by the calling graph); saving passes the exported graph's variable handles."""
        graph = context.current_graph()
        inputs = [convert_to_tensor(v, t.dtype) for v, t in zip(flat, self._graph.inputs)]
        if captured is None:
            captured = [graph.capture(external) if isinstance(graph, FuncGraph)
                        and not isinstance(external, Tensor) else convert_to_tensor(external)
                        for external, _ in self._graph.fed_captures]
        inputs.extend(captured)
        extra = {"_collective_manager_ids": int_list([]),
                 "_read_only_resource_inputs": int_list(self._graph.read_only_resource_inputs())}
        outputs = call_node(self.function_def, self._graph.functions, inputs, self._graph.outputs,
                            self._graph.is_stateful(), extra)
        return self._pack(list(outputs))

    # ------------------------------------------------------------------ signatures

    def pretty_printed_signature(self) -> str:
        """TensorFlow's listing: parameters with their kinds and types, the output type, the
        captures (by the id of the captured value)."""
        lines = ["Input Parameters:"]
        for argument in self._arguments:
            lines.append(f"  {argument.name} ({argument.kind}): {type_text(argument.value)}")
        lines += ["Output Type:", f"  {type_text(output_spec(self.structured_outputs))}",
                  "Captures:"]
        captures = self._graph.captures
        if not captures:
            lines.append("  None")
        for external, internal in captures:
            lines.append(f"  {id(external)}: {TensorSpec(internal.shape, internal.dtype)!r}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        parameters = ", ".join(f"{a.name}: {type_text(a.value)}" for a in self._arguments)
        result = type_text(output_spec(self.structured_outputs))
        return f"<ConcreteFunction ({parameters}) -> {result} at 0x{id(self):X}>"


def call_node(function: function_pb2.FunctionDef, library: Sequence[function_pb2.FunctionDef],
              inputs: list, outputs: Sequence, stateful: bool, graph_attrs: dict | None = None
              ) -> tuple:
    """A call of `function` on `inputs` in the graph being traced, as TensorFlow calls
    functions: a (Stateful)PartitionedCall node, with `function` and the functions it calls
    (`library`) added to the graph's library. `outputs` give the results' dtypes and shapes
    (graph tensors or TensorSpecs); `graph_attrs` are extra attrs for the node."""
    context.current_graph().add_function(function, library)
    attrs = {"Tout": [t.dtype for t in outputs], "f": function.signature.name, "config": "",
             "config_proto": CONFIG_PROTO, "executor_type": ""}
    op_type = "StatefulPartitionedCall" if stateful else "PartitionedCall"
    return apply_op(op_type, [inputs], attrs, name=op_type, graph_attrs=graph_attrs,
                    output_shapes=[t.shape for t in outputs])


def _capture_value(external: Any):
    if isinstance(external, EagerTensor):
        return external._value
    handle = getattr(external, "_resource_handle", None)
    if handle is not None:
        return handle
    raise TypeError(f"cannot feed captured value {external!r}")


def _same_literal(value: Any, traced: Any) -> bool:
    return trace_key(value) == trace_key(traced)


def _type_string(dtype) -> str:
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


def type_text(value: Any) -> str:
    """A value's type as TensorFlow prints it in signatures: `TensorSpec(...)`,
    `Literal[1]`, `List[...]`, `Tuple[...]`, `Dict[['key', ...], ...]`."""
    if isinstance(value, TensorSpec):
        return repr(value)
    if isinstance(value, list):
        return "List[" + ", ".join(type_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "Tuple[" + ", ".join(type_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {type_text(v)}]" for k, v in value.items()) + "]"
    return f"Literal[{value!r}]"

