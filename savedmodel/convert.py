"""Python and numpy values as arrays with TensorFlow's dtypes: the one conversion that
`sm.constant`, op inputs and `sm.Variable` initial values share.

Without a requested dtype, Python values get TensorFlow's inferred dtype: a float is float32,
an int int32 (int64 when it does not fit), text a string (an object array of bytes); numpy
values keep theirs. With one, values are converted as TensorFlow converts them: numpy values
are cast, Python floats never become integers, Python numbers never become booleans.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.dtypes import DType
from savedmodel.runtime.feeds import to_input
from savedmodel.tensor import EagerTensor

_INT32 = np.iinfo(np.int32)
_STRING = dtypes.from_name("string")


def to_array(value: Any, dtype: DType | None = None, where: str = "value") -> np.ndarray:
    """`value` as an array: of `dtype` when given, else of the dtype TensorFlow infers. The
    result may share memory with a numpy `value`; callers that keep it must copy."""
    if isinstance(value, EagerTensor):
        value = value._value
    if dtype is not None:
        if dtype.numpy is None:
            raise TypeError(f"{where}: cannot make a {dtype.name} tensor from {_preview(value)}")
        return cast_array(value, dtype, where)
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "OSU":
            return to_input(value, _STRING, None, where)
        dtypes.from_numpy(value.dtype)
        return np.asarray(value)
    return infer_array(value, where)


def cast_array(value: Any, dtype: DType, where: str) -> np.ndarray:
    """`value` as an array of `dtype`, converted by TensorFlow's rules."""
    array = to_input(value, dtype, None, where)
    if (dtype.numpy.kind == "b" and not isinstance(value, (np.ndarray, np.generic))
            and np.asarray(value).dtype.kind != "b"):
        raise TypeError(f"{where} expects bool; cannot convert {value!r}")
    return array


def infer_array(value: Any, where: str) -> np.ndarray:
    """A Python value (scalar or nested lists) as the array TensorFlow would infer for it."""
    array = np.asarray(value)
    kind = array.dtype.kind
    if kind in "OSU":
        return to_input(value, _STRING, None, where)
    if kind in "iu":
        fits = array.size == 0 or (_INT32.min <= array.min() and array.max() <= _INT32.max)
        return array.astype(np.int32 if fits else np.int64)
    if kind == "f":
        return array.astype(np.float32)
    if kind == "c":
        return array.astype(np.complex128)
    if kind == "b":
        return array.astype(np.bool_)
    raise TypeError(f"{where}: cannot convert {type(value).__name__} {value!r} to a tensor")


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."
