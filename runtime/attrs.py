"""Decoding a node's AttrValue map into the keyword arguments its kernel receives.

Decoded once when a plan is compiled, never per call. Types become rows of the dtype table,
shapes tuples (None for an unknown rank or dimension), tensors numpy arrays, strings `str`,
functions `FuncRef`. Attrs whose names start with `_` are TensorFlow's internal annotations and
are not passed to kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from savedmodel.protos import attr_value_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.tensor_proto import shape_from_proto, to_numpy


@dataclass(frozen=True)
class FuncRef:
    """A function named by an attr (`f`, `then_branch`, `body`, ...), with its own attrs."""

    name: str
    attrs: dict = field(default_factory=dict, hash=False, compare=False)


class AttrError(SavedModelError, ValueError):
    """An attr value that cannot be decoded."""


def decode_attrs(attr_map, where: str, limits: Limits = DEFAULT) -> dict:
    """Keyword arguments for a kernel from a NodeDef's (or NameAttrList's) attr map; `limits`
    bounds what tensor values may expand to."""
    return {name: decode(value, f"{where}: attr {name!r}", limits)
            for name, value in attr_map.items() if not name.startswith("_")}


def decode(value: attr_value_pb2.AttrValue, where: str, limits: Limits = DEFAULT):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "list":
        return _decode_list(value.list, where, limits)
    if kind == "placeholder":
        raise AttrError(f"{where}: unresolved attr placeholder {value.placeholder!r}")
    return _decode_scalar(kind, getattr(value, kind), where, limits)


def _decode_list(values: attr_value_pb2.AttrValue.ListValue, where: str, limits: Limits) -> list:
    for kind in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(values, kind)
        if len(items):
            return [_decode_scalar(kind, item, where, limits) for item in items]
    return []


def _decode_scalar(kind: str, value, where: str, limits: Limits):
    if kind == "tensor":
        return to_numpy(value, where, limits)
    if kind == "func":
        return FuncRef(value.name, decode_attrs(value.attr, where, limits))
    return _SCALAR_DECODERS[kind](value, where)


def _decode_type(enum: int, where: str) -> dtypes.DType:
    try:
        return dtypes.from_enum(enum)
    except dtypes.UnknownDTypeError as err:
        raise AttrError(f"{where}: {err}") from None


_SCALAR_DECODERS = {
    "s": lambda v, where: v.decode("utf-8", "surrogateescape"),
    "i": lambda v, where: int(v),
    "f": lambda v, where: float(v),
    "b": lambda v, where: bool(v),
    "type": _decode_type,
    "shape": lambda v, where: shape_from_proto(v),
}
