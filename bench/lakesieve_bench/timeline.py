"""The timeline benchmark: an index kept in step with a changing Hudi table.

On the skeleton's interleaved TPC-H table (1024 key runs in 64 bucketed file
groups), as copy-on-write and as merge-on-read, one run measures:

1. a full Sieve build on ``l_orderkey`` (and on ``l_partkey``, a column that
   is not part of the record key, so refresh must read the rows written by
   the commit and their previous versions);
2. ``commits`` upsert commits, each rewriting every line of 1% of the orders
   (chosen at random, seeded), each followed by ``index refresh`` — the
   first refresh's time as a share of the full build, and its answers
   compared with a fresh build of the same instant on every query (points
   and ranges on ``l_orderkey``, and on ``l_partkey`` for that index);
3. index compaction after the last commit, then the file groups selected per
   point lookup (and the ideal count);
4. pruned reads as of the first instant against full reads of that instant.
"""

from __future__ import annotations

import math
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

RECORD_KEY = ("l_orderkey", "l_linenumber")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _answers(table: Any, name: str, wheres: list[str]) -> list[frozenset[str]]:
    out = []
    for where in wheres:
        plan = table.plan(where)
        item = next(i for i in plan.indexes if i.definition.name == name)
        if item.error:
            raise RuntimeError(f"index {name} unusable: {item.error}")
        out.append(frozenset(item.selected))
    return out


#: Table kinds of the suite: Hudi's two table types, and copy-on-write with
#: change data logging (before and after images), which refresh reads instead
#: of the file groups.
TABLE_KINDS = {
    "cow": ("cow", {}),
    "mor": ("mor", {}),
    "cow-cdc": ("cow", {"hoodie.table.cdc.enabled": "true"}),
}


def _prepare(spark: Any, source_table: str, path: Path, table_type: str, progress: bool) -> None:
    """A copy of the interleaved table as one bucketed bulk insert (a kind of :data:`TABLE_KINDS`)."""
    from lakesieve.model import WriteOptions
    from lakesieve.table import open as open_table
    from lakesieve.table import write

    if path.exists():
        shutil.rmtree(path)
    src = open_table(source_table)
    frame = src.full_read(spark)
    frame = frame.select([c for c in frame.columns if not c.startswith("_hoodie")])
    options = WriteOptions(
        mode="bulk_insert",
        record_key=RECORD_KEY,
        file_groups=64,
        bucket_column="bucket",
        table_type=TABLE_KINDS[table_type][0],
        table_name="lineitem",
        extra=TABLE_KINDS[table_type][1],
    )
    started = time.perf_counter()
    write(path, frame, format="hudi", options=options, spark=spark)
    if progress:
        _say(f"[{table_type}] wrote {path} in {time.perf_counter() - started:.1f}s")


def upsert_orders(
    spark: Any,
    table: Any,
    fraction: float,
    seed: int,
    table_type: str,
    column: str = "l_quantity",
) -> tuple[float, int]:
    """Rewrite every line of ``fraction`` of the orders, ``column`` + 1; returns (seconds, rows)."""
    from lakesieve.model import WriteOptions
    from lakesieve.table import write
    from pyspark.sql import functions as F

    current = table.full_read(spark)
    current = current.select([c for c in current.columns if not c.startswith("_hoodie")])
    orders = current.select("l_orderkey").distinct().sample(fraction=fraction, seed=seed)
    qty_type = current.schema[column].dataType
    changed = (
        current.join(F.broadcast(orders), "l_orderkey", "left_semi")
        .withColumn(column, (F.col(column) + F.lit(1)).cast(qty_type))
        .cache()
    )
    rows = changed.count()
    options = WriteOptions(
        mode="upsert",
        record_key=RECORD_KEY,
        bucket_column="bucket",
        table_type=TABLE_KINDS[table_type][0],
        table_name="lineitem",
    )
    started = time.perf_counter()
    write(table.path, changed, format="hudi", options=options, spark=spark)
    seconds = time.perf_counter() - started
    changed.unpersist()
    return seconds, rows


