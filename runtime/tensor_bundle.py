"""Reader for TensorFlow's tensor bundle: a checkpoint's `.index` table plus its data shards.

The index maps each key to a BundleEntryProto (dtype, shape, shard, offset, size, masked
CRC32C); the empty key holds the BundleHeaderProto. Shards hold raw little-endian tensor bytes;
a string tensor is its varint lengths, a masked CRC32C of those lengths, then the bytes.
A partitioned tensor's entry lists its slices instead; each slice is a record of its own under
a key that encodes (tensor name, slice) in TensorFlow's order-preserving code, which starts
with a NUL byte so slice records sort before every tensor name.

Shapes, slice extents and byte extents are checked against each other and against the shard
files before anything is allocated, every checksum is verified, and each tensor is read straight
into the array that is returned, so a damaged file is an error naming file and key, never
wrong values or an allocation the files cannot back.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from savedmodel.protos import tensor_bundle_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.checksums import crc32c, mask
from savedmodel.runtime.errors import FileFormatError, SavedModelError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.protofiles import open_regular
from savedmodel.runtime.table import read_table
from savedmodel.runtime.tensor_proto import checked_dims, shape_from_proto
from savedmodel.runtime.varint import read_varint

HEADER_KEY = b""
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
INT64_MAX = 2**63 - 1
READ_CHUNK = 8 << 20
"""Bytes read per system call; each chunk is checksummed while it is still in cache."""


def index_path(prefix: str | Path) -> Path:
    return Path(f"{prefix}.index")


def shard_path(prefix: str | Path, shard: int, num_shards: int) -> Path:
    return Path(f"{prefix}.data-{shard:05d}-of-{num_shards:05d}")


class NoSuchTensorError(SavedModelError, KeyError):
    """A key the checkpoint does not hold (a KeyError too, as for a dict)."""

    def __str__(self) -> str:
        return str(self.args[0])


Confine = Callable[[Path, str], object]
"""Called with each file a reader is about to open and what it is ("checkpoint index",
"checkpoint data shard"); raises to refuse the file (a loaded model reads only files inside
its directory, and its ops only the folders the caller allows)."""


class BundleReader:
    """Random access to the tensors of one checkpoint, given its prefix (path minus `.index`).
    `confine`, if given, vets the index and each data shard before it is opened."""

    def __init__(self, prefix: str | Path, limits: Limits = DEFAULT, confine: Confine | None = None):
        self.prefix = str(prefix)
        self._index = index_path(prefix)
        self._confine = confine
        if confine is not None:
            confine(self._index, "checkpoint index")
        records = read_table(self._index, limits)
        if not records or records[0][0] != HEADER_KEY:
            raise FileFormatError(f"{self._index}: no bundle header under the empty key")
        self.header = self._parse(tensor_bundle_pb2.BundleHeaderProto, records[0][1], "header")
        if self.header.num_shards < 1:
            raise FileFormatError(f"{self._index}: header claims {self.header.num_shards} shards")
        if self.header.endianness != tensor_bundle_pb2.BundleHeaderProto.LITTLE:
            raise FileFormatError(f"{self._index}: big-endian bundles are not supported")
        self._records = [(key, self._parse(tensor_bundle_pb2.BundleEntryProto, value, key))
                         for key, value in records[1:]]
        self._slices = {key: entry for key, entry in self._records if key.startswith(b"\x00")}
        named = [(key.decode("utf-8", "backslashreplace"), key, entry)
                 for key, entry in self._records if not key.startswith(b"\x00")]
        self._names = {name: key for name, key, _ in named}
        self.entries = {name: entry for name, _, entry in named}

    def keys(self) -> list[str]:
        """The tensor keys in index order (slice records are internal and not listed)."""
        return list(self.entries)

    def entry(self, key: str) -> tensor_bundle_pb2.BundleEntryProto:
        try:
            return self.entries[key]
        except KeyError:
            raise NoSuchTensorError(f"{self._index}: no tensor named {key!r}") from None

    def raw_entries(self) -> list[tuple[bytes, tensor_bundle_pb2.BundleEntryProto]]:
        """Every record but the header, slice records included, as (raw key, entry) in key order."""
        return list(self._records)

    def read(self, key: str) -> np.ndarray:
        """The tensor stored under `key`, checksum verified; strings as an object array of bytes."""
        entry = self.entry(key)
        where = f"{self._index}: tensor {key!r}"
        dtype = _entry_dtype(entry, where)
        shape = _checked_shape(entry.shape, dtype, where)
        with _Shards(self.prefix, self.header.num_shards, self._confine) as shards:
            if entry.slices:
                parts = [self._slice_part(key, spec, entry, shape, shards, where)
                         for spec in entry.slices]
            else:
                parts = [_Part(tuple((0, n) for n in shape), entry,
                               shards.open_extent(entry, where), where)]
            for part in parts:
                _check_size(part, dtype)
            _check_cover(parts, shape, where)
            storage = dtype.numpy if dtype.is_string else dtype.numpy.newbyteorder("<")
            out = np.empty(shape, dtype=storage)
            for part in parts:
                _fill(out, part, dtype)
        # astype makes the bytes native; view makes the dtype object numpy's own (an equal
        # `<f4` is another object, which identity checks in kernels' fast paths miss).
        return out.astype(dtype.numpy, copy=False).view(dtype.numpy)

    def _slice_part(self, key: str, spec, entry, shape: tuple[int, ...], shards: _Shards,
                    where: str) -> _Part:
        region = _slice_region(spec, shape, where)
        record_key = slice_key(self._names[key], spec)
        slice_where = f"{where}, slice {_spec_text(spec)}"
        stored = self._slices.get(record_key)
        if stored is None:
            raise FileFormatError(f"{slice_where}: the index has no record for this slice "
                                  "(missing tensor data)")
        if stored.slices or stored.dtype != entry.dtype:
            raise FileFormatError(f"{slice_where}: slice record has dtype {stored.dtype} and "
                                  f"{len(stored.slices)} slices; expected dtype {entry.dtype}")
        if shape_from_proto(stored.shape) != tuple(length for _, length in region):
            raise FileFormatError(f"{slice_where}: slice record has shape "
                                  f"{shape_from_proto(stored.shape)}, the slice spans "
                                  f"{[length for _, length in region]}")
        return _Part(region, stored, shards.open_extent(stored, slice_where), slice_where,
                     _spec_text(spec))

    def _parse(self, message_type, data: bytes, what):
        try:
            return message_type.FromString(data)
        except Exception as err:  # protobuf raises DecodeError or RuntimeError by backend
            raise FileFormatError(f"{self._index}: cannot parse {message_type.__name__} for "
                                  f"{what!r}: {err}") from None


@dataclass
class _Part:
    """One stored extent of a tensor: where it goes (start, length per dim) and where it is."""

    region: tuple[tuple[int, int], ...]
    entry: tensor_bundle_pb2.BundleEntryProto
    file: BinaryIO
    where: str
    label: str = ""

    @property
    def count(self) -> int:
        return math.prod(length for _, length in self.region)


class _Shards:
    """The data shards of one bundle, opened on first use and closed together."""

    def __init__(self, prefix: str, num_shards: int, confine: Confine | None):
        self._prefix = prefix
        self._num_shards = num_shards
        self._confine = confine
        self._files: dict[int, tuple[BinaryIO, int, Path]] = {}

    def __enter__(self) -> _Shards:
        return self

    def __exit__(self, *exc) -> None:
        for file, _, _ in self._files.values():
            file.close()

    def open_extent(self, entry, where: str) -> BinaryIO:
        """The open shard holding `entry`'s bytes, once they are known to lie inside it."""
        if not 0 <= entry.shard_id < self._num_shards:
            raise FileFormatError(f"{where}: shard id {entry.shard_id} is outside the "
                                  f"{self._num_shards} shards of the header")
        file, size, path = self._open(entry.shard_id, where)
        if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > size:
            raise FileFormatError(f"{where}: extent (offset {entry.offset}, size {entry.size}) "
                                  f"lies outside the {size}-byte shard {path}")
        return file

    def _open(self, shard: int, where: str) -> tuple[BinaryIO, int, Path]:
        if shard not in self._files:
            path = shard_path(self._prefix, shard, self._num_shards)
            if not path.exists():
                raise FileFormatError(f"{where}: data shard {path} is missing")
            if self._confine is not None:
                self._confine(path, "checkpoint data shard")
            file, size = open_regular(path, f"{where}: data shard")
            self._files[shard] = (file, size, path)
        return self._files[shard]


