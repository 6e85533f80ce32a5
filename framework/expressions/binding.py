"""Binding: resolve a tree's columns against an Arrow schema and type its literals.

:func:`bind` resolves names like Spark (exact match first, then
case-insensitive) and types literals by Spark SQL's rules
(:mod:`lakesieve.expressions.literals`, :mod:`lakesieve.expressions.domains`), raising
:class:`~lakesieve.errors.PredicateError` naming the column and literal when
Spark would reject them or answer in a way that depends on the data. Bound
trees keep SQL's three-valued logic: a comparison with NULL stays NULL.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lakesieve.errors import ColumnNotFoundError, PredicateError

from .domains import comparison_domain, normalize_double, type_literal
from .literals import INT_RANGE, Typed, cast_literal, keyword_literal, number_literal
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
from .tightening import Bound, tighten
from .visitor import PredicateVisitor


@dataclass(frozen=True)
class BoundColumn:
    """A column resolved against the schema: its exact name, Arrow type and Spark type."""

    name: str
    arrow_type: pa.DataType
    spark_type: str


def spark_type_of(t: pa.DataType) -> str:
    """The Spark simple type string of an Arrow type (``bigint``, ``decimal(12,2)``...)."""
    if pa.types.is_int8(t):
        return "tinyint"
    if pa.types.is_int16(t):
        return "smallint"
    if pa.types.is_int32(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "bigint"
    if pa.types.is_uint64(t):
        return "decimal(20,0)"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_dictionary(t):
        return spark_type_of(t.value_type)
    return str(t)


def resolve_column(schema: pa.Schema, name: str, table: str = "") -> BoundColumn:
    """Find ``name`` in ``schema`` (exact match first, then case-insensitive, like Spark)."""
    names = schema.names
    if name in names:
        field = schema.field(name)
    else:
        matches = [n for n in names if n.lower() == name.lower()]
        if len(matches) != 1:
            where = f" of table {table}" if table else ""
            raise ColumnNotFoundError(
                f"unknown column {name!r}{where}; columns: {', '.join(n for n in names if not n.startswith('_hoodie'))}"
            )
        field = schema.field(matches[0])
    return BoundColumn(field.name, field.type, spark_type_of(field.type))


def typed_literal(lit: Literal) -> Typed:
    """The literal with the type Spark's parser gives it (CAST applied)."""
    if lit.kind == "null":
        typed = Typed("null", None, "NULL")
    elif lit.kind == "number":
        typed = number_literal(lit.text)
    elif lit.kind == "string":
        typed = Typed("string", lit.text, "'" + lit.text + "'")
    elif lit.kind == "binary":
        typed = Typed("binary", bytes.fromhex(lit.text), f"X'{lit.text}'")
    elif lit.kind == "bool":
        typed = Typed("bool", lit.text == "TRUE", lit.text)
    elif lit.kind in ("date", "timestamp", "timestamp_ntz"):
        typed = keyword_literal(lit.kind, lit.text)
    else:
        raise PredicateError(f"unsupported literal {lit.text!r}")
    if lit.cast is not None:
        typed = cast_literal(typed, lit.cast[0], lit.cast[1])
    return typed


def _as_literal(value: Any) -> Literal:
    """Accept an already typed value where a :class:`Literal` is expected (trees built by code)."""
    if isinstance(value, Literal):
        return value
    raise PredicateError(f"predicate value {value!r} is not a literal")


@dataclass(frozen=True)
class BoundPredicate:
    """A bound tree: the same node classes, with columns resolved and literals typed.

    Attributes:
        node: the tree; leaves hold exact column names and values in the
            column's comparison domain (see :mod:`lakesieve.expressions.domains`).
        columns: the resolved columns by name.
    """

    node: Predicate
    columns: dict[str, BoundColumn]


def _compare_bound(col: BoundColumn, op: str, lit: Any) -> Bound | None:
    """``col op lit`` typed and fitted to the column; ``None`` for a comparison with NULL."""
    typed = typed_literal(_as_literal(lit))
    domain = comparison_domain(col.name, col.spark_type, [typed])
    value = type_literal(col.name, col.spark_type, typed, domain)
    if value is None:
        return None
    if (
        col.spark_type == "bigint"
        and op not in ("=", "!=")
        and isinstance(value, int | decimal.Decimal)
        and not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]
    ):
        # Spark folds these to a constant that ignores NULLs; refuse rather than guess
        raise PredicateError(
            f"column {col.name!r} (bigint): literal {typed.text} is outside the range of bigint"
        )
    return tighten(col.spark_type, op, value)


