"""Writer for TensorFlow's tensor bundle: data shards of raw little-endian bytes plus the `.index`.

Entries, header and table layout are what TensorFlow writes, so TensorFlow reads our checkpoints
and, for the same tensors in the same order, our `.index` is byte-identical to its own. Numeric
tensors are written and checksummed straight from the caller's array (no copy unless it is not
contiguous or not little-endian).

Writes are crash safe (see `atomic_files`): every file goes to a temporary name in its
directory, is fsynced, and only once all are complete are they renamed into place, data shards
first and the index last, so that a kill at any point leaves `prefix` naming a complete bundle,
the old one or the new one. The index names its shards by fixed names
(`prefix.data-<i>-of-<n>`), so new shards with the old ones' names cannot simply replace them
while the old index is in place: overwriting a bundle of as many shards first turns the old one
into a bridge, the same tensors under one shard more (hard links to the old shards, an empty
last shard, an index saying n+1 shards), and only then renames the new files in. Shards the new
index does not name (of the old bundle, or of a bridge) are removed last.
"""
from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

import numpy as np

from savedmodel.protos import tensor_bundle_pb2
from savedmodel.runtime import dtypes
from savedmodel.runtime.atomic_files import AtomicFiles, remove_stale_leftovers
from savedmodel.runtime.checksums import crc32c, mask
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.table_writer import write_table
from savedmodel.runtime.tensor_bundle import HEADER_KEY, BundleReader, index_path, shard_path
from savedmodel.runtime.varint import encode_varint

BUNDLE_VERSION = 1
"""The `producer` version TensorFlow stamps into every bundle header."""


@dataclass
class _Tensor:
    """One tensor ready to write: its index entry and its bytes as chunks (for numeric
    tensors a view of the caller's array, not a copy)."""

    key: bytes
    entry: tensor_bundle_pb2.BundleEntryProto
    chunks: list


def write_bundle(prefix: str | Path, tensors: Mapping[str, np.ndarray], *,
                 max_shard_bytes: int | None = None) -> None:
    """Write `tensors` as the checkpoint `prefix` (`prefix.index`, `prefix.data-*-of-*`).

    Data is laid out in the mapping's order; with `max_shard_bytes`, tensors go to shards in
    that order and a new shard starts when the next tensor would overflow the current one (a
    tensor larger than the limit gets a shard of its own). String tensors are object arrays of
    bytes or str (str is encoded as UTF-8)."""
    if max_shard_bytes is not None and (not isinstance(max_shard_bytes, int) or max_shard_bytes < 1):
        raise ValueError(f"max_shard_bytes must be a positive int, got {max_shard_bytes!r}")
    prepared = [_prepare(name, value) for name, value in tensors.items()]
    num_shards = _place(prepared, max_shard_bytes)
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    with AtomicFiles() as files:
        for shard in range(num_shards):
            members = [t for t in prepared if t.entry.shard_id == shard]
            files.write(shard_path(prefix, shard, num_shards), partial(_write_chunks, members))
        write_index(files, prefix, num_shards,
                    [(t.key, t.entry.SerializeToString()) for t in prepared])
        commit_bundle(files, prefix, num_shards)


def write_index(files: AtomicFiles, prefix: str | Path, num_shards: int,
                records: Iterable[tuple[bytes, bytes]]) -> None:
    """Write the `.index` of a bundle with `num_shards` shards: header, then records by key."""
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=num_shards)
    header.version.producer = BUNDLE_VERSION
    table = [(HEADER_KEY, header.SerializeToString())] + sorted(records)
    files.write(index_path(prefix), lambda out: write_table(out, table))


def commit_bundle(files: AtomicFiles, prefix: str | Path, num_shards: int) -> None:
    """Rename a bundle's temporary files (shards, then the index) into place over whatever
    bundle `prefix` holds, bridging it first when needed (see the module docstring)."""
    old = _readable_bundle(prefix)
    if old is not None and old.header.num_shards == num_shards:
        _bridge(old)
    files.commit()
    _remove_unnamed_shards(prefix, num_shards)


