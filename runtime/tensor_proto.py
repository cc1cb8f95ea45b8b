"""Conversion between numpy arrays and TensorProto / TensorShapeProto messages.

Reading accepts every encoding TensorFlow produces: packed `tensor_content`, each typed `*_val`
field, and the rule that a typed field with fewer values than the shape holds repeats its last
value (no values at all means zeros). Writing produces the encoding TensorFlow's
`make_tensor_proto` gives a numpy array, so Const nodes we write match TensorFlow's byte for byte.
Sizes claimed by the message are checked before anything is allocated: packed bytes against
the shape, and what a compact form expands to against `Limits.max_const_bytes`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from savedmodel.protos import tensor_pb2, tensor_shape_pb2, types_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.dtypes import DType
from savedmodel.runtime.errors import FileFormatError, TensorProtoError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.varint import read_varint

Shape = tuple[int, ...]

_PACKED_TYPES = frozenset({
    types_pb2.DT_HALF, types_pb2.DT_BFLOAT16, types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE,
    types_pb2.DT_INT8, types_pb2.DT_INT16, types_pb2.DT_INT32, types_pb2.DT_INT64,
    types_pb2.DT_UINT8, types_pb2.DT_UINT32, types_pb2.DT_UINT64,
})
"""Types TensorFlow writes into `tensor_content` when a tensor has more than one element.

bool, uint16, complex and string tensors always use their typed field."""

MAX_ELEMENTS = 2**62
"""No array can hold this many elements; a shape that claims as many is corrupt."""
MAX_RANK = 64
"""numpy's limit on an array's dimensions (TensorFlow's own is 254)."""

_HALF_TYPES = frozenset({types_pb2.DT_HALF, types_pb2.DT_BFLOAT16})
_COMPLEX_TYPES = frozenset({types_pb2.DT_COMPLEX64, types_pb2.DT_COMPLEX128})


def shape_to_proto(shape: Sequence[int | None] | None) -> tensor_shape_pb2.TensorShapeProto:
    """A TensorShapeProto; None is an unknown rank, a None dimension is unknown (-1)."""
    proto = tensor_shape_pb2.TensorShapeProto()
    if shape is None:
        proto.unknown_rank = True
        return proto
    for size in shape:
        proto.dim.add().size = -1 if size is None else int(size)
    return proto


def shape_from_proto(proto: tensor_shape_pb2.TensorShapeProto) -> tuple[int | None, ...] | None:
    """The shape as a tuple with None for unknown dimensions, or None for an unknown rank."""
    if proto.unknown_rank:
        return None
    return tuple(None if d.size == -1 else d.size for d in proto.dim)


def to_numpy(proto: tensor_pb2.TensorProto, where: str = "", limits: Limits = DEFAULT) -> np.ndarray:
    """The value of a TensorProto as a new, writable numpy array.

    Strings come back as an object array of `bytes`. `where` names the node, file or key the
    proto came from, so that an error message can point at it.
    """
    prefix = f"{where}: " if where else ""
    dtype = _convertible_dtype(proto.dtype, prefix)
    if proto.tensor_shape.unknown_rank:
        raise TensorProtoError(f"{prefix}tensor value has an unknown rank")
    shape = checked_dims(tuple(d.size for d in proto.tensor_shape.dim), prefix, "tensor value")
    count = math.prod(shape)
    if proto.tensor_content:
        flat = _from_content(proto.tensor_content, dtype, count, prefix)
    else:
        flat = _from_field(proto, dtype, count, prefix, limits)
    return flat.reshape(shape)


def from_numpy(value, dtype: DType | str | None = None,
               shape: Sequence[int] | None = None) -> tensor_pb2.TensorProto:
    """A TensorProto holding `value` (array-like), encoded as TensorFlow's `make_tensor_proto`
    encodes the same arguments.

    `dtype` converts the value first; without it the dtype follows the array (numpy strings,
    bytes and Python str become `string`, str encoded as UTF-8). `shape` may hold more elements
    than `value`: then only the given values are stored and a reader repeats the last one, the
    compact form TensorFlow writes for constants such as `ones([10])`.
    """
    row = None if dtype is None else dtypes.as_dtype(dtype)
    array = _as_array(value, row)
    row = row or dtypes.from_numpy(array.dtype)
    stored_shape = array.shape if shape is None else _checked_shape(shape, array.size)
    proto = tensor_pb2.TensorProto(dtype=row.enum)
    proto.tensor_shape.CopyFrom(shape_to_proto(stored_shape))
    if row.enum in _PACKED_TYPES and array.size > 1 and array.size == math.prod(stored_shape):
        proto.tensor_content = _little_endian(array).tobytes()
    else:
        _fill_field(proto, row, array.ravel())
    return proto


def _checked_shape(shape: Sequence[int], size: int) -> Shape:
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise TensorProtoError(f"shape {list(dims)} has a negative dimension")
    if size > math.prod(dims):
        raise TensorProtoError(f"{size} values do not fit shape {list(dims)}")
    return dims


def _as_array(value, row: DType | None) -> np.ndarray:
    if row is not None and row.is_string:
        return string_array(value)
    array = np.asarray(value)
    if row is None:
        return string_array(array) if array.dtype.kind in "OSU" else array
    if row.numpy is None:
        raise TensorProtoError(f"cannot build a {row.enum_name} tensor from a numpy value")
    return array.astype(row.numpy, copy=False)


def string_text(value) -> str:
    """The text of one string element (bytes decoded as UTF-8, undecodable bytes kept as
    surrogates, the way attrs are decoded), e.g. a file name or a checkpoint key."""
    item = np.asarray(value, dtype=object).item()
    return item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else str(item)


def string_array(value) -> np.ndarray:
    """An object array of bytes; str is encoded as UTF-8, anything else is a clear error."""
    source = np.asarray(value, dtype=object)
    out = np.empty(source.shape, dtype=object)
    for index, item in np.ndenumerate(source):
        if isinstance(item, (bytes, np.bytes_)):
            out[index] = bytes(item)
        elif isinstance(item, (str, np.str_)):
            out[index] = str(item).encode("utf-8")
        else:
            raise TensorProtoError(
                f"string tensor element at index {index} is {type(item).__name__}, not bytes or str")
    return out


def _little_endian(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))