def _repeat_partkey(spark: Any, table: Any, first: str, repeats: int) -> dict[str, Any]:
    """Medians of full ``l_partkey`` Sieve builds and of refreshes of one built at ``first``.

    Each repeat builds at the latest instant (timed), then builds at ``first``
    and refreshes to the latest instant (timed): the refresh's share of a build
    from medians, less exposed to a single noisy run.
    """
    builds: list[float] = []
    refreshes: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        table.build_index("l_partkey", type="sieve", name="sieve_partkey_rep", spark=spark)
        builds.append(time.perf_counter() - started)
        table.drop_index("sieve_partkey_rep")
        table.build_index(
            "l_partkey", type="sieve", name="sieve_partkey_rep", spark=spark, as_of=first
        )
        res = table.refresh("sieve_partkey_rep", spark=spark)[0]
        if res.action != "delta":
            raise RuntimeError(f"repeated refresh did not fold a delta: {res}")
        refreshes.append(res.seconds)
        table.drop_index("sieve_partkey_rep")
    build, refresh = statistics.median(builds), statistics.median(refreshes)
    return {
        "builds": [round(b, 3) for b in builds],
        "refreshes": [round(r, 3) for r in refreshes],
        "median_build_seconds": round(build, 3),
        "median_refresh_seconds": round(refresh, 3),
        "refresh_share_of_build": refresh / build,
        "delta_rows": res.delta_rows,
        "from_change_data": res.locations_from_change_data,
        "from_logs": res.locations_from_logs,
        "locations_read": res.locations_read,
    }


