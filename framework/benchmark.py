"""Benchmarks measured in one run, reported as ratios and counts.

``skeleton`` reproduces the walking skeleton's "done when": TPC-H lineitem in
the interleaved layout (1024 key runs, ``bucket = run mod 64``, 16 bucketed
commits), a Sieve index on ``l_orderkey``, and per query kind the file groups
selected by Sieve, by min/max statistics, and ideally (the true count); the
index size; the build time next to a plain Spark sort of the key column;
pruned reads compared with full scans; and hudi-rs reading every row back.
"""

from __future__ import annotations

import json
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
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.registry import table_format
    from lakesieve.session import get_spark
    from lakesieve.table import open as open_table
    from lakesieve.tpch import generate_lineitem, write_interleaved_hudi
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
        checks.append(
            {
                "where": where,
                "rows": int(got[0]),
                "equal": tuple(got) == tuple(want),  # type: ignore[arg-type,index]
                "indexed_s": round(t_index, 2),
                "full_s": round(t_full, 2),
            }
        )
    out["read_checks"] = checks
    return out


# ---------------------------------------------------------------- formats


def _native_files(fmt: str, path: Path) -> list[tuple[str, int, int]]:
    """``(file, min l_orderkey, max l_orderkey)`` per data file, from the format's own statistics."""
    if fmt == "delta":
        from deltalake import DeltaTable

        acts = DeltaTable(str(path)).get_add_actions(flatten=True)
        cols = acts.column_names if hasattr(acts, "column_names") else list(acts.schema.names)
        data = {
            c: acts.column(c).to_pylist()
            for c in ("path", "min.l_orderkey", "max.l_orderkey")
            if c in cols
        }
        return [
            (
                f if "://" in str(f) or str(f).startswith("/") else str(path / str(f)),
                int(lo),
                int(hi),
            )
            for f, lo, hi in zip(
                data["path"], data["min.l_orderkey"], data["max.l_orderkey"], strict=True
            )
        ]
    from lakesieve.bench_native import iceberg_table

    tbl = iceberg_table(str(path))
    field_id = tbl.schema().find_field("l_orderkey").field_id
    from pyiceberg.conversions import from_bytes

    ftype = tbl.schema().find_field("l_orderkey").field_type
    out = []
    for task in tbl.scan().plan_files():
        df = task.file
        lo = (
            from_bytes(ftype, df.lower_bounds[field_id])
            if df.lower_bounds and field_id in df.lower_bounds
            else None
        )
        hi = (
            from_bytes(ftype, df.upper_bounds[field_id])
            if df.upper_bounds and field_id in df.upper_bounds
            else None
        )
        out.append(
            (
                str(df.file_path),
                int(lo) if lo is not None else -(2**63),
                int(hi) if hi is not None else 2**63 - 1,
            )
        )
    return out


def _native_counts(
    fmt: str, path: Path, points: list[int], ranges: list[tuple[int, int]]
) -> tuple[list[int], list[int], str]:
    """Files the format's own statistics select per point and per range query."""
    if fmt == "delta":
        bounds = [(lo, hi) for _, lo, hi in _native_files(fmt, path)]
        p = [sum(1 for lo, hi in bounds if lo <= k <= hi) for k in points]
        r = [sum(1 for lo, hi in bounds if lo <= b and a <= hi) for a, b in ranges]
        return p, r, "deltalake get_add_actions min/max per file"
    from lakesieve.bench_native import iceberg_table
    from pyiceberg import expressions

    ex: Any = expressions
    tbl = iceberg_table(str(path))
    p = [len(list(tbl.scan(row_filter=ex.EqualTo("l_orderkey", k)).plan_files())) for k in points]
    r = [
        len(
            list(
                tbl.scan(
                    row_filter=ex.And(
                        ex.GreaterThanOrEqual("l_orderkey", a), ex.LessThanOrEqual("l_orderkey", b)
                    )
                ).plan_files()
            )
        )
        for a, b in ranges
    ]
    return p, r, "pyiceberg scan(row_filter).plan_files()"


