"""The Spark read paths against a plain Spark read of the same files.

Run with ``lakesieve bench --suite spark-paths --scale 1 --dir DIR``: it
builds (or reuses) the interleaved TPC-H lineitem Hudi table of the benchmark
at ``DIR`` with a Sieve index on ``l_orderkey``, then times five queries
(``count(*)`` and ``sum(l_quantity)``, median of ``--repeats`` runs, one Spark
session; ``--queries`` picks some) these ways:

- ``plain`` (the baseline): a temporary view over ``spark.read.parquet`` of
  the table's latest base files, **created once and reused** by every query,
  the predicate applied by Spark (what a SQL user has without lakesieve);
- ``plain_fresh``: ``spark.read.parquet`` of the same files created afresh
  for every query (Spark lists the files again each time), for reference;
- ``table_read``: :meth:`lakesieve.table.Table.read`;
- ``datasource``: ``spark.read.format("lakesieve")`` with default options
  (the JVM data source, loaded per query);
- ``sql``: ``spark.sql("SELECT count(*), sum(l_quantity) FROM v WHERE ...")``
  over one temporary view ``USING lakesieve`` created once (every query
  reuses the relation);
- ``python_source`` (with ``--python-source``): the Python data source
  ``format("lakesieve_python")`` with ``prune`` on and ``columns`` naming the
  three columns the queries use (the Python Data Source API does not tell a
  source which columns a query needs).

Every path's figures are checked equal to the plain read's before any time is
reported, and each ratio is ``plain seconds / path seconds`` (above 1: faster
than the reused plain view); ``<path>_vs_fresh`` divides the fresh read's
seconds instead. After the filtered queries a filterless count of the
lakesieve view must give the full count. ``planning`` times ``EXPLAIN SELECT *
... WHERE l_orderkey >= 0`` on the plain view and on the lakesieve view (the
planner's overhead is their difference). The report is JSON on stdout; it
also gives Spark's floor per job (the same aggregate over a one-row local
DataFrame), which bounds any path that runs a Spark job.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.full_reads import local_path

#: The queries of the benchmark; ``{lo}``/``{hi}``/``{hi_001}``/``{key}`` are filled from the table.
QUERIES: dict[str, str] = {
    "point": "l_orderkey = {key}",
    "range_0.01pct": "l_orderkey BETWEEN {lo} AND {hi_001}",
    "range_0.1pct": "l_orderkey BETWEEN {lo} AND {hi}",
    "month_no_pruning": "l_shipdate >= DATE'1995-03-01' AND l_shipdate < DATE'1995-04-01'",
    "every_row": "",
}


#: What each baseline is, as the report labels it (every ratio names the one it divides).
BASELINES: dict[str, str] = {
    "plain": (
        "a temporary view over spark.read.parquet of the table's latest base files, created "
        "once and reused by every query (what a SQL user has): plain_s, <path>_vs_plain"
    ),
    "plain_fresh": (
        "spark.read.parquet of the same files created afresh for every query (Spark lists "
        "them again each time), for reference: plain_fresh_s, <path>_vs_fresh"
    ),
}

#: The columns the queries need, for the Python data source's ``columns`` option.
QUERY_COLUMNS = "l_orderkey,l_quantity,l_shipdate"


def aggregate(frame: Any) -> tuple[int, float]:
    """``(count(*), sum(l_quantity))`` of a frame."""
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)), F.sum("l_quantity")).first()
    return int(row[0]), float(row[1] or 0)


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, list[float]]:
    """``(last result, median seconds, every time)`` of ``repeats`` calls after one warm-up."""
    got = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return got, statistics.median(times), [round(t, 3) for t in times]


def prepare(spark: Any, scale: float, workdir: Path, commits: int = 16) -> str:
    """The interleaved lineitem Hudi table at ``workdir/hudi`` with a Sieve index on ``l_orderkey``.

    Reuses a table (and index) already there. ``commits`` only changes how
    long the build takes: each location holds the same runs whatever the
    number of commits that wrote them.
    """
    import shutil

    import lakesieve
    from lakesieve.demo.tpch import generate_lineitem, write_interleaved_hudi

    table_path = workdir / "hudi"
    done = workdir / "hudi.complete"
    if not done.exists():
        shutil.rmtree(table_path, ignore_errors=True)
        source = generate_lineitem(scale, workdir / f"tpch-sf{scale}")
        write_interleaved_hudi(spark, source, table_path, commits=commits, progress=True)
        done.write_text("written\n")
    table = lakesieve.open(str(table_path))
    if not any(d.column == "l_orderkey" for d in table.indexes()):
        table.build_index("l_orderkey", "sieve", spark=spark)
    return str(table_path)


def key_bounds(spark: Any, files: list[str]) -> tuple[int, int]:
    """The smallest and largest ``l_orderkey`` of the files (a Spark job)."""
    from pyspark.sql import functions as F

    row = spark.read.parquet(*files).agg(F.min("l_orderkey"), F.max("l_orderkey")).first()
    return int(row[0]), int(row[1])


def spark_floor(spark: Any, repeats: int) -> float:
    """Median seconds of the queries' aggregate over a one-row local DataFrame: any Spark job's floor."""
    one = spark.createDataFrame([(1, 1.0)], "l_orderkey bigint, l_quantity double")
    return median_seconds(lambda: aggregate(one), repeats)[1]


def run(
    spark: Any,
    table_path: str,
    repeats: int = 5,
    with_python_source: bool = False,
    queries: list[str] | None = None,
) -> dict[str, Any]:
    """Time the queries (all of :data:`QUERIES` by default) on every path.

    Raises:
        AssertionError: a path's figures differ from the plain read's.
        ValueError: a query name not in :data:`QUERIES`.
    """
    import lakesieve

    names = list(QUERIES) if queries is None else queries
    unknown = [n for n in names if n not in QUERIES]
    if unknown:
        raise ValueError(f"unknown query {unknown[0]!r}; known: {', '.join(QUERIES)}")

    table = lakesieve.open(table_path)
    plan = table.plan(None)
    files = [p for p in (local_path(table, u) for u in plan.units) if p]
    lo, hi = key_bounds(spark, files)
    span = hi - lo + 1
    mid = lo + span // 2
    width = max(1, span // 1000)  # 0.1% of the key range: two runs of the interleaved layout
    narrow = max(1, span // 10000)  # 0.01%
    fill = {"key": mid, "lo": mid, "hi": mid + width - 1, "hi_001": mid + narrow - 1}
    out: dict[str, Any] = {
        "table": table_path,
        "locations": len(plan.units),
        "baselines": BASELINES,
        "queries": {},
    }
    out["spark_floor_s"] = round(spark_floor(spark, repeats), 3)
    view = "lakesieve_bench_lineitem"
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW {view} USING lakesieve OPTIONS (path '{table_path}')"
    )
    plain_view = "lakesieve_bench_plain_lineitem"
    spark.read.parquet(*files).createOrReplaceTempView(plain_view)
    out["planning"] = planning(spark, plain_view, view, repeats)
    for name in names:
        where = QUERIES[name].format(**fill)

        def plain(where: str = where) -> tuple[int, float]:
            return sql_aggregate(spark, plain_view, where)

        def plain_fresh(where: str = where) -> tuple[int, float]:
            frame = spark.read.parquet(*files)
            return aggregate(frame.where(where) if where else frame)

        def table_read(where: str = where) -> tuple[int, float]:
            return aggregate(table.read(spark, where or None, refresh=False))

        def datasource(where: str = where) -> tuple[int, float]:
            source = spark.read.format("lakesieve").load(table_path)
            return aggregate(source.where(where) if where else source)

        def sql(where: str = where) -> tuple[int, float]:
            return sql_aggregate(spark, view, where)

        want, plain_s, plain_all = median_seconds(plain, repeats)
        row: dict[str, Any] = {"where": where, "rows": want[0], "plain_s": round(plain_s, 3)}
        row["plain_times"] = plain_all
        fresh, fresh_s, fresh_all = median_seconds(plain_fresh, repeats)
        if not same(fresh, want):
            raise AssertionError(f"plain_fresh of {name!r} returned {fresh}, the plain view {want}")
        row["plain_fresh_s"] = round(fresh_s, 3)
        row["plain_fresh_times"] = fresh_all
        row["selected"] = len(table.plan(where or None).units)

        def python_source(where: str = where) -> tuple[int, float]:
            # loaded per query: Spark reuses a Python source's last pushdown (lakesieve.python_source)
            source = (
                spark.read.format("lakesieve_python")
                .option("prune", "true")
                .option("columns", QUERY_COLUMNS)
                .load(table_path)
            )
            return aggregate(source.where(where) if where else source)

        paths: list[tuple[str, Callable[[], tuple[int, float]]]] = [
            ("table_read", table_read),
            ("datasource", datasource),
            ("sql", sql),
        ]
        if with_python_source:
            paths.append(("python_source", python_source))
        for label, fn in paths:
            got, secs, every = median_seconds(fn, repeats)
            if not same(got, want):
                raise AssertionError(f"{label} of {name!r} returned {got}, the plain read {want}")
            row[f"{label}_s"] = round(secs, 3)
            row[f"{label}_times"] = every
            row[f"{label}_vs_plain"] = round(plain_s / max(secs, 1e-9), 2)
            row[f"{label}_vs_fresh"] = round(fresh_s / max(secs, 1e-9), 2)
        out["queries"][name] = row
    full = sql_aggregate(spark, view, "")
    if not same(full, sql_aggregate(spark, plain_view, "")):
        raise AssertionError(f"a filterless query of the lakesieve view after the others: {full}")
    out["filterless_after_filtered"] = full[0]
    return out


def same(got: tuple[int, float], want: tuple[int, float]) -> bool:
    """Equal counts and sums (up to the float error of summing in another order)."""
    return got[0] == want[0] and abs(got[1] - want[1]) <= 1e-6 * max(1.0, abs(want[1]))


def sql_aggregate(spark: Any, view: str, where: str) -> tuple[int, float]:
    """``(count(*), sum(l_quantity))`` of ``view`` through SQL, with ``where`` when given."""
    text = f"SELECT count(1), sum(l_quantity) FROM {view}"
    row = spark.sql(f"{text} WHERE {where}" if where else text).first()
    return int(row[0]), float(row[1] or 0)


def planning(spark: Any, plain_view: str, view: str, repeats: int) -> dict[str, Any]:
    """Median seconds of planning (no job) one unprunable query on each view, and the difference."""

    def explain(name: str) -> Callable[[], Any]:
        query = f"SELECT * FROM {name} WHERE l_orderkey >= 0"
        return lambda: spark.sql(query)._jdf.queryExecution().executedPlan()

    _, plain_s, plain_all = median_seconds(explain(plain_view), repeats)
    _, sieve_s, sieve_all = median_seconds(explain(view), repeats)
    return {
        "plain_view_s": round(plain_s, 3),
        "plain_view_times": plain_all,
        "lakesieve_view_s": round(sieve_s, 3),
        "lakesieve_view_times": sieve_all,
        "overhead_s": round(sieve_s - plain_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: build or reuse the table, time the paths, print JSON."""
    parser = argparse.ArgumentParser(prog="lakesieve bench --suite spark-paths")
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--dir", required=True, help="work directory (table is reused there)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--commits", type=int, default=16, help="commits writing a new table")
    parser.add_argument("--json", dest="json_path", help="also write the figures to this file")
    parser.add_argument(
        "--queries", help=f"comma-separated queries to time (default all: {', '.join(QUERIES)})"
    )
    parser.add_argument(
        "--python-source",
        action="store_true",
        help="also time the Python data source (format('lakesieve_python'), prune and columns on)",
    )
    args = parser.parse_args(argv)
    queries = [q.strip() for q in args.queries.split(",") if q.strip()] if args.queries else None
    if queries is not None and any(q not in QUERIES for q in queries):
        parser.error(f"--queries: known queries are {', '.join(QUERIES)}")
    from lakesieve.spark.session import get_spark

    spark = get_spark()
    workdir = Path(args.dir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = prepare(spark, args.scale, workdir, args.commits)
    report = run(spark, path, args.repeats, args.python_source, queries)
    report["scale"] = args.scale
    report["cores"] = os.cpu_count()
    report["load"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_path:
        Path(args.json_path).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
