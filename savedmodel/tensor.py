"""Tensors: eager ones that hold a numpy array, and symbolic ones that name a node output.

`Tensor` is the common base (what `isinstance(x, sm.Tensor)` checks): dtype and shape, and the
Python operators, which build the same ops as TensorFlow's (`x + y` is an `AddV2` node named
`add`, `x[0]` a `StridedSlice`, ...) through `savedmodel.ops.math_ops`. `EagerTensor` is the
result of running an op eagerly; `GraphTensor` is an output of an op in a graph being traced,
with a static shape that may have unknown dimensions.

Text forms follow TensorFlow's, with our module name: `str` of an eager tensor is
`savedmodel.Tensor(1.5, shape=(), dtype=float32)`, its repr
`<savedmodel.Tensor: shape=(), dtype=float32, numpy=1.5>`; a symbolic tensor prints as
`Tensor("x:0", shape=(2,), dtype=float32)`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from savedmodel.errors import OperatorNotAllowedInGraphError
from savedmodel.runtime.dtypes import DType
from savedmodel.shapes import TensorShape

if TYPE_CHECKING:
    from savedmodel.graph import Graph, Operation

_MODULE = "savedmodel"


class Tensor:
    """Base of eager and symbolic tensors."""

    __slots__ = ()
    __array_priority__ = 100
    """Above numpy's, so that `ndarray + tensor` calls the tensor's operator."""

    @property
    def dtype(self) -> DType:
        raise NotImplementedError

    @property
    def shape(self) -> TensorShape:
        raise NotImplementedError

    @property
    def ndim(self) -> int | None:
        return self.shape.rank

    def get_shape(self) -> TensorShape:
        return self.shape

    def ref(self) -> Reference:
        """A hashable stand-in for this tensor (tensors themselves are unhashable, because
        `==` is elementwise)."""
        return Reference(self)

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def __add__(self, y): return _math().binary_operator("add", self, y)
    def __radd__(self, x): return _math().binary_operator("add", x, self, reflected=True)
    def __sub__(self, y): return _math().binary_operator("sub", self, y)
    def __rsub__(self, x): return _math().binary_operator("sub", x, self, reflected=True)
    def __mul__(self, y): return _math().binary_operator("mul", self, y)
    def __rmul__(self, x): return _math().binary_operator("mul", x, self, reflected=True)
    def __truediv__(self, y): return _math().binary_operator("truediv", self, y)
    def __rtruediv__(self, x): return _math().binary_operator("truediv", x, self, reflected=True)
    def __floordiv__(self, y): return _math().binary_operator("floordiv", self, y)
    def __rfloordiv__(self, x): return _math().binary_operator("floordiv", x, self, reflected=True)
    def __mod__(self, y): return _math().binary_operator("mod", self, y)
    def __rmod__(self, x): return _math().binary_operator("mod", x, self, reflected=True)
    def __pow__(self, y): return _math().binary_operator("pow", self, y)
    def __rpow__(self, x): return _math().binary_operator("pow", x, self, reflected=True)
    def __matmul__(self, y): return _math().binary_operator("matmul", self, y)
    def __rmatmul__(self, x): return _math().binary_operator("matmul", x, self, reflected=True)
    def __and__(self, y): return _math().binary_operator("and", self, y)
    def __rand__(self, x): return _math().binary_operator("and", x, self, reflected=True)
    def __or__(self, y): return _math().binary_operator("or", self, y)
    def __ror__(self, x): return _math().binary_operator("or", x, self, reflected=True)
    def __xor__(self, y): return _math().binary_operator("xor", self, y)
    def __rxor__(self, x): return _math().binary_operator("xor", x, self, reflected=True)
    def __lt__(self, y): return _math().comparison("Less", self, y)
    def __le__(self, y): return _math().comparison("LessEqual", self, y)
    def __gt__(self, y): return _math().comparison("Greater", self, y)
    def __ge__(self, y): return _math().comparison("GreaterEqual", self, y)
    def __eq__(self, y): return _math().tensor_equals(self, y)
    def __ne__(self, y): return _math().tensor_not_equals(self, y)
    def __neg__(self): return _math().negative(self)
    def __abs__(self): return _math().abs(self)
    def __invert__(self): return _math().logical_not(self)
    def __getitem__(self, index): return _array().slice_helper(self, index)


class EagerTensor(Tensor):
    """A tensor with a value: what ops return when they run eagerly. Immutable."""

    __slots__ = ("_value", "_dtype")

    def __init__(self, value: np.ndarray, dtype: DType):
        self._value = value
        self._dtype = dtype

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def device(self) -> str:
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    def numpy(self):
        """A copy of the value; a scalar comes back as a numpy scalar (bytes for a string)."""
        return self._value.copy()[()]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self._value
        return value.astype(dtype) if dtype is not None else value.copy()

    def __bool__(self) -> bool:
        return bool(self._value)

    def __len__(self) -> int:
        if not self._value.ndim:
            raise TypeError("Scalar tensor has no `len()`")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (EagerTensor(np.asarray(row), self._dtype) for row in self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if self._value.ndim or self._value.dtype.kind not in "iu":
            raise TypeError("Only integer scalar tensors can be used as an index")
        return int(self._value)

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return format(self._value[()] if self._value.ndim == 0 else self._value, spec)

    def __copy__(self) -> EagerTensor:
        return self

    def __deepcopy__(self, memo) -> EagerTensor:
        return self

    def __str__(self) -> str:
        return f"{_MODULE}.Tensor({_value_text(self._value, False)}, shape={self.shape}, " \
               f"dtype={self._dtype.name})"

    def __repr__(self) -> str:
        return f"<{_MODULE}.Tensor: shape={self.shape}, dtype={self._dtype.name}, " \
               f"numpy={_value_text(self._value, True)}>"


class GraphTensor(Tensor):
    """Output `value_index` of operation `op` in a graph being built: it has a dtype and a
    static shape but no value. `constant` holds the value of a Const node's output, which
    shape inference uses (reshape targets, reduction axes)."""

    __slots__ = ("op", "value_index", "_dtype", "_shape", "constant")

    def __init__(self, op: Operation, value_index: int, dtype: DType, shape: TensorShape,
                 constant: np.ndarray | None = None):
        self.op = op
        self.value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self.constant = constant

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        self._shape = self._shape.merge_with(shape)

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    def input_name(self) -> str:
        """How a NodeDef of the same graph names this tensor among its inputs."""
        return self.op.name if self.value_index == 0 else self.name

    def numpy(self):
        raise NotImplementedError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy "
                                  "array: it has no value while a function is being traced.")

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __bool__(self) -> bool:
        raise OperatorNotAllowedInGraphError(
            f"Using a symbolic Tensor ({self.name}) as a Python `bool` is not allowed: its value "
            "is only known when the graph runs. Use AutoGraph (sm.function with autograph=True, "
            "the default) or sm.cond for conditions on tensors.")

    def __len__(self) -> int:
        raise TypeError(f"len is not well defined for a symbolic Tensor ({self.name}). Please "
                        "call `x.shape` rather than `len(x)` for shape information.")

    def __iter__(self):
        raise OperatorNotAllowedInGraphError(
            f"Iterating over a symbolic Tensor ({self.name}) is not allowed: its length is only "
            "known when the graph runs. Use AutoGraph (sm.function with autograph=True, the "
            "default) or sm.while_loop to loop over a tensor.")

    def __index__(self) -> int:
        raise TypeError(f"A symbolic Tensor ({self.name}) cannot be used as a Python index.")

    def __str__(self) -> str:
        shape = "" if self._shape.rank is None else f", shape={self._shape}"
        return f'Tensor("{self.name}"{shape}, dtype={self._dtype.name})'

    def __repr__(self) -> str:
        return f"<{_MODULE}.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"


class Reference:
    """A tensor wrapped so that it hashes and compares by identity (`Tensor.ref()`)."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Tensor):
        self._tensor = tensor

    def deref(self) -> Tensor:
        return self._tensor

    def __hash__(self) -> int:
        return id(self._tensor)

    def __eq__(self, other) -> bool:
        return isinstance(other, Reference) and other._tensor is self._tensor

    def __repr__(self) -> str:
        return f"<Reference wrapping {self._tensor!r}>"


def _value_text(value: np.ndarray, is_repr: bool) -> str:
    """TensorFlow's rendering of a value: numpy's str (or repr), a scalar's repr as the
    Python value it holds, and a line break before values that span lines."""
    if value.dtype.kind not in "biufcOSU" and value.dtype.name != "bfloat16":
        text = "<unprintable>"
    elif is_repr:
        text = repr(value.item()) if value.ndim == 0 else repr(value)
    else:
        text = str(value)
    return "\n" + text if "\n" in text else text


def _math():
    """The module that implements the operators (imported on use: it builds on this one)."""
    from savedmodel.ops import math_ops
    return math_ops


def _array():
    from savedmodel.ops import array_ops
    return array_ops