def _leaf(col: BoundColumn, bound: Bound | None) -> Predicate:
    if bound is None:
        return Const(None)  # a comparison with NULL is NULL
    if bound.verdict is not None:
        return ColumnTruth(col.name, bound.verdict)
    return Compare(col.name, bound.op, bound.value)


def _dedupe_key(value: Any) -> Any:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else normalize_double(value)
    return value


def _bind_in(col: BoundColumn, node: InList) -> Predicate:
    typed = [typed_literal(_as_literal(v)) for v in node.values]
    domain = comparison_domain(col.name, col.spark_type, typed, in_list=True)
    has_null = node.has_null or any(t.value is None for t in typed)
    values: list[Any] = []
    seen: set[Any] = set()
    for t in typed:
        value = type_literal(col.name, col.spark_type, t, domain)
        if value is None:
            continue
        fitted = tighten(col.spark_type, "=", value)
        if fitted.verdict is not None:
            continue  # can never be equal (off the column's grid or range)
        key = _dedupe_key(fitted.value)
        if key not in seen:
            seen.add(key)
            values.append(fitted.value)
    if not values:
        # nothing can match: FALSE for every value, or NULL with a NULL in the list
        return Const(None) if has_null else ColumnTruth(col.name, node.negated)
    return InList(col.name, tuple(values), node.negated, has_null)


class _Binder(PredicateVisitor[Predicate]):
    """Rebuild a tree with resolved columns and typed literals, noting every column used."""

    def __init__(self, schema: pa.Schema, table: str) -> None:
        self.schema = schema
        self.table = table
        self.columns: dict[str, BoundColumn] = {}

    def _column(self, name: str) -> BoundColumn:
        col = resolve_column(self.schema, name, self.table)
        self.columns[col.name] = col
        return col

    def visit_compare(self, node: Compare) -> Predicate:
        col = self._column(node.column)
        return _leaf(col, _compare_bound(col, node.op, node.value))

    def visit_in_list(self, node: InList) -> Predicate:
        return _bind_in(self._column(node.column), node)

    def visit_between(self, node: Between) -> Predicate:
        col = self._column(node.column)
        lo = _compare_bound(col, ">=", node.low)
        hi = _compare_bound(col, "<=", node.high)
        if lo is not None and hi is not None and lo.verdict is None and hi.verdict is None:
            return Between(col.name, lo.value, hi.value, node.negated)
        inner: Predicate = And((_leaf(col, lo), _leaf(col, hi)))
        return Not(inner) if node.negated else inner

    def visit_is_null(self, node: IsNull) -> Predicate:
        return IsNull(self._column(node.column).name, node.negated)

    def visit_column_truth(self, node: ColumnTruth) -> Predicate:
        return ColumnTruth(self._column(node.column).name, node.value)

    def visit_const(self, node: Const) -> Predicate:
        return node

    def visit_and(self, node: And) -> Predicate:
        kids: list[Predicate] = []
        for c in node.children:
            kids.append(c.accept(self))
        return And(tuple(kids))

    def visit_or(self, node: Or) -> Predicate:
        kids: list[Predicate] = []
        for c in node.children:
            kids.append(c.accept(self))
        return Or(tuple(kids))

    def visit_not(self, node: Not) -> Predicate:
        return Not(node.child.accept(self))


def bind(predicate: Predicate | str, schema: pa.Schema, table: str = "") -> BoundPredicate:
    """Resolve columns against ``schema`` and type every literal by Spark's rules.

    Args:
        predicate: a parsed tree or a ``where`` string.
        schema: the table's Arrow schema.
        table: the table's path, for error messages.

    Raises:
        PredicateError: a literal does not fit its column, or Spark would
            reject it or answer in a way that depends on the data.
        ColumnNotFoundError: a column is not in the schema.
    """
    node = parse(predicate) if isinstance(predicate, str) else predicate
    binder = _Binder(schema, table)
    try:
        bound = binder.visit(node)
    except RecursionError:
        raise PredicateError(
            f"predicate nests deeper than {MAX_DEPTH} levels; simplify it"
        ) from None
    return BoundPredicate(bound, binder.columns)
