"""Exact, order-preserving forms of key values, for comparing them on the driver.

The zone map compares query values with per-location minimum and maximum
keys; the exact index binary-searches sorted distinct keys. Both need every
value of a column in a form that numpy can compare *exactly* in the column's
own order, and query values in the same form. :class:`KeyOrder` gives it, per
Spark key type:

=============================  ==============  =======================================
key type                       form            notes
=============================  ==============  =======================================
``tinyint`` ... ``bigint``,    ``int64``       :func:`lakesieve.keys.key_arrays.map_keys_arrow`, which
``boolean``, ``date``,                         is injective for these types (``-0.0``
``timestamp[_ntz]``,                           and ``0.0``, and all NaNs, share one
``decimal(p<=18,s)``,                          integer, as Spark compares them equal)
``float``, ``double``
``string``, ``binary``         ``bytes``       UTF-8 bytes in an object array; Spark
                                               orders strings by their UTF-8 bytes
``decimal(p>18,s)``            ``Decimal``     :class:`decimal.Decimal` in an object
                                               array (exact numeric comparisons)
=============================  ==============  =======================================

A query value becomes :class:`QueryForms`: the forms of the nearest column
values at or below it (``low``) and at or above it (``high``) — one and the
same form, ``exact``, when the value is itself a value of the column. A
value that is not (``1.5`` against an integer column, ``1.505`` against
``decimal(10,2)``, a double no float32 equals against a ``float`` column, a
timestamp within a day against a date column, an integer beyond the type's
range) sits strictly between two column values, and Spark SQL compares it
exactly (it widens the column to the literal's type: a ``float`` column is
compared in double, ``f > 0.1`` holds for ``f = float32(0.1)``, and
``f = 0.1`` holds for no float). So ``x > v`` and ``x >= v`` keep
``form >= high``, ``x < v`` and ``x <= v`` keep ``form <= low``, and
``x = v`` keeps nothing (:meth:`QueryForms.lower_bound`,
:meth:`QueryForms.upper_bound`, :meth:`QueryForms.points`). A value beyond
every column value is clamped to the extreme form and marked inexact, which
can only add that extreme's locations.

Unlike :mod:`lakesieve.keys.mapping`, nothing here is lossy: strings keep every byte
and wide decimals every digit, so the exact index prunes perfectly.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.errors import UnsupportedKeyTypeError
from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.mapping import (
    DECIMAL_CONTEXT,
    INT64_MAX,
    MICROS_PER_DAY,
    KeyKind,
    map_key,
    micros,
    parse_key_type,
)
from lakesieve.keys.unique import unique_ints

__all__ = ["SUPPORTED_KEY_TYPES", "Form", "KeyOrder", "QueryForms"]

#: What every index type built on :class:`KeyOrder` accepts, for error messages.
SUPPORTED_KEY_TYPES = (
    "tinyint, smallint, int, bigint, boolean, float, double, date, timestamp, "
    "timestamp_ntz, decimal(p,s), string, char(n), varchar(n), binary"
)

Form = Literal["int64", "bytes", "decimal"]


@dataclass(frozen=True)
class KeyOrder:
    """Exact comparison forms for one key type.

    Attributes:
        key_type: the column's Spark simple type string.
        kind: the parsed type.
        form: ``"int64"``, ``"bytes"`` or ``"decimal"`` (see the module docs).
    """

    key_type: str
    kind: KeyKind
    form: Form

    @classmethod
    def of(cls, key_type: str, index_type: str = "") -> KeyOrder:
        """The forms for ``key_type``.

        Args:
            key_type: Spark simple type string.
            index_type: named in the error message.

        Raises:
            UnsupportedKeyTypeError: for types without a total order (arrays,
                maps, structs, intervals...), naming the type.
        """
        try:
            kind = parse_key_type(key_type)
        except UnsupportedKeyTypeError:
            who = f"index type {index_type!r}" if index_type else "this index type"
            raise UnsupportedKeyTypeError(
                f"{who} cannot index a column of type {key_type!r}; supported: "
                f"{SUPPORTED_KEY_TYPES}"
            ) from None
        form: Form
        if kind.kind in ("string", "binary"):
            form = "bytes"
        elif kind.kind == "decimal" and kind.dropped_digits > 0:
            form = "decimal"
        else:
            form = "int64"
        return cls(str(key_type), kind, form)

    def arrow_type(self) -> pa.DataType:
        """The Arrow type Spark hands the column's values over in."""
        kind, text = self.kind.kind, self.key_type.strip().lower()
        if kind == "int":
            ints = {
                "tinyint": pa.int8(),
                "byte": pa.int8(),
                "smallint": pa.int16(),
                "short": pa.int16(),
                "int": pa.int32(),
                "integer": pa.int32(),
            }
            return ints.get(text, pa.int64())
        if kind == "timestamp":
            return pa.timestamp("us") if text == "timestamp_ntz" else pa.timestamp("us", tz="UTC")
        if kind == "decimal":
            return pa.decimal128(self.kind.precision, self.kind.scale)
        simple: dict[str, pa.DataType] = {
            "boolean": pa.bool_(),
            "float": pa.float32(),
            "double": pa.float64(),
            "date": pa.date32(),
            "string": pa.string(),
            "binary": pa.binary(),
        }
        return simple[kind]

    # ------------------------------------------------------------- arrays

    def array(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Comparison forms of a column's values; nulls get a filler (mask them).

        Args:
            values: the values, in the Arrow type Spark uses for the column
                (wider integer and timestamp units are accepted).

        Returns:
            An ``int64`` array, or an object array of ``bytes`` or ``Decimal``.
        """
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
        if self.form == "int64":
            mapped = map_keys_arrow(values, self.key_type)
            return np.asarray(mapped.fill_null(0) if mapped.null_count else mapped, np.int64)
        if self.form == "bytes":
            raw = self.binary(values)
            filled = raw.fill_null(b"") if raw.null_count else raw
            return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=object)
        zero = _dec.Decimal(0)
        out = np.empty(len(values), dtype=object)
        out[:] = [zero if v is None else v for v in values.to_pylist()]
        return out

    @staticmethod
    def binary(values: pa.Array) -> pa.Array:
        """String or binary values as ``large_binary`` (Arrow compares those bytewise)."""
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if pa.types.is_large_binary(values.type):
            return values
        return values.cast(pa.large_binary())

    def sort_indices(self, values: pa.Array, ties: np.ndarray) -> np.ndarray:
        """Row order by (value, ``ties``); ``values`` must hold no nulls.

        Args:
            values: typed column values.
            ties: int array of the same length breaking ties (location ids).

        Returns:
            int64 indices that sort the rows.
        """
        if self.form == "int64":
            forms = self.array(values)
            packed = _packed(forms, np.asarray(ties))
            if packed is not None:
                return np.argsort(packed, kind="stable").astype(np.int64)
            return np.lexsort((ties, forms)).astype(np.int64)
        col = self.binary(values) if self.form == "bytes" else values
        table = pa.table({"k": col, "t": pa.array(ties)})
        order = pc.sort_indices(table, sort_keys=[("k", "ascending"), ("t", "ascending")])
        return np.asarray(order, dtype=np.int64)

    @staticmethod
    def changes(forms: np.ndarray) -> np.ndarray:
        """For sorted forms, whether each element differs from the one before (first: True)."""
        out = np.ones(len(forms), dtype=bool)
        if len(forms) > 1:
            out[1:] = np.asarray(forms[1:] != forms[:-1], dtype=bool)
        return out

    @staticmethod
    def strictly_increasing(forms: np.ndarray) -> bool:
        """Whether the forms are sorted with no repeats."""
        if len(forms) < 2:
            return True
        return bool(np.all(np.asarray(forms[1:] > forms[:-1], dtype=bool)))

    def sorted_unique(self, forms: list[Any]) -> np.ndarray:
        """Query forms sorted, duplicates removed, as an array comparable with :meth:`array`."""
        if self.form == "int64":
            return unique_ints(np.asarray(forms, dtype=np.int64))
        out = np.empty(len(set(forms)), dtype=object)
        out[:] = sorted(set(forms))
        return out

    # ------------------------------------------------------------- values

    def query(self, value: Any) -> QueryForms:
        """The forms of the column values nearest to a query value (see the module docs).

        Args:
            value: a query value (not ``None``).

        Raises:
            TypeError: the value cannot be compared with the column's values.
            ValueError: NaN against a non-floating column.
        """
        if value is None:
            raise TypeError("None has no key form; nulls are indexed separately")
        if self.form == "bytes":
            if isinstance(value, str):
                raw = value.encode("utf-8", "surrogatepass")
            elif isinstance(value, bytes | bytearray | memoryview):
                raw = bytes(value)
            else:
                raise TypeError(
                    f"cannot compare {type(value).__name__} {value!r} with {self.key_type}"
                )
            return QueryForms(raw, raw, True)
        if self.form == "decimal":
            return self._wide_decimal_forms(self._wide_decimal(value))
        key = map_key(value, self.key_type)
        kind = self.kind.kind
        if kind in ("float", "double"):
            return self._float_forms(value, key)
        if kind == "timestamp":
            return QueryForms(key, key, True)
        if kind == "date":
            exact = not isinstance(value, _dt.datetime) or micros(value) % MICROS_PER_DAY == 0
            return QueryForms(key, key if exact else key + 1, exact)
        if kind == "decimal":
            as_dec = value if isinstance(value, _dec.Decimal) else _dec.Decimal(value)
            side = _sign(
                _dec.Decimal(key).scaleb(-self.kind.scale, context=DECIMAL_CONTEXT), as_dec
            )
        else:
            side = _sign(key, value)
        if side == 0:
            return QueryForms(key, key, True)
        if side < 0:  # floored: the next grid value is above
            return QueryForms(key, min(key + 1, INT64_MAX), False)
        return QueryForms(key, key, False)  # clamped up to the smallest key

    def _float_forms(self, value: Any, key: int) -> QueryForms:
        wide = self.kind.kind == "double"
        try:
            as_float = float(value)
        except OverflowError:
            as_float = math.inf if value > 0 else -math.inf
        if math.isnan(as_float):
            return QueryForms(key, key, True)  # NaN has its own key, above +inf
        with np.errstate(over="ignore"):
            near = np.float64(as_float) if wide else np.float32(as_float)
        side = _sign(float(near), value if not isinstance(value, np.floating) else float(value))
        if side == 0:
            return QueryForms(key, key, True)
        toward = type(near)(math.inf if side < 0 else -math.inf)
        other = map_key(float(np.nextafter(near, toward)), self.key_type)
        return QueryForms(min(key, other), max(key, other), False)

    def _wide_decimal_forms(self, value: _dec.Decimal) -> QueryForms:
        if not value.is_finite() or (value and value.adjusted() > 100):
            return QueryForms(value, value, True)
        quantum = _dec.Decimal(1).scaleb(-self.kind.scale)
        low = value.quantize(quantum, rounding=_dec.ROUND_FLOOR, context=DECIMAL_CONTEXT)
        high = value.quantize(quantum, rounding=_dec.ROUND_CEILING, context=DECIMAL_CONTEXT)
        return QueryForms(low, high, low == high)

    @staticmethod
    def _wide_decimal(value: Any) -> _dec.Decimal:
        if isinstance(value, bool | int | np.integer):
            return _dec.Decimal(int(value))
        if isinstance(value, float | np.floating):
            if math.isnan(float(value)):
                raise ValueError("NaN has no place on a decimal key")
            return _dec.Decimal(float(value))  # exact; infinities compare fine
        if isinstance(value, _dec.Decimal):
            if value.is_nan():
                raise ValueError("NaN has no place on a decimal key")
            return value
        raise TypeError(f"cannot compare {type(value).__name__} {value!r} with a decimal key")


def _sign(a: Any, b: Any) -> int:
    """-1, 0 or +1 as ``a`` compares with ``b`` (exact across int, float and Decimal)."""
    return (a > b) - (a < b)


@dataclass(frozen=True)
class QueryForms:
    """Where a query value falls among a column's values, as comparison forms.

    Attributes:
        low: form of the nearest column value at or below the query value.
        high: form of the nearest column value at or above it.
        exact: the query value is itself a column value (``low == high``).
    """

    low: Any
    high: Any
    exact: bool

    def points(self) -> list[Any]:
        """The forms a point query must look up: the value's, or none (no column value equals it)."""
        return [self.low] if self.exact else []

    def lower_bound(self) -> Any:
        """For ``x > v`` / ``x >= v``: the form keys must reach (``high`` when inexact)."""
        return self.low if self.exact else self.high

    def upper_bound(self) -> Any:
        """For ``x < v`` / ``x <= v``: the form keys must not pass (``low`` when inexact)."""
        return self.high if self.exact else self.low

    def lower_bound_strict(self, inclusive: bool) -> bool:
        """For ``x > v`` / ``x >= v``: whether forms must exceed :meth:`lower_bound` (else reach it)."""
        return self.exact and not inclusive

    def upper_bound_strict(self, inclusive: bool) -> bool:
        """For ``x < v`` / ``x <= v``: whether forms must stay below :meth:`upper_bound`."""
        return self.exact and not inclusive


def _packed(forms: np.ndarray, ties: np.ndarray) -> np.ndarray | None:
    """``(form, tie)`` packed into one int64 that sorts the same, or ``None`` where it cannot.

    Forms are shifted to start at 0 and the ties (non-negative) take the low
    bits; that fits when the forms' span leaves room for the ties' bits (a
    key range's partition nearly always), and sorting one int64 array is
    several times faster than ``lexsort`` of two.
    """
    if not len(forms) or not np.issubdtype(ties.dtype, np.integer):
        return None
    low_tie, high_tie = int(ties.min()), int(ties.max())
    if low_tie < 0:
        return None
    bits = max(1, high_tie.bit_length())
    low, high = int(forms.min()), int(forms.max())
    if (high - low) >> (62 - bits):
        return None
    return ((forms - np.int64(low)) << np.int64(bits)) | ties.astype(np.int64)
