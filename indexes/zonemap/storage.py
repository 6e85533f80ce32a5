"""The stored form of a zone map: one Arrow table, one row per location.

=============  =====================================================================
``location``   string; rows sorted by it
``min``        smallest non-null key there (a lower bound when shortened), in the
               column's own Arrow type; null when the location holds no non-null key
``max``        largest non-null key there (an upper bound when shortened); null
               likewise
``rows``       int64 rows at the location
``null_count`` int64 rows with a null key
=============  =====================================================================

Typed bounds keep the zone map readable by anything that reads Arrow, and
make it the same shape as the per-file statistics that Delta, Iceberg and
Parquet keep (a later source of the same index: ``meta["source"]`` says where
the bounds came from; ``"data"`` for now).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.zonemap.bounds import lower_bound, upper_bound
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.keys import KeyOrder

FORMAT_VERSION = 1

#: Where the bounds came from: read from the data by a Spark aggregate.
SOURCE_DATA = "data"


def zones_schema(key_type: pa.DataType) -> pa.Schema:
    """Schema of the ``zones`` table for keys of Arrow type ``key_type``."""
    return pa.schema(
        [
            pa.field("location", pa.string(), nullable=False),
            pa.field("min", key_type),
            pa.field("max", key_type),
            pa.field("rows", pa.int64(), nullable=False),
            pa.field("null_count", pa.int64(), nullable=False),
        ]
    )


def shorten(
    order: KeyOrder, mins: pa.Array, maxs: pa.Array, limit: int
) -> tuple[pa.Array, pa.Array, int]:
    """Cut long string/binary bounds to about ``limit`` bytes (see :mod:`bounds`).

    Returns:
        The new minimums and maximums (same Arrow types) and how many
        locations had a bound shortened.
    """
    if order.form != "bytes" or limit <= 0:
        return mins, maxs, 0
    lows = [lower_bound(v, limit) for v in mins.to_pylist()]
    highs = [upper_bound(v, limit) for v in maxs.to_pylist()]
    cut = sum(
        1
        for lo, orig, (_, hi_cut) in zip(lows, mins.to_pylist(), highs, strict=True)
        if hi_cut or lo != orig
    )
    return (
        pa.array(lows, type=mins.type),
        pa.array([h for h, _ in highs], type=maxs.type),
        cut,
    )


def to_built(
    order: KeyOrder,
    locations: Sequence[str],
    mins: pa.Array,
    maxs: pa.Array,
    rows: np.ndarray,
    nulls: np.ndarray,
    params: Mapping[str, Any],
    shortened: int,
) -> BuiltIndex:
    """Assemble the stored table and meta; rows are sorted by location here.

    Args:
        order: comparison forms of the key type.
        locations: location names.
        mins: per-location minimum (null where no non-null key), typed.
        maxs: per-location maximum, typed like ``mins``.
        rows: rows per location.
        nulls: rows with a null key per location.
        params: the full build parameters.
        shortened: how many locations have a shortened bound.
    """
    sort = np.argsort(np.asarray(list(locations), dtype=object), kind="stable")
    take = pa.array(sort.astype(np.int64))
    rows = np.asarray(rows, dtype=np.int64)[sort]
    nulls = np.asarray(nulls, dtype=np.int64)[sort]
    table = pa.table(
        [
            pa.array([locations[i] for i in sort], pa.string()),
            mins.take(take),
            maxs.take(take),
            pa.array(rows, pa.int64()),
            pa.array(nulls, pa.int64()),
        ],
        schema=zones_schema(mins.type),
    )
    meta = {
        "format_version": FORMAT_VERSION,
        "key_type": order.key_type,
        "params": dict(params),
        "source": SOURCE_DATA,
        "locations": len(sort),
        "rows": int(rows.sum()),
        "null_rows": int(nulls.sum()),
        "shortened_bounds": int(shortened),
    }
    return BuiltIndex(files={"zones": table}, meta=meta)
