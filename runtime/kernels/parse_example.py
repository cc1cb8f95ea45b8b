"""Kernels of the tf.Example parsing ops: ParseExampleV2 (tf.io.parse_example in TensorFlow 2),
ParseExample (TensorFlow 1 graphs, Estimator exports) and ParseSingleExample.

These are what a model's classify / regress signatures run on the serialized tf.Example protos
a server feeds them. Each op names features in three kinds, and each kind has its own output:
- dense: a fixed shape, or a variable first dimension (`-1`, padded per batch with the default,
  which must then be one element); a missing feature takes its default, or is an error when the
  default is empty (a required feature);
- sparse: indices [n, rank + 1] int64 (example, position), values and the dense shape;
- ragged: values and row splits (int32 or int64) over the batch.
Feature dtypes are float32, int64 and string. Errors name the key and the example as
TensorFlow's do ("Name: <unknown>, Key: x, Index: 1.  Data types don't match..."). An empty
Feature (no list set) counts as missing, as in TensorFlow; repeated keys in one serialized
string (concatenated Examples) keep the last value, as protobuf's map does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from savedmodel.protos import example_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_KINDS = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
"""A Feature's list field -> the TensorFlow dtype name its values have."""
_NUMPY = {"float": np.float32, "int64": np.int64, "string": object}


@dataclass(frozen=True)
class _Dense:
    key: str
    dtype: str
    shape: tuple[int | None, ...]
    default: np.ndarray

    @property
    def variable(self) -> bool:
        return bool(self.shape) and self.shape[0] is None


@dataclass(frozen=True)
class _Features:
    """What one node parses: the keys of each kind with their dtypes."""
    sparse: list[tuple[str, str]]
    dense: list[_Dense]
    ragged: list[tuple[str, str, type]]


def _type_name(dtype, what: str) -> str:
    name = dtype.name if isinstance(dtype, dtypes.DType) else str(dtype)
    name = "float" if name == "float32" else name
    check(name in _NUMPY, f"{what}: parsing gives float32, int64 or string features, not {name}")
    return name


def _keys(value, count: int, what: str) -> list[str]:
    keys = np.asarray(value)
    check(keys.ndim <= 1 and keys.dtype == object, f"{what} must be a vector of strings")
    check(keys.size == count, f"{what} has {keys.size} keys for {count} types")
    return [k.decode("utf-8", "surrogateescape") for k in keys.reshape(-1)]


def _dense_specs(keys: list[str], defaults, types, shapes) -> list[_Dense]:
    check(len(keys) == len(defaults) == len(types) == len(shapes),
          f"{len(keys)} dense keys for {len(defaults)} defaults, {len(types)} types and {len(shapes)} shapes")
    specs = []
    for j, (key, default, dtype, shape) in enumerate(zip(keys, defaults, types, shapes)):
        name = _type_name(dtype, f"dense key {key!r}")
        check(shape is not None and None not in shape[1:],
              f"dense_shapes[{j}] has unknown rank or unknown inner dimensions: {shape}")
        default = np.asarray(default)
        check(default.dtype == np.dtype(_NUMPY[name]), f"dense_defaults[{j}] must be {name}, got {default.dtype}")
        spec = _Dense(key, name, tuple(shape), default)
        if spec.variable:
            check(default.size == 1, f"dense_shape[{j}] is a variable length shape: {_shape_text(shape)}, "
                                     f"therefore def_value[{j}] must contain a single element (the padding element)")
        else:
            check(default.size == 0 or default.shape == spec.shape,
                  f"def_value[{j}].shape() == {list(default.shape)} is not compatible with "
                  f"dense_shapes_[{j}] == {list(shape)}")
        specs.append(spec)
    return specs


