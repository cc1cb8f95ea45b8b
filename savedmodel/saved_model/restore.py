"""Rebuilding the saved object tree of a loaded SavedModel, from data only.

Every node of the SavedObjectGraph becomes an object: user objects become `RestoredObject`s
(list, dict and tuple wrappers become tracked lists, dicts and tuples), variables
`RestoredVariable`s over the runtime's restored variables, functions `RestoredFunction`s,
bare concrete functions `RestoredConcreteFunction`s, constants sm tensors, the signature map
a `SignatureMap`. Children are then attached under their local names, which is what makes
`loaded.inner.v`, `loaded.items[0]` and `loaded.signatures["serving_default"]` work. The saved
Python class of a user object is never looked up, imported or run.

A SavedModel without an object graph (a TensorFlow 1 export) gives an object with
`signatures` (through the SignatureDefs) and `variables` (its resource variables), as
TensorFlow's loader does.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from savedmodel.runtime.dtypes import from_enum
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.loader import Model
from savedmodel.saved_model.assets import Asset
from savedmodel.saved_model.function_names import RenamedLibrary
from savedmodel.saved_model.loaded_arguments import positional_names
from savedmodel.saved_model.loaded_functions import (
    RestoredConcreteFunction,
    RestoredFunction,
)
from savedmodel.saved_model.loaded_objects import (
    CallableRestoredObject,
    RestoredObject,
    RestoredVariable,
    SignatureDefFunction,
)
from savedmodel.saved_model.signatures import SignatureMap
from savedmodel.tensor import EagerTensor
from savedmodel.trackable import TrackedDict, TrackedList, TrackedTuple

_CONTAINERS = {"trackable_list_wrapper": TrackedList, "trackable_dict_wrapper": TrackedDict}
_FROM_CHILDREN = {
    "trackable_tuple_wrapper": lambda children: TrackedTuple(
        child for name, child in sorted((int(n), c) for n, c in children if n.isdigit())),
    "signature_map": lambda children: SignatureMap(dict(children)),
}
"""Immutable objects, made from their children once those exist."""


def restore(model: Model) -> Any:
    """The root object of `model`'s saved object tree."""
    variables: dict[str, RestoredVariable] = {}
    if model.meta_graph.object_graph_def.nodes:
        root = _ObjectTree(model).build()
    else:
        root = RestoredObject()
        variables = _resource_variables(model)
        root.variables = TrackedList(variables.values())
    if not isinstance(getattr(root, "signatures", None), SignatureMap):
        root.signatures = SignatureMap({name: SignatureDefFunction(signature, model, variables)
                                        for name, signature in model.signatures.items()})
    info = model.meta_graph.meta_info_def
    if info.tensorflow_version:
        root.tensorflow_version = info.tensorflow_version
        root.tensorflow_git_version = info.tensorflow_git_version
    return root


