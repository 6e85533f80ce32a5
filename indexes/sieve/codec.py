"""The compact stored form of a Sieve index (format 2): one checksummed binary blob.

The whole index is one byte string, stored as the single value of a
one-column Arrow table (file ``sieve``, column ``data``), so the index store
writes one small file with its own checksum instead of five Arrow files with
a schema each.

Layout of the blob::

    magic  b"LSSV"        4 bytes
    version                1 byte  (FORMAT_VERSION)
    crc32 of the body      4 bytes, little endian
    body length, inflated  4 bytes, little endian
    body                   zlib-deflated sections

The inflated body is a sequence of integer arrays and one byte string, in
this order:

==================  ===========================================================
location names      lengths of the UTF-8 names, then the names concatenated
location rows       rows per location id, null keys included (zigzag)
segment min keys    ascending mapped keys, stored as differences modulo 2**64
segment spans       ``max_key - min_key`` modulo 2**64
segment widths      the block width, or 0 when the segment is one block
block entries       entries per block, blocks in segment order
entry locations     location id per entry
entry counts        rows per entry (zigzag)
null locations      location ids holding null keys
null counts         rows with a null key there (zigzag)
==================  ===========================================================

Each integer array is written as its length (4 bytes), a byte saying how
wide its values are (1, 2, 4 or 8 bytes, the narrowest that fits) and the
values with their bytes transposed (all lowest bytes first), which lets
zlib squeeze the mostly-zero high bytes of small deltas and counts. Keys are
the order-preserving int64 keys of :mod:`lakesieve.sdk.keys`, so every key
type's ordering (NaN above all numbers, -0.0 equal to 0.0, strings, dates,
decimals, timestamps) is the one the build used.

Decoding checks the magic, the version, the checksum, the inflated length
and every section's bounds; anything else raises :class:`CodecError`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

FORMAT_VERSION = 2
FILE_NAME = "sieve"
COLUMN = "data"
MAGIC = b"LSSV"
_HEADER = struct.Struct("<4sBII")
_COUNT = struct.Struct("<IB")
_U64 = np.uint64
_WIDTHS = (np.uint8, np.uint16, np.uint32, np.uint64)
_LIMITS = tuple((1 << (8 * np.dtype(t).itemsize)) - 1 for t in _WIDTHS)
_MAX_BODY = 1 << 31


class CodecError(ValueError):
    """A stored Sieve blob does not decode."""


@dataclass
class SieveArrays:
    """The content of a stored Sieve index, segments in directory order.

    Attributes:
        locations: location names by id.
        location_rows: rows per location id, null keys included (int64).
        seg_min: segment lower keys, ascending (int64).
        seg_max: segment upper keys (int64).
        seg_width: block widths (uint64; 0 = one block).
        block_entries: entries per block, blocks in segment order (int64).
        entry_loc: location id per entry (int32).
        entry_count: rows per entry (int64).
        null_loc: location ids holding null keys (int32).
        null_count: rows with a null key per such location (int64).
    """

    locations: list[str]
    location_rows: np.ndarray
    seg_min: np.ndarray
    seg_max: np.ndarray
    seg_width: np.ndarray
    block_entries: np.ndarray
    entry_loc: np.ndarray
    entry_count: np.ndarray
    null_loc: np.ndarray
    null_count: np.ndarray


# ---------------------------------------------------------------------------
# integer arrays
# ---------------------------------------------------------------------------


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64)
    return ((v << 1) ^ (v >> 63)).view(_U64)


def _unzigzag(values: np.ndarray) -> np.ndarray:
    u = np.asarray(values, dtype=_U64)
    return ((u >> _U64(1)) ^ (_U64(0) - (u & _U64(1)))).view(np.int64)


def _put(out: list[bytes], values: np.ndarray) -> None:
    """Append one unsigned array: count, width code, transposed bytes."""
    u = np.ascontiguousarray(values, dtype=_U64)
    top = int(u.max()) if len(u) else 0
    code = next(i for i, limit in enumerate(_LIMITS) if top <= limit)
    if len(u) >= 1 << 32:
        raise ValueError("a Sieve section holds more than 2**32 values")
    narrow = u.astype(_WIDTHS[code]).astype(np.dtype(_WIDTHS[code]).newbyteorder("<"))
    size = np.dtype(_WIDTHS[code]).itemsize
    out.append(_COUNT.pack(len(u), code))
    out.append(narrow.view(np.uint8).reshape(len(u), size).T.tobytes())


class _Reader:
    """Reads sections back from the inflated body, checking every bound."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.body):
            raise CodecError("sieve blob is truncated")
        chunk = self.body[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def array(self) -> np.ndarray:
        count, code = _COUNT.unpack(self.take(_COUNT.size))
        if code >= len(_WIDTHS):
            raise CodecError(f"sieve blob has an unknown value width code {code}")
        dtype = np.dtype(_WIDTHS[code]).newbyteorder("<")
        raw = np.frombuffer(self.take(count * dtype.itemsize), dtype=np.uint8)
        values = raw.reshape(dtype.itemsize, count).T.copy().view(dtype).reshape(count)
        return values.astype(_U64)

    def end(self) -> None:
        if self.pos != len(self.body):
            raise CodecError("sieve blob has trailing bytes")


# ---------------------------------------------------------------------------
# the blob
# ---------------------------------------------------------------------------


def encode(arrays: SieveArrays) -> bytes:
    """The blob of ``arrays`` (segments must already be in ``(min, max)`` order)."""
    parts: list[bytes] = []
    names = [s.encode("utf-8") for s in arrays.locations]
    _put(parts, np.array([len(b) for b in names], dtype=np.int64))
    joined = b"".join(names)
    parts.append(struct.pack("<I", len(joined)))
    parts.append(joined)
    _put(parts, _zigzag(arrays.location_rows))
    seg_min = np.asarray(arrays.seg_min, dtype=np.int64).view(_U64)
    seg_max = np.asarray(arrays.seg_max, dtype=np.int64).view(_U64)
    width = np.asarray(arrays.seg_width, dtype=_U64)
    _put(parts, np.diff(seg_min, prepend=_U64(0)))
    span = seg_max - seg_min
    _put(parts, span)
    _put(parts, np.where((width == 0) | (width > span), _U64(0), width))
    _put(parts, np.asarray(arrays.block_entries, dtype=np.int64))
    _put(parts, np.asarray(arrays.entry_loc, dtype=np.int64))
    _put(parts, _zigzag(arrays.entry_count))
    _put(parts, np.asarray(arrays.null_loc, dtype=np.int64))
    _put(parts, _zigzag(arrays.null_count))
    body = b"".join(parts)
    if len(body) >= _MAX_BODY:
        raise ValueError("a Sieve index body exceeds 2 GiB")
    packed = zlib.compress(body, 9)
    return _HEADER.pack(MAGIC, FORMAT_VERSION, zlib.crc32(packed), len(body)) + packed


def decode(blob: bytes) -> SieveArrays:
    """Decode and bound-check a blob written by :func:`encode`.

    Raises:
        CodecError: wrong magic or version, failed checksum, truncated or
            malformed sections.
    """
    if len(blob) < _HEADER.size:
        raise CodecError("sieve blob is shorter than its header")
    magic, version, crc, length = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise CodecError("sieve blob does not start with the Sieve magic bytes")
    if version != FORMAT_VERSION:
        raise CodecError(f"sieve blob has format version {version}, expected {FORMAT_VERSION}")
    packed = blob[_HEADER.size :]
    if zlib.crc32(packed) != crc:
        raise CodecError("sieve blob fails its checksum")
    try:
        inflater = zlib.decompressobj()
        body = inflater.decompress(packed, length + 1)
    except zlib.error as exc:
        raise CodecError(f"sieve blob does not inflate: {exc}") from exc
    if len(body) != length or not inflater.eof:
        raise CodecError("sieve blob inflates to the wrong length")
    r = _Reader(body)
    lengths = r.array()
    (joined_len,) = struct.unpack("<I", r.take(4))
    joined = r.take(joined_len)
    if int(lengths.sum()) != joined_len:
        raise CodecError("sieve blob's location names do not add up")
    ends = np.cumsum(lengths.astype(np.int64)).tolist()
    starts = [0, *ends[:-1]] if ends else []
    try:
        locations = [joined[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
    except UnicodeDecodeError as exc:
        raise CodecError(f"sieve blob has a location name that is not UTF-8: {exc}") from exc
    location_rows = _unzigzag(r.array())
    seg_min = np.cumsum(r.array(), dtype=_U64)
    span = r.array()
    width = r.array()
    block_entries = r.array()
    entry_loc = r.array()
    entry_count = _unzigzag(r.array())
    null_loc = r.array()
    null_count = _unzigzag(r.array())
    r.end()
    n_seg = len(seg_min)
    if len(span) != n_seg or len(width) != n_seg:
        raise CodecError("sieve blob's segment sections differ in length")
    if len(location_rows) != len(locations) or len(null_count) != len(null_loc):
        raise CodecError("sieve blob's location sections differ in length")
    if len(entry_count) != len(entry_loc):
        raise CodecError("sieve blob's entry sections differ in length")
    n_loc = len(locations)
    if np.any(entry_loc >= _U64(max(n_loc, 1))) or np.any(null_loc >= _U64(max(n_loc, 1))):
        raise CodecError("sieve blob names an unknown location id")
    if n_loc == 0 and (len(entry_loc) or len(null_loc)):
        raise CodecError("sieve blob names an unknown location id")
    seg_max = seg_min + span
    if np.any(block_entries > _U64(len(entry_loc))):
        raise CodecError("sieve blob has a block with more entries than stored")
    return SieveArrays(
        locations=locations,
        location_rows=location_rows,
        seg_min=seg_min.view(np.int64),
        seg_max=seg_max.view(np.int64),
        seg_width=np.where(width == 0, span + _U64(1), width).astype(_U64),
        block_entries=block_entries.astype(np.int64),
        entry_loc=entry_loc.astype(np.int32),
        entry_count=entry_count,
        null_loc=null_loc.astype(np.int32),
        null_count=null_count,
    )


def to_table(blob: bytes) -> pa.Table:
    """The one-row Arrow table the store writes for ``blob``."""
    return pa.table({COLUMN: pa.array([blob], pa.binary())})


def from_table(table: pa.Table) -> bytes:
    """The blob held by a table written by :func:`to_table`."""
    if table.column_names != [COLUMN] or table.num_rows != 1:
        raise CodecError("sieve file does not hold exactly one blob")
    value = table.column(COLUMN)[0].as_py()
    if not isinstance(value, bytes):
        raise CodecError("sieve file's blob is not binary")
    return value
