"""Spark's ``xxhash64`` of a string, computed in Python.

Spark SQL's ``xxhash64(s)`` over a string column is the 64-bit xxHash
(XXH64) of the string's UTF-8 bytes with seed 42, read as a signed long.
Builds name locations by that code in their shuffles
(:mod:`lakesieve.keys.location_codes`); computing the codes of the known
names here saves a Spark job per build (about 0.15 s on a warm session, a
few seconds over a test run's hundreds of builds). ``tests/query/test_location_codes.py``
checks this function against Spark SQL itself.
"""

from __future__ import annotations

#: Spark's seed of ``xxhash64`` (and of ``hash``-like expressions).
SPARK_SEED = 42

_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_M = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M
    return (_rotl(acc, 31) * _P1) & _M


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M


def xxh64(data: bytes, seed: int = SPARK_SEED) -> int:
    """The XXH64 hash of ``data`` as an unsigned 64-bit integer."""
    n = len(data)
    at = 0
    seed &= _M
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed
        v4 = (seed - _P1) & _M
        while at + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[at : at + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[at + 8 : at + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[at + 16 : at + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[at + 24 : at + 32], "little"))
            at += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while at + 8 <= n:
        h ^= _round(0, int.from_bytes(data[at : at + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        at += 8
    if at + 4 <= n:
        h ^= (int.from_bytes(data[at : at + 4], "little") * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        at += 4
    while at < n:
        h ^= (data[at] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        at += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    h ^= h >> 32
    return h


def spark_xxhash64(text: str) -> int:
    """What Spark SQL's ``xxhash64(text)`` returns for a string (a signed 64-bit integer)."""
    h = xxh64(text.encode("utf-8"))
    return h - (1 << 64) if h >= 1 << 63 else h
