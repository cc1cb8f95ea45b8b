"""TensorShape: the static shape of a tensor, as `tf.TensorShape` prints and compares it.

A shape is a tuple of dimensions (an int, or None where the size is unknown until run time),
or unknown altogether (unknown rank). Eager tensors always have fully known shapes; symbolic
tensors in a graph may not. The text forms are TensorFlow's: `str` gives `(2, 3)`, `(None,)`
or `<unknown>`; `repr` gives `TensorShape([2, 3])` or `TensorShape(None)`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

Dims = tuple[int | None, ...]


class TensorShape:
    """Immutable, hashable; equal to a tuple or list with the same dimensions."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Any):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        elif dims is not None:
            dims = tuple(_dimension(d) for d in dims)
        object.__setattr__(self, "_dims", dims)

    def __setattr__(self, name, value):
        raise AttributeError("TensorShape is immutable")

    @property
    def rank(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self) -> list[int | None] | None:
        return None if self._dims is None else list(self._dims)

    def as_list(self) -> list[int | None]:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self) -> Dims | None:
        """The dimensions as a tuple, or None for an unknown rank."""
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        count = 1
        for d in self._dims:
            count *= d
        return count

    def is_compatible_with(self, other: Any) -> bool:
        """Whether some fully known shape fits both (None matches anything)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape that both shapes fit: differing dims become None, a
        differing rank an unknown rank (how `reduce_retracing` relaxes a signature)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape(a if a == b else None for a, b in zip(self._dims, other._dims))

    def merge_with(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape(a if a is not None else b for a, b in zip(self._dims, other._dims))

    def concatenate(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[int | None]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self) -> bool:
        return self._dims is not None

    def __eq__(self, other: Any) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: Any) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._dims)

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join(map(_dim_text, self._dims))
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape([" + ", ".join(map(_dim_text, self._dims)) + "])"


def _dim_text(size: int | None) -> str:
    return "None" if size is None else str(size)


def as_shape(value: Any) -> TensorShape:
    """A TensorShape from a TensorShape, a sequence of dims, or None (unknown rank)."""
    if isinstance(value, TensorShape):
        return value
    if value is not None and not isinstance(value, Iterable):
        raise TypeError(f"cannot convert {value!r} to a TensorShape")
    return TensorShape(value)


def _dimension(value: Any) -> int | None:
    if value is None:
        return None
    if hasattr(value, "value") and not isinstance(value, int):  # a Dimension-like object
        value = value.value
        if value is None:
            return None
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"Dimension value must be an integer or None, got {value!r}") from None
    if size != value or isinstance(value, bool):
        raise TypeError(f"Dimension value must be an integer or None, got {value!r}")
    if size < 0:
        if size == -1:
            return None
        raise ValueError(f"Dimension {size} must be >= 0")
    return size


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape | None:
    """The static shape of a broadcasting elementwise result, or None when the shapes can
    never broadcast (a size-1 or unknown dimension broadcasts; unknown ones stay unknown)."""
    if a.rank is None or b.rank is None:
        return TensorShape(None)
    x, y = a.as_tuple(), b.as_tuple()
    if len(x) < len(y):
        x = (1,) * (len(y) - len(x)) + x
    else:
        y = (1,) * (len(x) - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if p == 1:
            out.append(q)
        elif q == 1:
            out.append(p)
        elif p is None or q is None:
            out.append(p if q is None else q)
        elif p == q:
            out.append(p)
        else:
            return None
    return TensorShape(out)
