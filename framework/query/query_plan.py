"""A query's plan: which read units it needs and why, and its JSON explanation.

``Table.plan`` makes a :class:`Plan`; ``Table.read``, the driver-side Arrow
read (:mod:`lakesieve.query.arrow_read`) and the Spark data source read its units;
:func:`explain_plan` is what ``Table.explain`` and ``lakesieve explain`` show.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from lakesieve.errors import LakesieveError
from lakesieve.expressions import BoundPredicate, to_sql
from lakesieve.model import Instant, Snapshot
from lakesieve.state.in_use import IndexInUse


@dataclass
class Plan:
    """Which read units a query needs, and why.

    Attributes:
        table_instant: the instant the query reads (``None`` for an empty table).
        snapshot: every read unit at that instant.
        units: the read units selected.
        bound: the bound predicate (``None`` without a ``where``).
        indexes: the indexes consulted, with their status.
        warnings: why pruning was weaker than it could be.
        plan_ms: how long planning took.
        schema: the table's Arrow schema at ``table_instant``, when planning fetched it.
    """

    table_instant: Instant | None
    snapshot: Snapshot
    units: tuple[Any, ...]
    bound: BoundPredicate | None
    indexes: list[IndexInUse] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plan_ms: float = 0.0
    schema: pa.Schema | None = None

    @property
    def locations_total(self) -> int:
        """Locations visible at the instant."""
        return len(self.snapshot.units)

    @property
    def locations_selected(self) -> int:
        """Locations the query will read."""
        return len(self.units)


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a :func:`time.perf_counter` reading)."""
    return (time.perf_counter() - started) * 1000.0


def _loaded_bytes(item: IndexInUse) -> int:
    """Bytes a query loads for ``item``: its state's base and every delta on top of it."""
    if item.state is None:
        return 0
    try:
        return sum(s.size_bytes for s in item.definition.chain(item.state))
    except LakesieveError:  # a broken chain: the state's own bytes
        return item.state.size_bytes


def explain_plan(
    plan: Plan, table_path: str, table_format: str, where: str | None, as_of: str | None
) -> dict[str, Any]:
    """What ``plan`` reads and which index contributed what, as a JSON-ready dict."""
    return {
        "table": table_path,
        "format": table_format,
        "where": where,
        "predicate_sql": to_sql(plan.bound) if plan.bound else None,
        "as_of": as_of,
        "table_instant": plan.table_instant.id if plan.table_instant else None,
        "locations_total": plan.locations_total,
        "locations_selected": plan.locations_selected,
        "bytes_total": plan.snapshot.size_bytes,
        "bytes_selected": sum(u.size_bytes for u in plan.units),
        "selected": sorted(u.location for u in plan.units),
        "indexes": explain_indexes(plan),
        "warnings": plan.warnings,
        "plan_ms": round(plan.plan_ms, 3),
    }


def explain_indexes(plan: Plan) -> list[dict[str, Any]]:
    """Each index ``plan`` consulted: its status, what it selected, whether it was stale."""
    indexes = []
    visible = plan.snapshot.locations
    for item in plan.indexes:
        d = item.definition
        entry: dict[str, Any] = {
            "name": d.name,
            "type": d.type,
            "column": d.column,
            "instant": item.state.instant if item.state else None,
            "size_bytes": _loaded_bytes(item),
            "status": "used"
            if item.usable and item.answered
            else ("unusable" if item.error else "not applicable"),
        }
        if item.error:
            entry["reason"] = item.error
        if item.usable and item.answered:
            # an index may still name locations the snapshot no longer has (files a
            # later commit rewrote): they are not read, so they are not counted
            entry["locations_selected"] = len(item.selected & visible)
        if (
            item.state is not None
            and plan.table_instant is not None
            and item.state.instant != plan.table_instant.id
        ):
            entry["stale"] = True
            entry["locations_added_for_staleness"] = len(item.added_for_staleness)
        if item.unseen:
            # locations of the snapshot the index never saw: always read
            entry["locations_unseen"] = item.unseen
        indexes.append(entry)
    return indexes
