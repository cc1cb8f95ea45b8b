"""The functions of a loaded SavedModel: restored concrete functions and the polymorphic
functions (a module's `sm.function` methods) that dispatch among them.

A `RestoredConcreteFunction` is one saved trace: a FunctionDef of the model's library, the
structure of its arguments and results (the object graph's SavedConcreteFunction) and the
objects it captures (restored variables and constants). Calling it converts the arguments as a
ConcreteFunction call does (numpy values are cast, a tensor must have the declared dtype),
runs the function on the loaded model's runtime, where the restored variables live, and
returns sm tensors in the saved result structure.

A `RestoredFunction` is what TensorFlow returns for a saved `tf.function`: a call binds the
arguments to the saved Python signature (defaults applied), then takes the first concrete
function whose saved input signature accepts them: first without converting anything (a
tensor of the right dtype and a compatible shape, an equal Python value), then converting
Python values (never numpy values of another dtype) as TensorFlow does. Nothing matching is
TensorFlow's "Could not find matching concrete function" error, listing every option.

Both are Trackable with no children and no saved values (as TensorFlow's restored functions
appear in a checkpoint of a loaded object); the saver reads them through
`concrete_functions`, `function_def`, `library_functions`, `saved_signature`, `saved_bare`,
`captured_inputs` and `function_spec`. Graphs and new SavedModels call a restored concrete
function by a fresh name (see function_names); the runtime runs it by the file's name.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from savedmodel import context
from savedmodel.convert import cast_array
from savedmodel.errors import InputSignatureError, InvalidArgumentError
from savedmodel.graph import FuncGraph
from savedmodel.op_builder import convert_to_tensor
from savedmodel.polymorphic_function import call_node, type_text
from savedmodel.protos import function_pb2, op_def_pb2, saved_object_graph_pb2
from savedmodel.runtime import structure
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.executor import LIMIT_ERRORS
from savedmodel.runtime.loader import Model
from savedmodel.saved_model.function_names import RenamedLibrary
from savedmodel.saved_model.loaded_arguments import (
    bound_leaves,
    cast_to_spec,
    describe_arguments,
    equal_literal,
    fits_spec,
    is_literal,
    saved_input_signature,
    saved_parameters,
    sm_structure,
    spec_name,
    split_signature,
    tensor_specs,
    tensor_value,
)
from savedmodel.tensor import EagerTensor, Tensor
from savedmodel.tensor_spec import TensorSpec
from savedmodel.tracing import bind_or_raise
from savedmodel.trackable import Trackable
from savedmodel.variables import Variable

_FUNCTION_ATTRS = ("f", "then_branch", "else_branch", "cond", "body", "branches")


class RestoredConcreteFunction(Trackable):
    """One saved trace of a function, callable eagerly (see the module docstring)."""

    def __init__(self, model: Model, library: RenamedLibrary, name: str,
                 captures: list[tuple[Any, Callable[[], Any]]],
                 positional_names: list[str] | None = None, positional_keywords: Sequence[str] = (),
                 bare: saved_object_graph_pb2.SavedBareConcreteFunction | None = None):
        """`name`: the function's name in the SavedModel (what the runtime runs); `library`
        gives it and the functions it calls their fresh names (see function_names)."""
        saved = model.meta_graph.object_graph_def.concrete_functions.get(name)
        if saved is None or name not in model.library.functions:
            raise FileFormatError(f"{model.export_dir}: the object graph names concrete function "
                                  f"{name!r}, which the SavedModel does not define")
        where = f"concrete function {name!r}"
        args, kwargs = split_signature(structure.decode(saved.canonicalized_input_signature, where), where)
        self._model = model
        self._library = library
        self._name = name
        self._saved = saved
        self._bare = bare
        self._args = tuple(sm_structure(a) for a in args)
        self._kwargs = {k: sm_structure(v) for k, v in kwargs.items()}
        self._outputs = sm_structure(structure.decode(saved.output_signature, where))
        _check_output_count(model, name, self._outputs)
        self._captured = [restored for restored, _ in captures]
        self._feeders = [feeder for _, feeder in captures]
        self._feeds: list | None = None
        """What the runtime is fed for each capture (a variable's storage, a constant's
        array), found on the first call: a capture the runtime cannot provide is an error
        only for the functions that use it."""
        names = list(positional_names or ())
        self._positional_names = names if len(names) == len(self._args) else [
            spec_name(spec, i) for i, spec in enumerate(self._args)]
        self._positional_keywords = [k for k in positional_keywords if k in self._kwargs]
        """Keyword arguments that may also be passed by position, in order (a signature with
        a single input takes it positionally, as in TensorFlow)."""

    @property
    def name(self) -> str:
        """The fresh name that graphs and saved models call this function by."""
        return self._library.name(self._name)

    @property
    def function_def(self) -> function_pb2.FunctionDef:
        return self._library.function_def(self._name)

    @property
    def op_defs(self) -> dict[str, op_def_pb2.OpDef]:
        """The definitions of the ops of the SavedModel this function comes from (its
        stripped_op_list), for saving it again with ops the authoring side does not build."""
        return self._model.library.op_defs

    @property
    def library_functions(self) -> list[function_pb2.FunctionDef]:
        """The FunctionDefs this function calls, directly or not (itself excluded)."""
        return [self._library.function_def(n) for n in sorted(_callees(self._model.library.functions, self._name))]

    @property
    def structured_input_signature(self) -> tuple:
        return self._args, dict(self._kwargs)

    @property
    def positional_names(self) -> list[str]:
        """The names of the positional parameters (tensors and Python values alike)."""
        return list(self._positional_names)

    @property
    def saved_signature(self) -> saved_object_graph_pb2.SavedConcreteFunction:
        """The object graph's description of this function as loaded (input and output
        structures exactly as saved, for saving again)."""
        return self._saved

    @property
    def saved_bare(self) -> saved_object_graph_pb2.SavedBareConcreteFunction | None:
        """How the object graph listed this function as a node of its own (keyword names,
        positional arguments, parameters), if it did."""
        return self._bare

    @property
    def structured_outputs(self) -> Any:
        return self._outputs

    @property
    def captured_inputs(self) -> list:
        """The restored objects fed after the arguments: variables and constant tensors."""
        return list(self._captured)

    def __call__(self, *args, **kwargs):
        positional, keywords = self.bind(args, kwargs)
        flat: list = []
        for i, (spec, value) in enumerate(bound_leaves(self._args, positional) + bound_leaves(self._kwargs, keywords)):
            if isinstance(spec, TensorSpec):
                flat.append(self._converted(value, spec, len(flat)))
            elif not equal_literal(value, spec):
                raise TypeError(f"{self._name}: argument {i} was traced with the Python value "
                                f"{spec!r}, got {value!r}")
        return self.run(flat)

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The call as (positional arguments, keyword arguments) of the saved signature;
        positional parameters may be given by name, and ones traced with a Python value may
        be left out."""
        extra = args[len(self._args):]
        if len(extra) > len(self._positional_keywords) or any(
                k in kwargs for k in self._positional_keywords[:len(extra)]):
            raise TypeError(f"{self._name} takes {len(self._args) + len(self._positional_keywords)} "
                            f"positional arguments, got {len(args)}"
                            + (f" and keyword {sorted(kwargs)}" if kwargs else ""))
        args, kwargs = args[:len(self._args)], {**kwargs, **dict(zip(self._positional_keywords, extra))}
        positional, by_name = list(args), dict(kwargs)
        for name, spec in zip(self._positional_names[len(args):], self._args[len(args):]):
            if name in by_name:
                positional.append(by_name.pop(name))
            elif is_literal(spec):
                positional.append(spec)
            else:
                raise TypeError(f"{self._name} missing required argument {name!r}")
        missing = sorted(k for k in self._kwargs if k not in by_name and not is_literal(self._kwargs[k]))
        unexpected = sorted(set(by_name) - set(self._kwargs))
        if missing or unexpected:
            raise TypeError(f"{self._name}: " + "; ".join(filter(None, [
                f"missing keyword arguments {missing}" if missing else "",
                f"unexpected keyword arguments {unexpected}" if unexpected else ""])))
        keywords = {k: by_name.get(k, spec) for k, spec in self._kwargs.items()}
        return tuple(positional), keywords

    def match(self, positional: tuple, keywords: dict, convert: bool) -> list | None:
        """The flat arrays for a call whose arguments fit the saved input signature, or None
        (see the module docstring for what fits)."""
        flat: list = []
        if not fits_spec(self._args, positional, convert, flat) or not fits_spec(self._kwargs, keywords, convert, flat):
            return None
        return flat

    def run(self, flat: list) -> Any:
        """Run on flat input arrays (the arguments' tensors in order); results as sm tensors.
        While a function is being traced, add a call of this function to its graph instead."""
        if context.current_graph() is not None:
            return self._call_in_graph(flat)
        if self._feeds is None:
            self._feeds = [feeder() for feeder in self._feeders]
        try:
            outputs = self._model.call_function(self._name, flat + self._feeds)
        except LIMIT_ERRORS:
            raise
        except SavedModelError as err:
            raise InvalidArgumentError(str(err)) from None
        tensors = iter([EagerTensor(np.asarray(value), spec.dtype)
                        for value, spec in zip(outputs, tensor_specs(self._outputs))])
        return _pack(self._outputs, tensors)

    def _call_in_graph(self, flat: list, captured: list | None = None) -> Any:
        """A call node in the graph being traced, with this function and the functions it
        calls added to that graph's library. `captured` are the tensors passed for the
        captures (default: the restored variables and constants, captured by the calling
        graph), as for an authored ConcreteFunction."""
        inputs = [convert_to_tensor(value, spec.dtype)
                  for value, spec in zip(flat, tensor_specs((self._args, self._kwargs)))]
        if captured is None:
            self._check_capturable()
            captured = capture_all(self._captured)
        stateful = any(isinstance(c, Variable) for c in self._captured) or self._is_stateful()
        outputs = call_node(self.function_def, self.library_functions, inputs + list(captured),
                            tensor_specs(self._outputs), stateful)
        return _pack(self._outputs, iter(outputs))

    def _check_capturable(self) -> None:
        """A traced graph can capture variables and tensors only: a restored function that
        captures another resource (a lookup table) runs eagerly, but cannot be called while
        a function is being traced."""
        for restored in self._captured:
            if not isinstance(restored, (Variable, Tensor)):
                raise NotImplementedError(
                    f"{self._name}: captures {restored!r}, a resource of the loaded SavedModel "
                    "(such as a lookup table) that a traced function cannot capture; call this "
                    "function outside sm.function")

    def _is_stateful(self) -> bool:
        op_defs = self._model.library.op_defs
        functions = [self.function_def, *self.library_functions]
        return any(op_defs[node.op].is_stateful for function in functions
                   for node in function.node_def if node.op in op_defs)

    def _converted(self, value: Any, spec: TensorSpec, index: int) -> Any:
        if isinstance(value, (Tensor, Variable)):
            if value.dtype is not spec.dtype:
                raise InvalidArgumentError(
                    f"cannot compute {self._name} as input #{index}(zero-based) was expected to "
                    f"be a {spec.dtype.name} tensor but is a {value.dtype.name} tensor", self._name)
            array = tensor_value(value)
        else:
            array = cast_array(value, spec.dtype, f"input #{index} of {self._name}")
        if not spec.shape.is_compatible_with(array.shape):
            raise InputSignatureError(
                f"Binding inputs to tf.function failed due to `Can not cast "
                f"{TensorSpec(array.shape, spec.dtype)!r} to {spec!r}` ({self._name})")
        return array

    # ------------------------------------------------------------------ printing

    def pretty_printed_signature(self) -> str:
        lines = ["Input Parameters:"]
        lines += [f"  {name} (POSITIONAL_OR_KEYWORD): {type_text(spec)}"
                  for name, spec in zip(self._positional_names, self._args)]
        lines += [f"  {name} (KEYWORD_ONLY): {type_text(spec)}"
                  for name, spec in sorted(self._kwargs.items())]
        lines += ["Output Type:", f"  {type_text(self._outputs)}", "Captures:"]
        lines += [f"  {id(c)}: {_capture_spec(c)!r}" for c in self._captured] or ["  None"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"ConcreteFunction {self.pretty_printed_signature()}"

    def __repr__(self) -> str:
        parameters = [f"{n}: {type_text(s)}" for n, s in zip(self._positional_names, self._args)]
        if self._kwargs:
            parameters.append("*")
            parameters += [f"{k}: {type_text(v)}" for k, v in sorted(self._kwargs.items())]
        return (f"<ConcreteFunction ({', '.join(parameters)}) -> {type_text(self._outputs)} "
                f"at 0x{id(self):X}>")


class RestoredFunction(Trackable):
    """A saved `sm.function`/`tf.function`: dispatches each call to a concrete function."""

    def __init__(self, name: str, concrete_functions: list[RestoredConcreteFunction],
                 function_spec: saved_object_graph_pb2.FunctionSpec | None = None):
        self._name = name
        self._concrete = list(concrete_functions)
        self._spec = function_spec
        self._signature = saved_parameters(function_spec, name)
        self._input_signature = saved_input_signature(function_spec, name)

    @property
    def concrete_functions(self) -> list[RestoredConcreteFunction]:
        return list(self._concrete)

    @property
    def function_spec(self) -> saved_object_graph_pb2.FunctionSpec | None:
        """The saved FunctionSpec (Python parameters, input signature), for saving again."""
        return self._spec

    @property
    def input_signature(self) -> tuple | None:
        return self._input_signature

    def __call__(self, *args, **kwargs):
        concrete, flat = self._select(args, kwargs, cast=True)
        return concrete.run(flat)

    def get_concrete_function(self, *args, **kwargs) -> RestoredConcreteFunction:
        """The saved trace these arguments (tensors, TensorSpecs or Python values) select
        (loaded functions cannot trace new ones); with an input signature, no arguments
        select its trace."""
        if not args and not kwargs and self.input_signature is not None and self._concrete:
            return self._concrete[0]
        return self._select(args, kwargs, cast=False)[0]

    def _select(self, args: tuple, kwargs: dict, cast: bool) -> tuple[RestoredConcreteFunction, list]:
        """The first concrete function that accepts the call without converting anything,
        else the first that accepts it with conversions; with the flat tensors for it."""
        if self._signature is None:
            positional, keywords = args, kwargs
            candidates = [(c, *bound) for c in self._concrete for bound in [_bound(c, args, kwargs)] if bound]
        else:
            positional, keywords = self._canonical(args, kwargs)
            signature = self.input_signature
            if cast and signature is not None:
                positional = tuple(cast_to_spec(v, s, self._name, args, kwargs)
                                   for v, s in zip(positional, signature)) + positional[len(signature):]
            candidates = [(c, positional, keywords) for c in self._concrete]
        for convert in (False, True):
            for concrete, bound_args, bound_kwargs in candidates:
                flat = concrete.match(bound_args, bound_kwargs, convert)
                if flat is not None:
                    return concrete, flat
        raise ValueError(self._no_match(positional, keywords))

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        return "\n\n".join(c.pretty_printed_signature() for c in self._concrete)

    def _canonical(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Arguments bound to the saved Python parameters, as the concrete functions' input
        signatures list them (defaults applied)."""
        bound = bind_or_raise(self._signature, args, kwargs)
        positional, keywords = [], {}
        for name, parameter in self._signature.parameters.items():
            value = bound.arguments[name]
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                positional.extend(value)
            elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
                keywords.update(value)
            elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
                keywords[name] = value
            else:
                positional.append(value)
        return tuple(positional), keywords

    def _no_match(self, positional: tuple, keywords: dict) -> str:
        options = "\n\n".join(
            f"Option {i}:\n{describe_arguments(*c.structured_input_signature)}"
            for i, c in enumerate(self._concrete, 1))
        return ("Could not find matching concrete function to call loaded from the SavedModel. "
                f"Got:\n{describe_arguments(positional, keywords)}\n\n Expected these arguments "
                f"to match one of the following {len(self._concrete)} option(s):\n\n{options}")

    def __repr__(self) -> str:
        return f"<RestoredFunction {self._name!r} with {len(self._concrete)} concrete functions>"


# ----------------------------------------------------------------------------- helpers

def capture_all(captured: list) -> list:
    """What the graph being traced passes for a function's captures: a variable's handle,
    captured by the graph, and an eager tensor as a tensor of the graph."""
    graph = context.current_graph()
    return [graph.capture(c) if isinstance(graph, FuncGraph) and isinstance(c, Variable)
            else convert_to_tensor(c) for c in captured]


def _pack(spec: Any, tensors: Iterator[EagerTensor]) -> Any:
    """The result structure with each TensorSpec replaced by the next tensor (dicts in sorted
    key order, as TensorFlow flattens them)."""
    if isinstance(spec, TensorSpec):
        return next(tensors)
    if isinstance(spec, dict):
        packed = {key: _pack(spec[key], tensors) for key in sorted(spec)}
        return {key: packed[key] for key in spec}
    if isinstance(spec, (list, tuple)):
        return type(spec)(_pack(item, tensors) for item in spec)
    if isinstance(spec, structure.NamedTuple):
        return {name: _pack(item, tensors) for name, item in spec.fields}
    return spec


def _check_output_count(model: Model, name: str, outputs: Any) -> None:
    """The saved output structure must hold one TensorSpec per output of the FunctionDef, or
    packing the results would run out of tensors or drop some."""
    declared = len(tensor_specs(outputs))
    actual = len(model.library.functions[name].signature.output_arg)
    if declared != actual:
        raise FileFormatError(f"{model.export_dir}: concrete function {name!r}: the object graph's "
                              f"output signature holds {declared} tensors, the function returns {actual}")


def _capture_spec(captured: Any) -> TensorSpec:
    if isinstance(captured, Variable):
        return TensorSpec((), "resource")
    return TensorSpec(captured.shape, captured.dtype)


def _bound(concrete: RestoredConcreteFunction, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    try:
        return concrete.bind(args, kwargs)
    except TypeError:
        return None


def _callees(functions: Mapping[str, function_pb2.FunctionDef], name: str) -> set[str]:
    """Names of the library functions `name` calls, directly or through others."""
    return callees(functions, functions[name].node_def) - {name}


def callees(functions: Mapping[str, function_pb2.FunctionDef], nodes: Iterable) -> set[str]:
    """Names of the library functions that NodeDefs `nodes` call, directly or not."""
    found: set[str] = set()
    pending = list(nodes)
    while pending:
        for callee in _called_names(pending.pop()):
            if callee in functions and callee not in found:
                found.add(callee)
                pending.extend(functions[callee].node_def)
    return found


def _called_names(node) -> list[str]:
    names = [node.op]
    for key in _FUNCTION_ATTRS:
        attr = node.attr.get(key)
        if attr is not None:
            names += [attr.func.name] + [f.name for f in attr.list.func]
    return names
