"""``lakesieve bench --suite full``: lakesieve against native statistics and full scans on TPC-H.

One run, one Spark session, all figures compared as ratios or counts:

1. ``tpchgen-cli`` lineitem at the chosen scale, placed in four layouts
   (:data:`lakesieve.tpch.LAYOUTS`) and written once per format (Hudi, Delta,
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
   pruning (:mod:`lakesieve.bench_native`) for every query; a Sieve index on
   ``l_orderkey`` built through the product path (``Table.build_index``,
   table read included); end-to-end reads through lakesieve for a sample of
   queries, against a Spark full scan of the same files and a Spark read of
   the files the format's own statistics select. Every pruned read (every
   index type, and native) is compared with the full scan: rows and a hash
   sum must be equal. Reads of an identical file selection run once.
4. Peak driver memory of a Sieve build and of lookups (:mod:`lakesieve.bench_memory`).
"""

from __future__ import annotations

import dataclasses
import io
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakesieve.bench_queries import KINDS, BenchQuery, make_queries, sample_keys

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


def _mean(values: list[int] | list[float]) -> float:
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


def machine() -> dict[str, Any]:
    """The machine the run is on."""
    import pyspark

    mem = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "memory_gib": mem,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def _remove_table(path: Path, fmt: str) -> None:
    """Delete a table an earlier run wrote, and its indexes where the format keeps them outside it."""
    from lakesieve import registry

    root = registry.open_format(str(path.resolve()), {"format": fmt}).index_root()
    if root and Path(root).exists() and not Path(root).resolve().is_relative_to(path.resolve()):
        shutil.rmtree(root)
    if path.exists():
        shutil.rmtree(path)


def _write_table(
    spark: Any, base: Any, fmt: str, path: Path, cfg: FullConfig, rows: int
) -> dict[str, Any]:
    import json

    from lakesieve.model import WriteOptions
    from lakesieve.table import write
    from lakesieve.tpch import BUCKET_COLUMN

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


def _local(table: Any, unit: Any) -> str | None:
    path = unit.base_file
    if not path:
        return None
    if path.startswith("file://"):
        path = path[len("file://") :]
    return path if os.path.isabs(path) else os.path.join(table.path, path)


def _buckets(
    table: Any, snapshot: Any, columns: tuple[str, ...]
) -> tuple[dict[str, int], dict[int, list[Any]]]:
    """``location -> bucket`` and ``bucket -> [rows, (min, max) per column]`` from the data files' footers."""
    import pyarrow.parquet as pq
    from lakesieve.bench_native import _footer_bounds
    from lakesieve.errors import LakesieveError
    from lakesieve.tpch import BUCKET_COLUMN

    loc_bucket: dict[str, int] = {}
    per_bucket: dict[int, list[Any]] = {}
    for unit in snapshot.units:
        path = _local(table, unit)
        if path is None:
            raise LakesieveError(f"location {unit.location} of {table.path} has no base file")
        bounds = _footer_bounds([path], [BUCKET_COLUMN, *columns])
        b = bounds[BUCKET_COLUMN][0]
        if b is None or b[0] != b[1]:
            raise LakesieveError(f"data file {path} holds more than one bucket")
        loc_bucket[unit.location] = b[0]
        entry = per_bucket.setdefault(b[0], [0, *[None] * len(columns)])
        entry[0] += pq.ParquetFile(path).metadata.num_rows
        for i, c in enumerate(columns):
            got = bounds[c][0]
            old = entry[i + 1]
            entry[i + 1] = (
                got if old is None else (min(old[0], got[0]), max(old[1], got[1])) if got else old
            )
    return loc_bucket, per_bucket


def spark_action_floor(spark: Any, repeats: int = 5) -> float:
    """Median seconds of the reads' aggregate over a one-row local DataFrame: Spark's cost per read.

    A pruned read through Spark pays about this much whatever it reads, so
    ``full scan / floor`` is about the most any index can show on the Spark
    read path (about: single reads vary around it by tens of milliseconds).
    """
    one = spark.createDataFrame([(1, 1)], "l_orderkey bigint, l_linenumber int")
    _, secs = _median_time(lambda: _agg(one), repeats)
    return secs


