"""A Python value, as Spark hands a data source a filter's value, as a predicate literal.

Both data sources plan with Spark's pushed filters: the Python data source
receives their values as Python objects, the JVM data source's filters arrive
as JSON that :mod:`lakesieve.spark_source.filters` turns into the same
objects. :func:`value_literal` states once which of those values lakesieve
can plan on and the literal each one is.
"""

from __future__ import annotations

import datetime as dt
import decimal

from lakesieve.expressions.nodes import Literal


def value_literal(value: object) -> Literal | None:
    """Our predicate literal for a filter value, or ``None`` when it is not safe to plan on."""
    if isinstance(value, bool):
        return Literal("bool", "TRUE" if value else "FALSE")
    if isinstance(value, int):
        return Literal("number", str(value))
    if isinstance(value, decimal.Decimal):
        return Literal("number", format(value, "f")) if value.is_finite() else None
    if isinstance(value, float):
        # the filter's value already has the column's type: keep it exact, NaN and inf included
        if value != value or abs(value) == float("inf"):
            return Literal("string", "NaN" if value != value else repr(value), ("DOUBLE", ()))
        return Literal("number", repr(value))
    if isinstance(value, str):
        return Literal("string", value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return None  # ambiguous time zone: do not prune on it
        # the instant with its zone spelled out: bound the same in every session time zone
        return Literal("timestamp", value.astimezone(dt.UTC).isoformat(sep=" "))
    if isinstance(value, dt.date):
        return Literal("date", value.isoformat())
    return None
