"""``lakesieve bench --suite full``: lakesieve against native statistics and full scans on TPC-H.

One run, one Spark session, all figures compared as ratios or counts:

1. ``tpchgen-cli`` lineitem at the chosen scale, placed in four layouts
   (:data:`lakesieve.demo.tpch.LAYOUTS`) and written once per format (Hudi, Delta,
   Iceberg) as ONE commit with one location per bucket.
2. **Per layout** (measured once, on the first format's table; the (key,
   location) relation of a layout is the same in every format up to location
   names, which step 3 checks): the relation is read once and cached; for
   every indexed column a plain Spark sort of the column, every index type
   built from the cached relation by the index type's own build hook (timed),
   its size, lookup latency p50/p99, the locations it selects per query kind,
   the ideal count (ground truth computed in Spark, not by an index) and
   false negatives against that truth for every query.
3. **Per format x layout**: the write; the location -> bucket map read from
   the data files' footers and the check that every bucket holds the same
   rows and key ranges as in the first format; the format's own statistics
   pruning (:mod:`lakesieve_bench.native`) for every query; a Sieve index on
   ``l_orderkey`` built through the product path (``Table.build_index``,
   table read included); end-to-end reads through lakesieve for a sample of
   queries, against a Spark full scan of the same files and a Spark read of
   the files the format's own statistics select. Every pruned read (every
   index type, and native) is compared with the full scan: rows and a hash
   sum must be equal. Reads of an identical file selection run once.
4. Peak driver memory of a Sieve build and of lookups (:mod:`lakesieve_bench.memory`).

The suite's modules: this one holds its settings, the tables it writes and the
per-layout phase (step 2); :mod:`lakesieve_bench.full_formats` the per-format
phase (step 3) on the timed reads of :mod:`lakesieve_bench.full_reads`;
:mod:`lakesieve_bench.full_run` runs the whole suite; and
:mod:`lakesieve_bench.full_targets` states its figures against the targets.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakesieve_bench.queries import KINDS, BenchQuery, make_queries, sample_keys

FORMATS = ("hudi", "delta", "iceberg")
INDEX_TYPES = ("sieve", "zonemap", "bloom", "exact")
COLUMNS = ("l_orderkey", "l_partkey", "l_shipdate")
#: Columns indexed per layout: the ``shipdate`` layout is indexed on the keys it is not sorted by.
LAYOUT_COLUMNS = {
    "sorted": COLUMNS,
    "interleaved": COLUMNS,
    "hashed": COLUMNS,
    "shipdate": ("l_orderkey", "l_partkey"),
}
E2E_COLUMN = "l_orderkey"
PRODUCT_INDEX = "bench_l_orderkey_sieve"


@dataclass
class FullConfig:
    """What one run of the full suite measures.

    Attributes:
        scale: TPC-H scale factor.
        workdir: where the generated data and the tables go.
        queries: queries per kind and column.
        seed: seed of the query set.
        formats: formats written (the first one carries the per-layout figures).
        layouts: layouts written.
        index_types: index types built.
        e2e_kinds: query kinds read end to end (one query each, on ``l_orderkey``).
        check_kinds: query kinds read and checked against full scans on the other columns.
        native_check: queries per kind on which the native model is checked against the library.
        groups: locations per table; runs: key runs of the interleaved layout.
        reuse_tables: keep tables an earlier run wrote with the same settings.
    """

    scale: float = 1.0
    workdir: str = "bench-data"
    queries: int = 100
    seed: int = 42
    formats: tuple[str, ...] = FORMATS
    layouts: tuple[str, ...] = ("sorted", "interleaved", "hashed", "shipdate")
    index_types: tuple[str, ...] = INDEX_TYPES
    e2e_kinds: tuple[str, ...] = ("point", "range_0.01pct", "range_1pct")
    check_kinds: tuple[str, ...] = ("point",)
    native_check: int = 3
    groups: int = 64
    runs: int = 1024
    reuse_tables: bool = False


def quick_config(workdir: str = "bench-data", seed: int = 42) -> FullConfig:
    """The ``--quick`` settings: SF 0.01, 16 locations (256 runs), 10 queries per kind, fewer reads."""
    return FullConfig(
        scale=0.01,
        workdir=workdir,
        queries=10,
        seed=seed,
        groups=16,
        runs=256,
        e2e_kinds=("point",),
        check_kinds=(),
        native_check=1,
    )


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))] if s else 0.0


def mean(values: list[int] | list[float]) -> float:
    """The mean rounded to 3 digits; 0.0 for no values."""
    return round(statistics.fmean(values), 3) if values else 0.0


def _ipc_bytes(tables: dict[str, Any]) -> int:
    """Bytes of the index files as the index store writes them (one Arrow IPC file per table)."""
    import pyarrow as pa
    from pyarrow import ipc

    total = 0
    for t in tables.values():
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, t.schema) as writer:
            writer.write_table(t)
        total += sink.getvalue().size
    return total


def _remove_table(path: Path, fmt: str) -> None:
    """Delete a table an earlier run wrote, and its indexes where the format keeps them outside it."""
    from lakesieve.contract import registry

    root = registry.open_format(str(path.resolve()), {"format": fmt}).index_root()
    if root and Path(root).exists() and not Path(root).resolve().is_relative_to(path.resolve()):
        shutil.rmtree(root)
    if path.exists():
        shutil.rmtree(path)


def write_table(
    spark: Any, base: Any, fmt: str, path: Path, cfg: FullConfig, rows: int
) -> dict[str, Any]:
    """Write the layout's rows as one table of ``fmt`` at ``path`` (or reuse one an earlier run wrote)."""
    import json

    from lakesieve.demo.tpch import BUCKET_COLUMN
    from lakesieve.model import WriteOptions
    from lakesieve.table import write

    marker = path.with_name(path.name + ".done.json")
    want = {"scale": cfg.scale, "rows": rows, "groups": cfg.groups, "runs": cfg.runs}
    if cfg.reuse_tables and marker.exists() and path.exists():
        try:
            if json.loads(marker.read_text()) == want:
                return {"write_seconds": None, "reused": True}
        except ValueError:
            pass
    _remove_table(path, fmt)
    marker.unlink(missing_ok=True)
    mode = "bulk_insert" if fmt == "hudi" else "append"
    options = WriteOptions(
        mode=mode,
        record_key=("l_orderkey", "l_linenumber"),
        file_groups=cfg.groups,
        bucket_column=BUCKET_COLUMN,
        table_name="lineitem",
        small_file_limit_bytes=0,
    )
    t0 = time.perf_counter()
    write(path, base, format=fmt, options=options, spark=spark)
    seconds = round(time.perf_counter() - t0, 2)
    marker.write_text(json.dumps(want))
    return {"write_seconds": seconds, "reused": False}


