"""Nested Python structures of tensor specs, as a SavedModel's StructuredValue describes the
arguments and results of its functions.

Flattening follows TensorFlow's nest rules: dict entries in sorted key order, sequences in
order. Leaves are `TensorSpec`s (which stand for tensors) or plain values (None, numbers,
strings) that a function takes or returns as Python values, not tensors.
"""
from __future__ import annotations

from dataclasses import dataclass

from savedmodel.protos import struct_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.tensor_proto import shape_from_proto


@dataclass(frozen=True)
class TensorSpec:
    """Shape (None: unknown rank; None dimensions unknown), dtype and name of a tensor."""

    shape: tuple[int | None, ...] | None
    dtype: dtypes.DType
    name: str | None = None

    def is_compatible(self, shape: tuple[int, ...]) -> bool:
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            want is None or want == got for want, got in zip(self.shape, shape))

    def __str__(self) -> str:
        shape = "<unknown>" if self.shape is None else "(" + ", ".join(
            "None" if d is None else str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "") + ")"
        return f"TensorSpec(shape={shape}, dtype={self.dtype.name}, name={self.name!r})"


@dataclass(frozen=True)
class NamedTuple:
    """A namedtuple from the saving program, kept as its type name and fields."""

    name: str
    fields: tuple[tuple[str, object], ...]


def decode(value: struct_pb2.StructuredValue, where: str):
    """The Python structure a StructuredValue describes."""
    kind = value.WhichOneof("kind")
    if kind in (None, "none_value"):
        return None
    if kind in ("float64_value", "int64_value", "string_value", "bool_value"):
        return getattr(value, kind)
    if kind == "list_value":
        return [decode(v, where) for v in value.list_value.values]
    if kind == "tuple_value":
        return tuple(decode(v, where) for v in value.tuple_value.values)
    if kind == "dict_value":
        return {k: decode(v, where) for k, v in value.dict_value.fields.items()}
    if kind == "named_tuple_value":
        named = value.named_tuple_value
        return NamedTuple(named.name, tuple((p.key, decode(p.value, where)) for p in named.values))
    if kind in ("tensor_spec_value", "bounded_tensor_spec_value"):
        spec = getattr(value, kind)
        return TensorSpec(shape_from_proto(spec.shape), _dtype(spec.dtype, where), spec.name or None)
    if kind == "tensor_dtype_value":
        return _dtype(value.tensor_dtype_value, where)
    if kind == "tensor_shape_value":
        return shape_from_proto(value.tensor_shape_value)
    raise FileFormatError(f"{where}: {kind} structures (composite tensors such as ragged or "
                          "sparse tensors) are not supported")


def _dtype(enum: int, where: str) -> dtypes.DType:
    try:
        return dtypes.from_enum(enum)
    except dtypes.UnknownDTypeError as err:
        raise FileFormatError(f"{where}: {err}") from None


def flatten(structure) -> list:
    """The leaves of a structure in TensorFlow's order."""
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, NamedTuple):
        return [leaf for _, item in structure.fields for leaf in flatten(item)]
    return [structure]


def pack_tensors(structure, tensors: list, where: str):
    """Replace the TensorSpec leaves of `structure`, in flattening order, by `tensors`; a
    saved structure with another number of leaves than the function returned is an error."""
    leaves = sum(isinstance(leaf, TensorSpec) for leaf in flatten(structure))
    if leaves != len(tensors):
        raise FileFormatError(f"{where}: the saved output structure has {leaves} tensors, but "
                              f"the function returns {len(tensors)}")
    return _pack(structure, iter(tensors))


def _pack(structure, remaining):
    if isinstance(structure, dict):
        return {key: _pack(structure[key], remaining) for key in sorted(structure)}
    if isinstance(structure, list):
        return [_pack(item, remaining) for item in structure]
    if isinstance(structure, tuple):
        return tuple(_pack(item, remaining) for item in structure)
    if isinstance(structure, NamedTuple):
        return {name: _pack(item, remaining) for name, item in structure.fields}
    if isinstance(structure, TensorSpec):
        return next(remaining)
    return structure