def _agg(frame: Any) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)), F.sum(F.hash("l_orderkey", "l_linenumber"))).first()
    return int(row[0]), int(row[1] or 0)


ARROW_COLUMNS = ("l_orderkey", "l_linenumber")
ARROW_REPEATS = 3


def _arrow_key(tbl: Any) -> list[tuple[int, int]]:
    """The (l_orderkey, l_linenumber) pairs of an Arrow result, sorted: equal results have equal keys."""
    return sorted(
        zip(
            tbl.column("l_orderkey").to_pylist(),
            tbl.column("l_linenumber").to_pylist(),
            strict=True,
        )
    )


def _median_time(fn: Callable[[], Any], repeats: int = ARROW_REPEATS) -> tuple[Any, float]:
    """``(last result, median seconds)`` of ``repeats`` calls."""
    times, got = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return got, statistics.median(times)


def _arrow_reads(
    table: Any, snap: Any, native: Any, q: BenchQuery, want_rows: int
) -> dict[str, Any]:
    """The same query with no Spark job: lakesieve's driver-side read against Arrow full and native scans.

    - ``lakesieve``: ``Table.plan`` + ``Table.read_plan_arrow`` (the product
      path: every selected unit through the format plugin's unit reader);
    - ``full_scan``: one ``pyarrow.dataset`` scan of every data file of the
      snapshot, filter pushed down (row-group statistics used), multi-threaded;
    - ``native``: the format library's own statistics pruning, then the same
      ``pyarrow.dataset`` scan of the files it kept.

    Each is the median of :data:`ARROW_REPEATS` runs. The lakesieve and
    native results are compared with the full scan (sorted keys), and the
    full scan's row count with Spark's.
    """
    import pyarrow.dataset as ds
    from lakesieve.predicate import bind, to_arrow

    bound = bind(q.where, table.schema(), table.path)
    expr = to_arrow(bound)
    files = [p for p in (_local(table, u) for u in snap.units) if p]

    def scan(paths: list[str]) -> Any:
        return ds.dataset(paths, format="parquet").to_table(
            columns=list(ARROW_COLUMNS), filter=expr
        )

    full, full_s = _median_time(lambda: scan(files))

    def lakesieve_read() -> Any:
        plan = table.plan(q.where)
        return plan, table.read_plan_arrow(plan, columns=list(ARROW_COLUMNS))

    (plan, got), sieve_s = _median_time(lakesieve_read)

    def native_read() -> Any:
        keep = native.api(q)
        chosen = [p for p in files if os.path.basename(p) in keep]
        return len(chosen), scan(chosen)

    (n_native, nat), native_s = _median_time(native_read)
    want = _arrow_key(full)
    return {
        "repeats": ARROW_REPEATS,
        "rows": full.num_rows,
        "full_scan_rows_equal_spark": full.num_rows == want_rows,
        "full_scan_seconds": round(full_s, 4),
        "native": {
            "files": n_native,
            "seconds": round(native_s, 4),
            "equal": _arrow_key(nat) == want,
        },
        "lakesieve": {
            "files": plan.locations_selected,
            "seconds": round(sieve_s, 4),
            "equal": _arrow_key(got) == want and full.num_rows == want_rows,
            "speedup_vs_arrow_full": round(full_s / max(sieve_s, 1e-9), 2),
            "speedup_vs_arrow_native": round(native_s / max(sieve_s, 1e-9), 2),
        },
    }


class _Reader:
    """Timed reads of one table; a selection of files already read is not read again."""

    def __init__(self, table: Any, spark: Any) -> None:
        self.table = table
        self.spark = spark
        self.base_plan = table.plan(None)
        self.cache: dict[tuple[str, frozenset[str]], tuple[tuple[int, int], float]] = {}

    def read_units(self, where: str, units: tuple[Any, ...]) -> tuple[tuple[int, int], float, bool]:
        """``(result, seconds, shared)``: the rows of ``units`` matching ``where``."""
        from lakesieve.predicate import bind

        key = (where, frozenset(u.location for u in units))
        if key in self.cache:
            res, secs = self.cache[key]
            return res, secs, True
        t0 = time.perf_counter()
        plan = dataclasses.replace(
            self.base_plan,
            units=tuple(units),
            bound=bind(where, self.table.schema(), self.table.path),
        )
        res = _agg(self.table.read_plan(plan, self.spark))
        secs = time.perf_counter() - t0
        self.cache[key] = (res, secs)
        return res, secs, False


