"""The two other string hashes TensorFlow buckets with: `hash64` (tensorflow::Hash64, behind the
legacy StringToHashBucket op) and `siphash24` (StrongKeyedHash, behind StringToHashBucketStrong).

`hash64` is a MurmurHash64A variant with TensorFlow's default seed 0xDECAFCAFFE: 8-byte
little-endian words, then the tail bytes. `siphash24` is SipHash-2-4 keyed by two 64-bit words,
as highwayhash implements it (TensorFlow's StrongKeyedHash). Both are written from the published
algorithms in plain Python integers, one string at a time: they are fixed for all time, so hashes
written into models and vocabularies stay comparable.
"""
from __future__ import annotations

import struct

_M64 = 0xFFFFFFFFFFFFFFFF
_MURMUR_MUL = 0xC6A4A7935BD1E995
_MURMUR_SEED = 0xDECAFCAFFE


def hash64(data: bytes, seed: int = _MURMUR_SEED) -> int:
    """tensorflow::Hash64 of `data`, as an unsigned 64-bit int."""
    length = len(data)
    h = seed ^ ((length * _MURMUR_MUL) & _M64)
    whole = length // 8
    for k in struct.unpack_from(f"<{whole}Q", data):
        k = (k * _MURMUR_MUL) & _M64
        k ^= k >> 47
        h = ((h ^ ((k * _MURMUR_MUL) & _M64)) * _MURMUR_MUL) & _M64
    tail = data[whole * 8:]
    if tail:
        h = ((h ^ int.from_bytes(tail, "little")) * _MURMUR_MUL) & _M64
    h ^= h >> 47
    h = (h * _MURMUR_MUL) & _M64
    return h ^ (h >> 47)


def _rotl(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (64 - shift))) & _M64


def _sip_rounds(v0: int, v1: int, v2: int, v3: int, rounds: int) -> tuple[int, int, int, int]:
    for _ in range(rounds):
        v0 = (v0 + v1) & _M64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _M64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _M64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _M64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key: tuple[int, int], data: bytes) -> int:
    """SipHash-2-4 of `data` under the 128-bit key (k0, k1), as an unsigned 64-bit int: 8-byte
    little-endian words, the last one holding the tail bytes and the length mod 256 on top."""
    k0, k1 = key[0] & _M64, key[1] & _M64
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    whole = len(data) // 8
    last = int.from_bytes(data[whole * 8:], "little") | ((len(data) & 0xFF) << 56)
    for word in (*struct.unpack_from(f"<{whole}Q", data), last):
        v3 ^= word
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= word
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3
