"""The `sm.dtypes` namespace: TensorFlow's dtype names bound to rows of the one dtype table.

The objects are the rows of `savedmodel.runtime.dtypes` themselves (no second dtype class), so
`sm.float32 is savedmodel.runtime.dtypes.from_name("float32")`. Their repr is
`savedmodel.float32` where TensorFlow prints `tf.float32`; everything that prints a dtype in
TensorFlow's `tf.` form (TensorSpec, pretty-printed signatures) prints `savedmodel.` here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from savedmodel.runtime import dtypes as _table
from savedmodel.runtime.dtypes import DType

__all__ = ["DType", "as_dtype", "is_bool", "is_complex", "is_floating", "is_integer",
           "is_numeric", "bfloat16", "bool", "complex64", "complex128", "double", "float16",
           "float32", "float64", "half", "int8", "int16", "int32", "int64", "qint8", "qint16",
           "qint32", "quint8", "quint16", "resource", "string", "uint8", "uint16", "uint32",
           "uint64", "variant"]

float16 = half = _table.from_name("float16")
float32 = _table.from_name("float32")
float64 = double = _table.from_name("float64")
bfloat16 = _table.from_name("bfloat16")
int8 = _table.from_name("int8")
int16 = _table.from_name("int16")
int32 = _table.from_name("int32")
int64 = _table.from_name("int64")
uint8 = _table.from_name("uint8")
uint16 = _table.from_name("uint16")
uint32 = _table.from_name("uint32")
uint64 = _table.from_name("uint64")
bool = _table.from_name("bool")
complex64 = _table.from_name("complex64")
complex128 = _table.from_name("complex128")
string = _table.from_name("string")
resource = _table.from_name("resource")
variant = _table.from_name("variant")
qint8 = _table.from_name("qint8")
quint8 = _table.from_name("quint8")
qint16 = _table.from_name("qint16")
quint16 = _table.from_name("quint16")
qint32 = _table.from_name("qint32")


def as_dtype(value: Any) -> DType:
    """A dtype row from a row, a name (`"float32"`), an enum value or a numpy dtype."""
    return _table.as_dtype(value)


def is_floating(dtype: DType) -> bool:
    return dtype.numpy is not None and dtype.numpy.kind == "f" or dtype is bfloat16


def is_integer(dtype: DType) -> bool:
    return dtype.numpy is not None and dtype.numpy.kind in "iu"


def is_complex(dtype: DType) -> bool:
    return dtype.numpy is not None and dtype.numpy.kind == "c"


def is_bool(dtype: DType) -> bool:
    return dtype is bool


def is_numeric(dtype: DType) -> bool:
    return dtype.itemsize > 0 and dtype is not bool


def limits(dtype: DType) -> tuple[Any, Any]:
    """The smallest and largest values of a numeric dtype."""
    info = np.finfo(dtype.numpy) if is_floating(dtype) else np.iinfo(dtype.numpy)
    return info.min, info.max
