"""Rendering a bound predicate as Spark SQL with the same meaning.

Literals are typed explicitly (``CAST(5 AS BIGINT)``, ``DATE '...'``,
timestamps with ``+00:00``) so Spark reads each exactly as bound, and NULL
stays NULL (``CAST(NULL AS BOOLEAN)``), keeping SQL's three-valued logic.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from lakesieve.errors import PredicateError

from .binding import BoundColumn, BoundPredicate
from .literals import INT_RANGE, is_float_type
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
)
from .visitor import PredicateVisitor


def quote_ident(name: str) -> str:
    """``name`` as a backquoted Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any, col: BoundColumn) -> str:
    """Render a value of the column's comparison domain as a Spark SQL literal.

    The text means the same value to Spark and to :func:`~lakesieve.expressions.parse`. Floats are
    rendered as doubles (float columns compare in double); timestamps carry
    an explicit ``+00:00`` so Spark's session time zone does not matter.
    """
    t = col.spark_type
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if t == "timestamp_ntz":
            return f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"
        return f"TIMESTAMP '{value.isoformat(sep=' ')}+00:00'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        escaped = escaped.replace("\0", "\\0")
        return "'" + escaped + "'"
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
        return f"CAST({value!r} AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        text = format(value, "f")
        _, digits, exponent = value.as_tuple()
        scale = max(-int(exponent), 0)
        precision = max(len(digits), scale + 1, 1)
        return f"CAST({text} AS DECIMAL({min(precision, 38)},{scale}))"
    if isinstance(value, int):
        kind = t.upper() if t in INT_RANGE else "BIGINT"
        if kind == "BIGINT" and not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]:
            return str(value)
        return f"CAST({value} AS {kind})"
    raise PredicateError(f"cannot render literal {value!r} for column {col.name!r}")


def sql_column(col: BoundColumn) -> str:
    """The column as Spark SQL compares it.

    Float and double columns are compared as ``(CAST(c AS DOUBLE) + 0.0)``:
    the same comparison in double that Spark makes for ``c op literal``, but an
    expression Spark cannot push into the Parquet reader, whose min/max
    statistics disagree with Spark on NaN and -0.0 and would skip files
    holding matching rows.
    """
    name = quote_ident(col.name)
    if is_float_type(col.spark_type):
        return f"(CAST({name} AS DOUBLE) + CAST(0 AS DOUBLE))"
    return name


class _SqlRenderer(PredicateVisitor[str]):
    """One Spark SQL boolean expression per node."""

    def __init__(self, columns: dict[str, BoundColumn]) -> None:
        self.columns = columns

    def visit_compare(self, node: Compare) -> str:
        col = self.columns[node.column]
        op = "<>" if node.op == "!=" else node.op
        return f"({sql_column(col)} {op} {sql_literal(node.value, col)})"

    def visit_in_list(self, node: InList) -> str:
        col = self.columns[node.column]
        vals = [sql_literal(v, col) for v in node.values] + (["NULL"] if node.has_null else [])
        return f"({sql_column(col)} {'NOT ' if node.negated else ''}IN ({', '.join(vals)}))"

    def visit_between(self, node: Between) -> str:
        col = self.columns[node.column]
        lo, hi = sql_literal(node.low, col), sql_literal(node.high, col)
        return f"({sql_column(col)} {'NOT ' if node.negated else ''}BETWEEN {lo} AND {hi})"

    def visit_is_null(self, node: IsNull) -> str:
        name = quote_ident(self.columns[node.column].name)
        return f"({name} IS {'NOT ' if node.negated else ''}NULL)"

    def visit_column_truth(self, node: ColumnTruth) -> str:
        name = quote_ident(self.columns[node.column].name)
        if node.value:
            return f"({name} IS NOT NULL OR CAST(NULL AS BOOLEAN))"
        return f"({name} IS NULL AND CAST(NULL AS BOOLEAN))"

    def visit_const(self, node: Const) -> str:
        if node.value is None:
            return "CAST(NULL AS BOOLEAN)"
        return "TRUE" if node.value else "FALSE"

    def visit_and(self, node: And) -> str:
        parts: list[str] = []
        for c in node.children:
            parts.append(c.accept(self))
        return "(" + " AND ".join(parts) + ")"

    def visit_or(self, node: Or) -> str:
        parts: list[str] = []
        for c in node.children:
            parts.append(c.accept(self))
        return "(" + " OR ".join(parts) + ")"

    def visit_not(self, node: Not) -> str:
        return "(NOT " + node.child.accept(self) + ")"


def to_sql(bound: BoundPredicate) -> str:
    """Render a bound predicate as Spark SQL with typed literals, NULLs kept as NULL."""
    return _SqlRenderer(bound.columns).visit(bound.node)
