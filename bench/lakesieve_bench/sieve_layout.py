"""A Sieve-only benchmark on the full suite's TPC-H layouts: stored size, build, lookup.

For each layout (one table of one format, written as the full suite writes
it, reused when already there) and each column of the full suite, on the
relation read once and cached: a Spark sort of the column, the Sieve build
(the index type's build hook, as ``lakesieve bench --suite full`` times it),
and, on the SAME built index, its stored size and both lookup paths:

* bytes of the stored form (format 2, one blob);
* lookup latency through the planner (``evaluate`` on the bound predicate,
  as the full suite measures it) with the warm path and with the vectorised
  numpy path (the lookup before the warm path existed);
* the locations each path selects per query kind, and the check that both
  paths select exactly the same locations for every query.

Usage::

    python -m lakesieve_bench.sieve_layout --scale 1 --layouts sorted,interleaved \
        --workdir bench-data --json sieve.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.full import FullConfig, write_table


class _Vectorised:
    """A loaded Sieve answered by its numpy path only (the lookup before the warm path)."""

    def __init__(self, index: Any) -> None:
        self.index = index

    def lookup(self, query: Any) -> Any:
        return self.index.lookup_vectorised(query)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _column(
    spark: Any, relation: Any, ptable: Any, col: str, cfg: FullConfig, rows_hint: int | None
) -> dict[str, Any]:
    """Sort, build, stored size and both lookup paths for one column."""
    from lakesieve.contract import registry
    from lakesieve.expressions import bind, resolve_column
    from lakesieve.files.ipc_files import stored_size
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.query.planner import evaluate
    from lakesieve.state.in_use import IndexInUse
    from lakesieve.store.index_log import IndexDefinition
    from pyspark.sql import functions as F

    from lakesieve_bench.queries import KINDS, make_queries, sample_keys

    schema = ptable.schema()
    snapshot = ptable.snapshot()
    spark_type = resolve_column(schema, col, ptable.path).spark_type
    t0 = time.perf_counter()
    relation.select(col).sort(col).write.format("noop").mode("overwrite").save()
    sort_s = time.perf_counter() - t0
    sample, lo, hi, _ = sample_keys(relation, col, max(4 * cfg.queries, 200), cfg.seed)
    queries = make_queries(col, spark_type, sample, lo, hi, cfg.queries, cfg.seed)
    flat = [q for k in KINDS for q in queries[k]]
    bound = [bind(q.where, schema, ptable.path).node for q in flat]
    itype = registry.index_type("sieve")
    params = itype.validate({}, spark_type)
    rel = relation.select(F.col(col).alias("key"), F.col(LOCATION_COLUMN).alias("location"))
    locations = sorted(snapshot.locations)
    t0 = time.perf_counter()
    built = itype.build(spark, rel, spark_type, params, locations, rows_hint)
    build_s = time.perf_counter() - t0
    index = itype.load(built)
    defn = IndexDefinition(f"bench_{col}_sieve", "sieve", col, spark_type, params)
    paths = {"warm": index, "vectorised": _Vectorised(index)}
    out: dict[str, Any] = {
        "key_type": spark_type,
        "sort_seconds": round(sort_s, 3),
        "build_seconds": round(build_s, 3),
        "build_over_sort": round(build_s / max(sort_s, 1e-9), 2),
        "bytes_format2": stored_size(built.files),
        "segments": built.meta.get("segments"),
        "entries": built.meta.get("entries"),
    }
    answers: dict[str, list[Any]] = {}
    for name, obj in paths.items():
        loaded = IndexInUse(defn, None, obj)
        evaluate(bound[0], {col: [loaded]})  # warm-up
        lat: list[float] = []
        got: list[Any] = []
        for node in bound:
            t1 = time.perf_counter()
            ans = evaluate(node, {col: [loaded]})
            lat.append((time.perf_counter() - t1) * 1e6)
            got.append(ans)
        answers[name] = got
        by_kind = {
            k: round(
                statistics.mean(
                    len(a) if a is not None else len(locations)
                    for a, q in zip(got, flat, strict=True)
                    if q.kind == k
                ),
                3,
            )
            for k in KINDS
            if queries[k]
        }
        out[name] = {
            "lookup_p50_us": round(_pct(lat, 0.5), 1),
            "lookup_p99_us": round(_pct(lat, 0.99), 1),
            "selected": by_kind,
        }
    out["paths_agree"] = answers["warm"] == answers["vectorised"]
    return out


def run(
    cfg: FullConfig, fmt: str, say: Callable[[str], None], json_path: str | None
) -> dict[str, Any]:
    """Measure every layout of ``cfg`` (tables reused when ``cfg`` says so), checkpointing to JSON."""
    from lakesieve.demo.tpch import generate_lineitem, with_layout
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.spark.session import get_spark
    from lakesieve.table import open as open_table

    from lakesieve_bench.full import LAYOUT_COLUMNS

    out: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "config": dataclasses.asdict(cfg),
        "layouts": {},
    }
    root = Path(cfg.workdir).resolve()
    src = generate_lineitem(cfg.scale, root / f"tpch-sf{cfg.scale}")
    spark = get_spark()
    src_df = spark.read.parquet(str(src))
    tables = root / f"full-sf{cfg.scale}"
    tables.mkdir(parents=True, exist_ok=True)
    for layout in cfg.layouts:
        path = tables / f"{layout}_{fmt}"
        say(f"[{layout}] table ...")
        base = with_layout(src_df, layout, cfg.groups, cfg.runs).persist()
        try:
            write_table(spark, base, fmt, path, cfg, base.count())
        finally:
            base.unpersist()
        ptable = open_table(path)
        snapshot = ptable.snapshot()
        frame = ptable.view.fmt.read(
            spark, snapshot.units, snapshot.instant.id if snapshot.instant else None, True
        )
        columns = LAYOUT_COLUMNS[layout]
        relation = frame.select(LOCATION_COLUMN, *columns).persist()
        relation.count()
        lay: dict[str, Any] = {}
        try:
            for col in columns:
                say(f"[{layout}] {col} ...")
                lay[col] = _column(spark, relation, ptable, col, cfg, snapshot.rows_upper_bound)
                out["layouts"][layout] = lay
                out["load_average_now"] = [round(x, 2) for x in os.getloadavg()]
                if json_path:
                    Path(json_path).write_text(json.dumps(out, indent=1, default=str))
        finally:
            relation.unpersist()
    return out


def table_rows(out: dict[str, Any]) -> list[str]:
    """Markdown rows of the figures."""
    rows = [
        "| layout | column | sort s | build s | build / sort | stored bytes | "
        "p50 / p99 us numpy path | p50 / p99 us warm path | same selections |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for layout, lay in out["layouts"].items():
        for col, c in lay.items():
            v, w = c["vectorised"], c["warm"]
            rows.append(
                f"| {layout} | {col} | {c['sort_seconds']} | {c['build_seconds']} | "
                f"{c['build_over_sort']} | {c['bytes_format2']:,} | "
                f"{v['lookup_p50_us']} / {v['lookup_p99_us']} | {w['lookup_p50_us']} / "
                f"{w['lookup_p99_us']} | {c['paths_agree']} |"
            )
    return rows


def synthetic(n_keys: int = 300_000, per_kind: int = 200, seed: int = 7) -> dict[str, Any]:
    """The interleaved layout's shape in process (no Spark): stored size and ``lookup`` p50 per kind.

    ``n_keys`` sparse keys with 1-7 rows each, in 1,024 runs over 64
    locations, built by ``build_local``; each query kind is timed on
    ``SieveIndex.lookup`` (warm path) and ``lookup_vectorised`` (numpy path).
    """
    import numpy as np
    import pyarrow as pa
    from lakesieve.files.ipc_files import stored_size
    from lakesieve.indexes.sieve import build_local, load_index
    from lakesieve.model import KeyQuery

    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(4 * n_keys, n_keys, replace=False)).astype(np.int64)
    rows = rng.integers(1, 8, n_keys)
    run_of = np.minimum(np.arange(n_keys) * 1024 // n_keys, 1023)
    names = np.array([f"part=0/fg-{r % 64:02d}-0123456789abcdef0123" for r in run_of])
    built = build_local(pa.array(np.repeat(keys, rows)), np.repeat(names, rows), "bigint", None, 2)
    index = load_index(built)
    span = 4 * n_keys
    kinds: dict[str, list[KeyQuery]] = {
        "point": [KeyQuery("points", values=(int(k),)) for k in rng.choice(keys, per_kind)],
        "in": [
            KeyQuery("points", values=tuple(int(k) for k in rng.choice(keys, 10)))
            for _ in range(per_kind)
        ],
    }
    for frac in (0.0001, 0.001, 0.01):
        w = int(span * frac)
        kinds[f"range_{frac:g}"] = [
            KeyQuery("range", low=int(a), high=int(a) + w)
            for a in rng.integers(0, span - w, per_kind)
        ]
    kinds["range_low"] = [KeyQuery("range", low=int(a)) for a in rng.integers(0, span, per_kind)]
    out: dict[str, Any] = {
        "entries": len(index.entry_loc),
        "bytes_format2": stored_size(built.files),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    for path, fn in (("vectorised", index.lookup_vectorised), ("warm", index.lookup)):
        fn(kinds["point"][0])
        every: list[float] = []
        per: dict[str, float] = {}
        for kind, qs in kinds.items():
            lat = []
            for q in qs:
                t0 = time.perf_counter()
                fn(q)
                lat.append((time.perf_counter() - t0) * 1e6)
            per[kind] = round(statistics.median(lat), 1)
            every += lat
        per["all"] = round(statistics.median(every), 1)
        out[f"p50_us_{path}"] = per
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(
        prog="lakesieve bench --suite sieve-layout", description=__doc__.splitlines()[0]
    )
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--layouts", default="sorted,interleaved")
    p.add_argument("--format", default="hudi")
    p.add_argument("--workdir", default="bench-data")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--json", dest="json_path")
    p.add_argument(
        "--synthetic", action="store_true", help="only the in-process interleaved-shaped index"
    )
    p.add_argument(
        "--stages",
        metavar="PARQUET",
        help="instead: where a Sieve build's time goes against a Spark sort, on this TPC-H "
        "lineitem file (lakesieve_bench.sieve_stages)",
    )
    p.add_argument("--columns", default="l_orderkey,l_partkey,l_shipdate", help="with --stages")
    p.add_argument("--groups", type=int, default=64, help="with --stages: locations")
    p.add_argument("--repeat", type=int, default=2, help="with --stages: runs, the best kept")
    args = p.parse_args(argv)
    if args.synthetic:
        print(json.dumps(synthetic(), indent=1))
        return 0
    if args.stages:
        from lakesieve_bench import sieve_stages as bench_stages

        figures = bench_stages.run(args.stages, args.columns.split(","), args.groups, args.repeat)
        text = json.dumps(figures, indent=1)
        print(text)
        if args.json_path:
            Path(args.json_path).write_text(text)
        return 0
    cfg = FullConfig(
        scale=args.scale,
        workdir=args.workdir,
        queries=args.queries,
        formats=(args.format,),
        layouts=tuple(args.layouts.split(",")),
        index_types=("sieve",),
        reuse_tables=True,
    )
    out = run(cfg, args.format, lambda m: print(m, file=sys.stderr, flush=True), args.json_path)
    print("\n".join(table_rows(out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
