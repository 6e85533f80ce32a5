"""Building a zone map with Spark: one aggregate per location.

``relation.groupBy(location).agg(min(key), max(key), count(*), count(key))``
runs in Spark and returns one row per location — the index itself — to the
driver, which shortens long string bounds and lays out the table. Spark's
``min``/``max`` order like the column (strings by UTF-8 bytes, NaN above
every number), which is what lookups assume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.zonemap.params import INDEX_TYPE, parse_zonemap_options
from lakesieve.indexes.zonemap.storage import shorten, to_built
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.keys import KeyOrder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def column(table: pa.Table, name: str) -> pa.Array:
    """One column of ``table`` as a single Arrow array."""
    col = table.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def build_spark(
    spark: SparkSession, relation: DataFrame, key_type: str, params: Mapping[str, Any]
) -> BuiltIndex:
    """Build a zone map from a DataFrame of ``(key, location)`` rows.

    Args:
        spark: the session (unused: the relation carries it).
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (missing ones take their defaults).

    Raises:
        UnsupportedKeyTypeError: the key type has no order.
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    order = KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_zonemap_options(params)
    zones = (
        relation.select(F.col("key"), F.col("location").cast("string").alias("location"))
        .groupBy("location")
        .agg(
            F.min("key").alias("min"),
            F.max("key").alias("max"),
            F.count(F.lit(1)).alias("rows"),
            F.count("key").alias("keys"),
        )
        .toArrow()
    )
    names = column(zones, "location")
    if names.null_count:
        raise ValueError("the relation has rows with a null location")
    rows = np.asarray(column(zones, "rows"), dtype=np.int64)
    nulls = rows - np.asarray(column(zones, "keys"), dtype=np.int64)
    mins, maxs, cut = shorten(
        order, column(zones, "min"), column(zones, "max"), int(full["string_prefix_bytes"])
    )
    return to_built(order, names.to_pylist(), mins, maxs, rows, nulls, full, cut)


def build_local(
    keys: pa.Array | list[Any],
    locations: list[str],
    key_type: str,
    params: Mapping[str, Any] | None = None,
) -> BuiltIndex:
    """Build a zone map in-process (tests, small relations), as the Spark build would.

    Minimum and maximum follow Spark's order (the comparison forms of
    :class:`~lakesieve.sdk.keys.KeyOrder`: NaN above every number,
    strings by UTF-8 bytes).

    Args:
        keys: key per row (an Arrow array of the column's type, or Python
            values; ``None`` = null).
        locations: location per row.
        key_type: the column's Spark type string.
        params: build parameters (missing ones take their defaults).
    """
    order = KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_zonemap_options(params)
    arr = keys if isinstance(keys, pa.Array) else pa.array(keys, order.arrow_type())
    names = sorted(set(locations))
    ids = {name: i for i, name in enumerate(names)}
    loc_ids = np.array([ids[loc] for loc in locations], dtype=np.int64)
    valid = np.asarray(arr.is_valid(), dtype=bool)
    forms = order.array(arr)
    lows: list[int | None] = []
    highs: list[int | None] = []
    for i in range(len(names)):
        rows = np.flatnonzero((loc_ids == i) & valid)
        if len(rows) == 0:
            lows.append(None)
            highs.append(None)
            continue
        ranked = sorted(rows.tolist(), key=lambda r: forms[r])
        lows.append(ranked[0])
        highs.append(ranked[-1])
    mins = arr.take(pa.array(lows, pa.int64()))
    maxs = arr.take(pa.array(highs, pa.int64()))
    rows_per = np.bincount(loc_ids, minlength=len(names)).astype(np.int64)
    nulls = np.bincount(loc_ids[~valid], minlength=len(names)).astype(np.int64)
    mins, maxs, cut = shorten(order, mins, maxs, int(full["string_prefix_bytes"]))
    return to_built(order, names, mins, maxs, rows_per, nulls, full, cut)