def _ideal_from_files(
    files: list[str], points: list[int], ranges: list[tuple[int, int]]
) -> tuple[list[int], list[int]]:
    """True number of data files holding each point / any key of each range (reads l_orderkey of every file)."""
    import numpy as np
    import pyarrow.parquet as pq

    keys = []
    for f in files:
        local = f[len("file://") :] if f.startswith("file://") else f
        keys.append(np.unique(pq.read_table(local, columns=["l_orderkey"]).column(0).to_numpy()))
    p, r = [], []
    for k in points:
        p.append(
            sum(1 for ks in keys if (i := int(np.searchsorted(ks, k))) < len(ks) and ks[i] == k)
        )
    for a, b in ranges:
        r.append(
            sum(
                1
                for ks in keys
                if np.searchsorted(ks, b, side="right") > np.searchsorted(ks, a, side="left")
            )
        )
    return p, r


def _agg(frame: Any) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)), F.sum(F.hash("l_orderkey", "l_linenumber"))).first()
    return int(row[0]), int(row[1] or 0)


def _run_format(
    fmt: str,
    spark: Any,
    base: Any,
    extra: Any,
    table_path: Path,
    points: list[int],
    ranges: list[tuple[int, int]],
    width: int,
    hi: int,
    out: dict[str, Any],
) -> None:
    import shutil

    from lakesieve.model import WriteOptions
    from lakesieve.table import open as open_table
    from lakesieve.table import write
    from lakesieve.tpch import BUCKET_COLUMN

    options = WriteOptions(
        mode="append",
        record_key=("l_orderkey", "l_linenumber"),
        bucket_column=BUCKET_COLUMN,
        file_groups=64,
    )
    if table_path.exists():
        shutil.rmtree(table_path)
    _say(f"[{fmt}] writing {table_path} (one commit, 64 buckets) ...")
    t0 = time.perf_counter()
    v1 = write(table_path, base, format=fmt, options=options, spark=spark).id
    out["write_seconds"] = round(time.perf_counter() - t0, 1)
    table = open_table(table_path)
    out["commits_after_write"] = len(table.timeline())
    out["first_version"] = v1
    out["data_files"] = len(table.snapshot().units)
    native = _native_files(fmt, table_path)
    out["native_data_files"] = len(native)

    _say(f"[{fmt}] building the Sieve index at {v1} ...")
    t0 = time.perf_counter()
    desc = table.build_index("l_orderkey", type="sieve", spark=spark)
    out["build_seconds"] = round(time.perf_counter() - t0, 2)
    out["index_size_bytes"] = desc["size_bytes"]

    _say(f"[{fmt}] {len(points)} points + {len(ranges)} ranges ...")
    sieve_p, sieve_r, plan_ms = [], [], []
    for k in points:
        e = table.explain(f"l_orderkey = {k}")
        sieve_p.append(e["locations_selected"])
        plan_ms.append(e["plan_ms"])
    for a, b in ranges:
        e = table.explain(f"l_orderkey BETWEEN {a} AND {b}")
        sieve_r.append(e["locations_selected"])
        plan_ms.append(e["plan_ms"])
    t0 = time.perf_counter()
    nat_p, nat_r, how = _native_counts(fmt, table_path, points, ranges)
    out["native_seconds"] = round(time.perf_counter() - t0, 2)
    ideal_p, ideal_r = _ideal_from_files([f for f, _, _ in native], points, ranges)
    mean = statistics.fmean
    out["native_stats"] = how
    out["point"] = {
        "sieve": round(mean(sieve_p), 3),
        "native": round(mean(nat_p), 2),
        "ideal": round(mean(ideal_p), 3),
    }
    out["range_0.1pct"] = {
        "sieve": round(mean(sieve_r), 3),
        "native": round(mean(nat_r), 2),
        "ideal": round(mean(ideal_r), 3),
        "width_keys": width,
    }
    out["plan_ms_p50"] = round(statistics.median(plan_ms), 2)
    out["false_negatives"] = sum(
        1 for s, i in zip(sieve_p + sieve_r, ideal_p + ideal_r, strict=True) if s < i
    )

    _say(f"[{fmt}] pruned reads vs full reads ...")
    checks = []
    for where in [
        f"l_orderkey = {points[0]}",
        f"l_orderkey IN ({points[1]}, {points[2]}, {points[3]})",
        f"l_orderkey BETWEEN {ranges[0][0]} AND {ranges[0][1]}",
    ]:
        got, want = _agg(table.read(spark, where=where)), _agg(table.full_read(spark, where=where))
        checks.append({"where": where, "rows": got[0], "equal": got == want})
    out["read_checks"] = checks

    # time travel: a second commit, then reads and explain as of the first version
    _say(f"[{fmt}] second commit (append {extra.count()} rows of 5 new orders) ...")
    v2 = write(table_path, extra, format=fmt, options=options, spark=spark).id
    table = open_table(table_path)
    out["second_version"] = v2
    out["commits_after_second"] = len(table.timeline())
    table.build_index("l_orderkey", type="sieve", spark=spark)
    new_key = int(extra.agg({"l_orderkey": "min"}).first()[0])
    tt: dict[str, Any] = {}
    where_new = f"l_orderkey = {new_key}"
    where_tail = f"l_orderkey >= {hi - width}"
    for label, where in (("new_key", where_new), ("tail_range", where_tail)):
        got1, want1 = (
            _agg(table.read(spark, where=where, as_of=v1)),
            _agg(table.full_read(spark, where=where, as_of=v1)),
        )
        got2, want2 = (
            _agg(table.read(spark, where=where)),
            _agg(table.full_read(spark, where=where)),
        )
        tt[label] = {
            "where": where,
            "rows_v1": got1[0],
            "equal_v1": got1 == want1,
            "rows_latest": got2[0],
            "equal_latest": got2 == want2,
        }
    e1, e2 = table.explain(where_new, as_of=v1), table.explain(where_new)
    tt["explain_v1"] = {
        "table_instant": e1["table_instant"],
        "index_instant": [i.get("instant") for i in e1["indexes"]],
        "locations_selected": e1["locations_selected"],
        "locations_total": e1["locations_total"],
        "uses_first_index_state": all(i.get("instant") == v1 for i in e1["indexes"])
        and bool(e1["indexes"]),
    }
    tt["explain_latest"] = {
        "table_instant": e2["table_instant"],
        "index_instant": [i.get("instant") for i in e2["indexes"]],
        "locations_selected": e2["locations_selected"],
        "locations_total": e2["locations_total"],
    }
    out["time_travel"] = tt


