"""The Bloom filter's hash: one 64-bit value per key, the same in Spark and on the driver.

Every key is hashed from a canonical encoding in the column's own type, by
numpy code that runs unchanged in Spark's Python workers (build) and on the
driver (lookup), so both sides agree bit for bit:

- integers, booleans, dates, timestamps, decimals up to 18 digits, floats
  and doubles: the int64 of :func:`lakesieve.sdk.keys.map_keys_arrow` (exact for
  these types; ``-0.0``/``0.0`` and all NaNs share one value, as Spark
  compares them equal), through :func:`mix64` after xor with a seed — a
  bijection, so distinct keys never share a hash;
- decimals of more than 18 digits: the unscaled 128-bit two's complement
  value as two 64-bit words, mixed in turn;
- strings (UTF-8) and binaries: the full bytes (not a prefix), cut into
  little-endian 8-byte words (the last zero-padded); each word is mixed with
  its position, the mixed words are summed modulo 2**64 and the sum is
  mixed with the byte length. Vectorised over all words of all values, no
  Python loop per value.

:func:`mix64` is the splitmix64 finaliser (xor-shift, multiply, twice). The
``k`` probe positions of a key follow double hashing:
``(h + i * h2) mod m`` for ``i < k``, with ``h2 = mix64(h ^ seed) | 1``.
"""

from __future__ import annotations

import decimal as _dec
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.sdk.keys import KeyOrder

__all__ = ["HASH_SCHEME", "key_hashes", "mix64", "probe_step", "value_hashes"]

#: Named in the stored meta; a change of scheme must change this name.
HASH_SCHEME = "lakesieve-bloom-1"

_U = np.uint64
_MUL1 = _U(0xBF58476D1CE4E5B9)
_MUL2 = _U(0x94D049BB133111EB)
_SEED_INT = _U(0x9E3779B97F4A7C15)
_SEED_WIDE = _U(0xD6E8FEB86659FD93)
_SEED_POS = _U(0xA0761D6478BD642F)
_SEED_LEN = _U(0xE7037ED1A0B428DB)
_SEED_PROBE = _U(0x8EBC6AF09C88C6E3)
_MASK64 = (1 << 64) - 1
_WORDS_PER_CHUNK = 1 << 18


def mix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser over a uint64 array (a bijection on 64-bit words)."""
    x = np.asarray(x, dtype=np.uint64)
    x = (x ^ (x >> _U(30))) * _MUL1
    x = (x ^ (x >> _U(27))) * _MUL2
    return x ^ (x >> _U(31))  # type: ignore[no-any-return]


def _hash_int64(forms: np.ndarray) -> np.ndarray:
    return mix64(np.asarray(forms, dtype=np.int64).view(np.uint64) ^ _SEED_INT)


def _hash_words128(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return mix64(mix64(np.asarray(low, np.uint64) ^ _SEED_WIDE) ^ np.asarray(high, np.uint64))


def _hash_bytes(values: pa.Array) -> np.ndarray:
    arr = KeyOrder.binary(values)
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.uint64)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if arr.null_count:
        lengths = np.where(np.asarray(arr.is_valid(), dtype=bool), lengths, 0)
    words = (lengths + 7) // 8
    first_word = np.cumsum(words) - words
    total = int(words.sum())
    owner = np.repeat(np.arange(n, dtype=np.int64), words)
    position = np.arange(total, dtype=np.int64) - first_word[owner]
    byte_at = starts[owner] + 8 * position
    left = lengths[owner] - 8 * position
    padded = np.concatenate([data, np.zeros(8, np.uint8)])
    lanes = np.arange(8, dtype=np.int64)
    mixed = np.empty(total, dtype=np.uint64)
    for a in range(0, total, _WORDS_PER_CHUNK):
        b = min(total, a + _WORDS_PER_CHUNK)
        block = padded[byte_at[a:b, None] + lanes[None, :]]
        block[lanes[None, :] >= left[a:b, None]] = 0
        word = np.ascontiguousarray(block).view("<u8").reshape(-1).astype(np.uint64)
        mixed[a:b] = mix64(word ^ mix64(position[a:b].astype(np.uint64) + _SEED_POS))
    running = np.zeros(total + 1, dtype=np.uint64)
    np.cumsum(mixed, out=running[1:])
    summed = running[first_word + words] - running[first_word]
    return mix64(summed ^ mix64(lengths.astype(np.uint64) ^ _SEED_LEN))


def _decimal_words(values: pa.Array, order: KeyOrder) -> tuple[np.ndarray, np.ndarray]:
    arr = values.cast(pa.decimal128(order.kind.precision, order.kind.scale))
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype="<u8")[2 * arr.offset : 2 * (arr.offset + n)]
    pairs = raw.astype(np.uint64).reshape(n, 2)
    return pairs[:, 0], pairs[:, 1]


def key_hashes(
    values: pa.Array | pa.ChunkedArray, order: KeyOrder
) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of a column's values (build side).

    Args:
        values: the values in the Arrow type Spark uses for the column.
        order: the key type's forms.

    Returns:
        ``(hashes, valid)``: uint64 hashes and a mask of non-null values
        (the hash of a null is meaningless).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    valid = np.asarray(values.is_valid(), dtype=bool)
    if order.form == "int64":
        return _hash_int64(order.array(values)), valid
    if order.form == "bytes":
        return _hash_bytes(values), valid
    low, high = _decimal_words(values, order)
    return _hash_words128(low, high), valid


def value_hashes(value: Any, order: KeyOrder) -> list[int]:
    """The hashes a point lookup of one query value probes (lookup side).

    Equal to :func:`key_hashes` of the value when it is a value of the column;
    empty when no value of the column can equal it, as Spark compares them: a
    value between two column values (``1.5`` on an integer column, a double
    no float32 equals on a ``float`` column; see
    :class:`~lakesieve.sdk.keys.QueryForms`), or a decimal
    beyond 38 digits.

    Raises:
        TypeError: the value cannot be compared with the column's values.
        ValueError: NaN against a non-floating column.
    """
    forms = order.query(value).points()
    if order.form == "int64":
        return [int(h) for h in _hash_int64(np.array(forms, dtype=np.int64))]
    if order.form == "bytes":
        return [int(h) for h in _hash_bytes(pa.array(forms, pa.large_binary()))]
    out = []
    for form in forms:
        assert isinstance(form, _dec.Decimal)
        if not form.is_finite() or (form and form.adjusted() > 40):
            continue
        unscaled = int(form.scaleb(order.kind.scale, context=_dec.Context(prec=200)))
        if abs(unscaled) >= 10**38:
            continue
        twos = unscaled & ((1 << 128) - 1)
        low = np.array([twos & _MASK64], dtype=np.uint64)
        high = np.array([twos >> 64], dtype=np.uint64)
        out.append(int(_hash_words128(low, high)[0]))
    return out


def probe_step(hashes: np.ndarray) -> np.ndarray:
    """The double-hashing step ``h2`` (odd) of each hash."""
    return mix64(np.asarray(hashes, np.uint64) ^ _SEED_PROBE) | _U(1)  # type: ignore[no-any-return]
