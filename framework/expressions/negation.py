"""NOT push-down: an equivalent tree without :class:`~lakesieve.expressions.nodes.Not` nodes."""

from __future__ import annotations

from .nodes import (
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
)
from .visitor import PredicateVisitor

_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class _PushNot(PredicateVisitor[Predicate]):
    """The tree (``negate`` False) or its negation (``negate`` True), NOT-free."""

    def __init__(self, negate: bool) -> None:
        self.negate = negate

    def visit_compare(self, node: Compare) -> Predicate:
        return Compare(node.column, _NEGATE[node.op], node.value) if self.negate else node

    def visit_in_list(self, node: InList) -> Predicate:
        if not self.negate:
            return node
        return InList(node.column, node.values, not node.negated, node.has_null)

    def visit_between(self, node: Between) -> Predicate:
        if not self.negate:
            return node
        return Between(node.column, node.low, node.high, not node.negated)

    def visit_is_null(self, node: IsNull) -> Predicate:
        return IsNull(node.column, not node.negated) if self.negate else node

    def visit_column_truth(self, node: ColumnTruth) -> Predicate:
        return ColumnTruth(node.column, not node.value) if self.negate else node

    def visit_const(self, node: Const) -> Predicate:
        if not self.negate:
            return node
        return Const(None if node.value is None else not node.value)

    def visit_and(self, node: And) -> Predicate:
        kids: list[Predicate] = []
        for c in node.children:
            kids.append(c.accept(self))
        return Or(tuple(kids)) if self.negate else And(tuple(kids))

    def visit_or(self, node: Or) -> Predicate:
        kids: list[Predicate] = []
        for c in node.children:
            kids.append(c.accept(self))
        return And(tuple(kids)) if self.negate else Or(tuple(kids))

    def visit_not(self, node: Not) -> Predicate:
        return node.child.accept(_NEGATED if not self.negate else _KEPT)


_KEPT = _PushNot(False)
_NEGATED = _PushNot(True)


def push_not(node: Predicate, negate: bool = False) -> Predicate:
    """Return an equivalent tree with no :class:`~lakesieve.expressions.nodes.Not` nodes.

    Equivalent in SQL's three-valued logic, not only for the rows kept:
    ``NOT (x < 5)`` is ``x >= 5`` (both NULL where ``x`` is NULL), De Morgan's
    laws hold for Kleene's AND/OR, and NOT of NULL is NULL. A NaN is handled
    by the leaves' own meaning: NaN is the largest double, so ``NOT (f < 5)``
    and ``f >= 5`` both hold for NaN. With ``negate``, the tree returned is
    the negation of ``node``.
    """
    return (_NEGATED if negate else _KEPT).visit(node)
