"""Variables: named, mutable values that modules own and checkpoints save and restore.

A Variable holds a numpy array whose dtype and shape are fixed at creation (a declared shape
may leave dimensions as None), as a `tf.Variable` does in eager mode. Initial values get
TensorFlow's dtypes: a Python float is float32, a Python int int32 (int64 when it does not fit),
text a string (an object array of bytes); numpy values keep theirs. Assigned values are
converted as TensorFlow converts them: numpy values are cast, Python floats never become
integers. Names follow TensorFlow's eager rules: `name_scope` prefixes, `:0` suffix, no
uniquifying.

Reads, updates and operators work eagerly on the numpy value; while a function is being traced
they become graph ops on the variable's captured handle (savedmodel.variable_ops).
"""
from __future__ import annotations

import contextvars
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from savedmodel import context
from savedmodel.convert import cast_array, to_array
from savedmodel.runtime import dtypes
from savedmodel.runtime.dtypes import DType
from savedmodel.trackable import VARIABLE_VALUE, SavedValue, Trackable

_SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("savedmodel_name_scope", default="")


class name_scope:
    """A prefix for the names of variables created inside it, as `tf.name_scope` in eager mode.

    A name ending in `/` is a complete scope (that is how a Module re-enters its own); any other
    name nests inside the current scope; the empty name is the top level."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"name_scope takes a string name, got {type(name).__name__}")
        self._name = name
        self._tokens: list[contextvars.Token] = []

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        scope = _scope_for(self._name)
        self._tokens.append(_SCOPE.set(scope))
        return scope

    def __exit__(self, *exc) -> None:
        _SCOPE.reset(self._tokens.pop())


def _scope_for(name: str) -> str:
    if not name or name.endswith("/"):
        return name
    return f"{_SCOPE.get()}{name}/"


def _full_name(name: str | None) -> str:
    name = "Variable" if name is None else str(name)
    return name[:-1] if name.endswith("/") else _SCOPE.get() + name


class _Operators:
    """Arithmetic and comparisons on a variable's current value. Every operator goes through
    `_apply`, the one place that decides what an operation on a variable returns: the
    operator applied to the variable's value as a tensor."""

    def __add__(self, other): return _apply(operator.add, self, other)
    def __radd__(self, other): return _apply(operator.add, other, self)
    def __sub__(self, other): return _apply(operator.sub, self, other)
    def __rsub__(self, other): return _apply(operator.sub, other, self)
    def __mul__(self, other): return _apply(operator.mul, self, other)
    def __rmul__(self, other): return _apply(operator.mul, other, self)
    def __truediv__(self, other): return _apply(operator.truediv, self, other)
    def __rtruediv__(self, other): return _apply(operator.truediv, other, self)
    def __floordiv__(self, other): return _apply(operator.floordiv, self, other)
    def __rfloordiv__(self, other): return _apply(operator.floordiv, other, self)
    def __mod__(self, other): return _apply(operator.mod, self, other)
    def __rmod__(self, other): return _apply(operator.mod, other, self)
    def __pow__(self, other): return _apply(operator.pow, self, other)
    def __rpow__(self, other): return _apply(operator.pow, other, self)
    def __matmul__(self, other): return _apply(operator.matmul, self, other)
    def __rmatmul__(self, other): return _apply(operator.matmul, other, self)
    def __and__(self, other): return _apply(operator.and_, self, other)
    def __rand__(self, other): return _apply(operator.and_, other, self)
    def __or__(self, other): return _apply(operator.or_, self, other)
    def __ror__(self, other): return _apply(operator.or_, other, self)
    def __xor__(self, other): return _apply(operator.xor, self, other)
    def __rxor__(self, other): return _apply(operator.xor, other, self)
    def __lt__(self, other): return _apply(operator.lt, self, other)
    def __le__(self, other): return _apply(operator.le, self, other)
    def __gt__(self, other): return _apply(operator.gt, self, other)
    def __ge__(self, other): return _apply(operator.ge, self, other)
    def __eq__(self, other): return _apply(operator.eq, self, other)
    def __ne__(self, other): return _apply(operator.ne, self, other)
    def __neg__(self): return _apply(operator.neg, self)
    def __pos__(self): return _apply(operator.pos, self)
    def __abs__(self): return _apply(operator.abs, self)
    def __invert__(self): return _apply(operator.invert, self)
    def __getitem__(self, index): return _apply(operator.getitem, self, index)

    __hash__ = None  # elementwise `==` makes variables unhashable, as in TensorFlow


def _apply(op: Callable, *operands):
    return op(*(o._sm_tensor() if isinstance(o, Variable) else o for o in operands))


