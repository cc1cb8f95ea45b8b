"""Module: a container of variables and other modules, as `tf.Module`.

Variables and modules assigned as attributes (also inside lists, tuples and dicts) are found
without registration. `variables` and `submodules` list them in TensorFlow's order: this
module's attributes sorted by name, each value flattened (dicts by sorted key), every object
once; then the same for each submodule found, in the order found. Checkpoints use a different
order (first assignment, see `trackable`), also TensorFlow's.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from savedmodel.trackable import AutoTrackable
from savedmodel.variables import Variable, name_scope

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<!^)(?=[A-Z][a-z])")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOOKKEEPING = frozenset({"_trackable"})


def camel_to_snake(name: str) -> str:
    """`MyHTTPModule2` -> `my_http_module2`: the default module name TensorFlow derives."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


class Module(AutoTrackable):
    """Base class of models and layers: tracks the variables and modules it is given."""

    def __init__(self, name: str | None = None):
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid "
                             "Python identifiers (e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope:
            self._scope_name = scope

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self) -> name_scope:
        """The scope of this module (`name/`, nested in the scope it was created in); variables
        created inside `with module.name_scope:` get it as a name prefix."""
        return name_scope(self._scope_name)

    @property
    def variables(self) -> tuple[Variable, ...]:
        return self._flatten(lambda leaf: isinstance(leaf, Variable))

    @property
    def trainable_variables(self) -> tuple[Variable, ...]:
        return self._flatten(lambda leaf: isinstance(leaf, Variable) and leaf.trainable)

    @property
    def non_trainable_variables(self) -> tuple[Variable, ...]:
        return self._flatten(lambda leaf: isinstance(leaf, Variable) and not leaf.trainable)

    @property
    def submodules(self) -> tuple[Module, ...]:
        return self._flatten(lambda leaf: isinstance(leaf, Module))

    def _flatten(self, predicate: Callable[[Any], bool], recursive: bool = True) -> tuple:
        return tuple(_flatten_module(self, predicate, recursive, {id(self)}))

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorate a method to run inside its module's name scope."""
        @functools.wraps(method)
        def in_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return in_scope


def _flatten_module(module: Module, predicate: Callable[[Any], bool], recursive: bool,
                    seen: set[int]) -> Iterator:
    found = []
    attributes = vars(module)
    for key in sorted(attributes):
        if key in _BOOKKEEPING:
            continue
        for leaf in _leaves(attributes[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if recursive and isinstance(leaf, Module):
                found.append(leaf)
    for submodule in found:
        yield from _flatten_module(submodule, predicate, recursive, seen)


def _leaves(value: Any) -> Iterator:
    """The leaves of nested lists, tuples and dicts (dicts by sorted key), as `tf.nest` has them."""
    if isinstance(value, Mapping):
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        for key in keys:
            yield from _leaves(value[key])
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value