def run_formats(
    scale: float = 1.0,
    workdir: str = "bench-data",
    queries: int = 200,
    seed: int = 42,
    formats: tuple[str, ...] = ("delta", "iceberg"),
) -> dict[str, Any]:
    """Issue 4's "done when": the interleaved lineitem as Delta and as Iceberg, Sieve vs each format's own stats."""
    import numpy as np
    import pyarrow.parquet as pq
    from lakesieve.session import get_spark
    from lakesieve.tpch import (
        BUCKET_COLUMN,
        RUN_COLUMN,
        generate_lineitem,
        with_interleaved_buckets,
    )
    from pyspark.sql import functions as F

    out: dict[str, Any] = {"suite": "formats", "scale": scale, "queries": queries, "seed": seed}
    root = Path(workdir).resolve()
    src = generate_lineitem(scale, root / f"tpch-sf{scale}")
    keys = np.unique(pq.read_table(str(src), columns=["l_orderkey"]).column(0).to_numpy())
    lo, hi = int(keys[0]), int(keys[-1])
    out["source_rows"] = pq.ParquetFile(str(src)).metadata.num_rows
    rng = random.Random(seed)
    points = [int(k) for k in rng.sample(list(keys), min(queries, len(keys)))]
    width = max(1, round((hi - lo + 1) * 0.001))
    ranges = [(a, a + width - 1) for a in (rng.randint(lo, hi - width + 1) for _ in range(queries))]
    del keys
    spark = get_spark()
    base = (
        with_interleaved_buckets(spark.read.parquet(str(src)), runs=1024, groups=64)
        .drop(RUN_COLUMN)
        .cache()
    )
    extra_keys = rng.sample(points, 5)
    offset = hi + 1000
    extra = (
        spark.read.parquet(str(src))
        .where(F.col("l_orderkey").isin(extra_keys))
        .withColumn("l_orderkey", F.col("l_orderkey") + F.lit(offset))
        .withColumn(BUCKET_COLUMN, (F.col("l_orderkey") % F.lit(64)).cast("int"))
    ).cache()
    extra = extra.select(*base.columns)
    for fmt in formats:
        res: dict[str, Any] = {}
        out[fmt] = res
        try:
            _run_format(
                fmt,
                spark,
                base,
                extra,
                root / f"lineitem_{fmt}_sf{scale}",
                points,
                ranges,
                width,
                hi,
                res,
            )
        except Exception as exc:  # report what was measured before the failure
            res["error"] = f"{type(exc).__name__}: {exc}"
            _say(f"[{fmt}] failed: {res['error']}")
        _say(json.dumps({fmt: res}, default=str))
    base.unpersist()
    return out


