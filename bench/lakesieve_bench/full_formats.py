"""The full suite's per-format phase: layout check, native pruning, product Sieve build, end-to-end reads."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.full import (
    E2E_COLUMN,
    LAYOUT_COLUMNS,
    PRODUCT_INDEX,
    ColumnRun,
    FullConfig,
    mean,
)
from lakesieve_bench.full_reads import Reader, agg_rows, arrow_reads, buckets, spark_action_floor


def _native_figures(native: Any, runs: list[ColumnRun], cfg: FullConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"how": native.how, "files": len(native.files), "columns": {}}
    for run in runs:
        check = native.check(run.queries, cfg.native_check)
        sel = {k: mean([len(native.select(q)) for q in qs]) for k, qs in run.queries.items()}
        out["columns"][run.column] = {"selected": sel, "check": check}
    return out


def format_phase(
    spark: Any,
    fmt: str,
    layout: str,
    path: Path,
    runs: list[ColumnRun],
    primary: tuple[dict[str, int], dict[int, list[Any]]] | None,
    cfg: FullConfig,
    say: Callable[[str], None],
    res: dict[str, Any],
    memory_probe: bool,
) -> tuple[dict[str, int], dict[int, list[Any]]]:
    """Per format x layout: layout check, native pruning, product Sieve build, end-to-end reads."""
    from lakesieve.errors import LakesieveError
    from lakesieve.table import open as open_table

    from lakesieve_bench.memory import jvm_peak_bytes, lookup_memory, measure
    from lakesieve_bench.native import native_stats

    columns = LAYOUT_COLUMNS[layout]
    table = open_table(path)
    snap = table.snapshot()
    res["commits"] = len(table.timeline())
    res["data_files"] = len(snap.units)
    res["bytes"] = sum(u.size_bytes for u in snap.units)
    loc_bucket, per_bucket = buckets(table, snap, columns)
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

    reader = Reader(table, spark)
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
                got = agg_rows(table.read_plan(plan, spark))
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
                arrow = arrow_reads(table, snap, native, q, want[0])
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
