"""The domain Spark SQL compares a column with literals in, and the literals' values there.

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
UTC ``datetime`` for the others (literal types:
:mod:`~lakesieve.expressions.literals`).
"""

from __future__ import annotations

import decimal
from typing import Any

from lakesieve.errors import PredicateError

from .literals import (
    DEC_TEXT,
    INT_RANGE,
    INT_TEXT,
    MAX_DECIMAL_PRECISION,
    NUMERIC_KINDS,
    Typed,
    decimal_digits,
    decimal_type,
    fits_decimal,
    is_float_type,
    string_to_double,
    to_bool,
    to_date,
    to_timestamp,
)

# an integer column seen as a decimal (Spark's widening of integers to decimals)
_INT_DECIMAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_DOUBLE_EXACT = 2**53


_TYPED_NULL_OK = {
    "string": ("string",), "binary": ("string", "binary"), "boolean": ("bool", "string"),
    "date": ("date", "string"), "timestamp": ("timestamp", "timestamp_ntz", "date", "string"),
    "timestamp_ntz": ("timestamp", "timestamp_ntz", "date", "string"),
}  # fmt: skip


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
                p, s = decimal_digits(decimal.Decimal(value))
        else:
            p, s = decimal_digits(decimal.Decimal(lit.value))
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
    grid or range: :func:`~lakesieve.expressions.tightening.tighten` decides); double-domain values are ``float``.
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
            value = string_to_double(lit.value)
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
                if not INT_TEXT.match(lit.value):
                    raise _bad(column, t, lit, "is not an integer (Spark's cast would fail)")
                value = int(lit.value.strip())
                if not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]:
                    raise _bad(column, t, lit, "is outside the range of bigint")
                return value
            if not DEC_TEXT.match(lit.value):
                raise _bad(column, t, lit, "is not a decimal number")
            value_d = decimal.Decimal(lit.value.strip())
            if not fits_decimal(value_d, *dec):
                raise _bad(column, t, lit, f"does not fit {t} exactly")
            return value_d
        value_d = decimal.Decimal(lit.value)
        # Spark widens both sides to one decimal type of at most 38 digits
        col_p, col_s = dec if dec is not None else (_INT_DECIMAL_DIGITS[t], 0)
        lit_p, lit_s = decimal_digits(value_d)
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
            return to_bool(lit, f"column {column!r} ({t}): literal {lit.text} is not TRUE or FALSE")
        raise _bad(column, t, lit, "is not TRUE or FALSE")
    if t == "date":
        if lit.kind in ("date", "string"):
            return to_date(
                lit, f"column {column!r} ({t}): literal {lit.text} is not a date ('yyyy-mm-dd')"
            )
        raise _bad(column, t, lit, "is not a date ('yyyy-mm-dd')")
    if t in ("timestamp", "timestamp_ntz"):
        if lit.kind in ("string", "date", "timestamp", "timestamp_ntz"):
            why = f"column {column!r} ({t}): literal {lit.text} is not a timestamp ('yyyy-mm-dd hh:mm:ss')"
            return to_timestamp(lit, t, why).value
        raise _bad(column, t, lit, "is not a timestamp ('yyyy-mm-dd hh:mm:ss')")
    raise PredicateError(f"column {column!r} has type {t}, which predicates cannot test")


def normalize_double(value: float) -> float:
    """-0.0 as 0.0; every other double unchanged (NaN stays NaN)."""
    return 0.0 if value == 0.0 else value