@dataclass
class _ColumnRun:
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
    from lakesieve import registry
    from lakesieve.model import LOCATION_COLUMN, BuiltIndex
    from lakesieve.planner import LoadedIndex, evaluate
    from lakesieve.predicate import bind
    from lakesieve.store import IndexDefinition
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
        loaded = LoadedIndex(
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
            "selected": {k: _mean(v) for k, v in by_kind.items()},
            "answered_all": alls,
            "false_negatives": false_neg,
            "locations_total": total,
            "details": {k: v for k, v in built.meta.items() if isinstance(v, (int, float, str))},
        }
    return figs, selections, lookups


def _layout_phase(
    spark: Any,
    layout: str,
    ptable: Any,
    cfg: FullConfig,
    say: Callable[[str], None],
    out: dict[str, Any],
) -> list[_ColumnRun]:
    """Figures measured once per layout on the first format's table."""
    from lakesieve import registry
    from lakesieve.bench_truth import true_locations
    from lakesieve.compare import column_compressed_bytes
    from lakesieve.model import LOCATION_COLUMN
    from lakesieve.predicate import resolve_column

    snapshot = ptable.snapshot()
    inst = snapshot.instant
    schema = ptable.schema()
    columns = LAYOUT_COLUMNS[layout]
    t0 = time.perf_counter()
    frame = registry.table_format(ptable.ref).read(
        spark, snapshot.units, inst.id if inst else None, True
    )
    relation = frame.select(LOCATION_COLUMN, *columns).persist()
    rows = relation.count()
    out["relation_rows"] = rows
    out["relation_read_seconds"] = round(time.perf_counter() - t0, 2)
    locations = snapshot.locations
    out["locations"] = len(locations)
    runs: list[_ColumnRun] = []
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
                k: _mean([len(tr) for q, tr in zip(flat, truth, strict=True) if q.kind == k])
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
            runs.append(_ColumnRun(col, spark_type, queries, sels, lookups))
    finally:
        relation.unpersist()
    out["columns"] = cols_out
    return runs


def _native_figures(native: Any, runs: list[_ColumnRun], cfg: FullConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"how": native.how, "files": len(native.files), "columns": {}}
    for run in runs:
        check = native.check(run.queries, cfg.native_check)
        sel = {k: _mean([len(native.select(q)) for q in qs]) for k, qs in run.queries.items()}
        out["columns"][run.column] = {"selected": sel, "check": check}
    return out


