"""``lakesieve demo``: the main job end to end on an embedded default.

Generates TPC-H lineitem (``tpchgen-cli``), writes it as a Hudi table in the
interleaved layout (1024 key runs in 64 file groups, 4 bucketed commits),
builds a Sieve index on ``l_orderkey`` and runs point and range queries,
printing per query the file groups selected out of the total, the rows
returned, and the time taken with the index and with a full scan.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path


def _say(msg: str) -> None:
    print(msg, flush=True)


def run_demo(scale: float = 0.1, workdir: str | None = None, seed: int = 7) -> int:
    """Run the demo; returns the process exit status (non-zero if a check fails)."""
    from lakesieve.bench.tpch import generate_lineitem, write_interleaved_hudi
    from lakesieve.session import get_spark
    from lakesieve.table import open as open_table

    started = time.perf_counter()
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="lakesieve-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    _say(f"lakesieve demo in {root}")
    src = generate_lineitem(scale, root / f"tpch-sf{scale}")
    _say(f"[1/4] generated TPC-H lineitem SF{scale}: {src}")

    spark = get_spark()
    table_path = root / "lineitem_hudi"
    if not (table_path / ".hoodie").exists():
        write_interleaved_hudi(
            spark, src, table_path, runs=1024, groups=64, commits=4, progress=True
        )
    table = open_table(table_path)
    line = table.timeline()
    _say(
        f"[2/4] Hudi table {table_path}: {len(line)} commits, {len(table.snapshot().units)} file groups"
    )

    t0 = time.perf_counter()
    desc = table.build_index("l_orderkey", type="sieve")
    _say(
        f"[3/4] built Sieve index on l_orderkey in {time.perf_counter() - t0:.1f}s: "
        f"{desc['size_bytes']:,} bytes, {desc.get('details', {}).get('segments', '?')} segments"
    )

    from pyspark.sql import functions as F

    bounds = spark.read.parquet(str(src)).agg(F.min("l_orderkey"), F.max("l_orderkey")).first()
    assert bounds is not None  # an aggregate without grouping has one row
    lo, hi = int(bounds[0]), int(bounds[1])
    rng = random.Random(seed)
    width = max(1, (hi - lo) // 1000)
    a = rng.randint(lo, hi - width)
    present = [
        int(r[0])
        for r in spark.read.parquet(str(src))
        .select("l_orderkey")
        .sample(fraction=0.0005, seed=seed)
        .limit(50)
        .collect()
    ]
    keys = (
        rng.sample(present, min(7, len(present)))
        if present
        else [rng.randint(lo, hi) for _ in range(7)]
    )
    queries = [
        ("point", f"l_orderkey = {keys[0]}"),
        ("point", f"l_orderkey = {keys[1]}"),
        ("IN (5 keys)", "l_orderkey IN (" + ", ".join(str(k) for k in keys[2:7]) + ")"),
        ("0.1% range", f"l_orderkey BETWEEN {a} AND {a + width}"),
        ("one-sided", f"l_orderkey >= {hi - width * 5}"),
        ("no index", "l_quantity < 2"),
    ]
    _say("[4/4] queries (file groups selected / total, rows, seconds with index vs full scan)")
    _say(f"  {'kind':<12} {'selected':>9} {'rows':>8} {'indexed s':>10} {'full s':>8}  predicate")
    failures = 0
    for kind, where in queries:
        plan = table.plan(where)
        t1 = time.perf_counter()
        got = table.read_plan(plan, spark).count()
        t_index = time.perf_counter() - t1
        t2 = time.perf_counter()
        full = table.full_read(spark, where=where).count()
        t_full = time.perf_counter() - t2
        ok = got == full
        failures += 0 if ok else 1
        sel = f"{plan.locations_selected}/{plan.locations_total}"
        _say(
            f"  {kind:<12} {sel:>9} {got:>8} {t_index:>10.2f} {t_full:>8.2f}  {where}{'' if ok else '  MISMATCH'}"
        )
    _say(
        f"done in {time.perf_counter() - started:.0f}s; pruned reads equal full scans: {'yes' if not failures else 'NO'}"
    )
    return 1 if failures else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_demo())
