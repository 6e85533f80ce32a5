"""The one way to walk a predicate tree: a visitor with one method per node kind.

A walk subclasses :class:`PredicateVisitor` with the result type it builds
(a SQL string, an Arrow expression, a set of locations, another tree) and
implements every ``visit_*`` method; mypy then checks that no node kind is
forgotten. Each method decides itself whether and how to visit the children,
so a walk can carry state down (NOT push-down), stop early (the planner's OR)
or combine results in its own order.

Dispatch is double dispatch through each node's ``accept`` method, with no
``isinstance`` chains. Callers start a walk with :meth:`PredicateVisitor.visit`;
inside a walk, children are visited with ``child.accept(self)`` in a plain
loop (no generator or comprehension, each of which costs a frame), two Python
frames per tree level, so the deepest tree the parser accepts stays far below
the interpreter's recursion limit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

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

T = TypeVar("T")


class PredicateVisitor(ABC, Generic[T]):
    """A walk over a predicate tree producing a ``T`` per node."""

    def visit(self, node: Predicate) -> T:
        """The result for ``node``, from the method for its kind."""
        return node.accept(self)

    @abstractmethod
    def visit_compare(self, node: Compare) -> T:
        """``column op value``."""

    @abstractmethod
    def visit_in_list(self, node: InList) -> T:
        """``column [NOT] IN (values)``."""

    @abstractmethod
    def visit_between(self, node: Between) -> T:
        """``column [NOT] BETWEEN low AND high``."""

    @abstractmethod
    def visit_is_null(self, node: IsNull) -> T:
        """``column IS [NOT] NULL``."""

    @abstractmethod
    def visit_column_truth(self, node: ColumnTruth) -> T:
        """A fixed answer for every non-NULL value of a column."""

    @abstractmethod
    def visit_const(self, node: Const) -> T:
        """TRUE, FALSE or NULL for every row."""

    @abstractmethod
    def visit_and(self, node: And) -> T:
        """Conjunction; visit the children as the walk needs."""

    @abstractmethod
    def visit_or(self, node: Or) -> T:
        """Disjunction; visit the children as the walk needs."""

    @abstractmethod
    def visit_not(self, node: Not) -> T:
        """Negation; visit the child as the walk needs."""