def _readable_bundle(prefix: str | Path) -> BundleReader | None:
    """The bundle at `prefix`, or None when there is none worth keeping (no or a damaged index)."""
    if not index_path(prefix).is_file():
        return None
    try:
        return BundleReader(prefix)
    except (FileFormatError, OSError):
        return None


def _bridge(old: BundleReader) -> None:
    """Make `old.prefix` name the same tensors under shard names of one shard more."""
    count = old.header.num_shards
    with AtomicFiles() as files:
        try:
            for shard in range(count):
                files.link_or_copy(shard_path(old.prefix, shard, count),
                                   shard_path(old.prefix, shard, count + 1))
        except FileNotFoundError:
            return  # a shard is missing: the old bundle is incomplete, nothing to keep
        files.write(shard_path(old.prefix, count, count + 1), lambda out: None)
        write_index(files, old.prefix, count + 1,
                    [(key, entry.SerializeToString()) for key, entry in old.raw_entries()])
        files.commit()


def _remove_unnamed_shards(prefix: str | Path, num_shards: int) -> None:
    """Remove the data shards of `prefix` that a bundle of `num_shards` shards does not name,
    and the stale temporary files of any shard of `prefix` (a killed bridge's, for one)."""
    prefix = Path(prefix)
    shard = re.compile(re.escape(prefix.name) + r"\.data-\d{5}-of-(\d{5})")
    remove_stale_leftovers(prefix, shard.pattern)
    for name in os.listdir(prefix.parent):
        match = shard.fullmatch(name)
        if match and int(match[1]) != num_shards:
            (prefix.parent / name).unlink(missing_ok=True)


def _place(prepared: list[_Tensor], limit: int | None) -> int:
    """Set each entry's shard and offset, filling shards in order; return the shard count."""
    shard = used = 0
    for tensor in prepared:
        if limit is not None and used and used + tensor.entry.size > limit:
            shard, used = shard + 1, 0
        tensor.entry.shard_id = shard
        tensor.entry.offset = used
        used += tensor.entry.size
    return shard + 1


def _write_chunks(members: list[_Tensor], out: BinaryIO) -> None:
    for tensor in members:
        for chunk in tensor.chunks:
            out.write(chunk)


def _prepare(name: str, value) -> _Tensor:
    if not isinstance(name, str) or not name or name.startswith("\x00"):
        raise ValueError(f"tensor names must be non-empty strings not starting with NUL, "
                         f"got {name!r}")
    array = np.asarray(value)
    try:
        dtype = dtypes.from_numpy(array.dtype)
    except dtypes.UnknownDTypeError as err:
        raise TypeError(f"tensor {name!r}: {err}") from None
    entry = tensor_bundle_pb2.BundleEntryProto(dtype=dtype.enum)
    entry.shape.SetInParent()
    for size in array.shape:
        entry.shape.dim.add(size=size)
    if dtype.is_string:
        chunks, entry.crc32c = _encode_strings(name, array)
    else:
        chunks, entry.crc32c = _raw_bytes(array, dtype)
    entry.size = sum(map(len, chunks))
    return _Tensor(name.encode("utf-8"), entry, chunks)


def _raw_bytes(array: np.ndarray, dtype: dtypes.DType) -> tuple[list, int]:
    """The array's little-endian bytes as a uint8 view (no copy when already so) and its CRC."""
    data = np.ascontiguousarray(array, dtype=dtype.numpy.newbyteorder("<")).reshape(-1)
    data = data.view(np.uint8)
    return [memoryview(data)], mask(crc32c(data))