def _format_phase(
    spark: Any,
    fmt: str,
    layout: str,
    path: Path,
    runs: list[_ColumnRun],
    primary: tuple[dict[str, int], dict[int, list[Any]]] | None,
    cfg: FullConfig,
    say: Callable[[str], None],
    res: dict[str, Any],
    memory_probe: bool,
) -> tuple[dict[str, int], dict[int, list[Any]]]:
    """Per format x layout: layout check, native pruning, product Sieve build, end-to-end reads."""
    from lakesieve.bench_memory import jvm_peak_bytes, lookup_memory, measure
    from lakesieve.bench_native import native_stats
    from lakesieve.errors import LakesieveError
    from lakesieve.table import open as open_table

    columns = LAYOUT_COLUMNS[layout]
    table = open_table(path)
    snap = table.snapshot()
    res["commits"] = len(table.timeline())
    res["data_files"] = len(snap.units)
    res["bytes"] = sum(u.size_bytes for u in snap.units)
    loc_bucket, per_bucket = _buckets(table, snap, columns)
    if primary is None:
        res["layout_check"] = "reference (first format)"
    else:
        res["layout_check"] = (
            "same rows and key ranges per bucket" if per_bucket == primary[1] else "DIFFERENT"
        )
    bucket_units: dict[int, list[Any]] = {}
    for u in snap.units:
        bucket_units.setdefault(loc_bucket[u.location], []).append(u)
    ref_loc_bucket = loc_bucket if primary is None else primary[0]

    say(f"  [{layout}/{fmt}] native statistics ...")
    native = native_stats(fmt, str(path), list(columns))
    res["native"] = _native_figures(native, runs, cfg)

    say(f"  [{layout}/{fmt}] Sieve on {E2E_COLUMN} through Table.build_index ...")
    t0 = time.perf_counter()
    if memory_probe:
        desc, mem = measure(
            lambda: table.build_index(E2E_COLUMN, type="sieve", name=PRODUCT_INDEX, spark=spark)
        )
        res["sieve_build_memory"] = {**mem, "jvm_peak_bytes": jvm_peak_bytes(spark)}
    else:
        desc = table.build_index(E2E_COLUMN, type="sieve", name=PRODUCT_INDEX, spark=spark)
    res["sieve_product_build_seconds"] = round(time.perf_counter() - t0, 2)
    res["sieve_product_size_bytes"] = desc.get("size_bytes")
    if memory_probe:
        run0 = next(r for r in runs if r.column == E2E_COLUMN)
        wheres = [q.where for k in ("point", "range_0.1pct") for q in run0.queries[k][:25]]
        res["sieve_lookup_memory"] = lookup_memory(str(path), wheres)

    reader = _Reader(table, spark)
    res["spark_action_floor_seconds"] = round(spark_action_floor(spark), 4)

    def units_of(sel: frozenset[str] | None) -> tuple[Any, ...]:
        if sel is None:
            return tuple(snap.units)
        out = []
        for loc in sel:
            b = ref_loc_bucket.get(loc)
            if b is None:
                raise LakesieveError(f"location {loc} of the first format has no bucket")
            out.extend(bucket_units.get(b, []))
        return tuple(sorted(out, key=lambda u: u.location))

    checks: list[dict[str, Any]] = []
    for run in runs:
        kinds = cfg.e2e_kinds if run.column == E2E_COLUMN else cfg.check_kinds
        for kind in kinds:
            if not run.queries[kind]:
                continue
            q = run.queries[kind][0]
            say(f"  [{layout}/{fmt}] {kind}: {q.where[:70]}")
            want, full_s, _ = reader.read_units(q.where, tuple(snap.units))
            t0 = time.perf_counter()
            files = native.api(q)  # the format library itself, timed
            native_plan_s = time.perf_counter() - t0
            nunits = tuple(
                u for u in snap.units if u.base_file and os.path.basename(u.base_file) in files
            )
            got_n, native_read_s, _ = reader.read_units(q.where, nunits)
            entry: dict[str, Any] = {
                "column": run.column,
                "kind": kind,
                "where": q.where,
                "rows": want[0],
                "full_scan_seconds": round(full_s, 3),
                "native": {
                    "files": len(nunits),
                    "seconds": round(native_plan_s + native_read_s, 3),
                    "equal": got_n == want,
                },
                "indexes": {},
            }
            for t in cfg.index_types:
                sel = run.selections[t].get(q.where)
                units = units_of(sel)
                got, secs, shared = reader.read_units(q.where, units)
                secs += run.lookup_ms[t].get(q.where, 0.0) / 1000.0
                entry["indexes"][t] = {
                    "files": len(units),
                    "seconds": round(secs, 3),
                    "equal": got == want,
                    "read_shared": shared,
                    "speedup_vs_full": round(full_s / max(secs, 1e-9), 2),
                    "speedup_vs_native": round(
                        (native_plan_s + native_read_s) / max(secs, 1e-9), 2
                    ),
                }
            if run.column == E2E_COLUMN:
                t0 = time.perf_counter()
                plan = table.plan(q.where)
                got = _agg(table.read_plan(plan, spark))
                secs = time.perf_counter() - t0
                expected = (
                    units_of(run.selections["sieve"].get(q.where))
                    if "sieve" in run.selections
                    else None
                )
                entry["sieve_product"] = {
                    "files": plan.locations_selected,
                    "seconds": round(secs, 3),
                    "equal": got == want,
                    "same_files_as_layout_sieve": (
                        expected is not None
                        and {u.location for u in expected} == {u.location for u in plan.units}
                    ),
                    "speedup_vs_full": round(full_s / max(secs, 1e-9), 2),
                    "speedup_vs_native": round(
                        (native_plan_s + native_read_s) / max(secs, 1e-9), 2
                    ),
                }
                arrow = _arrow_reads(table, snap, native, q, want[0])
                lk = arrow["lakesieve"]
                lk["speedup_vs_spark_full"] = round(full_s / max(lk["seconds"], 1e-9), 2)
                lk["speedup_vs_spark_native"] = round(
                    (native_plan_s + native_read_s) / max(lk["seconds"], 1e-9), 2
                )
                entry["arrow"] = arrow
            checks.append(entry)
    res["reads"] = checks
    bad = [
        f"{c['column']} {c['kind']} {name}"
        for c in checks
        for name, r in [
            *c["indexes"].items(),
            ("native", c["native"]),
            ("sieve_product", c.get("sieve_product")),
            ("arrow_lakesieve", (c.get("arrow") or {}).get("lakesieve")),
            ("arrow_native", (c.get("arrow") or {}).get("native")),
        ]
        if r is not None and not r["equal"]
    ]
    res["reads_unequal"] = bad
    return loc_bucket, per_bucket


