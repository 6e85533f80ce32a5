"""HTML report with PNG charts for ``lakesieve compare --html PATH``."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any


def _bar(path: Path, title: str, labels: list[str], values: list[float], ylabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(labels, values, color="#4477aa")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _grouped(path: Path, result: dict[str, Any], kinds: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    types = list(result["types"])
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(kinds)), 3.8))
    n = max(1, len(types))
    w = 0.8 / n
    for i, t in enumerate(types):
        sel = result["types"][t]["selected"]
        xs = [k + (i - (n - 1) / 2) * w for k in range(len(kinds))]
        ax.bar(xs, [sel.get(k, 0) for k in kinds], width=w, label=t)
    ax.set_xticks(range(len(kinds)))
    ax.set_xticklabels(kinds, rotation=20, fontsize=8)
    ax.set_ylabel("locations selected (avg)")
    ax.axhline(result["locations_total"], color="grey", linestyle="--", linewidth=0.8)
    ax.set_title(f"locations selected per query kind (of {result['locations_total']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_html(result: dict[str, Any], path: str | os.PathLike[str]) -> list[Path]:
    """Write the report at ``path`` and its PNG charts next to it; returns every file written."""
    from lakesieve.compare import KINDS, format_table

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    types = list(result["types"])
    kinds = [k for k in KINDS if any(k in f["selected"] for f in result["types"].values())]
    charts = {
        "selected": out.parent / f"{stem}_selected.png",
        "size": out.parent / f"{stem}_size.png",
        "build": out.parent / f"{stem}_build.png",
    }
    _grouped(charts["selected"], result, kinds)
    _bar(
        charts["size"],
        "index size",
        types,
        [result["types"][t]["size_bytes"] for t in types],
        "bytes",
    )
    _bar(
        charts["build"],
        "build time",
        types,
        [result["types"][t]["build_seconds"] for t in types],
        "seconds",
    )
    esc = html.escape
    imgs = "\n".join(f'<p><img src="{esc(p.name)}" alt="{esc(k)}"></p>' for k, p in charts.items())
    body = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>lakesieve compare: {esc(result["column"])}</title>
<style>body{{font-family:sans-serif;margin:2em}} pre{{background:#f4f4f4;padding:1em}}</style></head>
<body>
<h1>Index comparison on column {esc(result["column"])}</h1>
<p>Table {esc(result["table"])} ({esc(result["format"])}) at instant {esc(str(result["instant"]))}.</p>
<pre>{esc(format_table(result))}</pre>
{imgs}
<h2>Figures (JSON)</h2>
<pre>{esc(json.dumps(result, indent=2, default=str))}</pre>
</body></html>
"""
    out.write_text(body, encoding="utf-8")
    return [out, *charts.values()]
