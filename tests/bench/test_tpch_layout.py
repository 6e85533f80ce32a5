"""The interleaved layout the demo and benchmarks write: equal runs, whole keys, bucket = run mod groups."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from lakesieve.demo.tpch import with_interleaved_buckets

pytestmark = pytest.mark.spark


def test_interleaved_runs(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = [(k, line) for k in range(1, 2001) for line in range(1, 1 + (k % 4) + 1)]
    df = spark.createDataFrame(rows, "l_orderkey bigint, l_linenumber int")
    out = with_interleaved_buckets(df, runs=32, groups=8)
    assert out.count() == len(rows)
    # each key sits in exactly one run
    assert (
        out.groupBy("l_orderkey").agg(F.countDistinct("run").alias("n")).where("n > 1").count() == 0
    )
    sizes = [r["c"] for r in out.groupBy("run").agg(F.count(F.lit(1)).alias("c")).collect()]
    assert len(sizes) == 32
    assert max(sizes) - min(sizes) <= 10  # equal up to one order's lines
    assert out.where("bucket != run % 8").count() == 0
    # runs follow key order: run ranges do not overlap
    spans = sorted(
        (r["lo"], r["hi"])
        for r in out.groupBy("run")
        .agg(F.min("l_orderkey").alias("lo"), F.max("l_orderkey").alias("hi"))
        .collect()
    )
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


@pytest.mark.parametrize("ranges", [1, 7])
def test_interleaved_runs_are_the_exact_cumulative_cut(spark: Any, ranges: int) -> None:
    """Runs equal floor(rows before the key * runs / total), whatever the number of key ranges Spark splits into."""
    import datetime as dt

    rows = [
        (dt.date(1995, 1, 1) + dt.timedelta(days=k), i)
        for k in range(300)
        for i in range(1 + (k * 7) % 5)
    ]
    rows.append((None, 0))
    df = spark.createDataFrame(rows, "d date, i int")
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(ranges))
    try:
        collected = with_interleaved_buckets(df, runs=16, groups=4, key="d").collect()
        got = {(r["d"], r["run"]) for r in collected}
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    counts: dict[Any, int] = {}
    for d, _ in rows:
        counts[d] = counts.get(d, 0) + 1
    before, want = 0, set()
    for d in sorted(counts, key=lambda x: (x is not None, x)):  # nulls first, as Spark orders them
        want.add((d, min(before * 16 // len(rows), 15)))
        before += counts[d]
    assert len(collected) == len(rows)  # rows with a null key are kept
    assert got == want