class _ObjectTree:
    def __init__(self, model: Model):
        self._model = model
        self._nodes = model.meta_graph.object_graph_def.nodes
        self._objects: dict[int, Any] = {}
        self._concrete: dict[str, RestoredConcreteFunction] = {}
        self._library = RenamedLibrary(model.library.functions)
        self._paths = model.object_paths()
        self._building: set[int] = set()

    def build(self) -> Any:
        kinds = [node.WhichOneof("kind") for node in self._nodes]
        for node_id, kind in enumerate(kinds):
            if kind not in ("function", "bare_concrete_function") and not self._from_children(node_id):
                self._objects[node_id] = self._make(node_id, kind)
        self._make_concrete_functions(kinds)
        for node_id, kind in enumerate(kinds):
            if kind == "function":
                self._objects[node_id] = self._function(node_id)
            elif kind == "bare_concrete_function":
                name = self._nodes[node_id].bare_concrete_function.concrete_function_name
                self._objects[node_id] = self._concrete[name]
        for node_id in range(len(self._nodes)):
            self._object(node_id)
        for node_id in range(len(self._nodes)):
            self._attach_children(node_id)
        return self._objects[0]

    def _corrupt(self, what: str) -> None:
        raise FileFormatError(f"{self._model.export_dir}: the object graph is damaged: {what}")

    def _from_children(self, node_id: int) -> Callable[[list], Any] | None:
        node = self._nodes[node_id]
        return _FROM_CHILDREN.get(node.user_object.identifier) if node.HasField("user_object") else None

    def _object(self, node_id: int) -> Any:
        """The object of a node; tuples and signature maps are made from their children when
        first needed."""
        found = self._objects.get(node_id)
        make = self._from_children(node_id)
        if found is None and make is not None:
            if node_id in self._building:
                self._corrupt(f"object {node_id} contains itself")
            self._building.add(node_id)
            found = self._objects[node_id] = make([(c.local_name, self._object(c.node_id))
                                                   for c in self._nodes[node_id].children])
        return found

    def _make(self, node_id: int, kind: str | None) -> Any:
        node = self._nodes[node_id]
        if kind == "user_object":
            if any(child.local_name == "__call__" for child in node.children):
                return CallableRestoredObject()
            return _CONTAINERS.get(node.user_object.identifier, RestoredObject)()
        if kind == "variable":
            storage = self._model.object_variable(node_id)
            if storage is None:
                raise FileFormatError(f"{self._model.export_dir}: variable object {node_id} "
                                      f"({node.variable.name!r}) was not restored")
            return RestoredVariable.from_saved(storage, node.variable)
        if kind == "constant":
            graph_node = self._graph_node(node.constant.operation, node_id)
            value = self._model.object_value(node_id, f"constant object {node_id}")
            return EagerTensor(np.asarray(value), from_enum(graph_node.attr["dtype"].type))
        if kind == "asset":
            return Asset(self._asset_path(node.asset.asset_file_def_index, node_id))
        return RestoredObject()

    def _graph_node(self, name: str, node_id: int):
        for graph_node in self._model.meta_graph.graph_def.node:
            if graph_node.name == name:
                return graph_node
        raise FileFormatError(f"{self._model.export_dir}: constant object {node_id} names "
                              f"operation {name!r}, which the graph does not have")

    def _asset_path(self, index: int, node_id: int) -> Path:
        paths = self._model.asset_paths()
        if not 0 <= index < len(paths):
            raise FileFormatError(f"{self._model.export_dir}: asset object {node_id} refers to "
                                  f"asset_file_def {index}, which does not exist")
        return paths[index]

    def _make_concrete_functions(self, kinds: list[str | None]) -> None:
        """One restored concrete function per saved one that a node names: a Function's
        traces take its parameter names; a bare one may take its first
        `allowed_positional_arguments` keywords by position (a single-input signature)."""
        names: dict[str, list[str] | None] = {}
        positional: dict[str, list[str]] = {}
        bare_nodes: dict[str, Any] = {}
        for node_id, kind in enumerate(kinds):
            node = self._nodes[node_id]
            if kind == "function":
                spec = node.function.function_spec if node.function.HasField("function_spec") else None
                for name in node.function.concrete_functions:
                    names[name] = positional_names(spec, self._path(node_id))
            elif kind == "bare_concrete_function":
                bare = node.bare_concrete_function
                names.setdefault(bare.concrete_function_name, None)
                bare_nodes[bare.concrete_function_name] = bare
                positional[bare.concrete_function_name] = list(
                    bare.argument_keywords)[:max(0, bare.allowed_positional_arguments)]
        concrete_functions = self._model.meta_graph.object_graph_def.concrete_functions
        for name, parameter_names in names.items():
            saved = concrete_functions.get(name)
            captures = [(self._captured(i), self._feeder(i, name))
                        for i in (saved.bound_inputs if saved is not None else ())]
            self._concrete[name] = RestoredConcreteFunction(
                self._model, self._library, name, captures, parameter_names, positional.get(name, []),
                bare_nodes.get(name))

    def _function(self, node_id: int) -> RestoredFunction:
        saved = self._nodes[node_id].function
        spec = saved.function_spec if saved.HasField("function_spec") else None
        return RestoredFunction(self._path(node_id), [self._concrete[name] for name in saved.concrete_functions],
                                spec)

    def _path(self, node_id: int) -> str:
        return self._paths.get(node_id, "root" if node_id == 0 else f"object {node_id}")

    def _captured(self, node_id: int) -> Any:
        """What a function captures from object `node_id`: a variable, a constant tensor, an
        asset's path tensor."""
        restored = self._objects.get(node_id)
        return restored.asset_path if isinstance(restored, Asset) else restored

    def _feeder(self, node_id: int, function: str) -> Callable[[], Any]:
        restored = self._objects.get(node_id)
        if isinstance(restored, Asset):
            return lambda: restored.asset_path.numpy()
        return lambda: self._model.object_value(node_id, f"concrete function {function!r}")

    def _attach_children(self, node_id: int) -> None:
        parent = self._objects[node_id]
        children = [(c.local_name, self._object(c.node_id)) for c in self._nodes[node_id].children]
        if isinstance(parent, TrackedList):
            for _, child in sorted((int(n), c) for n, c in children if n.isdigit()):
                parent.append(child)
        elif isinstance(parent, TrackedDict):
            for name, child in children:
                parent[name] = child
        elif isinstance(parent, RestoredObject):
            for name, child in children:
                if _settable(name):
                    setattr(parent, name, child)
                else:
                    parent._track(name, child)


def _settable(name: str) -> bool:
    """Whether a child may become an attribute: not one that would replace the object's own
    machinery (`__dict__`, `__class__`, the tracking state), `__call__` aside."""
    return name == "__call__" or not (name.startswith("__") and name.endswith("__")) and name != "_trackable"


def _resource_variables(model: Model) -> dict[str, RestoredVariable]:
    """A TensorFlow 1 export's resource variables by shared name (container-qualified when
    there is a container), in graph order (reference variables are left out, as TensorFlow
    leaves them out)."""
    storage = model.resource_variables()
    variables: dict[str, RestoredVariable] = {}
    for node in model.meta_graph.graph_def.node:
        if node.op != "VarHandleOp":
            continue
        container, shared_name = node.attr["container"].s.decode(), node.attr["shared_name"].s.decode()
        key = f"{container}/{shared_name}" if container else shared_name
        found = storage.get(key)
        if found is not None and found.value is not None and key not in variables:
            variables[key] = RestoredVariable(found, shared_name)
    return variables