def _fill_field(proto: tensor_pb2.TensorProto, row: DType, flat: np.ndarray) -> None:
    field = getattr(proto, row.field)
    if row.enum in _HALF_TYPES:
        field.extend(flat.view(np.uint16).tolist())
    elif row.enum in _COMPLEX_TYPES:
        field.extend(np.stack([flat.real, flat.imag], axis=-1).ravel().tolist())
    else:
        field.extend(flat.tolist())


def _convertible_dtype(enum: int, prefix: str) -> DType:
    try:
        row = dtypes.from_enum(enum)
    except dtypes.UnknownDTypeError as err:
        raise TensorProtoError(f"{prefix}{err}") from None
    if row.numpy is None:
        raise TensorProtoError(f"{prefix}a {row.enum_name} tensor has no numpy value")
    return row


def checked_dims(sizes: Shape, prefix: str, what: str, error=TensorProtoError) -> Shape:
    """`sizes` if an array of that shape can exist: no negative or unknown dimension, at most
    numpy's 64 dimensions, fewer than 2**62 elements (not counting zero dimensions, since numpy
    rejects (2**40, 0, 2**40) too); else `error` naming `what`."""
    if len(sizes) > MAX_RANK:
        raise error(f"{prefix}{what} has rank {len(sizes)}; numpy arrays have at most {MAX_RANK} "
                    "dimensions (TensorFlow allows 254), so the runtime cannot hold it")
    if any(size < 0 for size in sizes):
        raise error(f"{prefix}{what} has a negative dimension in shape {list(sizes)}")
    if math.prod(size for size in sizes if size) >= MAX_ELEMENTS:  # numpy counts past a 0 too
        raise error(f"{prefix}{what} shape {list(sizes)} has more elements than an array can")
    return sizes


def _from_content(content: bytes, row: DType, count: int, prefix: str) -> np.ndarray:
    if row.is_string:
        return _decode_string_list(content, count, prefix)
    expected = count * row.itemsize
    if len(content) != expected:
        raise TensorProtoError(
            f"{prefix}tensor_content holds {len(content)} bytes, but {count} elements of "
            f"{row.name} need {expected}")
    return np.frombuffer(content, dtype=row.numpy.newbyteorder("<")).astype(row.numpy)


def _from_field(proto: tensor_pb2.TensorProto, row: DType, count: int, prefix: str,
                limits: Limits) -> np.ndarray:
    values = getattr(proto, row.field)
    if row.enum in _COMPLEX_TYPES:
        if len(values) % 2:
            raise TensorProtoError(f"{prefix}{row.field} holds an odd number of values "
                                   f"({len(values)}); complex values are (real, imag) pairs")
        given = len(values) // 2
    else:
        given = len(values)
    if given > count:
        raise TensorProtoError(f"{prefix}{row.field} holds {given} values, more than the "
                               f"{count} elements of the tensor's shape")
    expanded = count * (row.itemsize or np.dtype(object).itemsize)
    if given < count and expanded > limits.max_const_bytes:
        raise TensorProtoError(f"{prefix}{row.field} holds {given} values that would expand to "
                               f"{count} elements ({expanded} bytes), more than "
                               f"{limits.exceeded('max_const_bytes')}")
    if given == 0:
        return np.full(count, b"", dtype=object) if row.is_string else np.zeros(count, row.numpy)
    flat = _decode_values(values, row, prefix)
    if given < count:
        flat = np.concatenate([flat, np.repeat(flat[-1:], count - given)])
    return flat


def _decode_values(values, row: DType, prefix: str) -> np.ndarray:
    if row.is_string:
        flat = np.empty(len(values), dtype=object)
        flat[:] = list(values)
        return flat
    if row.enum in _HALF_TYPES:
        bits = np.array(values, dtype=np.int64)
        if bits.min() < 0 or bits.max() > 0xFFFF:
            raise TensorProtoError(f"{prefix}half_val holds a value outside 0..65535, "
                                   "which is not a 16-bit pattern")
        return bits.astype(np.uint16).view(row.numpy)
    if row.enum in _COMPLEX_TYPES:
        parts = np.array(values, dtype=row.numpy.type(0).real.dtype)
        flat = np.empty(len(parts) // 2, dtype=row.numpy)
        flat.real, flat.imag = parts[0::2], parts[1::2]
        return flat
    if row.field == "int_val":
        return np.array(values, dtype=np.int64).astype(row.numpy)
    return np.array(values, dtype=row.numpy)


def _decode_string_list(content: bytes, count: int, prefix: str) -> np.ndarray:
    """Strings packed as `count` varint lengths followed by the concatenated bytes."""
    lengths = []
    pos = 0
    for _ in range(count):
        try:
            length, pos = read_varint(content, pos, f"{prefix}string tensor_content")
        except FileFormatError as err:
            raise TensorProtoError(str(err)) from None
        lengths.append(length)
    if sum(lengths) != len(content) - pos:
        raise TensorProtoError(f"{prefix}string tensor_content claims {sum(lengths)} bytes of "
                               f"strings but holds {len(content) - pos}")
    out = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        out[i] = content[pos:pos + length]
        pos += length
    return out