def _entry_dtype(entry, where: str) -> dtypes.DType:
    try:
        dtype = dtypes.from_enum(entry.dtype)
    except dtypes.UnknownDTypeError as err:
        raise FileFormatError(f"{where}: {err}") from None
    if dtype.numpy is None:
        raise FileFormatError(f"{where}: tensors of type {dtype.enum_name} cannot be read")
    return dtype


def _checked_shape(proto, dtype: dtypes.DType, where: str) -> tuple[int, ...]:
    shape = shape_from_proto(proto)
    if shape is None or any(d is None for d in shape):
        raise FileFormatError(f"{where}: stored shape {shape} is not fully defined")
    if math.prod(shape) * max(dtype.itemsize, 1) > INT64_MAX:
        raise FileFormatError(f"{where}: stored shape {list(shape)} overflows the tensor size "
                              "limit of 2**63 - 1 bytes")
    return checked_dims(shape, f"{where}: ", "stored tensor", FileFormatError)


def _slice_region(spec, shape: tuple[int, ...], where: str) -> tuple[tuple[int, int], ...]:
    """(start, length) per dimension of one slice, checked against the full shape."""
    if len(spec.extent) != len(shape):
        raise FileFormatError(f"{where}: slice {_spec_text(spec)} has {len(spec.extent)} "
                              f"dimensions, the tensor has {len(shape)}")
    region = []
    for dim, (extent, size) in enumerate(zip(spec.extent, shape)):
        if not extent.HasField("length"):
            region.append((0, size))
            continue
        start, length = extent.start, extent.length
        if start < 0 or length < 0:
            raise FileFormatError(f"{where}: slice {_spec_text(spec)} has a negative start or "
                                  f"length in dimension {dim}")
        if start + length > INT64_MAX:
            raise FileFormatError(f"{where}: slice {_spec_text(spec)}: the end of its extent in "
                                  f"dimension {dim} overflows int64")
        if start + length > size:
            raise FileFormatError(f"{where}: slice {_spec_text(spec)} extends past dimension "
                                  f"{dim} of size {size}")
        region.append((start, length))
    return tuple(region)


