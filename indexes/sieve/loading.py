"""Loading a stored Sieve index: decode its blob, check it, build a :class:`SieveIndex`.

The stored form is format 2 (one checksummed blob, ``codec.py``), what
builds and deltas write. An index stored in any other format version is
refused with a :class:`SieveFormatError` naming the version (the framework
then reports the index unreadable, does not use it and reads every
location; a rebuild writes it again in format 2). The codec checks the
blob's sections and ids; the loader checks that segments, blocks and
entries fit together, so a corrupt or hostile file raises instead of
answering wrongly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.sieve.codec import (
    FILE_NAME,
    FORMAT_VERSION,
    CodecError,
    SieveArrays,
    decode,
    from_table,
)
from lakesieve.indexes.sieve.lookup import SieveFormatError, SieveIndex
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.index_files import ipc_size
from lakesieve.sdk.keys import parse_key_type

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


def load_index(built: BuiltIndex) -> SieveIndex:
    """Decode and check a stored index of format 2.

    Raises:
        SieveFormatError: the format version is not 2 (the message names it),
            the file is missing, malformed or fails its checksum, or
            segments, blocks and entries do not fit together.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise SieveFormatError(
            f"sieve index is stored in format version {version!r}, which this version of "
            f"lakesieve does not read (it reads format {FORMAT_VERSION}); rebuild the index"
        )
    key_type = meta.get("key_type")
    _check(isinstance(key_type, str), "no key type")
    assert isinstance(key_type, str)
    parse_key_type(key_type)
    params = meta.get("params") or {}
    _check(isinstance(params, dict), "params is not a dict")
    table = built.files.get(FILE_NAME)
    if not isinstance(table, pa.Table):
        raise SieveFormatError(f"sieve index file {FILE_NAME!r} is missing")
    try:
        arrays = decode(from_table(table))
    except CodecError as exc:
        raise SieveFormatError(str(exc)) from exc
    return _checked(arrays, key_type, params, meta, built)


def _checked(
    a: SieveArrays, key_type: str, params: dict[str, Any], meta: dict[str, Any], built: BuiltIndex
) -> SieveIndex:
    """The loaded index of decoded arrays, once blocks and entries are checked to fit."""
    n_blocks, n_entries = len(a.block_entries), len(a.entry_loc)
    seg_blocks = _seg_blocks(a.seg_min, a.seg_max, a.seg_width, n_blocks)
    _check(int(seg_blocks.sum()) == n_blocks, "segments and stored blocks differ in number")
    _check(int(a.block_entries.sum()) == n_entries, "blocks and entries differ in number")
    _check(bool(np.all(a.location_rows >= 0)), "a location has a negative row count")
    seg_first = np.cumsum(seg_blocks) - seg_blocks
    seg_min, seg_max, seg_width = a.seg_min, a.seg_max, a.seg_width
    order = np.lexsort((seg_max, seg_min))
    if not np.array_equal(order, np.arange(len(order))):
        seg_min, seg_max, seg_width = seg_min[order], seg_max[order], seg_width[order]
        seg_first, seg_blocks = seg_first[order], seg_blocks[order]
    size = sum(ipc_size(t) for t in built.files.values() if isinstance(t, pa.Table))
    return SieveIndex(
        key_type=key_type,
        params=dict(params),
        locations=np.array(a.locations, dtype=object),
        seg_min=seg_min,
        seg_max=seg_max,
        seg_width=seg_width,
        seg_first_block=seg_first,
        seg_blocks=seg_blocks,
        block_first_entry=np.append(0, np.cumsum(a.block_entries)).astype(np.int64),
        entry_loc=a.entry_loc,
        entry_count=a.entry_count,
        null_loc=a.null_loc,
        null_count=a.null_count,
        location_rows=a.location_rows,
        size_bytes=int(size),
        meta=meta,
    )
