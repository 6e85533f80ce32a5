"""Format 1 of a stored Sieve index: five Arrow tables (read for indexes written before format 2).

================  ==================================================================
``locations``     ``location`` (string), id = row number; ``rows`` (int64, rows
                  per location, null keys included; absent in the earliest files)
``directory``     per segment: ``min_key``, ``max_key`` (int64), ``width``
                  (uint64), ``first_block`` (int64 row in ``blocks``)
``blocks``        per block: ``first_entry`` (int64 row in ``entries``)
``entries``       ``location_id`` (int32), ``count`` (int64)
``nulls``         ``location_id`` (int32), ``count`` (int64)
================  ==================================================================

:func:`read_v1` decodes these tables into plain arrays (the loader checks
them exactly like format 2); :func:`write_v1` writes them, so that tests can
prove an index stored in format 1 still loads and answers the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.sieve.codec import CodecError, SieveArrays
from lakesieve.model import BuiltIndex

FORMAT_VERSION_V1 = 1

LOCATIONS_SCHEMA = pa.schema(
    [
        pa.field("location", pa.string(), nullable=False),
        pa.field("rows", pa.int64(), nullable=False),
    ]
)
DIRECTORY_SCHEMA = pa.schema(
    [
        pa.field("min_key", pa.int64(), nullable=False),
        pa.field("max_key", pa.int64(), nullable=False),
        pa.field("width", pa.uint64(), nullable=False),
        pa.field("first_block", pa.int64(), nullable=False),
    ]
)
BLOCKS_SCHEMA = pa.schema([pa.field("first_entry", pa.int64(), nullable=False)])
ENTRIES_SCHEMA = pa.schema(
    [
        pa.field("location_id", pa.int32(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
FILE_SCHEMAS: dict[str, pa.Schema] = {
    "locations": LOCATIONS_SCHEMA,
    "directory": DIRECTORY_SCHEMA,
    "blocks": BLOCKS_SCHEMA,
    "entries": ENTRIES_SCHEMA,
    "nulls": ENTRIES_SCHEMA,
}


@dataclass
class V1Arrays:
    """The arrays of a format-1 index, blocks addressed through explicit offsets.

    Attributes:
        locations: location names by id.
        location_rows: rows per location id, or ``None`` in the earliest files.
        seg_min, seg_max, seg_width, seg_first_block: the directory columns.
        block_first_entry: first entry per block (no sentinel).
        entry_loc, entry_count, null_loc, null_count: the entries and nulls.
    """

    locations: list[str]
    location_rows: np.ndarray | None
    seg_min: np.ndarray
    seg_max: np.ndarray
    seg_width: np.ndarray
    seg_first_block: np.ndarray
    block_first_entry: np.ndarray
    entry_loc: np.ndarray
    entry_count: np.ndarray
    null_loc: np.ndarray
    null_count: np.ndarray


def _table(built: BuiltIndex, name: str) -> pa.Table:
    table = built.files.get(name)
    if not isinstance(table, pa.Table):
        raise CodecError(f"sieve index file {name!r} is missing")
    want = FILE_SCHEMAS[name]
    if name == "locations" and "rows" not in table.column_names:
        want = pa.schema([want.field("location")])  # written before per-location rows existed
    try:
        return table.select(want.names).cast(want)
    except (KeyError, pa.ArrowException) as exc:
        raise CodecError(f"sieve index file {name!r} has the wrong columns: {exc}") from exc


def _col(table: pa.Table, name: str, dtype: Any) -> np.ndarray:
    column = table.column(name)
    if column.null_count:
        raise CodecError(f"column {name!r} has nulls")
    return np.asarray(
        column.combine_chunks() if column.num_chunks != 1 else column.chunk(0), dtype=dtype
    )


def read_v1(built: BuiltIndex) -> V1Arrays:
    """Decode the five tables of a format-1 index (bounds are checked by the loader).

    Raises:
        CodecError: a table is missing, has the wrong columns or holds nulls.
    """
    loc_t = _table(built, "locations")
    dir_t = _table(built, "directory")
    blk_t = _table(built, "blocks")
    ent_t = _table(built, "entries")
    nul_t = _table(built, "nulls")
    loc_col = loc_t.column("location")
    if loc_col.null_count:
        raise CodecError("sieve index has a null location")
    return V1Arrays(
        locations=loc_col.to_pylist(),
        location_rows=_col(loc_t, "rows", np.int64) if "rows" in loc_t.column_names else None,
        seg_min=_col(dir_t, "min_key", np.int64),
        seg_max=_col(dir_t, "max_key", np.int64),
        seg_width=_col(dir_t, "width", np.uint64),
        seg_first_block=_col(dir_t, "first_block", np.int64),
        block_first_entry=_col(blk_t, "first_entry", np.int64),
        entry_loc=_col(ent_t, "location_id", np.int32),
        entry_count=_col(ent_t, "count", np.int64),
        null_loc=_col(nul_t, "location_id", np.int32),
        null_count=_col(nul_t, "count", np.int64),
    )


def write_v1(arrays: SieveArrays, meta: dict[str, Any]) -> BuiltIndex:
    """The format-1 tables of ``arrays`` (segments in directory order) with ``meta``."""
    blocks = np.asarray(arrays.seg_max, np.int64).view(np.uint64) - np.asarray(
        arrays.seg_min, np.int64
    ).view(np.uint64)
    width = np.asarray(arrays.seg_width, np.uint64)
    seg_blocks = np.where(width == 0, 0, blocks // np.maximum(width, np.uint64(1))).astype(np.int64)
    seg_blocks += 1
    first_block = np.cumsum(seg_blocks) - seg_blocks
    block_entries = np.asarray(arrays.block_entries, np.int64)
    first_entry = np.cumsum(block_entries) - block_entries
    files = {
        "locations": pa.table(
            [pa.array(arrays.locations, pa.string()), pa.array(arrays.location_rows, pa.int64())],
            schema=LOCATIONS_SCHEMA,
        ),
        "directory": pa.table(
            [
                pa.array(arrays.seg_min, pa.int64()),
                pa.array(arrays.seg_max, pa.int64()),
                pa.array(width, pa.uint64()),
                pa.array(first_block, pa.int64()),
            ],
            schema=DIRECTORY_SCHEMA,
        ),
        "blocks": pa.table([pa.array(first_entry, pa.int64())], schema=BLOCKS_SCHEMA),
        "entries": pa.table(
            [pa.array(arrays.entry_loc, pa.int32()), pa.array(arrays.entry_count, pa.int64())],
            schema=ENTRIES_SCHEMA,
        ),
        "nulls": pa.table(
            [pa.array(arrays.null_loc, pa.int32()), pa.array(arrays.null_count, pa.int64())],
            schema=ENTRIES_SCHEMA,
        ),
    }
    return BuiltIndex(files=files, meta={**meta, "format_version": FORMAT_VERSION_V1})
