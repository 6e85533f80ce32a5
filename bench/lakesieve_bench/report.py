"""Markdown and charts of the full benchmark's figures.

:func:`render_markdown` turns :func:`lakesieve_bench.full_run.run_full`'s dict
into the section kept in ``BENCHMARKS.md`` between
``<!-- bench:full:start -->`` and ``<!-- bench:full:end -->``;
:func:`update_section` replaces that section (or appends it);
:func:`write_charts` draws matplotlib PNGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lakesieve_bench.queries import KINDS

START = "<!-- bench:full:start -->"
END = "<!-- bench:full:end -->"


def _fmt_bytes(n: int | None) -> str:
    """``1,234`` (``-`` when unknown)."""
    return "-" if n is None else f"{n:,}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def render_markdown(out: dict[str, Any], command: str, chart_dir: str | None = None) -> str:
    """The full suite's section of ``BENCHMARKS.md``, markers included."""
    m = out["machine"]
    lines = [
        START,
        "",
        "## Full suite: lakesieve vs native statistics vs full scans (TPC-H, every format)",
        "",
    ]
    lines += [
        f"Reproduce (one command, no network): `{command}` — wall time **{out.get('wall_seconds')} s** "
        f"at SF {out['scale']} ({max([lay.get('rows', 0) for lay in out['layouts'].values()] or [0]):,} rows), "
        f"started {out.get('started')}.",
        "",
        f"Machine: {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, {m.get('platform')}, Python {m.get('python')}, "
        f"pyspark {m.get('pyspark')}; load average {m.get('load_average_start')} at the start, "
        f"{m.get('load_average_end')} at the end (other jobs share the machine; every time below is inflated by them).",
        "",
        "What was measured where:",
        "",
        f"- per layout — {out['measured_where']['per_layout']};",
        f"- per format x layout — {out['measured_where']['per_format']}.",
        "",
        f"Layouts ({out['config']['groups']} locations each, one commit per table):",
        "",
    ]
    for k, v in out["layout_descriptions"].items():
        lines.append(f"- **{k}**: {v}; indexed on {', '.join(out['layout_columns'][k])}")
    q = out["config"]["queries"]
    lines += [
        "",
        f"Queries: {q} per kind and column, seed {out['config']['seed']}: points on existing keys, IN lists of 10, "
        "two-sided ranges over 0.01% / 0.1% / 1% of the key domain, one-sided `<=` / `>=` near either end.",
        "",
    ]

    lines += [
        "### Where the time went (seconds)",
        "",
        "| layout | place rows | writes ("
        + " / ".join(out["config"]["formats"])
        + ") | per-layout phase | "
        "per-format phases (" + " / ".join(out["config"]["formats"]) + ") |",
        "|---|---|---|---|---|",
    ]
    for layout, lay in out["layouts"].items():
        fr = lay.get("formats", {})
        writes = " / ".join(
            str(fr.get(f, {}).get("write_seconds", "-")) for f in out["config"]["formats"]
        )
        phases = " / ".join(
            str(fr.get(f, {}).get("format_phase_seconds", "-")) for f in out["config"]["formats"]
        )
        lines.append(
            f"| {layout} | {lay.get('layout_seconds', '-')} | {writes} | {lay.get('per_layout_phase_seconds', '-')} | {phases} |"
        )
        if lay.get("error"):
            lines.append(f"| {layout} | failed: {lay['error']} | | | |")
    lines += [""]

    lines += ["### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for t in out.get("targets", []):
        lines.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    c = out.get("correctness", {})
    lines += [
        "",
        f"Correctness: {c.get('pruned_reads_compared')} pruned reads compared with full scans, "
        f"{c.get('pruned_reads_unequal')} unequal; index answers missing a true location: "
        f"{len(c.get('false_negatives', []))}.",
        "",
    ]

    lines += [
        f"### Locations selected (mean of {out['config']['groups']}; ideal = ground truth)",
        "",
    ]
    for layout, lay in out["layouts"].items():
        for col, cf in lay.get("columns", {}).items():
            types = list(cf["types"])
            lines.append(f"**{layout} / {col}**")
            lines.append("")
            fmts = list(lay["formats"])
            lines.append(
                "| kind | ideal | "
                + " | ".join(types)
                + " | "
                + " | ".join(f"native {f}" for f in fmts)
                + " |"
            )
            lines.append("|---" * (2 + len(types) + len(fmts)) + "|")
            for k in KINDS:
                vals = [f"{cf['types'][t]['selected'][k]:g}" for t in types]
                nat = [
                    f"{lay['formats'][f].get('native', {}).get('columns', {}).get(col, {}).get('selected', {}).get(k, '-')}"
                    for f in fmts
                ]
                lines.append(
                    f"| {k} | {cf['ideal'][k]:g} | "
                    + " | ".join(vals)
                    + " | "
                    + " | ".join(nat)
                    + " |"
                )
            lines.append("")

    lines += [
        "### Build, size, lookup (per layout, from the cached relation)",
        "",
        "| layout | column | sort s | type | build s | build / sort | bytes | share of column | share of exact | lookup p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for layout, lay in out["layouts"].items():
        for col, cf in lay.get("columns", {}).items():
            for t, f in cf["types"].items():
                lines.append(
                    f"| {layout} | {col} | {cf['spark_sort_seconds']} | {t} | {f['build_seconds']} | "
                    f"{f['build_over_sort']} | {_fmt_bytes(f['size_bytes'])} | {_pct(f.get('size_share_of_column'))} | "
                    f"{_pct(f.get('size_over_exact'))} | {f['lookup_p50_ms']} / {f['lookup_p99_ms']} |"
                )
    lines.append("")

    lines += [
        "### Per format: write, product Sieve build, native statistics",
        "",
        "| layout | format | write s | files | layout check | Sieve build s (Table.build_index) | Sieve bytes | native pruner checked (mismatches) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for layout, lay in out["layouts"].items():
        for fmt, r in lay["formats"].items():
            checks = [v["check"] for v in r.get("native", {}).get("columns", {}).values()]
            n = sum(ch["checked"] for ch in checks)
            bad = sum(ch["mismatches"] for ch in checks)
            lines.append(
                f"| {layout} | {fmt} | {r.get('write_seconds')} | {r.get('data_files')} | {r.get('layout_check')} | "
                f"{r.get('sieve_product_build_seconds')} | {_fmt_bytes(r.get('sieve_product_size_bytes'))} | {n} ({bad}) |"
            )
    lines.append("")
    hows = {
        fmt: r["native"]["how"]
        for lay in out["layouts"].values()
        for fmt, r in lay["formats"].items()
        if "native" in r
    }
    for fmt, how in hows.items():
        lines.append(f"- native {fmt}: {how}")
    lines.append("")

    lines += [
        "### End to end (l_orderkey; seconds, speed-up of the Sieve read over full scan / native)",
        "",
        "| layout | format | kind | rows | full scan s | native s (files) | Sieve s (files) | vs full | vs native | other indexes s (files) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for layout, lay in out["layouts"].items():
        for fmt, r in lay["formats"].items():
            for e in r.get("reads", []):
                if e["column"] != "l_orderkey":
                    continue
                p = e.get("sieve_product") or e["indexes"].get("sieve", {})
                others = ", ".join(
                    f"{t} {v['seconds']} ({v['files']})"
                    for t, v in e["indexes"].items()
                    if t != "sieve"
                )
                lines.append(
                    f"| {layout} | {fmt} | {e['kind']} | {e['rows']} | {e['full_scan_seconds']} | "
                    f"{e['native']['seconds']} ({e['native']['files']}) | {p.get('seconds')} ({p.get('files')}) | "
                    f"{p.get('speedup_vs_full')}x | {p.get('speedup_vs_native')}x | {others} |"
                )
    lines.append("")
    arrow_rows = []
    for layout, lay in out["layouts"].items():
        for fmt, r in lay["formats"].items():
            for e in r.get("reads", []):
                a = e.get("arrow")
                if e["column"] != "l_orderkey" or not a:
                    continue
                lk, nat = a["lakesieve"], a["native"]
                arrow_rows.append(
                    f"| {layout} | {fmt} | {e['kind']} | {a['rows']} | {e['full_scan_seconds']} | {e['native']['seconds']} | "
                    f"{a['full_scan_seconds']} | {nat['seconds']} ({nat['files']}) | {lk['seconds']} ({lk['files']}) | "
                    f"{lk.get('speedup_vs_spark_full')}x / {lk.get('speedup_vs_spark_native')}x | "
                    f"{lk['speedup_vs_arrow_full']}x / {lk['speedup_vs_arrow_native']}x | "
                    f"{'yes' if lk['equal'] and nat['equal'] else '**NO**'} |"
                )
    if arrow_rows:
        lines += [
            "### End to end without a Spark job (l_orderkey; Table.read_arrow on the driver)",
            "",
            "lakesieve = `Table.plan` + `Table.read_plan_arrow` (each selected unit through the format plugin's "
            "unit reader); Arrow full scan = one multi-threaded `pyarrow.dataset` scan of every data file with the "
            "filter pushed down; Arrow native = the format library's pruning, then the same scan of the files it kept. "
            "Arrow times are medians of 3 runs; Spark times are the single runs of the table above.",
            "",
            "| layout | format | kind | rows | Spark full s | Spark native s | Arrow full s | Arrow native s (files) | "
            "lakesieve Arrow s (files) | vs Spark full / native | vs Arrow full / native | equal |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *arrow_rows,
            "",
        ]

    mem_lines = []
    for layout, lay in out["layouts"].items():
        for fmt, r in lay["formats"].items():
            if "sieve_build_memory" in r:
                b = r["sieve_build_memory"]
                jvm = b.get("jvm_peak_bytes")
                mem_lines.append(
                    f"- Sieve build on {layout}/{fmt} (l_orderkey, Table.build_index): Python driver heap peak "
                    f"{_fmt_bytes(b['python_heap_peak_bytes'])} B, Python driver RSS peak growth "
                    f"{_fmt_bytes(b['rss_peak_growth_bytes'])} B over {_fmt_bytes(b.get('rss_before_bytes'))} B; "
                    f"JVM (driver and local executors) peak RSS since start "
                    f"{_fmt_bytes(jvm)} B (bounded by spark.driver.memory)"
                    + (f"; {b['note']}." if b.get("note") else ".")
                )
            if "sieve_lookup_memory" in r:
                lm = r["sieve_lookup_memory"]
                if "error" in lm:
                    mem_lines.append(f"- lookups: {lm['error']}")
                else:
                    mem_lines.append(
                        f"- {lm['queries']} lookups in a fresh process (table opened first; then load the "
                        f"Sieve and plan every query): RSS peak growth {_fmt_bytes(lm['rss_peak_growth_bytes'])} B "
                        f"over {_fmt_bytes(lm.get('rss_after_table_open_bytes'))} B (after imports: "
                        f"{_fmt_bytes(lm['rss_after_imports_bytes'])} B); Python heap peak "
                        f"{_fmt_bytes(lm['python_heap_peak_bytes'])} B; {lm['seconds']} s. The first lookup "
                        f"of a process also imports the index type's libraries: RSS growth "
                        f"{_fmt_bytes(lm.get('cold_first_lookup_rss_growth_bytes'))} B, Python heap "
                        f"{_fmt_bytes(lm.get('cold_first_lookup_python_heap_bytes'))} B"
                        + (f"; {lm['note']}." if lm.get("note") else ".")
                    )
    if mem_lines:
        lines += ["### Peak driver memory", "", *mem_lines, ""]
    if out.get("notes"):
        lines += ["### Notes on this run", "", *[f"- {n}" for n in out["notes"]], ""]
    if chart_dir:
        lines += ["### Charts", ""]
        for name in ("selected_points", "selected_range", "e2e", "build", "size"):
            lines.append(f"![{name}]({chart_dir}/{name}.png)")
        lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n"


def update_section(path: str | Path, section: str) -> None:
    """Replace the marked section of ``path`` with ``section`` (append it when the markers are absent)."""
    p = Path(path)
    text = p.read_text() if p.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        text = head + section.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    p.write_text(text)


def write_charts(out: dict[str, Any], folder: str | Path) -> list[str]:
    """Draw the charts as PNG files in ``folder``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    layouts = list(out["layouts"])

    def bars(
        name: str, title: str, series: dict[str, list[float]], ylabel: str, log: bool = False
    ) -> None:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        n = max(1, len(series))
        w = 0.8 / n
        for i, (label, vals) in enumerate(series.items()):
            ax.bar([x + i * w for x in range(len(layouts))], vals, width=w, label=label)
        ax.set_xticks([x + 0.4 - w / 2 for x in range(len(layouts))], layouts)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = d / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(str(path))

    def col(layout: str) -> dict[str, Any]:
        return out["layouts"][layout].get("columns", {}).get("l_orderkey", {})

    types = list(next((col(lay)["types"] for lay in layouts if col(lay)), {}))

    def typed(lay: str, t: str, key: str, default: float) -> float:
        return float(col(lay).get("types", {}).get(t, {}).get(key, default))

    fmts = list(out["config"]["formats"])
    for name, kind in (("selected_points", "point"), ("selected_range", "range_0.1pct")):
        series: dict[str, list[float]] = {
            "ideal": [col(lay).get("ideal", {}).get(kind, 0) for lay in layouts]
        }
        for t in types:
            series[t] = [
                col(lay).get("types", {}).get(t, {}).get("selected", {}).get(kind, 0)
                for lay in layouts
            ]
        for f in fmts:
            series[f"native {f}"] = [
                out["layouts"][lay]["formats"]
                .get(f, {})
                .get("native", {})
                .get("columns", {})
                .get("l_orderkey", {})
                .get("selected", {})
                .get(kind, 0)
                for lay in layouts
            ]
        bars(
            name,
            f"l_orderkey {kind}: locations selected (of {out['config']['groups']})",
            series,
            "locations",
        )
    series = {}
    for f in fmts:
        for label, key in (("vs full", "speedup_vs_full"), ("vs native", "speedup_vs_native")):
            vals = []
            for lay in layouts:
                reads = [
                    e
                    for e in out["layouts"][lay]["formats"].get(f, {}).get("reads", [])
                    if e["column"] == "l_orderkey" and e["kind"] == "point"
                ]
                p = (
                    (reads[0].get("sieve_product") or reads[0]["indexes"].get("sieve", {}))
                    if reads
                    else {}
                )
                vals.append(float(p.get(key) or 0))
            series[f"{f} {label}"] = vals
    bars("e2e", "l_orderkey point, end to end: Sieve read speed-up", series, "x faster", log=True)
    bars(
        "build",
        "l_orderkey: build / Spark sort of the column",
        {t: [typed(lay, t, "build_over_sort", 0) for lay in layouts] for t in types},
        "ratio",
    )
    bars(
        "size",
        "l_orderkey: index bytes (log)",
        {t: [max(1.0, typed(lay, t, "size_bytes", 1)) for lay in layouts] for t in types},
        "bytes",
        log=True,
    )
    return written
