"""An exact comparison fitted to the column's grid and range.

Comparisons that can never be true for a non-NULL value (``int_col = 1.5``)
or are always true (``int_col < 1e30``) are reported as such, so callers keep
NULL rows out of both.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any

from .literals import INT_RANGE, decimal_type

# exact arithmetic on any literal we accept (38 digits, doubles up to 1e308 and down to 5e-324)
_EXACT = decimal.Context(prec=2000, Emax=999_999, Emin=-999_999)


@dataclass(frozen=True)
class Bound:
    """One side of a comparison after typing: either a value, or a verdict.

    ``verdict`` is ``True``/``False`` when the comparison has that result for
    every non-NULL value of the column (``int_col = 1.5`` is always FALSE);
    ``op`` and ``value`` then mean nothing. ``verdict`` ``None`` means compare.
    """

    op: str
    value: Any
    verdict: bool | None = None


def tighten(spark_type: str, op: str, value: Any) -> Bound:
    """Fit an exact-domain comparison to the column's grid and range (see :func:`_tighten`)."""
    with decimal.localcontext(_EXACT):
        return _tighten(spark_type, op, value)


def _tighten(spark_type: str, op: str, value: Any) -> Bound:
    """Fit an exact-domain comparison to the column's grid and range.

    ``int_col < 2.5`` becomes ``int_col <= 2``; ``int_col = 2.5`` is always
    FALSE; ``tinyint_col > 300`` is always FALSE; ``tinyint_col < 300`` always
    TRUE (for non-NULL values). Values of other domains pass unchanged.
    """
    dec = decimal_type(spark_type)
    if spark_type in INT_RANGE:
        lo, hi = INT_RANGE[spark_type]
        step = decimal.Decimal(1)
    elif dec is not None:
        p, s = dec
        step = decimal.Decimal(1).scaleb(-s)
        limit = decimal.Decimal(10) ** (p - s) - step
        lo, hi = -limit, limit  # type: ignore[assignment]
    else:
        return Bound(op, value)
    if isinstance(value, float):
        # NaN lies above every number, like +inf: both are past the column's range
        if math.isnan(value) or math.isinf(value):
            value = decimal.Decimal(10) ** 400 * (-1 if value < 0 else 1)
        else:
            value = decimal.Decimal(value)
    exact = decimal.Decimal(value)
    on_grid = exact == exact.quantize(step, rounding=decimal.ROUND_FLOOR)

    def cast(v: decimal.Decimal) -> Any:
        return int(v) if spark_type in INT_RANGE else v.quantize(step)

    if op in ("=", "!="):
        inside = on_grid and lo <= exact <= hi
        if not inside:
            return Bound(op, None, verdict=(op == "!="))
        return Bound(op, cast(exact))
    if op in ("<", "<="):
        # the largest grid value still satisfying the comparison
        top = exact.quantize(step, rounding=decimal.ROUND_FLOOR)
        if op == "<" and top == exact:
            top -= step
        if top >= hi:
            return Bound(op, None, verdict=True)
        if top < lo:
            return Bound(op, None, verdict=False)
        return Bound(op, cast(exact)) if on_grid else Bound("<=", cast(top))
    # > or >=: the smallest grid value satisfying it
    bottom = exact.quantize(step, rounding=decimal.ROUND_CEILING)
    if op == ">" and bottom == exact:
        bottom += step
    if bottom <= lo:
        return Bound(op, None, verdict=True)
    if bottom > hi:
        return Bound(op, None, verdict=False)
    return Bound(op, cast(exact)) if on_grid else Bound(">=", cast(bottom))
