"""``lakesieve bench --suite skeleton``: the walking skeleton's figures in one run.

The suite reproduces the walking skeleton's "done when": TPC-H lineitem in
the interleaved layout (1024 key runs, ``bucket = run mod 64``, 16 bucketed
commits), a Sieve index on ``l_orderkey``, and per query kind the file groups
selected by Sieve, by min/max statistics, and ideally (the true count); the
index size; the build time next to a plain Spark sort of the key column;
pruned reads compared with full scans; and hudi-rs reading every row back.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _ideal_counts(
    spark: Any, relation: Any, points: list[int], ranges: list[tuple[int, int]], width: int
) -> tuple[list[int], list[int]]:
    """True number of locations per point and per range, computed in Spark."""
    from pyspark.sql import functions as F

    pairs = (
        relation.select("key", "location")
        .distinct()
        .withColumn("bin", F.floor(F.col("key") / F.lit(width)))
    )
    pts = spark.createDataFrame([(i, k) for i, k in enumerate(points)], "q int, key bigint")
    pc = dict(
        pts.join(pairs, "key").groupBy("q").agg(F.countDistinct("location").alias("n")).collect()
    )
    rows = []
    for i, (a, b) in enumerate(ranges):
        for bin_ in range(a // width, b // width + 1):
            rows.append((i, a, b, bin_))
    rq = spark.createDataFrame(rows, "q int, a bigint, b bigint, bin bigint")
    joined = rq.join(pairs, "bin").where(
        (F.col("key") >= F.col("a")) & (F.col("key") <= F.col("b"))
    )
    rc = dict(joined.groupBy("q").agg(F.countDistinct("location").alias("n")).collect())
    return [int(pc.get(i, 0)) for i in range(len(points))], [
        int(rc.get(i, 0)) for i in range(len(ranges))
    ]


def _minmax_counts(
    relation: Any, points: list[int], ranges: list[tuple[int, int]]
) -> tuple[list[int], list[int]]:
    """Locations a min/max (zone map) filter selects per query; stats computed in Spark."""
    from pyspark.sql import functions as F

    stats = (
        relation.groupBy("location")
        .agg(F.min("key").alias("lo"), F.max("key").alias("hi"))
        .collect()
    )
    bounds = [(int(r["lo"]), int(r["hi"])) for r in stats]
    p = [sum(1 for lo, hi in bounds if lo <= k <= hi) for k in points]
    r = [sum(1 for lo, hi in bounds if lo <= b and a <= hi) for a, b in ranges]
    return p, r


def run_skeleton(
    scale: float = 1.0, workdir: str = "bench-data", queries: int = 200, seed: int = 42
) -> dict[str, Any]:
    """Run the skeleton benchmark and return its figures."""
    from lakesieve.contract.registry import table_format
    from lakesieve.demo.tpch import generate_lineitem, write_interleaved_hudi
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.spark.session import get_spark
    from lakesieve.table import open as open_table
    from pyspark.sql import functions as F

    out: dict[str, Any] = {"suite": "skeleton", "scale": scale, "queries": queries, "seed": seed}
    root = Path(workdir).resolve()
    t0 = time.perf_counter()
    src = generate_lineitem(scale, root / f"tpch-sf{scale}")
    out["generate_seconds"] = round(time.perf_counter() - t0, 2)
    spark = get_spark()
    table_path = root / f"lineitem_hudi_sf{scale}"
    if not (table_path / ".hoodie").exists():
        _say(f"writing {table_path} (16 bucketed commits) ...")
        t0 = time.perf_counter()
        write_interleaved_hudi(
            spark, src, table_path, runs=1024, groups=64, commits=16, progress=True
        )
        out["write_seconds"] = round(time.perf_counter() - t0, 1)
    table = open_table(table_path)
    out["commits"] = len(table.timeline())
    out["file_groups"] = len(table.snapshot().units)

    # hudi-rs reads the table back
    from hudi import HudiTableBuilder

    t0 = time.perf_counter()
    batches = HudiTableBuilder.from_base_uri(str(table_path)).build().read()
    out["hudi_rs_rows"] = sum(b.num_rows for b in batches)
    out["hudi_rs_read_seconds"] = round(time.perf_counter() - t0, 1)
    del batches
    out["source_rows"] = spark.read.parquet(str(src)).count()

    # the time Spark takes to sort the key column alone
    t0 = time.perf_counter()
    spark.read.parquet(str(src)).select("l_orderkey").sort("l_orderkey").write.format("noop").mode(
        "overwrite"
    ).save()
    out["spark_sort_seconds"] = round(time.perf_counter() - t0, 2)

    _say("building the Sieve index on l_orderkey ...")
    t0 = time.perf_counter()
    desc = table.build_index("l_orderkey", type="sieve", spark=spark)
    out["build_seconds"] = round(time.perf_counter() - t0, 2)
    out["build_over_sort"] = round(out["build_seconds"] / max(out["spark_sort_seconds"], 1e-9), 2)
    out["index_size_bytes"] = desc["size_bytes"]
    out["index_details"] = desc.get("details", {})

    # queries: 200 points on existing keys, 200 ranges covering 0.1% of the key domain
    snapshot = table.snapshot()
    frame = table_format(table.ref).read(
        spark, snapshot.units, snapshot.instant.id if snapshot.instant else None, True
    )
    relation = frame.select(
        F.col("l_orderkey").alias("key"), F.col(LOCATION_COLUMN).alias("location")
    ).cache()
    lo, hi = (int(v) for v in relation.agg(F.min("key"), F.max("key")).first())  # type: ignore[union-attr]
    rng = random.Random(seed)
    sample = [
        int(r[0])
        for r in relation.select("key")
        .distinct()
        .sample(fraction=min(1.0, 4 * queries / max(1, (hi - lo))), seed=seed)
        .limit(queries * 4)
        .collect()
    ]
    points = rng.sample(sample, min(queries, len(sample)))
    width = max(1, round((hi - lo + 1) * 0.001))
    ranges = [(a, a + width - 1) for a in (rng.randint(lo, hi - width + 1) for _ in range(queries))]
    ideal_p, ideal_r = _ideal_counts(spark, relation, points, ranges, width)
    mm_p, mm_r = _minmax_counts(relation, points, ranges)
    relation.unpersist()

    sieve_p, sieve_r, plan_ms = [], [], []
    for k in points:
        e = table.explain(f"l_orderkey = {k}")
        sieve_p.append(e["locations_selected"])
        plan_ms.append(e["plan_ms"])
    for a, b in ranges:
        e = table.explain(f"l_orderkey BETWEEN {a} AND {b}")
        sieve_r.append(e["locations_selected"])
        plan_ms.append(e["plan_ms"])
    mean = statistics.fmean
    out["point"] = {
        "sieve": round(mean(sieve_p), 3),
        "ideal": round(mean(ideal_p), 3),
        "minmax": round(mean(mm_p), 2),
    }
    out["range_0.1pct"] = {
        "sieve": round(mean(sieve_r), 3),
        "ideal": round(mean(ideal_r), 3),
        "minmax": round(mean(mm_r), 2),
        "width_keys": width,
    }
    out["plan_ms_p50"] = round(statistics.median(plan_ms), 2)
    out["plan_ms_p99"] = round(sorted(plan_ms)[int(0.99 * (len(plan_ms) - 1))], 2)
    out["false_negatives"] = sum(
        1 for s, i in zip(sieve_p + sieve_r, ideal_p + ideal_r, strict=True) if s < i
    )

    # pruned reads equal full scans, with times
    checks = []
    for where in [
        f"l_orderkey = {points[0]}",
        f"l_orderkey IN ({points[1]}, {points[2]}, {points[3]})",
        f"l_orderkey BETWEEN {ranges[0][0]} AND {ranges[0][1]}",
        f"l_orderkey >= {hi - width}",
    ]:
        t1 = time.perf_counter()
        got = (
            table.read(spark, where=where)
            .agg(F.count(F.lit(1)), F.sum(F.hash("l_orderkey", "l_linenumber")))
            .first()
        )
        t_index = time.perf_counter() - t1
        t2 = time.perf_counter()
        want = (
            table.full_read(spark, where=where)
            .agg(F.count(F.lit(1)), F.sum(F.hash("l_orderkey", "l_linenumber")))
            .first()
        )
        t_full = time.perf_counter() - t2
        assert got is not None and want is not None  # aggregates without grouping: one row
        checks.append(
            {
                "where": where,
                "rows": int(got[0]),
                "equal": tuple(got) == tuple(want),
                "indexed_s": round(t_index, 2),
                "full_s": round(t_full, 2),
            }
        )
    out["read_checks"] = checks
    return out
