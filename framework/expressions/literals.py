"""Spark SQL's literal and comparison rules, stated once.

Every read path (Arrow on the driver, Spark, the data source) and every index
takes the meaning of a comparison ``column op literal`` from here. The rules
are Spark SQL's with ANSI mode on (the default of Spark 4), checked against
Spark itself by the project's differential tests:

* **Literal types.** ``5`` is an integer, ``1.5`` an exact decimal, ``1e5`` a
  double; ``'...'`` a string that Spark casts to the column's type (``'5'``
  against a number, ``'2024-01-31'`` against a date). A number literal past
  the double range (``1e400``) or with more than 38 digits is rejected, as
  Spark rejects it. ``CAST(literal AS type)`` gives the literal that type.
* **Comparison domain.** Integers and decimals compare exactly. A comparison
  involving a float, a double or an exponent literal happens in double
  (a ``float`` column is widened to double: ``f = 0.1`` is false for the float
  nearest 0.1). Within double, NaN equals NaN and lies above every number
  (+inf included), and -0.0 equals 0.0.
* **NULL.** A comparison with a NULL literal is NULL, never FALSE: it stays
  NULL through NOT, so ``NOT (x = NULL)`` keeps no row.

Where Spark's answer would depend on the data (a string column compared with a
number casts every value and fails on the first non-numeric one) or on
rounding we cannot reproduce exactly (a decimal column compared in double, a
bigint beyond 2**53 compared with a double), the literal is refused with a
one-line :class:`~lakesieve.errors.PredicateError` instead of guessed.

The result of typing a comparison is a value in the column's *comparison
domain*: an ``int`` within the column's range for integer columns, a
``Decimal`` on the column's grid for decimal columns, a ``float`` (double) for
float and double columns, ``str``, ``bytes``, ``bool``, ``date`` or a naive
UTC ``datetime`` for the others. Comparisons that can never be true for a
non-NULL value (``int_col = 1.5``) or are always true (``int_col < 1e30``) are
reported as such, so callers keep NULL rows out of both.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

from lakesieve.errors import PredicateError

INT_RANGE = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
# an integer column seen as a decimal (Spark's widening of integers to decimals)
_INT_DECIMAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
MAX_DECIMAL_PRECISION = 38
_DOUBLE_EXACT = 2**53
# exact arithmetic on any literal we accept (38 digits, doubles up to 1e308 and down to 5e-324)
_EXACT = decimal.Context(prec=2000, Emax=999_999, Emin=-999_999)

_INT_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_DEC_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$")
_NUM_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")
_SPECIAL_FLOAT = re.compile(r"^\s*([+-]?)(nan|inf|infinity)\s*$", re.IGNORECASE)
_DATE_TEXT = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})\s*$")
_TS_TEXT = re.compile(
    r"^\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?))?"
    r"\s*(Z|[+-]\d{2}:\d{2})?\s*$"
)
_DECIMAL_TYPE = re.compile(r"^decimal\((\d+),\s*(-?\d+)\)$")
_CAST_TYPES = {
    "TINYINT": "tinyint", "BYTE": "tinyint", "SMALLINT": "smallint", "SHORT": "smallint",
    "INT": "int", "INTEGER": "int", "BIGINT": "bigint", "LONG": "bigint",
    "FLOAT": "float", "REAL": "float", "DOUBLE": "double", "STRING": "string",
    "BINARY": "binary", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp",
    "TIMESTAMP_LTZ": "timestamp", "TIMESTAMP_NTZ": "timestamp_ntz", "DECIMAL": "decimal(10,0)",
    "DEC": "decimal(10,0)", "NUMERIC": "decimal(10,0)",
}  # fmt: skip


_NULL_KIND = {
    "tinyint": "int", "smallint": "int", "int": "int", "bigint": "int", "float": "float",
    "double": "double", "string": "string", "binary": "binary", "boolean": "bool",
    "date": "date", "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz",
}  # fmt: skip


_TYPED_NULL_OK = {
    "string": ("string",), "binary": ("string", "binary"), "boolean": ("bool", "string"),
    "date": ("date", "string"), "timestamp": ("timestamp", "timestamp_ntz", "date", "string"),
    "timestamp_ntz": ("timestamp", "timestamp_ntz", "date", "string"),
}  # fmt: skip


@dataclass(frozen=True)
class Typed:
    """A literal with the type Spark gives it.

    Attributes:
        kind: ``int``, ``decimal``, ``double``, ``float``, ``string``, ``date``,
            ``timestamp`` (an instant; ``value`` is naive UTC), ``timestamp_ntz``,
            ``bool``, ``binary`` or ``null``.
        value: the Python value (``int``, ``Decimal``, ``float``, ``str``...).
        text: the literal as written, for messages.
    """

    kind: str
    value: Any
    text: str


NUMERIC_KINDS = ("int", "decimal", "double", "float")


def decimal_type(spark_type: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a ``decimal(p,s)`` type string, else ``None``."""
    m = _DECIMAL_TYPE.match(spark_type.replace(" ", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_float_type(spark_type: str) -> bool:
    """Whether a column of this type compares in double (float or double)."""
    return spark_type in ("float", "double")


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (as Spark's cast to FLOAT)."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        raise PredicateError(f"literal {value!r} is outside the range of float") from None


def _digits(value: decimal.Decimal) -> tuple[int, int]:
    """Spark's (precision, scale) of a decimal literal."""
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    return max(len(digits) + max(exponent, 0), scale, 1), scale


def number_literal(text: str) -> Typed:
    """Type a number as Spark's parser does: integer, exact decimal or double."""
    body = text.strip()
    if "e" in body.lower():
        try:
            value = float(body)
        except (ValueError, OverflowError):
            value = math.inf
        if math.isinf(value):
            raise PredicateError(
                f"numeric literal {text} is outside the range of double (Spark rejects it)"
            )
        return Typed("double", value, text)
    try:
        exact = decimal.Decimal(body)
    except decimal.InvalidOperation:
        raise PredicateError(f"{text!r} is not a number") from None
    if "." not in body:
        if len(exact.as_tuple().digits) > MAX_DECIMAL_PRECISION:
            raise PredicateError(
                f"numeric literal {text} has more than {MAX_DECIMAL_PRECISION} digits "
                f"(Spark rejects it)"
            )
        return Typed("int", int(exact), text)
    precision, _ = _digits(exact)
    if precision > MAX_DECIMAL_PRECISION:
        raise PredicateError(
            f"decimal literal {text} has more than {MAX_DECIMAL_PRECISION} digits (Spark rejects it)"
        )
    return Typed("decimal", exact, text)


def _string_to_double(text: str) -> float | None:
    special = _SPECIAL_FLOAT.match(text)
    if special:
        sign, word = special.group(1), special.group(2).lower()
        if word == "nan":
            return math.nan
        return -math.inf if sign == "-" else math.inf
    if _NUM_TEXT.match(text):
        value = float(text.strip())
        return None if math.isinf(value) else value
    return None


def cast_literal(lit: Typed, type_name: str, params: tuple[int, ...]) -> Typed:
    """``CAST(lit AS type)`` for the casts whose result is certain; others are refused."""
    target = _CAST_TYPES.get(type_name.upper())
    if target is None:
        raise PredicateError(f"CAST to {type_name} is not supported in predicates")
    if target.startswith("decimal") and params:
        p, s = (*params, 0)[:2]
        target = f"decimal({p},{s})"
    if lit.kind == "null":
        # a typed NULL: NULL in comparisons, but its type still has to fit the column
        return Typed(_NULL_KIND.get(target, "decimal"), None, f"CAST(NULL AS {type_name.upper()})")
    why = f"CAST({lit.text} AS {type_name.upper()}) is not supported in predicates"
    if target in INT_RANGE:
        if lit.kind == "int" or (lit.kind == "string" and _INT_TEXT.match(lit.value)):
            whole = int(lit.value) if lit.kind == "int" else int(lit.value.strip())
            lo, hi = INT_RANGE[target]
            if lo <= whole <= hi:
                return Typed("int", whole, lit.text)
        raise PredicateError(why)
    if target in ("float", "double"):
        number: float
        if lit.kind in ("int", "decimal", "double", "float"):
            number = float(lit.value)
        elif lit.kind == "string" and (parsed := _string_to_double(lit.value)) is not None:
            number = parsed
        else:
            raise PredicateError(why)
        if target == "float":
            number = float32(number)
        return Typed(target, number, lit.text)
    dec = decimal_type(target)
    if dec is not None:
        if lit.kind in ("int", "decimal") or (lit.kind == "string" and _DEC_TEXT.match(lit.value)):
            exact = decimal.Decimal(str(lit.value).strip())
            if _fits_decimal(exact, *dec):
                return Typed("decimal", exact, lit.text)
        raise PredicateError(why)
    if target == "string" and lit.kind == "string":
        return lit
    if target == "binary" and lit.kind == "string":
        return Typed("binary", lit.value.encode(), lit.text)
    if target == "boolean" and lit.kind in ("bool", "string"):
        return Typed("bool", _to_bool(lit, why), lit.text)
    if target == "date" and lit.kind in ("string", "date"):
        return Typed("date", _to_date(lit, why), lit.text)
    if target in ("timestamp", "timestamp_ntz") and lit.kind in ("string", "timestamp", "date"):
        return _to_timestamp(lit, target, why)
    raise PredicateError(why)


def _fits_decimal(value: decimal.Decimal, precision: int, scale: int) -> bool:
    if not value.is_finite() or value.adjusted() > 40 or value.adjusted() < -80:
        return False
    if value != value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_FLOOR):
        return False
    return abs(value) < decimal.Decimal(10) ** (precision - scale)


def _to_bool(lit: Typed, why: str) -> bool:
    if lit.kind == "bool":
        return bool(lit.value)
    text = str(lit.value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise PredicateError(why)


def _to_date(lit: Typed, why: str) -> dt.date:
    if lit.kind == "date":
        return lit.value  # type: ignore[no-any-return]
    m = _DATE_TEXT.match(str(lit.value))
    if not m:
        raise PredicateError(why)
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        raise PredicateError(why) from None


def _to_timestamp(lit: Typed, target: str, why: str) -> Typed:
    if lit.kind == "date":
        return Typed(target, dt.datetime.combine(lit.value, dt.time()), lit.text)
    if lit.kind in ("timestamp", "timestamp_ntz"):
        return Typed(target, lit.value, lit.text)
    m = _TS_TEXT.match(str(lit.value))
    if not m:
        raise PredicateError(why)
    date_part, time_part, zone = m.group(1), m.group(2), m.group(3)
    if zone is not None and target == "timestamp_ntz":
        raise PredicateError(why)
    text = date_part + (" " + time_part if time_part else "")
    if zone is not None:
        text += "+00:00" if zone == "Z" else zone
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise PredicateError(why) from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return Typed(target, value, lit.text)


def keyword_literal(keyword: str, text: str) -> Typed:
    """``DATE '...'``, ``TIMESTAMP '...'`` and ``TIMESTAMP_NTZ '...'`` literals."""
    kw = keyword.upper()
    why = f"{kw} {text!r} is not a valid {kw.lower()} literal"
    raw = Typed("string", text, f"{kw} '{text}'")
    if kw == "DATE":
        return Typed("date", _to_date(raw, why), raw.text)
    return _to_timestamp(raw, "timestamp_ntz" if kw == "TIMESTAMP_NTZ" else "timestamp", why)


# --------------------------------------------------------------------------
# comparing a column with literals
# --------------------------------------------------------------------------


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


def _bad(column: str, spark_type: str, lit: Typed, why: str) -> PredicateError:
    return PredicateError(f"column {column!r} ({spark_type}): literal {lit.text} {why}")


def _check_list_width(column: str, spark_type: str, lits: list[Typed]) -> None:
    """Refuse an IN list whose common decimal type Spark would have to round.

    Spark types an IN list by one decimal type wide enough for the column and
    every literal, with integer literals counted as INT (10 digits) or BIGINT
    (20 digits); past 38 digits it drops scale and rounds the literals.
    """
    dec = decimal_type(spark_type)
    col_p, col_s = dec if dec is not None else (_INT_DECIMAL_DIGITS[spark_type], 0)
    whole, scale = col_p - col_s, col_s
    for lit in lits:
        if lit.value is None:
            continue
        if lit.kind == "int":
            value = int(lit.value)
            if INT_RANGE["int"][0] <= value <= INT_RANGE["int"][1]:
                p, s = 10, 0
            elif INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]:
                p, s = 20, 0
            else:
                p, s = _digits(decimal.Decimal(value))
        else:
            p, s = _digits(decimal.Decimal(lit.value))
        whole, scale = max(whole, p - s), max(scale, s)
    if lits and whole + scale > MAX_DECIMAL_PRECISION:
        raise PredicateError(
            f"column {column!r} ({spark_type}): the IN list needs more than "
            f"{MAX_DECIMAL_PRECISION} digits to compare exactly (Spark would round it); "
            f"split it into smaller lists"
        )


def comparison_domain(
    column: str, spark_type: str, lits: list[Typed], in_list: bool = False
) -> str:
    """The domain Spark compares ``column`` with ``lits`` in: ``exact``, ``double`` or ``other``.

    Raises:
        PredicateError: Spark would compare in a way whose answer depends on
            the data or on rounding we cannot reproduce.
    """
    real = [lit for lit in lits if lit.kind != "null"]
    if spark_type in INT_RANGE or decimal_type(spark_type) is not None or is_float_type(spark_type):
        for lit in real:
            if lit.kind not in (*NUMERIC_KINDS, "string"):
                raise _bad(column, spark_type, lit, "is not a number")
        numeric = [lit for lit in real if lit.kind != "string"]
        if is_float_type(spark_type) or any(lit.kind in ("double", "float") for lit in numeric):
            if decimal_type(spark_type) is not None:
                raise _bad(
                    column,
                    spark_type,
                    real[0]
                    if not numeric
                    else next(lit for lit in numeric if lit.kind in ("double", "float")),
                    "would compare a decimal column in double (inexact); "
                    "write it without an exponent",
                )
            if any(lit.kind == "string" for lit in real) and not is_float_type(spark_type):
                raise _bad(
                    column,
                    spark_type,
                    next(lit for lit in real if lit.kind == "string"),
                    "mixes a string with a double in one comparison",
                )
            return "double"
        if any(lit.kind == "string" for lit in real):
            text = next(lit for lit in real if lit.kind == "string")
            lo, hi = INT_RANGE["bigint"]
            if any(
                lit.kind == "decimal" or (lit.value is not None and not lo <= lit.value <= hi)
                for lit in numeric
            ):
                raise _bad(
                    column, spark_type, text, "mixes a string with a decimal in one comparison"
                )
            dec = decimal_type(spark_type)
            if dec is not None and dec[0] > 15:
                raise _bad(
                    column,
                    spark_type,
                    text,
                    "is a string compared with a decimal of more than 15 digits; "
                    "write it as a number",
                )
        if in_list:
            _check_list_width(column, spark_type, numeric)
        return "exact"
    return "other"


def type_literal(column: str, spark_type: str, lit: Typed, domain: str) -> Any:
    """The value of ``lit`` in ``domain`` for a column of ``spark_type`` (``None`` for NULL).

    Exact-domain values are ``int`` or ``Decimal`` (possibly off the column's
    grid or range: :func:`tighten` decides); double-domain values are ``float``.
    """
    if lit.kind == "null":
        return None
    t = spark_type
    if lit.value is None:  # CAST(NULL AS type): NULL, if Spark accepts the type here
        allowed = _TYPED_NULL_OK.get(t, (*NUMERIC_KINDS, "string"))
        if lit.kind not in allowed:
            raise _bad(column, t, lit, f"has a type Spark cannot compare with {t}")
        return None
    if domain == "double":
        if lit.kind == "string":
            value = _string_to_double(lit.value)
            if value is None:
                raise _bad(column, t, lit, "is not a number Spark can cast to double")
            return value
        value = float(lit.value)
        if t == "bigint" and abs(value) >= _DOUBLE_EXACT:
            raise _bad(
                column,
                t,
                lit,
                "would compare a bigint column in double beyond 2**53 (inexact); "
                "write it as an integer",
            )
        return value
    if domain == "exact":
        dec = decimal_type(t)
        if lit.kind == "string":
            if dec is None:
                if not _INT_TEXT.match(lit.value):
                    raise _bad(column, t, lit, "is not an integer (Spark's cast would fail)")
                value = int(lit.value.strip())
                if not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]:
                    raise _bad(column, t, lit, "is outside the range of bigint")
                return value
            if not _DEC_TEXT.match(lit.value):
                raise _bad(column, t, lit, "is not a decimal number")
            value_d = decimal.Decimal(lit.value.strip())
            if not _fits_decimal(value_d, *dec):
                raise _bad(column, t, lit, f"does not fit {t} exactly")
            return value_d
        value_d = decimal.Decimal(lit.value)
        # Spark widens both sides to one decimal type of at most 38 digits
        col_p, col_s = dec if dec is not None else (_INT_DECIMAL_DIGITS[t], 0)
        lit_p, lit_s = _digits(value_d)
        if max(col_p - col_s, lit_p - lit_s) + max(col_s, lit_s) > MAX_DECIMAL_PRECISION:
            raise _bad(column, t, lit, f"has more digits than Spark can compare with {t} exactly")
        return int(value_d) if lit.kind == "int" else value_d
    # other types
    if t == "string":
        if lit.kind == "string":
            return lit.value
        raise _bad(column, t, lit, "is not a string (compare a string column with a quoted string)")
    if t == "binary":
        if lit.kind == "string":
            return lit.value.encode()
        if lit.kind == "binary":
            return lit.value
        raise _bad(column, t, lit, "is not a string")
    if t == "boolean":
        if lit.kind in ("bool", "string"):
            return _to_bool(
                lit, f"column {column!r} ({t}): literal {lit.text} is not TRUE or FALSE"
            )
        raise _bad(column, t, lit, "is not TRUE or FALSE")
    if t == "date":
        if lit.kind in ("date", "string"):
            return _to_date(
                lit, f"column {column!r} ({t}): literal {lit.text} is not a date ('yyyy-mm-dd')"
            )
        raise _bad(column, t, lit, "is not a date ('yyyy-mm-dd')")
    if t in ("timestamp", "timestamp_ntz"):
        if lit.kind in ("string", "date", "timestamp", "timestamp_ntz"):
            why = f"column {column!r} ({t}): literal {lit.text} is not a timestamp ('yyyy-mm-dd hh:mm:ss')"
            return _to_timestamp(lit, t, why).value
        raise _bad(column, t, lit, "is not a timestamp ('yyyy-mm-dd hh:mm:ss')")
    raise PredicateError(f"column {column!r} has type {t}, which predicates cannot test")


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


def normalize_double(value: float) -> float:
    """-0.0 as 0.0; every other double unchanged (NaN stays NaN)."""
    return 0.0 if value == 0.0 else value
