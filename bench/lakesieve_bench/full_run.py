"""One run of the full suite: every layout written in every format and measured."""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.full import (
    FORMATS,
    INDEX_TYPES,
    LAYOUT_COLUMNS,
    FullConfig,
    layout_phase,
    write_table,
)
from lakesieve_bench.full_formats import format_phase
from lakesieve_bench.full_targets import correctness, targets
from lakesieve_bench.queries import KINDS


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


def run_full(
    cfg: FullConfig,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the full suite and return its figures (one JSON-ready dict).

    ``checkpoint`` is called with the figures so far after every layout.
    """
    from lakesieve.demo.tpch import LAYOUT_DESCRIPTIONS, LAYOUTS, generate_lineitem
    from lakesieve.errors import LakesieveError
    from lakesieve.spark.session import get_spark

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
    from lakesieve.demo.tpch import with_layout
    from lakesieve.table import open as open_table

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
            lay["formats"][fmt] = write_table(spark, base, fmt, paths[fmt], cfg, rows)
    finally:
        base.unpersist()

    say(f"[{layout}] per-layout figures on the {cfg.formats[0]} table ...")
    t0 = time.perf_counter()
    runs = layout_phase(spark, layout, open_table(paths[cfg.formats[0]]), cfg, say, lay)
    lay["per_layout_phase_seconds"] = round(time.perf_counter() - t0, 1)
    primary = None
    for fmt in cfg.formats:
        res = lay["formats"][fmt]
        t0 = time.perf_counter()
        got = format_phase(
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