def _shape_text(shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _check_unique(features: _Features) -> None:
    """TensorFlow answers nonsense (empty outputs) when one key is asked for twice; refuse."""
    keys = [k for k, _ in features.sparse] + [d.key for d in features.dense] + [k for k, _, _ in features.ragged]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    check(not repeated, f"feature keys {repeated} are requested more than once")


def _examples(serialized: np.ndarray, names: np.ndarray) -> list[tuple[str, dict]]:
    """(name for errors, {key: Feature}) per serialized Example, in order."""
    labels = [n.decode("utf-8", "replace") for n in names.reshape(-1)] if names.size else None
    found = []
    for i, data in enumerate(serialized.reshape(-1)):
        try:
            example = example_pb2.Example.FromString(data)
        except DecodeError:
            raise KernelError(f"Could not parse example input, value: {_preview(data)}") from None
        found.append((labels[i] if labels else "<unknown>", example.features.feature))
    return found


def _preview(data: bytes) -> str:
    shown = data[:100].decode("latin-1").encode("unicode_escape").decode("ascii")
    return f"'{shown}'" + ("..." if len(data) > 100 else "")


def _values(feature_map, key: str, dtype: str, name: str, index: int, dense: bool) -> np.ndarray | None:
    """The feature's values, None when the example lacks it (or its Feature is empty)."""
    feature = feature_map.get(key)
    kind = feature.WhichOneof("kind") if feature is not None else None
    if kind is None:
        return None
    if _KINDS[kind] != dtype:
        detail = (f"Data type: {_KINDS[kind]} but expected type: {dtype}" if dense
                  else f"Expected type: {dtype}, Actual type: {_KINDS[kind]}")
        raise KernelError(f"Name: {name}, Key: {key}, Index: {index}.  Data types don't match. {detail}")
    values = getattr(feature, kind).value
    if dtype == "string":
        out = np.empty(len(values), object)
        out[:] = list(values)
        return out
    return np.array(values, _NUMPY[dtype])


def _dense(spec: _Dense, examples: list, batched: bool) -> np.ndarray:
    rows = [_dense_row(spec, feature_map, name, i) for i, (name, feature_map) in enumerate(examples)]
    if spec.variable:
        inner = spec.shape[1:]
        longest = max((len(r) for r in rows), default=0)
        out = np.full((len(rows), longest, *inner), spec.default.reshape(()), spec.default.dtype)
        for i, row in enumerate(rows):
            out[i, :len(row)] = row
    else:
        out = np.empty((len(rows), *spec.shape), spec.default.dtype)
        for i, row in enumerate(rows):
            out[i] = row
    return out if batched else out[0]


def _dense_row(spec: _Dense, feature_map, name: str, index: int) -> np.ndarray:
    values = _values(feature_map, spec.key, spec.dtype, name, index, dense=True)
    if spec.variable:
        inner = spec.shape[1:]
        if values is None:
            return np.empty((0, *inner), spec.default.dtype)
        stride = int(np.prod(inner))
        check(stride == 0 or values.size % stride == 0,
              f"Name: {name}, Key: {spec.key}, Index: {index}.  Number of {spec.dtype} values is not a "
              f"multiple of stride length. Saw {values.size} values but output shape is: {_shape_text(spec.shape)}")
        return values.reshape(-1, *inner) if stride else np.empty((0, *inner), spec.default.dtype)
    if values is None:
        check(spec.default.size > 0, f"Name: {name}, Feature: {spec.key} (data type: {spec.dtype}) "
                                     "is required but could not be found.")
        return spec.default
    check(values.size == int(np.prod(spec.shape)),
          f"Name: {name}, Key: {spec.key}, Index: {index}.  Number of {spec.dtype} values != expected.  "
          f"Values size: {values.size} but output shape: {list(spec.shape)}")
    return values.reshape(spec.shape)


def _rows(key: str, dtype: str, examples: list) -> list[np.ndarray]:
    empty = np.empty(0, _NUMPY[dtype])
    return [v if (v := _values(m, key, dtype, name, i, dense=False)) is not None else empty
            for i, (name, m) in enumerate(examples)]


def _sparse(key: str, dtype: str, examples: list, batched: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = _rows(key, dtype, examples)
    lengths = np.array([len(r) for r in rows], np.int64)
    values = np.concatenate(rows) if rows else np.empty(0, _NUMPY[dtype])
    position = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths]) if rows else np.empty(0, np.int64)
    longest = int(lengths.max()) if len(lengths) else 0
    if not batched:
        return position.reshape(-1, 1), values, np.array([longest], np.int64)
    example = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    return np.stack([example, position], axis=1), values, np.array([len(rows), longest], np.int64)


def _ragged(key: str, dtype: str, split_type, examples: list, batched: bool) -> tuple[np.ndarray, np.ndarray]:
    rows = _rows(key, dtype, examples)
    values = np.concatenate(rows) if rows else np.empty(0, _NUMPY[dtype])
    if not batched:
        return values, np.empty(0, split_type)
    return values, np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(split_type)


def _split_type(dtype, key: str):
    name = dtype.name if isinstance(dtype, dtypes.DType) else str(dtype)
    check(name in ("int32", "int64"), f"ragged key {key!r}: row splits are int32 or int64, not {name}")
    return np.dtype(name)


def _parse(features: _Features, serialized, names, batched: bool) -> tuple:
    """Every output of a parse over `serialized` (a vector when `batched`, else a scalar)."""
    _check_unique(features)
    examples = _examples(np.asarray(serialized), np.asarray(names))
    sparse = [_sparse(key, dtype, examples, batched) for key, dtype in features.sparse]
    dense = [_dense(spec, examples, batched) for spec in features.dense]
    ragged = [_ragged(key, dtype, split, examples, batched) for key, dtype, split in features.ragged]
    return (*[s[0] for s in sparse], *[s[1] for s in sparse], *[s[2] for s in sparse], *dense,
            *[r[0] for r in ragged], *[r[1] for r in ragged])


