"""Building Bloom filters with Spark, one per location.

Build with the locations known (the framework's builds), one shuffle:

1. Each row becomes ``(key, code)``, ``code`` being Spark's ``xxhash64`` of
   its location (:class:`~lakesieve.sdk.keys.LocationCodes`: no join, no name in the
   shuffle).
2. ``repartition(code)`` brings all rows of a location into one task, whose
   Python side (:func:`filters_of_coded`) hashes the keys batch by batch
   (:func:`~lakesieve.indexes.bloom.hashing.key_hashes`), keeps each
   location's hashes (8 bytes a row), and at the end sizes each filter from
   its distinct hashes (or ``expected_keys``) and sets the bits with numpy
   (:func:`~lakesieve.indexes.bloom.filters.make_bits`): one row per location.
   A filter sets the same bits for a repeated key and the hash is a
   bijection on the column's values, so raw rows need no distinct step. For
   key types of small domains (dates, booleans, small integers:
   :func:`counts_pairs`), Spark first counts rows per (key, code)
   after the shuffle (no second shuffle: the partitioning already clusters
   the pairs), so Python sees each pair once.
3. The driver collects those rows — the index itself.

A row whose location the caller did not name (or two names sharing a code)
sends the build to the general pipeline, which also serves unknown
locations and deltas (``(key, location, count)`` rows with removals):

1. ``groupBy(location, key)`` sums the row counts in the JVM: distinct keys
   per location, with Spark's map-side combine doing most of the work. When
   the caller knows the locations, a broadcast join replaces each row's
   location string by a small integer id first, so neither shuffle carries
   the strings.
2. ``groupBy(location).applyInArrow`` hashes each location's distinct keys
   in a Python worker, sizes its filter (from its distinct keys, or
   ``expected_keys``; or the shape an existing filter already has, for
   deltas) and sets the bits, returning one row per location. One
   location's distinct keys are in memory at a time.
3. The driver collects those rows.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.bloom.filters import filter_shape, make_bits
from lakesieve.indexes.bloom.hashing import key_hashes
from lakesieve.indexes.bloom.params import INDEX_TYPE, parse_bloom_options
from lakesieve.indexes.bloom.storage import FILTER_ROW_DDL, to_built
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.keys import (
    CODE_COLUMN,
    KeyOrder,
    LocationCodes,
    code_column,
    location_names,
    unique_ints,
    with_location_ids,
)
from lakesieve.sdk.spark import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: A location -> (bits, probes) map of filters that already exist.
Shapes = Mapping[str, tuple[int, int]]

#: Key types whose values repeat within a location as a rule (small domains):
#: the one-shuffle build counts their rows per (key, location) in the JVM.
REPEATING_TYPES = frozenset({"boolean", "tinyint", "smallint", "date"})

#: Rows of the relation per task of the one-shuffle build (their hashes, 8 bytes
#: each, are held until the task's filters are sized).
ROWS_PER_TASK = 4_000_000

#: Held hashes of one location past which a task makes them distinct (4M: 32 MB).
COMPACT_HASHES = 4_000_000

#: Arrow schema of :data:`FILTER_ROW_DDL`, the rows the builds' Python side returns.
_FILTER_ROW_SCHEMA = pa.schema(
    [
        ("location", pa.string()),
        ("num_bits", pa.int64()),
        ("num_hashes", pa.int32()),
        ("keys", pa.int64()),
        ("rows", pa.int64()),
        ("null_count", pa.int64()),
        ("bits", pa.binary()),
    ]
)


def _filter_of_hashes(
    location: str,
    added: np.ndarray,
    rows: int,
    null_count: int,
    fpp: float,
    expected_keys: int | None,
    shape: tuple[int, int] | None,
) -> dict[str, Any]:
    """One location's filter row from the distinct hashes of its keys (``added``)."""
    if shape is None or shape[0] <= 0:
        shape = filter_shape(expected_keys or len(added), fpp)
        if not len(added):
            shape = (0, 0)
    bits, probes = shape
    return {
        "location": location,
        "num_bits": bits,
        "num_hashes": probes,
        "keys": len(added),
        "rows": rows,
        "null_count": null_count,
        "bits": make_bits(added, bits, probes),
    }


