"""Building a Sieve index: in Spark, or in-process for small inputs and tests.

Spark pipeline (:func:`build_spark`), for a relation of ``(key, location)`` rows,
with one shuffle of the rows:

1. One small aggregate per location is collected (distinct locations are
   few): its rows, its rows with a null key, an estimate of its distinct keys
   (``approx_count_distinct``; summed over locations, the estimate of the
   (key, location) pairs that sizes the walk's partitions) and the
   ``xxhash64`` of its name. Locations get ids in name order.
2. Every row with a non-null key becomes ``(key, code)``, ``code`` being the
   ``xxhash64`` of its location: a per-row hash instead of a join on the
   location string. (When two names share a hash — not seen in practice,
   but checked — the code is the location id, from a broadcast join.)
3. These rows are range-partitioned by the column's own key
   (``repartitionByRange``), so all rows of one key land in one partition,
   which thus holds the rows of a contiguous key range, in no particular
   order (:func:`pair_counts`). For keys of small domains
   (:data:`COUNTED_KEY_TYPES`) ``groupBy(key, code).count()`` then runs
   inside each partition (no second shuffle) and hands over one row per
   pair; other keys are handed over row by row and counted in the walk
   (a dense (key, location) table when the partition's key span allows,
   else a sort). At SF10 ``l_partkey`` (60M rows, 48M pairs) Spark's hash
   aggregate cost more than the hand-over it saved: 36.6-40.6 s counted,
   27.9-28.6 s uncounted; ``l_orderkey`` 26.2 s against 25.5 s.
4. ``mapInArrow`` (:func:`walk_coded_partition`) maps keys to int64
   (:func:`lakesieve.sdk.keys.map_keys_arrow`) and codes to location ids, and
   runs the segmentation walk (:func:`lakesieve.indexes.sieve.segments.walk`,
   which counts and orders the triples in numpy) on the (key, location id,
   rows) triples of its key range, emitting one row per segment.
5. The driver collects only those segment rows (``toArrow``), small by
   construction, and assembles the stored tables.

When the caller knows the locations and (an upper bound of) the rows —
the framework takes both from the table's metadata — step 1 is skipped
(:func:`_build_known`): ids and codes come from the names, the row count
sizes the partitions, and rows with a null key travel with the pairs and
are counted in the walk's tasks. A row whose location was not given, or
two names sharing a hash, sends the build back to step 1.

No step collects keys on the driver, and no step persists anything. Memory
of one walk task is bounded by its partition's distinct pairs plus
:data:`~lakesieve.indexes.sieve.segments.MERGE_ROWS` triples: rows handed
over uncounted are merged into pairs as they pile up
(:class:`~lakesieve.indexes.sieve.segments.PairBuffer`), so a hot key costs
one pair per location, not its rows. Partition count: enough partitions for
about ``partition_pairs`` handed-over rows each (pairs as estimated in step
1 for small key domains, rows with a key otherwise), and up to Spark's default
parallelism when there is work for it (at least ~100k pairs each). The
index's ``budget_entries`` is split evenly over the partitions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.sieve.params import OPTIONS, SieveParams, parse_options
from lakesieve.indexes.sieve.segments import PairBuffer, SegmentSet, walk
from lakesieve.indexes.sieve.storage import (
    SEGMENT_ROW_SCHEMA,
    rows_to_segments,
    segments_to_rows,
    to_built,
)
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.keys import LocationCodes, code_column, map_key, map_keys_arrow, parse_key_type
from lakesieve.sdk.spark import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Spark DDL of the walk's output rows (mirrors ``SEGMENT_ROW_SCHEMA``).
SEGMENT_ROW_DDL = (
    "min_key bigint, max_key bigint, width_bits bigint, keys bigint, "
    "block_entries array<bigint>, entry_loc array<int>, entry_count array<bigint>"
)

_MIN_PAIRS_PER_TASK = 100_000

#: Key types of small domains, whose rows repeat a (key, location) pair so
#: often that Spark counts them before the walk (SF10 ``l_shipdate``: 60M
#: rows, 161,660 pairs). Rows of other keys go to the walk uncounted: at SF10
#: ``l_partkey`` (60M rows, 48M pairs) Spark's hash aggregate cost more than
#: handing the rows over and counting them in numpy.
COUNTED_KEY_TYPES = frozenset({"boolean", "tinyint", "byte", "smallint", "short", "date"})

log = logging.getLogger(__name__)


def walk_coded_partition(
    batches: Iterator[pa.RecordBatch],
    key_type: str,
    params: Mapping[str, Any],
    budget: float | None,
    codes: np.ndarray,
    code_ids: np.ndarray,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body of :func:`build_spark`: one key range's pairs in, segment rows out.

    The partition holds the rows of its key range, in any order: one per
    (key, code) pair with its row count (small key domains), or the rows
    themselves. Keys are mapped, codes become location ids, and the walk
    (which counts and orders its input,
    :func:`~lakesieve.indexes.sieve.segments.group_keys`) segments the
    triples. Memory is proportional to the partition's distinct pairs plus
    :data:`~lakesieve.indexes.sieve.segments.MERGE_ROWS` triples
    (:class:`~lakesieve.indexes.sieve.segments.PairBuffer`).

    Args:
        batches: Arrow batches of ``key`` (column type), ``code`` (int64) and,
            when Spark counted them (:func:`pair_counts`), ``cnt`` (int64, rows
            of the pair); without it each row counts once.
        key_type: the key column's Spark type string.
        params: build parameters.
        budget: this partition's share of ``budget_entries``.
        codes: the location codes, increasing (int64).
        code_ids: the location id of each code (int32).
    """
    held = PairBuffer()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        codes_in = np.asarray(batch.column(1), dtype=np.int64)
        held.add(
            _mapped_keys(batch.column(0), key_type),
            code_ids[np.searchsorted(codes, codes_in)],
            _batch_counts(batch),
        )
    rows = _segment_rows(held, params, budget)
    if rows is not None:
        yield rows


