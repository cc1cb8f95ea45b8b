"""The native engine (Rust, the `savedmodel._native` extension) behind `load(dir, engine=...)`.

The extension compiles each signature once into a plan of native kernels and runs it with the
GIL released. This module gives it the numpy engine's face: the same `Model`-like object
(`signatures[name](**feeds)`, `variables`), the same feed conversion (runtime.feeds, so both
engines accept and reject the same values with the same messages) and the same exception
classes. The extension is optional: a source install without a Rust toolchain has none, and
`load` then runs every model on the numpy engine.
"""
from __future__ import annotations

import functools
import operator
import time
from pathlib import Path

import numpy as np

from savedmodel.runtime.deadline import DeadlineExceededError
from savedmodel.runtime.deadline import current as _current_deadline
from savedmodel.runtime.dtypes import from_name, from_numpy
from savedmodel.runtime.errors import (FileAccessError, FileFormatError, GraphError, NodeError, SavedModelError,
                                       UnknownSignatureError)
from savedmodel.runtime.feeds import FeedError, to_input
from savedmodel.runtime.registry import UnsupportedOpError
from savedmodel.runtime.signatures import Signatures
from savedmodel.runtime.specs import TensorSpecInfo

try:
    from savedmodel import _native
except ImportError:  # built without a Rust toolchain: the numpy engine runs everything
    _native = None


class NativeUnsupportedError(UnsupportedOpError):
    """The native engine has no kernel for ops a model needs; `missing` lists (op, node,
    function) for each use, function '' for the top-level graph."""

    def __init__(self, message: str, missing: list[tuple[str, str, str]]):
        super().__init__(message)
        self.missing = missing

    @property
    def ops(self) -> list[str]:
        """The missing op types, sorted, each once."""
        return sorted({op for op, _, _ in self.missing})


def available() -> bool:
    """Whether the native extension was built and imports."""
    return _native is not None


def ops() -> list[str]:
    """The ops the native engine has kernels for (empty without the extension)."""
    return list(_native.ops()) if _native is not None else []


_ERRORS = {
    "graph": GraphError,
    "run": NodeError,
    "feed": FeedError,
    "deadline": DeadlineExceededError,
    "file_format": FileFormatError,
    "missing_file": FileNotFoundError,
    "file_access": FileAccessError,
}


def _translate(err: Exception) -> Exception:
    """The numpy engine's exception class for a NativeError(kind, message, missing)."""
    kind, message, missing = err.args
    if kind == "unsupported_ops":
        return NativeUnsupportedError(message, [tuple(m) for m in missing])
    if kind == "unknown_signature":
        return UnknownSignatureError(message)
    return _ERRORS.get(kind, SavedModelError)(message)


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except _native.NativeError as err:
        raise _translate(err) from None


def load_native(export_dir: str | Path, tags=("serve",), *, allow_file_access: bool = False,
                output_dir: str | Path | None = None) -> NativeModel:
    """Load a SavedModel directory, or a frozen GraphDef file (`.pb`), on the native engine;
    NativeUnsupportedError names the ops it has no kernel for."""
    if _native is None:
        raise UnsupportedOpError("the native engine is not built in this installation "
                                 "(install with a Rust toolchain to build it)")
    path = Path(export_dir)
    out = None if output_dir is None else str(output_dir)
    if path.is_file():
        inner = _call(_native.NativeModel.load_graph_def, str(path), allow_file_access, out)
        return NativeModel(path, inner)
    # The extension checks the object graph's ids as it loads (so a damaged graph is a load
    # error, as on the numpy engine); its methods are bound on first use of `functions`.
    inner = _call(_native.NativeModel.load, str(path), list(tags), allow_file_access, out)
    return NativeModel(path, inner, tuple(tags))


class NativeModel:
    """A model loaded on the native engine: `signatures` and `variables` as the numpy engine's
    Model has them."""

    engine = "native"

    def __init__(self, export_dir: Path, inner, tags: tuple[str, ...] | None = None):
        self.export_dir = export_dir
        self._inner = inner
        self._tags = tags
        self.signatures = Signatures({name: NativeSignature(inner, name, method, inputs, outputs)
                                      for name, method, inputs, outputs in inner.signatures()})
        self.engine_reason = "the native engine has a kernel for every op the signatures need"

    @functools.cached_property
    def unavailable(self) -> dict[str, list[tuple[str, str, str]]]:
        """The object graph's concrete functions that need ops without a native kernel, each
        with those ops' uses `(op, node, function)`: no signature needs them, so the model
        loads, and calling one raises NativeUnsupportedError."""
        return {name: [tuple(use) for use in uses] for name, uses in self._inner.unavailable()}

    @property
    def variables(self) -> dict[str, np.ndarray]:
        """Current value of every variable: by object-graph path in TensorFlow 2 models, by
        shared name in TensorFlow 1 models."""
        return {name: _from_native(dtype, value) for name, dtype, value in self._inner.variables()}

    @functools.cached_property
    def _object_graph(self):
        """The SavedObjectGraph, for the input and output structures of `functions` (None for a
        frozen GraphDef). The engine hands it over serialized: parsing the whole file again
        would hold a second copy of the graph in Python."""
        if self._tags is None:
            return None
        from savedmodel.protos import saved_object_graph_pb2
        return saved_object_graph_pb2.SavedObjectGraph.FromString(self._inner.object_graph() or b"")

    @functools.cached_property
    def functions(self) -> dict:
        """The object graph's methods by dotted path, as the numpy engine's Model has them;
        they run on the native engine and share its variables and tables. Bound on first use
        (a damaged saved signature is a FileFormatError here), so that a process that only
        calls signatures imports no protobuf module."""
        if self._object_graph is None:
            return {}
        from savedmodel.runtime.native_functions import bind
        return bind(self)

    def __repr__(self) -> str:
        return f"<NativeModel {str(self.export_dir)!r} signatures={list(self.signatures)}>"


