"""Building an exact index with Spark.

Pipeline, for a relation of ``(key, location)`` rows:

1. ``groupBy(key, location).count()`` in Spark — rows per distinct
   (key, location) pair; one pair per location for its null keys.
2. Those pairs come back to the driver as Arrow (``toArrow``, one Spark
   job): they are the index itself — an exact index is as large as its
   distinct (key, location) pairs by nature.
3. The driver dictionary-encodes the locations (ids in name order), sorts
   the pairs in the column's order and lays them out
   (:func:`lakesieve.indexes.exact.storage.to_built`).

No step collects raw rows on the driver; only distinct pairs come back.
Location names travel once per pair; a broadcast join to integer ids first
would send fewer bytes but cost a second Spark job and a cached aggregate,
which is slower for all but very wide location names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.exact.params import INDEX_TYPE, parse_exact_options
from lakesieve.indexes.exact.storage import to_built
from lakesieve.key_order import KeyOrder
from lakesieve.model import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def build_spark(
    spark: SparkSession, relation: DataFrame, key_type: str, params: Mapping[str, Any]
) -> BuiltIndex:
    """Build an exact index from a DataFrame of ``(key, location)`` rows.

    Args:
        spark: the session.
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (the exact index has none).

    Returns:
        The index files and meta.

    Raises:
        UnsupportedKeyTypeError: the key type cannot be ordered.
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    order = KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_exact_options(params)
    pairs = (
        relation.select(F.col("key"), F.col("location").cast("string").alias("location"))
        .groupBy("key", "location")
        .agg(F.count(F.lit(1)).alias("cnt"))
        .toArrow()
    )
    locations = _column(pairs, "location")
    if locations.null_count:
        raise ValueError("the relation has rows with a null location")
    encoded = locations.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    ranks = np.argsort(np.asarray(names, dtype=object), kind="stable")
    new_id = np.empty(len(names), np.int64)
    new_id[ranks] = np.arange(len(names))
    loc_ids = new_id[np.asarray(encoded.indices, dtype=np.int64)]
    keys = _column(pairs, "key")
    counts = np.asarray(_column(pairs, "cnt"), dtype=np.int64)
    is_null = np.asarray(keys.is_null(), dtype=bool)
    null_counts = np.bincount(loc_ids[is_null], weights=counts[is_null], minlength=len(names))
    valid = pa.array(~is_null)
    return to_built(
        order,
        keys.filter(valid),
        loc_ids[~is_null],
        counts[~is_null],
        [names[i] for i in ranks],
        null_counts.astype(np.int64),
        full,
    )


def build_local(
    keys: pa.Array | list[Any],
    locations: list[str],
    key_type: str,
    params: Mapping[str, Any] | None = None,
) -> BuiltIndex:
    """Build an exact index in-process (tests, small relations), as the Spark build would.

    Args:
        keys: key per row (an Arrow array of the column's type, or Python
            values; ``None`` = null).
        locations: location per row.
        key_type: the column's Spark type string.
        params: build parameters (none).
    """
    order = KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_exact_options(params)
    arr = keys if isinstance(keys, pa.Array) else pa.array(keys, order.arrow_type())
    names = sorted(set(locations))
    ids = {name: i for i, name in enumerate(names)}
    loc_ids = np.array([ids[loc] for loc in locations], dtype=np.int64)
    is_null = np.asarray(arr.is_null(), dtype=bool)
    null_counts = np.bincount(loc_ids[is_null], minlength=len(names)).astype(np.int64)
    return to_built(
        order,
        arr.filter(pa.array(~is_null)),
        loc_ids[~is_null],
        np.ones(int((~is_null).sum()), np.int64),
        names,
        null_counts,
        full,
    )
