"""The self-contained HTML report of ``lakesieve compare --html PATH``.

One file, charts embedded as ``data:`` PNG images, no external resource. In
order: the recommendation and why (:func:`lakesieve.measure.advise.advise` applied
to the figures for a stated workload, and how to ask for another), the
size-vs-selectivity trade-off chart, one chart per query kind, the figures as
a table, a glossary of the query kinds and terms, the run's parameters, and
the figures as JSON inside a collapsed ``<details>``. Every text is escaped.
"""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path
from typing import Any

from lakesieve.measure.advise import (
    DEFAULT_WORKLOAD,
    MIN_SKIP,
    NEAR_BEST,
    advise,
    format_workload,
    toml_fragment,
)
from lakesieve.measure.compare import KIND_MEANINGS, KINDS
from lakesieve.measure.compare_charts import NATIVE_LABEL, answers_all, kind_png, tradeoff_png
from lakesieve.measure.native import native_label

#: terms of the report other than the query kinds
TERMS = {
    "location": "the unit an index selects and a read skips or reads: a Hudi file group, "
    "an Iceberg or Delta data file",
    "share of locations selected": "locations an index says may hold a match, divided by all "
    "locations of the table, averaged over the queries; lower is better, 1 means a full scan",
    "answers all locations": "the index cannot answer the query (a Bloom filter and a range, "
    "for instance) and every location is read; never a wrong answer, just no pruning",
    "skipped share": "1 minus the share of locations selected, weighted by the workload mix",
    "overhead vs exact": "locations selected divided by those of the exact index, which "
    "selects only locations that hold a match",
    "native": "the locations the table format's own data skipping reads for the same queries, "
    "without any lakesieve index; the line under the charts says what computed it and whether "
    "it is an approximation of the format's planning",
}

