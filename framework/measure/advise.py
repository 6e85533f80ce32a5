"""Recommend an index for a workload mix: ``lakesieve advise``.

The score of an index type is the share of locations it lets a query skip,
weighted by the workload mix (``point=0.6,range_0.1pct=0.3,in=0.1``). Among
the types whose skipped share is at least :data:`NEAR_BEST` of the best one,
the one with the most skipping per byte of index wins; when even the best
skips less than :data:`MIN_SKIP` of the locations, no index is recommended.

The figures come from :func:`~lakesieve.measure.compare.compare_indexes`, either just
measured or read back from a saved ``lakesieve compare --json`` output
(:func:`load_compare_json`), in which case nothing is built and Spark does not
start. :func:`toml_fragment` prints the answer as a ``lakesieve.toml`` table
section that :func:`~lakesieve.config.load_config` accepts as it is.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from lakesieve.errors import LakesieveError
from lakesieve.measure.compare import KINDS

DEFAULT_WORKLOAD = {"point": 0.6, "range_0.1pct": 0.3, "in": 0.1}
#: the figures :func:`advise` reads from a compare result, and from each of its types
RESULT_KEYS = ("table", "format", "column", "locations_total", "types")
TYPE_KEYS = ("size_bytes", "selected")
NEAR_BEST = 0.8
MIN_SKIP = 0.05


def parse_workload(text: str | None) -> dict[str, float]:
    """``"point=0.6,in=0.4"`` -> weights normalised to sum to 1."""
    if not text:
        return dict(DEFAULT_WORKLOAD)
    out: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        kind, sep, value = part.partition("=")
        kind = kind.strip()
        if not sep or kind not in KINDS:
            raise LakesieveError(
                f"bad workload item {part.strip()!r}; expected KIND=WEIGHT with KIND in {', '.join(KINDS)}"
            )
        try:
            w = float(value)
        except ValueError:
            raise LakesieveError(
                f"bad workload weight {value.strip()!r} for {kind!r}; expected a number"
            ) from None
        if w < 0:
            raise LakesieveError(f"workload weight for {kind!r} must not be negative")
        out[kind] = out.get(kind, 0.0) + w
    s = sum(out.values())
    if s <= 0:
        raise LakesieveError("workload weights must sum to more than 0")
    return {k: v / s for k, v in out.items()}


def format_workload(workload: dict[str, float]) -> str:
    """``{"point": 0.6, "in": 0.4}`` -> ``"point=0.60, in=0.40"``."""
    return ", ".join(f"{k}={w:.2f}" for k, w in workload.items())


def load_compare_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the figures saved by ``lakesieve compare --json`` and check they are complete.

    Raises:
        LakesieveError: the file is missing or unreadable, is not JSON, or lacks
            a figure :func:`advise` needs (one line naming the file and the key).
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as fh:
            result = json.load(fh)
    except FileNotFoundError:
        raise LakesieveError(f"--from-json {source}: file not found") from None
    except OSError as exc:
        raise LakesieveError(f"--from-json {source}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LakesieveError(f"--from-json {source}: not JSON ({exc})") from None
    what = "is not the output of `lakesieve compare --json`"
    if not isinstance(result, dict):
        raise LakesieveError(f"--from-json {source} {what} (not an object)")
    for key in RESULT_KEYS:
        if key not in result:
            raise LakesieveError(f"--from-json {source} {what} (no {key!r})")
    if not isinstance(result["types"], dict):
        raise LakesieveError(f"--from-json {source} {what} ('types' is not an object)")
    for t, fig in result["types"].items():
        missing = [k for k in TYPE_KEYS if not isinstance(fig, dict) or k not in fig]
        if missing:
            raise LakesieveError(f"--from-json {source} {what} (no {missing[0]!r} for {t!r})")
    return result


def advise(result: dict[str, Any], workload: dict[str, float] | None = None) -> dict[str, Any]:
    """Pick the index type for ``workload`` from :func:`~lakesieve.measure.compare.compare_indexes`' figures.

    Returns ``{"column", "table", "format", "workload", "type" (None for no
    index), "reason" (one line), "scores"}``; ``scores`` maps each type to its
    ``skipped_share`` (workload-weighted share of locations skipped),
    ``size_bytes`` and ``skipped_per_kib``.
    """
    advice = _advise(result, workload or dict(DEFAULT_WORKLOAD))
    advice["table"] = result.get("table")
    advice["format"] = result.get("format")
    advice["workload"] = dict(workload or DEFAULT_WORKLOAD)
    return advice


def _advise(result: dict[str, Any], workload: dict[str, float]) -> dict[str, Any]:
    total = max(1, int(result["locations_total"]))
    scores: dict[str, dict[str, float]] = {}
    for t, fig in result["types"].items():
        skipped = sum(
            w * (1.0 - fig["selected"].get(k, total) / total) for k, w in workload.items()
        )
        size = max(1, int(fig["size_bytes"]))
        scores[t] = {
            "skipped_share": round(skipped, 4),
            "size_bytes": size,
            "skipped_per_kib": round(skipped / (size / 1024.0), 6),
        }
    mix = format_workload(workload)
    column = result["column"]
    if not scores:
        return {
            "column": column,
            "type": None,
            "reason": f"{column}: no index type compared",
            "scores": scores,
        }
    best_skip = max(s["skipped_share"] for s in scores.values())
    if best_skip < MIN_SKIP:
        return {
            "column": column,
            "type": None,
            "scores": scores,
            "reason": f"{column}: no index - the best type skips only {100 * best_skip:.1f}% of "
            f"{total} locations for workload {mix}",
        }
    near = [t for t, s in scores.items() if s["skipped_share"] >= NEAR_BEST * best_skip]
    pick = max(near, key=lambda t: (scores[t]["skipped_per_kib"], scores[t]["skipped_share"]))
    s = scores[pick]
    reason = (
        f"{column}: {pick} - skips {100 * s['skipped_share']:.1f}% of {total} locations for workload {mix} "
        f"(best {100 * best_skip:.1f}%) with {s['size_bytes']} bytes, the most pruning per byte among "
        f"{', '.join(sorted(near))}"
    )
    return {"column": column, "type": pick, "reason": reason, "scores": scores}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in {'"', "\\"}:
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_fragment(table_name: str, advice: dict[str, Any]) -> str:
    """A ``lakesieve.toml`` section declaring the table and the recommended index.

    The section names the table's absolute ``path`` and its ``format``, so the
    printed text loads as it is with :func:`~lakesieve.config.load_config`;
    when no index is recommended, the table is declared with no index and the
    reason is given as a comment.
    """
    label = table_name if re.fullmatch(r"[A-Za-z0-9_-]+", table_name) else toml_string(table_name)
    reason = "".join(
        "?" if ord(c) < 0x20 or ord(c) == 0x7F else c
        for c in " ".join(str(advice["reason"]).split())
    )
    lines = [f"# {reason}", f"[tables.{label}]"]
    if advice.get("table"):
        lines.append(f"path = {toml_string(str(advice['table']))}")
    if advice.get("format"):
        lines.append(f"format = {toml_string(str(advice['format']))}")
    if advice["type"] is not None:
        lines += [
            "",
            f"[[tables.{label}.indexes]]",
            f"column = {toml_string(str(advice['column']))}",
            f"type = {toml_string(str(advice['type']))}",
        ]
    return "\n".join(lines) + "\n"
