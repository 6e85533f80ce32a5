"""Spark SQL's literal typing, stated once.

Every read path (Arrow on the driver, Spark, the data source) and every index
takes the meaning of a comparison ``column op literal`` from this module and
its two neighbours: :mod:`~lakesieve.expressions.domains` (the domain a
comparison happens in) and :mod:`~lakesieve.expressions.tightening` (an exact
comparison fitted to the column's grid and range). The rules are Spark SQL's
with ANSI mode on (the default of Spark 4), checked against Spark itself by
the project's differential tests.

**Literal types.** ``5`` is an integer, ``1.5`` an exact decimal, ``1e5`` a
double; ``'...'`` a string that Spark casts to the column's type (``'5'``
against a number, ``'2024-01-31'`` against a date). A number literal past
the double range (``1e400``) or with more than 38 digits is rejected, as
Spark rejects it. ``CAST(literal AS type)`` gives the literal that type.
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
from lakesieve.expressions.time_zone import wall_to_utc, zone_is_utc

INT_RANGE = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
MAX_DECIMAL_PRECISION = 38
INT_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
DEC_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$")
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


def decimal_digits(value: decimal.Decimal) -> tuple[int, int]:
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
    precision, _ = decimal_digits(exact)
    if precision > MAX_DECIMAL_PRECISION:
        raise PredicateError(
            f"decimal literal {text} has more than {MAX_DECIMAL_PRECISION} digits (Spark rejects it)"
        )
    return Typed("decimal", exact, text)


def string_to_double(text: str) -> float | None:
    """The double Spark's cast of a string gives (NaN, infinities included), or ``None``."""
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
        if lit.kind == "int" or (lit.kind == "string" and INT_TEXT.match(lit.value)):
            whole = int(lit.value) if lit.kind == "int" else int(lit.value.strip())
            lo, hi = INT_RANGE[target]
            if lo <= whole <= hi:
                return Typed("int", whole, lit.text)
        raise PredicateError(why)
    if target in ("float", "double"):
        number: float
        if lit.kind in ("int", "decimal", "double", "float"):
            number = float(lit.value)
        elif lit.kind == "string" and (parsed := string_to_double(lit.value)) is not None:
            number = parsed
        else:
            raise PredicateError(why)
        if target == "float":
            number = float32(number)
        return Typed(target, number, lit.text)
    dec = decimal_type(target)
    if dec is not None:
        if lit.kind in ("int", "decimal") or (lit.kind == "string" and DEC_TEXT.match(lit.value)):
            exact = decimal.Decimal(str(lit.value).strip())
            if fits_decimal(exact, *dec):
                return Typed("decimal", exact, lit.text)
        raise PredicateError(why)
    if target == "string" and lit.kind == "string":
        return lit
    if target == "binary" and lit.kind == "string":
        return Typed("binary", lit.value.encode(), lit.text)
    if target == "boolean" and lit.kind in ("bool", "string"):
        return Typed("bool", to_bool(lit, why), lit.text)
    if target == "date" and lit.kind in ("string", "date"):
        return Typed("date", to_date(lit, why), lit.text)
    if target in ("timestamp", "timestamp_ntz") and lit.kind in ("string", "timestamp", "date"):
        return to_timestamp(lit, target, why)
    raise PredicateError(why)


def fits_decimal(value: decimal.Decimal, precision: int, scale: int) -> bool:
    """Whether ``value`` is exactly a value of ``decimal(precision, scale)``."""
    if not value.is_finite() or value.adjusted() > 40 or value.adjusted() < -80:
        return False
    if value != value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_FLOOR):
        return False
    return abs(value) < decimal.Decimal(10) ** (precision - scale)


def to_bool(lit: Typed, why: str) -> bool:
    """The boolean of a boolean or ``'true'``/``'false'`` literal; else ``PredicateError(why)``."""
    if lit.kind == "bool":
        return bool(lit.value)
    text = str(lit.value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise PredicateError(why)


def to_date(lit: Typed, why: str) -> dt.date:
    """The date of a date or ``'yyyy-mm-dd'`` literal; else ``PredicateError(why)``."""
    if lit.kind == "date":
        return lit.value  # type: ignore[no-any-return]
    m = _DATE_TEXT.match(str(lit.value))
    if not m:
        raise PredicateError(why)
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        raise PredicateError(why) from None


def to_timestamp(lit: Typed, target: str, why: str) -> Typed:
    """A timestamp literal of kind ``target`` (naive UTC for instants); else ``PredicateError(why)``.

    A wall-clock time (a string or keyword literal without a zone, a date, a
    ``TIMESTAMP_NTZ`` literal) becomes an instant in the session time zone
    (:mod:`~lakesieve.expressions.time_zone`), as Spark casts it.
    """
    if lit.kind == "date":
        wall = dt.datetime.combine(lit.value, dt.time())
        return Typed(target, wall if target == "timestamp_ntz" else wall_to_utc(wall), lit.text)
    if lit.kind == target:
        return Typed(target, lit.value, lit.text)
    if lit.kind == "timestamp_ntz":  # against an instant column: the wall time in the session zone
        return Typed(target, wall_to_utc(lit.value), lit.text)
    if lit.kind == "timestamp":  # an instant against a TIMESTAMP_NTZ column
        if not zone_is_utc():
            raise PredicateError(
                f"{why}: an instant literal against a TIMESTAMP_NTZ column depends on the "
                "session time zone's daylight-saving rules; use a TIMESTAMP_NTZ literal"
            )
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
    elif target == "timestamp":
        value = wall_to_utc(value)
    return Typed(target, value, lit.text)


def keyword_literal(keyword: str, text: str) -> Typed:
    """``DATE '...'``, ``TIMESTAMP '...'`` and ``TIMESTAMP_NTZ '...'`` literals."""
    kw = keyword.upper()
    why = f"{kw} {text!r} is not a valid {kw.lower()} literal"
    raw = Typed("string", text, f"{kw} '{text}'")
    if kw == "DATE":
        return Typed("date", to_date(raw, why), raw.text)
    return to_timestamp(raw, "timestamp_ntz" if kw == "TIMESTAMP_NTZ" else "timestamp", why)
