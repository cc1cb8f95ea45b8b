"""Helpers the string kernel modules share: how string tensors and string attrs look to kernels.

String tensors are numpy object arrays of `bytes`; string attrs arrive as `str` (decoded from
the NodeDef's bytes with `surrogateescape`, so encoding them back the same way recovers the
original bytes).
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.kernels.util import check


def attr_bytes(value: str) -> bytes:
    """The original bytes of a string attr."""
    return value.encode("utf-8", "surrogateescape")


def as_bytes(value) -> bytes:
    """One element of a string tensor as bytes (a `str` element is read as UTF-8)."""
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


def objects(items, shape) -> np.ndarray:
    """An object array of the given shape holding `items` (a flat sequence of bytes)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def byte_items(strings: np.ndarray) -> list[bytes]:
    """The elements of a string tensor, flattened, as bytes."""
    return [as_bytes(s) for s in np.asarray(strings, dtype=object).ravel().tolist()]


def scalar_bytes(value: np.ndarray, op: str, what: str) -> bytes:
    check(np.ndim(value) == 0, f"{op}: {what} must be a scalar, got shape {list(np.shape(value))}")
    return as_bytes(np.asarray(value).item())