def run_table(
    spark: Any,
    source_table: str,
    workdir: Path,
    table_type: str,
    commits: int,
    fraction: float,
    points: int,
    seed: int,
    upsert_column: str = "l_quantity",
    refresh_repeats: int = 0,
) -> dict[str, Any]:
    """The figures for one table kind.

    ``upsert_column`` is the column each upsert adds 1 to; with
    ``refresh_repeats``, the first commit's ``l_partkey`` refresh and a full
    build are also timed that many times (:func:`_repeat_partkey`).
    """
    from lakesieve.maintenance.refresh import RefreshPolicy
    from lakesieve.table import open as open_table
    from pyspark.sql import functions as F

    path = workdir / f"timeline_{table_type}"
    _prepare(spark, source_table, path, table_type, True)
    policy = RefreshPolicy(
        max_deltas=commits + 1, max_delta_rows=10_000_000, max_delta_share=math.inf
    )
    table = open_table(path, refresh_policy=policy)
    first = table.timeline()[0].id
    out: dict[str, Any] = {"table_type": table_type, "path": str(path), "first_instant": first}

    started = time.perf_counter()
    table.build_index("l_orderkey", type="sieve", name="sieve", spark=spark)
    out["build_seconds_orderkey"] = time.perf_counter() - started
    started = time.perf_counter()
    table.build_index("l_partkey", type="sieve", name="sieve_partkey", spark=spark)
    out["build_seconds_partkey"] = time.perf_counter() - started
    _say(
        f"[{table_type}] builds: orderkey {out['build_seconds_orderkey']:.1f}s, "
        f"partkey {out['build_seconds_partkey']:.1f}s"
    )

    rng = random.Random(seed)
    bounds = table.full_read(spark).agg(F.min("l_orderkey"), F.max("l_orderkey")).first()
    assert bounds is not None  # an aggregate without grouping has one row
    lo, hi = int(bounds[0]), int(bounds[1])
    total = table.full_read(spark).count()
    sample = [
        int(r[0])
        for r in table.full_read(spark)
        .select("l_orderkey")
        .sample(fraction=min(1.0, 4.0 * points / max(1, total)), seed=seed)
        .limit(points)
        .collect()
    ]
    width = max(1, (hi - lo) // 1000)
    ranges = [(a, a + width) for a in (rng.randint(lo, hi - width) for _ in range(50))]
    wheres = [f"l_orderkey = {k}" for k in sample] + [
        f"l_orderkey between {a} and {b}" for a, b in ranges
    ]

    part_bounds = table.full_read(spark).agg(F.min("l_partkey"), F.max("l_partkey")).first()
    assert part_bounds is not None
    p_lo, p_hi = int(part_bounds[0]), int(part_bounds[1])
    p_width = max(1, (p_hi - p_lo) // 1000)
    part_wheres = [f"l_partkey = {rng.randint(p_lo, p_hi)}" for _ in range(points)] + [
        f"l_partkey between {a} and {a + p_width}"
        for a in (rng.randint(p_lo, p_hi - p_width) for _ in range(50))
    ]

    commits_out = []
    for c in range(commits):
        write_s, rows = upsert_orders(
            spark, table, fraction, seed + c + 1, table_type, upsert_column
        )
        names = ["sieve", "sieve_partkey"] if c == 0 else ["sieve"]
        entry: dict[str, Any] = {"commit": c + 1, "rows": rows, "write_seconds": round(write_s, 2)}
        for name in names:
            res = table.refresh(name, spark=spark)[0]
            entry[name] = {
                "refresh_seconds": round(res.seconds, 3),
                "action": res.action,
                "locations_read": res.locations_read,
                "skipped_in_place": res.locations_skipped_in_place,
                "stamped": res.locations_stamped,
                "from_change_data": res.locations_from_change_data,
                "from_logs": res.locations_from_logs,
                "delta_rows": res.delta_rows,
            }
        if c == 0:
            entry["refresh_share_of_build_orderkey"] = (
                entry["sieve"]["refresh_seconds"] / out["build_seconds_orderkey"]
            )
            entry["refresh_share_of_build_partkey"] = (
                entry["sieve_partkey"]["refresh_seconds"] / out["build_seconds_partkey"]
            )
            refreshed = _answers(table, "sieve", wheres)
            table.build_index("l_orderkey", type="sieve", name="sieve_fresh", spark=spark)
            fresh = _answers(table, "sieve_fresh", wheres)
            table.drop_index("sieve_fresh")
            entry["answers_equal_fresh_build"] = sum(
                a == b for a, b in zip(refreshed, fresh, strict=True)
            )
            entry["answers_compared"] = len(wheres)
            refreshed = _answers(table, "sieve_partkey", part_wheres)
            table.build_index("l_partkey", type="sieve", name="sieve_partkey_fresh", spark=spark)
            fresh = _answers(table, "sieve_partkey_fresh", part_wheres)
            table.drop_index("sieve_partkey_fresh")
            entry["answers_equal_fresh_build_partkey"] = sum(
                a == b for a, b in zip(refreshed, fresh, strict=True)
            )
            entry["answers_compared_partkey"] = len(part_wheres)
            table.drop_index("sieve_partkey")
            if refresh_repeats:
                entry["partkey_repeats"] = _repeat_partkey(spark, table, first, refresh_repeats)
        commits_out.append(entry)
        _say(f"[{table_type}] commit {c + 1}: {entry}")
    out["commits"] = commits_out

    started = time.perf_counter()
    compacted = table.compact("sieve", spark=spark)[0]
    out["compaction"] = {
        "action": compacted.action,
        "seconds": round(time.perf_counter() - started, 2),
        "delta_rows_folded": compacted.delta_rows,
    }
    point_wheres = wheres[:points]
    selected = [len(a) for a in _answers(table, "sieve", point_wheres)]
    out["points_after_compaction"] = sum(selected) / len(selected)
    out["points_max_after_compaction"] = max(selected)
    # ideal: the locations truly holding each point, from the data (exact index built for this check)
    table.build_index("l_orderkey", type="exact", name="exact_check", spark=spark)
    ideal = [len(a) for a in _answers(table, "exact_check", point_wheres)]
    table.drop_index("exact_check")
    out["points_ideal"] = sum(ideal) / len(ideal)
    out["size_bytes_after_compaction"] = table.describe_index("sieve")["size_bytes"]

    checks = []
    for a, b in ranges[:5]:
        where = f"l_orderkey between {a} and {b}"
        pruned = table.read(spark, where, as_of=first)
        full = table.full_read(spark, where, as_of=first)
        n_p, n_f = pruned.count(), full.count()
        same = pruned.exceptAll(full).count() == 0 and full.exceptAll(pruned).count() == 0
        checks.append({"where": where, "pruned_rows": n_p, "full_rows": n_f, "equal": same})
    out["as_of_first"] = checks
    out["first_instant_rows"] = table.full_read(spark, as_of=first).count()
    return out


def run_timeline(
    scale: float = 1.0,
    workdir: str = "bench-data",
    commits: int = 20,
    fraction: float = 0.01,
    points: int = 200,
    seed: int = 42,
    table_types: tuple[str, ...] = ("cow", "mor"),
    upsert_column: str = "l_quantity",
    refresh_repeats: int = 0,
) -> dict[str, Any]:
    """Run the timeline benchmark on the skeleton's table (written first if absent)."""
    from lakesieve.spark.session import get_spark

    work = Path(workdir)
    source = work / f"lineitem_hudi_sf{scale}"
    spark = get_spark()
    if not (source / ".hoodie").is_dir():
        from lakesieve.demo.tpch import generate_lineitem, write_interleaved_hudi

        data = generate_lineitem(scale, work / f"tpch-sf{scale}")
        write_interleaved_hudi(spark, data, source, progress=True)
    out: dict[str, Any] = {
        "suite": "timeline",
        "scale": scale,
        "commits": commits,
        "fraction": fraction,
        "seed": seed,
        "upsert_column": upsert_column,
    }
    for table_type in table_types:
        out[table_type] = run_table(
            spark,
            str(source),
            work,
            table_type,
            commits,
            fraction,
            points,
            seed,
            upsert_column,
            refresh_repeats,
        )
    return out
