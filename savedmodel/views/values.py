"""Short, deterministic spellings of dtypes, shapes, strings and tensor contents, shared by the
text and JSON views so the two cannot disagree about what a value is.

Floats are written as the shortest decimal that reads back to the same value of their own
width (a float32 attr `0.1` prints `0.1`, not `0.10000000149011612`); tensors are previewed by
their first few elements, never printed whole.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from savedmodel.protos import tensor_pb2, types_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.tensor_proto import shape_from_proto, to_numpy

PREVIEW = 4
"""How many elements of a tensor a view shows."""

Shape = tuple[int | None, ...]
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def dtype_name(enum: int) -> str:
    """`float32`, `resource`, ...; reference types get `_ref`; unknown enums `DataType(N)`."""
    try:
        name = dtypes.from_enum(enum).name
    except dtypes.UnknownDTypeError:
        try:
            return types_pb2.DataType.Name(enum).removeprefix("DT_").lower()
        except ValueError:
            return f"DataType({enum})"
    return name + "_ref" if enum > dtypes.REF_OFFSET else name


def shape_text(shape: Shape | None) -> str:
    """`[?,2]` with `?` for an unknown dimension, `[]` for a scalar, `[...]` for unknown rank."""
    if shape is None:
        return "[...]"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def escape(data: bytes | str) -> str:
    """Printable text for bytes: UTF-8 where it decodes, backslash escapes for quotes,
    backslashes, control characters and bytes that are not UTF-8."""
    return "".join(_escaped(data))


def _escaped(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    return [_escape_char(c) for c in text]


def _escape_char(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if not char.isprintable():
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def quote(data: bytes | str, limit: int = 48) -> str:
    """`"text"`, cut after `limit` escaped characters with the full length in bytes noted."""
    pieces = _escaped(data)
    if sum(map(len, pieces)) <= limit:
        return '"' + "".join(pieces) + '"'
    kept, length = [], 0
    for piece in pieces:
        if length + len(piece) > limit:
            break
        kept.append(piece)
        length += len(piece)
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    return '"' + "".join(kept) + f'..." ({size} bytes)'


def scalar_text(value) -> str:
    """One element of a numpy array as the views write it."""
    if isinstance(value, (bytes, str)):
        return quote(value, 24)
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        return str(complex(value))
    return float_text(value)


def float_text(value) -> str:
    """Shortest round-trip decimal at the value's own precision (float32 unless told)."""
    if isinstance(value, (float, np.float64)) and not isinstance(value, np.float32):
        return repr(float(value))
    if isinstance(value, np.float16):
        return str(value)
    return str(np.float32(value))


def float_json(value) -> float | str:
    """A float for JSON: the shortest decimal, or "nan"/"inf"/"-inf", which JSON cannot hold."""
    number = float(float_text(value))
    return number if math.isfinite(number) else float_text(value)


@dataclass(frozen=True)
class TensorPreview:
    """What a view shows of a TensorProto: its dtype and shape, its element count, its first
    `PREVIEW` elements in row-major order (numpy scalars or bytes), and `error` when the
    contents cannot be read (empty for types without values here, such as variants)."""

    dtype: str
    shape: Shape | None
    size: int | None
    values: tuple
    error: str = ""

    @property
    def truncated(self) -> bool:
        return self.size is not None and self.size > len(self.values)


def preview(proto: tensor_pb2.TensorProto, where: str = "") -> TensorPreview:
    shape = shape_from_proto(proto.tensor_shape)
    size = math.prod(d for d in shape) if shape is not None and None not in shape else None
    name = dtype_name(proto.dtype)
    try:
        known = dtypes.from_enum(proto.dtype).numpy is not None
    except dtypes.UnknownDTypeError:
        known = False
    if not known:
        return TensorPreview(name, shape, size, ())
    try:
        flat = to_numpy(proto, where).reshape(-1)
    except SavedModelError as err:
        return TensorPreview(name, shape, size, (), str(err))
    return TensorPreview(name, shape, size, tuple(flat[:PREVIEW]))


def tensor_text(proto: tensor_pb2.TensorProto, where: str = "") -> str:
    """`int64[] 1`, `float32[2,2] [0.5, 1.0, -2.0, 3.0]`, `float32[100] [0.1, 0.2, 0.3, 0.4, ...]`."""
    found = preview(proto, where)
    head = found.dtype + shape_text(found.shape)
    if found.error:
        return f"{head} <invalid: {found.error}>"
    if not found.values and found.size != 0:
        return head
    items = [scalar_text(v) for v in found.values]
    if found.shape == () and len(items) == 1:
        return f"{head} {items[0]}"
    return f"{head} [{', '.join(items + ['...'] * found.truncated)}]"