def _encode_strings(name: str, array: np.ndarray) -> tuple[list, int]:
    """TensorFlow's string layout: varint lengths, their masked CRC, then the bytes.

    Both checksums cover the lengths as little-endian uint32 values; the entry's continues
    over the stored length checksum and then the string bytes."""
    items = [_as_bytes(name, item) for item in array.ravel().tolist()]
    lengths = [len(item) for item in items]
    length_crc = crc32c(struct.pack(f"<{len(lengths)}I", *(n & 0xFFFFFFFF for n in lengths)))
    stored = struct.pack("<I", mask(length_crc))
    data = b"".join(items)
    entry_crc = mask(crc32c(data, crc32c(stored, length_crc)))
    return [b"".join(encode_varint(n) for n in lengths) + stored, data], entry_crc


def _as_bytes(name: str, item) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    raise TypeError(f"tensor {name!r}: string tensors hold bytes or str, got {type(item).__name__}")


def merge_bundles(prefixes: Iterable[str | Path], destination: str | Path, *,
                  delete_old_dirs: bool = True, allow_missing: bool = False) -> None:
    """Merge bundles into one at `destination`, as TensorFlow's MergeV2Checkpoints does.

    The inputs' shards become the destination's shards in order (hard-linked, or copied across
    file systems) and their index entries are renumbered; the sources are removed only once
    the destination is complete, and with `delete_old_dirs` so are their directories if empty."""
    sources = [p for p in map(str, prefixes) if not (allow_missing and not index_path(p).exists())]
    if not sources:
        raise FileFormatError("MergeV2Checkpoints: none of the checkpoints to merge exist")
    merged: dict[bytes, tensor_bundle_pb2.BundleEntryProto] = {}
    source_shards: list[Path] = []
    for source in sources:
        source_shards += _merge_index(source, len(source_shards), merged)
    total = len(source_shards)
    targets = [shard_path(destination, i, total) for i in range(total)]
    with AtomicFiles() as files:
        for source_shard, target in zip(source_shards, targets):
            files.link_or_copy(source_shard, target)
        write_index(files, destination, total,
                    [(key, entry.SerializeToString()) for key, entry in merged.items()])
        commit_bundle(files, destination, total)
    _remove_sources(sources, source_shards, set(targets) | {index_path(destination)}, delete_old_dirs)


def _merge_index(prefix: str, first_shard: int, merged: dict) -> list[Path]:
    """Add the entries of one bundle to `merged`, renumbered from `first_shard`; return its shards."""
    reader = BundleReader(prefix)
    for key, stored in reader.raw_entries():
        entry = tensor_bundle_pb2.BundleEntryProto()
        entry.CopyFrom(stored)
        if not entry.slices:
            entry.shard_id += first_shard
        _add_merged(merged, key, entry, index_path(prefix))
    shards = [shard_path(prefix, i, reader.header.num_shards)
              for i in range(reader.header.num_shards)]
    for shard in shards:
        if not shard.exists():
            raise FileFormatError(f"{index_path(prefix)}: data shard {shard} is missing")
    return shards


def _add_merged(merged: dict, key: bytes, entry, index: Path) -> None:
    previous = merged.get(key)
    if previous is None:
        merged[key] = entry
        return
    if not (previous.slices and entry.slices and previous.dtype == entry.dtype
            and previous.shape == entry.shape):
        raise FileFormatError(f"{index}: key {key.decode('utf-8', 'backslashreplace')!r} is "
                              "also in an earlier checkpoint being merged")
    previous.slices.extend(entry.slices)


def _remove_sources(sources: list[str], shards: list[Path], keep: set[Path],
                    delete_old_dirs: bool) -> None:
    """Remove the merged inputs, except files that are also outputs (an input merged onto
    itself); paths are compared resolved, since a hard-linked output shares the input's inode."""
    keep = {path.resolve() for path in keep}
    for path in [index_path(s) for s in sources] + shards:
        if path.resolve() not in keep:
            path.unlink(missing_ok=True)
    if delete_old_dirs:
        for directory in {Path(s).parent for s in sources}:
            try:
                directory.rmdir()
            except OSError:
                pass