def _batch_counts(batch: pa.RecordBatch) -> np.ndarray:
    """Rows per batch row: its ``cnt`` column when Spark counted pairs, else one each."""
    if batch.num_columns > 2:
        return np.asarray(batch.column(2), dtype=np.int64)
    return np.ones(batch.num_rows, np.int64)


def _mapped_keys(key_col: pa.Array, key_type: str) -> np.ndarray:
    """A batch's keys as int64 by the order-preserving mapping (the callers drop null keys first)."""
    mapped = map_keys_arrow(key_col, key_type)
    return np.asarray(mapped.fill_null(0) if mapped.null_count else mapped, dtype=np.int64)


def _segment_rows(
    held: PairBuffer, params: Mapping[str, Any], budget: float | None
) -> pa.RecordBatch | None:
    """Walk one partition's (key, location id, count) triples into segment rows (``None``: no segment)."""
    if not held.held:
        return None
    segs = walk(*held.arrays(), SieveParams.from_dict(params), budget)
    return segments_to_rows(segs) if segs.num_segments else None


#: Spark DDL of the walk's output when the locations are known ahead: the
#: segment rows plus, in rows of their own (segment fields null), each
#: partition's rows with a null key per location code and any code that is
#: not a known location's.
KNOWN_ROW_DDL = (
    "min_key bigint, max_key bigint, width_bits bigint, keys bigint, "
    "block_entries array<bigint>, entry_loc array<int>, entry_count array<bigint>, "
    "null_codes array<bigint>, null_rows array<bigint>, unknown_codes array<bigint>"
)
_INFO_FIELDS = ("null_codes", "null_rows", "unknown_codes")


