"""Which data files Iceberg's scan planning reads: pyiceberg's own planning, asked per query.

Each key query becomes a pyiceberg row filter and the snapshot's scan is
planned with it (``scan(row_filter=...).plan_files()``): manifests pruned by
their partition summaries, data files by partition and by the per-file
column metrics (lower and upper bounds, null and NaN counts), all by the
Iceberg project's code, from the same manifest metrics Iceberg's Spark reader
plans with. A location is a planned data file's path relative to the table
location (:func:`.snapshot.location_of`).

Where Spark SQL and Iceberg disagree the filter is widened so that no file
holding a matching row is left out, and the row is then labelled an
approximation: Spark SQL orders NaN above every number (``x >= 1`` holds for
NaN), while Iceberg's metrics leave NaN out of a file's bounds and compare
it as false. On a floating-point column, a range open above (or one bounded
by NaN) and a NaN point also ask ``is_nan``, which keeps every file whose NaN
count is not known to be 0.
"""

from __future__ import annotations

import decimal
import math
from typing import TYPE_CHECKING, Any

from lakesieve.plugins.iceberg import catalog, timeline
from lakesieve.plugins.iceberg.snapshot import location_of
from lakesieve.sdk import KeyQuery, LookupResult, TableRef, parse_key_type

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression

SOURCE = "pyiceberg planning, same manifest metrics as Iceberg's Spark reader"
NAN_NOTE = (
    "; on this floating-point column a range open above also asks is_nan "
    "(Spark SQL orders NaN above every number, Iceberg's bounds leave NaN out)"
)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class IcebergPlanning:
    """A :class:`~lakesieve.sdk.SkipsFiles` answered by pyiceberg's scan planning.

    Args:
        ref: the table.
        instant: the snapshot id (the current snapshot when ``None``).
        column: the queried column.
        key_type: its Spark type string.
    """

    def __init__(self, ref: TableRef, instant: str | None, column: str, key_type: str) -> None:
        self.table = catalog.load_for_read(ref.path, ref.options)
        snap = timeline.resolve(self.table, ref.path, instant)
        self.snapshot_id = None if snap is None else snap.snapshot_id
        self.column = column
        kind = parse_key_type(key_type).kind
        self.floating = kind in ("float", "double")
        self.integral = kind == "int"

    @property
    def source(self) -> str:
        """pyiceberg's planning (and the NaN widening on a floating-point column)."""
        return SOURCE + (NAN_NOTE if self.floating else "")

    @property
    def approximation(self) -> bool:
        """Only a floating-point column's filters are widened beyond Iceberg's own."""
        return self.floating

    def _value(self, value: Any, round_up: bool) -> Any:
        """An integer column's bound as an integer (a fraction rounded inwards of the range)."""
        if self.integral and isinstance(value, float | decimal.Decimal) and math.isfinite(value):
            return math.ceil(value) if round_up else math.floor(value)
        return value

    def expression(self, query: KeyQuery) -> BooleanExpression | None:
        """The row filter covering ``query`` in Spark SQL's semantics (``None``: cannot say)."""
        from pyiceberg import expressions

        # pyiceberg's expressions are pydantic models, whose positional forms mypy does not see
        ex: Any = expressions

        col = self.column
        if query.kind == "is_null":
            return ex.IsNull(col)
        if query.kind == "points":
            present = [v for v in query.values if v is not None]
            parts: list[BooleanExpression] = []
            if any(_is_nan(v) for v in present):
                parts.append(ex.IsNaN(col))
            plain = [v for v in present if not _is_nan(v)]
            if self.integral:
                plain = [v for v in plain if not isinstance(v, float) or v == int(v)]
                plain = [int(v) if isinstance(v, float) else v for v in plain]
            if plain:
                parts.append(ex.EqualTo(col, plain[0]) if len(plain) == 1 else ex.In(col, plain))
            return ex.Or(*parts) if len(parts) > 1 else (parts[0] if parts else ex.AlwaysFalse())
        if query.kind != "range":
            return None
        low, high = query.low, query.high
        nan_matches = self.floating and (high is None or _is_nan(high))
        if _is_nan(low):
            return ex.IsNaN(col) if nan_matches else ex.AlwaysFalse()
        sides: list[BooleanExpression] = []
        if low is not None:
            value = self._value(low, round_up=True)
            strict = not query.low_inclusive and value == low
            sides.append(
                ex.GreaterThan(col, value) if strict else ex.GreaterThanOrEqual(col, value)
            )
        if high is not None and not _is_nan(high):
            value = self._value(high, round_up=False)
            strict = not query.high_inclusive and value == high
            sides.append(ex.LessThan(col, value) if strict else ex.LessThanOrEqual(col, value))
        body: BooleanExpression = (
            ex.And(*sides) if len(sides) > 1 else (sides[0] if sides else ex.NotNull(col))
        )
        return ex.Or(body, ex.IsNaN(col)) if nan_matches else body

    def lookup(self, query: KeyQuery) -> LookupResult:
        """The data files pyiceberg plans for ``query``."""
        if self.snapshot_id is None:
            return LookupResult(frozenset())
        try:
            expr = self.expression(query)
            if expr is None:
                return LookupResult.all(f"no Iceberg filter for {query.kind!r} queries")
            tasks = self.table.scan(row_filter=expr, snapshot_id=self.snapshot_id).plan_files()
        except Exception as exc:  # a figure of a report: never a reason to fail it
            return LookupResult.all(f"pyiceberg cannot plan the query: {exc}")
        return LookupResult(frozenset(location_of(self.table, t.file.file_path) for t in tasks))


def iceberg_skipping(
    ref: TableRef, instant: str | None, column: str, key_type: str
) -> IcebergPlanning:
    """pyiceberg's planning of ``column``'s queries at ``instant``."""
    return IcebergPlanning(ref, instant, column, key_type)
