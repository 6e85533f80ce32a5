"""Index builds against a Spark sort of the same column, with the driver's peak memory.

``lakesieve bench --suite build-cost --parquet lineitem.parquet`` (or
``--scale 1``, which generates the data) reads the
named columns of a TPC-H ``lineitem`` file with Spark, gives every row a
location (``--groups`` file groups; rows are spread by a hash of
``l_orderkey``, as the benchmark's ``hashed`` layout does, which makes the
exact index as large as it gets), caches that relation and then, per column:

* times a Spark sort of the column (``sort(col)`` written to the ``noop``
  sink), the yardstick of the issue's "build <= 2x a sort";
* builds each index type from the cached relation, as the framework's build
  does (a staging folder current, so task-written files go to disk), and
  records its seconds, its ratio to the sort, its stored bytes, and the
  driver's peak memory during the build: the Python process's peak resident
  set growth (``VmHWM`` reset before) and the JVM's peak resident set (reset
  before; in local mode the JVM runs the executors too).

Each build is handed the relation's location names, as the framework hands a
snapshot's (the Sieve build then skips its location pass).

It uses the project's default Spark settings (:mod:`lakesieve.spark.session`)
unless ``LAKESIEVE_SPARK_CONF`` says otherwise; the figures record which.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from lakesieve_bench.memory import jvm_peak_bytes


def _status_kb(field: str, pid: str = "self") -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` in bytes (0 where there is none)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _jvm_pid(spark: Any) -> str | None:
    try:
        return str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:
        return None


def _reset_peak(pid: str | None) -> None:
    """Reset a process's peak resident set to its current one (Linux)."""
    if pid is None:
        return
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def location_names(groups: int) -> list[str]:
    """The names :func:`run` gives the ``groups`` locations (the ids its hash can take)."""
    return [LOCATION_FORMAT % g for g in range(groups)]


#: A location's name from its number (a Hudi-like file group id).
LOCATION_FORMAT = "part=0/%08d-5d2f-4a7e-9c0b-1f2e3d4c5b6a-0"


def build_one(
    spark: Any,
    relation: Any,
    col: str,
    spark_type: str,
    index_type: str,
    rows: int,
    locations: list[str] | None = None,
) -> dict[str, Any]:
    """Build one index type on ``col`` from the cached ``relation``; its figures.

    ``locations`` are handed to the build as the framework hands a snapshot's
    locations (which lets the Sieve build skip its location pass).
    """
    from lakesieve.contract import registry
    from lakesieve.model import LOCATION_COLUMN, BuiltIndex
    from lakesieve.store.task_files import folder_reader, scratch_staging
    from pyspark.sql import functions as F

    itype = registry.index_type(index_type)
    params = itype.validate({}, spark_type)
    rel = relation.select(F.col(col).alias("key"), F.col(LOCATION_COLUMN).alias("location"))
    pid = _jvm_pid(spark)
    with scratch_staging() as area:
        _reset_peak("self")
        _reset_peak(pid)
        before = _status_kb("VmRSS")
        t0 = time.perf_counter()
        built = itype.build(spark, rel, spark_type, params, locations, rows)
        seconds = time.perf_counter() - t0
        py_peak = max(0, _status_kb("VmHWM") - before)
        jvm_peak = jvm_peak_bytes(spark)
        from lakesieve.files.ipc_files import stored_size

        size = stored_size(built.files) + sum(int(r["size_bytes"]) for r in built.written)
        obj = itype.load(
            BuiltIndex(
                files=built.files, meta=dict(built.meta), fetch=folder_reader(area, built.written)
            )
        )
        details = itype.describe(obj)
        if details.get("distinct_keys") is None and hasattr(obj, "count_distinct_keys"):
            # an exact index of Spark-written partitions does not count them when built
            details["distinct_keys"] = obj.count_distinct_keys()
    return {
        "build_seconds": round(seconds, 2),
        "size_bytes": size,
        "files_written_by_tasks": len(built.written),
        "driver_python_rss_peak_growth_bytes": py_peak,
        "driver_jvm_rss_peak_bytes": jvm_peak,
        "details": {k: v for k, v in details.items() if isinstance(v, (int, float, str))},
    }


def run(
    parquet: str, columns: list[str], types: list[str], groups: int, repeat: int
) -> dict[str, Any]:
    """Measure every type on every column; the figures as a dict."""
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.spark.session import get_spark
    from pyspark.sql import functions as F

    spark = get_spark()
    frame = spark.read.parquet(parquet)
    location = F.format_string(LOCATION_FORMAT, F.pmod(F.xxhash64("l_orderkey"), F.lit(groups)))
    relation = frame.select(*columns, location.alias(LOCATION_COLUMN)).persist()
    t0 = time.perf_counter()
    rows = relation.count()
    out: dict[str, Any] = {
        "parquet": parquet,
        "rows": rows,
        "groups": groups,
        "relation_seconds": round(time.perf_counter() - t0, 2),
        "spark_conf_env": os.environ.get("LAKESIEVE_SPARK_CONF", ""),
        "spark_driver_memory": spark.conf.get("spark.driver.memory", "default"),
        "columns": {},
    }
    schema = relation.schema
    for col in columns:
        spark_type = schema[col].dataType.simpleString()
        sorts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            relation.select(col).sort(col).write.format("noop").mode("overwrite").save()
            sorts.append(time.perf_counter() - t0)
        sort_s = min(sorts)
        figs: dict[str, Any] = {"key_type": spark_type, "spark_sort_seconds": round(sort_s, 2)}
        for t in types:
            runs = [
                build_one(spark, relation, col, spark_type, t, rows, location_names(groups))
                for _ in range(repeat)
            ]
            best = min(runs, key=lambda r: r["build_seconds"])
            best["build_over_sort"] = round(best["build_seconds"] / max(sort_s, 1e-9), 2)
            best["driver_python_rss_peak_growth_bytes"] = max(
                r["driver_python_rss_peak_growth_bytes"] for r in runs
            )
            figs[t] = best
            print(f"{col} {t}: {json.dumps(best)}", file=sys.stderr, flush=True)
        out["columns"][col] = figs
    relation.unpersist()
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; prints the figures as JSON."""
    p = argparse.ArgumentParser(prog="lakesieve bench --suite build-cost", description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--parquet", help="a TPC-H lineitem Parquet file or folder")
    src.add_argument(
        "--scale",
        type=float,
        help="generate TPC-H lineitem at this scale factor into WORKDIR/tpch-sf<scale> (reused)",
    )
    p.add_argument("--workdir", default="bench-data", help="where --scale puts the data")
    p.add_argument("--columns", default="l_orderkey,l_partkey,l_shipdate")
    p.add_argument("--types", default="exact,bloom,sieve,zonemap")
    p.add_argument("--groups", type=int, default=64, help="file groups (locations)")
    p.add_argument("--repeat", type=int, default=1, help="runs per figure; the fastest is kept")
    p.add_argument("--json", dest="json_path", help="also write the figures to this file")
    args = p.parse_args(argv)
    parquet = args.parquet
    if parquet is None:
        from lakesieve.demo.tpch import generate_lineitem

        if not args.scale > 0:
            p.error(f"--scale must be positive, got {args.scale:g}")
        parquet = str(generate_lineitem(args.scale, f"{args.workdir}/tpch-sf{args.scale}"))
    figures = run(parquet, args.columns.split(","), args.types.split(","), args.groups, args.repeat)
    text = json.dumps(figures, indent=1)
    print(text)
    if args.json_path:
        with open(args.json_path, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
