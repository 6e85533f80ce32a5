"""The planner: turn a bound predicate into the set of locations to read.

It walks the predicate itself (AND intersects, OR unites, NOT is pushed to
the leaves first) and asks each index only about one leaf at a time, in the
shape of a :class:`~lakesieve.model.KeyQuery`. Anything it cannot translate,
and any index that fails, means "every location may match" — never fewer
locations than the truth.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from lakesieve import registry
from lakesieve.model import KeyQuery, LookupResult
from lakesieve.predicate import (
    And,
    Between,
    ColumnTruth,
    Compare,
    Const,
    InList,
    IsNull,
    Or,
    Predicate,
    push_not,
)
from lakesieve.store import IndexDefinition, IndexState

ALL = None  # the answer "every location"
Answer = frozenset[str] | None


class LakesieveWarning(UserWarning):
    """Pruning fell back to reading more (or all) locations; the rows are still exact."""


@dataclass
class LoadedIndex:
    """An index state ready for lookups, or the reason it is not usable.

    Attributes:
        definition: the index as declared in the log.
        state: the state chosen for the query's instant (``None``: never built).
        obj: what the index type's load hook returned.
        error: why the index cannot be used (``obj`` is then ``None``).
        added_for_staleness: locations changed between the state's instant and
            the query's, added to every answer of this index.
        overlay: the summed delta chain on top of the base, for a state refreshed
            incrementally (``None`` for a base state).
        selected: locations this index selected over all leaves it answered.
    """

    definition: IndexDefinition
    state: IndexState | None
    obj: Any = None
    error: str = ""
    added_for_staleness: frozenset[str] = frozenset()
    overlay: Any = None
    answered: int = 0
    selected: set[str] = field(default_factory=set)

    @property
    def usable(self) -> bool:
        """Whether lookups can be asked of this index."""
        return self.obj is not None and not self.error


def leaf_queries(node: Predicate) -> list[KeyQuery] | None:
    """The key queries whose union covers a leaf, or ``None`` when no index can help."""
    if isinstance(node, Compare):
        v = node.value
        return {
            "=": [KeyQuery("points", values=(v,))],
            "<": [KeyQuery("range", high=v, high_inclusive=False)],
            "<=": [KeyQuery("range", high=v, high_inclusive=True)],
            ">": [KeyQuery("range", low=v, low_inclusive=False)],
            ">=": [KeyQuery("range", low=v, low_inclusive=True)],
        }.get(node.op)
    if isinstance(node, InList):
        # x NOT IN (..., NULL) is never TRUE; the planner answers it before asking here
        return None if node.negated else [KeyQuery("points", values=tuple(node.values))]
    if isinstance(node, Between):
        if not node.negated:
            return [KeyQuery("range", low=node.low, high=node.high)]
        return [
            KeyQuery("range", high=node.low, high_inclusive=False),
            KeyQuery("range", low=node.high, low_inclusive=False),
        ]
    if isinstance(node, IsNull):
        return None if node.negated else [KeyQuery("is_null")]
    return None


def _ask(index: LoadedIndex, queries: list[KeyQuery]) -> Answer:
    found: set[str] = set()
    for query in queries:
        try:
            result = registry.index_type(index.definition.type).lookup(index.obj, query)
            if not isinstance(result, LookupResult):
                raise TypeError(f"lookup returned {type(result).__name__}, not LookupResult")
        except Exception as exc:  # an optional index must never break a query
            index.error = f"lookup failed: {exc}"
            warnings.warn(
                f"index {index.definition.name!r} on column {index.definition.column!r} failed "
                f"({exc}); reading every location it cannot rule out",
                LakesieveWarning,
                stacklevel=3,
            )
            return ALL
        if result.locations is None:
            return ALL
        found |= result.locations
        if index.overlay is not None:
            extra = index.overlay.locations(query)
            if extra is None:
                return ALL
            found |= extra
    return frozenset(found | index.added_for_staleness)


def evaluate(node: Predicate, by_column: dict[str, list[LoadedIndex]]) -> Answer:
    """Locations that may hold rows matching ``node`` (``None`` = all).

    ``node`` must be bound; NOT is pushed down first.
    """
    return _eval(push_not(node), by_column)


def _eval(node: Predicate, by_column: dict[str, list[LoadedIndex]]) -> Answer:
    # ``node`` has no NOT, so it is monotone in its leaves: a leaf that is NULL
    # (Const(None), a comparison on a NULL value) can be read as FALSE, since a
    # row is kept only where the whole predicate is TRUE
    if isinstance(node, Const | ColumnTruth):
        return ALL if node.value else frozenset()
    if isinstance(node, InList) and node.negated and node.has_null:
        return frozenset()
    if isinstance(node, And):
        answers = [_eval(c, by_column) for c in node.children]
        known = [a for a in answers if a is not None]
        if not known:
            return ALL
        out = known[0]
        for k in known[1:]:
            out = out & k
        return out
    if isinstance(node, Or):
        acc: set[str] = set()
        for child in node.children:
            sub = _eval(child, by_column)
            if sub is None:
                return ALL
            acc |= sub
        return frozenset(acc)
    queries = leaf_queries(node)
    column = getattr(node, "column", None)
    if queries is None or column is None:
        return ALL
    best: Answer = ALL
    for index in by_column.get(column, []):
        if not index.usable:
            continue
        answer = _ask(index, queries)
        if answer is None:
            continue
        index.answered += 1
        index.selected |= answer
        best = answer if best is None else best & answer
    return best