@dataclass
class ColumnRun:
    """What the per-layout phase keeps of one column for the per-format phase."""

    column: str
    spark_type: str
    queries: dict[str, list[BenchQuery]]
    selections: dict[str, dict[str, frozenset[str] | None]] = field(default_factory=dict)
    lookup_ms: dict[str, dict[str, float]] = field(default_factory=dict)


def _index_figures(
    spark: Any,
    relation: Any,
    col: str,
    spark_type: str,
    schema: Any,
    table_path: str,
    types: tuple[str, ...],
    flat: list[BenchQuery],
    truth: list[frozenset[str]],
    locations: frozenset[str],
    keep: set[str],
    say: Callable[[str], None],
    rows_hint: int | None = None,
) -> tuple[
    dict[str, Any], dict[str, dict[str, frozenset[str] | None]], dict[str, dict[str, float]]
]:
    """Build every index type on ``col`` from the cached relation and answer the query set with each.

    Builds get what the framework's builds get: the snapshot's locations and
    ``rows_hint`` (its metadata's row count).
    """
    from lakesieve.contract import registry
    from lakesieve.expressions import bind
    from lakesieve.model import LOCATION_COLUMN, BuiltIndex
    from lakesieve.query.planner import evaluate
    from lakesieve.state.in_use import IndexInUse
    from lakesieve.store.index_log import IndexDefinition
    from pyspark.sql import functions as F

    bound = [bind(q.where, schema, table_path).node for q in flat]
    rel = relation.select(F.col(col).alias("key"), F.col(LOCATION_COLUMN).alias("location"))
    figs: dict[str, Any] = {}
    selections: dict[str, dict[str, frozenset[str] | None]] = {}
    lookups: dict[str, dict[str, float]] = {}
    total = len(locations)
    for t in types:
        say(f"    {t} on {col} ...")
        itype = registry.index_type(t)
        params = itype.validate({}, spark_type)
        t0 = time.perf_counter()
        built = itype.build(spark, rel, spark_type, params, sorted(locations), rows_hint)
        build_s = time.perf_counter() - t0
        size = _ipc_bytes(built.files)
        obj = itype.load(BuiltIndex(files=built.files, meta=dict(built.meta)))
        loaded = IndexInUse(
            IndexDefinition(f"bench_{col}_{t}", t, col, spark_type, params), None, obj
        )
        evaluate(bound[0], {col: [loaded]})  # warm-up
        lat: list[float] = []
        by_kind: dict[str, list[int]] = {k: [] for k in KINDS}
        alls: dict[str, int] = dict.fromkeys(KINDS, 0)
        false_neg = 0
        sel_keep: dict[str, frozenset[str] | None] = {}
        lat_keep: dict[str, float] = {}
        for q, node, true in zip(flat, bound, truth, strict=True):
            t1 = time.perf_counter()
            ans = evaluate(node, {col: [loaded]})
            ms = (time.perf_counter() - t1) * 1000.0
            lat.append(ms)
            chosen = locations if ans is None else (ans & locations)
            if ans is None:
                alls[q.kind] += 1
            if not true <= chosen:
                false_neg += 1
            by_kind[q.kind].append(len(chosen))
            if q.where in keep:
                sel_keep[q.where] = None if ans is None else frozenset(chosen)
                lat_keep[q.where] = ms
        selections[t] = sel_keep
        lookups[t] = lat_keep
        figs[t] = {
            "build_seconds": round(build_s, 3),
            "size_bytes": size,
            "lookup_p50_ms": round(_pct(lat, 0.5), 4),
            "lookup_p99_ms": round(_pct(lat, 0.99), 4),
            "selected": {k: mean(v) for k, v in by_kind.items()},
            "answered_all": alls,
            "false_negatives": false_neg,
            "locations_total": total,
            "details": {k: v for k, v in built.meta.items() if isinstance(v, (int, float, str))},
        }
    return figs, selections, lookups


