"""Spark's pushed data source filters as lakesieve predicates.

Spark hands a Python data source the query's filters as
:class:`pyspark.sql.datasource.Filter` objects whose values already have the
column's type. :func:`filter_to_predicate` turns the ones lakesieve can plan
with (comparisons, IN, IS NULL) into predicate nodes; every other filter is
left to Spark alone.
"""

from __future__ import annotations

from typing import Any

from lakesieve import expressions as p
from lakesieve.expressions.values import value_literal
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
)

_COMPARISONS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def filter_to_predicate(f: Filter) -> Any:
    """Translate one Spark filter into our predicate tree, or ``None`` if we cannot."""
    attr = getattr(f, "attribute", None)
    if attr is None or len(attr) != 1:
        return None
    column = attr[0]
    for cls, op in _COMPARISONS.items():
        if isinstance(f, cls):
            lit = value_literal(getattr(f, "value", None))
            return None if lit is None else p.Compare(column, op, lit)
    if isinstance(f, In):
        lits = [value_literal(v) for v in getattr(f, "value", ())]
        if not lits or any(lit is None for lit in lits):
            return None
        return p.InList(column, tuple(lits))
    if isinstance(f, IsNull):
        return p.IsNull(column)
    return None
