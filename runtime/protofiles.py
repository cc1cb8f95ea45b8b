"""Reading protobuf files with clear errors, and finding fields our schema does not know.

Files are opened without blocking and must be regular files of at most the caller's limit:
a FIFO, a device (`/dev/zero` behind a symlink) or a sparse 5 GB file in place of a model file
is an error before anything is read.

TensorFlow may write fields newer than our .proto files; protobuf keeps them as unknown fields
and would silently drop their meaning. `unknown_field_paths` names where they are, so tests can
prove our schema covers every field of the reference corpus and loaders can warn.
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO, TypeVar

from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.limits import DEFAULT, Limits

M = TypeVar("M", bound=Message)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: str | Path, where: str = "") -> tuple[BinaryIO, int]:
    """The open regular file at `path` (symlinks followed) and its size. Opening never blocks
    (a FIFO would wait for a writer); anything but a regular file is an error naming its kind."""
    prefix = f"{where}: " if where else ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise FileFormatError(f"{prefix}{path}: no such file") from None
    except OSError as err:
        raise FileFormatError(f"{prefix}{path}: cannot read ({err.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise FileFormatError(f"{prefix}{path} is {kind}, not a regular file")
    return os.fdopen(fd, "rb", buffering=0), info.st_size


def read_file(path: str | Path, limits: Limits = DEFAULT) -> bytes:
    """The bytes of the regular file at `path`, at most `limits.max_file_bytes` of them."""
    file, size = open_regular(path)
    with io.BufferedReader(file) as stream:
        if size > limits.max_file_bytes:
            raise FileFormatError(f"{path}: the file is {size} bytes, more than "
                                  f"{limits.exceeded('max_file_bytes')}")
        # buffered: one raw read returns at most 2 GiB - 4 KiB; read() allocates what it is
        # asked for, so ask for the size fstat gave, plus one byte to notice a file that grows
        data = stream.read(size + 1)
    if len(data) > size:
        raise FileFormatError(f"{path}: the file grew while it was read")
    return data


def read_message(path: str | Path, message_type: type[M], limits: Limits = DEFAULT) -> M:
    """Parse the binary protobuf file at `path` as `message_type`."""
    return parse_message(read_file(path, limits), message_type, str(path))


def parse_message(data: bytes, message_type: type[M], where: str) -> M:
    """Parse serialized bytes as `message_type`; `where` names the source in errors."""
    try:
        return message_type.FromString(data)
    except (DecodeError, RuntimeError) as err:
        raise FileFormatError(f"{where}: not a valid {message_type.DESCRIPTOR.full_name} "
                              f"message ({err})") from None


def unknown_field_paths(message: Message, path: str = "$") -> list[str]:
    """Paths such as `$.meta_graphs[0].graph_def.node[3]` of every sub-message holding fields
    unknown to our schema, each with the unknown field numbers."""
    found = []
    unknown = UnknownFieldSet(message)
    if len(unknown):
        numbers = sorted({field.field_number for field in unknown})
        found.append(f"{path}: unknown field number(s) {numbers}")
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        child = f"{path}.{field.name}"
        if field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type == value_field.TYPE_MESSAGE:
                for key, item in value.items():
                    found += unknown_field_paths(item, f"{child}[{key!r}]")
        elif field.is_repeated:
            for i, item in enumerate(value):
                found += unknown_field_paths(item, f"{child}[{i}]")
        else:
            found += unknown_field_paths(value, child)
    return found
