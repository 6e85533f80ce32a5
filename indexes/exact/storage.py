"""Format 1 of a stored exact index, and its assembly from (key, location, count) pairs.

Builds write format 2 (:mod:`lakesieve.indexes.exact.partitions`: key-range
partitions written by Spark tasks, and a manifest); states of format 1 are
still read. Each loaded partition of format 2 is answered by the same
in-memory layout as a whole format-1 index:

================  ==================================================================
``locations``     ``location`` (string); a location's id is its row number; names
                  sorted, only locations holding at least one row
``keys``          one row per distinct non-null key, sorted in the column's order:
                  ``key`` (the column's own Arrow type, exactly as Spark hands it
                  over) and ``first_entry`` (int64 row of the key's first entry in
                  ``entries``; a key's entries end where the next key's begin)
``entries``       ``location_id`` (int32), ``count`` (int64 rows with the key there),
                  sorted by location id within a key
``nulls``         ``location_id`` (int32), ``count`` (int64 rows with a null key)
================  ==================================================================

This is a CSR layout: ``first_entry`` are the row offsets into the flat
``entries``. Keys are kept whole in their own type (strings with every byte,
decimals with every digit), so lookups are exact; :mod:`lakesieve.keys.key_order` gives
the comparison forms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import BuiltIndex

#: Format of this module's layout (every pair in four files read at load).
FORMAT_VERSION = 1

#: Format of key-range partitions and a manifest (:mod:`lakesieve.indexes.exact.partitions`).
PARTITIONED_FORMAT = 2

LOCATIONS_SCHEMA = pa.schema([pa.field("location", pa.string(), nullable=False)])
ENTRIES_SCHEMA = pa.schema(
    [
        pa.field("location_id", pa.int32(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)


def keys_schema(key_type: pa.DataType) -> pa.Schema:
    """Schema of the ``keys`` table for keys of Arrow type ``key_type``."""
    return pa.schema(
        [pa.field("key", key_type, nullable=False), pa.field("first_entry", pa.int64(), False)]
    )


def to_built(
    order: KeyOrder,
    keys: pa.Array,
    loc_ids: np.ndarray,
    counts: np.ndarray,
    locations: Sequence[str],
    null_counts: np.ndarray,
    params: Mapping[str, Any],
) -> BuiltIndex:
    """Assemble the stored tables from (key, location id, count) rows.

    Rows may come in any order and may repeat a (key, location) pair, whose
    counts are then summed; keys equal in the column's order (``0.0`` and
    ``-0.0``, NaNs) are one key. Pairs whose count sums to zero or less are
    dropped (a delta removed every row), then keys left without entries and
    locations left without rows.

    Args:
        order: comparison forms of the key type.
        keys: non-null key per row, in the column's Arrow type.
        loc_ids: location id per row (index into ``locations``).
        counts: rows per row (negative for removals).
        locations: location names by id, sorted.
        null_counts: rows with a null key per location id.
        params: the build parameters.
    """
    loc_ids = np.asarray(loc_ids, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n_loc = len(locations)
    if len(keys):
        idx = order.sort_indices(keys, loc_ids)
        keys = keys.take(pa.array(idx))
        loc_ids, counts = loc_ids[idx], counts[idx]
        new_key = order.changes(order.array(keys))
        new_pair = new_key.copy()
        new_pair[1:] |= loc_ids[1:] != loc_ids[:-1]
        starts = np.flatnonzero(new_pair)
        pair_count = np.add.reduceat(counts, starts)
        pair_key = np.cumsum(new_key[starts]) - 1
        pair_loc = loc_ids[starts]
        keep = pair_count > 0
        starts, pair_count, pair_key, pair_loc = (
            starts[keep],
            pair_count[keep],
            pair_key[keep],
            pair_loc[keep],
        )
        _, first_of_key = np.unique(pair_key, return_index=True)
        key_rows = starts[first_of_key]
    else:
        pair_count = pair_loc = np.zeros(0, np.int64)
        first_of_key = key_rows = np.zeros(0, np.int64)
    nulls = np.zeros(n_loc, np.int64)
    nulls[: len(null_counts)] = np.asarray(null_counts, dtype=np.int64)[:n_loc]
    used = nulls > 0
    used[pair_loc] = True
    new_id = np.cumsum(used) - 1
    names = [name for name, u in zip(locations, used, strict=True) if u]
    null_ids = np.flatnonzero(nulls > 0)
    files = {
        "locations": pa.table([pa.array(names, pa.string())], schema=LOCATIONS_SCHEMA),
        "keys": pa.table(
            [keys.take(pa.array(key_rows, pa.int64())), pa.array(first_of_key, pa.int64())],
            schema=keys_schema(keys.type),
        ),
        "entries": pa.table(
            [pa.array(new_id[pair_loc], pa.int32()), pa.array(pair_count, pa.int64())],
            schema=ENTRIES_SCHEMA,
        ),
        "nulls": pa.table(
            [pa.array(new_id[null_ids], pa.int32()), pa.array(nulls[null_ids], pa.int64())],
            schema=ENTRIES_SCHEMA,
        ),
    }
    null_rows = int(nulls.sum())
    meta = {
        "format_version": FORMAT_VERSION,
        "key_type": order.key_type,
        "params": dict(params),
        "rows": int(pair_count.sum()) + null_rows,
        "null_rows": null_rows,
        "distinct_keys": len(key_rows),
        "entries": len(pair_count),
        "locations": len(names),
    }
    return BuiltIndex(files=files, meta=meta)
