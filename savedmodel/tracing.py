"""Tracing: running a Python callable on placeholders to record its ops in a FuncGraph.

`trace(python_function, arguments, name)` is the core sm.function uses: it makes a
`FuncGraph`, a Placeholder per tensor in the arguments (named after the parameter, with
`_user_specified_name`), calls the function with those in place of the tensors, and turns what
it returns into the graph's outputs (one `Identity` node per tensor, each converted and wrapped
in turn, waiting on a `NoOp` that waits on every stateful op). Values from outside that the
function uses are captured on the way (see `graph.FuncGraph`).
`trace_control_flow(python_function, name, signature)` does the same for a cond branch or a
loop's condition and body, inside the graph being traced.
`function_def.to_function_def(graph, name)` then gives the library function.

The rest of the module is how arguments are bound to parameters (`FunctionSpec`) and how a call
is summarised into the key that decides whether an existing trace can be reused
(`trace_key`): tensors (and numpy values) by dtype and shape, Python values by value, variables
and other objects by identity.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from savedmodel import context, nest
from savedmodel.convert import to_array
from savedmodel.errors import InputSignatureError
from savedmodel.graph import FuncGraph
from savedmodel.op_builder import apply_op, apply_op_node, convert_to_tensor
from savedmodel.runtime import dtypes
from savedmodel.shapes import TensorShape
from savedmodel.tensor import EagerTensor, GraphTensor, Tensor
from savedmodel.tensor_spec import TensorSpec

POSITIONAL_ONLY = "POSITIONAL_ONLY"
POSITIONAL_OR_KEYWORD = "POSITIONAL_OR_KEYWORD"
KEYWORD_ONLY = "KEYWORD_ONLY"
_LITERALS = (type(None), bool, int, float, complex, str, bytes)


@dataclass(frozen=True)
class Argument:
    """One bound argument: the parameter's name, its kind as TensorFlow prints it, the value."""

    name: str
    kind: str
    value: Any


