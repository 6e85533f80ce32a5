"""Order-preserving mapping of column values to 64-bit integers.

Index types that cut the key space into intervals (Sieve's segments and
blocks) work on integers. This module maps every value of a supported Spark
column type to an ``int`` in the signed 64-bit range so that the mapping is
**monotone non-decreasing**: ``a <= b`` in Spark's ordering implies
``map_key(a) <= map_key(b)``.

The mapping per type (``key_type`` is Spark's simple type string):

===========================  ==========================================================
``tinyint`` ... ``bigint``   the integer itself
``boolean``                  ``False -> 0``, ``True -> 1``
``date``                     days since 1970-01-01
``timestamp``,               microseconds since 1970-01-01 00:00 UTC; a naive
``timestamp_ntz``            ``datetime`` is read as UTC (the planner binds timestamp
                             literals that way), an aware one is converted to UTC
``decimal(p,s)``, p <= 18    the unscaled integer ``value * 10**s``
``decimal(p,s)``, p > 18     ``floor(value * 10**(s - (p - 18)))``: the unscaled value
                             with its ``p - 18`` lowest digits dropped (floor), so it
                             fits in int64
``string``, ``binary``       the first 8 bytes (UTF-8 for strings) read big-endian as an
                             unsigned integer, zero-padded on the right, then shifted
                             by ``-2**63`` into the signed range
``float``                    the value rounded to float32, then the IEEE order trick on
                             its 32 bits (so the key lies in the int32 range)
``double``                   the IEEE order trick on its 64 bits
===========================  ==========================================================

The IEEE order trick: the bit pattern of a non-negative float, read as a signed
integer, grows with the value; for negative floats every bit but the sign is
inverted, so larger magnitudes give smaller integers. ``-0.0`` is mapped like
``0.0`` (Spark compares them equal) and every NaN to the largest integer of the
range (Spark sorts NaN above every other value and treats all NaNs as equal).

Query values may be of a wider kind than the column (a ``Decimal`` with more
digits than the scale, an ``int`` beyond the column's range, a ``float``
against an integer column): they are floored to the column's grid and clamped
to the int64 range, which keeps the mapping monotone over the wider domain.

**Why a non-injective mapping is still correct.** Strings that share their
first 8 bytes, ``decimal(p>18)`` values that differ only in the dropped
digits, ``0.0`` and ``-0.0`` all map to the same integer. An index built on the
mapped keys answers "which locations hold a key whose *mapped* value is in
this set"; every key that truly matches a predicate has its mapped value in
the mapped predicate (monotonicity), so the answer is a superset of the true
one — it may only add false positives (the other keys sharing the prefix).
The one trap is an exclusive range bound: ``x > v`` does not imply
``map(x) > map(v)`` when ``map`` is not injective, so exclusive bounds must be
widened to inclusive on the mapped value unless the bound maps exactly (see
:func:`map_bound`).

Two entry points agree exactly: :func:`map_key` for one Python value (query
literals) and :func:`lakesieve.keys.key_arrays.map_keys_arrow` for a pyarrow array (build time, inside
Spark's Python workers).

Index types that compare keys exactly rather than by interval (zone map,
Bloom, exact) use :class:`lakesieve.keys.key_order.KeyOrder`, which is built on
this mapping: its ``int64`` form *is* :func:`lakesieve.keys.key_arrays.map_keys_arrow` for the types
on which the mapping is injective, and only strings, binaries and wide
decimals get a lossless form of their own.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from lakesieve.errors import UnsupportedKeyTypeError

__all__ = [
    "DECIMAL_CONTEXT",
    "INT32_MAX",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_EXACT_DIGITS",
    "MICROS_PER_DAY",
    "KeyKind",
    "as_float",
    "decimal_key",
    "is_injective",
    "map_bound",
    "map_key",
    "micros",
    "parse_key_type",
    "supported",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
#: Digits of precision whose unscaled values always fit in int64.
MAX_EXACT_DIGITS = 18

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ONE_DAY = _dt.timedelta(days=1)
_ONE_MICRO = _dt.timedelta(microseconds=1)
#: Microseconds in one day.
MICROS_PER_DAY = 86_400_000_000

_INT_NAMES = {"tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"}
_SIMPLE = {
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp",
    "string": "string",
    "binary": "binary",
    "float": "float",
    "real": "float",
    "double": "double",
}
_DECIMAL_RE = re.compile(r"^(?:decimal|dec|numeric)(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?$")
_CHAR_RE = re.compile(r"^(?:var)?char\(\s*\d+\s*\)$")

#: Decimal arithmetic wide enough for any decimal(38, s) times 10**38.
DECIMAL_CONTEXT = _dec.Context(prec=120, Emax=_dec.MAX_EMAX, Emin=_dec.MIN_EMIN)


@dataclass(frozen=True)
class KeyKind:
    """A parsed key type.

    Attributes:
        kind: one of ``int``, ``boolean``, ``date``, ``timestamp``, ``decimal``,
            ``string``, ``binary``, ``float``, ``double``.
        precision: decimal precision (0 for other kinds).
        scale: decimal scale (0 for other kinds).
    """

    kind: str
    precision: int = 0
    scale: int = 0

    @property
    def dropped_digits(self) -> int:
        """Lowest decimal digits dropped so the unscaled value fits in int64."""
        return max(0, self.precision - MAX_EXACT_DIGITS) if self.kind == "decimal" else 0


@lru_cache(maxsize=512)
def parse_key_type(key_type: str) -> KeyKind:
    """Parse a Spark simple type string (memoised: lookups parse it once per value).

    Args:
        key_type: e.g. ``bigint``, ``date``, ``decimal(12,2)``, ``string``.

    Returns:
        The parsed kind.

    Raises:
        UnsupportedKeyTypeError: for types without an order-preserving mapping
            (arrays, maps, structs, intervals, ...), naming the type.
    """
    text = str(key_type).strip().lower()
    if text in _INT_NAMES:
        return KeyKind("int")
    if text in _SIMPLE:
        return KeyKind(_SIMPLE[text])
    if _CHAR_RE.match(text):
        return KeyKind("string")
    m = _DECIMAL_RE.match(text)
    if m:
        precision = int(m.group(1)) if m.group(1) else 10
        scale = int(m.group(2)) if m.group(2) else 0
        if 1 <= precision <= 38 and 0 <= scale <= precision:
            return KeyKind("decimal", precision, scale)
    raise UnsupportedKeyTypeError(
        f"key type {key_type!r} has no order-preserving mapping to integers; supported: "
        "tinyint, smallint, int, bigint, boolean, date, timestamp, timestamp_ntz, "
        "decimal(p,s), string, binary, float, double"
    )


def supported(key_type: str) -> bool:
    """Return whether ``key_type`` can be mapped."""
    try:
        parse_key_type(key_type)
    except UnsupportedKeyTypeError:
        return False
    return True


def is_injective(key_type: str) -> bool:
    """Return whether distinct column values always map to distinct integers.

    False for strings and binaries (8-byte prefixes) and for decimals of
    precision above 18 (dropped digits).
    """
    k = parse_key_type(key_type)
    if k.kind in ("string", "binary"):
        return False
    return not (k.kind == "decimal" and k.dropped_digits > 0)


# ---------------------------------------------------------------------------
# scalar mapping
# ---------------------------------------------------------------------------


def _clamp(value: int) -> int:
    return INT64_MIN if value < INT64_MIN else INT64_MAX if value > INT64_MAX else value


def _floor_number(value: Any) -> int:
    """Floor an int, float or Decimal to a (clamped) int64."""
    if isinstance(value, bool | int | np.integer):
        return _clamp(int(value))
    if isinstance(value, float | np.floating):
        f = float(value)
        if math.isnan(f):
            raise ValueError("NaN has no place on an integer key")
        if math.isinf(f):
            return INT64_MAX if f > 0 else INT64_MIN
        return _clamp(math.floor(f))
    if isinstance(value, _dec.Decimal):
        if value.is_nan():
            raise ValueError("NaN has no place on an integer key")
        if value.is_infinite() or (value and value.adjusted() > 40):
            return INT64_MAX if value > 0 else INT64_MIN
        return _clamp(
            int(value.to_integral_value(rounding=_dec.ROUND_FLOOR, context=DECIMAL_CONTEXT))
        )
    raise TypeError(f"cannot map {type(value).__name__} {value!r} to an integer key")


def micros(value: _dt.datetime) -> int:
    """Microseconds since 1970-01-01 00:00 UTC; a naive ``value`` is read as UTC."""
    if value.tzinfo is None:
        return (value - _EPOCH_NAIVE) // _ONE_MICRO
    return (value - _EPOCH_UTC) // _ONE_MICRO


def _prefix_key(data: bytes) -> int:
    head = data[:8].ljust(8, b"\0")
    return int.from_bytes(head, "big") - 2**63


def _double_key(value: float) -> int:
    if math.isnan(value):
        return INT64_MAX
    if value == 0.0:
        value = 0.0  # -0.0 equals 0.0
    bits = int(np.array(value, dtype=np.float64).view(np.int64))
    return bits ^ INT64_MAX if bits < 0 else bits


def _float_key(value: float) -> int:
    if math.isnan(value):
        return INT32_MAX
    with np.errstate(over="ignore"):
        rounded = np.float32(value)  # round to nearest float32: monotone
    if rounded == 0.0:
        rounded = np.float32(0.0)
    bits = int(np.array(rounded, dtype=np.float32).view(np.int32))
    return bits ^ INT32_MAX if bits < 0 else bits


def as_float(value: Any) -> float:
    if isinstance(value, bool | int | float | np.integer | np.floating | _dec.Decimal):
        try:
            return float(value)
        except OverflowError:  # an int beyond the float range
            return math.inf if value > 0 else -math.inf
    raise TypeError(f"cannot map {type(value).__name__} {value!r} to a floating key")


def decimal_key(value: Any, k: KeyKind) -> int:
    if isinstance(value, float | np.floating):
        if math.isnan(float(value)):
            raise ValueError("NaN has no place on a decimal key")
        if math.isinf(float(value)):
            return INT64_MAX if value > 0 else INT64_MIN
        value = _dec.Decimal(float(value))  # exact
    elif isinstance(value, bool | int | np.integer):
        value = _dec.Decimal(int(value))
    if not isinstance(value, _dec.Decimal):
        raise TypeError(f"cannot map {type(value).__name__} {value!r} to a decimal key")
    if value.is_nan():
        raise ValueError("NaN has no place on a decimal key")
    if value.is_infinite() or (value and value.adjusted() > 80):
        return INT64_MAX if value > 0 else INT64_MIN
    if value and value.adjusted() < -80:  # |value| < 1e-79: floors to 0 or -1
        return -1 if value < 0 else 0
    scaled = value.scaleb(k.scale - k.dropped_digits, context=DECIMAL_CONTEXT)
    return _floor_number(scaled)


def map_key(value: Any, key_type: str) -> int:
    """Map one Python value of a column of type ``key_type`` to its integer key.

    Args:
        value: the value (``int``, ``bool``, ``float``, ``Decimal``, ``str``,
            ``bytes``, ``date``, ``datetime``), not ``None``.
        key_type: Spark simple type string of the column.

    Returns:
        The key, in the signed 64-bit range; equal to what
        :func:`lakesieve.keys.key_arrays.map_keys_arrow` gives for the same value.

    Raises:
        UnsupportedKeyTypeError: ``key_type`` is not supported.
        TypeError: ``value`` is ``None`` or of a kind that cannot be compared
            with the column's values.
        ValueError: ``value`` is NaN for a non-floating column.
    """
    k = parse_key_type(key_type)
    if value is None:
        raise TypeError("None has no key; nulls are indexed separately")
    kind = k.kind
    if kind in ("int", "boolean"):
        return _floor_number(value)
    if kind == "date":
        if isinstance(value, _dt.datetime):  # datetime is a date subclass: test it first
            return micros(value) // MICROS_PER_DAY
        if isinstance(value, _dt.date):
            return (value - _EPOCH_DATE) // _ONE_DAY
        raise TypeError(f"cannot map {type(value).__name__} {value!r} to a date key")
    if kind == "timestamp":
        if isinstance(value, _dt.datetime):
            return micros(value)
        if isinstance(value, _dt.date):
            return ((value - _EPOCH_DATE) // _ONE_DAY) * MICROS_PER_DAY
        raise TypeError(f"cannot map {type(value).__name__} {value!r} to a timestamp key")
    if kind == "decimal":
        return decimal_key(value, k)
    if kind in ("string", "binary"):
        if isinstance(value, str):
            return _prefix_key(value.encode("utf-8", "surrogatepass"))
        if isinstance(value, bytes | bytearray | memoryview):
            return _prefix_key(bytes(value))
        raise TypeError(f"cannot map {type(value).__name__} {value!r} to a {kind} key")
    if kind == "float":
        return _float_key(as_float(value))
    return _double_key(as_float(value))


def map_bound(value: Any, key_type: str) -> tuple[int, bool]:
    """Map a range bound and say whether the mapping is exact at this value.

    Exact means no other value of the column maps to the same key and the
    value itself is a value of the column (not between two of them), so an
    exclusive bound may be tightened by one on the mapped key. When not
    exact, callers must treat an exclusive bound as inclusive.

    Args:
        value: the bound value.
        key_type: Spark simple type string of the column.

    Returns:
        ``(key, exact)``.
    """
    key = map_key(value, key_type)
    if key in (INT64_MIN, INT64_MAX) or not is_injective(key_type):
        return key, False
    kind = parse_key_type(key_type).kind
    if kind in ("int", "boolean"):
        exact = isinstance(value, bool | int | np.integer)
    elif kind == "date":
        exact = isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)
    elif kind == "timestamp":
        exact = isinstance(value, _dt.datetime)
    elif kind == "decimal":
        scale = parse_key_type(key_type).scale
        exact = isinstance(value, bool | int | np.integer) or (
            isinstance(value, _dec.Decimal)
            and value.is_finite()
            and value == value.quantize(_dec.Decimal(1).scaleb(-scale), context=DECIMAL_CONTEXT)
        )
    elif kind == "float":
        f = as_float(value)
        with np.errstate(over="ignore"):
            exact = not math.isnan(f) and float(np.float32(f)) == f
    else:
        exact = not math.isnan(as_float(value))
    return key, bool(exact)