class Variable(_Operators, Trackable):
    """A mutable, named value with a fixed dtype and (declared) shape.

    Arguments after `initial_value` are keyword-only: TensorFlow's second positional argument
    is `trainable`, so positional use could silently mean something else. The assign methods
    accept TensorFlow's `use_locking`, `name` and `read_value` so that its code runs; they
    change nothing here (updates are immediate and the variable itself is returned)."""

    def __init__(self, initial_value: Any, *, name: str | None = None, trainable: bool = True,
                 dtype: Any = None, shape: Any = None):
        self._name = _full_name(name)
        if callable(initial_value):
            initial_value = initial_value()
        wanted = None if dtype is None else dtypes.as_dtype(dtype)
        value = _initial_array(initial_value, wanted, f"variable {self.name!r}")
        self._dtype = dtypes.from_numpy(value.dtype)
        self._shape = value.shape if shape is None else _declared_shape(shape, value.shape)
        self._value = value
        self._trainable = bool(trainable)
        self._restore_uid = 0

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def trainable(self) -> bool:
        return self._trainable

    def numpy(self):
        """A copy of the value; a scalar comes back as a numpy scalar (or bytes), as in TF."""
        return self._value.copy()[()]

    def read_value(self):
        """The current value as a tensor (in a graph: `Read/ReadVariableOp` and an Identity)."""
        return _graph_ops().read(self, "Read")

    def value(self):
        return _graph_ops().read(self)

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Variable:
        if context.executing_eagerly():
            self._value = self._checked(value, "assign")
        else:
            _graph_ops().update(self, "AssignVariableOp", value)
        return self

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Variable:
        if context.executing_eagerly():
            self._value = self._updated(operator.add, delta, "assign_add")
        else:
            _graph_ops().update(self, "AssignAddVariableOp", delta)
        return self

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Variable:
        if context.executing_eagerly():
            self._value = self._updated(operator.sub, delta, "assign_sub")
        else:
            _graph_ops().update(self, "AssignSubVariableOp", delta)
        return self

    def _sm_tensor(self, dtype: DType | None = None):
        """The value as a tensor wherever a tensor is expected (the conversion protocol of
        savedmodel.op_builder.convert_to_tensor)."""
        return _graph_ops().as_tensor(self, dtype)

    @property
    def _resource_handle(self):
        """What graphs that capture this variable are fed with when they run."""
        handle = self.__dict__.get("_handle")
        if handle is None:
            handle = self.__dict__["_handle"] = _graph_ops().VariableHandle(self)
        return handle

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self._value.astype(dtype) if dtype is not None else self._value.copy()

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __repr__(self) -> str:
        value = self._value
        text = repr(value.item()) if value.ndim == 0 else repr(value)
        if "\n" in text:
            text = "\n" + text
        return (f"<savedmodel.Variable '{self.name}' shape={_shape_text(self._shape)} "
                f"dtype={self._dtype.name}, numpy={text}>")

    def _checked(self, value: Any, what: str) -> np.ndarray:
        array = _converted(value, self._dtype, f"{what} to variable {self.name!r}")
        if not _compatible(self._shape, array.shape):
            raise ValueError(f"Cannot {what} to variable {self.name!r}: the variable shape "
                             f"{_shape_text(self._shape)} and the value shape "
                             f"{_shape_text(array.shape)} are incompatible")
        return array

    def _updated(self, op: Callable, delta: Any, what: str) -> np.ndarray:
        if self._dtype.is_string or self._dtype.numpy.kind == "b":
            raise TypeError(f"{what} is not defined for variable {self.name!r} of dtype "
                            f"{self._dtype.name}")
        delta = self._checked(delta, what)
        if delta.shape != self._value.shape:
            raise ValueError(f"Cannot {what} to variable {self.name!r}: the value shape "
                             f"{_shape_text(delta.shape)} differs from the variable's current "
                             f"shape {_shape_text(self._value.shape)}")
        return np.asarray(op(self._value, delta), self._dtype.numpy)

    def _checkpoint_values(self) -> dict[str, SavedValue]:
        return {VARIABLE_VALUE: SavedValue(self._name, self._value)}

    def _prepare_restore(self, values: Mapping[str, np.ndarray], uid: int) -> Callable[[], None]:
        saved = values.get(VARIABLE_VALUE)
        if saved is None or uid <= self._restore_uid:
            return lambda: None
        saved_dtype = dtypes.from_numpy(saved.dtype)
        if saved_dtype != self._dtype:
            raise ValueError(f"cannot restore variable {self.name!r} of dtype {self._dtype.name} "
                             f"from a saved value of dtype {saved_dtype.name}")
        if not _compatible(self._shape, saved.shape):
            raise ValueError(f"Received incompatible tensor with shape {_shape_text(saved.shape)} "
                             f"when attempting to restore variable {self.name!r} with shape "
                             f"{_shape_text(self._shape)}")

        def assign() -> None:
            self._value = np.array(saved)
            self._restore_uid = uid
        return assign


def _graph_ops():
    """The graph side of variables (imported on first use: plain eager use of variables, such
    as checkpointing, does not need the tracing machinery)."""
    from savedmodel import variable_ops
    return variable_ops


def _initial_array(value: Any, dtype: DType | None, where: str) -> np.ndarray:
    if isinstance(value, Variable):
        value = value._value
    if dtype is not None and dtype.numpy is None:
        raise TypeError(f"{where}: variables of dtype {dtype.name} are not supported")
    return np.array(to_array(value, dtype, where))


def _converted(value: Any, dtype: DType, where: str) -> np.ndarray:
    """`value` as a new array of `dtype`, converted as TensorFlow converts it."""
    return np.array(cast_array(value, dtype, where))


def _declared_shape(shape: Any, actual: tuple[int, ...]) -> tuple:
    declared = tuple(None if d is None else int(d) for d in shape)
    if not _compatible(declared, actual):
        raise ValueError(f"The initial value's shape {_shape_text(actual)} is not compatible "
                         f"with the explicitly supplied `shape` argument {_shape_text(declared)}")
    return declared


def _compatible(declared: tuple, actual: tuple) -> bool:
    return len(declared) == len(actual) and all(d is None or d == a
                                                for d, a in zip(declared, actual))


def _shape_text(shape: tuple) -> str:
    return str(tuple(shape))