def _info_batch(
    schema: pa.Schema, null_codes: np.ndarray, null_rows: np.ndarray, unknown: np.ndarray
) -> pa.RecordBatch:
    """One row carrying a partition's null-key counts and unknown codes."""
    arrays = [pa.nulls(1, f.type) for f in schema if f.name not in _INFO_FIELDS]
    arrays += [
        pa.array([null_codes.tolist()], pa.list_(pa.int64())),
        pa.array([null_rows.tolist()], pa.list_(pa.int64())),
        pa.array([unknown.tolist()], pa.list_(pa.int64())),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def walk_known_partition(
    batches: Iterator[pa.RecordBatch],
    key_type: str,
    params: Mapping[str, Any],
    budget: float | None,
    codes: np.ndarray,
    code_ids: np.ndarray,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body of the build with known locations.

    Like :func:`walk_coded_partition`, but the partition's pairs include those
    with a null key (counted per code, not walked), and a code outside
    ``codes`` is reported instead of walked: the driver then discards the
    result and builds with a location pass. Yields the segment rows and at
    most one info row (:data:`KNOWN_ROW_DDL`).
    """
    schema = _known_schema()
    held = PairBuffer()
    null_per_code = np.zeros(len(codes), np.int64)  # rows with a null key, by code
    for batch in batches:
        if batch.num_rows == 0:
            continue
        codes_in = np.asarray(batch.column(1), dtype=np.int64)
        at = np.minimum(np.searchsorted(codes, codes_in), len(codes) - 1)
        known = codes[at] == codes_in
        if not known.all():
            unknown = np.unique(codes_in[~known])
            yield _info_batch(schema, np.zeros(0, np.int64), np.zeros(0, np.int64), unknown)
            return
        cnt = _batch_counts(batch)
        key_col = batch.column(0)
        if key_col.null_count:
            is_null = np.asarray(key_col.is_null(), dtype=bool)
            np.add.at(null_per_code, at[is_null], cnt[is_null])
            keep = pa.array(~is_null)
            key_col = key_col.filter(keep)
            at, cnt = at[~is_null], cnt[~is_null]
        if len(key_col) == 0:
            continue
        held.add(_mapped_keys(key_col, key_type), code_ids[at], cnt)
    rows = _segment_rows(held, params, budget)
    if rows is not None:
        extra = [pa.nulls(rows.num_rows, schema.field(n).type) for n in _INFO_FIELDS]
        yield pa.RecordBatch.from_arrays([*rows.columns, *extra], schema=schema)
    with_null = np.flatnonzero(null_per_code)
    if len(with_null):
        yield _info_batch(schema, codes[with_null], null_per_code[with_null], np.zeros(0, np.int64))


def _known_schema() -> pa.Schema:
    """Arrow schema of :data:`KNOWN_ROW_DDL`."""
    extra = [pa.field(n, pa.list_(pa.int64())) for n in _INFO_FIELDS]
    return pa.schema([*(f.with_nullable(True) for f in SEGMENT_ROW_SCHEMA), *extra])


def partition_count(spark: SparkSession, pairs: int, params: SieveParams) -> int:
    """Spark partitions for a walk over ``pairs`` (key, location) pairs."""
    need = math.ceil(pairs / params.partition_pairs)
    useful = min(default_parallelism(spark), math.ceil(pairs / _MIN_PAIRS_PER_TASK))
    return max(1, need, useful)


def counted_in_spark(key_type: str) -> bool:
    """Whether Spark counts rows per (key, location) before the walk (small key domains)."""
    return key_type.strip().lower() in COUNTED_KEY_TYPES


def pair_counts(coded: DataFrame, n_parts: int, key_type: str) -> DataFrame:
    """``coded``'s rows in ``n_parts`` key ranges (one shuffle), counted per pair for small domains.

    ``(key, code, cnt)`` for :data:`COUNTED_KEY_TYPES`; otherwise the rows
    themselves, ``(key, code)``, which the walk counts (:func:`walk`'s dense
    table or sort).
    """
    from pyspark.sql import functions as F

    ranged = coded.repartitionByRange(n_parts, "key")
    if not counted_in_spark(key_type):
        return ranged
    return ranged.groupBy("key", "code").agg(F.count(F.lit(1)).alias("cnt"))


def _build_known(
    spark: SparkSession,
    rel: DataFrame,
    key_type: str,
    full: Mapping[str, Any],
    locations: Sequence[str],
    rows_hint: int,
) -> BuiltIndex | None:
    """The build when the relation's locations and about its rows are known: one job.

    Names give the location ids and codes up front, ``rows_hint`` (an upper
    estimate of the pairs) sizes the partitions, and null keys travel with
    the pairs to be counted in the walk's tasks, so no per-location pass is
    needed. Returns ``None`` (the caller then makes that pass) when two
    names share a hash or a row's location is not among ``locations``.
    """
    p = SieveParams.from_dict(full)
    located = LocationCodes.of(locations)
    if located is None:
        return None
    names = list(located.names)
    codes, code_ids = located.codes, located.code_ids
    n_parts = partition_count(spark, max(rows_hint, 1), p)
    pairs_df = pair_counts(rel.select("key", code_column().alias("code")), n_parts, key_type)
    kt, pd, share = key_type, p.to_dict(), p.budget_entries / n_parts

    def body(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return walk_known_partition(batches, kt, pd, share, codes, code_ids)

    table = pairs_df.mapInArrow(body, KNOWN_ROW_DDL).toArrow()
    is_info = table.column("min_key").is_null()
    info = table.filter(is_info)
    if len(info.column("unknown_codes").combine_chunks().flatten()):
        log.info(
            "a row's location is not among the %d given: building with a location pass", len(names)
        )
        return None
    seg_rows = table.filter(pc.invert(is_info)).select(SEGMENT_ROW_SCHEMA.names)
    segs = rows_to_segments(seg_rows.cast(SEGMENT_ROW_SCHEMA) if seg_rows.num_rows else seg_rows)
    location_rows = np.zeros(len(names), np.int64)
    np.add.at(location_rows, segs.entry_loc.astype(np.int64), segs.entry_count)
    null_rows = np.zeros(len(names), np.int64)
    null_codes = np.asarray(info.column("null_codes").combine_chunks().flatten(), np.int64)
    null_ids = code_ids[np.searchsorted(codes, null_codes)]
    np.add.at(
        null_rows,
        null_ids,
        np.asarray(info.column("null_rows").combine_chunks().flatten(), np.int64),
    )
    location_rows += null_rows
    keep = location_rows > 0
    if not keep.all():  # locations without rows are not indexed, as when found by a pass
        new_id = (np.cumsum(keep) - 1).astype(np.int32)
        segs = replace(segs, entry_loc=new_id[segs.entry_loc])
        names = [n for n, k in zip(names, keep, strict=True) if k]
        null_rows, location_rows = null_rows[keep], location_rows[keep]
    nulls = {int(i): int(c) for i, c in enumerate(null_rows) if c}
    return to_built(segs, names, nulls, key_type, full, int(location_rows.sum()), location_rows)


def build_spark(
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: Mapping[str, Any],
    locations: Sequence[str] | None = None,
    rows_hint: int | None = None,
) -> BuiltIndex:
    """Build a Sieve index from a DataFrame of ``(key, location)`` rows.

    One aggregate per location, then one shuffle of the rows (see the module
    docstring); with ``locations`` and ``rows_hint`` only the shuffle
    (:func:`_build_known`), unless a row's location is not among them.

    Args:
        spark: the session.
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (missing ones take their defaults).
        locations: every location the relation may hold (extra ones are
            fine), when the caller knows them.
        rows_hint: about the rows of the relation (an upper bound of its
            pairs), when the caller knows it.

    Returns:
        The index files and meta.

    Raises:
        UnsupportedKeyTypeError: the key type cannot be mapped.
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    parse_key_type(key_type)
    full = parse_options({k: v for k, v in params.items() if k in OPTIONS})
    p = SieveParams.from_dict(full)
    rel = relation.select(
        F.col("key").alias("key"), F.col("location").cast("string").alias("location")
    )
    if locations is not None and rows_hint is not None:
        built = _build_known(spark, rel, key_type, full, locations, rows_hint)
        if built is not None:
            return built
    per_location = (
        rel.groupBy("location")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count("key").alias("keyed"),
            F.approx_count_distinct("key").alias("distinct_keys"),
        )
        .withColumn("code", code_column())
        .collect()
    )
    if any(r["location"] is None for r in per_location):
        raise ValueError("the relation has rows with a null location")
    names = sorted(r["location"] for r in per_location)
    ids = {name: i for i, name in enumerate(names)}
    nulls = {
        ids[r["location"]]: int(r["rows"]) - int(r["keyed"])
        for r in per_location
        if int(r["rows"]) > int(r["keyed"])
    }
    rows = sum(int(r["rows"]) for r in per_location)
    keyed = sum(int(r["keyed"]) for r in per_location)
    # distinct keys of a location never exceed its rows with a key
    pairs = sum(min(int(r["distinct_keys"]), int(r["keyed"])) for r in per_location)
    location_rows = np.zeros(len(names), np.int64)
    for r in per_location:
        location_rows[ids[r["location"]]] = int(r["rows"])
    segs = SegmentSet()
    if keyed:
        with_key = rel.where(F.col("key").isNotNull())
        located = LocationCodes.from_codes(
            {r["location"]: int(r["code"]) for r in per_location}, names
        )
        if located is not None:
            coded = with_key.select("key", code_column().alias("code"))
        else:
            located = LocationCodes.by_position(names)
            loc_df = spark.createDataFrame(list(ids.items()), "location string, code bigint")
            coded = with_key.join(F.broadcast(loc_df), on="location").select("key", "code")
        codes, code_ids = located.codes, located.code_ids
        handed = pairs if counted_in_spark(key_type) else keyed
        n_parts = partition_count(spark, max(handed, 1), p)
        pairs_df = pair_counts(coded, n_parts, key_type)
        kt, pd, share = key_type, p.to_dict(), p.budget_entries / n_parts

        def body(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return walk_coded_partition(batches, kt, pd, share, codes, code_ids)

        table = pairs_df.mapInArrow(body, SEGMENT_ROW_DDL).toArrow()
        segs = rows_to_segments(table.cast(SEGMENT_ROW_SCHEMA) if table.num_rows else table)
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
