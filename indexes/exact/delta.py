"""Folding one commit's changes into an exact index.

The delta, ``(key, location, count)`` rows, is summed per (key, location) in
Spark and brought to the driver (it is no larger than the pairs it changes).
There the index's own pairs are laid out again as rows, the delta's rows are
appended, and :func:`~lakesieve.indexes.exact.storage.to_built` sums counts
per (key, location) and drops what reaches zero — keys no row holds any
more, locations left without rows. The result equals a fresh build on the
changed relation, provided the delta is consistent with the relation the
index reflects (it removes only rows that were there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.exact.lookup import ExactIndex
from lakesieve.indexes.exact.params import parse_exact_options
from lakesieve.indexes.exact.storage import to_built
from lakesieve.model import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def summed_delta(delta: DataFrame) -> pa.Table:
    """The delta summed per (key, location), non-zero sums only, as Arrow.

    Columns: ``key`` (the column's type), ``location`` (string), ``cnt`` (int64).

    Raises:
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    table = (
        delta.select(
            F.col("key"),
            F.col("location").cast("string").alias("location"),
            F.col("count").cast("bigint").alias("count"),
        )
        .groupBy("key", "location")
        .agg(F.sum("count").alias("cnt"))
        .where(F.col("cnt") != 0)
        .toArrow()
    )
    if table.column("location").null_count:
        raise ValueError("the delta has rows with a null location")
    return table


def apply_delta(
    spark: SparkSession, index: ExactIndex, delta: DataFrame, params: Mapping[str, Any]
) -> BuiltIndex:
    """The index after applying ``delta``; equal to a rebuild on the changed relation.

    Args:
        spark: the session.
        index: the loaded index.
        delta: rows ``(key, location, count)``; ``count > 0`` rows added at the
            location, ``< 0`` rows removed.
        params: build parameters (the exact index has none).
    """
    return merge_changes(index, summed_delta(delta), params)


def merge_changes(index: ExactIndex, changes: pa.Table, params: Mapping[str, Any]) -> BuiltIndex:
    """The index with summed changes folded in (the driver half of :func:`apply_delta`).

    Args:
        index: the loaded index.
        changes: ``key``, ``location``, ``cnt`` rows (as :func:`summed_delta` gives).
        params: build parameters (the exact index has none).
    """
    full = parse_exact_options(params)
    d_keys = changes.column("key").combine_chunks()
    d_locs = np.asarray(changes.column("location").to_pylist(), dtype=object)
    d_cnt = np.asarray(changes.column("cnt").combine_chunks(), dtype=np.int64)

    names = sorted(set(index.locations.tolist()) | set(d_locs.tolist()))
    ids = {name: i for i, name in enumerate(names)}
    old_to_new = np.array([ids[n] for n in index.locations.tolist()], dtype=np.int64)
    d_ids = np.array([ids[n] for n in d_locs.tolist()], dtype=np.int64)

    null_counts = np.zeros(len(names), np.int64)
    np.add.at(null_counts, old_to_new[index.null_loc], index.null_count)
    d_null = np.asarray(d_keys.is_null(), dtype=bool)
    np.add.at(null_counts, d_ids[d_null], d_cnt[d_null])

    per_key = np.diff(index.first_entry)
    old_keys = index.keys.take(pa.array(np.repeat(np.arange(len(per_key)), per_key), pa.int64()))
    new_keys = d_keys.filter(pa.array(~d_null))
    if new_keys.type != old_keys.type:
        new_keys = new_keys.cast(old_keys.type)
    return to_built(
        index.order,
        pa.concat_arrays([old_keys, new_keys]),
        np.concatenate([old_to_new[index.entry_loc], d_ids[~d_null]]),
        np.concatenate([index.entry_count, d_cnt[~d_null]]),
        names,
        null_counts,
        full,
    )
