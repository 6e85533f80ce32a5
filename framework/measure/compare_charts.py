"""The charts of the ``lakesieve compare`` report, drawn with matplotlib as PNG bytes.

Two kinds of chart: the size-vs-selectivity trade-off (one point per index
type, both axes logarithmic) and, per query kind, the share of locations each
type selects, where a type that answers "every location may match" for all
queries of the kind is written as such instead of drawn as a full-width bar;
the table format's own data skipping (the native row) is drawn below the types.
"""

from __future__ import annotations

import io
from typing import Any

#: colour of the recommended type's point and of ordinary points
PICK_COLOUR = "#cc3311"
POINT_COLOUR = "#4477aa"
ALL_COLOUR = "#777777"
#: the label of the table format's own data skipping in the charts (explained under them)
NATIVE_LABEL = "native*"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    plt.close(fig)
    return buf.getvalue()


def selected_fraction(result: dict[str, Any], index_type: str, kind: str) -> float:
    """Mean share of the table's locations ``index_type`` selected for queries of ``kind``."""
    total = max(1, int(result["locations_total"]))
    return float(result["types"][index_type]["selected"].get(kind, total)) / total


def workload_fraction(result: dict[str, Any], index_type: str, workload: dict[str, float]) -> float:
    """Workload-weighted mean share of locations selected (1 - advise's skipped share)."""
    weight = sum(workload.values()) or 1.0
    return sum(w * selected_fraction(result, index_type, k) for k, w in workload.items()) / weight


def answers_all(result: dict[str, Any], index_type: str, kind: str) -> tuple[int, int]:
    """``(queries answered "all locations", queries)`` of ``index_type`` for ``kind``."""
    fig = result["types"][index_type]
    asked = int(result.get("queries_per_kind", {}).get(kind, 0))
    return int(fig.get("answered_all", {}).get(kind, 0)), asked


def _percent(share: float) -> str:
    """``0.0219`` -> ``"2.2%"``, ``1.0`` -> ``"100%"``."""
    pct = 100.0 * share
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def _floor(result: dict[str, Any]) -> float:
    """The smallest share drawn on a log axis: half of one location."""
    return 0.5 / max(1, int(result["locations_total"]))


def tradeoff_png(result: dict[str, Any], workload: dict[str, float], pick: str | None) -> bytes:
    """Index size (x, log) against the workload's mean share of locations selected (y, log)."""
    plt = _pyplot()
    floor = _floor(result)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ys: list[float] = []
    for t, figs in result["types"].items():
        x = max(1, int(figs["size_bytes"]))
        y = max(floor, workload_fraction(result, t, workload))
        ys.append(y)
        chosen = t == pick
        ax.scatter(
            [x],
            [y],
            s=160 if chosen else 60,
            marker="*" if chosen else "o",
            color=PICK_COLOUR if chosen else POINT_COLOUR,
            zorder=3,
        )
        label = f"{t} (recommended)" if chosen else t
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(7, 5), fontsize=9)
    ax.axhline(1.0, color=ALL_COLOUR, linestyle="--", linewidth=0.8)
    ax.annotate(
        "no pruning (full scan)",
        (0.99, 1.0),
        xycoords=("axes fraction", "data"),
        ha="right",
        va="bottom",
        fontsize=8,
    )
    column_bytes = result.get("column_compressed_bytes")
    if column_bytes:
        ax.axvline(column_bytes, color=ALL_COLOUR, linestyle=":", linewidth=0.8)
        ax.annotate(
            "column's compressed size",
            (column_bytes, 0.02),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=8,
            xytext=(-10, 0),
            textcoords="offset points",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min([*ys, 1.0]) / 2.5, 1.6)
    ax.set_xlabel("index size (bytes, log scale)")
    ax.set_ylabel("share of locations selected\n(workload mean, log scale)")
    ax.set_title("size vs selectivity: lower left is better")
    ax.grid(True, which="major", linewidth=0.3)
    fig.tight_layout()
    return _png(fig)


def kind_png(result: dict[str, Any], kind: str) -> bytes:
    """Share of locations each type (and the native row) selects for ``kind``; "answers all" written."""
    plt = _pyplot()
    rows = [(t, result["types"][t]) for t in result["types"]]
    if result.get("native"):
        rows.append((NATIVE_LABEL, result["native"]))
    floor = _floor(result)
    total = int(result["locations_total"])
    asked = int(result.get("queries_per_kind", {}).get(kind, 0))
    fig, ax = plt.subplots(figsize=(6.2, 0.45 * len(rows) + 1.1))
    for row, (_name, figs) in enumerate(rows):
        alls = int(figs.get("answered_all", {}).get(kind, 0))
        mean = figs["selected"].get(kind, total)
        share = float(mean) / max(1, total)
        if asked and alls == asked:
            ax.text(
                floor * 1.2,
                row,
                "answers all locations for every query (no pruning)",
                va="center",
                fontsize=9,
                style="italic",
                color=ALL_COLOUR,
            )
            continue
        ax.barh(row, max(floor, share) - floor, left=floor, color=POINT_COLOUR, height=0.6)
        note = f"{mean:g} of {total} locations ({_percent(share)})"
        if alls:
            note += f"; {alls} of {asked} queries answered all"
        ax.text(max(floor, share) * 1.15, row, note, va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(floor, 12.0)
    ax.axvline(1.0, color=ALL_COLOUR, linestyle="--", linewidth=0.8)
    ax.set_xlabel("share of locations selected (mean, log scale; dashed: all)", fontsize=9)
    ax.set_title(kind, fontsize=10)
    fig.tight_layout()
    return _png(fig)