def run_full(
    cfg: FullConfig,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the full suite and return its figures (one JSON-ready dict).

    ``checkpoint`` is called with the figures so far after every layout.
    """
    from lakesieve.errors import LakesieveError
    from lakesieve.session import get_spark
    from lakesieve.tpch import LAYOUT_DESCRIPTIONS, LAYOUTS, generate_lineitem

    say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
    for name, values, known in (
        ("format", cfg.formats, FORMATS),
        ("layout", cfg.layouts, LAYOUTS),
        ("index type", cfg.index_types, INDEX_TYPES),
        ("query kind", (*cfg.e2e_kinds, *cfg.check_kinds), KINDS),
    ):
        unknown = [v for v in values if v not in known]
        if unknown or (not values and name in ("format", "layout")):
            raise LakesieveError(
                f"unknown {name} {unknown[0] if unknown else '(none given)'!r}; choose from {', '.join(known)}"
            )
    if cfg.queries < 1:
        raise LakesieveError(f"--queries must be at least 1, got {cfg.queries}")
    started = time.perf_counter()
    out: dict[str, Any] = {
        "suite": "full",
        "scale": cfg.scale,
        "config": dataclasses.asdict(cfg),
        "machine": machine(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "layout_descriptions": {k: LAYOUT_DESCRIPTIONS[k] for k in cfg.layouts},
        "layout_columns": {k: list(LAYOUT_COLUMNS[k]) for k in cfg.layouts},
        "measured_where": {
            "per_layout": (
                f"on the {cfg.formats[0]} table: relation read once and cached; per "
                "column a Spark sort of the column; per index type the build from the "
                "cached relation (index type's build hook, table read excluded, like the "
                "sort), size (Arrow IPC bytes), lookup latency, locations selected, "
                "false negatives against a ground truth computed in Spark"
            ),
            "per_format": (
                "write (one commit); bucket contents checked equal to the first format "
                "from the data files' footers; native statistics pruning for every query; "
                "a Sieve on l_orderkey built with Table.build_index (table read included); "
                "end-to-end reads: full scan, native-selected files, each index type's "
                "selection mapped to this format's files by bucket, and the product Sieve "
                "through Table.plan/read_plan; for l_orderkey also without a Spark job: "
                "Table.read_arrow against Arrow full and native scans; every pruned read "
                "compared with the full scan"
            ),
        },
        "layouts": {},
    }
    root = Path(cfg.workdir).resolve()
    t0 = time.perf_counter()
    src = generate_lineitem(cfg.scale, root / f"tpch-sf{cfg.scale}")
    out["generate_seconds"] = round(time.perf_counter() - t0, 2)
    spark = get_spark()
    src_df = spark.read.parquet(str(src))
    tables_root = root / f"full-sf{cfg.scale}"
    tables_root.mkdir(parents=True, exist_ok=True)
    memory_layout = "interleaved" if "interleaved" in cfg.layouts else cfg.layouts[0]
    for layout in cfg.layouts:
        say(f"[{layout}] placing rows ...")
        lay: dict[str, Any] = {"formats": {}}
        out["layouts"][layout] = lay
        try:
            _run_layout(spark, src_df, layout, tables_root, cfg, lay, layout == memory_layout, say)
        except Exception as exc:  # keep what the other layouts measured; the error is reported
            lay["error"] = f"{type(exc).__name__}: {exc}"
            say(f"[{layout}] failed: {lay['error']}")
        out["wall_seconds"] = round(time.perf_counter() - started, 1)
        if checkpoint is not None:
            checkpoint(out)
    out["targets"] = targets(out)
    out["correctness"] = correctness(out)
    out["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out["wall_seconds"] = round(time.perf_counter() - started, 1)
    return out


def _run_layout(
    spark: Any,
    src_df: Any,
    layout: str,
    tables_root: Path,
    cfg: FullConfig,
    lay: dict[str, Any],
    memory_probe: bool,
    say: Callable[[str], None],
) -> None:
    """Write one layout in every format and measure it."""
    from lakesieve.table import open as open_table
    from lakesieve.tpch import with_layout

    t0 = time.perf_counter()
    base = with_layout(src_df, layout, cfg.groups, cfg.runs).persist()
    rows = base.count()
    lay["rows"] = rows
    lay["layout_seconds"] = round(time.perf_counter() - t0, 2)
    paths = {}
    try:
        for fmt in cfg.formats:
            paths[fmt] = tables_root / f"{layout}_{fmt}"
            say(f"[{layout}] writing {fmt} ...")
            lay["formats"][fmt] = _write_table(spark, base, fmt, paths[fmt], cfg, rows)
    finally:
        base.unpersist()

    say(f"[{layout}] per-layout figures on the {cfg.formats[0]} table ...")
    t0 = time.perf_counter()
    runs = _layout_phase(spark, layout, open_table(paths[cfg.formats[0]]), cfg, say, lay)
    lay["per_layout_phase_seconds"] = round(time.perf_counter() - t0, 1)
    primary = None
    for fmt in cfg.formats:
        res = lay["formats"][fmt]
        t0 = time.perf_counter()
        got = _format_phase(
            spark,
            fmt,
            layout,
            paths[fmt],
            runs,
            primary,
            cfg,
            say,
            res,
            memory_probe=memory_probe and fmt == cfg.formats[0],
        )
        res["format_phase_seconds"] = round(time.perf_counter() - t0, 1)
        if primary is None:
            primary = got


def correctness(out: dict[str, Any]) -> dict[str, Any]:
    """Every false negative and every pruned read that differs from its full scan, over the run."""
    false_neg = []
    reads = unequal = 0
    bad: list[str] = []
    for layout, lay in out["layouts"].items():
        if lay.get("error"):
            bad.append(f"{layout}: the layout failed ({lay['error']})")
        for col, c in lay.get("columns", {}).items():
            for t, f in c["types"].items():
                if f["false_negatives"]:
                    false_neg.append(f"{layout} {col} {t}: {f['false_negatives']}")
        for fmt, res in lay["formats"].items():
            if res.get("layout_check") == "DIFFERENT":
                bad.append(f"{layout} {fmt}: buckets differ from the first format")
            for c in res.get("reads", []):
                arrow = c.get("arrow") or {}
                for name, r in [
                    *c["indexes"].items(),
                    ("native", c["native"]),
                    ("sieve_product", c.get("sieve_product")),
                    ("arrow_lakesieve", arrow.get("lakesieve")),
                    ("arrow_native", arrow.get("native")),
                ]:
                    if r is None:
                        continue
                    reads += 1
                    if not r["equal"]:
                        unequal += 1
                        bad.append(f"{layout} {fmt} {c['column']} {c['kind']} {name}")
    return {
        "false_negatives": false_neg,
        "pruned_reads_compared": reads,
        "pruned_reads_unequal": unequal,
        "problems": bad,
        "ok": not false_neg and unequal == 0 and not bad,
    }


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Where each of the issue's targets stands in this run."""
    res: list[dict[str, Any]] = []
    inter = out["layouts"].get("interleaved")
    col = inter.get("columns", {}).get("l_orderkey") if inter else None
    types = col["types"] if col else {}
    if "sieve" in types and "exact" in types:
        s, e = types["sieve"], types["exact"]
        ratio = s["selected"]["point"] / max(e["selected"]["point"], 1e-9)
        share = s["size_bytes"] / max(1, e["size_bytes"])
        res.append(
            {
                "target": "interleaved, l_orderkey points: Sieve within 1.2x of exact's locations at <= 2% of exact's bytes",
                "measured": f"{ratio:.3f}x of exact's locations at {100 * share:.2f}% of exact's bytes",
                "met": ratio <= 1.2 and share <= 0.02,
            }
        )
    if "sieve" in types and col and col.get("column_compressed_bytes"):
        share = types["sieve"]["size_bytes"] / col["column_compressed_bytes"]
        res.append(
            {
                "target": "Sieve size on interleaved below 1% of the key column's compressed size",
                "measured": f"{100 * share:.3f}% ({types['sieve']['size_bytes']} of {col['column_compressed_bytes']} bytes)",
                "met": share < 0.01,
            }
        )
    if inter:
        for fmt, r in inter["formats"].items():
            for c in r.get("reads", []):
                if c["column"] != "l_orderkey" or c["kind"] not in ("point", "range_0.01pct"):
                    continue
                p = c.get("sieve_product") or c["indexes"].get("sieve")
                if p is None:
                    continue
                floor = r.get("spark_action_floor_seconds")
                cap = (
                    f"; a one-row Spark aggregate took {floor} s here, the full scan "
                    f"{c['full_scan_seconds'] / max(floor, 1e-9):.1f}x that"
                    if floor
                    else ""
                )
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, Spark read: Sieve >= 10x faster than a Spark full scan and >= 5x than native statistics (read with Spark)",
                        "measured": f"{p['speedup_vs_full']}x vs full scan, {p['speedup_vs_native']}x vs native{cap}",
                        "met": p["speedup_vs_full"] >= 10 and p["speedup_vs_native"] >= 5,
                    }
                )
                a = (c.get("arrow") or {}).get("lakesieve")
                if a is None:
                    continue
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, Arrow read on the driver (Table.read_arrow): >= 10x faster than a Spark full scan and >= 5x than native statistics read with Spark",
                        "measured": f"{a['speedup_vs_spark_full']}x vs Spark full scan, {a['speedup_vs_spark_native']}x vs native+Spark",
                        "met": a["speedup_vs_spark_full"] >= 10
                        and a["speedup_vs_spark_native"] >= 5,
                    }
                )
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, same engine (Arrow vs Arrow): >= 10x faster than an Arrow full scan and >= 5x than native statistics + the same Arrow scan",
                        "measured": f"{a['speedup_vs_arrow_full']}x vs Arrow full scan, {a['speedup_vs_arrow_native']}x vs native+Arrow",
                        "met": a["speedup_vs_arrow_full"] >= 10
                        and a["speedup_vs_arrow_native"] >= 5,
                    }
                )
    if col and "sieve" in types:
        res.append(
            {
                "target": "Sieve build at most 2x a Spark sort of the key column (interleaved, l_orderkey, from the cached relation)",
                "measured": f"{types['sieve']['build_over_sort']}x ({types['sieve']['build_seconds']} s vs {col['spark_sort_seconds']} s)",
                "met": types["sieve"]["build_over_sort"] <= 2.0,
            }
        )
    ok = correctness(out)
    res.append(
        {
            "target": "no layout and no index type returns a row a full scan would not, or misses one",
            "measured": (
                f"{len(ok['false_negatives'])} index answers missing a true location; "
                f"{ok['pruned_reads_unequal']} of {ok['pruned_reads_compared']} pruned reads unequal to full scans"
            ),
            "met": ok["ok"],
        }
    )
    return res


def to_text(out: dict[str, Any]) -> str:
    """A short readable summary (the JSON holds everything)."""
    buf = io.StringIO()
    buf.write(f"full suite, SF {out['scale']}, {out.get('wall_seconds')} s\n")
    for t in out.get("targets", []):
        buf.write(f"  [{'met' if t['met'] else 'NOT met'}] {t['target']}: {t['measured']}\n")
    return buf.getvalue()
