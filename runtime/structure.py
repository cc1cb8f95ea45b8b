"""Nested Python structures of tensor specs, as a SavedModel's StructuredValue describes the
arguments and results of its functions.

Flattening follows TensorFlow's nest rules: dict entries in sorted key order, sequences in
order. Leaves are `TensorSpec`s (which stand for tensors), composite specs (`RaggedTensorSpec`,
`SparseTensorSpec`: a value made of several tensors, which a function takes and returns as its
flat components), `OtherTypeSpec`s (a TypeSpec the runtime cannot pass, such as a dataset
iterator: an error when a call needs it, never when a model loads), or plain values (None,
numbers, strings) that a function takes or returns as Python values, not tensors.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from savedmodel.protos import struct_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.feeds import FeedError
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
        return f"TensorSpec(shape={_shape_text(self.shape)}, dtype={self.dtype.name}, name={self.name!r})"


def _shape_text(shape) -> str:
    return "<unknown>" if shape is None else "(" + ", ".join(
        "None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


@dataclass(frozen=True)
class RaggedTensor:
    """A ragged tensor as its components: `flat_values` and one row-splits vector per ragged
    dimension, outermost first (row i of a dimension is its values[splits[i]:splits[i+1]])."""

    flat_values: np.ndarray
    nested_row_splits: tuple[np.ndarray, ...]

    def components(self) -> list[np.ndarray]:
        """TensorFlow's component order: the flat values, then the row splits."""
        return [self.flat_values, *self.nested_row_splits]


@dataclass(frozen=True)
class SparseTensor:
    """A sparse tensor as its components: `indices` (n x rank int64), `values` (n) and
    `dense_shape` (rank int64), TensorFlow's component order."""

    indices: np.ndarray
    values: np.ndarray
    dense_shape: np.ndarray

    def components(self) -> list[np.ndarray]:
        return [self.indices, self.values, self.dense_shape]

    def to_dense(self, default=0) -> np.ndarray:
        """The dense array (positions without an entry hold `default`)."""
        dense = np.full(tuple(int(d) for d in self.dense_shape), default, dtype=self.values.dtype)
        dense[tuple(np.asarray(self.indices, np.int64).T)] = self.values
        return dense


@dataclass(frozen=True)
class RaggedTensorSpec:
    """tf.RaggedTensorSpec: the ragged tensor's shape (None: unknown rank), the values' dtype,
    the number of ragged dimensions and the row splits' dtype."""

    shape: tuple[int | None, ...] | None
    dtype: dtypes.DType
    ragged_rank: int
    row_splits_dtype: dtypes.DType

    def __repr__(self) -> str:
        return (f"RaggedTensorSpec(shape={_shape_text(self.shape)}, dtype={self.dtype.name}, "
                f"ragged_rank={self.ragged_rank}, row_splits_dtype={self.row_splits_dtype.name})")

    def component_specs(self) -> list[TensorSpec]:
        inner = None if self.shape is None else (None, *self.shape[self.ragged_rank + 1:])
        return [TensorSpec(inner, self.dtype), *[TensorSpec((None,), self.row_splits_dtype)] * self.ragged_rank]

    def pack(self, components: list) -> RaggedTensor:
        return RaggedTensor(components[0], tuple(components[1:]))

    def unpack(self, value, where: str) -> list:
        if not isinstance(value, RaggedTensor):
            raise FeedError(f"{where} expects a RaggedTensor (savedmodel.runtime.RaggedTensor), "
                            f"got {type(value).__name__}")
        if len(value.nested_row_splits) != self.ragged_rank:
            raise FeedError(f"{where} expects {self.ragged_rank} row splits, got "
                            f"{len(value.nested_row_splits)}")
        return value.components()


@dataclass(frozen=True)
class SparseTensorSpec:
    """tf.SparseTensorSpec: the dense shape (None: unknown rank) and the values' dtype."""

    shape: tuple[int | None, ...] | None
    dtype: dtypes.DType

    def __repr__(self) -> str:
        return f"SparseTensorSpec(shape={_shape_text(self.shape)}, dtype={self.dtype.name})"

    def component_specs(self) -> list[TensorSpec]:
        rank = None if self.shape is None else len(self.shape)
        int64 = dtypes.from_name("int64")
        return [TensorSpec((None, rank), int64), TensorSpec((None,), self.dtype), TensorSpec((rank,), int64)]

    def pack(self, components: list) -> SparseTensor:
        return SparseTensor(*components)

    def unpack(self, value, where: str) -> list:
        if not isinstance(value, SparseTensor):
            raise FeedError(f"{where} expects a SparseTensor (savedmodel.runtime.SparseTensor), "
                            f"got {type(value).__name__}")
        return value.components()


@dataclass(frozen=True)
class OtherTypeSpec:
    """A TypeSpec the runtime cannot pass (datasets, iterators, extension types...): decoding
    it is fine, calling a function that takes or returns one is an error naming it."""

    class_name: str
    num_components: int

    def pack(self, components: list):
        raise FileFormatError(f"a function returns {self.class_name} values (a composite TypeSpec), "
                              "which the runtime does not support")

    def unpack(self, value, where: str) -> list:
        raise FeedError(f"{where} takes {self.class_name} values (a composite TypeSpec), which the "
                        "runtime does not support")


COMPOSITE_SPECS = (RaggedTensorSpec, SparseTensorSpec, OtherTypeSpec)


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
    if kind == "type_spec_value":
        return _type_spec(value.type_spec_value, where)
    raise FileFormatError(f"{where}: {kind} structures are not supported")


def _type_spec(spec: struct_pb2.TypeSpecProto, where: str):
    """A composite TypeSpec from its class and `type_state`: RaggedTensorSpec's state is
    (shape, dtype, ragged_rank, row_splits_dtype[, flat_values_spec]), SparseTensorSpec's
    (shape, dtype)."""
    state = decode(spec.type_state, where)
    kind = spec.type_spec_class
    try:
        if kind == struct_pb2.TypeSpecProto.RAGGED_TENSOR_SPEC:
            shape, dtype, ragged_rank, splits_dtype = state[:4]
            return RaggedTensorSpec(shape, dtype, int(ragged_rank), splits_dtype)
        if kind == struct_pb2.TypeSpecProto.SPARSE_TENSOR_SPEC:
            shape, dtype = state[:2]
            return SparseTensorSpec(shape, dtype)
    except (TypeError, ValueError):
        raise FileFormatError(f"{where}: malformed {spec.type_spec_class_name or 'TypeSpec'} state") from None
    name = spec.type_spec_class_name or struct_pb2.TypeSpecProto.TypeSpecClass.Name(kind)
    return OtherTypeSpec(name, spec.num_flat_components)


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


def tensor_count(leaf) -> int:
    """How many flat tensors a leaf stands for: 1 for a TensorSpec, its components for a
    composite spec, 0 for a Python value."""
    if isinstance(leaf, TensorSpec):
        return 1
    if isinstance(leaf, OtherTypeSpec):
        return leaf.num_components
    if isinstance(leaf, COMPOSITE_SPECS):
        return len(leaf.component_specs())
    return 0


def pack_tensors(structure, tensors: list, where: str):
    """Replace the TensorSpec leaves of `structure`, in flattening order, by `tensors` (a
    composite spec by a value made of as many tensors as it has components); a saved structure
    with another number of tensors than the function returned is an error."""
    leaves = sum(tensor_count(leaf) for leaf in flatten(structure))
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
    if isinstance(structure, COMPOSITE_SPECS):
        return structure.pack([next(remaining) for _ in range(tensor_count(structure))])
    return structure
