"""State of a loaded model: resource variables and lookup tables, shared between every function
and signature that captures them, so an `assign_add` or a table insert in one call is seen by
the next."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import KernelError


class Variable:
    """A resource variable: what a resource handle points at.

    Values are replaced, never modified in place, so a value read earlier stays what it was
    (TensorFlow's read semantics) without copying on every read.
    """

    __slots__ = ("name", "dtype", "shape", "value")

    def __init__(self, name: str, dtype: dtypes.DType, shape, value: np.ndarray | None = None):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value = value

    def read(self) -> np.ndarray:
        if self.value is None:
            raise KernelError(f"variable {self.name!r} is read before it is initialized")
        return self.value

    def assign(self, value) -> None:
        value = np.asarray(value)
        if value.dtype != self.dtype.numpy and not (self.dtype.is_string and value.dtype == object):
            raise KernelError(f"variable {self.name!r} holds {self.dtype.name}; cannot assign "
                              f"a {value.dtype} value")
        self.value = value

    def __repr__(self) -> str:
        return f"<Variable {self.name!r} {self.dtype.name} shape={self.shape}>"


class ResourceManager:
    """Variables created by `VarHandleOp` nodes and lookup tables created by table ops, each
    keyed by (container, shared_name) in its own namespace, as TensorFlow keys resources by
    type too."""

    def __init__(self):
        self._variables: dict[tuple[str, str], Variable] = {}
        self._tables: dict[tuple[str, str], LookupTable] = {}
        self.random_generators: dict = {}
        """Generators of stateful random ops, by function, node, op and attrs: one per node,
        as TensorFlow keeps one per kernel (runtime.kernels.random)."""

    def variable(self, container: str, shared_name: str, dtype: dtypes.DType, shape) -> Variable:
        key = (container, shared_name)
        found = self._variables.get(key)
        if found is None:
            found = self._variables[key] = Variable(shared_name, dtype, shape)
        return found

    def existing(self, container: str, shared_name: str) -> Variable | None:
        return self._variables.get((container, shared_name))

    def bind(self, container: str, shared_name: str, variable: Variable) -> None:
        """Make `VarHandleOp(container, shared_name)` nodes resolve to an existing variable."""
        self._variables[(container, shared_name)] = variable

    def table(self, container: str, shared_name: str, make: type[LookupTable], key_dtype: dtypes.DType,
              value_dtype: dtypes.DType, value_shape: tuple[int, ...] = ()) -> LookupTable:
        """The table named (container, shared_name), made with `make` if there is none yet. An
        existing table is returned whatever its kind, as TensorFlow does, but its dtypes must
        be the ones asked for."""
        key = (container, shared_name)
        found = self._tables.get(key)
        if found is None:
            found = self._tables[key] = make(shared_name, key_dtype, value_dtype, value_shape)
        elif (found.key_dtype, found.value_dtype) != (key_dtype, value_dtype):
            raise KernelError(f"table {shared_name!r} maps {found.key_dtype.name} to "
                              f"{found.value_dtype.name}; it cannot be used as a table of "
                              f"{key_dtype.name} to {value_dtype.name}")
        return found

    def by_name(self) -> dict[str, Variable]:
        """Every variable by its shared name (container-qualified when it has a container)."""
        return {f"{c}/{n}" if c else n: v for (c, n), v in self._variables.items()}


class LookupTable:
    """A lookup table: what a table handle (`HashTableV2`, `MutableHashTableV2`, ...) points at.

    Entries are kept in a dict of Python values: keys as bytes or ints, values as Python
    scalars (or numpy rows of `value_shape`), so a lookup is one dict probe per key. Subclasses
    say how the table may be filled: once by an initializer (`HashTable`) or at any time
    (`MutableHashTable`).
    """

    def __init__(self, name: str, key_dtype: dtypes.DType, value_dtype: dtypes.DType,
                 value_shape: tuple[int, ...] = ()):
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.value_shape = tuple(value_shape)
        self.entries: dict = {}

    @property
    def ready(self) -> bool:
        """Whether lookups may read the table."""
        return True

    def size(self) -> int:
        return len(self.entries)

    def find(self, keys: np.ndarray, default: np.ndarray) -> np.ndarray:
        """The value of every key, or the default (one value, or one per key) where it has none."""
        if not self.ready:
            raise KernelError(f"table {self.name!r} is not initialized")
        flat = _key_list(keys)
        shape = keys.shape + self.value_shape
        if not self.value_shape and default.ndim == 0:
            get = self.entries.get
            fallback = default.item()
            return np.array([get(k, fallback) for k in flat], dtype=self.value_dtype.numpy).reshape(shape)
        out = np.empty(shape, dtype=self.value_dtype.numpy)
        out[...] = default
        rows = out.reshape((len(flat),) + self.value_shape)
        for i, key in enumerate(flat):
            found = self.entries.get(key)
            if found is not None:
                rows[i] = found
        return out

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.array(list(self.entries), dtype=self.key_dtype.numpy).reshape(-1)
        values = np.empty((len(self.entries),) + self.value_shape, dtype=self.value_dtype.numpy)
        for i, value in enumerate(self.entries.values()):
            values[i] = value
        return keys, values

    def _pairs(self, keys: np.ndarray, values: np.ndarray) -> zip:
        rows = values.reshape((keys.size,) + self.value_shape)
        return zip(_key_list(keys), rows if self.value_shape else rows.tolist())

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.name!r} {self.key_dtype.name}->{self.value_dtype.name}"
                f" size={self.size()}>")


class HashTable(LookupTable):
    """TensorFlow's HashTable (`tf.lookup.StaticHashTable`): filled once by an initializer,
    read-only afterwards, and unreadable before.

    An initializer that meets a key twice with different values fails and leaves the table
    uninitialized, with the entries it had inserted so far (which a later initializer adds
    to), as in TensorFlow."""

    def __init__(self, name: str, key_dtype: dtypes.DType, value_dtype: dtypes.DType,
                 value_shape: tuple[int, ...] = ()):
        super().__init__(name, key_dtype, value_dtype, value_shape)
        self.initialized = False

    @property
    def ready(self) -> bool:
        return self.initialized

    def size(self) -> int:
        return len(self.entries) if self.initialized else 0

    def fill(self, pairs) -> None:
        """Initialize the table from (key, value) pairs."""
        if self.initialized:
            raise KernelError(f"table {self.name!r} is already initialized")
        for key, value in pairs:
            previous = self.entries.setdefault(key, value)
            if previous is not value and previous != value:
                raise KernelError(f"table {self.name!r} has different values for the same key: "
                                  f"key {key!r} has {previous!r}, trying to add {value!r}")
        self.initialized = True

    def initialize_from(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Initialize the table from tensors of keys and values. TensorFlow accepts this again
        on an initialized table when it would give the table as many entries as it has (it
        compares sizes only, and keeps the entries it has); otherwise it is an error."""
        if not self.initialized:
            self.fill(self._pairs(keys, values))
        elif keys.size != len(self.entries):
            raise KernelError(f"table {self.name!r} was already initialized with different data")

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.initialized:
            raise KernelError(f"table {self.name!r} is not initialized")
        return super().export()


class MutableHashTable(LookupTable):
    """TensorFlow's MutableHashTable (and MutableHashTableOfTensors, whose values have
    `value_shape`): starts empty; inserts overwrite, imports replace the contents."""

    def insert(self, keys: np.ndarray, values: np.ndarray) -> None:
        self.entries.update(self._pairs(keys, values))

    def replace(self, keys: np.ndarray, values: np.ndarray) -> None:
        self.entries = dict(self._pairs(keys, values))

    def remove(self, keys: np.ndarray) -> None:
        for key in _key_list(keys):
            self.entries.pop(key, None)


def _key_list(keys: np.ndarray) -> list:
    """Keys as dict keys: ints for integer keys, bytes for string keys."""
    return keys.ravel().tolist()
