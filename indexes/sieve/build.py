"""Building a Sieve index: in Spark, or in-process for small inputs and tests.

Spark pipeline (:func:`build_spark`), for a relation of ``(key, location)`` rows:

1. ``groupBy(key, location).count()`` — rows per (key, location) pair; kept
   cached because the next steps read it three times.
2. One small aggregate per location (rows with a null key, pairs, rows) is
   collected: distinct locations are few. Locations get ids in name order.
3. Non-null pairs get their location id through a broadcast join, are
   range-partitioned by the column's own key (``repartitionByRange``) and
   sorted within partitions (``sortWithinPartitions(key, loc_id)``), so each
   partition holds a contiguous key range in order. (Grouping the pairs of a
   key into one list is left to the walk: it sees them adjacent, which saves
   a shuffle over an explicit ``groupBy(key)``.)
4. ``mapInArrow`` maps each partition's keys to int64
   (:func:`lakesieve.keys.map_keys_arrow`) and runs the segmentation walk
   (:func:`lakesieve.indexes.sieve.segments.walk`), emitting one row per
   segment.
5. The driver collects only those segment rows (``toArrow``), small by
   construction, and assembles the stored tables.

No step collects keys on the driver. Partition count: enough partitions for
about ``partition_pairs`` pairs each (worker memory), and up to Spark's
default parallelism when there is work for it (at least ~100k pairs each).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.sieve.params import PARAMS, SieveParams, parse_options
from lakesieve.indexes.sieve.segments import SegmentSet, walk
from lakesieve.indexes.sieve.storage import (
    SEGMENT_ROW_SCHEMA,
    rows_to_segments,
    segments_to_rows,
    to_built,
)
from lakesieve.keys import map_key, map_keys_arrow, parse_key_type
from lakesieve.model import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Spark DDL of the walk's output rows (mirrors ``SEGMENT_ROW_SCHEMA``).
SEGMENT_ROW_DDL = (
    "min_key bigint, max_key bigint, width_bits bigint, keys bigint, "
    "block_entries array<bigint>, entry_loc array<int>, entry_count array<bigint>"
)

_MIN_PAIRS_PER_TASK = 100_000


def walk_partition(
    batches: Iterator[pa.RecordBatch],
    key_type: str,
    params: Mapping[str, Any],
    budget: float | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: one sorted partition of (key, loc_id, cnt) in, segment rows out.

    ``budget`` is this partition's share of ``budget_entries``.
    """
    p = SieveParams.from_dict(params)
    keys: list[np.ndarray] = []
    locs: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        mapped = map_keys_arrow(batch.column(0), key_type)
        keys.append(
            np.asarray(mapped.fill_null(0) if mapped.null_count else mapped, dtype=np.int64)
        )
        locs.append(np.asarray(batch.column(1), dtype=np.int32))
        counts.append(np.asarray(batch.column(2), dtype=np.int64))
    if not keys:
        return
    segs = walk(np.concatenate(keys), np.concatenate(locs), np.concatenate(counts), p, budget)
    if segs.num_segments:
        yield segments_to_rows(segs)


def partition_count(spark: SparkSession, pairs: int, params: SieveParams) -> int:
    """Spark partitions for a walk over ``pairs`` (key, location) pairs."""
    try:
        parallelism = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        parallelism = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    need = math.ceil(pairs / params.partition_pairs)
    useful = min(parallelism, math.ceil(pairs / _MIN_PAIRS_PER_TASK))
    return max(1, need, useful)


