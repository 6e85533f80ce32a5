"""Where a Sieve build's time goes, against a Spark sort of the same column.

``lakesieve bench --suite sieve-layout --stages lineitem.parquet`` reads the
named columns of a TPC-H ``lineitem`` file into the relation the build-cost
bench uses (:mod:`lakesieve_bench.build_cost`: ``--groups`` locations by a
hash of ``l_orderkey``, cached) and times, per column, best of ``--repeat``:

* ``sort``: a Spark sort of the column to the ``noop`` sink (the yardstick
  of "build <= 1.5x a sort");
* ``shuffle``: the build's own range shuffle, with the per-pair row count
  for small key domains (:func:`~lakesieve.indexes.sieve.build.pair_counts`,
  the build's partition count), to the ``noop`` sink: the part of the build
  Spark does alone;
* ``hand_over``: the same rows (pairs, for small key domains) handed to
  Python by ``mapInArrow``, whose body only counts them: the shuffle plus
  the Arrow transfer;
* ``build``: the whole Sieve build with the locations known, as the
  framework runs it (the transfer plus the walk in Python and the
  driver's assembly).

So ``hand_over - shuffle`` is the transfer to Python and ``build -
hand_over`` the walk; each is also given over the sort.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _count_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body that only counts what it is handed."""
    n = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])


def run(parquet: str, columns: list[str], groups: int, repeat: int) -> dict[str, Any]:
    """The stage times of every column, as a dict (seconds and ratios to the sort)."""
    from lakesieve.indexes.sieve.build import partition_count
    from lakesieve.indexes.sieve.params import SieveParams, parse_options
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.spark.session import get_spark
    from pyspark.sql import functions as F

    from lakesieve_bench.build_cost import LOCATION_FORMAT, location_names

    spark = get_spark()
    location = F.format_string(LOCATION_FORMAT, F.pmod(F.xxhash64("l_orderkey"), F.lit(groups)))
    relation = spark.read.parquet(parquet).select(*columns, location.alias(LOCATION_COLUMN))
    relation = relation.persist()
    rows = relation.count()
    names = location_names(groups)
    n_parts = partition_count(spark, rows, SieveParams.from_dict(parse_options({})))
    out: dict[str, Any] = {"parquet": parquet, "rows": rows, "groups": groups, "columns": {}}
    out["partitions"] = n_parts
    schema = relation.schema
    for col in columns:
        key_type = schema[col].dataType.simpleString()
        out["columns"][col] = _column_stages(
            spark, relation, col, key_type, names, rows, n_parts, repeat
        )
    relation.unpersist()
    return out


def _column_stages(
    spark: Any,
    relation: Any,
    col: str,
    key_type: str,
    names: list[str],
    rows: int,
    n_parts: int,
    repeat: int,
) -> dict[str, Any]:
    """The four stage times of one column (see the module docstring)."""
    from lakesieve.indexes.sieve.build import build_spark, pair_counts
    from lakesieve.model import LOCATION_COLUMN
    from pyspark.sql import functions as F

    rel = relation.select(F.col(col).alias("key"), F.col(LOCATION_COLUMN).alias("location"))
    pairs = pair_counts(rel.select("key", F.xxhash64("location").alias("code")), n_parts, key_type)
    counted: list[int] = []

    def sort() -> None:
        relation.select(col).sort(col).write.format("noop").mode("overwrite").save()

    def shuffle() -> None:
        pairs.write.format("noop").mode("overwrite").save()

    def hand_over() -> None:
        counted.append(sum(r[0] for r in pairs.mapInArrow(_count_rows, "n bigint").collect()))

    def build() -> None:
        build_spark(spark, rel, key_type, {}, names, rows)

    figs = {f.__name__: _best(f, repeat) for f in (sort, shuffle, hand_over, build)}
    base = max(figs["sort"], 1e-9)
    out: dict[str, Any] = {"key_type": key_type, "rows_handed_over": counted[-1]}
    for name, secs in figs.items():
        out[f"{name}_seconds"] = round(secs, 2)
        out[f"{name}_over_sort"] = round(secs / base, 2)
    out["transfer_over_sort"] = round((figs["hand_over"] - figs["shuffle"]) / base, 2)
    out["walk_over_sort"] = round((figs["build"] - figs["hand_over"]) / base, 2)
    return out
