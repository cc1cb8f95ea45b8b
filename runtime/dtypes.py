"""The one table of data types: DataType enum, TensorFlow name, numpy dtype, item size, proto field.

Every part of the project that needs to map between TensorFlow's DataType enum, its Python-side
names (`float32`, `float16`, ...) and numpy dtypes looks it up here, so the mapping cannot drift
between the runtime, the authoring side and the command line.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

REF_OFFSET = 100
"""TensorFlow's reference dtypes (`DT_FLOAT_REF`, ...) are the base enum plus this offset."""

_BASE_NAMES = (
    "DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8",
    "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32",
    "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF",
    "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64", "DT_FLOAT8_E5M2", "DT_FLOAT8_E4M3FN",
    "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3B11FNUZ", "DT_FLOAT8_E5M2FNUZ", "DT_INT4", "DT_UINT4",
    "DT_INT2", "DT_UINT2", "DT_FLOAT4_E2M1FN",
)
"""types.proto's DataType values in enum order (value = position), written out so that naming
a dtype imports no protobuf module (tests/test_dtypes.py checks them against types_pb2)."""
ENUM_VALUES: dict[str, int] = ({name: value for value, name in enumerate(_BASE_NAMES)}
                               | {f"{name}_REF": value + REF_OFFSET
                                  for value, name in enumerate(_BASE_NAMES) if value})
_ENUM_NAMES = {value: name for name, value in ENUM_VALUES.items()}


@dataclass(frozen=True)
class DType:
    """One data type.

    `numpy` is None for types that have no numpy array form here (resource handles, variants,
    quantized types). `field` names the TensorProto repeated field that holds values of this
    type when they are not packed into `tensor_content`; `itemsize` is the byte width in
    `tensor_content` and in checkpoint shards (0 where values have no fixed width).
    """

    enum: int
    name: str
    numpy: np.dtype | None
    itemsize: int
    field: str

    @property
    def enum_name(self) -> str:
        """The enum's symbolic name, e.g. `DT_FLOAT`."""
        return _ENUM_NAMES[self.enum]

    @property
    def is_string(self) -> bool:
        return self.enum == ENUM_VALUES["DT_STRING"]

    def __repr__(self) -> str:
        return f"savedmodel.{self.name}"


def _row(enum_name: str, name: str, numpy_type, field: str) -> DType:
    numpy_dtype = None if numpy_type is None else np.dtype(numpy_type)
    width = 0 if numpy_dtype is None or numpy_dtype.kind == "O" else numpy_dtype.itemsize
    return DType(ENUM_VALUES[enum_name], name, numpy_dtype, width, field)


_ROWS = (
    _row("DT_FLOAT", "float32", np.float32, "float_val"),
    _row("DT_DOUBLE", "float64", np.float64, "double_val"),
    _row("DT_HALF", "float16", np.float16, "half_val"),
    _row("DT_BFLOAT16", "bfloat16", ml_dtypes.bfloat16, "half_val"),
    _row("DT_INT8", "int8", np.int8, "int_val"),
    _row("DT_INT16", "int16", np.int16, "int_val"),
    _row("DT_INT32", "int32", np.int32, "int_val"),
    _row("DT_INT64", "int64", np.int64, "int64_val"),
    _row("DT_UINT8", "uint8", np.uint8, "int_val"),
    _row("DT_UINT16", "uint16", np.uint16, "int_val"),
    _row("DT_UINT32", "uint32", np.uint32, "uint32_val"),
    _row("DT_UINT64", "uint64", np.uint64, "uint64_val"),
    _row("DT_BOOL", "bool", np.bool_, "bool_val"),
    _row("DT_COMPLEX64", "complex64", np.complex64, "scomplex_val"),
    _row("DT_COMPLEX128", "complex128", np.complex128, "dcomplex_val"),
    _row("DT_STRING", "string", object, "string_val"),
    _row("DT_RESOURCE", "resource", None, "resource_handle_val"),
    _row("DT_VARIANT", "variant", None, "variant_val"),
    _row("DT_QINT8", "qint8", None, "int_val"),
    _row("DT_QUINT8", "quint8", None, "int_val"),
    _row("DT_QINT16", "qint16", None, "int_val"),
    _row("DT_QUINT16", "quint16", None, "int_val"),
    _row("DT_QINT32", "qint32", None, "int_val"),
)

_BY_ENUM = {row.enum: row for row in _ROWS}
_BY_NAME = {row.name: row for row in _ROWS} | {"half": _BY_ENUM[ENUM_VALUES["DT_HALF"]],
                                                 "float": _BY_ENUM[ENUM_VALUES["DT_FLOAT"]],
                                                 "double": _BY_ENUM[ENUM_VALUES["DT_DOUBLE"]]}
_BY_NUMPY = {row.numpy: row for row in _ROWS if row.numpy is not None and row.numpy.kind != "O"}

ALL: tuple[DType, ...] = _ROWS
NUMERIC: tuple[DType, ...] = tuple(r for r in _ROWS if r.itemsize)
"""Types whose values are fixed-width numbers (or bools) with a numpy dtype."""

class UnknownDTypeError(ValueError):
    """A data type that the table does not hold."""


def from_enum(enum: int) -> DType:
    """The row for a DataType enum value; reference types map to their base type."""
    row = _BY_ENUM.get(enum - REF_OFFSET if enum > REF_OFFSET else enum)
    if row is None:
        raise UnknownDTypeError(f"unsupported DataType enum value {enum} ({_enum_label(enum)})")
    return row


def from_name(name: str) -> DType:
    """The row for a TensorFlow dtype name such as `float32` or `DT_FLOAT`."""
    if name in ENUM_VALUES:
        return from_enum(ENUM_VALUES[name])
    row = _BY_NAME.get(name)
    if row is None:
        raise UnknownDTypeError(f"unknown dtype name {name!r}; known: {', '.join(sorted(_BY_NAME))}")
    return row


def from_numpy(dtype) -> DType:
    """The row for a numpy dtype; numpy strings, bytes and objects are `string`."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return _BY_ENUM[ENUM_VALUES["DT_STRING"]]
    row = _BY_NUMPY.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)
    if row is None:
        raise UnknownDTypeError(f"numpy dtype {dtype} has no TensorFlow data type")
    return row


def as_dtype(value) -> DType:
    """Coerce a DType, enum value, name or numpy dtype (or Python type) to a table row."""
    if isinstance(value, DType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return from_enum(int(value))
    if isinstance(value, str):
        return from_name(value)
    return from_numpy(value)


def enum_name(enum: int) -> str | None:
    """The DataType enum's symbolic name for `enum` (`DT_FLOAT`), None if it names none."""
    return _ENUM_NAMES.get(enum)


def _enum_label(enum: int) -> str:
    return _ENUM_NAMES.get(enum, "not a DataType")
