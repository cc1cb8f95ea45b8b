"""Signature inputs and outputs as a SignatureDef declares them: what `show` prints and what
both engines' signatures list. A module of its own so that the native engine's Python face
needs none of the SavedModel file reader.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from savedmodel.runtime.dtypes import enum_name

if TYPE_CHECKING:
    from savedmodel.protos import meta_graph_pb2


@dataclass(frozen=True)
class TensorSpecInfo:
    """One input or output of a signature as the SignatureDef declares it."""

    key: str
    dtype: str
    shape: tuple[int | None, ...] | None
    tensor_name: str
    encoding: str = "name"

    @classmethod
    def from_proto(cls, key: str, info: meta_graph_pb2.TensorInfo) -> TensorSpecInfo:
        encoding = info.WhichOneof("encoding") or "name"
        if encoding == "coo_sparse":
            name = info.coo_sparse.values_tensor_name
        elif encoding == "composite_tensor":
            name = "(composite)"
        else:
            name = info.name
        from savedmodel.runtime.tensor_proto import shape_from_proto  # only the file reader's side
        return cls(key, _enum_label(info.dtype), shape_from_proto(info.tensor_shape), name, encoding)


@dataclass(frozen=True)
class SignatureInfo:
    name: str
    method_name: str
    inputs: tuple[TensorSpecInfo, ...]
    outputs: tuple[TensorSpecInfo, ...]


def _enum_label(enum: int) -> str:
    return enum_name(enum) or f"DataType({enum})"
