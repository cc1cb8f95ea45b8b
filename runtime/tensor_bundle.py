"""Reader for TensorFlow's tensor bundle: a checkpoint's `.index` table plus its data shards.

The index maps each key to a BundleEntryProto (dtype, shape, shard, offset, size, masked
CRC32C); the empty key holds the BundleHeaderProto. Shards hold raw little-endian tensor bytes;
a string tensor is its varint lengths, a masked CRC32C of those lengths, then the bytes.
Extents are checked against the shard's size before anything is allocated, and every tensor's
checksum is verified, so a damaged file is an error naming file and key, never wrong values.
"""
from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np

from savedmodel.protos import tensor_bundle_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.checksums import crc32c, mask
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.table import read_table
from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.runtime.varint import read_varint

HEADER_KEY = b""
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def index_path(prefix: str | Path) -> Path:
    return Path(f"{prefix}.index")


def shard_path(prefix: str | Path, shard: int, num_shards: int) -> Path:
    return Path(f"{prefix}.data-{shard:05d}-of-{num_shards:05d}")


class BundleReader:
    """Random access to the tensors of one checkpoint, given its prefix (path minus `.index`)."""

    def __init__(self, prefix: str | Path):
        self.prefix = str(prefix)
        self._index = index_path(prefix)
        records = read_table(self._index)
        if not records or records[0][0] != HEADER_KEY:
            raise FileFormatError(f"{self._index}: no bundle header under the empty key")
        self.header = self._parse(tensor_bundle_pb2.BundleHeaderProto, records[0][1], "header")
        if self.header.num_shards < 1:
            raise FileFormatError(f"{self._index}: header claims {self.header.num_shards} shards")
        if self.header.endianness != tensor_bundle_pb2.BundleHeaderProto.LITTLE:
            raise FileFormatError(f"{self._index}: big-endian bundles are not supported")
        self.entries = {key.decode("utf-8", "backslashreplace"): self._parse(
            tensor_bundle_pb2.BundleEntryProto, value, key) for key, value in records[1:]
            if not key.startswith(b"\x00")}

    def keys(self) -> list[str]:
        """The tensor keys in index order (slice records are internal and not listed)."""
        return list(self.entries)

    def entry(self, key: str) -> tensor_bundle_pb2.BundleEntryProto:
        try:
            return self.entries[key]
        except KeyError:
            raise KeyError(f"{self._index}: no tensor named {key!r}") from None

    def read(self, key: str) -> np.ndarray:
        """The tensor stored under `key`, checksum verified; strings as an object array of bytes."""
        entry = self.entry(key)
        where = f"{self._index}: tensor {key!r}"
        if entry.slices:
            raise FileFormatError(f"{where} is stored in slices, which this reader does not "
                                  "assemble yet")
        dtype = _entry_dtype(entry, where)
        shape = shape_from_proto(entry.shape)
        if shape is None or any(d is None or d < 0 for d in shape):
            raise FileFormatError(f"{where}: stored shape {shape} is not fully defined")
        raw = self._read_extent(entry, where)
        count = math.prod(shape)
        if dtype.is_string:
            return _decode_strings(raw.tobytes(), count, entry.crc32c, where).reshape(shape)
        if mask(crc32c(raw)) != entry.crc32c:
            raise _corrupt(where, "the data shard")
        if len(raw) != count * dtype.itemsize:
            raise FileFormatError(f"{where}: holds {len(raw)} bytes, but shape {list(shape)} of "
                                  f"{dtype.name} needs {count * dtype.itemsize}")
        return raw.view(dtype.numpy.newbyteorder("<")).astype(dtype.numpy, copy=False).reshape(shape)

    def _read_extent(self, entry, where: str) -> np.ndarray:
        if not 0 <= entry.shard_id < self.header.num_shards:
            raise FileFormatError(f"{where}: shard id {entry.shard_id} is outside the "
                                  f"{self.header.num_shards} shards of the header")
        path = shard_path(self.prefix, entry.shard_id, self.header.num_shards)
        try:
            with open(path, "rb") as f:
                file_size = os.fstat(f.fileno()).st_size
                if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > file_size:
                    raise FileFormatError(
                        f"{where}: extent (offset {entry.offset}, size {entry.size}) lies outside "
                        f"the {file_size}-byte shard {path}")
                f.seek(entry.offset)
                buffer = np.empty(entry.size, dtype=np.uint8)
                if f.readinto(buffer) != entry.size:
                    raise FileFormatError(f"{where}: shard {path} ended early")
                return buffer
        except FileNotFoundError:
            raise FileFormatError(f"{where}: data shard {path} is missing") from None

    def _parse(self, message_type, data: bytes, what):
        try:
            return message_type.FromString(data)
        except Exception as err:  # protobuf raises DecodeError or RuntimeError by backend
            raise FileFormatError(f"{self._index}: cannot parse {message_type.__name__} for "
                                  f"{what!r}: {err}") from None


def _entry_dtype(entry, where: str) -> dtypes.DType:
    try:
        dtype = dtypes.from_enum(entry.dtype)
    except dtypes.UnknownDTypeError as err:
        raise FileFormatError(f"{where}: {err}") from None
    if dtype.numpy is None:
        raise FileFormatError(f"{where}: tensors of type {dtype.enum_name} cannot be read")
    return dtype


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