def _spec_text(spec) -> str:
    """A slice as TensorFlow spells it: `start,length` per dimension, `-` for a full one."""
    return ":".join(f"{e.start},{e.length}" if e.HasField("length") else "-" for e in spec.extent)


def _check_size(part: _Part, dtype: dtypes.DType) -> None:
    size = part.entry.size
    if dtype.is_string:
        if size < part.count + 4:
            raise FileFormatError(f"{part.where}: {size} bytes cannot hold {part.count} strings "
                                  "and their length checksum")
    elif size != part.count * dtype.itemsize:
        shape = [length for _, length in part.region]
        raise FileFormatError(f"{part.where}: holds {size} bytes, but shape {shape} of "
                              f"{dtype.name} needs {part.count * dtype.itemsize}")


def _check_cover(parts: list[_Part], shape: tuple[int, ...], where: str) -> None:
    """The slices must tile the tensor exactly: no element missing, none stored twice."""
    if sum(part.count for part in parts) != math.prod(shape):
        raise FileFormatError(f"{where}: its slices hold {sum(p.count for p in parts)} elements, "
                              f"the shape {list(shape)} has {math.prod(shape)}")
    ordered = sorted((p for p in parts if p.count), key=lambda p: p.region[0][0] if p.region else 0)
    for i, first in enumerate(ordered):
        for second in ordered[i + 1:]:
            if first.region and second.region[0][0] >= sum(first.region[0]):
                break
            if all(s1 < s2 + n2 and s2 < s1 + n1
                   for (s1, n1), (s2, n2) in zip(first.region, second.region)):
                raise FileFormatError(f"{where}: slices {first.label} and {second.label} overlap")


