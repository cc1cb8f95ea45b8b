"""Lookup-table ops: the tables behind `tf.lookup.StaticHashTable`, `MutableHashTable` and Keras'
StringLookup, IntegerLookup and TextVectorization layers.

A table handle is the table object itself (runtime.resources), as a variable handle is the
variable: the table ops find or make it by (container, shared_name) in the model's resources,
so every function and signature that names the same table shares it. Rules and errors follow
TensorFlow's lookup kernels: a table's key and value dtypes are fixed when it is made and every
op is checked against them; a default value is one value or one per key.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.io import checked_path, read_bytes
from savedmodel.runtime.kernels.strings import parse_float, parse_int
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.resources import HashTable, LookupTable, MutableHashTable

_HASH_TABLE_TYPES = frozenset(
    ("string", v) for v in ("string", "int32", "int64", "float32", "float64", "bool")) | frozenset(
    ("int32", v) for v in ("string", "int32", "float32", "float64")) | frozenset(
    ("int64", v) for v in ("string", "int32", "int64", "float32", "float64"))
"""(key, value) dtypes TensorFlow has HashTable kernels for."""
_MUTABLE_TYPES = _HASH_TABLE_TYPES - {("string", "string"), ("int32", "string")}
"""(key, value) dtypes TensorFlow has MutableHashTable(OfTensors) kernels for."""


def _make(ctx, op: str, make: type[LookupTable], allowed: set, container: str, shared_name: str,
          node_name: str, key_dtype: dtypes.DType, value_dtype: dtypes.DType, value_shape=()) -> tuple:
    """The table of a table op. Without a shared name a table belongs to its node, as
    TensorFlow's kernel-private tables live as long as the node's kernel."""
    check((key_dtype.name, value_dtype.name) in allowed,
          f"{op}: no table of {key_dtype.name} keys and {value_dtype.name} values; supported: "
          + ", ".join(f"{k}->{v}" for k, v in sorted(allowed)))
    name = shared_name or f"{node_name} (unshared)"
    return (ctx.resources.table(container or "", name, make, key_dtype, value_dtype, tuple(value_shape)),)


@kernel("HashTableV2", context=True, stateful=True, named=True)
def hash_table(ctx, *, container="", shared_name="", key_dtype, value_dtype, node_name, **_):
    return _make(ctx, "HashTableV2", HashTable, _HASH_TABLE_TYPES, container, shared_name,
                 node_name, key_dtype, value_dtype)


@kernel("MutableHashTableV2", context=True, stateful=True, named=True)
def mutable_hash_table(ctx, *, container="", shared_name="", key_dtype, value_dtype, node_name, **_):
    return _make(ctx, "MutableHashTableV2", MutableHashTable, _MUTABLE_TYPES, container, shared_name,
                 node_name, key_dtype, value_dtype)


@kernel("MutableHashTableOfTensorsV2", context=True, stateful=True, named=True)
def mutable_hash_table_of_tensors(ctx, *, container="", shared_name="", key_dtype, value_dtype,
                                  value_shape=(), node_name, **_):
    check(value_shape is not None and None not in value_shape,
          f"MutableHashTableOfTensorsV2: value_shape must be fully defined, got {value_shape}")
    return _make(ctx, "MutableHashTableOfTensorsV2", MutableHashTable, _MUTABLE_TYPES, container,
                 shared_name, node_name, key_dtype, value_dtype, value_shape)


def _table(handle, op: str) -> LookupTable:
    if not isinstance(handle, LookupTable):
        raise KernelError(f"{op}: input 0 must be a lookup table handle, got {type(handle).__name__}")
    return handle


def _check_dtypes(op: str, table: LookupTable, keys: np.ndarray | None, values: np.ndarray | None,
                  what: str = "values") -> None:
    """Keys and values (or a default value) of the table's dtypes, as TensorFlow's kernels
    check an op's signature against the table's."""
    for array, want, role in ((keys, table.key_dtype, "keys"), (values, table.value_dtype, what)):
        if array is not None and dtypes.from_numpy(array.dtype) != want:
            raise KernelError(f"{op}: table {table.name!r} maps {table.key_dtype.name} to "
                              f"{table.value_dtype.name}, but the {role} are "
                              f"{dtypes.from_numpy(array.dtype).name}")


def _check_values_shape(op: str, table: LookupTable, keys: np.ndarray, values: np.ndarray) -> None:
    expected = keys.shape + table.value_shape
    if values.shape != expected:
        raise KernelError(f"{op}: expected shape {list(expected)} for the values of {keys.size} "
                          f"keys, got {list(values.shape)}")


@kernel("LookupTableFindV2", stateful=True)
def lookup_table_find(handle, keys, default_value, **_):
    table = _table(handle, "LookupTableFindV2")
    keys, default = np.asarray(keys), np.asarray(default_value)
    _check_dtypes("LookupTableFindV2", table, keys, default, "default value")
    check(default.shape in (table.value_shape, keys.shape + table.value_shape),
          f"LookupTableFindV2: expected shape {list(table.value_shape)} or "
          f"{list(keys.shape + table.value_shape)} for the default value, got {list(default.shape)}")
    return (table.find(keys, default),)


@kernel("LookupTableSizeV2", stateful=True)
def lookup_table_size(handle, **_):
    return (np.array(_table(handle, "LookupTableSizeV2").size(), np.int64),)


@kernel("LookupTableExportV2", stateful=True)
def lookup_table_export(handle, *, Tkeys=None, Tvalues=None, **_):
    table = _table(handle, "LookupTableExportV2")
    for want, have, role in ((Tkeys, table.key_dtype, "keys"), (Tvalues, table.value_dtype, "values")):
        if want is not None and want != have:
            raise KernelError(f"LookupTableExportV2: table {table.name!r} has {have.name} {role}, "
                              f"the op exports {want.name}")
    return table.export()


def _initializable(handle, op: str) -> HashTable:
    table = _table(handle, op)
    if not isinstance(table, HashTable):
        raise KernelError(f"{op}: table {table.name!r} is not initializable (a {type(table).__name__})")
    return table


def _mutable(handle, op: str) -> MutableHashTable:
    table = _table(handle, op)
    if not isinstance(table, MutableHashTable):
        raise KernelError(f"{op}: table {table.name!r} is a {type(table).__name__}, which only its "
                          "initializer fills; only mutable tables support this op")
    return table


def _initialize_from_tensors(op: str, table: HashTable, keys: np.ndarray, values: np.ndarray) -> None:
    _check_dtypes(op, table, keys, values)
    _check_values_shape(op, table, keys, values)
    check(keys.size > 0, f"{op}: keys and values cannot be empty tensors")
    table.initialize_from(keys, values)


@kernel("LookupTableImportV2", stateful=True)
def lookup_table_import(handle, keys, values, **_):
    """An initializer for a HashTable; for a mutable table, its new contents."""
    table = _table(handle, "LookupTableImportV2")
    keys, values = np.asarray(keys), np.asarray(values)
    if isinstance(table, HashTable):
        _initialize_from_tensors("LookupTableImportV2", table, keys, values)
        return ()
    table = _mutable(table, "LookupTableImportV2")
    _check_dtypes("LookupTableImportV2", table, keys, values)
    _check_values_shape("LookupTableImportV2", table, keys, values)
    table.replace(keys, values)
    return ()


@kernel("InitializeTableV2", stateful=True)
def initialize_table(handle, keys, values, **_):
    table = _initializable(handle, "InitializeTableV2")
    keys = np.asarray(keys)
    check(keys.ndim == 1, f"InitializeTableV2: keys must be a vector, got shape {list(keys.shape)}")
    _initialize_from_tensors("InitializeTableV2", table, keys, np.asarray(values))
    return ()


@kernel("LookupTableInsertV2", stateful=True)
def lookup_table_insert(handle, keys, values, **_):
    table = _mutable(handle, "LookupTableInsertV2")
    keys, values = np.asarray(keys), np.asarray(values)
    _check_dtypes("LookupTableInsertV2", table, keys, values)
    _check_values_shape("LookupTableInsertV2", table, keys, values)
    table.insert(keys, values)
    return ()


@kernel("LookupTableRemoveV2", stateful=True)
def lookup_table_remove(handle, keys, **_):
    table = _mutable(handle, "LookupTableRemoveV2")
    keys = np.asarray(keys)
    _check_dtypes("LookupTableRemoveV2", table, keys, None)
    table.remove(keys)
    return ()


# ---------------------------------------------------------------------------------------------
# Initializing a table from a text file

LINE_NUMBER = -1
WHOLE_LINE = -2


@kernel("InitializeTableFromTextFileV2", context=True, stateful=True)
def initialize_table_from_text_file(ctx, handle, filename, *, key_index, value_index, vocab_size=-1,
                                    delimiter="\t", offset=0, **_):
    """Each line of the file gives one key and one value: a column (split at `delimiter`),
    the whole line (WHOLE_LINE) or the line number plus `offset` (LINE_NUMBER). A table that
    is already initialized is left as it is (TensorFlow shares such tables by file name)."""
    table = _initializable(handle, "InitializeTableFromTextFileV2")
    check(len(delimiter.encode("utf-8", "surrogateescape")) == 1,
          f"InitializeTableFromTextFileV2: delimiter should be one character, got {delimiter!r}")
    _check_text_columns(table, key_index, value_index)
    path = checked_path(ctx, filename, "InitializeTableFromTextFileV2")
    lines = _lines(read_bytes(path, "InitializeTableFromTextFileV2"), path)
    if not table.initialized:
        columns = _TextColumns(path, key_index, value_index, delimiter, offset)
        table.fill(columns.pairs(lines, vocab_size, table))
    return ()


def _check_text_columns(table: HashTable, key_index: int, value_index: int) -> None:
    for index, dtype, role in ((key_index, table.key_dtype, "key"), (value_index, table.value_dtype, "value")):
        check(index >= WHOLE_LINE, f"InitializeTableFromTextFileV2: invalid {role}_index {index}")
        check(index != LINE_NUMBER or dtype.name == "int64",
              f"InitializeTableFromTextFileV2: {role} index for line number requires a table "
              f"{role} dtype of int64, got {dtype.name}")
        check(index != WHOLE_LINE or dtype.is_string or dtype.numpy.kind in "iu",
              f"InitializeTableFromTextFileV2: {role} index for whole line requires a table "
              f"{role} dtype of integer or string, got {dtype.name}")
        check(dtype.name in ("string", "int32", "int64", "float32", "float64"),
              f"InitializeTableFromTextFileV2: a text file cannot give {dtype.name} {role}s")


def _lines(data: bytes, path: Path) -> list[bytes]:
    """A file's lines without their line ends (`\\n` or `\\r\\n`), as TensorFlow's line reader
    gives them; a last line without a line end counts."""
    if not data:
        raise KernelError(f"InitializeTableFromTextFileV2: {path}: the file is empty")
    lines = data.split(b"\n")
    last = lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines] + ([last] if last else [])


class _TextColumns:
    """Turns a text file's lines into (key, value) pairs of a table's dtypes."""

    def __init__(self, path: Path, key_index: int, value_index: int, delimiter: str, offset: int):
        self.path = path
        self.key_index = key_index
        self.value_index = value_index
        self.delimiter = delimiter.encode("utf-8", "surrogateescape")
        self.offset = offset

    def pairs(self, lines: list[bytes], vocab_size: int, table: HashTable):
        if vocab_size != -1 and len(lines) < vocab_size:
            raise KernelError(f"InitializeTableFromTextFileV2: invalid vocab_size in {self.path}: "
                              f"expected {vocab_size} but got {len(lines)}")
        columns = max(self.key_index, self.value_index) + 1
        for number, line in enumerate(lines[:vocab_size] if vocab_size != -1 else lines):
            check(line != b"", f"InitializeTableFromTextFileV2: invalid content in {self.path}: "
                               f"line {number} is empty")
            tokens = line.split(self.delimiter) if columns > 0 else []
            check(len(tokens) >= columns, f"InitializeTableFromTextFileV2: invalid number of "
                                          f"columns in {self.path} line {number} ({line!r}): "
                                          f"expected at least {columns}, got {len(tokens)}")
            yield (self._field(line, tokens, number, self.key_index, table.key_dtype),
                   self._field(line, tokens, number, self.value_index, table.value_dtype))

    def _field(self, line: bytes, tokens: list[bytes], number: int, index: int, dtype: dtypes.DType):
        if index == LINE_NUMBER:
            return number + self.offset
        token = line if index == WHOLE_LINE else tokens[index]
        if dtype.is_string:
            return token
        value = parse_float(token) if dtype.numpy.kind == "f" else parse_int(token)
        if value is None or (
                dtype.numpy.kind == "i" and not np.iinfo(dtype.numpy).min <= value <= np.iinfo(dtype.numpy).max):
            raise KernelError(f"InitializeTableFromTextFileV2: field {token!r} in line {number} of "
                              f"{self.path} is not a valid {dtype.name}")
        # TensorFlow adds the offset to int32 columns (only); floats are stored at their precision
        return value + self.offset if dtype.name == "int32" else dtype.numpy.type(value).item()
