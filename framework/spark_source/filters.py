"""The JVM data source's pushed filters (JSON) as lakesieve predicates.

The Java side writes each of Spark's pushed filters as JSON with its value
typed as Spark typed the literal (see ``FilterJson.java``); a filter it could
not write exactly arrives as ``null``. :func:`filters_to_predicate` turns the
ones lakesieve can plan with into one predicate. A filter left out only
widens the selection: every filter is evaluated by Spark above the scan.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from lakesieve import expressions as p
from lakesieve.expressions.values import value_literal

_COMPARISONS = {"=", "<", "<=", ">", ">="}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DAY = dt.date(1970, 1, 1)


def column_name(attribute: str) -> str | None:
    """A top-level column's name from Spark's filter attribute; ``None`` for a nested field.

    Spark quotes a name holding a dot or a backtick with backticks (doubled inside).
    """
    if attribute.startswith("`") and attribute.endswith("`") and len(attribute) >= 2:
        inner = attribute[1:-1]
        if "`" in inner.replace("``", ""):
            return None  # more than one quoted part: a nested field
        return inner.replace("``", "`")
    if "." in attribute or "`" in attribute:
        return None
    return attribute


def filter_value(typed: dict[str, str]) -> Any:
    """The Python value of one typed filter value (as the Python data source receives it)."""
    kind, text = typed["t"], typed["v"]
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)  # "NaN", "Infinity" and "-0.0" included
    if kind == "decimal":
        return decimal.Decimal(text)
    if kind == "string":
        return text
    if kind == "bool":
        return text == "true"
    if kind == "date":
        return _EPOCH_DAY + dt.timedelta(days=int(text))
    if kind == "timestamp":
        return _EPOCH + dt.timedelta(microseconds=int(text))
    raise ValueError(f"unknown filter value type {kind!r}")


def _literal(typed: Any) -> Any:
    if not isinstance(typed, dict):
        return None
    return value_literal(filter_value(typed))


def filter_node(f: Any, exact: bool = False) -> Any:
    """One filter as a predicate node, or ``None`` when lakesieve cannot plan with it.

    A node may match more rows than the filter (an ``AND`` side lakesieve cannot
    read is dropped), never fewer; with ``exact`` (below a ``NOT``, where a wider
    child would make a narrower whole) nothing is dropped.
    """
    if not isinstance(f, dict):
        return None
    op = f.get("op")
    if op == "and":
        parts = [filter_node(a, exact) for a in f["args"]]
        if exact and any(n is None for n in parts):
            return None
        kept = [n for n in parts if n is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else p.And(tuple(kept))
    if op == "or":
        parts = [filter_node(a, exact) for a in f["args"]]
        return None if any(n is None for n in parts) else p.Or(tuple(parts))
    if op == "not":
        child = filter_node(f["args"][0], exact=True)
        return None if child is None else p.Not(child)
    column = column_name(str(f.get("col", "")))
    if column is None:
        return None
    if op in _COMPARISONS:
        lit = _literal(f.get("v"))
        return None if lit is None else p.Compare(column, op, lit)
    if op == "in":
        lits = [_literal(v) for v in f.get("v") or []]
        if not lits or any(lit is None for lit in lits):
            return None
        return p.InList(column, tuple(lits))
    if op in ("isnull", "isnotnull"):
        return p.IsNull(column, negated=op == "isnotnull")
    return None


def filters_to_predicate(filters: list[Any]) -> Any:
    """The conjunction of the filters lakesieve can plan with; ``None`` when there is none."""
    nodes = [n for n in (filter_node(f) for f in filters) if n is not None]
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else p.And(tuple(nodes))


def _value_sql(typed: dict[str, str]) -> str:
    """A typed filter value as Spark SQL writes the literal (instants in UTC)."""
    value = filter_value(typed)
    kind = typed["t"]
    if kind == "string":
        return "'" + str(value).replace("'", "''") + "'"
    if kind == "date":
        return f"DATE '{value.isoformat()}'"
    if kind == "timestamp":
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    return typed["v"]  # numbers and booleans as Spark printed them


def filter_sql(f: Any) -> str | None:
    """One pushed filter as SQL text, as Spark pushed it; ``None`` when it was not written."""
    if not isinstance(f, dict):
        return None
    op = f.get("op")
    if op in ("and", "or", "not"):
        parts = [filter_sql(a) for a in f["args"]]
        if any(t is None for t in parts):
            return None
        if op == "not":
            return f"NOT ({parts[0]})"
        return "(" + f" {op.upper()} ".join(str(t) for t in parts) + ")"
    column = str(f.get("col", ""))
    if op in _COMPARISONS and isinstance(f.get("v"), dict):
        return f"{column} {op} {_value_sql(f['v'])}"
    if op == "in" and all(isinstance(v, dict) for v in f.get("v") or []):
        return f"{column} IN ({', '.join(_value_sql(v) for v in f['v'])})"
    if op == "isnull":
        return f"{column} IS NULL"
    if op == "isnotnull":
        return f"{column} IS NOT NULL"
    return None


def pushed_sql(filters: list[Any], shown: list[str] | None = None) -> str | None:
    """Spark's pushed filters as one SQL line (``AND``-joined); ``None`` when none was pushed.

    A filter the JVM could not write as JSON is shown as Spark prints it (``shown``).
    """
    texts = []
    for i, f in enumerate(filters):
        text = filter_sql(f)
        if text is None:
            text = (
                shown[i] if shown is not None and i < len(shown) else "(a filter lakesieve skips)"
            )
        texts.append(text)
    return " AND ".join(texts) if texts else None
