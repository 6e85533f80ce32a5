"""The native row of ``lakesieve compare``: what the table format's own data skipping reads.

Beside the index types, compare reports how many locations the format itself
would read for the same queries, the figure a user weighs an index against
first. A format plugin with :class:`~lakesieve.contract.protocols.NativeSkipping`
answers through its own library (Iceberg: pyiceberg's scan planning; Delta:
the statistics of its log). Any other format (Hudi) gets the framework's
model: minimum, maximum and null count of the column from the Parquet footers
of each location's base file
(:func:`~lakesieve.files.footer_stats.footer_statistics`), compared as Spark
SQL compares (:class:`~lakesieve.query.min_max.MinMaxSkipping`); a location
with log files or delete files, without a readable Parquet base file, or
without footer statistics for the column is always read. The Hudi plugin
answers with the same model under its own label. The row says which of these
answered (``source``) and whether it is an approximation of the format's
planning.

Every query compare asks is one comparison, ``IN`` list or ``BETWEEN`` on the
column; each is asked as the planner asks an index
(:func:`~lakesieve.query.planner.leaf_queries`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lakesieve.contract.protocols import NativeSkipping, SkipsFiles
from lakesieve.expressions import BoundColumn
from lakesieve.files.footer_stats import footer_statistics
from lakesieve.model import Snapshot
from lakesieve.query.min_max import MinMaxSkipping
from lakesieve.query.planner import leaf_queries

#: The label of the framework's footer model, for formats without their own planning.
FOOTER_SOURCE = "approximation: Parquet footer min/max of each location's base file"


def choose_skipping(
    fmt: Any, root: str, snapshot: Snapshot, instant: str | None, col: BoundColumn
) -> SkipsFiles:
    """The format's own skipping where its plugin has it, else the footer model."""
    note = ""
    if isinstance(fmt, NativeSkipping):
        try:
            own = fmt.native_skipping(instant, col.name, col.spark_type)
        except Exception as exc:  # the row is a figure: report the failure, read by the model
            own = None
            note = f" (the format's own skipping failed: {(str(exc).splitlines() or [type(exc).__name__])[0][:200]})"
        if own is not None:
            return own
    source = FOOTER_SOURCE + note
    stats = footer_statistics(root, snapshot.units, col.name, col.spark_type)
    return MinMaxSkipping(col.spark_type, stats, source)


def selection_counts(
    bound: Mapping[str, Sequence[Any]],
    locations: frozenset[str],
    answer: Callable[[Any], frozenset[str] | set[str] | None],
) -> tuple[dict[str, float], dict[str, int]]:
    """Mean locations ``answer`` selects per query kind, and how often it selects them all.

    ``bound`` maps each kind to its bound predicates; ``answer`` takes one
    predicate's node and returns the locations it selects (``None``: every
    location). An answer is counted among ``locations`` (the snapshot's).
    Returns ``(selected, answered_all)``, keyed by kind, as compare reports them.
    """
    total = len(locations)
    selected: dict[str, float] = {}
    answered_all: dict[str, int] = {}
    for kind, preds in bound.items():
        counts: list[int] = []
        alls = 0
        for bp in preds:
            found = answer(bp.node)
            if found is None:
                alls += 1
                counts.append(total)
            else:
                counts.append(len(found & locations))
        selected[kind] = round(statistics.fmean(counts), 3) if counts else float(total)
        answered_all[kind] = alls
    return selected, answered_all


def native_row(
    skipping: SkipsFiles, bound: Mapping[str, Sequence[Any]], locations: frozenset[str]
) -> dict[str, Any]:
    """Mean locations ``skipping`` selects per query kind, as the index types' ``selected``.

    A query it cannot answer counts every location (``answered_all``).
    """
    selected, answered_all = selection_counts(
        bound, locations, lambda node: select_for(skipping, node)
    )
    return {
        "source": skipping.source,
        "approximation": bool(skipping.approximation),
        "selected": selected,
        "answered_all": answered_all,
    }


def select_for(skipping: SkipsFiles, node: Any) -> frozenset[str] | None:
    """The locations ``skipping`` reads for one bound leaf predicate (``None``: every location)."""
    queries = leaf_queries(node)
    if queries is None:
        return None
    found: set[str] = set()
    for query in queries:
        answer = skipping.lookup(query).locations
        if answer is None:
            return None
        found |= answer
    return frozenset(found)


def native_label(native: Mapping[str, Any]) -> str:
    """One line naming what the native row is, for the text table and the report."""
    kind = "approximation" if native.get("approximation") else "the format's own planning"
    source = str(native.get("source", ""))
    if source.startswith("approximation"):
        return f"native: {source}"
    return f"native ({kind}): {source}"
