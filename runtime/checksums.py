"""CRC32C as TensorFlow's file formats store it.

LevelDB-format tables and tensor-bundle shards store a *masked* CRC32C (rotated and offset), so
that a checksum of data that itself contains checksums does not degenerate.
"""
from __future__ import annotations

import google_crc32c
import numpy as np

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def crc32c(data, initial: int = 0) -> int:
    """CRC32C of bytes, a numpy array or a memoryview, optionally continuing from `initial`.

    The C extension takes bytes and contiguous arrays but not memoryviews, so a view is wrapped
    as a uint8 array (no copy)."""
    if isinstance(data, memoryview):
        data = np.frombuffer(data, dtype=np.uint8)
    return google_crc32c.extend(initial, data)


def mask(crc: int) -> int:
    """The masked form stored in files."""
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def unmask(masked: int) -> int:
    """Inverse of `mask`."""
    rotated = (masked - _MASK_DELTA) & _U32
    return ((rotated >> 17) | (rotated << 15)) & _U32


def masked_crc32c(data) -> int:
    return mask(crc32c(data))
