"""Loading a stored Sieve index: decode either stored format, check it, build a :class:`SieveIndex`.

Format 2 (one blob, ``codec.py``) is what builds and deltas write; format 1
(five Arrow tables, ``legacy.py``) is still read, so an index written before
format 2 keeps answering until its next rebuild or delta rewrites it in
format 2. Any other version is refused. Every offset and id is checked before
use, so a corrupt or hostile file raises :class:`SieveFormatError` (the
framework then falls back to a full scan with a warning) instead of
answering wrongly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.files.ipc_files import ipc_size
from lakesieve.indexes.sieve.codec import FILE_NAME, FORMAT_VERSION, CodecError, decode, from_table
from lakesieve.indexes.sieve.legacy import FORMAT_VERSION_V1, V1Arrays, read_v1
from lakesieve.indexes.sieve.lookup import SieveFormatError, SieveIndex
from lakesieve.keys.mapping import parse_key_type
from lakesieve.model import BuiltIndex

_U64 = np.uint64


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise SieveFormatError(f"sieve index is inconsistent: {what}")


def _seg_blocks(
    seg_min: np.ndarray, seg_max: np.ndarray, width: np.ndarray, limit: int
) -> np.ndarray:
    """Blocks per segment, checked to be at most ``limit`` each."""
    _check(bool(np.all(seg_min <= seg_max)), "a segment's min key exceeds its max key")
    span = seg_max.view(_U64) - seg_min.view(_U64)
    blocks = np.where(width == 0, _U64(0), span // np.maximum(width, _U64(1)))
    _check(bool(np.all(blocks < _U64(limit + 1))), "a segment has more blocks than stored")
    return blocks.astype(np.int64) + 1


def _from_v2(built: BuiltIndex) -> V1Arrays:
    """Decode a format-2 blob into the offset form the checks below share."""
    table = built.files.get(FILE_NAME)
    if not isinstance(table, pa.Table):
        raise SieveFormatError(f"sieve index file {FILE_NAME!r} is missing")
    a = decode(from_table(table))
    n_blocks = len(a.block_entries)
    seg_blocks = _seg_blocks(a.seg_min, a.seg_max, a.seg_width, n_blocks)
    _check(int(seg_blocks.sum()) == n_blocks, "segments and stored blocks differ in number")
    _check(int(a.block_entries.sum()) == len(a.entry_loc), "blocks and entries differ in number")
    return V1Arrays(
        locations=a.locations,
        location_rows=a.location_rows,
        seg_min=a.seg_min,
        seg_max=a.seg_max,
        seg_width=a.seg_width,
        seg_first_block=np.cumsum(seg_blocks) - seg_blocks,
        block_first_entry=np.cumsum(a.block_entries) - a.block_entries,
        entry_loc=a.entry_loc,
        entry_count=a.entry_count,
        null_loc=a.null_loc,
        null_count=a.null_count,
    )


def load_index(built: BuiltIndex) -> SieveIndex:
    """Decode and check a stored index (format 2, or format 1 written before it).

    Raises:
        SieveFormatError: a file is missing, malformed or fails its checksum,
            the format version is unknown, or offsets and ids do not fit together.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    version = meta.get("format_version")
    _check(version in (FORMAT_VERSION, FORMAT_VERSION_V1), f"format version {version!r}")
    key_type = meta.get("key_type")
    _check(isinstance(key_type, str), "no key type")
    assert isinstance(key_type, str)
    parse_key_type(key_type)
    params = meta.get("params") or {}
    _check(isinstance(params, dict), "params is not a dict")
    try:
        a = _from_v2(built) if version == FORMAT_VERSION else read_v1(built)
    except CodecError as exc:
        raise SieveFormatError(str(exc)) from exc
    return _checked(a, key_type, params, meta, built)


def _checked(
    a: V1Arrays, key_type: str, params: dict[str, Any], meta: dict[str, Any], built: BuiltIndex
) -> SieveIndex:
    locations = np.array(a.locations, dtype=object)
    n_loc = len(locations)
    n_blocks, n_entries = len(a.block_first_entry), len(a.entry_loc)
    first_entry = a.block_first_entry
    seg_blocks = _seg_blocks(a.seg_min, a.seg_max, a.seg_width, n_blocks)
    seg_first = a.seg_first_block
    _check(
        bool(np.all((seg_first >= 0) & (seg_first + seg_blocks <= n_blocks))),
        "a segment's blocks lie outside the blocks table",
    )
    _check(n_blocks == 0 or int(first_entry[0]) == 0, "blocks do not start at entry 0")
    _check(bool(np.all(np.diff(first_entry) >= 0)), "block entry offsets decrease")
    _check(
        n_blocks == 0 or int(first_entry[-1]) <= n_entries, "block entries lie outside the entries"
    )
    _check(
        bool(np.all((a.entry_loc >= 0) & (a.entry_loc < n_loc))),
        "an entry names an unknown location",
    )
    _check(
        bool(np.all((a.null_loc >= 0) & (a.null_loc < n_loc))),
        "a null entry names an unknown location",
    )
    location_rows = a.location_rows
    if location_rows is None:
        location_rows = np.zeros(n_loc, np.int64)
        np.add.at(location_rows, a.entry_loc.astype(np.int64), a.entry_count)
        np.add.at(location_rows, a.null_loc.astype(np.int64), a.null_count)
    _check(len(location_rows) == n_loc, "locations and their row counts differ in number")
    _check(bool(np.all(location_rows >= 0)), "a location has a negative row count")

    seg_min, seg_max, seg_width = a.seg_min, a.seg_max, a.seg_width
    order = np.lexsort((seg_max, seg_min))
    if not np.array_equal(order, np.arange(len(order))):
        seg_min, seg_max, seg_width = seg_min[order], seg_max[order], seg_width[order]
        seg_first, seg_blocks = seg_first[order], seg_blocks[order]
    size = sum(ipc_size(t) for t in built.files.values() if isinstance(t, pa.Table))
    return SieveIndex(
        key_type=key_type,
        params=dict(params),
        locations=locations,
        seg_min=seg_min,
        seg_max=seg_max,
        seg_width=seg_width,
        seg_first_block=seg_first,
        seg_blocks=seg_blocks,
        block_first_entry=np.append(first_entry, n_entries).astype(np.int64),
        entry_loc=a.entry_loc,
        entry_count=a.entry_count,
        null_loc=a.null_loc,
        null_count=a.null_count,
        location_rows=location_rows,
        size_bytes=int(size),
        meta=meta,
    )
