"""lakesieve against the formats' own data skipping, on the same tables, in one run (issue 53).

Started by ``bench/peers/run`` (which sets up the peers' environment first)::

    bench/peers/run --scale 0.1 --json out.json [--layouts interleaved,sorted]
                    [--formats hudi,delta,iceberg] [--files 64] [--reps 5]

Steps, each in its own process where the Spark differs:

1. (lakesieve's Python, pyspark 4.3) TPC-H lineitem at ``--scale`` from
   ``tpchgen-cli``, with a unique record key ``l_key = l_orderkey * 8 +
   l_linenumber`` (in ``l_orderkey`` order) and a random non-key column
   ``r``, cut into ``--files`` locations per layout (*interleaved*: the key
   order cut into ``16 * files`` runs, run i in location i mod files;
   *sorted*: one key range per location) and saved as Parquet;
2. (the peers' Python, Spark 3.5 with the bundles) each format's own Spark
   writer writes each layout, one data file per location, skipping on as its
   docs recommend; then every query runs through the format's own reader,
   and the files and bytes it read come from Spark's own scan metrics;
3. (lakesieve) a Sieve index on ``l_key`` and a Bloom index on ``r`` are
   built on those same tables, and the same queries are planned and read;
4. 1% of the rows are upserted by each format's own writer (which keeps its
   statistics in step inside the commit), then ``lakesieve index refresh``
   brings lakesieve's indexes in step.

Every answer is checked against a plain Spark read of the layout's Parquet
(``same_answer``). Output: one JSON object ``{"meta", "rows", "systems"}``;
``rows`` holds one row per (format, layout, system, query).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

KEY = "l_key"
NONKEY = "r"
#: The queries, in report order, and what each asks.
QUERY_KINDS = {
    "point_key": "l_key = k (the record key)",
    "point_nonkey": "r = v (a random non-key column)",
    "range_0.01pct": "l_key BETWEEN a AND b over 0.01% of the key domain",
    "range_0.1pct": "l_key BETWEEN a AND b over 0.1% of the key domain",
    "in_list": "l_key IN (10 keys)",
    "unprunable": "l_linenumber = 7 AND l_shipmode = 'AIR' (every file holds both values)",
}
#: The lakesieve index answering each query's column.
INDEX_OF = {KEY: "sieve", NONKEY: "bloom"}


def log(msg: str) -> None:
    """One progress line on stderr."""
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def digest(keys: list[int]) -> str:
    """An answer's fingerprint: its record keys, sorted (as ``spark35.digest``)."""
    return hashlib.sha1(",".join(map(str, sorted(keys))).encode()).hexdigest()