_STYLE = """
body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.4}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
.pick{font-size:1.3em;background:#eef5ee;border-left:6px solid #338833;padding:.6em 1em}
.none{background:#f6eeee;border-left-color:#aa3333}
table{border-collapse:collapse;margin:.6em 0} td,th{border:1px solid #ccc;padding:.2em .6em}
td.n{text-align:right} tr.chosen{background:#eef5ee;font-weight:bold}
pre,code{background:#f4f4f4} pre{padding:.8em;overflow-x:auto;white-space:pre-wrap}
dt{font-weight:bold;margin-top:.5em} .small{color:#555;font-size:.9em}
.grid{display:flex;flex-wrap:wrap;gap:0 1.5em} .kind{flex:1 1 500px} img{max-width:100%}
"""


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def _size(n: Any) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _table(head: list[str], rows: list[list[Any]], chosen: int | None = None) -> str:
    esc = html.escape
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for i, row in enumerate(rows):
        cells = "".join(
            f'<td class="n">{esc(str(v))}</td>'
            if isinstance(v, int | float)
            else f"<td>{esc(str(v))}</td>"
            for v in row
        )
        out.append(f'<tr class="chosen">{cells}</tr>' if i == chosen else f"<tr>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)


def kinds_of(result: dict[str, Any]) -> list[str]:
    """The query kinds the result has figures for, in the order of :data:`~lakesieve.measure.compare.KINDS`."""
    seen = {k for fig in result["types"].values() for k in fig.get("selected", {})}
    return [k for k in KINDS if k in seen] + sorted(seen - set(KINDS))


def _recommendation(
    result: dict[str, Any], advice: dict[str, Any], workload: dict[str, float], stated: bool
) -> str:
    esc = html.escape
    column = str(result["column"])
    if advice["type"] is None:
        head = f'<p class="pick none">No index recommended on column {esc(column)}.</p>'
    else:
        head = (
            f'<p class="pick">Keep a <b>{esc(str(advice["type"]))}</b> index on column '
            f"{esc(column)}.</p>"
        )
    given = "given with --workload" if stated else "the default mix; no --workload was given"
    mix = ",".join(f"{k}={w:g}" for k, w in workload.items())
    why = [
        f"Why: {advice['reason']}.",
        f"Assumed workload: {format_workload(workload)} ({given}); each weight is the share of "
        "queries of that kind (see the glossary).",
        f"Rule: among the types that skip at least {100 * NEAR_BEST:.0f}% of what the best one "
        f"skips, the one that skips the most per KiB of index wins; when even the best skips "
        f"under {100 * MIN_SKIP:.0f}% of the locations, no index is recommended.",
    ]
    items = "".join(f"<li>{esc(w)}</li>" for w in why)
    change = (
        "To assume another workload, rerun the advice on these figures without building "
        "anything: save them with <code>lakesieve compare ... --json &gt; cmp.json</code>, then "
        f"<code>lakesieve advise --from-json cmp.json --workload {esc(mix)} --toml</code> "
        "(edit the weights), or pass <code>--workload</code> to "
        "<code>lakesieve compare --html</code>."
    )
    scores = advice["scores"]
    types = list(scores)
    rows = [
        [
            t,
            f"{100 * scores[t]['skipped_share']:.1f}%",
            _size(scores[t]["size_bytes"]),
            round(scores[t]["skipped_per_kib"], 6),
        ]
        for t in types
    ]
    chosen = types.index(advice["type"]) if advice["type"] in types else None
    table = _table(
        ["type", "skipped share (workload)", "size", "skipped share per KiB"], rows, chosen
    )
    name = os.path.basename(os.path.normpath(str(result["table"]))) or "table"
    toml = toml_fragment(name, advice)
    return (
        f'<section id="recommendation"><h2>Recommendation</h2>{head}<ul>{items}</ul>'
        f"<p>{change}</p>{table}<p>As a <code>lakesieve.toml</code> section:</p>"
        f"<pre>{esc(toml)}</pre></section>"
    )


def _figures(result: dict[str, Any]) -> str:
    head = ["type", "size", "share of column", "build s", "lookup p50 ms", "lookup p99 ms"]
    rows = []
    for t, fig in result["types"].items():
        share = fig.get("size_share_of_column")
        rows.append(
            [
                t,
                _size(fig["size_bytes"]),
                "-" if share is None else f"{100 * share:.1f}%",
                fig.get("build_seconds", "-"),
                fig.get("lookup_p50_ms", "-"),
                fig.get("lookup_p99_ms", "-"),
            ]
        )
    out = _table(head, rows)
    checks = result.get("end_to_end") or []
    if checks:
        out += "<p>End-to-end reads through every compared index, against a full scan:</p>"
        out += _table(
            ["kind", "rows", "equal to full scan", "locations read", "indexed s", "full scan s"],
            [
                [
                    e["kind"],
                    e["rows"],
                    str(e["equal"]),
                    f"{e['locations_read']} of {e['locations_total']}",
                    e["indexed_seconds"],
                    e["full_scan_seconds"],
                ]
                for e in checks
            ],
        )
    return out


def _native(result: dict[str, Any], kinds: list[str]) -> str:
    """The native row: what computed it, and its figures per kind beside exact's."""
    native = result.get("native")
    if not native:
        return ""
    esc = html.escape
    exact = result["types"].get("exact", {}).get("selected", {})
    rows = [
        [kind, native["selected"].get(kind, "-"), exact.get(kind, "-")]
        for kind in kinds
        if kind in native["selected"]
    ]
    return (
        f'<p class="small" id="native">{esc(NATIVE_LABEL[-1])} {esc(native_label(native))}</p>'
        + _table(["kind", "native: locations selected (mean)", "exact"], rows)
    )


def _glossary(result: dict[str, Any], kinds: list[str]) -> str:
    esc = html.escape
    examples = result.get("examples", {})
    items = []
    for kind in kinds:
        meaning = KIND_MEANINGS.get(kind, "a query kind of lakesieve compare")
        text = f"{meaning}."
        if kind.startswith("range_") and kind[6:] not in {"low", "high"}:
            text += f" Widths: {result.get('range_widths', '')}."
        dd = esc(text)
        if kind in examples:
            dd += f" Example: <code>{esc(str(examples[kind]))}</code>"
        items.append(f'<dt id="kind-{esc(kind)}">{esc(kind)}</dt><dd>{dd}</dd>')
    for term, meaning in TERMS.items():
        items.append(f"<dt>{esc(term)}</dt><dd>{esc(meaning)}.</dd>")
    return '<section id="glossary"><h2>Glossary</h2><dl>' + "".join(items) + "</dl></section>"


def _parameters(result: dict[str, Any]) -> str:
    skip = {"types", "examples", "end_to_end", "advice", "native"}
    rows = []
    for key, value in result.items():
        if key in skip:
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(str(v) for v in value) or "none"
        rows.append([key, "-" if value is None else str(value)])
    return (
        '<section id="parameters"><h2>Parameters of the run</h2>'
        + _table(["parameter", "value"], rows)
        + "</section>"
    )


def render_html(result: dict[str, Any], workload: dict[str, float] | None = None) -> str:
    """The report as one HTML document (see the module docstring)."""
    esc = html.escape
    stated = workload is not None
    workload = dict(workload) if workload else dict(DEFAULT_WORKLOAD)
    advice = advise(result, workload)
    kinds = kinds_of(result)
    total = result["locations_total"]
    per_kind = []
    for kind in kinds:
        alls = [
            t
            for t in result["types"]
            if answers_all(result, t, kind)[0] == answers_all(result, t, kind)[1] > 0
        ]
        note = f" Answers all locations (no pruning): {', '.join(alls)}." if alls else ""
        per_kind.append(
            f'<div class="kind"><h3>{esc(kind)}</h3><p class="small">'
            f"{esc(KIND_MEANINGS.get(kind, kind))}.{esc(note)} "
            f'<a href="#kind-{esc(kind)}">glossary</a></p>{_img(kind_png(result, kind), kind)}</div>'
        )
    title = f"lakesieve compare: {result['column']} of {result['table']}"
    trade = (
        '<section id="tradeoff"><h2>Size vs selectivity</h2>'
        f"{_img(tradeoff_png(result, workload, advice['type']), 'size vs selectivity')}"
        f'<p class="small">One point per index type: its size (x) against the share of the '
        f"{esc(str(total))} locations it selects for the assumed workload (y), both on log "
        "scales. The dashed line is a full scan; the dotted one the column's compressed size.</p>"
        "</section>"
    )
    figures_json = json.dumps(result, indent=2, default=str)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>Which index for column {esc(str(result["column"]))}?</h1>
<p class="small">Table {esc(str(result["table"]))} ({esc(str(result["format"]))}) at instant
{esc(str(result["instant"]))}: {esc(str(total))} locations, {esc(str(result["rows"]))} rows.</p>
{_recommendation(result, advice, workload, stated)}
{trade}
<section id="kinds"><h2>Locations selected per query kind</h2>
<div class="grid">{"".join(per_kind)}</div>{_native(result, kinds)}</section>
<section id="figures"><h2>Size, build and lookup</h2>{_figures(result)}</section>
{_glossary(result, kinds)}
{_parameters(result)}
<section id="json"><h2>Figures as JSON</h2>
<details><summary>the output of lakesieve compare --json</summary>
<pre id="figures-json">{esc(figures_json)}</pre></details></section>
</body></html>
"""


def write_html(
    result: dict[str, Any], path: str | os.PathLike[str], workload: dict[str, float] | None = None
) -> Path:
    """Write the self-contained report for ``workload`` (default: advise's mix) at ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(result, workload), encoding="utf-8")
    return out