class FunctionSpec:
    """How calls bind to a Python function's parameters (without `self` for methods).

    Binding gives TensorFlow's canonical form: every parameter with its value (defaults
    applied); `*args` become `args_0`, `args_1`, ... and the parameters before them
    positional-only; `**kwargs` entries become keyword-only parameters."""

    def __init__(self, python_function: Callable, drop_first: bool = False,
                 input_signature: Sequence | None = None):
        signature = inspect.signature(python_function)
        parameters = list(signature.parameters.values())[1 if drop_first else 0:]
        self.signature = signature.replace(parameters=parameters)
        self.parameters = {p.name: p for p in parameters}
        self.has_varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
        self.input_signature = None if input_signature is None else tuple(input_signature)
        self._simple = [p.name for p in parameters
                        if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
        if len(self._simple) != len(parameters):
            self._simple = None
        if self.input_signature is not None:
            _check_signature(self.input_signature)

    def bind(self, args: tuple, kwargs: dict) -> list[Argument]:
        simple = self._simple
        if simple is not None and not kwargs and len(args) == len(simple):
            return [Argument(name, POSITIONAL_OR_KEYWORD, v) for name, v in zip(simple, args)]
        bound = bind_or_raise(self.signature, args, kwargs)
        out = []
        for name, value in bound.arguments.items():
            parameter = self.parameters[name]
            if parameter.kind is parameter.VAR_POSITIONAL:
                out.extend(Argument(f"{name}_{i}", POSITIONAL_ONLY, v) for i, v in enumerate(value))
            elif parameter.kind is parameter.VAR_KEYWORD:
                out.extend(Argument(k, KEYWORD_ONLY, v) for k, v in value.items())
            elif parameter.kind is parameter.POSITIONAL_OR_KEYWORD and self.has_varargs:
                out.append(Argument(name, POSITIONAL_ONLY, value))
            else:
                out.append(Argument(name, parameter.kind.name, value))
        return out


def bind_or_raise(signature: inspect.Signature, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """`args` and `kwargs` bound to `signature`, defaults applied; TensorFlow's error if they
    do not fit."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"Binding inputs to tf.function failed due to `{err}`. Received "
                        f"args: {args!r} and kwargs: {kwargs!r} for signature: "
                        f"{signature}.") from None
    bound.apply_defaults()
    return bound


def _check_signature(signature: Sequence) -> None:
    for leaf in nest.flatten(list(signature)):
        if not isinstance(leaf, TensorSpec):
            raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec "
                            f"objects, got invalid args {leaf!r}")


# ----------------------------------------------------------------------------- trace keys

def trace_key(value: Any) -> Any:
    """What about a value decides which trace serves it (hashable)."""
    if type(value) is EagerTensor:  # the common case, without building a TensorShape
        return ("T", value._dtype.enum, value._value.shape)
    if isinstance(value, (Tensor, TensorSpec)):
        return ("T", value.dtype.enum, value.shape.as_tuple())
    if isinstance(value, (np.ndarray, np.generic)):
        return ("T", dtypes.from_numpy(value.dtype).enum, value.shape)
    if isinstance(value, list):
        return ("L", tuple(trace_key(v) for v in value))
    if isinstance(value, tuple):
        return (type(value), tuple(trace_key(v) for v in value))
    if isinstance(value, dict):
        return ("D", tuple((k, trace_key(value[k])) for k in nest._sorted_keys(value)))
    if isinstance(value, _LITERALS):
        return ("V", value)
    return ("O", id(value))


def arguments_key(arguments: Sequence[Argument]) -> tuple:
    return tuple((a.name, trace_key(a.value)) for a in arguments)


def leaf_spec(value: Any) -> TensorSpec | None:
    """The spec of a value that a trace takes as a tensor, else None."""
    if isinstance(value, TensorSpec):
        return value
    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        return TensorSpec(value.shape, dtypes.from_numpy(value.dtype))
    return None


def relaxed(arguments: Sequence[Argument], previous: Sequence[Argument]) -> list[Argument] | None:
    """`arguments` with every tensor generalized to fit `previous` too (what reduce_retracing
    traces), or None when they differ in more than tensor shapes."""
    out = []
    for new, old in zip(arguments, previous):
        if new.name != old.name:
            return None
        value = _relaxed_value(new.value, old.value)
        if value is _MISMATCH:
            return None
        out.append(Argument(new.name, new.kind, value))
    return out if len(arguments) == len(previous) else None


_MISMATCH = object()


def _relaxed_value(new: Any, old: Any) -> Any:
    new_spec, old_spec = leaf_spec(new), leaf_spec(old)
    if new_spec is not None or old_spec is not None:
        if new_spec is None or old_spec is None:
            return _MISMATCH
        common = new_spec.most_specific_common_supertype(old_spec)
        return _MISMATCH if common is None else common
    if nest.is_nested(new) or nest.is_nested(old):
        if trace_key(_shapeless(new)) != trace_key(_shapeless(old)):
            return _MISMATCH
        flat = [_relaxed_value(n, o) for n, o in zip(nest.flatten(new), nest.flatten(old))]
        return _MISMATCH if any(v is _MISMATCH for v in flat) else nest.pack_sequence_as(new, flat)
    return new if trace_key(new) == trace_key(old) else _MISMATCH


def _shapeless(value: Any) -> Any:
    return nest.map_structure(lambda v: None if leaf_spec(v) is not None else v, value)


def fits(arguments: Sequence[Argument], traced: Sequence[Argument]) -> bool:
    """Whether a trace made for `traced` can run `arguments` (tensor dims it left unknown
    accept any size; everything else must be the same)."""
    if len(arguments) != len(traced):
        return False
    for new, old in zip(arguments, traced):
        if new.name != old.name or not _fits_value(new.value, old.value):
            return False
    return True


def _fits_value(new: Any, old: Any) -> bool:
    new_spec, old_spec = leaf_spec(new), leaf_spec(old)
    if old_spec is not None:
        return new_spec is not None and new_spec.is_subtype_of(old_spec)
    if new_spec is not None:
        return False
    if nest.is_nested(old):
        if trace_key(_shapeless(new)) != trace_key(_shapeless(old)):
            return False
        return all(_fits_value(n, o) for n, o in zip(nest.flatten(new), nest.flatten(old)))
    return trace_key(new) == trace_key(old)


# ----------------------------------------------------------------------------- input signature

def cast_to_signature(spec: FunctionSpec, arguments: list[Argument], args: tuple,
                      kwargs: dict, specs: bool = False) -> list[Argument]:
    """The arguments as tensors of the input signature's specs, or TensorFlow's error. With
    `specs` (get_concrete_function), a TensorSpec argument is taken as TensorFlow takes it:
    when it has the wanted spec's name and every tensor it describes fits that spec."""
    signature = spec.input_signature
    if len(arguments) != len(signature):
        raise InputSignatureError(
            f"Binding inputs to tf.function failed: the input signature has {len(signature)} "
            f"specs but the function was called with {len(arguments)} arguments. Received args: "
            f"{args!r} and kwargs: {kwargs!r}.")
    out = []
    for argument, wanted in zip(arguments, signature):
        try:
            value = _cast_value(argument.value, wanted, specs)
        except _CannotCast as err:
            listing = ", ".join(f"{a.name}: {s!r}" for a, s in zip(arguments, signature))
            raise InputSignatureError(
                f"Binding inputs to tf.function failed due to `Can not cast {err.args[0]!r} to "
                f"{err.args[1]!r}`. Received args: {args!r} and kwargs: {kwargs!r} for "
                f"signature: ({listing}).") from None
        out.append(Argument(argument.name, argument.kind, value))
    return out


class _CannotCast(Exception):
    """(the value's spec, the wanted spec)"""


def _cast_value(value: Any, wanted: Any, specs: bool) -> Any:
    if isinstance(wanted, TensorSpec) and isinstance(value, TensorSpec):
        if specs and value.name == wanted.name and value.is_subtype_of(wanted):
            return value
        raise _CannotCast(value, wanted)
    if isinstance(wanted, TensorSpec):
        tensor = value
        if not isinstance(value, Tensor):
            try:
                tensor = convert_to_tensor(value, wanted.dtype)
            except (TypeError, ValueError):
                raise _CannotCast(_spec_of(value), wanted) from None
        if not wanted.is_compatible_with(tensor):
            raise _CannotCast(TensorSpec(tensor.shape, tensor.dtype), wanted)
        return tensor
    if isinstance(wanted, (list, tuple, dict)):
        if trace_key(_shapeless(value)) != trace_key(_shapeless(wanted)):
            raise _CannotCast(value, wanted)
        flat = [_cast_value(v, w, specs) for v, w in zip(nest.flatten(value), nest.flatten(wanted))]
        return nest.pack_sequence_as(value, flat)
    raise _CannotCast(value, wanted)


def _spec_of(value: Any) -> Any:
    try:
        array = to_array(value)
    except (TypeError, ValueError):
        return value
    return TensorSpec(array.shape, dtypes.from_numpy(array.dtype))


# ----------------------------------------------------------------------------- tracing

def trace(python_function: Callable, arguments: Sequence[Argument], name: str,
          call: Callable[[Callable, list, dict], Any] | None = None) -> FuncGraph:
    """A FuncGraph of `python_function` called with `arguments`: tensors and TensorSpecs among
    them become placeholders (named after the parameter, or after the spec when it has a
    name). `call(python_function, args, kwargs)` makes the call (default: a plain call; a
    bound method passes its instance)."""
    graph = FuncGraph(name, context.current_graph())
    with context.building(graph):
        traced, structured = _placeholders(graph, arguments)
        args, kwargs = _split(traced)
        result = (call or _plain_call)(python_function, args, kwargs)
        _set_outputs(graph, result, python_function)
    graph.structured_input_signature = structured
    graph.inputs.extend(internal for _, internal in graph.fed_captures)
    return graph


def _plain_call(python_function: Callable, args: list, kwargs: dict) -> Any:
    return python_function(*args, **kwargs)


def _split(arguments: Sequence[Argument]) -> tuple[list, dict]:
    args, kwargs = [], {}
    for argument in arguments:
        if argument.kind == KEYWORD_ONLY:
            kwargs[argument.name] = argument.value
        else:
            args.append(argument.value)
    return args, kwargs


def _placeholders(graph: FuncGraph, arguments: Sequence[Argument]):
    """The arguments with placeholders for their tensors, and the structured input signature
    (args, kwargs) with specs named by path (`x`, `xs_0`, `d_a`) unless a spec has a name."""
    traced, positional, keywords = [], [], {}
    for argument in arguments:
        def to_placeholder(leaf, argument=argument):
            spec = leaf_spec(leaf)
            if spec is None:
                return leaf
            tensor = graph.placeholder(spec.dtype, spec.shape, spec.name or argument.name)
            graph.inputs.append(tensor)
            return tensor

        value = nest.map_structure(to_placeholder, argument.value)
        traced.append(Argument(argument.name, argument.kind, value))
        described = _describe(argument.value, argument.name)
        if argument.kind == KEYWORD_ONLY:
            keywords[argument.name] = described
        else:
            positional.append(described)
    return traced, (tuple(positional), keywords)


def _describe(value: Any, name: str) -> Any:
    paths = iter(nest.with_paths(value, name))

    def describe(leaf):
        path, _ = next(paths)
        spec = leaf_spec(leaf)
        return leaf if spec is None else spec.with_name(spec.name or path)
    return nest.map_structure(describe, value)


_CONVERTIBLE = (Tensor, np.ndarray, np.generic, bool, int, float, complex, str, bytes)


def _set_outputs(graph: FuncGraph, result: Any, python_function: Callable) -> None:
    """Outputs as TensorFlow makes them: each tensor (Python numbers and variables converted)
    through an `Identity`, converted and wrapped one after the other in the current scope;
    those wait on a `NoOp` that waits on the stateful ops."""
    def as_output(leaf):
        if leaf is None:
            return None
        if isinstance(leaf, _CONVERTIBLE) or hasattr(leaf, "_sm_tensor"):
            tensor = leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf)
            return apply_op("Identity", [tensor], name="Identity")[0]
        raise TypeError(
            "To be compatible with sm.function, Python functions must return zero or more "
            f"Tensors or None values; in compilation of {python_function}, found return value "
            f"of type {type(leaf).__name__}, which is not a Tensor.")

    structured = nest.map_structure(as_output, result)
    tensors = [t for t in nest.flatten(structured) if t is not None]
    if tensors and graph.control_outputs:
        barrier = apply_op_node("NoOp", (), name="NoOp")
        for op in graph.control_outputs:
            barrier.add_control_input(op)
        for tensor in tensors:
            tensor.op.add_control_input(barrier)
    graph.outputs = tensors
    graph.structured_outputs = structured


def trace_control_flow(python_function: Callable, name: str,
                       signature: Sequence[tuple[Any, Any, str | None]] = ()) -> FuncGraph:
    """The FuncGraph of a branch, loop condition or loop body, built inside the graph being
    traced: one placeholder per `(dtype, shape, name)` of `signature` (named `name`, or an
    unannotated `Placeholder`), the result converted as a function's is, and the values it
    captured appended to its inputs."""
    outer = context.current_graph()
    graph = FuncGraph(name, outer, control_flow=True)
    with context.building(graph):
        args = [graph.placeholder(dtype, TensorShape(shape), spec_name or "Placeholder",
                                  annotate=spec_name is not None)
                for dtype, shape, spec_name in signature]
        graph.inputs.extend(args)
        _set_outputs(graph, python_function(*args), python_function)
    graph.inputs.extend(internal for _, internal in graph.captures)
    return graph


def output_spec(structured: Any) -> Any:
    """The structure of a trace's outputs with specs for tensors."""
    return nest.map_structure(
        lambda t: TensorSpec(t.shape, t.dtype) if isinstance(t, GraphTensor) else t, structured)