def index_folder_bytes(path: str) -> int:
    """Bytes of the table's index store, wherever its format keeps it.

    An Iceberg table in a Hadoop catalog keeps its store in the namespace
    folder (``<namespace>/.lakesieve/indexes/<table>``), not under the table.
    """
    import lakesieve

    root = str(lakesieve.open(path).store.root)
    return folder_bytes(Path(root))


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (checksum files left out)."""
    if not path.exists():
        return 0
    return sum(
        p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.name.endswith(".crc")
    )


# ---------------------------------------------------------------- data


def partition_values(spark: Any, files: int) -> dict[int, int]:
    """For each location 0..files-1, a ``_part`` value that Spark's hash partitioning sends to that partition.

    ``repartition(files, "_part")`` places a row in partition
    ``pmod(hash(_part), files)`` (Murmur3, seed 42: the same in every
    Spark), so each location's rows become one task and one file.
    """
    from pyspark.sql import functions as F

    found: dict[int, int] = {}
    for row in (
        spark.range(0, 200 * files)
        .select("id", F.pmod(F.hash("id"), F.lit(files)).alias("p"))
        .collect()
    ):
        found.setdefault(int(row["p"]), int(row["id"]))
        if len(found) == files:
            break
    return found


def generate_lineitem(scale: float, out: Path) -> Path:
    """TPC-H lineitem at ``scale`` as Parquet, by ``tpchgen-cli`` (beside this Python); reused when present."""
    target = out / "lineitem.parquet"
    if target.exists() and target.stat().st_size > 0:
        return target
    out.mkdir(parents=True, exist_ok=True)
    program = shutil.which("tpchgen-cli") or str(Path(sys.executable).with_name("tpchgen-cli"))
    subprocess.run(
        [program, "parquet", "-s", f"{scale:g}", "--tables=lineitem", f"--output-dir={out}"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return target


def with_location(frame: Any, layout: str, files: int) -> Any:
    """Add ``_loc`` (0 .. files-1): where each row goes in ``layout``.

    The key order is cut into runs of about equal row count at approximate
    quantiles of ``l_key`` (a few hundred cut values reach the driver):
    *sorted* has ``files`` runs, run i in location i; *interleaved* has ``16 *
    files`` runs, run i in location ``i mod files``, so each file holds 16
    separate key ranges (min/max statistics then span almost the whole key
    domain in every file).
    """
    from pyspark.ml.feature import Bucketizer
    from pyspark.sql import functions as F

    runs = files if layout == "sorted" else 16 * files
    if layout not in ("sorted", "interleaved"):
        raise SystemExit(f"unknown layout {layout!r}: choose sorted or interleaved")
    cuts = frame.approxQuantile(KEY, [i / runs for i in range(1, runs)], 1.0 / (50 * runs))
    splits = [-float("inf"), *sorted(set(cuts)), float("inf")]
    keyed = frame.withColumn("_k", F.col(KEY).cast("double"))
    bucketed = Bucketizer(splits=splits, inputCol="_k", outputCol="_run").transform(keyed)
    return bucketed.withColumn("_loc", (F.col("_run").cast("int") % F.lit(files))).drop(
        "_k", "_run"
    )


def prepare(spark: Any, lineitem: Path, work: Path, layout: str, files: int) -> Path:
    """The layout's rows (with ``l_key``, ``r`` and ``_part``) as Parquet; reused when present."""
    from pyspark.sql import functions as F

    out = work / f"src-{layout}-{files}.parquet"
    if (out / "_SUCCESS").exists():
        return out
    base = spark.read.parquet(str(lineitem)).withColumn(
        KEY, F.col("l_orderkey").cast("bigint") * 8 + F.col("l_linenumber").cast("bigint")
    )
    base = base.withColumn(NONKEY, F.pmod(F.xxhash64(F.col(KEY), F.lit("r")), F.lit(10**12)))
    placed = with_location(base, layout, files)
    parts = partition_values(spark, files)
    mapping = spark.createDataFrame(list(parts.items()), "_loc int, _part bigint")
    rows = placed.join(F.broadcast(mapping), on="_loc").drop("_loc")
    rows.write.mode("overwrite").parquet(str(out))
    return out


def make_queries(spark: Any, source: Path, seed: int) -> dict[str, str]:
    """One query of every kind, on keys and values that exist (seeded)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(source))
    stats = frame.agg(F.min(KEY), F.max(KEY), F.count(F.lit(1))).first()
    lo, hi, rows = int(stats[0]), int(stats[1]), int(stats[2])
    sample = frame.select(KEY, NONKEY).sample(fraction=min(1.0, 400 / rows), seed=seed).collect()
    rng = random.Random(seed)
    picks = sorted(sample, key=lambda r: int(r[KEY]))
    key = int(rng.choice(picks)[KEY])
    value = int(rng.choice(picks)[NONKEY])
    in_keys = sorted({int(r[KEY]) for r in rng.sample(picks, min(10, len(picks)))})
    out = {
        "point_key": f"{KEY} = {key}",
        "point_nonkey": f"{NONKEY} = {value}",
        "in_list": f"{KEY} IN ({', '.join(map(str, in_keys))})",
        "unprunable": "l_linenumber = 7 AND l_shipmode = 'AIR'",
    }
    for name, frac in (("range_0.01pct", 0.0001), ("range_0.1pct", 0.001)):
        width = max(1, round((hi - lo + 1) * frac))
        a = rng.randint(lo, hi - width + 1)
        out[name] = f"{KEY} BETWEEN {a} AND {a + width - 1}"
    return {k: out[k] for k in QUERY_KINDS}


def reference(spark: Any, source: Path, queries: dict[str, str]) -> dict[str, tuple[int, str]]:
    """(rows, digest) of each query over the layout's Parquet, read plainly."""
    frame = spark.read.parquet(str(source))
    out = {}
    for name, where in queries.items():
        keys = [int(r[0]) for r in frame.where(where).select(KEY).collect()]
        out[name] = (len(keys), digest(keys))
    return out