def filter_row(
    table: pa.Table, key_type: str, fpp: float, expected_keys: int | None, shapes: Shapes
) -> pa.Table:
    """The ``applyInArrow`` body: one location's ``(location, key, cnt)`` rows in, its filter row out.

    Keys whose summed count is positive are hashed
    (:func:`~lakesieve.indexes.bloom.hashing.key_hashes`) into the filter;
    every count is summed into the row and null counts (negative for deltas
    that remove).
    """
    order = KeyOrder.of(key_type, INDEX_TYPE)
    location = table.column("location")[0].as_py() if table.num_rows else ""
    hashes, valid = key_hashes(table.column("key"), order)
    cnt = np.asarray(table.column("cnt").combine_chunks().fill_null(0), dtype=np.int64)
    added = unique_ints(hashes[valid & (cnt > 0)])
    row = _filter_of_hashes(
        location,
        added,
        int(cnt.sum()),
        int(cnt[~valid].sum()),
        fpp,
        expected_keys,
        shapes.get(location),
    )
    return pa.Table.from_pylist([row], schema=_FILTER_ROW_SCHEMA)


def filters_of_coded(
    batches: Iterator[pa.RecordBatch],
    key_type: str,
    fpp: float,
    expected_keys: int | None,
    codes: LocationCodes,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body of the one-shuffle build: ``(key, code, cnt)`` rows in, filter rows out.

    The task holds every pair of each location it sees (``repartition`` by
    code, then rows counted per pair); per location it keeps the hashes of
    non-null keys and sums rows and null keys, then yields one filter row per
    location with rows. A code that is not a known location's yields a
    single row with a null ``location`` instead (the driver then builds by
    the general pipeline).
    """
    order = KeyOrder.of(key_type, INDEX_TYPE)
    n_names = len(codes.names)
    hashes: dict[int, list[np.ndarray]] = {}
    held: dict[int, int] = {}  # hashes held per location
    limit: dict[int, int] = {}  # held hashes past which they are made distinct
    rows = np.zeros(n_names, np.int64)
    nulls = np.zeros(n_names, np.int64)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        ids, known = codes.ids_of(np.asarray(batch.column(1), dtype=np.int64))
        if not known.all():
            yield pa.RecordBatch.from_pylist([{}], schema=_FILTER_ROW_SCHEMA)  # all null
            return
        h, valid = key_hashes(batch.column(0), order)
        cnt = np.asarray(batch.column(2), dtype=np.int64)
        rows += np.bincount(ids, weights=cnt, minlength=n_names).astype(np.int64)
        nulls += np.bincount(ids[~valid], weights=cnt[~valid], minlength=n_names).astype(np.int64)
        ids, h = ids[valid], h[valid]
        by_id = np.argsort(ids, kind="stable")
        ids, h = ids[by_id], h[by_id]
        if not len(ids):
            continue
        bounds = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True]).tolist()
        for a, b in itertools.pairwise(bounds):
            i = int(ids[a])
            hashes.setdefault(i, []).append(h[a:b])
            held[i] = held.get(i, 0) + int(b - a)
            if held[i] > limit.get(i, COMPACT_HASHES):
                # bound a location's held hashes by about twice its distinct keys
                distinct = unique_ints(np.concatenate(hashes[i]))
                hashes[i], held[i] = [distinct], len(distinct)
                limit[i] = max(COMPACT_HASHES, 2 * len(distinct))
    out = []
    for loc in np.flatnonzero(rows).tolist():
        parts = hashes.pop(loc, [])
        added = unique_ints(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
        out.append(
            _filter_of_hashes(
                codes.names[loc], added, int(rows[loc]), int(nulls[loc]), fpp, expected_keys, None
            )
        )
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=_FILTER_ROW_SCHEMA)


def counts_pairs(key_type: str) -> bool:
    """Whether the one-shuffle build counts rows per (key, location) in the JVM for ``key_type``.

    Counting after the shuffle pays where keys repeat within a location and
    is pure cost where nearly every row is its own pair. Measured at SF10 (60M
    rows, 64 locations, medians of 2, BENCHMARKS.md): counting took
    ``l_shipdate`` from 1.60x to 0.78x a Spark sort and ``l_orderkey`` (4
    rows per pair) from 1.51x to 1.34x, but ``l_partkey`` (48M pairs) from
    2.20x to 2.78x. The key type is what is known before the data is read:
    small domains (:data:`REPEATING_TYPES`) are counted. A wide type holding
    few values then costs about what ``l_shipdate`` uncounted does (1.6x).
    """
    return key_type.strip().lower() in REPEATING_TYPES


def _task_count(spark: SparkSession, locations: int, rows_hint: int | None) -> int:
    """Tasks of the one-shuffle build: enough for the cores, no more than the locations."""
    need = math.ceil((rows_hint or 0) / ROWS_PER_TASK)
    return max(1, min(locations, max(default_parallelism(spark), need)))


def filters_by_code(
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: Mapping[str, Any],
    codes: LocationCodes,
    rows_hint: int | None,
) -> pa.Table | None:
    """Per-location filter rows of ``(key, location)`` rows in one shuffle; ``None`` on an unknown location."""
    from pyspark.sql import functions as F

    expected = params.get("expected_keys")
    body = functools.partial(
        filters_of_coded,
        key_type=key_type,
        fpp=float(params["fpp"]),
        expected_keys=int(expected) if expected is not None else None,
        codes=codes,
    )
    coded = relation.select(F.col("key"), code_column().alias(CODE_COLUMN))
    shuffled = coded.repartition(_task_count(spark, len(codes.names), rows_hint), CODE_COLUMN)
    if counts_pairs(key_type):
        # rows counted per (key, code) in the JVM after the shuffle (the hash
        # partitioning by code already clusters the groups: no second shuffle)
        pairs = shuffled.groupBy("key", CODE_COLUMN).agg(F.count(F.lit(1)).alias("cnt"))
    else:
        pairs = shuffled.select("key", CODE_COLUMN, F.lit(1).cast("bigint").alias("cnt"))
    rows = pairs.mapInArrow(body, FILTER_ROW_DDL).toArrow()
    if rows.column("location").null_count:
        return None
    return rows


def filters_spark(
    counted: DataFrame,
    key_type: str,
    params: Mapping[str, Any],
    shapes: Shapes,
    names: Sequence[str] | None = None,
) -> pa.Table:
    """Per-location filter rows of ``(key, location, cnt)`` rows, computed in Spark.

    ``groupBy(location, key)`` sums the counts (Spark's map-side combine does
    most of it), then ``groupBy(location).applyInArrow`` hashes each
    location's distinct keys and sets its filter's bits. Where the caller
    knows the location ``names``, the two shuffles carry a small integer id
    (a broadcast join) instead of each row's location string; a location not
    among them travels by name.

    Args:
        counted: columns ``key``, ``location`` (string), ``cnt`` (bigint).
        key_type: the key column's Spark type string.
        params: full build parameters.
        shapes: existing filters' shapes, reused so new bits can be or-ed in.
        names: the locations expected, if known.

    Returns:
        The collected rows of :data:`FILTER_ROW_DDL`.
    """
    from pyspark.sql import functions as F

    fpp = float(params["fpp"])
    expected = params.get("expected_keys")
    expected_keys = int(expected) if expected is not None else None
    known = dict(shapes)
    ids = sorted(set(names or ()))
    if not ids:

        def per_location(table: pa.Table) -> pa.Table:
            return filter_row(table, key_type, fpp, expected_keys, known)

        summed = counted.groupBy("location", "key").agg(F.sum("cnt").alias("cnt"))
        rows = summed.groupBy("location").applyInArrow(per_location, FILTER_ROW_DDL).toArrow()
    else:

        def per_location_id(table: pa.Table) -> pa.Table:
            named = pa.table(
                {
                    "location": location_names(table, ids),
                    "key": table.column("key"),
                    "cnt": table.column("cnt"),
                }
            )
            return filter_row(named, key_type, fpp, expected_keys, known)

        slim = with_location_ids(counted, ids, keep=["key", "cnt"])
        summed = slim.groupBy("loc_id", "loc_name", "key").agg(F.sum("cnt").alias("cnt"))
        rows = (
            summed.groupBy("loc_id", "loc_name")
            .applyInArrow(per_location_id, FILTER_ROW_DDL)
            .toArrow()
        )
    if rows.column("location").null_count:
        raise ValueError("rows with a null location")
    return rows


def build_spark(
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: Mapping[str, Any],
    locations: Sequence[str] | None = None,
    rows_hint: int | None = None,
) -> BuiltIndex:
    """Build the Bloom index from a DataFrame of ``(key, location)`` rows.

    With ``locations``, in one shuffle (:func:`filters_by_code`) unless a row's
    location is not among them; otherwise by the general pipeline.

    Args:
        spark: the session.
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (missing ones take their defaults).
        locations: the relation's locations, if known.
        rows_hint: about the relation's rows (sizes the tasks), if known.

    Raises:
        UnsupportedKeyTypeError: the key type is not supported.
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_bloom_options(params)
    codes = LocationCodes.of(locations) if locations else None
    if codes is not None:
        rows = filters_by_code(spark, relation, key_type, full, codes, rows_hint)
        if rows is not None:
            return from_filter_rows(key_type, full, rows)
    counted = relation.select(
        F.col("key"),
        F.col("location").cast("string").alias("location"),
        F.lit(1).cast("bigint").alias("cnt"),
    )
    return from_filter_rows(key_type, full, filters_spark(counted, key_type, full, {}, locations))


def from_filter_rows(key_type: str, params: Mapping[str, Any], rows: pa.Table) -> BuiltIndex:
    """The stored index of per-location filter rows (as :func:`filter_row` makes them)."""
    return to_built(
        key_type,
        params,
        rows.column("location").to_pylist(),
        np.asarray(rows.column("num_bits"), dtype=np.int64),
        np.asarray(rows.column("num_hashes"), dtype=np.int32),
        np.asarray(rows.column("keys"), dtype=np.int64),
        np.asarray(rows.column("rows"), dtype=np.int64),
        np.asarray(rows.column("null_count"), dtype=np.int64),
        [b or b"" for b in pc.cast(rows.column("bits"), pa.large_binary()).to_pylist()],
    )


def filter_rows_local(
    keys: pa.Array,
    locations: list[str],
    counts: list[int] | np.ndarray,
    key_type: str,
    params: Mapping[str, Any],
    shapes: Shapes | None = None,
) -> pa.Table:
    """Per-location filter rows computed in-process, as the Spark pipeline computes them."""
    full = parse_bloom_options(params)
    expected = full.get("expected_keys")
    table = pa.table(
        {
            "key": keys,
            "location": pa.array(locations, pa.string()),
            "cnt": pa.array(counts, pa.int64()),
        }
    )
    encoded = table.column("location").combine_chunks().dictionary_encode()
    ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    grouped = table.take(pa.array(order))
    sizes = np.bincount(ids, minlength=len(encoded.dictionary))
    ends = np.cumsum(sizes)
    span = {
        name: (int(ends[i] - sizes[i]), int(ends[i]))
        for i, name in enumerate(encoded.dictionary.to_pylist())
    }
    out = []
    for name in sorted(span):
        first, last = span[name]
        group = grouped.slice(first, last - first)
        summed = group.group_by(["location", "key"], use_threads=False).aggregate([("cnt", "sum")])
        summed = summed.rename_columns(["location", "key", "cnt"])
        out.append(
            filter_row(
                summed,
                key_type,
                float(full["fpp"]),
                int(expected) if expected is not None else None,
                dict(shapes or {}),
            )
        )
    if not out:
        return _FILTER_ROW_SCHEMA.empty_table()
    return pa.concat_tables(out)


def build_local(
    keys: pa.Array | list[Any],
    locations: list[str],
    key_type: str,
    params: Mapping[str, Any] | None = None,
) -> BuiltIndex:
    """Build the Bloom index in-process (tests, small relations), as the Spark build would.

    Args:
        keys: key per row (an Arrow array of the column's type, or Python
            values; ``None`` = null).
        locations: location per row.
        key_type: the column's Spark type string.
        params: build parameters (missing ones take their defaults).
    """
    order = KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_bloom_options(params)
    arr = keys if isinstance(keys, pa.Array) else pa.array(keys, order.arrow_type())
    rows = filter_rows_local(arr, list(locations), np.ones(len(arr), np.int64), key_type, full)
    return from_filter_rows(key_type, full, rows)
