"""Which locations per-location minimum, maximum and null count cannot rule out.

The statistics a table format skips files with (Delta's log, Parquet footers)
are a minimum, a maximum and a null count per file. :class:`MinMaxSkipping`
answers a :class:`~lakesieve.model.KeyQuery` from them, comparing in the
exact comparison forms of :class:`~lakesieve.keys.key_order.KeyOrder` (the
forms the zone map index compares in), so that Spark SQL decides what
matches:

- a point ``p`` may be in a location when ``min <= p <= max``; a range
  ``[lo, hi]`` when ``max >= lo`` and ``min <= hi`` (strict for exclusive
  bounds; a bound that is not a column value is replaced by its neighbouring
  column values);
- a missing minimum or maximum is no bound on that side; a location with no
  statistics at all is always read;
- ``IS NULL``: a null count above 0, or an unknown one;
- a location whose rows are all null never matches a comparison;
- NaN is above every number in Spark SQL (``x >= 1`` holds for NaN) and
  ``-0.0 = 0.0``. Parquet writers leave NaN out of a column chunk's maximum,
  so unless the statistics say their maximum counts NaN (``nan_in_bounds``),
  a floating-point range open above (or a NaN point) keeps every location
  holding a non-null value.

Every answer is a superset of the locations holding a matching row, provided
the statistics are bounds of the rows (a minimum no greater than any value, a
maximum no smaller, apart from NaN as above).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import KeyQuery, LookupResult

__all__ = ["STATS_COLUMNS", "MinMaxSkipping"]

#: The columns of the statistics table :class:`MinMaxSkipping` reads.
STATS_COLUMNS = ("location", "min", "max", "null_count", "rows")

_FLOATS = ("float", "double")


def _counts(table: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(values, known)`` of an integer count column (null: unknown)."""
    col = table.column(name).combine_chunks()
    known = np.asarray(col.is_valid(), dtype=bool)
    values = np.asarray(col.fill_null(0).cast(pa.int64()), dtype=np.int64)
    return values, known


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class MinMaxSkipping:
    """A :class:`~lakesieve.contract.protocols.SkipsFiles` from per-location statistics.

    Args:
        key_type: the column's Spark type string.
        stats: one row per location, columns :data:`STATS_COLUMNS`:
            ``location`` (string), ``min`` and ``max`` (the column's values,
            any Arrow type that casts to the type Spark hands the column over
            in; null: no bound on that side), ``null_count`` and ``rows``
            (integers; null: unknown).
        source: one line naming where the statistics come from.
        approximation: whether these statistics only model the format's
            planning (``True`` unless they are exactly what it plans with and
            it compares them exactly so).
        nan_in_bounds: whether a location holding NaN has NaN as its maximum
            (Spark's own aggregates); Parquet footers leave NaN out.

    Raises:
        UnsupportedKeyTypeError: the key type has no order.
        ValueError: a statistics column is missing or its values do not fit
            the key type.
    """

    def __init__(
        self,
        key_type: str,
        stats: pa.Table,
        source: str,
        approximation: bool = True,
        nan_in_bounds: bool = False,
    ) -> None:
        missing = [c for c in STATS_COLUMNS if c not in stats.column_names]
        if missing:
            raise ValueError(f"statistics table lacks columns {missing}")
        self._source = source
        self._approximation = approximation
        self.order = KeyOrder.of(key_type, "native skipping")
        self.nan_may_hide = self.order.kind.kind in _FLOATS and not nan_in_bounds
        loc = stats.column("location").combine_chunks()
        if loc.null_count:
            raise ValueError("statistics table has a null location")
        self.locations = np.array(loc.to_pylist(), dtype=object)
        target = self.order.arrow_type()
        try:
            mins = stats.column("min").combine_chunks().cast(target)
            maxs = stats.column("max").combine_chunks().cast(target)
        except (pa.ArrowException, TypeError) as exc:
            raise ValueError(f"statistics do not fit type {key_type!r}: {exc}") from exc
        self.has_min = np.asarray(mins.is_valid(), dtype=bool)
        self.has_max = np.asarray(maxs.is_valid(), dtype=bool)
        self.min_forms = self.order.array(mins)
        self.max_forms = self.order.array(maxs)
        nulls, nulls_known = _counts(stats, "null_count")
        rows, rows_known = _counts(stats, "rows")
        self.may_hold_nulls = ~nulls_known | (nulls > 0)
        self.may_hold_values = ~(nulls_known & rows_known & (rows <= nulls))

    @property
    def source(self) -> str:
        """Where the statistics come from."""
        return self._source

    @property
    def approximation(self) -> bool:
        """Whether these statistics only model the format's planning."""
        return self._approximation

    def _names(self, mask: np.ndarray) -> frozenset[str]:
        return frozenset(self.locations[mask].tolist())

    def _scalar(self, form: Any) -> np.ndarray:
        return np.array([form], dtype=self.min_forms.dtype)

    def points(self, values: tuple[Any, ...]) -> frozenset[str]:
        """Locations whose ``[min, max]`` may hold one of ``values`` (nulls match nothing)."""
        hit = np.zeros(len(self.locations), dtype=bool)
        present = [v for v in values if v is not None]
        if self.nan_may_hide and any(_is_nan(v) for v in present):
            hit |= self.may_hold_values
        forms = [f for v in present for f in self.order.query(v).points()]
        if forms:
            wanted = self.order.sorted_unique(forms)
            first = np.where(self.has_min, np.searchsorted(wanted, self.min_forms, side="left"), 0)
            past = np.where(
                self.has_max, np.searchsorted(wanted, self.max_forms, side="right"), len(wanted)
            )
            hit |= self.may_hold_values & (past > first)
        return self._names(hit)

    def key_range(self, query: KeyQuery) -> frozenset[str]:
        """Locations whose ``[min, max]`` meets the range of ``query``."""
        hit = self.may_hold_values.copy()
        nan_matches = self.nan_may_hide and (query.high is None or _is_nan(query.high))
        if query.low is not None and not nan_matches:
            low = self.order.query(query.low)
            bound = self._scalar(low.lower_bound())
            if low.lower_bound_strict(query.low_inclusive):
                reach = np.asarray(self.max_forms > bound, dtype=bool)
            else:
                reach = np.asarray(self.max_forms >= bound, dtype=bool)
            hit &= reach | ~self.has_max
        if query.high is not None:
            high = self.order.query(query.high)
            bound = self._scalar(high.upper_bound())
            if high.upper_bound_strict(query.high_inclusive):
                below = np.asarray(self.min_forms < bound, dtype=bool)
            else:
                below = np.asarray(self.min_forms <= bound, dtype=bool)
            hit &= below | ~self.has_min
        return self._names(hit)

    def lookup(self, query: KeyQuery) -> LookupResult:
        """The locations the statistics cannot rule out for ``query``."""
        try:
            if query.kind == "is_null":
                return LookupResult(self._names(self.may_hold_nulls))
            if query.kind == "points":
                return LookupResult(self.points(query.values))
            if query.kind == "range":
                return LookupResult(self.key_range(query))
        except (TypeError, ValueError, ArithmeticError) as exc:
            return LookupResult.all(f"statistics cannot compare the query's values: {exc}")
        return LookupResult.all(f"statistics do not answer {query.kind!r} queries")

    def describe(self) -> dict[str, Any]:
        """Counts of the statistics held (for reports)."""
        return {
            "source": self._source,
            "locations": len(self.locations),
            "without_bounds": int((~self.has_min & ~self.has_max & self.may_hold_values).sum()),
        }
