"""The predicate tree: literals as written, leaves, and the AND/OR/NOT nodes.

One tree serves both stages: :func:`~lakesieve.expressions.parse` builds it
with column names as written and :class:`Literal` values, and
:func:`~lakesieve.expressions.bind` rebuilds it with exact column names and
values in each column's comparison domain. Every node takes part in the
visitor of :mod:`lakesieve.expressions.visitor` through :meth:`accept`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .visitor import PredicateVisitor

T = TypeVar("T")


@dataclass(frozen=True)
class Literal:
    """A literal as written.

    ``kind`` is ``number``, ``string``, ``date``, ``timestamp``, ``timestamp_ntz``,
    ``bool`` or ``null``; ``cast`` is the target of ``CAST(literal AS type)``:
    the type name and its parameters (``("DECIMAL", (10, 2))``).
    """

    kind: str
    text: str
    cast: tuple[str, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``op`` is one of ``= != < <= > >=``."""

    column: str
    op: str
    value: Any

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_compare``."""
        return visitor.visit_compare(self)


@dataclass(frozen=True)
class InList:
    """``column [NOT] IN (values)``; ``has_null``: the list also held a NULL literal.

    With a NULL in the list, ``x IN (...)`` is NULL (not FALSE) where no value
    matches, and ``x NOT IN (...)`` is never TRUE.
    """

    column: str
    values: tuple[Any, ...]
    negated: bool = False
    has_null: bool = False

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_in_list``."""
        return visitor.visit_in_list(self)


@dataclass(frozen=True)
class Between:
    """``column [NOT] BETWEEN low AND high`` (both inclusive)."""

    column: str
    low: Any
    high: Any
    negated: bool = False

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_between``."""
        return visitor.visit_between(self)


@dataclass(frozen=True)
class IsNull:
    """``column IS [NOT] NULL``."""

    column: str
    negated: bool = False

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_is_null``."""
        return visitor.visit_is_null(self)


@dataclass(frozen=True)
class And:
    """Conjunction of two or more predicates."""

    children: tuple[Predicate, ...]

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_and``."""
        return visitor.visit_and(self)


@dataclass(frozen=True)
class Or:
    """Disjunction of two or more predicates."""

    children: tuple[Predicate, ...]

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_or``."""
        return visitor.visit_or(self)


@dataclass(frozen=True)
class Not:
    """Negation."""

    child: Predicate

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_not``."""
        return visitor.visit_not(self)


@dataclass(frozen=True)
class Const:
    """A predicate with one value for every row: TRUE, FALSE or NULL (``value=None``).

    ``x = NULL`` is NULL: it keeps no row, and neither does its negation.
    """

    value: bool | None

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_const``."""
        return visitor.visit_const(self)


@dataclass(frozen=True)
class ColumnTruth:
    """``value`` for every row where ``column`` is not NULL, NULL where it is.

    What a comparison becomes when its answer does not depend on the value:
    ``int_col = 1.5`` is FALSE for every non-NULL ``int_col`` and NULL for the
    others, so ``NOT (int_col = 1.5)`` keeps the non-NULL rows only.
    """

    column: str
    value: bool

    def accept(self, visitor: PredicateVisitor[T]) -> T:
        """Hand this node to ``visitor.visit_column_truth``."""
        return visitor.visit_column_truth(self)


Predicate = Compare | InList | Between | IsNull | And | Or | Not | Const | ColumnTruth
"""Any node of a predicate tree."""
