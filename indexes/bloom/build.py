"""Building Bloom filters with Spark, one per location.

Pipeline, for a relation of ``(key, location)`` rows (or a delta of
``(key, location, count)`` rows):

1. ``groupBy(location, key)`` sums the row counts in the JVM: distinct keys
   per location, with Spark's map-side combine doing most of the work. When
   the caller knows the locations (the framework's builds do), a broadcast
   join replaces each row's location string by a small integer id first, so
   neither shuffle carries the strings.
2. ``groupBy(location).applyInArrow`` hashes each location's distinct keys
   in a Python worker (:func:`~lakesieve.indexes.bloom.hashing.key_hashes`),
   sizes its filter (from its distinct keys, or ``expected_keys``; or the
   shape an existing filter already has, for deltas) and sets the bits with
   numpy (:func:`~lakesieve.indexes.bloom.filters.make_bits`), returning one
   row per location. One location's distinct keys are in memory at a time.
3. The driver collects those rows — the index itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.bloom.filters import filter_shape, make_bits
from lakesieve.indexes.bloom.hashing import key_hashes
from lakesieve.indexes.bloom.params import INDEX_TYPE, parse_bloom_options
from lakesieve.indexes.bloom.storage import FILTER_ROW_DDL, to_built
from lakesieve.key_order import KeyOrder
from lakesieve.location_ids import location_names, with_location_ids
from lakesieve.model import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: A location -> (bits, probes) map of filters that already exist.
Shapes = Mapping[str, tuple[int, int]]


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
    added = np.unique(hashes[valid & (cnt > 0)])
    shape = shapes.get(location)
    if shape is None or shape[0] <= 0:
        shape = filter_shape(expected_keys or len(added), fpp)
        if not len(added):
            shape = (0, 0)
    bits, probes = shape
    return pa.table(
        {
            "location": pa.array([location], pa.string()),
            "num_bits": pa.array([bits], pa.int64()),
            "num_hashes": pa.array([probes], pa.int32()),
            "keys": pa.array([len(added)], pa.int64()),
            "rows": pa.array([int(cnt.sum())], pa.int64()),
            "null_count": pa.array([int(cnt[~valid].sum())], pa.int64()),
            "bits": pa.array([make_bits(added, bits, probes)], pa.binary()),
        }
    )


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
) -> BuiltIndex:
    """Build the Bloom index from a DataFrame of ``(key, location)`` rows.

    Args:
        spark: the session (unused: the relation carries it).
        relation: columns ``key`` (the column's Spark type, nulls allowed) and
            ``location`` (string).
        key_type: the key column's Spark simple type string.
        params: build parameters (missing ones take their defaults).
        locations: the relation's locations, if known (the shuffles then carry ids).

    Raises:
        UnsupportedKeyTypeError: the key type is not supported.
        ValueError: a row has a null location.
    """
    from pyspark.sql import functions as F

    KeyOrder.of(key_type, INDEX_TYPE)
    full = parse_bloom_options(params)
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
    out = []
    for name in sorted(set(locations)):
        group = table.filter(pc.equal(table.column("location"), name))
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
        return pa.table(
            {
                "location": pa.array([], pa.string()),
                "num_bits": pa.array([], pa.int64()),
                "num_hashes": pa.array([], pa.int32()),
                "keys": pa.array([], pa.int64()),
                "rows": pa.array([], pa.int64()),
                "null_count": pa.array([], pa.int64()),
                "bits": pa.array([], pa.binary()),
            }
        )
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
