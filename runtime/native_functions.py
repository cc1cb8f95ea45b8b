"""The object graph's methods on the native engine (`NativeModel.functions`): bound as the numpy
engine binds them (runtime.object_graph), run by the extension. A module of its own, imported on
first use of `functions`, because binding decodes the saved signatures with protobuf, which a
process that only calls signatures never needs to import.
"""
from __future__ import annotations

import time

from savedmodel.runtime import deadline, structure
from savedmodel.runtime.dtypes import from_numpy
from savedmodel.runtime.native import _call, _from_native, _to_native
from savedmodel.runtime.object_graph import ConcreteFunction, RestoredFunction, restored_functions


def bind(model) -> dict[str, RestoredFunction]:
    """`model`'s methods by dotted path, each over its concrete functions."""
    return restored_functions(model, NativeConcreteFunction)


class NativeConcreteFunction(ConcreteFunction):
    """A concrete function of the object graph, run by the native engine."""

    def call(self, flat: list):
        args = [(from_numpy(a.dtype).name, _to_native(a)) for a in flat]
        limit = deadline.current()
        timeout = None if limit is None else max(0.0, limit.at - time.monotonic())
        outputs = _call(self._model._inner.call_function, self.name, args, timeout)
        return structure.pack_tensors(self.output_structure, [_from_native(d, v) for d, v in outputs],
                                      f"concrete function {self.name!r}")
