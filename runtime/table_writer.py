"""Writer for the LevelDB-format sorted table that a checkpoint's `.index` file is.

It lays the table out as TensorFlow's table builder does with the options the tensor bundle uses,
so that for the same records our `.index` is byte-identical to TensorFlow's (tests check this):
uncompressed data blocks cut once they reach 256 KiB, a restart point every 16 records in data
blocks and at every record in the index block, an empty metaindex block, index keys shortened to
the shortest separator between neighbouring blocks, and the 48-byte footer.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import BinaryIO

from savedmodel.runtime.checksums import crc32c, mask
from savedmodel.runtime.table import BLOCK_TRAILER_SIZE, FOOTER_SIZE, NO_COMPRESSION, TABLE_MAGIC
from savedmodel.runtime.varint import encode_varint

BLOCK_SIZE = 256 * 1024
"""A data block is cut once its encoded size reaches this (TensorFlow's table default)."""
RESTART_INTERVAL = 16
"""Records between full (unshared) keys in a data block."""


class _Block:
    """One block being built: prefix-compressed records followed by the restart offsets."""

    def __init__(self, restart_interval: int):
        self._interval = restart_interval
        self._buffer = bytearray()
        self._restarts = [0]
        self._count = 0
        self._last_key = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self._count == self._interval:
            self._restarts.append(len(self._buffer))
            self._count = 0
        else:
            limit = min(len(key), len(self._last_key))
            while shared < limit and key[shared] == self._last_key[shared]:
                shared += 1
        self._buffer += encode_varint(shared) + encode_varint(len(key) - shared)
        self._buffer += encode_varint(len(value)) + key[shared:] + value
        self._last_key = key
        self._count += 1

    @property
    def empty(self) -> bool:
        return not self._buffer

    def size_estimate(self) -> int:
        return len(self._buffer) + 4 * len(self._restarts) + 4

    def finish(self) -> bytes:
        restarts = struct.pack(f"<{len(self._restarts)}I", *self._restarts)
        return bytes(self._buffer) + restarts + struct.pack("<I", len(self._restarts))


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    """A short key k with start <= k < limit, as the index block stores between two blocks."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)):
        byte = start[common]
        if byte < 0xFF and byte + 1 < limit[common]:
            return start[:common] + bytes([byte + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    """A short key k >= key, as the index block stores after the last block."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


class _TableWriter:
    """Streams blocks to `out`, remembering each data block's handle for the index block."""

    def __init__(self, out: BinaryIO):
        self._out = out
        self._offset = 0
        self._data = _Block(RESTART_INTERVAL)
        self._index = _Block(1)
        self._last_key: bytes | None = None
        self._pending_handle: bytes | None = None

    def add(self, key: bytes, value: bytes) -> None:
        if self._last_key is not None and key <= self._last_key:
            raise ValueError(f"table keys must be strictly increasing: {key!r} after "
                             f"{self._last_key!r}")
        if self._pending_handle is not None:
            self._index.add(_shortest_separator(self._last_key, key), self._pending_handle)
            self._pending_handle = None
        self._data.add(key, value)
        self._last_key = key
        if self._data.size_estimate() >= BLOCK_SIZE:
            self._flush_data()

    def finish(self) -> None:
        self._flush_data()
        metaindex = self._write_block(_Block(RESTART_INTERVAL).finish())
        if self._pending_handle is not None:
            self._index.add(_short_successor(self._last_key), self._pending_handle)
        index = self._write_block(self._index.finish())
        footer = metaindex + index
        self._out.write(footer + bytes(FOOTER_SIZE - 8 - len(footer)) + struct.pack("<Q", TABLE_MAGIC))

    def _flush_data(self) -> None:
        if not self._data.empty:
            self._pending_handle = self._write_block(self._data.finish())
            self._data = _Block(RESTART_INTERVAL)

    def _write_block(self, block: bytes) -> bytes:
        """Write a block and its trailer; return the block's encoded handle."""
        kind = bytes([NO_COMPRESSION])
        self._out.write(block + kind + struct.pack("<I", mask(crc32c(block + kind))))
        handle = encode_varint(self._offset) + encode_varint(len(block))
        self._offset += len(block) + BLOCK_TRAILER_SIZE
        return handle


def write_table(out: BinaryIO, records: Iterable[tuple[bytes, bytes]]) -> None:
    """Write `records` (keys strictly increasing as bytes) to `out` as one complete table."""
    writer = _TableWriter(out)
    for key, value in records:
        writer.add(key, value)
    writer.finish()