def _check_serialized(serialized, names, vector_only: bool) -> None:
    serialized, names = np.asarray(serialized), np.asarray(names)
    allowed = "a vector" if vector_only else "a scalar or vector"
    check(serialized.dtype == object and (serialized.ndim == 1 or (serialized.ndim == 0 and not vector_only)),
          f"Expected serialized to be {allowed}, got shape: {list(serialized.shape)}")
    check(names.size == 0 or names.shape == serialized.shape,
          f"Expected names have the same shape as serialized: name.shape={list(names.shape)}, "
          f"serialized.shape={list(serialized.shape)}")


@kernel("ParseExampleV2")
def parse_example_v2(serialized, names, sparse_keys, dense_keys, ragged_keys, *dense_defaults,
                     num_sparse: int = 0, sparse_types=(), Tdense=(), dense_shapes=(),
                     ragged_value_types=(), ragged_split_types=(), **_) -> tuple:
    """tf.io.parse_example: a scalar or vector of serialized Examples."""
    _check_serialized(serialized, names, vector_only=False)
    check(num_sparse == len(sparse_types), f"num_sparse ({num_sparse}) != {len(sparse_types)} sparse_types")
    check(len(ragged_value_types) == len(ragged_split_types),
          f"{len(ragged_value_types)} ragged_value_types for {len(ragged_split_types)} ragged_split_types")
    sparse = _keys(sparse_keys, num_sparse, "sparse_keys")
    ragged = _keys(ragged_keys, len(ragged_value_types), "ragged_keys")
    features = _Features(
        [(k, _type_name(t, f"sparse key {k!r}")) for k, t in zip(sparse, sparse_types)],
        _dense_specs(_keys(dense_keys, len(Tdense), "dense_keys"), dense_defaults, Tdense, dense_shapes),
        [(k, _type_name(v, f"ragged key {k!r}"), _split_type(s, k))
         for k, v, s in zip(ragged, ragged_value_types, ragged_split_types)])
    return _parse(features, serialized, names, batched=np.ndim(serialized) == 1)


@kernel("ParseExample")
def parse_example(serialized, names, *keys_and_defaults, Nsparse: int = 0, Ndense: int = 0,
                  sparse_types=(), Tdense=(), dense_shapes=(), **_) -> tuple:
    """The TensorFlow 1 op: a vector of serialized Examples, each key a scalar input."""
    _check_serialized(serialized, names, vector_only=True)
    check(len(keys_and_defaults) == Nsparse + 2 * Ndense,
          f"{len(keys_and_defaults)} key and default inputs for Nsparse={Nsparse}, Ndense={Ndense}")
    check(Nsparse == len(sparse_types), f"Nsparse ({Nsparse}) != {len(sparse_types)} sparse_types")
    sparse_keys = [_scalar_key(k, "sparse_keys") for k in keys_and_defaults[:Nsparse]]
    dense_keys = [_scalar_key(k, "dense_keys") for k in keys_and_defaults[Nsparse:Nsparse + Ndense]]
    features = _Features([(k, _type_name(t, f"sparse key {k!r}")) for k, t in zip(sparse_keys, sparse_types)],
                         _dense_specs(dense_keys, keys_and_defaults[Nsparse + Ndense:], Tdense, dense_shapes), [])
    return _parse(features, serialized, names, batched=True)


def _scalar_key(value, what: str) -> str:
    key = np.asarray(value)
    check(key.ndim == 0 and key.dtype == object, f"{what}: each key must be a scalar string, got shape "
                                                 f"{list(key.shape)}")
    return key.item().decode("utf-8", "surrogateescape")


@kernel("ParseSingleExample")
def parse_single_example(serialized, *dense_defaults, num_sparse: int = 0, sparse_keys=(), dense_keys=(),
                         sparse_types=(), Tdense=(), dense_shapes=(), **_) -> tuple:
    """One serialized Example (a scalar); keys are attrs."""
    serialized = np.asarray(serialized)
    check(serialized.ndim == 0 and serialized.dtype == object,
          f"Expected serialized to be a scalar, got shape: {list(serialized.shape)}")
    check(num_sparse == len(sparse_keys) == len(sparse_types),
          f"num_sparse ({num_sparse}) != {len(sparse_keys)} sparse_keys or {len(sparse_types)} sparse_types")
    features = _Features([(k, _type_name(t, f"sparse key {k!r}")) for k, t in zip(sparse_keys, sparse_types)],
                         _dense_specs(list(dense_keys), dense_defaults, Tdense, dense_shapes), [])
    return _parse(features, serialized, np.empty(0, object), batched=False)
