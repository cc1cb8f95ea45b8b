"""`sm.name_scope`: a prefix for names, in whichever mode the code runs.

While a function is traced, the scope prefixes the names of the ops created inside it (and is
made unique, `scope`, `scope_1`, as TensorFlow does); eagerly, it prefixes the names of the
variables created inside it (savedmodel.variables.name_scope).
"""
from __future__ import annotations

from contextlib import AbstractContextManager

from savedmodel import context
from savedmodel.variables import name_scope as variable_scope


class name_scope:
    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"name_scope takes a string name, got {type(name).__name__}")
        self._name = name
        self._entered: list[AbstractContextManager] = []

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        graph = context.current_graph()
        scope = variable_scope(self._name) if graph is None else graph.name_scope(self._name)
        self._entered.append(scope)
        return scope.__enter__()

    def __exit__(self, *exc) -> None:
        self._entered.pop().__exit__(*exc)
