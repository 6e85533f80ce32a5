"""The planner: turn a bound predicate into the set of locations to read.

It walks the predicate itself, once (AND intersects, OR unites, NOT is pushed
to the leaves on the way) and asks each index only about one leaf at a time, in the
shape of a :class:`~lakesieve.model.KeyQuery` — except that the range comparisons
an AND holds on one column are asked as their intersection, one range
(:mod:`lakesieve.query.key_ranges`). Anything it cannot translate,
and any index that fails, means "every location may match" — never fewer
locations than the truth.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from lakesieve.errors import LakesieveWarning
from lakesieve.expressions import (
    And,
    Between,
    ColumnTruth,
    Compare,
    Const,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateVisitor,
    push_not,
)
from lakesieve.model import KeyQuery, LookupResult
from lakesieve.query.key_ranges import merge_ranges
from lakesieve.state.in_use import IndexInUse

ALL = None  # the answer "every location"
Answer = frozenset[str] | None


class _LeafQueries(PredicateVisitor[list[KeyQuery] | None]):
    """The key queries whose union covers a leaf; ``None`` where no index can help."""

    def visit_compare(self, node: Compare) -> list[KeyQuery] | None:
        v, op = node.value, node.op
        if op == "=":
            return [KeyQuery("points", values=(v,))]
        if op == "<" or op == "<=":
            return [KeyQuery("range", high=v, high_inclusive=op == "<=")]
        if op == ">" or op == ">=":
            return [KeyQuery("range", low=v, low_inclusive=op == ">=")]
        return None

    def visit_in_list(self, node: InList) -> list[KeyQuery] | None:
        # x NOT IN (..., NULL) is never TRUE; the planner answers it before asking here
        return None if node.negated else [KeyQuery("points", values=tuple(node.values))]

    def visit_between(self, node: Between) -> list[KeyQuery] | None:
        if not node.negated:
            return [KeyQuery("range", low=node.low, high=node.high)]
        return [
            KeyQuery("range", high=node.low, high_inclusive=False),
            KeyQuery("range", low=node.high, low_inclusive=False),
        ]

    def visit_is_null(self, node: IsNull) -> list[KeyQuery] | None:
        return None if node.negated else [KeyQuery("is_null")]

    def visit_column_truth(self, node: ColumnTruth) -> list[KeyQuery] | None:
        return None

    def visit_const(self, node: Const) -> list[KeyQuery] | None:
        return None

    def visit_and(self, node: And) -> list[KeyQuery] | None:
        return None

    def visit_or(self, node: Or) -> list[KeyQuery] | None:
        return None

    def visit_not(self, node: Not) -> list[KeyQuery] | None:
        return None


_LEAF_QUERIES = _LeafQueries()


def leaf_queries(node: Predicate) -> list[KeyQuery] | None:
    """The key queries whose union covers a leaf, or ``None`` when no index can help."""
    return _LEAF_QUERIES.visit(node)


def _ask(index: IndexInUse, queries: list[KeyQuery]) -> Answer:
    found: set[str] = set()
    for query in queries:
        try:
            result = index.loaded().lookup(query)
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
        if len(queries) == 1 and index.overlay is None and not index.added_for_staleness:
            return frozenset(result.locations)  # no copy when it is one already
        if index.overlay is not None:
            found |= index.overlay.moved(result.locations)
            extra = index.overlay.locations(query)
            if extra is None:
                return ALL
            found |= extra
        else:
            found |= result.locations
    return frozenset(found | index.added_for_staleness)


def _combine(answers: list[Answer], union: bool) -> Answer:
    """The union of ``answers`` (none of them ALL), or the intersection of the known ones."""
    if union:
        acc: set[str] = set()
        for sub in answers:
            acc |= sub or frozenset()
        return frozenset(acc)
    known = [a for a in answers if a is not None]
    if not known:
        return ALL
    out = known[0]
    for k in known[1:]:
        out = out & k
    return out


class _Evaluator(PredicateVisitor[Answer]):
    """Locations that may hold rows matching a bound tree (``None`` = all), in one walk.

    NOT is pushed down on the way: the evaluator with ``negate`` answers the
    negation of the node it visits (AND and OR swap, a leaf is answered as
    its negated leaf), so the tree it answers has no NOT and is monotone in
    its leaves. A leaf that is NULL (``Const(None)``, a comparison on a NULL
    value) can then be read as FALSE, since a row is kept only where the
    whole predicate is TRUE.
    """

    def __init__(
        self,
        by_column: dict[str, list[IndexInUse]],
        negate: bool = False,
        flipped: _Evaluator | None = None,
    ) -> None:
        self.by_column = by_column
        self.negate = negate
        self._flipped = flipped

    @property
    def flipped(self) -> _Evaluator:
        """The evaluator of the negation (made on first use: most trees have no NOT)."""
        if self._flipped is None:
            self._flipped = _Evaluator(self.by_column, not self.negate, self)
        return self._flipped

    def _lookup(self, column: str, queries: list[KeyQuery] | None) -> Answer:
        """The tightest answer of the usable indexes on ``column`` for ``queries``."""
        if queries is None:
            return ALL
        best: Answer = ALL
        for index in self.by_column.get(column, []):
            if not index.usable:
                continue
            answer = _ask(index, queries)
            if answer is None:
                continue
            index.record(answer)
            best = answer if best is None else best & answer
        return best

    def visit_compare(self, node: Compare) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        return self._lookup(node.column, _LEAF_QUERIES.visit_compare(node))

    def visit_in_list(self, node: InList) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        if node.negated and node.has_null:
            return frozenset()
        return self._lookup(node.column, _LEAF_QUERIES.visit_in_list(node))

    def visit_between(self, node: Between) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        return self._lookup(node.column, _LEAF_QUERIES.visit_between(node))

    def visit_is_null(self, node: IsNull) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        return self._lookup(node.column, _LEAF_QUERIES.visit_is_null(node))

    def visit_column_truth(self, node: ColumnTruth) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        return ALL if node.value else frozenset()

    def visit_const(self, node: Const) -> Answer:
        if self.negate:
            return push_not(node, negate=True).accept(self.flipped)
        return ALL if node.value else frozenset()

    # AND and OR visit their children in a plain loop here rather than in a shared
    # helper, which would cost a frame per tree level

    def visit_and(self, node: And) -> Answer:
        union = self.negate  # NOT (a AND b) is (NOT a) OR (NOT b)
        answers: list[Answer] = []
        children: Sequence[Predicate] = node.children
        if not union:
            # k >= a AND k <= b is asked as one range (lakesieve.query.key_ranges)
            ranges, children = merge_ranges(children)
            answers = [self._lookup(column, [query]) for column, query in ranges.items()]
        for child in children:
            sub = child.accept(self)
            if union and sub is None:
                return ALL
            answers.append(sub)
        return _combine(answers, union)

    def visit_or(self, node: Or) -> Answer:
        union = not self.negate  # NOT (a OR b) is (NOT a) AND (NOT b)
        if not union:  # as that AND, so that its range comparisons merge
            negated = tuple(
                push_not(c, negate=True) if isinstance(c, Compare) else Not(c)
                for c in node.children
            )
            return self.flipped.visit_and(And(negated))
        answers: list[Answer] = []
        for child in node.children:
            sub = child.accept(self)
            if union and sub is None:
                return ALL
            answers.append(sub)
        return _combine(answers, union)

    def visit_not(self, node: Not) -> Answer:
        return node.child.accept(self.flipped)


def evaluate(node: Predicate, by_column: dict[str, list[IndexInUse]]) -> Answer:
    """Locations that may hold rows matching ``node`` (``None`` = all).

    ``node`` must be bound. NOT is pushed down during the same walk.
    """
    return _Evaluator(by_column).visit(node)
