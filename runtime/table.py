"""Reader for the LevelDB-format sorted table that a checkpoint's `.index` file is.

Layout: data blocks, a metaindex block, an index block whose values are handles of the data
blocks, and a 48-byte footer (two block handles, padding, an 8-byte magic number). Each block is
followed by a 5-byte trailer: a compression byte and the masked CRC32C of block plus that byte.
Every offset and size is checked against the file before it is used.
"""
from __future__ import annotations

import struct
from pathlib import Path

from savedmodel.runtime.checksums import crc32c, unmask
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.protofiles import read_file
from savedmodel.runtime.varint import read_varint

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER_SIZE = 5
NO_COMPRESSION = 0


def read_table(path: str | Path, limits: Limits = DEFAULT) -> list[tuple[bytes, bytes]]:
    """All (key, value) records of the table at `path`, in key order.

    A table writer lays the data blocks out one after the other and its keys strictly increase,
    so an index listing a block out of order, overlapping another or more than once (which
    would multiply the records a small file yields), or a key that does not sort after the one
    before it (which would silently replace the earlier record) is a corrupt file."""
    data = read_file(path, limits)
    where = str(path)
    index = _read_block(data, _footer_index_handle(data, where), where, "index block")
    records: list[tuple[bytes, bytes]] = []
    free_from = 0
    for _, handle_bytes in index:
        handle, _ = _read_handle(handle_bytes, 0, f"{where}: index entry")
        what = f"data block at offset {handle[0]}"
        if handle[0] < free_from:
            raise FileFormatError(f"{where}: {what} overlaps the data block listed before it, which "
                                  f"ends at {free_from}: the index lists data blocks out of order, "
                                  "overlapping or repeated; the file is corrupt")
        block = _read_block(data, handle, where, what)
        _check_key_order(records[-1][0] if records else None, block, f"{where}: {what}")
        records.extend(block)
        free_from = handle[0] + handle[1] + BLOCK_TRAILER_SIZE
    return records


def _check_key_order(previous: bytes | None, block: list[tuple[bytes, bytes]], where: str) -> None:
    """Each key of `block` sorts strictly after the one before it (`previous`: the last key of
    the blocks before, or None)."""
    for key, _ in block:
        if previous is not None and key <= previous:
            raise FileFormatError(f"{where}: key {key!r} does not sort after the key before it, "
                                  f"{previous!r}; a table's keys strictly increase, so the file "
                                  "is corrupt")
        previous = key


def _footer_index_handle(data: bytes, where: str) -> tuple[int, int]:
    if len(data) < FOOTER_SIZE:
        raise FileFormatError(f"{where}: {len(data)} bytes is too short for a table footer "
                              f"({FOOTER_SIZE} bytes); the file is truncated or not a table")
    footer = data[-FOOTER_SIZE:]
    (magic,) = struct.unpack_from("<Q", footer, FOOTER_SIZE - 8)
    if magic != TABLE_MAGIC:
        raise FileFormatError(f"{where}: bad table magic number {magic:#x}; not a checkpoint "
                              "index, or truncated")
    _, pos = _read_handle(footer, 0, f"{where}: footer")
    index_handle, _ = _read_handle(footer, pos, f"{where}: footer")
    return index_handle


def _read_handle(data: bytes, pos: int, where: str) -> tuple[tuple[int, int], int]:
    offset, pos = read_varint(data, pos, where)
    size, pos = read_varint(data, pos, where)
    return (offset, size), pos


def _read_block(data: bytes, handle: tuple[int, int], where: str, what: str) -> list[tuple[bytes, bytes]]:
    offset, size = handle
    end = offset + size + BLOCK_TRAILER_SIZE
    if end > len(data) - FOOTER_SIZE:
        raise FileFormatError(f"{where}: {what} (offset {offset}, size {size}) extends past the "
                              f"end of the {len(data)}-byte file")
    block = data[offset:offset + size]
    kind = data[offset + size]
    (stored,) = struct.unpack_from("<I", data, offset + size + 1)
    if crc32c(data[offset:offset + size + 1]) != unmask(stored):
        raise FileFormatError(f"{where}: checksum mismatch in {what}; the file is corrupt")
    if kind != NO_COMPRESSION:
        raise FileFormatError(f"{where}: {what} uses compression type {kind}; only uncompressed "
                              "tables are supported")
    return _block_records(block, f"{where}: {what}")


def _block_records(block: bytes, where: str) -> list[tuple[bytes, bytes]]:
    if len(block) < 4:
        raise FileFormatError(f"{where}: block too short for its restart count")
    (num_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 - 4 * num_restarts
    if limit < 0:
        raise FileFormatError(f"{where}: restart count {num_restarts} does not fit the block")
    records = []
    key = b""
    pos = 0
    while pos < limit:
        shared, pos = read_varint(block, pos, where, 32)
        unshared, pos = read_varint(block, pos, where, 32)
        value_len, pos = read_varint(block, pos, where, 32)
        if shared > len(key) or pos + unshared + value_len > limit:
            raise FileFormatError(f"{where}: corrupt record at offset {pos}")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        records.append((key, block[pos:pos + value_len]))
        pos += value_len
    return records
