"""Base-128 varints as protobuf, LevelDB tables and tensor bundles encode them."""
from __future__ import annotations

from savedmodel.runtime.errors import FileFormatError


def read_varint(data, pos: int, where: str, limit_bits: int = 64) -> tuple[int, int]:
    """Decode a varint at `pos`; return (value, position after it).

    `where` names the file or record for the error raised on truncated or overlong input.
    """
    result = shift = 0
    end = len(data)
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> limit_bits:
                break
            return result, pos
        shift += 7
        if shift >= limit_bits + 7:
            break
    else:
        raise FileFormatError(f"{where}: data ends inside a varint")
    raise FileFormatError(f"{where}: varint longer than {limit_bits} bits")


def encode_varint(value: int) -> bytes:
    """The varint encoding of a non-negative integer."""
    if value < 0:
        raise ValueError(f"varints encode non-negative integers, got {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
