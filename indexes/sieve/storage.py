"""Assembling the stored form of a Sieve index, and the Spark walk's row format.

The stored form (format 2) is one checksummed binary file, described in
``codec.py``; :func:`to_built` writes it and ``loading.py`` reads it back.
Its content, in directory order, is: the location names (a location's id is
its position) with the rows each holds, null keys included; one entry per
segment, sorted by ``(min_key, max_key)`` (mapped keys) with its block width
(0 = one block spanning the segment); the entries per block, blocks in
segment order; the ``(location id, rows)`` entries of every block; and the
rows with a null key per location.

A segment with ``min_key`` ``a``, ``max_key`` ``b`` and width ``w`` has
``(b - a) // w + 1`` blocks (one when ``w`` is 0); key ``k`` in ``[a, b]``
lies in the segment's block ``(k - a) // w``. Segments may overlap (bridged
gaps, keys whose mapped values coincide at a partition boundary); a lookup
visits every segment containing the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.sieve.codec import FILE_NAME, FORMAT_VERSION, SieveArrays, encode, to_table
from lakesieve.indexes.sieve.segments import SegmentSet
from lakesieve.sdk import BuiltIndex

#: Per-partition output of the Spark walk: one row per segment.
SEGMENT_ROW_SCHEMA = pa.schema(
    [
        pa.field("min_key", pa.int64(), nullable=False),
        pa.field("max_key", pa.int64(), nullable=False),
        pa.field("width_bits", pa.int64(), nullable=False),
        pa.field("keys", pa.int64(), nullable=False),
        pa.field("block_entries", pa.list_(pa.int64()), nullable=False),
        pa.field("entry_loc", pa.list_(pa.int32()), nullable=False),
        pa.field("entry_count", pa.list_(pa.int64()), nullable=False),
    ]
)


def expand_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenate ``arange(s, s + n)`` for every pair, vectorised (int64)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    run_first = np.cumsum(lengths) - lengths
    keep = lengths > 0
    out = np.ones(total, dtype=np.int64)
    out[run_first[keep]] = np.asarray(starts, dtype=np.int64)[keep]
    prev_last = np.asarray(starts, dtype=np.int64)[keep][:-1] + lengths[keep][:-1] - 1
    out[run_first[keep][1:]] -= prev_last
    return np.cumsum(out)


def sort_segments(segs: SegmentSet) -> SegmentSet:
    """Order segments by ``(min_key, max_key)``, carrying their blocks and entries."""
    if segs.num_segments == 0:
        return segs
    order = np.lexsort((segs.seg_max, segs.seg_min))
    if np.array_equal(order, np.arange(len(order))):
        return segs
    block_start = np.cumsum(segs.seg_blocks) - segs.seg_blocks
    block_idx = expand_ranges(block_start[order], segs.seg_blocks[order])
    entry_start = np.cumsum(segs.block_entries) - segs.block_entries
    entry_idx = expand_ranges(entry_start[block_idx], segs.block_entries[block_idx])
    return SegmentSet(
        segs.seg_min[order],
        segs.seg_max[order],
        segs.seg_width[order],
        segs.seg_blocks[order],
        segs.seg_keys[order],
        segs.block_entries[block_idx],
        segs.entry_loc[entry_idx],
        segs.entry_count[entry_idx],
    )


def segments_to_rows(segs: SegmentSet) -> pa.RecordBatch:
    """Encode a partition's segments as rows of :data:`SEGMENT_ROW_SCHEMA`."""
    seg_block_off = np.append(0, np.cumsum(segs.seg_blocks)).astype(np.int32)
    seg_entry_off = np.append(0, np.cumsum(segs.seg_entries())).astype(np.int32)
    arrays = [
        pa.array(segs.seg_min, pa.int64()),
        pa.array(segs.seg_max, pa.int64()),
        pa.array(segs.seg_width.view(np.int64), pa.int64()),
        pa.array(segs.seg_keys, pa.int64()),
        pa.ListArray.from_arrays(pa.array(seg_block_off), pa.array(segs.block_entries, pa.int64())),
        pa.ListArray.from_arrays(pa.array(seg_entry_off), pa.array(segs.entry_loc, pa.int32())),
        pa.ListArray.from_arrays(pa.array(seg_entry_off), pa.array(segs.entry_count, pa.int64())),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=SEGMENT_ROW_SCHEMA)


