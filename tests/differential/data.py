"""Adversarial tables: one fixed schema, hypothesis strategies for its values and layouts.

Every generated table has the columns of :data:`SCHEMA`. ``id`` is the record
key (unique, never NULL), ``v`` a version column (Hudi's precombine field) and
``loc`` the location a row was first written to (Hudi's bucket column: row
``r`` lands in file group ``r.loc % locations``). Every other column is a
value column that predicates test, with the values that broke pruned reads
before: NULLs, NaN, ``-0.0``, infinities, int64 and decimal extremes, float32
values that are not exact doubles, strings sharing a prefix longer than eight
bytes (the Sieve and zone map keys look at eight bytes), empty and non-ASCII
strings, dates and timestamps on both sides of the epoch.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

D = decimal.Decimal
UTC = dt.UTC

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int32()),
        pa.field("loc", pa.int32()),
        pa.field("i", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("g", pa.float32()),
        pa.field("dec", pa.decimal128(18, 4)),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("tn", pa.timestamp("us")),
        pa.field("b", pa.bool_()),
    ]
)

#: Columns predicates test (``id`` too: it is what record-key indexes are built on).
VALUE_COLUMNS = ("id", "i", "f", "g", "dec", "s", "d", "ts", "tn", "b")

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
DEC_MAX = D("99999999999999.9999")

INTS = [
    0,
    1,
    -1,
    2,
    5,
    42,
    1000,
    INT64_MAX,
    INT64_MIN,
    INT64_MAX - 1,
    INT64_MIN + 1,
    2**31,
    -(2**31) - 1,
]
DOUBLES = [
    0.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    0.5,
    -0.5,
    1.0,
    2.0,
    0.1,
    1e308,
    -1e308,
    5e-324,
    1e-5,
    2.0**53,
    2.0**53 + 1.0,
    9.223372036854776e18,
]
FLOATS = [
    0.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    0.5,
    1.0,
    0.1,
    3.4028234663852886e38,
    1.401298464324817e-45,
    16777217.0,
    -2.5,
]
DECIMALS = [
    D(0),
    D("-0.0000"),
    D("0.0001"),
    D("-0.0001"),
    D(2),
    D("852.5807"),
    D("2.5"),
    DEC_MAX,
    -DEC_MAX,
    D("1.0000"),
]
#: Strings sharing the 9+ byte prefix ``prefix-ab``, the empty string, non-ASCII text
#: (its bytes are above every ASCII byte) and ``~`` (above every other ASCII letter).
STRINGS = [
    "",
    "a",
    "prefix-ab",
    "prefix-abc",
    "prefix-abd",
    "prefix-ab\u00e9",
    "prefix-aa",
    "\u00e9t\u00e9",
    "\u65e5\u672c",
    "z",
    "~",
    " ",
    "A",
    "0",
    "prefix-ab0000000000",
]
DATES = [
    dt.date(1970, 1, 1),
    dt.date(1969, 12, 31),
    dt.date(2024, 2, 29),
    dt.date(2024, 3, 1),
    dt.date(1900, 1, 1),
    dt.date(9999, 12, 31),
    dt.date(2000, 1, 1),
]
NAIVE_TIMESTAMPS = [
    dt.datetime(1970, 1, 1),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2024, 1, 1, 12, 0),
    dt.datetime(2024, 1, 1, 12, 0, 0, 1),
    dt.datetime(1900, 1, 1),
    dt.datetime(2262, 4, 11, 23, 47, 16),
]


def _doubles() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(DOUBLES), st.floats(allow_nan=True, allow_infinity=True))


def _floats32() -> st.SearchStrategy[float]:
    return st.one_of(
        st.sampled_from(FLOATS), st.floats(width=32, allow_nan=True, allow_infinity=True)
    )


def _strings() -> st.SearchStrategy[str]:
    # no quote or backslash: literal escaping is not what these tests are about
    alphabet = st.characters(blacklist_characters="'\"\\`", blacklist_categories=("Cs", "Cc"))
    return st.one_of(
        st.sampled_from(STRINGS),
        st.text(alphabet, max_size=12),
        st.text(alphabet, max_size=4).map(lambda t: "prefix-ab" + t),
    )


def _decimals() -> st.SearchStrategy[decimal.Decimal]:
    return st.one_of(
        st.sampled_from(DECIMALS),
        st.integers(-(10**18) + 1, 10**18 - 1).map(lambda n: D(n).scaleb(-4)),
    )


def _timestamps() -> st.SearchStrategy[dt.datetime]:
    return st.one_of(
        st.sampled_from(NAIVE_TIMESTAMPS),
        st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)),
    )


def _nullable(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy, strategy)


VALUE_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "i": _nullable(st.one_of(st.sampled_from(INTS), st.integers(INT64_MIN, INT64_MAX))),
    "f": _nullable(_doubles()),
    "g": _nullable(_floats32()),
    "dec": _nullable(_decimals()),
    "s": _nullable(_strings()),
    "d": _nullable(
        st.one_of(st.sampled_from(DATES), st.dates(dt.date(1900, 1, 1), dt.date(9999, 12, 31)))
    ),
    "ts": _nullable(_timestamps().map(lambda t: t.replace(tzinfo=UTC))),
    "tn": _nullable(_timestamps()),
    "b": _nullable(st.booleans()),
}


def row_strategy(
    row_id: int, locations: int, version: int = 0
) -> st.SearchStrategy[dict[str, Any]]:
    """One row with key ``row_id`` and adversarial values in every value column."""
    return st.fixed_dictionaries(
        {
            "id": st.just(row_id),
            "v": st.just(version),
            "loc": st.integers(0, max(locations - 1, 0)),
            **VALUE_STRATEGIES,
        }
    )


@dataclass
class Mutation:
    """One change after the index build: ``kind`` is append, delete or upsert."""

    kind: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)


@dataclass
class TableSpec:
    """A table to write: its initial rows (``loc`` says where each goes) and later changes."""

    locations: int
    rows: list[dict[str, Any]]
    mutations: list[Mutation]
    refresh: bool


def to_arrow(rows: list[dict[str, Any]]) -> pa.Table:
    """``rows`` as an Arrow table of :data:`SCHEMA`."""
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@st.composite
def table_specs(draw: st.DrawFn, max_rows: int = 24, mutate: bool = True) -> TableSpec:
    """A small table over 1-5 locations, sometimes laid out sorted by one column, and its changes."""
    locations = draw(st.integers(1, 5))
    n = draw(st.integers(0, max_rows))
    rows = [draw(row_strategy(i, locations)) for i in range(n)]
    layout = draw(st.sampled_from(["random", "sorted", "sorted"]))
    if layout == "sorted" and rows:
        column = draw(st.sampled_from(VALUE_COLUMNS[1:]))
        ordered = sorted(rows, key=lambda r: _sort_key(r[column]))
        per = max(1, math.ceil(len(ordered) / locations))
        for pos, r in enumerate(ordered):
            r["loc"] = pos // per
    mutations: list[Mutation] = []
    next_id = n
    if mutate:
        for version in range(1, draw(st.integers(0, 2)) + 1):
            kind = draw(st.sampled_from(["append", "delete", "upsert"]))
            live = sorted(_live_ids(rows, mutations))
            if kind == "delete" and live:
                ids = draw(st.lists(st.sampled_from(live), min_size=1, max_size=4, unique=True))
                mutations.append(Mutation("delete", ids=sorted(ids)))
                continue
            new = [
                draw(row_strategy(next_id + k, locations, version))
                for k in range(draw(st.integers(1, 4)))
            ]
            next_id += len(new)
            if kind == "upsert" and live:
                changed = draw(st.lists(st.sampled_from(live), min_size=1, max_size=3, unique=True))
                for rid in changed:
                    fresh = draw(row_strategy(rid, locations, version))
                    fresh["loc"] = _loc_of(rows, mutations, rid)
                    new.append(fresh)
                mutations.append(Mutation("upsert", rows=new))
            else:
                mutations.append(Mutation("append", rows=new))
    return TableSpec(locations, rows, mutations, refresh=bool(mutations) and draw(st.booleans()))


def _live_ids(rows: list[dict[str, Any]], mutations: list[Mutation]) -> set[int]:
    live = {r["id"] for r in rows}
    for m in mutations:
        live |= {r["id"] for r in m.rows}
        live -= set(m.ids)
    return live


def _loc_of(rows: list[dict[str, Any]], mutations: list[Mutation], rid: int) -> int:
    for r in [*rows, *(x for m in mutations for x in m.rows)]:
        if r["id"] == rid:
            return int(r["loc"])
    raise KeyError(rid)


def _sort_key(value: Any) -> tuple[int, Any]:
    """Spark's ascending order with NULLs first and NaN above every number."""
    if value is None:
        return (0, 0)
    if isinstance(value, float) and math.isnan(value):
        return (2, 0)
    return (1, value)
