"""Folding one commit's changes into an exact index.

The delta, ``(key, location, count)`` rows, is summed per (key, location) in
Spark and brought to the driver (it is no larger than the pairs it changes).
This is compaction, and it runs on the driver: the index's pairs are read
partition by partition and laid out again as rows, the delta's rows are
appended, and :func:`~lakesieve.indexes.exact.build.layout_on_driver` sums
counts per (key, location), drops what reaches zero — keys no row holds any
more, locations left without rows — and cuts new key-range partitions, which
the store writes. So a compaction holds the whole index on the driver once
(a build never does). The result equals an in-process build on the changed
relation, provided the delta is consistent with the relation the index
reflects (it removes only rows that were there).

An index whose partitions Spark wrote as ORC (format 3, what a build writes
when it knows the locations), or of more than :data:`DRIVER_COMPACTION_PAIRS`
pairs, is not compacted on the driver: :func:`apply_delta` answers ``None`` and the framework
rebuilds the index at the target instant, a Spark job whose tasks write the
partitions (the driver holds one row per partition).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.exact.build import layout_on_driver
from lakesieve.indexes.exact.loading import all_pairs
from lakesieve.indexes.exact.params import parse_exact_options
from lakesieve.indexes.exact.partitioned import PartitionedExactIndex
from lakesieve.sdk import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Pairs of an index past which it is rebuilt by Spark rather than compacted on
#: the driver (measured: the driver's Python process grows by about 155 bytes a
#: pair at the peak of a compaction, so 2M pairs is about 310 MB).
DRIVER_COMPACTION_PAIRS = 2_000_000

log = logging.getLogger(__name__)


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
    spark: SparkSession, index: Any, delta: DataFrame, params: Mapping[str, Any]
) -> BuiltIndex | None:
    """The index after applying ``delta``; equal to a rebuild on the changed relation.

    Args:
        spark: the session.
        index: the loaded index.
        delta: rows ``(key, location, count)``; ``count > 0`` rows added at the
            location, ``< 0`` rows removed.
        params: build parameters (the exact index has none).

    Returns:
        The new index, or ``None`` (rebuild it) when it holds more than
        :data:`DRIVER_COMPACTION_PAIRS` pairs or its partitions are the ORC
        files a Spark build writes (format 3): a driver merge would store them
        as Arrow, several times larger, so compaction writes what a build does.
    """
    if not folds_on_driver(index):
        return None
    return merge_changes(index, summed_delta(delta), params)


def folds_on_driver(index: Any) -> bool:
    """Whether a delta is folded into ``index`` on the driver (else Spark rebuilds it).

    Not for ORC partitions (a driver merge would store them as Arrow, several
    times larger) nor past :data:`DRIVER_COMPACTION_PAIRS` pairs.
    """
    if isinstance(index, PartitionedExactIndex) and index.codes is not None:
        log.info("exact index of ORC partitions: rebuilt by Spark, as a build writes it")
        return False
    pairs = int(index.describe()["entries"])
    if pairs > DRIVER_COMPACTION_PAIRS:
        log.info(
            "exact index of %d pairs: rebuilt by Spark, not compacted on the driver (limit %d)",
            pairs,
            DRIVER_COMPACTION_PAIRS,
        )
        return False
    return True


def apply_delta_arrow(index: Any, delta: pa.Table, params: Mapping[str, Any]) -> BuiltIndex | None:
    """:func:`apply_delta` for a summed delta already on the driver; ``None`` where Spark rebuilds.

    Args:
        index: the loaded index.
        delta: ``key``, ``location``, ``count`` rows, one per ``(key, location)``
            by Spark's equality, none 0.
        params: build parameters (the exact index has none).
    """
    if not folds_on_driver(index):
        return None
    locations = delta.column("location").combine_chunks().cast(pa.string())
    if locations.null_count:
        raise ValueError("the delta has rows with a null location")
    changes = pa.table(
        {
            "key": delta.column("key").combine_chunks(),
            "location": locations,
            "cnt": delta.column("count").combine_chunks().cast(pa.int64()),
        }
    )
    return merge_changes(index, changes, params)


def merge_changes(index: Any, changes: pa.Table, params: Mapping[str, Any]) -> BuiltIndex:
    """The index with summed changes folded in (the driver half of :func:`apply_delta`).

    Args:
        index: the loaded index (format 2 or 3).
        changes: ``key``, ``location``, ``cnt`` rows (as :func:`summed_delta` gives).
        params: build parameters (the exact index has none).
    """
    full = parse_exact_options(params)
    keys, locations, counts = all_pairs(index)
    key_type = keys[0].type if keys else changes.schema.field("key").type
    d_keys = changes.column("key").combine_chunks()
    if d_keys.type != key_type:
        d_keys = d_keys.cast(key_type)
    d_locs = changes.column("location").combine_chunks().cast(pa.string())
    return layout_on_driver(
        index.order,
        pa.concat_arrays([*keys, d_keys]),
        pa.concat_arrays([*locations, d_locs]),
        np.concatenate([*counts, np.asarray(changes.column("cnt"), dtype=np.int64)]),
        full,
    )