SUITES = ("full", "skeleton", "formats", "timeline")


def add_arguments(p: Any) -> None:
    """The options of ``lakesieve bench`` (shared by the CLI and ``python -m lakesieve.benchmark``)."""
    p.add_argument(
        "--suite",
        default="full",
        choices=SUITES,
        help="full (default): every format x layout x index type; skeleton / formats: earlier suites",
    )
    p.add_argument(
        "--scale", type=float, default=None, help="TPC-H scale factor (default 1; --quick: 0.01)"
    )
    p.add_argument("--workdir", default="bench-data", help="where data and tables go")
    p.add_argument(
        "--queries",
        type=int,
        default=None,
        help="queries per kind (skeleton/formats: 200; full: 100 per kind and column; --quick: 10)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--commits", type=int, default=20, help="timeline suite: upsert commits (default 20)"
    )
    p.add_argument("--json", dest="json_path", help="also write the figures to this file")
    p.add_argument(
        "--quick", action="store_true", help="full suite at SF 0.01 with fewer queries (minutes)"
    )
    p.add_argument(
        "--formats", help="full suite: comma-separated formats (default hudi,delta,iceberg)"
    )
    p.add_argument(
        "--layouts",
        help="full suite: comma-separated layouts (default sorted,interleaved,hashed,shipdate)",
    )
    p.add_argument(
        "--reuse-tables", action="store_true", help="full suite: keep tables an earlier run wrote"
    )
    p.add_argument("--charts", help="full suite: draw PNG charts into this folder")
    p.add_argument(
        "--from-json",
        metavar="FILE",
        help="full suite: do not run; redraw the charts and markdown from the figures in FILE",
    )
    p.add_argument(
        "--write-markdown",
        nargs="?",
        const="BENCHMARKS.md",
        default=None,
        metavar="FILE",
        help="full suite: rewrite the marked full-suite section of FILE (default BENCHMARKS.md) "
        "and draw the charts into docs/benchmarks/full unless --charts says otherwise",
    )


