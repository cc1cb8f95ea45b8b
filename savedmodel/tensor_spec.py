"""`sm.TensorSpec`: the dtype and static shape (and optional name) a tensor must have.

Specs describe a Function's inputs (`input_signature`, `get_concrete_function`) and a traced
function's inputs and outputs. The repr is TensorFlow's, with our dtype names:
`TensorSpec(shape=(None,), dtype=savedmodel.int32, name=None)`.
"""
from __future__ import annotations

from typing import Any

from savedmodel.dtypes import as_dtype, float32
from savedmodel.runtime.dtypes import DType
from savedmodel.shapes import TensorShape, as_shape


class TensorSpec:
    """Immutable and hashable; two specs are equal when shape, dtype and name are."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape: Any, dtype: Any = float32, name: str | None = None):
        self._shape = as_shape(shape)
        self._dtype = as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> TensorSpec:
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    def is_compatible_with(self, other: Any) -> bool:
        """Whether a tensor (or spec) of `other`'s dtype and shape fits this spec."""
        return other.dtype is self._dtype and self._shape.is_compatible_with(other.shape)

    def is_subtype_of(self, other: TensorSpec) -> bool:
        """Whether every tensor that fits this spec fits `other` (names aside)."""
        if other.dtype is not self._dtype:
            return False
        mine, theirs = self._shape.as_tuple(), other.shape.as_tuple()
        if theirs is None:
            return True
        return mine is not None and len(mine) == len(theirs) and all(
            t is None or m == t for m, t in zip(mine, theirs))

    def most_specific_common_supertype(self, other: TensorSpec) -> TensorSpec | None:
        if other.dtype is not self._dtype:
            return None
        return TensorSpec(self._shape.most_specific_compatible_shape(other.shape), self._dtype,
                          self._name if self._name == other.name else None)

    def with_name(self, name: str | None) -> TensorSpec:
        return TensorSpec(self._shape, self._dtype, name)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, TensorSpec) and self._shape == other._shape
                and self._dtype is other._dtype and self._name == other._name)

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype.enum, self._name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"
