"""``lakesieve bench --suite formats``: the interleaved lineitem as Delta and as Iceberg.

Per format: one commit of 64 buckets, a Sieve index on ``l_orderkey``, the
files Sieve selects per point and range query next to the format's own
statistics and the true count, pruned reads compared with full reads, and
time travel to the first version after a second commit.
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
    from lakesieve_bench.native import iceberg_table

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
    from pyiceberg import expressions

    from lakesieve_bench.native import iceberg_table

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

    from lakesieve.demo.tpch import BUCKET_COLUMN
    from lakesieve.model import WriteOptions
    from lakesieve.table import open as open_table
    from lakesieve.table import write

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
    from lakesieve.demo.tpch import (
        BUCKET_COLUMN,
        RUN_COLUMN,
        generate_lineitem,
        with_interleaved_buckets,
    )
    from lakesieve.spark.session import get_spark
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
