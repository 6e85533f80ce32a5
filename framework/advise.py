"""Recommend an index for a workload mix: ``lakesieve advise``.

The score of an index type is the share of locations it lets a query skip,
weighted by the workload mix (``point=0.6,range_0.1pct=0.3,in=0.1``). Among
the types whose skipped share is at least :data:`NEAR_BEST` of the best one,
the one with the most skipping per byte of index wins; when even the best
skips less than :data:`MIN_SKIP` of the locations, no index is recommended.
"""

from __future__ import annotations

from typing import Any

from lakesieve.compare import KINDS
from lakesieve.errors import LakesieveError

DEFAULT_WORKLOAD = {"point": 0.6, "range_0.1pct": 0.3, "in": 0.1}
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


def advise(result: dict[str, Any], workload: dict[str, float] | None = None) -> dict[str, Any]:
    """Pick the index type for ``workload`` from :func:`~lakesieve.compare.compare_indexes`' figures.

    Returns ``{"column", "type" (None for no index), "reason" (one line), "scores"}``.
    """
    workload = workload or dict(DEFAULT_WORKLOAD)
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
    mix = ", ".join(f"{k}={w:.2f}" for k, w in workload.items())
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


def toml_fragment(table_name: str, advice: dict[str, Any]) -> str:
    """A ``lakesieve.toml`` fragment declaring the recommended index (empty comment for none)."""
    import re

    label = (
        table_name
        if re.fullmatch(r"[A-Za-z0-9_-]+", table_name)
        else '"' + table_name.replace('"', '\\"') + '"'
    )
    if advice["type"] is None:
        return f"# {advice['reason']}\n"
    column = advice["column"].replace('"', '\\"')
    return (
        f"# {advice['reason']}\n[[tables.{label}.indexes]]\n"
        f'column = "{column}"\ntype = "{advice["type"]}"\n'
    )
