"""Nested Python structures (lists, tuples, namedtuples, dicts) of tensors and other values.

TensorFlow's order: sequences in order, dict values by sorted key. Rebuilding a structure keeps
its types and a dict's own key order.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


def is_nested(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))


def _sorted_keys(mapping: dict) -> list:
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def flatten(structure: Any) -> list:
    """The leaves, in TensorFlow's order."""
    if isinstance(structure, dict):
        return [leaf for key in _sorted_keys(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def map_structure(fn: Callable[[Any], Any], structure: Any) -> Any:
    """The same structure with `fn` applied to every leaf (leaves visited in flatten order)."""
    return pack_sequence_as(structure, [fn(leaf) for leaf in flatten(structure)])


def pack_sequence_as(structure: Any, flat: list) -> Any:
    """`structure` with its leaves replaced, in flatten order, by `flat`."""
    leaves = iter(flat)
    packed = _pack(structure, leaves)
    if next(leaves, _END) is not _END:
        raise ValueError("more values than the structure has leaves")
    return packed


_END = object()


def _pack(structure: Any, leaves: Iterator) -> Any:
    if isinstance(structure, dict):
        packed = {key: _pack(structure[key], leaves) for key in _sorted_keys(structure)}
        ordered = [(key, packed[key]) for key in structure]
        return dict(ordered) if type(structure) is dict else type(structure)(ordered)
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, leaves) for item in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    try:
        return next(leaves)
    except StopIteration:
        raise ValueError("fewer values than the structure has leaves") from None


def with_paths(structure: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(path, leaf) pairs in flatten order; a path joins keys and indices with `_` after
    `prefix` (`xs_0`, `d_a`), as TensorFlow names the specs of nested arguments."""
    if isinstance(structure, dict):
        for key in _sorted_keys(structure):
            yield from with_paths(structure[key], f"{prefix}_{key}")
    elif isinstance(structure, (list, tuple)):
        for index, item in enumerate(structure):
            yield from with_paths(item, f"{prefix}_{index}")
    else:
        yield prefix, structure


def structure_difference(first: Any, second: Any, check_types: bool = True) -> str | None:
    """Why two structures are not the same nesting of the same containers (None when they
    are), in TensorFlow's words; without `check_types`, lists and tuples count as the same."""
    if _same_structure(first, second, check_types):
        return None
    return (f"The two structures don't have the same nested structure.\n\nFirst structure: "
            f"{first!r}\n\nSecond structure: {second!r}")


def _same_structure(first: Any, second: Any, check_types: bool) -> bool:
    if not is_nested(first) or not is_nested(second):
        return is_nested(first) == is_nested(second)
    if len(first) != len(second) or (
            _kind(first, check_types) is not _kind(second, check_types)):
        return False
    if isinstance(first, dict):
        return (_sorted_keys(first) == _sorted_keys(second)
                and all(_same_structure(first[k], second[k], check_types) for k in first))
    return all(_same_structure(a, b, check_types) for a, b in zip(first, second))


def _kind(value: Any, check_types: bool) -> type:
    """The container type that matters for structure: lists and tuples differ (unless types
    are not checked), namedtuples by their class."""
    if isinstance(value, dict):
        return dict
    if not check_types:
        return list
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)
    return tuple if isinstance(value, tuple) else list