def build_spark(
    spark: SparkSession, relation: DataFrame, key_type: str, params: Mapping[str, Any]
) -> BuiltIndex:
    """Build a Sieve index from a DataFrame of ``(key, location)`` rows.

    Args:
        spark: the session.
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (missing ones take their defaults).

    Returns:
        The index files and meta.

    Raises:
        UnsupportedKeyTypeError: the key type cannot be mapped.
        ValueError: a row has a null location.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    parse_key_type(key_type)
    full = parse_options({k: v for k, v in params.items() if k in PARAMS})
    p = SieveParams.from_dict(full)
    rel = relation.select(
        F.col("key").alias("key"), F.col("location").cast("string").alias("location")
    )
    agg = rel.groupBy("key", "location").agg(F.count(F.lit(1)).alias("cnt"))
    agg = agg.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        stats = agg.groupBy("location").agg(
            F.sum(F.when(F.col("key").isNull(), F.col("cnt")).otherwise(F.lit(0))).alias(
                "null_rows"
            ),
            F.count("key").alias("pairs"),
            F.sum("cnt").alias("rows"),
        )
        per_location = stats.collect()
        if any(r["location"] is None for r in per_location):
            raise ValueError("the relation has rows with a null location")
        names = sorted(r["location"] for r in per_location)
        ids = {name: i for i, name in enumerate(names)}
        nulls = {ids[r["location"]]: int(r["null_rows"]) for r in per_location if r["null_rows"]}
        pairs = sum(int(r["pairs"]) for r in per_location)
        rows = sum(int(r["rows"]) for r in per_location)
        location_rows = np.zeros(len(names), np.int64)
        for r in per_location:
            location_rows[ids[r["location"]]] = int(r["rows"])
        segs = SegmentSet()
        if pairs:
            loc_df = spark.createDataFrame(
                [(name, i) for name, i in ids.items()], "location string, loc_id int"
            )
            keyed = (
                agg.where(F.col("key").isNotNull())
                .join(F.broadcast(loc_df), on="location")
                .select("key", "loc_id", "cnt")
            )
            n_parts = partition_count(spark, pairs, p)
            ranged = keyed.repartitionByRange(n_parts, "key").sortWithinPartitions("key", "loc_id")
            kt, pd, share = key_type, p.to_dict(), p.budget_entries / n_parts

            def body(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                return walk_partition(batches, kt, pd, share)

            table = ranged.mapInArrow(body, SEGMENT_ROW_DDL).toArrow()
            segs = rows_to_segments(table.cast(SEGMENT_ROW_SCHEMA) if table.num_rows else table)
    finally:
        agg.unpersist()
    return to_built(segs, names, nulls, key_type, full, rows, location_rows)


def build_local(
    keys: pa.Array | pa.ChunkedArray | Sequence[Any],
    locations: Sequence[str] | np.ndarray,
    key_type: str,
    params: Mapping[str, Any] | None = None,
    partitions: int = 1,
) -> BuiltIndex:
    """Build an index in-process, the way the Spark pipeline does.

    For tests and small relations: keys are mapped, rows are sorted by
    (mapped key, location) and cut into ``partitions`` contiguous pieces of
    about equal row counts (like a range partitioning, but one that may even
    split the rows of one key), and each piece is walked separately.

    Args:
        keys: key per row (Python values or an Arrow array; ``None`` = null).
        locations: location per row.
        key_type: the column's Spark type string.
        params: build parameters (missing ones take their defaults).
        partitions: number of pieces walked independently.
    """
    full = parse_options(dict(params or {}))
    p = SieveParams.from_dict(full)
    if isinstance(keys, pa.Array | pa.ChunkedArray):
        mapped_arr = map_keys_arrow(keys, key_type)
    else:
        mapped_arr = pa.array(
            [None if k is None else map_key(k, key_type) for k in keys], type=pa.int64()
        )
    if len(mapped_arr) != len(locations):
        raise ValueError("keys and locations differ in length")
    names, loc_ids = np.unique(np.asarray(locations, dtype=object).astype(str), return_inverse=True)
    loc_ids = loc_ids.astype(np.int32)
    is_null = np.asarray(mapped_arr.is_null(), dtype=bool)
    null_rows = np.bincount(loc_ids[is_null], minlength=len(names))
    nulls = {int(i): int(c) for i, c in enumerate(null_rows) if c}
    k_arr = np.asarray(mapped_arr.fill_null(0), dtype=np.int64)[~is_null]
    l_arr = loc_ids[~is_null]
    order = np.lexsort((l_arr, k_arr))
    k_arr, l_arr = k_arr[order], l_arr[order]
    c_arr = np.ones(len(k_arr), dtype=np.int64)
    n = len(k_arr)
    pieces = max(1, min(partitions, n))
    parts = []
    for i in range(pieces):
        a, b = n * i // pieces, n * (i + 1) // pieces
        if b > a:
            parts.append(walk(k_arr[a:b], l_arr[a:b], c_arr[a:b], p, p.budget_entries / pieces))
    return to_built(
        SegmentSet.concat(parts),
        [str(x) for x in names],
        nulls,
        key_type,
        full,
        len(locations),
        np.bincount(loc_ids, minlength=len(names)).astype(np.int64),
    )
