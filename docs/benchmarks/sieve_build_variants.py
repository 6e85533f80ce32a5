"""Sieve build pipelines against a Spark sort of the key column, on one cached relation (issue 6).

Run from the repository root after the full suite wrote ``bench-data/tpch-sf1.0``::

    .venv/bin/python docs/benchmarks/sieve_build_variants.py

Prints the median seconds of each variant over 4 alternating repetitions and
its ratio to the sort. ``current`` is the shipped ``build_spark`` when it
is not told the locations (a per-location pass, then string locations
hashed per row to an int64 code, one shuffle); ``known`` is the same build
told the 64 locations and the row count, as ``Table.build_index`` and the
full suite do (no per-location pass); the ``int_*``
variants run the same walk on a relation whose location is already an
integer id, which is what the format read would have to provide.
"""

import statistics
import time
from typing import Any

import numpy as np
from lakesieve.demo.tpch import with_layout
from lakesieve.indexes.sieve import build as B
from lakesieve.indexes.sieve.params import SieveParams
from lakesieve.spark.session import get_spark
from pyspark.sql import functions as F

spark = get_spark()
src = spark.read.parquet("bench-data/tpch-sf1.0/lineitem.parquet")
base = with_layout(src, "interleaved")
rel_str = base.select(
    F.col("l_orderkey").alias("key"),
    F.concat(F.lit("00000000-0000-loc-"), F.col("bucket").cast("string"), F.lit("-0_0-0-0")).alias(
        "location"
    ),
).persist()
rel_int = base.select(F.col("l_orderkey").alias("key"), F.col("bucket").alias("loc_id")).persist()
rows = rel_str.count()
rel_int.count()
names = [f"00000000-0000-loc-{i}-0_0-0-0" for i in range(64)]
params = SieveParams.from_dict({})
as_dict = params.to_dict()


ids = np.arange(64, dtype=np.int64)


def body(batches: Any) -> Any:
    """The walk of one range partition (two partitions, as the shipped build picks for SF1)."""
    return B.walk_coded_partition(
        batches, "bigint", as_dict, params.budget_entries / 2, ids, ids.astype(np.int32)
    )


def sort() -> None:
    rel_str.select("key").sort("key").write.format("noop").mode("overwrite").save()


def current() -> None:
    B.build_spark(spark, rel_str, "bigint", {})


def known() -> None:
    B.build_spark(spark, rel_str, "bigint", {}, names, rows)


def int_aggregate_first() -> None:
    agg = rel_int.groupBy("key", "loc_id").agg(F.count(F.lit(1)).alias("cnt"))
    agg.repartitionByRange(2, "key").sortWithinPartitions("key", "loc_id").mapInArrow(
        body, B.SEGMENT_ROW_DDL
    ).toArrow()


def int_range_first() -> None:
    (
        rel_int.repartitionByRange(2, "key")
        .groupBy("key", "loc_id")
        .agg(F.count(F.lit(1)).alias("cnt"))
        .sortWithinPartitions("key", "loc_id")
        .mapInArrow(body, B.SEGMENT_ROW_DDL)
        .toArrow()
    )


variants = {
    "sort": sort,
    "current": current,
    "known": known,
    "int_aggregate_first": int_aggregate_first,
    "int_range_first": int_range_first,
}
times: dict[str, list[float]] = {k: [] for k in variants}
for _ in range(4):
    for name, fn in variants.items():
        t0 = time.perf_counter()
        fn()
        times[name].append(time.perf_counter() - t0)
med = {k: statistics.median(v) for k, v in times.items()}
for k, v in med.items():
    print(f"{k:22s} {v:6.2f} s  {v / med['sort']:.2f}x the sort")
