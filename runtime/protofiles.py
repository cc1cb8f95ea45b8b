"""Reading protobuf files with clear errors, and finding fields our schema does not know.

TensorFlow may write fields newer than our .proto files; protobuf keeps them as unknown fields
and would silently drop their meaning. `unknown_field_paths` names where they are, so tests can
prove our schema covers every field of the reference corpus and loaders can warn.
"""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from savedmodel.runtime.errors import FileFormatError

M = TypeVar("M", bound=Message)


def read_message(path: str | Path, message_type: type[M]) -> M:
    """Parse the binary protobuf file at `path` as `message_type`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileFormatError(f"{path}: no such file") from None
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read ({err.strerror})") from None
    return parse_message(data, message_type, str(path))


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