def _spec(key: str, tensor_name: str, dtype: str, shape) -> TensorSpecInfo:
    """A signature input or output as the numpy engine describes it (dtype as its DataType
    label, DT_FLOAT; None for unknown dimensions)."""
    dims = None if shape is None else tuple(None if d < 0 else d for d in shape)
    return TensorSpecInfo(key, from_name(dtype).enum_name, dims, tensor_name)


class _Feed:
    """How one signature input takes a caller's value, worked out once per signature: an array
    that already is what the extension reads (an ndarray of the input's dtype and shape, in any
    memory layout: the extension copies it in row-major order) goes through as it is, anything
    else through runtime.feeds as on the numpy engine, so both engines accept, convert and
    reject the same values with the same messages."""

    __slots__ = ("key", "dtype", "shape", "where", "_numpy", "_rank", "_pick", "_want")

    def __init__(self, key: str, spec: TensorSpecInfo, signature: str):
        self.key = key
        self.dtype = from_name(spec.dtype)
        self.shape = spec.shape
        self.where = f"input {key!r} of signature {signature!r}"
        # Only dtypes the extension reads as they are take the short way (not strings, 16-bit
        # floats or complex numbers, which _to_native reinterprets).
        numpy = self.dtype.numpy
        plain = numpy is not None and numpy.kind in "biuf" and numpy.name not in _BITS
        self._numpy = numpy if plain else None
        shape = spec.shape
        self._rank = -1 if shape is None else len(shape)
        known = [] if shape is None else [i for i, d in enumerate(shape) if d is not None]
        self._pick = operator.itemgetter(*known) if known else None
        self._want = None if not known else (shape[known[0]] if len(known) == 1
                                             else tuple(shape[i] for i in known))

    def take(self, value):
        """`value` as the extension reads it; FeedError as the numpy engine raises it."""
        if (type(value) is np.ndarray and value.dtype is self._numpy
                and (self._rank < 0 or value.ndim == self._rank
                     and (self._pick is None or self._pick(value.shape) == self._want))):
            return value
        return _to_native(to_input(value, self.dtype, self.shape, self.where))


class NativeSignature:
    """One signature on the native engine: call with keyword feeds, get a dict of arrays."""

    def __init__(self, inner, name: str, method_name: str, inputs, outputs):
        self.name = name
        self.method_name = method_name
        self.inputs = {spec[0]: _spec(*spec) for spec in inputs}
        self.outputs = {spec[0]: _spec(*spec) for spec in outputs}
        # In the order the extension's runner takes them (the signature's, sorted by key).
        # The extension takes an array of an input's dtype and shape as it is and hands
        # anything else to that input's _Feed.take (in the signature's order, sorted by key).
        self._feeds = [_Feed(k, s, name) for k, s in self.inputs.items()]
        self._keys = frozenset(self.inputs)
        self._run = inner.runner(name, [feed.take for feed in self._feeds])

    def __call__(self, **feeds) -> dict[str, np.ndarray]:
        if feeds.keys() != self._keys:
            self._reject(feeds)
        limit = _current_deadline()
        timeout = None if limit is None else max(0.0, limit.at - time.monotonic())
        try:
            results, special = self._run(feeds, timeout)
        except _native.NativeError as err:
            err = _translate(err)
            if isinstance(err, DeadlineExceededError):
                err = DeadlineExceededError(f"{err}: the time limit of {limit.seconds:g} s ran out")
            raise err from None
        for key, dtype in special:
            results[key] = _from_native(dtype, results[key])
        return results

    def _reject(self, feeds: dict):
        missing = sorted(set(self.inputs) - set(feeds))
        extra = sorted(set(feeds) - set(self.inputs))
        listed = ", ".join(f"{k}: {s.dtype} {s.shape}" for k, s in self.inputs.items())
        raise FeedError(f"signature {self.name!r} takes inputs {listed}; "
                        + "; ".join(filter(None, [f"missing {missing}" if missing else "",
                                                  f"unexpected {extra}" if extra else ""])))

    def __repr__(self) -> str:
        return f"<Signature {self.name!r} inputs={list(self.inputs)} outputs={list(self.outputs)}>"


_BITS = {"float16": np.float16, "bfloat16": from_name("bfloat16").numpy}
_PAIRS = {"complex64": np.float32, "complex128": np.float64}


def _to_native(array: np.ndarray):
    """What the extension reads: a C-contiguous array (16-bit floats as their bit patterns,
    complex numbers as float pairs), or (shape, [bytes]) for strings."""
    if array.dtype == object:
        return list(array.shape), [bytes(b) for b in array.ravel()]
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a scalar 1-D)
        array = array.copy(order="C")
    if array.dtype.name in _BITS:
        return array.view(np.uint16)
    if array.dtype.name in _PAIRS:
        return array.view(_PAIRS[array.dtype.name]).reshape(array.shape + (2,))
    return array


def _from_native(dtype: str, value) -> np.ndarray:
    """The numpy array for an output of the extension (see _to_native; no copy but strings)."""
    if dtype == "string":
        shape, items = value
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(shape)
    if dtype in _BITS:
        return value.view(_BITS[dtype])
    if dtype in _PAIRS:
        return value.view(np.dtype(dtype))[..., 0]
    return value
