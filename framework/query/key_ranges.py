"""One key range per column from the range comparisons of a conjunction.

``k >= 10 AND k <= 20`` asks an index for ``[10, 20]``. Asked one comparison at
a time, an index answers ``k >= 10`` and ``k <= 20`` with the locations of
about half the keys each, and where every location holds keys from all over
the domain (an interleaved layout: each file group holds many short key runs)
the intersection of those two answers is every location, while the range
itself lies in one. Spark hands a data source ``BETWEEN`` in exactly that
form (``>=``, ``<=`` and ``IS NOT NULL``), and SQL users write it so.

:func:`merge_ranges` takes the children of an AND (nested ANDs flattened) and,
for each column with two or more one-sided or ``BETWEEN`` comparisons, returns
their intersection as one ``range`` :class:`~lakesieve.model.KeyQuery`. A row
matching the AND has a value that satisfies every one of them, so it lies in
the intersection: an index's answer for it holds every location with such a
row. The bounds are compared in Python, which orders every bound value type
as Spark does (integers, decimals, finite and infinite floats with
``-0.0 = 0.0``, strings by code point as UTF-8 bytes order them, bytes, dates,
timestamps); a group holding a NaN or values Python cannot order, or whose
intersection is empty, is left as it was (each comparison asked alone), which
is never fewer locations than the truth.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from typing import Any

from lakesieve.expressions import And, Between, Compare, Predicate
from lakesieve.model import KeyQuery

_LOW_OPS = {">": False, ">=": True}
_HIGH_OPS = {"<": False, "<=": True}


def _flatten(children: Sequence[Predicate], out: list[Predicate]) -> list[Predicate]:
    for child in children:
        if isinstance(child, And):
            _flatten(child.children, out)
        else:
            out.append(child)
    return out


def _orderable(value: Any) -> bool:
    """Whether Python orders ``value`` as Spark does among the column's values (no NaN)."""
    if isinstance(value, float):
        return not math.isnan(value)
    if isinstance(value, decimal.Decimal):
        return value.is_finite()
    return value is not None


def _sides(node: Predicate) -> tuple[str, tuple[Any, bool] | None, tuple[Any, bool] | None] | None:
    """``(column, low, high)`` of a range comparison (each side ``(value, inclusive)`` or ``None``)."""
    if isinstance(node, Compare):
        if node.op in _LOW_OPS:
            return node.column, (node.value, _LOW_OPS[node.op]), None
        if node.op in _HIGH_OPS:
            return node.column, None, (node.value, _HIGH_OPS[node.op])
        return None
    if isinstance(node, Between) and not node.negated:
        return node.column, (node.low, True), (node.high, True)
    return None


def _tighter(a: tuple[Any, bool] | None, b: tuple[Any, bool], low: bool) -> tuple[Any, bool]:
    """The tighter of two lower (``low``) or upper bounds; at equal values the exclusive one."""
    if a is None:
        return b
    if a[0] == b[0]:
        return (a[0], a[1] and b[1])
    if low:
        return a if a[0] > b[0] else b
    return a if a[0] < b[0] else b


def _intersection(sides: list[tuple[Any, Any]]) -> KeyQuery | None:
    """The range every one of ``sides`` holds, or ``None`` (leave them as they are)."""
    low: tuple[Any, bool] | None = None
    high: tuple[Any, bool] | None = None
    try:
        for lo, hi in sides:
            for side in (lo, hi):
                if side is not None and not _orderable(side[0]):
                    return None
            if lo is not None:
                low = _tighter(low, lo, True)
            if hi is not None:
                high = _tighter(high, hi, False)
        if (
            low is not None
            and high is not None
            and (low[0] > high[0] or (low[0] == high[0] and not (low[1] and high[1])))
        ):
            return None  # empty: no row matches, but say nothing new
    except (TypeError, ArithmeticError):  # values Python cannot order: leave them alone
        return None
    return KeyQuery(
        "range",
        low=None if low is None else low[0],
        low_inclusive=True if low is None else low[1],
        high=None if high is None else high[0],
        high_inclusive=True if high is None else high[1],
    )


def merge_ranges(children: Sequence[Predicate]) -> tuple[dict[str, KeyQuery], list[Predicate]]:
    """Split an AND's children into merged ranges and the rest.

    Returns:
        ``(ranges, rest)``: one range query per column that had two or more
        range comparisons that merge (see the module docstring), and every
        other child (nested ANDs flattened), to be answered one by one. The
        AND's answer is the intersection of all of them.
    """
    flat = _flatten(children, [])
    found: dict[str, list[tuple[int, tuple[Any, Any]]]] = {}
    for i, child in enumerate(flat):
        sides = _sides(child)
        if sides is not None:
            found.setdefault(sides[0], []).append((i, (sides[1], sides[2])))
    ranges: dict[str, KeyQuery] = {}
    merged: set[int] = set()
    for column, items in found.items():
        if len(items) < 2:
            continue
        query = _intersection([s for _, s in items])
        if query is not None:
            ranges[column] = query
            merged.update(i for i, _ in items)
    if not merged:
        return {}, flat
    return ranges, [c for i, c in enumerate(flat) if i not in merged]