def layout_phase(
    spark: Any,
    layout: str,
    ptable: Any,
    cfg: FullConfig,
    say: Callable[[str], None],
    out: dict[str, Any],
) -> list[ColumnRun]:
    """Figures measured once per layout on the first format's table."""
    from lakesieve.contract.format_read import read_columns
    from lakesieve.expressions import resolve_column
    from lakesieve.measure.compare import column_compressed_bytes
    from lakesieve.model import LOCATION_COLUMN

    from lakesieve_bench.truth import true_locations

    snapshot = ptable.snapshot()
    inst = snapshot.instant
    schema = ptable.schema()
    columns = LAYOUT_COLUMNS[layout]
    t0 = time.perf_counter()
    frame = read_columns(ptable.view.fmt, spark, snapshot.units, inst.id if inst else None, columns)
    relation = frame.select(LOCATION_COLUMN, *columns).persist()
    rows = relation.count()
    out["relation_rows"] = rows
    out["relation_read_seconds"] = round(time.perf_counter() - t0, 2)
    locations = snapshot.locations
    out["locations"] = len(locations)
    runs: list[ColumnRun] = []
    cols_out: dict[str, Any] = {}
    try:
        for col in columns:
            say(f"  [{layout}] column {col}")
            spark_type = resolve_column(schema, col, ptable.path).spark_type
            t0 = time.perf_counter()
            relation.select(col).sort(col).write.format("noop").mode("overwrite").save()
            sort_s = time.perf_counter() - t0
            sample, lo, hi, _ = sample_keys(relation, col, max(4 * cfg.queries, 200), cfg.seed)
            queries = make_queries(col, spark_type, sample, lo, hi, cfg.queries, cfg.seed)
            flat = [q for k in KINDS for q in queries[k]]
            t0 = time.perf_counter()
            truth = true_locations(
                spark, relation, col, spark_type, flat, max(1, round((hi - lo + 1) * 0.0001))
            )
            truth_s = time.perf_counter() - t0
            col_bytes, col_how = column_compressed_bytes(ptable, snapshot, col)
            kinds = cfg.e2e_kinds if col == E2E_COLUMN else cfg.check_kinds
            keep = {queries[k][0].where for k in kinds if queries[k]}
            figs, sels, lookups = _index_figures(
                spark,
                relation,
                col,
                spark_type,
                schema,
                ptable.path,
                cfg.index_types,
                flat,
                truth,
                locations,
                keep,
                say,
                snapshot.rows_upper_bound,
            )
            ideal = {
                k: mean([len(tr) for q, tr in zip(flat, truth, strict=True) if q.kind == k])
                for k in KINDS
            }
            for f in figs.values():
                f["build_over_sort"] = round(f["build_seconds"] / max(sort_s, 1e-9), 2)
                f["size_share_of_column"] = (
                    round(f["size_bytes"] / col_bytes, 5) if col_bytes else None
                )
                f["selected_over_ideal"] = {
                    k: (round(v / ideal[k], 3) if ideal[k] else None)
                    for k, v in f["selected"].items()
                }
            exact = figs.get("exact")
            if exact:
                for f in figs.values():
                    f["size_over_exact"] = round(f["size_bytes"] / max(1, exact["size_bytes"]), 5)
                    f["selected_over_exact"] = {
                        k: (round(v / exact["selected"][k], 3) if exact["selected"][k] else None)
                        for k, v in f["selected"].items()
                    }
            cols_out[col] = {
                "key_type": spark_type,
                "domain": [lo, hi],
                "spark_sort_seconds": round(sort_s, 2),
                "column_compressed_bytes": col_bytes,
                "column_compressed_bytes_source": col_how,
                "truth_seconds": round(truth_s, 2),
                "ideal": ideal,
                "examples": {k: v[0].where for k, v in queries.items() if v},
                "types": figs,
            }
            runs.append(ColumnRun(col, spark_type, queries, sels, lookups))
    finally:
        relation.unpersist()
    out["columns"] = cols_out
    return runs