def _fill(out: np.ndarray, part: _Part, dtype: dtypes.DType) -> None:
    """Read one part into its region of `out`, in place when the region is contiguous."""
    target = out[tuple(slice(start, start + length) for start, length in part.region) + (...,)]
    if dtype.is_string:
        raw = np.empty(part.entry.size, dtype=np.uint8)
        _read_checked(part, raw, verify=False)
        target[...] = _decode_strings(raw.tobytes(), part.count, part.entry.crc32c,
                                      part.where).reshape(target.shape)
    elif target.flags.c_contiguous:
        _read_checked(part, target.reshape(-1).view(np.uint8))
    else:
        staged = np.empty(target.shape, dtype=out.dtype)
        _read_checked(part, staged.reshape(-1).view(np.uint8))
        target[...] = staged


def _read_checked(part: _Part, buffer: np.ndarray, verify: bool = True) -> None:
    """Fill `buffer` from the part's extent, checksumming each chunk as it arrives."""
    part.file.seek(part.entry.offset)
    view = memoryview(buffer)
    crc = 0
    for start in range(0, len(buffer), READ_CHUNK):
        end = min(start + READ_CHUNK, len(buffer))
        pos = start
        while pos < end:
            got = part.file.readinto(view[pos:end])
            if not got:
                raise FileFormatError(f"{part.where}: data shard ended early")
            pos += got
        if verify:
            crc = crc32c(buffer[start:end], crc)
    if verify and mask(crc) != part.entry.crc32c:
        raise _corrupt(part.where, "the data shard")


def _corrupt(where: str, what: str) -> FileFormatError:
    return FileFormatError(f"{where}: checksum mismatch in {what}; the file is corrupt")


def _decode_strings(data: bytes, count: int, stored_crc: int, where: str) -> np.ndarray:
    """Decode a string tensor's extent and verify both of its checksums.

    Both checksums cover each length as a little-endian uint32 (not its varint bytes); the
    entry's checksum continues over the stored length checksum and then the string bytes."""
    lengths = []
    pos = 0
    for _ in range(count):
        length, pos = read_varint(data, pos, where)
        lengths.append(length)
    crc = crc32c(struct.pack(f"<{count}I", *(n & 0xFFFFFFFF for n in lengths)))
    if pos + 4 > len(data):
        raise FileFormatError(f"{where}: string tensor ends before its length checksum")
    (stored_lengths_crc,) = struct.unpack_from("<I", data, pos)
    if mask(crc) != stored_lengths_crc:
        raise _corrupt(where, "the string lengths")
    pos += 4
    if pos + sum(lengths) != len(data):
        raise FileFormatError(f"{where}: string lengths add up to {sum(lengths)} bytes, but "
                              f"{len(data) - pos} follow them")
    if mask(crc32c(data[pos - 4:], crc)) != stored_crc:
        raise _corrupt(where, "the string bytes")
    out = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        out[i] = data[pos:pos + length]
        pos += length
    return out


def slice_key(name: bytes, spec) -> bytes:
    """The index key of one slice of tensor `name`: TensorFlow's ordered code of
    (0, name, rank, start and length per dimension), a full dimension being (0, -1)."""
    extents = [(e.start, e.length) if e.HasField("length") else (0, -1) for e in spec.extent]
    return (_ordered_uint(0) + _ordered_bytes(name) + _ordered_uint(len(extents))
            + b"".join(_ordered_int(start) + _ordered_int(length) for start, length in extents))


def _ordered_uint(value: int) -> bytes:
    """Unsigned: a length byte, then the value's big-endian bytes without leading zeros."""
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(body)]) + body


def _ordered_bytes(value: bytes) -> bytes:
    """Bytes: 0x00 escaped as 00 FF and 0xFF as FF 00, terminated by 00 01."""
    escaped = b"\x00\xff".join(part.replace(b"\xff", b"\xff\x00") for part in value.split(b"\x00"))
    return escaped + b"\x00\x01"


def _ordered_int(value: int) -> bytes:
    """Signed: n bytes whose top n bits are ones then a zero, the magnitude in the remaining
    7n - 1 bits; a negative number is the bitwise complement of the encoding of ~value."""
    magnitude = value if value >= 0 else ~value
    width = 1
    while magnitude >> (7 * width - 1):
        width += 1
    encoded = ((((1 << width) - 1) << (7 * width)) | magnitude).to_bytes(width, "big")
    return encoded if value >= 0 else bytes(b ^ 0xFF for b in encoded)
