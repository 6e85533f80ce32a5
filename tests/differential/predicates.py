"""Predicate texts over the whole grammar of :mod:`lakesieve.expressions`, as hypothesis strategies.

Literals come mostly from the table's own values (so predicates match rows)
rendered as Spark SQL literals, and otherwise from adversarial pools: NULL,
NaN and infinities (``CAST('NaN' AS DOUBLE)``), ``-0.0``, exponent forms,
literals beyond a column's range (``1e400``, ``9223372036854775808``, a
float32 column's ``0.1``), literals of another column's type, reversed
``BETWEEN`` bounds. Trees nest AND, OR, NOT and parentheses.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

OPS = ("=", "==", "!=", "<>", "<", "<=", ">", ">=")

#: Literals of no particular column: extremes, exponents, out-of-range values, other types.
WILD = (
    "NULL",
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1",
    "-1",
    "0.5",
    "1e400",
    "-1e400",
    "1e-400",
    "1E2",
    "2.5e-3",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "3.4028235e38",
    "3.5e38",
    "1e308",
    "0.1",
    "852.5807",
    "99999999999999.9999",
    "100000000000000",
    "CAST('NaN' AS DOUBLE)",
    "CAST('Infinity' AS DOUBLE)",
    "CAST('-Infinity' AS DOUBLE)",
    "CAST(0.1 AS FLOAT)",
    "CAST(NULL AS DOUBLE)",
    "CAST(5 AS BIGINT)",
    "CAST('NaN' AS FLOAT)",
    "''",
    "'prefix-ab'",
    "'prefix-abc'",
    "'5'",
    "'abc'",
    "'NaN'",
    "'2024-02-29'",
    "'\u00e9t\u00e9'",
    "DATE '1970-01-01'",
    "DATE '2024-02-29'",
    "TIMESTAMP '1970-01-01 00:00:00'",
    "TIMESTAMP '2024-01-01 12:00:00.000001'",
    "TRUE",
    "FALSE",
)


def literal_sql(column: str, value: Any) -> list[str]:
    """Spark SQL spellings of ``value`` (a value of ``column``); several where Spark reads several."""
    if value is None:
        return ["NULL"]
    if isinstance(value, bool):
        return ["TRUE" if value else "FALSE"]
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        if math.isnan(value):
            return ["CAST('NaN' AS DOUBLE)", "CAST('NaN' AS FLOAT)"]
        if math.isinf(value):
            return [f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"]
        out = [repr(value)]
        if column == "g":
            out.append(str(np.float32(value)))  # float32's shortest spelling, e.g. 0.1
        if value == 0.0:
            out.append("-0.0" if math.copysign(1.0, value) < 0 else "0.0")
        return out
    if isinstance(value, decimal.Decimal):
        return [str(value), f"{value:E}" if value else "0E0"]
    if isinstance(value, str):
        return [f"'{value}'"]
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return [f"TIMESTAMP '{text}'", f"'{text}'"]
    if isinstance(value, dt.date):
        return [f"DATE '{value.isoformat()}'", f"'{value.isoformat()}'"]
    raise TypeError(f"no SQL literal for {value!r}")


def literals(column: str, values: list[Any]) -> st.SearchStrategy[str]:
    """A literal for a test on ``column``: mostly its own values, sometimes NULL or a wild one."""
    own = sorted({text for v in values for text in literal_sql(column, v)})
    options: list[st.SearchStrategy[str]] = [st.sampled_from(WILD)]
    if own:
        options = [st.sampled_from(own), st.sampled_from(own), st.sampled_from(own), *options]
    return st.one_of(*options)


def _quote(column: str, quoted: bool) -> str:
    return f"`{column}`" if quoted else column


@st.composite
def leaf(draw: st.DrawFn, values: dict[str, list[Any]], columns: list[str]) -> str:
    """One test: comparison (either side), [NOT] IN, [NOT] BETWEEN, IS [NOT] NULL."""
    column = draw(st.sampled_from(columns))
    name = _quote(column, draw(st.booleans()))
    lit = literals(column, values.get(column, []))
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "rcmp", "in", "between", "null"]))
    if kind == "cmp":
        return f"{name} {draw(st.sampled_from(OPS))} {draw(lit)}"
    if kind == "rcmp":
        return f"{draw(lit)} {draw(st.sampled_from(OPS))} {name}"
    if kind == "in":
        items = draw(st.lists(lit, min_size=1, max_size=4))
        neg = "NOT " if draw(st.booleans()) else ""
        return f"{name} {neg}IN ({', '.join(items)})"
    if kind == "between":
        neg = "NOT " if draw(st.booleans()) else ""
        return f"{name} {neg}BETWEEN {draw(lit)} AND {draw(lit)}"
    return f"{name} IS {'NOT ' if draw(st.booleans()) else ''}NULL"


def predicates(values: dict[str, list[Any]], columns: list[str]) -> st.SearchStrategy[str]:
    """A predicate tree of up to six tests joined by AND, OR, NOT and parentheses."""
    base = leaf(values, columns)

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(children, children).map(lambda p: f"({p[0]}) AND ({p[1]})"),
            st.tuples(children, children).map(lambda p: f"({p[0]}) OR ({p[1]})"),
            st.tuples(children, children).map(lambda p: f"{p[0]} AND {p[1]}"),
            st.tuples(children, children).map(lambda p: f"{p[0]} OR {p[1]}"),
            children.map(lambda p: f"NOT ({p})"),
            children.map(lambda p: f"NOT {p}"),
        )

    return st.recursive(base, extend, max_leaves=6)
