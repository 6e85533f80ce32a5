"""Predicates: parse SQL-like ``where`` strings, bind them to a schema, render them back.

The package holds one stage per module:

* :mod:`~lakesieve.expressions.nodes`: the tree (leaves, AND, OR, NOT, constants);
* :mod:`~lakesieve.expressions.parser`: a ``where`` string (a subset of Spark
  SQL) to an unbound tree of column names and raw literals;
* :mod:`~lakesieve.expressions.literals`: Spark SQL's literal typing;
* :mod:`~lakesieve.expressions.domains`: the domain Spark compares a column
  with literals in (exact, double or other), and the literals' values there;
* :mod:`~lakesieve.expressions.tightening`: exact comparisons fitted to the
  column's grid and range;
* :mod:`~lakesieve.expressions.binding`: columns resolved against an Arrow
  schema and literals typed, refusing with a one-line
  :class:`~lakesieve.errors.PredicateError` what Spark would reject or answer
  in a way that depends on the data;
* :mod:`~lakesieve.expressions.negation`: NOT pushed down to the leaves;
* :mod:`~lakesieve.expressions.visitor`: the one walk mechanism every stage
  below uses;
* :mod:`~lakesieve.expressions.values`: a filter's Python value (as Spark
  hands the data sources) as a literal;
* :mod:`~lakesieve.expressions.sql` and :mod:`~lakesieve.expressions.arrow`:
  bound trees rendered to Spark SQL and to Arrow with the same meaning
  (three-valued logic, NaN, -0.0), so every read path keeps exactly the rows
  Spark SQL keeps.
"""

from __future__ import annotations

from .arrow import to_arrow
from .binding import (
    BoundColumn,
    BoundPredicate,
    bind,
    resolve_column,
    spark_type_of,
    typed_literal,
)
from .negation import push_not
from .nodes import (
    And,
    Between,
    ColumnTruth,
    Compare,
    Const,
    InList,
    IsNull,
    Literal,
    Not,
    Or,
    Predicate,
)
from .parser import MAX_DEPTH, parse
from .sql import quote_ident, sql_column, sql_literal, to_sql
from .visitor import PredicateVisitor

__all__ = [
    "MAX_DEPTH",
    "And",
    "Between",
    "BoundColumn",
    "BoundPredicate",
    "ColumnTruth",
    "Compare",
    "Const",
    "InList",
    "IsNull",
    "Literal",
    "Not",
    "Or",
    "Predicate",
    "PredicateVisitor",
    "bind",
    "parse",
    "push_not",
    "quote_ident",
    "resolve_column",
    "spark_type_of",
    "sql_column",
    "sql_literal",
    "to_arrow",
    "to_sql",
    "typed_literal",
]
