"""Bloom filters as numpy bit arrays: sizing, setting bits, probing many at once.

A filter of ``m`` bits (a multiple of 64, stored as ``m / 8`` bytes, bit
``b`` in byte ``b // 8`` at position ``b % 8``, least significant first)
with ``k`` probes holds a key with hash ``h`` when the bits
``(h + i * h2) mod m`` for ``i < k`` are all set (:mod:`hashing`). For ``n``
keys and a false-positive probability ``p`` the classic sizes are
``m = -n ln p / (ln 2)^2`` and ``k = (m / n) ln 2``. A filter for no keys
has ``m = 0`` and matches nothing.
"""

from __future__ import annotations

import math

import numpy as np
from lakesieve.indexes.bloom.hashing import probe_step

__all__ = ["MAX_HASHES", "filter_shape", "make_bits", "might_contain", "probe_locations"]

#: More probes than this only add cost (p would be below 1e-9).
MAX_HASHES = 30
_LN2 = math.log(2.0)
_CELLS_PER_CHUNK = 1 << 20


def filter_shape(keys: int, fpp: float) -> tuple[int, int]:
    """``(bits, probes)`` of a filter for ``keys`` distinct keys at false-positive rate ``fpp``."""
    if keys <= 0:
        return 0, 0
    bits = math.ceil(-keys * math.log(fpp) / (_LN2 * _LN2))
    bits = max(64, (bits + 63) // 64 * 64)
    probes = max(1, min(MAX_HASHES, round(bits / keys * _LN2)))
    return bits, probes


def _positions(hashes: np.ndarray, bits: int, probes: int) -> np.ndarray:
    h = np.asarray(hashes, dtype=np.uint64)
    step = probe_step(h)
    i = np.arange(probes, dtype=np.uint64)
    return (h[:, None] + i[None, :] * step[:, None]) % np.uint64(bits)  # type: ignore[no-any-return]


def make_bits(hashes: np.ndarray, bits: int, probes: int) -> bytes:
    """The filter bytes holding every hash in ``hashes``."""
    if bits <= 0:
        return b""
    flags = np.zeros(bits, dtype=bool)
    # probe positions in chunks: a (keys x probes) matrix of the whole set would
    # take 8 * probes bytes a key at once
    step = max(1, _CELLS_PER_CHUNK // max(probes, 1))
    for a in range(0, len(hashes), step):
        flags[_positions(hashes[a : a + step], bits, probes).ravel().astype(np.int64)] = True
    return bytes(np.packbits(flags, bitorder="little").tobytes())


def might_contain(hashes: np.ndarray, bits: bytes, num_bits: int, probes: int) -> np.ndarray:
    """For each hash, whether one filter may hold it (all its probe bits set)."""
    h = np.asarray(hashes, dtype=np.uint64)
    if num_bits <= 0:
        return np.zeros(len(h), dtype=bool)
    flags = np.unpackbits(np.frombuffer(bits, np.uint8), bitorder="little").astype(bool)
    found = np.asarray(flags[_positions(h, num_bits, probes).astype(np.int64)].all(axis=1))
    return found


def probe_locations(
    hashes: np.ndarray,
    num_bits: np.ndarray,
    num_probes: np.ndarray,
    byte_offset: np.ndarray,
    data: np.ndarray,
) -> np.ndarray:
    """For every filter, whether it may hold any of ``hashes``.

    Args:
        hashes: uint64 hashes of the query's points.
        num_bits: bits per filter (int64; 0 = empty filter).
        num_probes: probes per filter.
        byte_offset: where each filter's bytes start in ``data``.
        data: every filter's bytes, concatenated, plus one spare byte.

    Returns:
        A bool array, one per filter.
    """
    n_filters = len(num_bits)
    hit = np.zeros(n_filters, dtype=bool)
    h = np.asarray(hashes, dtype=np.uint64)
    if n_filters == 0 or len(h) == 0:
        return hit
    m = np.maximum(num_bits, 1).astype(np.uint64)[:, None]
    start = np.asarray(byte_offset, dtype=np.int64)[:, None]
    probes = np.asarray(num_probes, dtype=np.int64)[:, None]
    usable = (np.asarray(num_bits) > 0)[:, None]
    chunk = max(1, _CELLS_PER_CHUNK // n_filters)
    most = int(probes.max()) if n_filters else 0
    for a in range(0, len(h), chunk):
        part = h[a : a + chunk][None, :]
        step = probe_step(part)
        all_set = np.broadcast_to(usable, (n_filters, part.shape[1])).copy()
        for i in range(most):
            pos = (part + np.uint64(i) * step) % m
            byte = data[start + (pos >> np.uint64(3)).astype(np.int64)]
            bit = (byte >> (pos & np.uint64(7)).astype(np.uint8)) & np.uint8(1)
            all_set &= (bit == 1) | (i >= probes)
        hit |= all_set.any(axis=1)
    return hit
