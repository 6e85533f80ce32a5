"""The rows, predicates and row comparisons of the format contract kit.

The kit's tables hold values that readers get wrong: NULL in every column but
the key, NaN, -0.0, +/-infinity, a date and a timestamp column. Rows are
compared as multisets of *canonical* tuples, so that NaN equals NaN, -0.0 and
0.0 stay apart (a reader that turns one into the other mis-reads the file),
and a timestamp is its microseconds since the epoch whether it came from Arrow
(zone-aware) or from Spark (a wall time in the session's zone).

Nothing here knows a table format; :mod:`lakesieve.testing.format_contract`
uses it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "ADVERSARIAL_PREDICATES",
    "ARROW_SCHEMA",
    "COLUMNS",
    "OPTIONAL_COLUMNS",
    "ROW_GROUP_ROWS",
    "SPARK_SCHEMA",
    "Row",
    "arrow_rows",
    "canonical_table",
    "contract_rows",
    "difference",
    "predicates",
    "rows_by_location",
    "show",
    "spark_rows",
]

#: The columns of every contract table, in order: ``id`` (bigint, unique, never
#: NULL), ``k`` (bigint, ``id // 3``, sometimes NULL), ``s`` (string, sometimes
#: NULL), ``x`` (double: NaN, -0.0, 0.0, +/-infinity, NULL and plain numbers),
#: ``d`` (date) and ``t`` (timestamp, an instant in UTC), both sometimes NULL.
COLUMNS = ("id", "k", "s", "x", "d", "t")

#: Columns a format that cannot store them may leave out (``FormatContract.omit_columns``).
OPTIONAL_COLUMNS = ("x", "d", "t")

#: The contract columns as Arrow types (``t`` is microseconds, zone UTC).
ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("k", pa.int64()),
        ("s", pa.string()),
        ("x", pa.float64()),
        ("d", pa.date32()),
        ("t", pa.timestamp("us", tz="UTC")),
    ]
)

#: The contract columns as a Spark DDL schema string.
SPARK_SCHEMA = "id bigint, k bigint, s string, x double, d date, t timestamp"

#: Rows per Parquet row group that a writer under the author's control should
#: use (pyarrow ``row_group_size``, delta-rs ``max_row_group_size``), so that
#: every data file holds several row groups and a reader that drops one fails.
ROW_GROUP_ROWS = 16

#: One row as the kit compares them: canonical values, in column order.
Row = tuple[Any, ...]

_WORDS = ("amber", "birch", "cedar", "dune", "ember", "fjord")
_DAY0 = dt.date(2024, 1, 1)
_TIME0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SPECIAL = (math.nan, -0.0, 0.0, None, math.inf, -math.inf)


def _x(i: int) -> float | None:
    """``x`` of row ``i``: a special value for most rows, else a small number."""
    special = i % 9
    if special < len(_SPECIAL):
        return _SPECIAL[special]
    return ((i * 7) % 23 - 11) * 0.5


def contract_rows(ids: Sequence[int] | range, tag: str = "") -> list[dict[str, Any]]:
    """Rows with a unique ``id`` and the other contract columns derived from it.

    ``k = id // 3`` (NULL for every 29th id), ``s`` a word and a two-digit
    group (NULL for every 13th), ``x`` cycling through NaN, -0.0, 0.0, NULL,
    +/-infinity and numbers, ``d`` a day (``id // 7`` days after 2024-01-01)
    and ``t`` an instant (``37 * id`` minutes and ``id`` microseconds after
    2024-01-01T00:00Z), each NULL now and then. Dates and timestamps are
    Python ``date`` and zone-aware ``datetime`` values.

    Args:
        ids: the ids to make rows for.
        tag: appended to ``s`` so an upsert visibly changes a row.
    """
    return [
        {
            "id": i,
            "k": None if i % 29 == 11 else i // 3,
            "s": None if i % 13 == 7 else f"{_WORDS[(i // 5) % len(_WORDS)]}-{i // 40:02d}{tag}",
            "x": _x(i),
            "d": None if i % 19 == 3 else _DAY0 + dt.timedelta(days=i // 7),
            "t": None if i % 23 == 4 else _TIME0 + dt.timedelta(minutes=37 * i, microseconds=i),
        }
        for i in ids
    ]


#: Predicates every pruned-read check runs before the random ones (one per
#: instant, in turn), each with the optional columns it needs: NaN equals NaN,
#: -0.0 equals 0.0, NaN is above every number and infinity, NOT of a comparison
#: with NULL drops the row, dates and timestamps compare with literals of
#: either kind, and IS NULL finds the NULLs of indexed columns.
ADVERSARIAL_PREDICATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("x = CAST('NaN' AS DOUBLE) OR x = -0.0", ("x",)),
    ("x > 1e300 AND NOT (k = 7)", ("x",)),
    (
        "(d BETWEEN DATE '2024-01-10' AND '2024-01-20' OR t < TIMESTAMP '2024-01-02 00:00:00')"
        " AND s IS NOT NULL",
        ("d", "t"),
    ),
    ("k IS NULL OR s IS NULL", ()),
)


def _day(n: int) -> str:
    return (_DAY0 + dt.timedelta(days=n)).isoformat()


@st.composite
def predicates(draw: Any, max_id: int = 400, columns: Sequence[str] = COLUMNS) -> str:
    """SQL predicates over the contract columns, as a user writes them.

    Comparisons, BETWEEN, IN, IS [NOT] NULL, ``!=``, joined by AND/OR/NOT.
    Literals include NaN (``CAST('NaN' AS DOUBLE)`` and ``'NaN'``), -0.0,
    infinities, DATE and TIMESTAMP literals (with and without a zone) and
    strings a date or timestamp column is compared with.
    """

    def literal(column: str) -> str:
        if column == "s":
            word = draw(st.sampled_from(_WORDS))
            return f"'{word}-{draw(st.integers(0, max_id // 40)):02d}'"
        if column == "x":
            return draw(
                st.sampled_from(
                    [
                        "CAST('NaN' AS DOUBLE)",
                        "'NaN'",
                        "-0.0",
                        "0.0",
                        "0",
                        "CAST('Infinity' AS DOUBLE)",
                        "CAST('-Infinity' AS DOUBLE)",
                        "-1.5",
                        "2.5",
                        "1e300",
                    ]
                )
            )
        if column == "d":
            day = draw(st.integers(-1, max_id // 7 + 1))
            return f"DATE '{_day(day)}'" if draw(st.booleans()) else f"'{_day(day)}'"
        if column == "t":
            when = _TIME0 + dt.timedelta(minutes=draw(st.integers(-60, 37 * max_id + 60)))
            text = when.strftime("%Y-%m-%d %H:%M:%S")
            zone = draw(st.sampled_from(["", "", "+00:00", "-05:30"]))
            if zone == "-05:30":
                text = (when + dt.timedelta(hours=-5, minutes=-30)).strftime("%Y-%m-%d %H:%M:%S")
            return f"TIMESTAMP '{text}{zone}'"
        top = max_id if column == "id" else max_id // 3
        return str(draw(st.integers(-2, top + 2)))

    def leaf() -> str:
        column = draw(st.sampled_from(list(columns)))
        form = draw(st.sampled_from(["=", "<", ">=", "!=", "between", "in", "null"]))
        if form == "null":
            return f"{column} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
        if form == "between":
            low, high = literal(column), literal(column)
            return f"{column} BETWEEN {low} AND {high}"
        if form == "in":
            return f"{column} IN ({', '.join(literal(column) for _ in range(draw(st.integers(1, 3))))})"
        return f"{column} {form} {literal(column)}"

    text = leaf()
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["AND", "OR"]))
        neg = "NOT " if draw(st.booleans()) else ""
        text = f"({text}) {op} {neg}({leaf()})"
    return text


# ------------------------------------------------------------------ canonical rows


def _value(v: Any) -> Any:
    """One value in canonical form: floats as text (``nan``, ``-0.0``), the rest as they are."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    return v


def canonical_table(table: pa.Table, columns: Sequence[str], extra: Sequence[str] = ()) -> pa.Table:
    """``table``'s ``columns`` (then ``extra``) cast to the kit's types, timestamps as UTC.

    A zone-less timestamp is taken as UTC; strings of any width become
    ``string``. Columns the kit does not know keep their type.

    Raises:
        AssertionError: a column is missing or cannot be cast (the message names it).
    """
    fields = {f.name: f.type for f in ARROW_SCHEMA}
    arrays, names = [], []
    for name in (*columns, *extra):
        assert name in table.column_names, f"no column {name!r} in {table.column_names}"
        col = table.column(name)
        want = fields.get(name, pa.string() if name in extra else col.type)
        try:
            if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(want):
                col = col.cast(pa.timestamp(col.type.unit, tz="UTC"))
            arrays.append(col.cast(want))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise AssertionError(
                f"column {name!r} of type {col.type} is not {want}: {exc}"
            ) from exc
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def arrow_rows(table: pa.Table, columns: Sequence[str], extra: Sequence[str] = ()) -> Counter[Row]:
    """The multiset of canonical rows of ``table`` (``columns``, then ``extra``)."""
    table = canonical_table(table, columns, extra)
    lists = []
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        lists.append(col.to_pylist())
    return Counter(tuple(_value(v) for v in row) for row in zip(*lists, strict=True))


def spark_rows(frame: Any, columns: Sequence[str], extra: Sequence[str] = ()) -> Counter[Row]:
    """The multiset of canonical rows of a Spark DataFrame (``columns``, then ``extra``).

    Timestamps are read as ``unix_micros`` inside Spark, so the session's
    zone does not matter.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    types = {f.name: f.dataType for f in frame.schema.fields}
    picked = [
        F.unix_micros(F.col(c)).alias(c) if isinstance(types.get(c), TimestampType) else F.col(c)
        for c in (*columns, *extra)
    ]
    return Counter(tuple(_value(v) for v in row) for row in frame.select(*picked).collect())


def rows_by_location(located: Counter[Row]) -> dict[str, Counter[Row]]:
    """Rows whose last value is a location, grouped by it (the location dropped)."""
    out: dict[str, Counter[Row]] = {}
    for row, n in located.items():
        out.setdefault(str(row[-1]), Counter())[row[:-1]] += n
    return out


def show(rows: Iterable[Row], limit: int = 6) -> str:
    """A few rows for a failure message."""
    listed = sorted(rows, key=repr)
    more = f" ... ({len(listed) - limit} more)" if len(listed) > limit else ""
    return ", ".join(repr(r) for r in listed[:limit]) + more


def difference(got: Counter[Row], want: Counter[Row]) -> str:
    """What ``got`` has too many of and too few of, for a failure message."""
    extra, missing = got - want, want - got
    return f"{sum(missing.values())} missing [{show(missing.elements())}], {sum(extra.values())} unexpected [{show(extra.elements())}]"