def upsert_rows(spark: Any, source: Path, work: Path, fraction_pct: int = 1) -> Path:
    """``fraction_pct``% of the rows (by a hash of the key), ``l_comment`` changed: the upsert's input."""
    from pyspark.sql import functions as F

    out = work / f"{source.stem}-upsert.parquet"
    if (out / "_SUCCESS").exists():
        return out
    frame = spark.read.parquet(str(source))
    picked = frame.where(F.pmod(F.xxhash64(F.col(KEY), F.lit("u")), F.lit(100)) < fraction_pct)
    picked.withColumn("l_comment", F.lit("upserted by the peers benchmark")).write.mode(
        "overwrite"
    ).parquet(str(out))
    return out


# ---------------------------------------------------------------- the peers' process


def run_peers(args: argparse.Namespace, command: str, tasks: list[dict[str, Any]]) -> list[Any]:
    """Run one ``spark35.py`` command over ``tasks`` in the peers' Python; return its results."""
    spec = Path(args.home) / f"{command}-spec.json"
    out = Path(args.home) / f"{command}-out.json"
    spec.write_text(json.dumps(tasks))
    if out.exists():
        out.unlink()
    cmd = [
        args.peers_python,
        str(Path(__file__).with_name("spark35.py")),
        command,
        "--jars",
        args.jars,
        "--warehouse",
        str(Path(args.workdir) / "tables" / "iceberg"),
        "--memory",
        args.memory,
        "--spec",
        str(spec),
        "--out",
        str(out),
    ]
    log(f"peers: {command} ({len(tasks)} tasks)")
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return list(json.loads(out.read_text()))


# ---------------------------------------------------------------- lakesieve


