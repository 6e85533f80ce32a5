"""Markdown tables of a ``bench/peers/run`` result, as BENCHMARKS.md shows them.

    .venv/bin/python bench/peers/table.py out.json

Prints, per layout, one row per query: files read (native / lakesieve, of
the table's files) and median seconds (native / lakesieve) for each format;
then one row per (format, layout) with the index or metadata bytes, the
write or build time and the time to be in step after the 1% upsert.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FORMATS = ("hudi", "delta", "iceberg")
TITLES = {"hudi": "Hudi", "delta": "Delta", "iceberg": "Iceberg"}


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def queries_table(rows: list[dict[str, Any]], layout: str) -> list[str]:
    """One Markdown row per query of ``layout``: files and seconds, native / lakesieve, per format."""
    by = {(r["format"], r["system"], r["query"]): r for r in rows if r["layout"] == layout}
    formats = [f for f in FORMATS if any(k[0] == f for k in by)]
    queries = list(dict.fromkeys(r["query"] for r in rows if r["layout"] == layout))
    head = ["query"]
    for f in formats:
        head += [f"{TITLES[f]} files: native / lakesieve", f"{TITLES[f]} s: native / lakesieve"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in queries:
        cells = [f"`{q}`"]
        for f in formats:
            n, s = by.get((f, "native", q)), by.get((f, "lakesieve", q))
            if n is None or s is None:
                cells += ["-", "-"]
                continue
            ok = "" if n["same_answer"] and s["same_answer"] else " (answer differs!)"
            cells.append(f"{n['files_read']} / **{s['files_read']}** of {n['files_total']}{ok}")
            cells.append(f"{n['seconds']:.2f} / {s['seconds']:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return out


def systems_table(systems: list[dict[str, Any]]) -> list[str]:
    """One Markdown row per (format, layout): bytes, build and in-step times, native / lakesieve."""
    out = [
        "| format | layout | skipping metadata: native / lakesieve | write (native) / index build (lakesieve) s | in step after a 1% upsert s: native commit / lakesieve refresh |",
        "|---|---|---|---|---|",
    ]
    pairs = list(dict.fromkeys((s["format"], s["layout"]) for s in systems))
    for fmt, layout in pairs:
        n = next(
            s for s in systems if (s["format"], s["layout"], s["system"]) == (fmt, layout, "native")
        )
        ls = next(
            s
            for s in systems
            if (s["format"], s["layout"], s["system"]) == (fmt, layout, "lakesieve")
        )
        step_n = n.get("in_step_seconds")
        step_l = ls.get("in_step_seconds")
        steps = (
            f"{step_n:.1f} / {step_l:.1f}"
            if step_n is not None and step_l is not None
            else "not measured"
        )
        out.append(
            f"| {TITLES[fmt]} | {layout} | {_mib(n['metadata_bytes'])} / {_mib(ls['index_bytes'])} "
            f"| {n['write_seconds']:.1f} / {ls['build_seconds']:.1f} | {steps} |"
        )
    return out


def main() -> None:
    """Print the tables of the result file named on the command line."""
    data = json.loads(Path(sys.argv[1]).read_text())
    layouts = list(dict.fromkeys(r["layout"] for r in data["rows"]))
    for layout in layouts:
        print(f"{layout} layout ({data['rows'][0]['files_total']} files per table):\n")
        print("\n".join(queries_table(data["rows"], layout)))
        print()
    print("\n".join(systems_table(data["systems"])))


if __name__ == "__main__":
    main()