def _full_config(args: Any) -> Any:
    from lakesieve.bench_full import FullConfig, quick_config

    cfg = (
        quick_config(args.workdir, args.seed)
        if args.quick
        else FullConfig(workdir=args.workdir, seed=args.seed)
    )
    if args.scale is not None:
        cfg.scale = args.scale
    if args.queries is not None:
        cfg.queries = args.queries
    if args.formats:
        cfg.formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    if args.layouts:
        cfg.layouts = tuple(x.strip() for x in args.layouts.split(",") if x.strip())
    cfg.reuse_tables = bool(args.reuse_tables)
    return cfg


def command_line(args: Any) -> str:
    """The command that reproduces a run with ``args``."""
    parts = [".venv/bin/lakesieve bench", f"--suite {args.suite}"]
    if args.quick:
        parts.append("--quick")
    if args.scale is not None:
        parts.append(f"--scale {args.scale:g}")
    if args.queries is not None:
        parts.append(f"--queries {args.queries}")
    if args.formats:
        parts.append(f"--formats {args.formats}")
    if args.layouts:
        parts.append(f"--layouts {args.layouts}")
    parts.append(f"--workdir {args.workdir}")
    return " ".join(parts)


def run(args: Any) -> int:
    """Run the suite ``args`` names; print its figures as JSON (and write what was asked)."""
    from lakesieve.errors import LakesieveError

    if args.suite != "full" and (
        args.quick or args.charts or args.write_markdown or args.formats or args.layouts
    ):
        raise LakesieveError(
            "--quick, --charts, --write-markdown, --formats and --layouts belong to --suite full"
        )
    scale = 1.0 if args.scale is None else args.scale
    queries = 200 if args.queries is None else args.queries
    if scale <= 0:
        raise LakesieveError(f"--scale must be positive, got {scale:g}")
    if args.suite == "formats":
        figures = run_formats(scale, args.workdir, queries)
    elif args.suite == "skeleton":
        figures = run_skeleton(scale, args.workdir, queries)
    elif args.suite == "timeline":
        from lakesieve.bench_timeline import run_timeline

        figures = run_timeline(
            scale, args.workdir, commits=args.commits, points=queries, seed=args.seed
        )
    else:
        from lakesieve.bench_full import run_full, to_text
        from lakesieve.bench_report import render_markdown, update_section, write_charts

        def partial(figs: dict[str, Any]) -> None:
            if args.json_path:
                Path(args.json_path).write_text(
                    json.dumps({**figs, "partial": True}, indent=2, default=str)
                )

        if args.from_json:
            try:
                figures = json.loads(Path(args.from_json).read_text())
            except (OSError, ValueError) as exc:
                raise LakesieveError(
                    f"--from-json {args.from_json!r} is not a readable figures file: {exc}"
                ) from exc
            if figures.get("suite") != "full":
                raise LakesieveError(f"--from-json {args.from_json!r} holds no full-suite figures")
            from lakesieve.bench_full import targets

            figures["targets"] = targets(figures)  # derived: stated as this version states them
        else:
            figures = run_full(_full_config(args), checkpoint=partial)
            figures["command"] = command_line(args)
        charts = args.charts or ("docs/benchmarks/full" if args.write_markdown else None)
        try:
            if charts:
                figures["charts"] = write_charts(figures, charts)
            if args.write_markdown:
                update_section(
                    args.write_markdown, render_markdown(figures, figures["command"], charts)
                )
        except Exception as exc:  # the figures are still printed and written
            figures["report_error"] = f"{type(exc).__name__}: {exc}"
            _say(f"charts / markdown failed: {figures['report_error']}")
        _say(to_text(figures))
    text = json.dumps(figures, indent=2, default=str)
    print(text)
    if args.json_path and not (args.suite == "full" and args.from_json):
        Path(args.json_path).write_text(text)
    if (
        args.suite == "full"
        and not args.from_json
        and not figures.get("correctness", {}).get("ok", True)
    ):
        _say("the run found wrong rows, false negatives or failed layouts: see 'correctness'")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m lakesieve.benchmark [--suite full|skeleton|formats] ...``."""
    import argparse

    p = argparse.ArgumentParser(prog="lakesieve bench")
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