def lakesieve_side(
    spark: Any, fmt: str, path: str, queries: dict[str, str], reps: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Build the two indexes on a table, then plan and read every query; returns (system, rows)."""
    import lakesieve

    table = lakesieve.open(path)
    built: dict[str, Any] = {}
    for column, kind in INDEX_OF.items():
        started = time.perf_counter()
        desc = table.build_index(column, type=kind, name=f"peers_{kind}", spark=spark)
        built[kind] = {
            "build_seconds": time.perf_counter() - started,
            "index_bytes": int(desc.get("size_bytes") or 0),
        }
    everything = table.plan(None)
    files_total = sum(_unit_files(u) for u in everything.units)
    bytes_total = sum(u.size_bytes for u in everything.units)
    rows = []
    for name, where in queries.items():
        column = NONKEY if where.startswith(f"{NONKEY} ") else KEY
        times = []
        keys: list[int] = []
        plan = table.plan(where)
        for _ in range(reps):
            started = time.perf_counter()
            got = table.read(spark, where=where).collect()
            times.append(time.perf_counter() - started)
            keys = [int(r[KEY]) for r in got]
        rows.append(
            {
                "system": "lakesieve",
                "index": INDEX_OF[column] if name != "unprunable" else "none applies",
                "query": name,
                "files_read": sum(_unit_files(u) for u in plan.units),
                "files_total": files_total,
                "bytes_read": sum(u.size_bytes for u in plan.units),
                "bytes_total": bytes_total,
                "seconds": statistics.median(times),
                "rows": len(keys),
                "digest": digest(keys),
            }
        )
    system = {
        "system": "lakesieve",
        "indexes": built,
        "index_bytes": sum(b["index_bytes"] for b in built.values()),
        "index_bytes_on_disk": index_folder_bytes(path),
        "build_seconds": sum(b["build_seconds"] for b in built.values()),
    }
    return system, rows


def _unit_files(unit: Any) -> int:
    return (1 if unit.base_file else 0) + len(unit.log_files) + len(unit.delete_files)


def lakesieve_refresh(spark: Any, path: str, queries: dict[str, str]) -> dict[str, Any]:
    """Seconds for ``Table.refresh`` (what ``lakesieve index refresh`` runs) after the upsert."""
    import lakesieve

    table = lakesieve.open(path)
    started = time.perf_counter()
    results = table.refresh(spark=spark)
    seconds = time.perf_counter() - started
    after = table.plan(queries["point_key"])
    return {
        "refresh_seconds": seconds,
        "actions": sorted({str(getattr(r, "action", "")) for r in results}),
        "point_key_files_after_upsert": sum(_unit_files(u) for u in after.units),
        "index_bytes_after_upsert": index_folder_bytes(path),
    }


# ---------------------------------------------------------------- main


def main() -> None:
    """Run the side-by-side benchmark and write its JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--json", required=True, help="where to write the result")
    p.add_argument("--formats", default="hudi,delta,iceberg")
    p.add_argument("--layouts", default="interleaved,sorted")
    p.add_argument("--files", type=int, default=64, help="data files (locations) per table")
    p.add_argument("--reps", type=int, default=5, help="timed runs per query (the median is kept)")
    p.add_argument("--seed", type=int, default=53)
    p.add_argument("--memory", default="3g", help="driver memory of each Spark")
    p.add_argument("--workdir", default=None, help="data and tables (default: HOME/work-sf<scale>)")
    p.add_argument(
        "--reuse",
        action="store_true",
        help="reuse the tables of an earlier run stopped before its upserts",
    )
    p.add_argument("--peers-python", required=True)
    p.add_argument("--jars", required=True)
    p.add_argument("--home", required=True)
    p.add_argument("--pins", default="")
    args = p.parse_args()
    args.workdir = args.workdir or str(Path(args.home) / f"work-sf{args.scale:g}")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    formats = [f for f in args.formats.split(",") if f]
    layouts = [x for x in args.layouts.split(",") if x]
    os.environ.setdefault(
        "LAKESIEVE_SPARK_CONF", f"spark.driver.memory={args.memory},spark.sql.shuffle.partitions=16"
    )
    from lakesieve.spark.session import get_spark, stop_spark

    started = time.perf_counter()
    lineitem = generate_lineitem(args.scale, work / "tpch")
    spark = get_spark()
    sources, queries, truth, upserts = {}, {}, {}, {}
    for layout in layouts:
        log(f"layout {layout}: preparing")
        sources[layout] = prepare(spark, lineitem, work, layout, args.files)
        queries[layout] = make_queries(spark, sources[layout], args.seed)
        truth[layout] = reference(spark, sources[layout], queries[layout])
        upserts[layout] = upsert_rows(spark, sources[layout], work)
    stop_spark()

    def table_path(fmt: str, layout: str) -> str:
        name = f"{fmt}_{layout}"
        if fmt == "iceberg":
            return str(work / "tables" / "iceberg" / "b" / name)
        return str(work / "tables" / name)

    pairs = [(f, x) for f in formats for x in layouts]
    write_tasks = [
        {"format": f, "source": str(sources[x]), "path": table_path(f, x), "layout": x}
        for f, x in pairs
    ]
    # --reuse: the tables of an earlier run that stopped before its upserts
    cache = work / "written.json"
    cached = json.loads(cache.read_text()) if args.reuse and cache.exists() else None
    if cached is not None and [c["path"] for c in cached] == [t["path"] for t in write_tasks]:
        log("reusing the tables written earlier (--reuse)")
        written = cached
    else:
        cache.unlink(missing_ok=True)
        written = run_peers(args, "write", write_tasks)
        cache.write_text(json.dumps(written))
    query_tasks = [
        {
            "format": f,
            "layout": x,
            "path": table_path(f, x),
            "queries": queries[x],
            "reps": args.reps,
        }
        for f, x in pairs
    ]
    native_cache = work / "native.json"
    cached = json.loads(native_cache.read_text()) if args.reuse and native_cache.exists() else None
    if isinstance(cached, dict) and cached.get("tasks") == query_tasks:
        log("reusing the native answers measured earlier on these tables (--reuse)")
        native = cached["native"]
    else:
        native = run_peers(args, "query", query_tasks)
        native_cache.write_text(json.dumps({"tasks": query_tasks, "native": native}))
    spark = get_spark()
    rows: list[dict[str, Any]] = []
    systems: list[dict[str, Any]] = []
    for (fmt, layout), w, n in zip(pairs, written, native, strict=True):
        path = table_path(fmt, layout)
        for name in QUERY_KINDS:
            q = n["queries"][name]
            rows.append(
                {
                    "format": fmt,
                    "layout": layout,
                    "system": "native",
                    "index": "format statistics",
                    "query": name,
                    "where": queries[layout][name],
                    "files_read": q["files_read"],
                    "files_total": n["files_total"],
                    "bytes_read": q["bytes_read"],
                    "bytes_total": n["bytes_total"],
                    "seconds": q["seconds"],
                    "rows": q["rows"],
                    "same_answer": (q["rows"], q["digest"]) == truth[layout][name],
                }
            )
        log(f"lakesieve: {fmt} {layout}")
        system, ls_rows = lakesieve_side(spark, fmt, path, queries[layout], args.reps)
        for r in ls_rows:
            got = (r.pop("rows"), r.pop("digest"))
            rows.append(
                {
                    "format": fmt,
                    "layout": layout,
                    **r,
                    "where": queries[layout][r["query"]],
                    "rows": got[0],
                    "same_answer": got == truth[layout][r["query"]],
                }
            )
        systems.append({"format": fmt, "layout": layout, **system})
        systems.append(
            {
                "format": fmt,
                "layout": layout,
                "system": "native",
                "metadata_bytes": w["metadata_bytes"],
                "write_seconds": w["write_seconds"],
            }
        )
    stop_spark()
    partial = {"meta": {"partial": "written before the upserts"}, "rows": rows, "systems": systems}
    Path(args.json).write_text(json.dumps(partial, indent=1))
    cache.unlink()  # the upserts change the tables
    native_cache.unlink(missing_ok=True)
    upserted = run_peers(
        args,
        "upsert",
        [{"format": f, "source": str(upserts[x]), "path": table_path(f, x)} for f, x in pairs],
    )
    spark = get_spark()
    for (fmt, layout), u in zip(pairs, upserted, strict=True):
        log(f"lakesieve refresh: {fmt} {layout}")
        refreshed = lakesieve_refresh(spark, table_path(fmt, layout), queries[layout])
        for s in systems:
            if (s["format"], s["layout"]) != (fmt, layout):
                continue
            if s["system"] == "native":
                s["in_step_seconds"] = u["upsert_seconds"]
                s["in_step_how"] = "inside the upsert commit (the commit's seconds)"
                s["metadata_bytes_after_upsert"] = u["metadata_bytes"]
            else:
                s["in_step_seconds"] = refreshed["refresh_seconds"]
                s["in_step_how"] = "lakesieve index refresh after the commit"
                s["refresh"] = refreshed
    stop_spark()
    meta = {
        "scale": args.scale,
        "files": args.files,
        "layouts": layouts,
        "formats": formats,
        "reps": args.reps,
        "queries": queries,
        "query_kinds": QUERY_KINDS,
        "peers": args.pins,
        "lakesieve_python": platform.python_version(),
        "lakesieve_pyspark": _pyspark_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "seconds": time.perf_counter() - started,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.json).write_text(
        json.dumps({"meta": meta, "rows": rows, "systems": systems}, indent=1)
    )
    bad = [r for r in rows if not r["same_answer"]]
    log(f"wrote {len(rows)} rows to {args.json}; answers differing: {len(bad)}")
    sys.exit(1 if bad else 0)


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


if __name__ == "__main__":
    main()
