"""Bound predicates as ``pyarrow.compute`` expressions with Spark SQL's meaning.

Arrow's kernels differ from Spark SQL in three places, and each is
compensated here explicitly:

* **NaN.** Arrow's comparisons are IEEE's: NaN is neither greater nor less
  than anything and not equal to itself. Spark orders NaN above every number
  and finds NaN = NaN. Comparisons on float columns add ``is_nan`` where
  Spark's answer differs.
* **Signed zero.** ``is_in`` hashes -0.0 and 0.0 apart; Spark finds them
  equal. Float columns are compared as ``CAST(c AS DOUBLE) + 0.0``, which
  turns -0.0 into 0.0 (and widens float32 to double, as Spark compares a
  float column with a literal in double).
* **NULL in IN.** ``is_in`` answers FALSE for a NULL value and ignores NULL in
  the list; Spark answers NULL in both cases. The IN renderer returns NULL
  where Spark does.

AND, OR and NOT are Arrow's Kleene operators (``and_kleene``, ``or_kleene``,
``invert``), which are SQL's three-valued logic. ``Table.filter`` drops rows
whose expression is NULL, as SQL's WHERE does.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .binding import BoundColumn, BoundPredicate
from .domains import normalize_double
from .literals import is_float_type
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

_NULL = pc.scalar(pa.scalar(None, pa.bool_()))
_TRUE = pc.scalar(True)
_FALSE = pc.scalar(False)


def _value_type(col: BoundColumn) -> pa.DataType:
    t = col.arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if (
        pa.types.is_binary_view(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return pa.binary()
    return t


def _field(col: BoundColumn) -> Any:
    field = pc.field(col.name)
    if is_float_type(col.spark_type):
        return pc.add(field.cast(pa.float64()), pc.scalar(0.0))
    t = col.arrow_type
    target = _value_type(col)
    if t != target:
        field = field.cast(target)
    return field


def _scalar(value: Any, col: BoundColumn) -> Any:
    if is_float_type(col.spark_type):
        return pc.scalar(pa.scalar(normalize_double(float(value)), pa.float64()))
    return pc.scalar(pa.scalar(value, _value_type(col)))


def _unless_null(field: Any, expr: Any) -> Any:
    """``expr`` where the column is not NULL, NULL where it is."""
    return pc.if_else(pc.is_null(field), _NULL, expr)


def _compare(col: BoundColumn, op: str, value: Any) -> Any:
    field = _field(col)
    if is_float_type(col.spark_type) and math.isnan(float(value)):
        # NaN is the largest double and equals itself
        nan = pc.is_nan(field)
        return {
            "=": nan,
            ">=": nan,
            "!=": pc.invert(nan),
            "<": pc.invert(nan),
            "<=": _unless_null(field, _TRUE),
            ">": _unless_null(field, _FALSE),
        }[op]
    v = _scalar(value, col)
    plain = {
        "=": field == v,
        "!=": field != v,
        "<": field < v,
        "<=": field <= v,
        ">": field > v,
        ">=": field >= v,
    }[op]
    if is_float_type(col.spark_type) and op in (">", ">="):
        return plain | pc.is_nan(field)  # NaN lies above every number
    return plain


def _in_list(col: BoundColumn, node: InList) -> Any:
    field = _field(col)
    if is_float_type(col.spark_type):
        floats = [float(v) for v in node.values]
        numbers = [normalize_double(v) for v in floats if not math.isnan(v)]
        matched = pc.is_in(field, value_set=pa.array(numbers, pa.float64()))
        if len(numbers) < len(floats):
            matched = matched | pc.is_nan(field)
    else:
        matched = pc.is_in(field, value_set=pa.array(list(node.values), _value_type(col)))
    # NULL where the column is NULL; with a NULL in the list, NULL where nothing matched
    matched = _unless_null(field, matched)
    if node.has_null:
        matched = pc.if_else(matched, _TRUE, _NULL)
    return pc.invert(matched) if node.negated else matched


class _ArrowRenderer(PredicateVisitor[Any]):
    """One ``pyarrow.compute.Expression`` per node."""

    def __init__(self, columns: dict[str, BoundColumn]) -> None:
        self.columns = columns

    def visit_compare(self, node: Compare) -> Any:
        return _compare(self.columns[node.column], node.op, node.value)

    def visit_in_list(self, node: InList) -> Any:
        return _in_list(self.columns[node.column], node)

    def visit_between(self, node: Between) -> Any:
        col = self.columns[node.column]
        inside = _compare(col, ">=", node.low) & _compare(col, "<=", node.high)
        return pc.invert(inside) if node.negated else inside

    def visit_is_null(self, node: IsNull) -> Any:
        valid = pc.is_valid(pc.field(self.columns[node.column].name))
        return valid if node.negated else pc.invert(valid)

    def visit_column_truth(self, node: ColumnTruth) -> Any:
        name = self.columns[node.column].name
        return _unless_null(pc.field(name), _TRUE if node.value else _FALSE)

    def visit_const(self, node: Const) -> Any:
        return _NULL if node.value is None else (_TRUE if node.value else _FALSE)

    def visit_and(self, node: And) -> Any:
        out = node.children[0].accept(self)
        for c in node.children[1:]:
            out = out & c.accept(self)
        return out

    def visit_or(self, node: Or) -> Any:
        out = node.children[0].accept(self)
        for c in node.children[1:]:
            out = out | c.accept(self)
        return out

    def visit_not(self, node: Not) -> Any:
        return pc.invert(node.child.accept(self))


def to_arrow(bound: BoundPredicate) -> Any:
    """Render ``bound`` as a ``pyarrow.compute.Expression``.

    Rows where the expression is NULL are dropped by ``Table.filter``, which
    matches SQL's WHERE.
    """
    return _ArrowRenderer(bound.columns).visit(bound.node)
