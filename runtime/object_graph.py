"""The saved object graph's methods (`model.functions`): each a RestoredFunction over its
concrete functions, which bind Python arguments to the saved input signature and run on the
model's engine. Both engines share this module, so they accept and reject the same arguments.
"""
from __future__ import annotations

import collections
from typing import NoReturn

import numpy as np

from savedmodel.runtime import structure
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.feeds import FeedError, to_input
from savedmodel.runtime.structure import TensorSpec

SIGNATURE_MAP = "signature_map"
"""The identifier of the object whose children are a model's signatures."""
_FUNCTION_KINDS = frozenset({"function", "bare_concrete_function"})


def check_object_graph(graph, where: str) -> None:
    """Every object id the object graph names must be one of its nodes (a negative id would
    otherwise count from the end), and a signature map may hold only functions."""
    nodes = graph.nodes
    for node_id, node in enumerate(nodes):
        for child in node.children:
            if not 0 <= child.node_id < len(nodes):
                _damaged(where, f"object {node_id} has child {child.local_name!r} = object "
                                f"{child.node_id}, but there are {len(nodes)} objects")
            kind = nodes[child.node_id].WhichOneof("kind")
            if node.user_object.identifier == SIGNATURE_MAP and kind not in _FUNCTION_KINDS:
                _damaged(where, f"signature {child.local_name!r} is object {child.node_id}, "
                                f"a {kind}, not a function")
    for name, function in graph.concrete_functions.items():
        for node_id in function.bound_inputs:
            if not 0 <= node_id < len(nodes):
                _damaged(where, f"concrete function {name!r} captures object {node_id}, but "
                                f"there are {len(nodes)} objects")


def _damaged(where: str, what: str) -> NoReturn:
    raise FileFormatError(f"{where}: the object graph is damaged: {what}")


def object_paths(nodes) -> dict[int, str]:
    """Dotted path of every object reachable from the root (node 0), first path found wins.
    Child ids are known to be in range (`check_object_graph`)."""
    paths: dict[int, str] = {}
    queue = collections.deque([(0, "")] if len(nodes) else [])
    seen = {0}
    while queue:
        node_id, path = queue.popleft()
        if path:
            paths[node_id] = path
        for child in nodes[node_id].children:
            if child.node_id not in seen:
                seen.add(child.node_id)
                queue.append((child.node_id, f"{path}.{child.local_name}" if path else child.local_name))
    return paths


def restored_functions(model, concrete_class: type) -> dict[str, RestoredFunction]:
    """The object graph's methods by dotted path; `concrete_class` runs their concrete
    functions on the model's engine (its `_meta_graph` holds the object graph)."""
    objects = model._object_graph
    functions = {}
    for node_id, path in object_paths(objects.nodes).items():
        node = objects.nodes[node_id]
        if node.HasField("function") and node.function.concrete_functions:
            functions[path] = RestoredFunction(path, [concrete_class(model, name) for name in
                                                      node.function.concrete_functions])
    return functions


class RestoredFunction:
    """A method of the saved object graph: dispatches a call to the first of its concrete
    functions whose input signature accepts the arguments."""

    def __init__(self, path: str, concrete: list):
        self.path = path
        self._concrete = concrete

    def __call__(self, *args, **kwargs):
        problems = []
        for concrete in self._concrete:
            try:
                flat = concrete.bind(args, kwargs)
            except FeedError as err:
                problems.append(str(err))
                continue
            return concrete.call(flat)
        raise FeedError(f"function {self.path!r}: no saved signature accepts these arguments: "
                        + " | ".join(problems))

    @property
    def concrete_functions(self) -> list:
        return list(self._concrete)


class ConcreteFunction:
    def __init__(self, model, name: str):
        saved = model._object_graph.concrete_functions.get(name)
        if saved is None:
            raise FileFormatError(f"the object graph has no concrete function {name!r}")
        self.name = name
        self._model = model
        where = f"concrete function {name!r}"
        self.args, self.kwargs = _split_signature(structure.decode(saved.canonicalized_input_signature, where),
                                                   where)
        self.output_structure = structure.decode(saved.output_signature, where)
        self._bound = list(saved.bound_inputs)
        self._captures: list | None = None

    def bind(self, args: tuple, kwargs: dict) -> list:
        """The flat tensor inputs for a call, or FeedError if the arguments do not fit."""
        if len(args) > len(self.args):
            raise FeedError(f"{self.name}: takes {len(self.args)} positional arguments, got {len(args)}")
        positional = list(args)
        by_name = dict(kwargs)
        for spec in self.args[len(args):]:
            name = spec.name if isinstance(spec, TensorSpec) else None
            if name not in by_name:
                raise FeedError(f"{self.name}: missing argument {name or len(positional)!r}")
            positional.append(by_name.pop(name))
        for key in self.kwargs:
            if key not in by_name:
                raise FeedError(f"{self.name}: missing keyword argument {key!r}")
        if set(by_name) - set(self.kwargs):
            raise FeedError(f"{self.name}: unexpected arguments {sorted(set(by_name) - set(self.kwargs))}")
        flat = []
        flatten_args(self.args, tuple(positional), flat, self.name)
        flatten_args(self.kwargs, {k: by_name[k] for k in self.kwargs}, flat, self.name)
        return flat

    def call(self, flat: list):
        if self._captures is None:  # variables and constants keep their identity: resolve once
            self._captures = [self._model._capture(node_id, self.name) for node_id in self._bound]
        with np.errstate(all="ignore"):
            outputs = self._model._context.call(self.name, flat + self._captures)
        return structure.pack_tensors(self.output_structure, [np.asarray(o) for o in outputs],
                                      f"concrete function {self.name!r}")


def _split_signature(decoded, where: str) -> tuple[tuple, dict]:
    if (isinstance(decoded, tuple) and len(decoded) == 2 and isinstance(decoded[0], (tuple, list))
            and isinstance(decoded[1], dict)):
        return tuple(decoded[0]), decoded[1]
    raise FileFormatError(f"{where}: canonicalized_input_signature is not an (args, kwargs) pair")


def flatten_args(spec, value, out: list, where: str) -> None:
    if isinstance(spec, TensorSpec):
        out.append(to_input(value, spec.dtype, spec.shape, f"{where}: argument {spec.name!r}"))
    elif isinstance(spec, structure.COMPOSITE_SPECS):
        what = f"{where}: argument"
        components = spec.unpack(value, what)
        for component_spec, component in zip(spec.component_specs(), components):
            out.append(to_input(component, component_spec.dtype, component_spec.shape, what))
    elif isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise FeedError(f"{where}: expected a dict with keys {sorted(spec)}")
        for key in sorted(spec):
            flatten_args(spec[key], value[key], out, where)
    elif isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise FeedError(f"{where}: expected a sequence of {len(spec)} items")
        for item_spec, item in zip(spec, value):
            flatten_args(item_spec, item, out, where)
    elif spec != value:
        raise FeedError(f"{where}: expected the Python value {spec!r}, got {value!r}")