def _flat(column: pa.ChunkedArray | pa.Array, dtype: Any) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return np.asarray(column.flatten(), dtype=dtype)


def rows_to_segments(table: pa.Table) -> SegmentSet:
    """Decode rows of :data:`SEGMENT_ROW_SCHEMA` (any order) into a segment set."""
    if table.num_rows == 0:
        return SegmentSet()
    return SegmentSet(
        np.asarray(table.column("min_key"), dtype=np.int64),
        np.asarray(table.column("max_key"), dtype=np.int64),
        np.asarray(table.column("width_bits"), dtype=np.int64).view(np.uint64),
        np.asarray(table.column("block_entries").combine_chunks().value_lengths(), np.int64),
        np.asarray(table.column("keys"), dtype=np.int64),
        _flat(table.column("block_entries"), np.int64),
        _flat(table.column("entry_loc"), np.int32),
        _flat(table.column("entry_count"), np.int64),
    )


def to_built(
    segs: SegmentSet,
    locations: list[str],
    nulls: Mapping[int, int],
    key_type: str,
    params: Mapping[str, Any],
    rows: int,
    location_rows: np.ndarray | None = None,
    extra_meta: Mapping[str, Any] | None = None,
) -> BuiltIndex:
    """Assemble the stored file and meta of an index (format 2, one blob; see ``codec.py``).

    Args:
        segs: every segment (any order).
        locations: location names; the id of a location is its position.
        nulls: location id -> rows with a null key there.
        key_type: the column's Spark type string.
        params: the full build parameters.
        rows: rows in the relation (nulls included).
        location_rows: rows per location id (nulls included); ``None``
            derives them from the entries and ``nulls`` (exact for a build).
        extra_meta: further meta entries (a delta's bookkeeping).
    """
    arrays, segs = to_arrays(segs, locations, nulls, location_rows)
    meta = {
        "format_version": FORMAT_VERSION,
        "key_type": key_type,
        "params": dict(params),
        "rows": int(rows),
        "null_rows": int(arrays.null_count.sum()),
        "distinct_keys": int(segs.seg_keys.sum()),
        "segments": segs.num_segments,
        "blocks": len(segs.block_entries),
        "entries": len(segs.entry_loc),
        "locations": len(locations),
    }
    meta.update(extra_meta or {})
    return BuiltIndex(files={FILE_NAME: to_table(encode(arrays))}, meta=meta)


def to_arrays(
    segs: SegmentSet,
    locations: list[str],
    nulls: Mapping[int, int],
    location_rows: np.ndarray | None = None,
) -> tuple[SieveArrays, SegmentSet]:
    """The content of an index in directory order, and the sorted segments."""
    segs = sort_segments(segs)
    if location_rows is None:
        location_rows = np.zeros(len(locations), np.int64)
        np.add.at(location_rows, segs.entry_loc.astype(np.int64), segs.entry_count)
        for loc_id, count in nulls.items():
            location_rows[int(loc_id)] += int(count)
    location_rows = np.asarray(location_rows, dtype=np.int64)
    if len(location_rows) != len(locations):
        raise ValueError("location_rows and locations differ in length")
    null_ids = np.array(sorted(i for i, c in nulls.items() if c > 0), dtype=np.int32)
    null_counts = np.array([nulls[int(i)] for i in null_ids], dtype=np.int64)
    arrays = SieveArrays(
        locations=list(locations),
        location_rows=location_rows,
        seg_min=segs.seg_min,
        seg_max=segs.seg_max,
        seg_width=segs.seg_width,
        block_entries=segs.block_entries,
        entry_loc=segs.entry_loc,
        entry_count=segs.entry_count,
        null_loc=null_ids,
        null_count=null_counts,
    )
    return arrays, segs
