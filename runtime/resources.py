"""State of a loaded model: resource variables, shared between every function and signature
that captures them, so an `assign_add` in one call is seen by the next."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError


class Variable:
    """A resource variable: what a resource handle points at.

    Values are replaced, never modified in place, so a value read earlier stays what it was
    (TensorFlow's read semantics) without copying on every read.
    """

    __slots__ = ("name", "dtype", "shape", "value")

    def __init__(self, name: str, dtype: dtypes.DType, shape, value: np.ndarray | None = None):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value = value

    def read(self) -> np.ndarray:
        if self.value is None:
            raise KernelError(f"variable {self.name!r} is read before it is initialized")
        return self.value

    def assign(self, value) -> None:
        value = np.asarray(value)
        if value.dtype != self.dtype.numpy and not (self.dtype.is_string and value.dtype == object):
            raise KernelError(f"variable {self.name!r} holds {self.dtype.name}; cannot assign "
                              f"a {value.dtype} value")
        self.value = value

    def __repr__(self) -> str:
        return f"<Variable {self.name!r} {self.dtype.name} shape={self.shape}>"


class ResourceManager:
    """Variables created by `VarHandleOp` nodes, keyed by (container, shared_name)."""

    def __init__(self):
        self._variables: dict[tuple[str, str], Variable] = {}

    def variable(self, container: str, shared_name: str, dtype: dtypes.DType, shape) -> Variable:
        key = (container, shared_name)
        found = self._variables.get(key)
        if found is None:
            found = self._variables[key] = Variable(shared_name, dtype, shape)
        return found

    def existing(self, container: str, shared_name: str) -> Variable | None:
        return self._variables.get((container, shared_name))

    def bind(self, container: str, shared_name: str, variable: Variable) -> None:
        """Make `VarHandleOp(container, shared_name)` nodes resolve to an existing variable."""
        self._variables[(container, shared_name)] = variable

    def by_name(self) -> dict[str, Variable]:
        """Every variable by its shared name (container-qualified when it has a container)."""
        return {f"{c}/{n}" if c else n: v for (c, n), v in self._variables.items()}
