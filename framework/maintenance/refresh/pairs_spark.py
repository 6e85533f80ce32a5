"""Pairing rewritten files with Spark jobs, for a change too large to read on the driver.

The same pairing as :func:`~lakesieve.maintenance.refresh.pairs.pair_rewrites`
(each removed location with the added location holding most of its keys,
each location once, at least half the keys looked up), computed where the
keys lie:

1. the distinct keys of each removed location are bounded by its rows as
   the format's metadata records them, or, where it does not, counted
   approximately (``approx_count_distinct``; one row per location reaches
   the driver);
2. keys are spread over ``m`` buckets by their ``xxhash64``, ``m`` chosen
   so that the median removed location keeps about
   :data:`~lakesieve.maintenance.refresh.pairs.SAMPLE_KEYS` of its
   distinct keys in bucket 0; both sides are filtered to that bucket as
   they are read, so what is shuffled is a sample of each;
3. the sampled keys are joined on the key, and the distinct keys in common
   are counted per ``(old, new)`` pair (one row per pair that shares a key
   reaches the driver), as are the keys looked up of each removed location.

A location far smaller than the median, or a column of few distinct values
per file, may keep no key: that location is then read by location, as
without pairs.

The join compares keys by Spark's equality. The pairing only decides how
small the delta is (:mod:`~lakesieve.maintenance.refresh.pairs` says why any
pairing is exact), so a sample whose hash treats ``-0.0`` apart from ``0.0``
costs at most a worse pairing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakesieve.contract.format_read import read_columns
from lakesieve.maintenance.refresh.pairs import SAMPLE_KEYS, chosen_pairs, rewrite_sides
from lakesieve.model import LOCATION_COLUMN, Instant, ReadUnit

if TYPE_CHECKING:
    from lakesieve.state.table_indexes import TableIndexes
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["spark_pairs"]


def _keys(
    table: TableIndexes,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str,
    column: str,
    name: str,
) -> DataFrame:
    from pyspark.sql import functions as F

    frame = read_columns(table.view.fmt, spark, units, instant, [column])
    return frame.select(F.col(column).alias("key"), F.col(LOCATION_COLUMN).alias(name)).where(
        F.col("key").isNotNull()
    )


def spark_pairs(
    table: TableIndexes,
    spark: SparkSession,
    column: str,
    start: Instant,
    end: Instant,
    old_units: Sequence[ReadUnit],
    new_units: Sequence[ReadUnit],
    sample: int = SAMPLE_KEYS,
) -> dict[str, str]:
    """``old -> new`` for removed locations whose keys mostly reappear in one added location.

    Args:
        table: the table's indexes (its view reads the units).
        spark: the session.
        column: the indexed column.
        start: the instant the removed locations are read at.
        end: the instant the added locations are read at.
        old_units: the general path's units at ``start``.
        new_units: the general path's units at ``end``.
        sample: about the most keys of a removed location looked up.

    Returns:
        The pairs; empty when no location left or entered the snapshot.
    """
    from pyspark.sql import functions as F

    gone, came = rewrite_sides(old_units, new_units)
    if not gone or not came:
        return {}
    old = _keys(table, spark, gone, start.id, column, "old")
    buckets = _buckets(old, gone, sample)
    sampled = F.pmod(F.xxhash64("key"), F.lit(buckets)) == 0
    new = _keys(table, spark, came, end.id, column, "new").where(sampled)
    met = old.where(sampled).join(new, "key", "left").persist()
    try:
        common = (
            met.where(F.col("new").isNotNull())
            .groupBy("old", "new")
            .agg(F.countDistinct("key").alias("common"))
            .collect()
        )
        looked_up = {
            str(r["old"]): int(r["n"])
            for r in met.groupBy("old").agg(F.countDistinct("key").alias("n")).collect()
        }
    finally:
        met.unpersist()
    return chosen_pairs(
        [(str(r["old"]), str(r["new"]), int(r["common"])) for r in common], looked_up
    )


def _buckets(old: DataFrame, gone: Sequence[ReadUnit], sample: int) -> int:
    """The number of hash buckets keys are spread over; the sample is one of them.

    So that the median removed location keeps about ``sample`` of its
    distinct keys: from the rows the format's metadata records for each
    location when it records them for all (as many distinct keys at most),
    else from an approximate count of each location's distinct keys (a Spark
    job). A location smaller than that may keep none, and is then read by
    location: it is small.
    """
    from pyspark.sql import functions as F

    rows: dict[str, int] = {}
    for unit in gone:
        if unit.num_records is None:
            counts = old.groupBy("old").agg(F.approx_count_distinct("key").alias("n")).collect()
            rows = {str(r["old"]): int(r["n"]) for r in counts}
            break
        rows[unit.location] = rows.get(unit.location, 0) + int(unit.num_records)
    if not rows:
        return 1
    return max(1, int(statistics.median(rows.values())) // max(1, sample))
