"""What `sm.Variable` does inside a function being traced, and the handle graphs run with.

Eagerly, a variable reads and updates its numpy value directly (savedmodel.variables). While a
function is traced, the variable's handle is captured as a `resource` placeholder (named
`<op scope>/resource` after the first op that uses it, as TensorFlow names it), reads become
`ReadVariableOp` nodes (`read_value()` inside a `Read` scope, followed by an `Identity`) and
updates `AssignVariableOp` / `AssignAddVariableOp` / `AssignSubVariableOp` nodes, which
automatic control dependencies keep in program order. When the graph runs, the placeholder is
fed with the variable's `VariableHandle`, the resource object the runtime's variable kernels
read and assign.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from savedmodel import context
from savedmodel.op_builder import apply_op, apply_op_node, convert_to_tensor
from savedmodel.shapes import TensorShape
from savedmodel.tensor import EagerTensor, Tensor

if TYPE_CHECKING:
    from savedmodel.variables import Variable


class VariableHandle:
    """A variable as the runtime's resource kernels see it (`read`, `assign`, `dtype`)."""

    __slots__ = ("_variable",)

    def __init__(self, variable: Variable):
        self._variable = variable

    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self) -> tuple:
        return self._variable.shape

    @property
    def value(self) -> np.ndarray:
        return self._variable._value

    def read(self) -> np.ndarray:
        return self._variable._value

    def assign(self, value: Any) -> None:
        self._variable._value = self._variable._checked(value, "assign")

    def __repr__(self) -> str:
        return f"<VariableHandle of {self._variable.name!r}>"


def read(variable: Variable, scope: str | None = None) -> Tensor:
    """The variable's current value as a tensor; in a graph, a ReadVariableOp (inside `scope`
    and followed by an Identity when a scope is given, as `read_value()` builds it)."""
    graph = context.current_graph()
    if graph is None:
        return EagerTensor(variable._value.copy(), variable.dtype)
    shape = [TensorShape(variable.shape)]
    if scope is None:
        return apply_op("ReadVariableOp", [variable], {"dtype": variable.dtype},
                        output_shapes=shape)[0]
    with graph.name_scope(scope):
        value = apply_op("ReadVariableOp", [variable], {"dtype": variable.dtype},
                         output_shapes=shape)[0]
    return apply_op("Identity", [value])[0]


def as_tensor(variable: Variable, dtype: Any = None) -> Tensor:
    """Conversion of a variable wherever a tensor is expected (operators, op arguments)."""
    if dtype is not None and dtype is not variable.dtype:
        raise ValueError(f"Incompatible type conversion requested to type {dtype.name} for "
                         f"variable of type {variable.dtype.name}")
    return read(variable)


def update(variable: Variable, op_type: str, value: Any) -> None:
    """An Assign*VariableOp node writing `value` (converted to the variable's dtype first, as
    a `Const` when it is a Python value)."""
    value = convert_to_tensor(value, variable.dtype)
    attrs: dict = {"dtype": variable.dtype}
    if op_type == "AssignVariableOp":
        attrs["validate_shape"] = True
    apply_op_node(op_type, [variable, value], attrs)
