"""The contract every lakesieve index type must keep, as a pytest test kit.

An index type (built-in or third-party) runs the kit by subclassing
:class:`IndexContract` in its own tests::

    from lakesieve.testing.index_contract import IndexContract

    class TestMineContract(IndexContract):
        index_type = "mine"
        # optional:
        key_types = ("bigint", "string")      # default: DEFAULT_KEY_TYPES
        options = {"my_option": "3"}          # build options used everywhere
        plugin = my_package.plugin            # registered if not yet (no entry point needed)

The index type's plugin must be reachable through lakesieve's plugin manager:
installed with an entry point in the ``lakesieve`` group, or named in
``plugin``. Builds need Spark: the kit uses the session-scoped ``spark``
fixture of the project's ``conftest.py`` when there is one, and otherwise
starts one with :func:`lakesieve.spark.session.get_spark` (``local[2]``).

What it checks, for every key type in ``key_types`` (by default tinyint,
bigint, boolean, float, double, decimal(10,2), decimal(38,10), string,
binary, date, timestamp (instants drawn in several time zones) and
timestamp_ntz): first a deterministic example holding every awkward value
of the type (:func:`special_values`: extremes, NaN, ``-0.0`` and ``0.0``,
infinities, empty and long shared-prefix strings, NULLs) asked every
operator at every such value, then random ``(key, location)`` relations
drawn with hypothesis (NULLs in every key type, duplicate keys, keys
repeated across locations) and random :class:`~lakesieve.model.KeyQuery`
predicates (points, IN lists, one- and two-sided ranges with inclusive and
exclusive bounds, reversed ranges, IS NULL; for ``float`` columns also
doubles no float32 equals, which Spark compares in double).

**The truth is Spark SQL's.** For each example the kit renders every query
as a Spark SQL condition (:func:`spark_condition`) and lets Spark evaluate
it over the generated rows, typed as the column (:func:`spark_true_locations`,
one Spark job per example), so the expected locations depend on neither the
index under test nor lakesieve's own evaluator. The kit's Python reference
(:func:`true_locations`, an explicit NaN-aware total order) must agree with
Spark on every query, which keeps it usable for Spark-free property tests.

(a) ``test_lookups_cover_truth_and_survive_ipc``: every lookup answer is a
    :class:`~lakesieve.model.LookupResult` holding every location that has a
    matching row (or is ``all``); with ``exact_answers`` exactly those.
(b) ``test_apply_delta_keeps_every_true_location``: after
    ``IndexType.apply_delta`` with random adds and removes (new
    locations, whole locations emptied, updates that keep their key),
    answers hold every true location of the changed relation; with
    ``exact_answers`` exactly those, and with ``delta_matches_rebuild`` the
    same answers as a fresh build on the changed relation. Its deterministic
    example adds every special value through the delta (the path a refresh
    takes). An index type that also folds on the driver
    (:class:`~lakesieve.contract.protocols.FoldsOnDriver`) gets the same
    delta, summed per (key, location) as the framework hands it over, through
    ``apply_delta_arrow``, and its answers are held to the same checks.
    Skipped, with the reason, for an index type that does not
    implement ``apply_delta`` (answers ``None``): the framework rebuilds those
    instead.
(e) ``test_apply_delta_empty_changes_no_answer``: an empty delta — typed
    like the column, and the untyped empty frame the framework hands over
    when nothing changed (``key string``) — leaves every answer as it was.
(f) ``test_apply_delta_twice_keeps_every_true_location``: two deltas, summed
    per (key, location) with zeros dropped as the framework hands them,
    applied one after the other: after each, answers hold every true
    location (exactly those with ``exact_answers``); with
    ``delta_matches_rebuild`` the end state answers like a fresh build. Every
    delta check also asserts that ``apply_delta`` leaves the index it was
    given untouched (the framework keeps answering from it).
(g) ``test_rebuilt_locations_answer_as_a_build``: for an index type that
    builds inexact entries again at compaction
    (:class:`~lakesieve.contract.protocols.RebuildsLocations`), after a
    random delta the locations it names are dropped
    (``without_locations``) and folded back from every row they hold, as
    compaction does, through ``apply_delta`` and (where the type folds on
    the driver) ``apply_delta_arrow``: answers hold every true location and
    equal a fresh build's on every query; a fresh build names no location.
    Skipped for other index types.
    (b), (e) and (f) are skipped, with the reason, for an index type whose
    ``apply_delta`` answers ``None``; a probe on an empty
    index decides that once per index type, before any example is drawn.
    An index type declared ``complete`` (every built-in one) fails instead,
    and fails when it refuses a key type of ``key_types``.
(c) (within (a)) ``describe`` gives an ``int`` ``size_bytes > 0`` equal to the
    bytes of the index's tables written as Arrow IPC files (as the index
    store writes them), ``meta`` survives JSON, and the index sent through
    Arrow IPC bytes and loaded again answers every query identically.
(d) ``test_validate_*``: validate accepts ``options`` for every key type and
    returns JSON-serialisable parameters; it rejects an unknown option with
    :class:`~lakesieve.errors.OptionError` naming it, and an unsupported key
    type with :class:`~lakesieve.errors.UnsupportedKeyTypeError` naming it.

Every build is a Spark job, so example counts are small (``examples`` and
``delta_examples``) and derandomized: CI draws the same examples every run.
``LAKESIEVE_CONTRACT_EXAMPLES=N`` is the soak profile: ``N`` random
(not derandomized) examples per lookup test and ``N // 2`` per delta test.
A failing example is reported as drawn, not shrunk (``shrink = True`` or
``LAKESIEVE_CONTRACT_SHRINK=1`` to shrink it).

The strategies and both truths are public too (:func:`key_values`,
:func:`query_values`, :func:`special_values`, :func:`relations`,
:func:`key_queries`, :func:`draw_delta`, :func:`true_locations`,
:func:`spark_true_locations`), for property tests of an index type's own
in-process build.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import decimal
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NoReturn

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.contract.loaded import answering
from lakesieve.contract.protocols import FoldsOnDriver, IndexType, RebuildsLocations
from lakesieve.errors import OptionError, UnsupportedKeyTypeError
from lakesieve.keys.mapping import KeyKind, parse_key_type
from lakesieve.model import BuiltIndex, KeyQuery, LookupResult
from lakesieve.testing.pytest_plugin import kit_spark

__all__ = [
    "DEFAULT_KEY_TYPES",
    "IndexContract",
    "draw_delta",
    "ipc_round_trip",
    "key_queries",
    "key_values",
    "maybe_null",
    "query_values",
    "relations",
    "spark_condition",
    "spark_literal",
    "spark_semantics_key",
    "spark_true_locations",
    "special_values",
    "standard_queries",
    "summed_delta",
    "true_locations",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

#: The key types the kit draws relations for unless an index type names its own.
DEFAULT_KEY_TYPES: tuple[str, ...] = (
    "tinyint",
    "bigint",
    "boolean",
    "float",
    "double",
    "decimal(10,2)",
    "decimal(38,10)",
    "string",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
)

#: A row of a test relation: (key or None, location).
Row = tuple[Any, str]

_INT_RANGES = {
    "tinyint": 8,
    "byte": 8,
    "smallint": 16,
    "short": 16,
    "int": 32,
    "integer": 32,
    "bigint": 64,
    "long": 64,
}
_TEXT = "ab\x00é€😀"
_ZONES = (
    dt.UTC,
    dt.timezone(dt.timedelta(hours=5, minutes=30)),
    dt.timezone(dt.timedelta(hours=-8)),
)
#: Doubles no float32 equals, asked of ``float`` columns (Spark compares those in double).
_INEXACT_FOR_FLOAT = (0.1, -0.1, 1e-50, -1e-50, 1e300, -1e300, 16777217.0)


# ---------------------------------------------------------------------------
# values and Spark's comparison semantics
# ---------------------------------------------------------------------------


def _kind(key_type: str) -> KeyKind:
    return parse_key_type(key_type)


def key_values(key_type: str) -> st.SearchStrategy[Any]:
    """Values of a column of Spark type ``key_type``, from small domains so they repeat.

    Includes each type's awkward values: extremes of the integer types,
    ``-0.0``, infinities and NaN for floating types, strings with NUL
    bytes, multi-byte characters, long shared prefixes (more than 8 bytes)
    and long values (more than 64 bytes).

    Raises:
        ValueError: no strategy for the type (override :meth:`IndexContract.values`).
    """
    text = key_type.strip().lower()
    kind = _kind(key_type)
    if kind.kind == "int":
        bits = _INT_RANGES.get(text, 64)
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return st.integers(-20, 20) | st.sampled_from([lo, hi])
    if kind.kind == "boolean":
        return st.booleans()
    if kind.kind in ("float", "double"):
        special = st.sampled_from([-0.0, 0.0, math.nan, math.inf, -math.inf, 1.5])
        if kind.kind == "float":
            return special | st.floats(-20, 20, width=32)
        return special | st.floats(-20, 20)
    if kind.kind == "date":
        return st.dates(dt.date(1999, 12, 25), dt.date(2000, 1, 8)) | st.sampled_from(
            [dt.date(1900, 1, 1), dt.date(2999, 12, 31)]
        )
    if kind.kind == "timestamp":
        naive = st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 2))
        far = st.sampled_from([dt.datetime(1900, 1, 1), dt.datetime(2999, 1, 1, 12)])
        if text == "timestamp_ntz":
            return naive | far
        # Spark's TIMESTAMP is an instant: values carry their time zone (several offsets of
        # one instant compare equal)
        zones = st.sampled_from(_ZONES)
        return st.tuples(naive | far, zones).map(
            lambda pair: pair[0].replace(tzinfo=dt.UTC).astimezone(pair[1])
        )
    if kind.kind == "decimal":
        digits = min(kind.precision, 6)
        unscaled = st.integers(-(10**digits) + 1, 10**digits - 1) | st.sampled_from(
            [-(10**kind.precision) + 1, 10**kind.precision - 1]
        )
        wide = decimal.Context(prec=60)
        return unscaled.map(lambda u: decimal.Decimal(u).scaleb(-kind.scale, context=wide))
    if kind.kind == "string":
        short = st.text(_TEXT, max_size=3)
        return short | short.map(lambda s: "commonprefix_" + s) | short.map(lambda s: "y" * 70 + s)
    if kind.kind == "binary":
        short_b = st.binary(max_size=3)
        return (
            short_b
            | short_b.map(lambda b: b"commonprefix_" + b)
            | short_b.map(lambda b: b"\xff" * 70 + b)
        )
    raise ValueError(f"the index contract kit has no values for key type {key_type!r}")


def query_values(key_type: str) -> st.SearchStrategy[Any]:
    """Query values for a column of ``key_type``: its own values, and for ``float``
    also doubles that no float32 equals (``f > 0.1`` compares in double)."""
    values = key_values(key_type)
    if _kind(key_type).kind == "float":
        return values | st.sampled_from(_INEXACT_FOR_FLOAT)
    return values


def special_values(key_type: str) -> list[Any]:
    """Each type's awkward values, every one of them, for the deterministic examples.

    Extremes of the type, NaN, both zeros and both infinities, the empty
    string, strings and binaries sharing more than 8 bytes, non-ASCII text,
    the first and last days and instants the kit draws.
    """
    text = key_type.strip().lower()
    kind = _kind(key_type)
    if kind.kind == "int":
        bits = _INT_RANGES.get(text, 64)
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return [lo, lo + 1, -1, 0, 1, hi - 1, hi]
    if kind.kind == "boolean":
        return [False, True]
    if kind.kind in ("float", "double"):
        tiny = 1.401298464324817e-45 if kind.kind == "float" else 5e-324
        return [-math.inf, -1.5, -tiny, -0.0, 0.0, tiny, 1.5, math.inf, math.nan]
    if kind.kind == "date":
        return [
            dt.date(1900, 1, 1),
            dt.date(1969, 12, 31),
            dt.date(1970, 1, 1),
            dt.date(2999, 12, 31),
        ]
    if kind.kind == "timestamp":
        base = [
            dt.datetime(1900, 1, 1),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            dt.datetime(1970, 1, 1),
            dt.datetime(2000, 1, 1, 0, 0, 1, 1),
            dt.datetime(2999, 1, 1, 12),
        ]
        if text == "timestamp_ntz":
            return base
        return [
            v.replace(tzinfo=dt.UTC).astimezone(_ZONES[i % len(_ZONES)]) for i, v in enumerate(base)
        ]
    if kind.kind == "decimal":
        top = decimal.Decimal(10**kind.precision - 1).scaleb(
            -kind.scale, context=decimal.Context(prec=60)
        )
        step = decimal.Decimal(1).scaleb(-kind.scale)
        return [top.copy_negate(), step.copy_negate(), decimal.Decimal(0), step, top]
    if kind.kind == "string":
        return ["", "a", "commonprefix_a", "commonprefix_b", "é", "😀", "y" * 70, "y" * 70 + "\x00"]
    if kind.kind == "binary":
        return [b"", b"\x00", b"commonprefix_a", b"commonprefix_b", b"\xff" * 70, b"\xff" * 71]
    raise ValueError(f"the index contract kit has no values for key type {key_type!r}")


def spark_semantics_key(value: Any) -> Any:
    """A Python value that compares like Spark compares column values.

    An explicit total order: strings compare by UTF-8 bytes, NaN equals NaN
    and is above every other number (``+inf`` included), ``-0.0`` equals
    ``0.0``, and timestamps compare as instants (a naive one read as UTC).
    The kit checks this reference against Spark SQL on every example.
    """
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value + 0.0)
    if isinstance(value, int | decimal.Decimal) and not isinstance(value, bool):
        return (0, value)  # ints, decimals and floats compare exactly with each other
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return (aware - _EPOCH) // dt.timedelta(microseconds=1)
    return value


def _matcher(query: KeyQuery) -> Callable[[Any], bool]:
    """A test of a non-null value's :func:`spark_semantics_key` against ``query``.

    The query's own values are put in that order once, not once per row.
    """
    if query.kind == "points":
        points = [spark_semantics_key(x) for x in query.values if x is not None]
        return lambda v: any(v == p for p in points)
    low = None if query.low is None else spark_semantics_key(query.low)
    high = None if query.high is None else spark_semantics_key(query.high)

    def test(v: Any) -> bool:
        if low is not None and (v < low or (v == low and not query.low_inclusive)):
            return False
        return not (high is not None and (v > high or (v == high and not query.high_inclusive)))

    return test


def true_locations(rows: list[Row], query: KeyQuery) -> frozenset[str]:
    """The locations holding a row that matches ``query`` (brute force, in Python)."""
    if query.kind == "is_null":
        return frozenset(loc for value, loc in rows if value is None)
    test = _matcher(query)
    return frozenset(
        loc for value, loc in rows if value is not None and test(spark_semantics_key(value))
    )


def spark_literal(value: Any, key_type: str) -> str:
    """``value`` as a Spark SQL literal of the column's comparison domain.

    Numbers of a floating column and doubles asked of it are ``DOUBLE``
    literals (a ``float`` column is compared in double, as Spark widens it);
    every other value is a literal of the column's own type.
    """
    kind = _kind(key_type)
    if isinstance(value, bool) or kind.kind == "boolean":
        return "TRUE" if value else "FALSE"
    if kind.kind in ("int", "decimal") and isinstance(value, float):
        kind = KeyKind("double")  # a double asked of an exact column compares in double
    if (
        kind.kind in ("int", "decimal")
        and isinstance(value, decimal.Decimal)
        and value.is_finite()
        and (kind.kind == "int" or -int(value.as_tuple().exponent) > kind.scale)
    ):
        return f"{value:f}BD"  # exact: Spark widens the column to the literal's decimal type
    if kind.kind in ("float", "double"):
        f = float(value)
        text = (
            "NaN"
            if math.isnan(f)
            else ("Infinity" if f > 0 else "-Infinity")
            if math.isinf(f)
            else repr(f)
        )
        return f"CAST('{text}' AS DOUBLE)"
    if kind.kind == "int":
        return f"CAST('{int(value)}' AS BIGINT)"
    if kind.kind == "decimal":
        return f"CAST('{decimal.Decimal(value):f}' AS DECIMAL({kind.precision},{kind.scale}))"
    if kind.kind == "date":
        return f"DATE'{value.isoformat()}'"
    if kind.kind == "timestamp":
        if key_type.strip().lower() == "timestamp_ntz":
            return f"TIMESTAMP_NTZ'{value.isoformat(sep=' ')}'"
        return f"TIMESTAMP_MICROS({spark_semantics_key(value)})"
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
    hexed = f"X'{raw.hex().upper()}'"
    return f"CAST({hexed} AS STRING)" if kind.kind == "string" else hexed


def spark_condition(query: KeyQuery, key_type: str, column: str = "key") -> str:
    """``query`` as a Spark SQL condition on ``column`` (points as ORed equalities)."""
    if query.kind == "is_null":
        return f"{column} IS NULL"
    if query.kind == "points":
        terms = [f"{column} = {spark_literal(v, key_type)}" for v in query.values if v is not None]
        return "(" + " OR ".join(terms) + ")" if terms else "FALSE"
    terms = [f"{column} IS NOT NULL"]
    if query.low is not None:
        op = ">=" if query.low_inclusive else ">"
        terms.append(f"{column} {op} {spark_literal(query.low, key_type)}")
    if query.high is not None:
        op = "<=" if query.high_inclusive else "<"
        terms.append(f"{column} {op} {spark_literal(query.high, key_type)}")
    return " AND ".join(terms)


#: Spark SQL's answers already computed in this process, by (session time
#: zone, key type, rows, queries) as text: the kit's index-type classes draw
#: the same derandomised relations, and Spark's answer depends on nothing else.
_SPARK_TRUTHS: dict[tuple[str, str, str, str], list[frozenset[str]]] = {}
_SPARK_TRUTHS_KEPT = 4096


def spark_true_locations(
    spark: Any, key_type: str, rows: list[Row], queries: list[KeyQuery]
) -> list[frozenset[str]]:
    """Per query, the locations Spark SQL finds a matching row at (one Spark job for all).

    The rows become a DataFrame of ``(key, location)`` typed as the column,
    and Spark evaluates every query's condition (:func:`spark_condition`)
    over it; a NULL outcome does not match. An answer is remembered for the
    same rows and queries asked again in this process.
    """
    if not queries:
        return []
    if not rows:
        return [frozenset() for _ in queries]
    zone = str(spark.conf.get("spark.sql.session.timeZone"))
    key = (zone, key_type, repr(rows), repr(queries))
    known = _SPARK_TRUTHS.get(key)
    if known is None:
        known = _spark_true_locations(spark, key_type, rows, queries)
        if len(_SPARK_TRUTHS) >= _SPARK_TRUTHS_KEPT:
            _SPARK_TRUTHS.clear()
        _SPARK_TRUTHS[key] = known
    return list(known)


def _spark_true_locations(
    spark: Any, key_type: str, rows: list[Row], queries: list[KeyQuery]
) -> list[frozenset[str]]:
    frame = _frame(
        spark,
        key_type,
        {"key": [k for k, _ in rows], "location": [loc for _, loc in rows]},
        f"key {key_type}, location string",
    )
    exprs = [
        f"coalesce({spark_condition(q, key_type)}, FALSE) AS q{i}" for i, q in enumerate(queries)
    ]
    hits = frame.selectExpr("location", *exprs).toArrow()
    locations = hits.column("location").to_pylist()
    return [
        frozenset(
            loc for loc, hit in zip(locations, hits.column(f"q{i}").to_pylist(), strict=True) if hit
        )
        for i in range(len(queries))
    ]


# ---------------------------------------------------------------------------
# relations, queries and deltas
# ---------------------------------------------------------------------------


def maybe_null(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``values``, about one in six replaced by ``None``."""
    return st.tuples(st.integers(0, 5), values).map(lambda pair: None if pair[0] == 0 else pair[1])


@st.composite
def relations(
    draw: st.DrawFn, values: st.SearchStrategy[Any], max_rows: int = 40, max_locations: int = 5
) -> list[Row]:
    """Random ``(key, location)`` rows: 0 to ``max_rows`` rows over 1 to ``max_locations`` locations."""
    n_loc = draw(st.integers(1, max_locations), label="locations")
    locations = [f"part={i % 2}/fg-{i}" for i in range(n_loc)]
    n_rows = draw(st.integers(0, max_rows), label="row count")
    rows = draw(
        st.lists(
            st.tuples(maybe_null(values), st.sampled_from(locations)),
            min_size=n_rows,
            max_size=n_rows,
        ),
        label="rows",
    )
    return list(rows)


def key_queries(values: st.SearchStrategy[Any], rows: list[Row]) -> st.SearchStrategy[KeyQuery]:
    """Random points, IN lists and ranges, their values often keys of ``rows``."""
    present = [k for k, _ in rows if k is not None]
    value = st.sampled_from(present) | values if present else values
    bound = st.none() | value
    return st.one_of(
        st.lists(value, min_size=1, max_size=4).map(lambda vs: KeyQuery("points", tuple(vs))),
        st.builds(
            lambda lo, lo_inc, hi, hi_inc: KeyQuery(
                "range", low=lo, low_inclusive=lo_inc, high=hi, high_inclusive=hi_inc
            ),
            bound,
            st.booleans(),
            bound,
            st.booleans(),
        ),
    )


def standard_queries(rows: list[Row]) -> list[KeyQuery]:
    """IS NULL, the unbounded range and a point per distinct key (at most ten)."""
    seen: list[Any] = []
    canon: list[Any] = []
    for k, _ in rows:
        if len(seen) == 10:
            break
        if k is None:
            continue
        c = spark_semantics_key(k)
        if all(c != s for s in canon):
            seen.append(k)
            canon.append(c)
    return [KeyQuery("is_null"), KeyQuery("range")] + [KeyQuery("points", (k,)) for k in seen]


def draw_delta(
    data: st.DataObject, values: st.SearchStrategy[Any], rows: list[Row]
) -> tuple[list[tuple[Any, str, int]], list[Row]]:
    """Random changes to ``rows`` as ``(key, location, count)``, and the rows after them.

    Adds (also at new locations), removes of existing rows, sometimes every
    row of one location, and sometimes an update that keeps its key (a
    removal and an addition of the same key).
    """
    counts: Counter[tuple[Any, str]] = Counter()
    example: dict[tuple[Any, str], Any] = {}
    for value, loc in rows:
        canon = None if value is None else spark_semantics_key(value)
        counts[(canon, loc)] += 1
        example.setdefault((canon, loc), value)
    existing = sorted({loc for _, loc in rows}) or ["part=0/fg-0"]
    locations = st.sampled_from([*existing, "part=9/new-0", "part=9/new-1"])
    n_adds = data.draw(st.integers(0, 8), label="add count")
    delta: list[tuple[Any, str, int]] = []
    adds = data.draw(
        st.lists(
            st.tuples(maybe_null(values), locations, st.integers(1, 3)),
            min_size=n_adds,
            max_size=n_adds,
        ),
        label="adds",
    )
    for value_, loc, n in adds:
        delta.append((value_, loc, n))
        canon = None if value_ is None else spark_semantics_key(value_)
        counts[(canon, loc)] += n
        example.setdefault((canon, loc), value_)
    held = sorted((k for k in counts if counts[k] > 0), key=repr)
    if held:
        if data.draw(st.booleans(), label="empty a location"):
            gone = data.draw(st.sampled_from(existing), label="emptied location")
            for pair in held:
                if pair[1] == gone and counts[pair] > 0:
                    delta.append((example[pair], gone, -counts[pair]))
                    counts[pair] = 0
        n_picks = data.draw(st.integers(0, 6), label="remove count")
        picks = data.draw(
            st.lists(st.sampled_from(held), min_size=n_picks, max_size=n_picks), label="removes"
        )
        for pair in picks:
            if counts[pair] > 0:
                n = data.draw(st.integers(1, counts[pair]), label="removed rows")
                delta.append((example[pair], pair[1], -n))
                counts[pair] -= n
        if data.draw(st.booleans(), label="update keeping its key"):
            pair = data.draw(st.sampled_from(held), label="updated")
            if counts[pair] > 0:
                delta += [(example[pair], pair[1], -1), (example[pair], pair[1], 1)]
    after = [(example[pair], pair[1]) for pair, n in counts.items() for _ in range(max(n, 0))]
    return delta, after


def summed_delta(delta: list[tuple[Any, str, int]]) -> list[tuple[Any, str, int]]:
    """``delta`` summed per (key, location) as Spark groups keys, zero sums dropped.

    The shape the framework hands to ``IndexType.apply_delta``.
    """
    sums: Counter[tuple[Any, str]] = Counter()
    example: dict[tuple[Any, str], Any] = {}
    for value, loc, n in delta:
        canon = None if value is None else spark_semantics_key(value)
        sums[(canon, loc)] += n
        example.setdefault((canon, loc), value)
    return [(example[pair], pair[1], n) for pair, n in sums.items() if n != 0]


def _arrow_type(key_type: str) -> pa.DataType:
    kind = _kind(key_type)
    text = key_type.strip().lower()
    if kind.kind == "int":
        return {8: pa.int8(), 16: pa.int16(), 32: pa.int32()}.get(
            _INT_RANGES.get(text, 64), pa.int64()
        )
    simple: dict[str, pa.DataType] = {
        "boolean": pa.bool_(),
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "string": pa.string(),
        "binary": pa.binary(),
    }
    if kind.kind in simple:
        return simple[kind.kind]
    if kind.kind == "timestamp":
        return pa.timestamp("us") if text == "timestamp_ntz" else pa.timestamp("us", tz="UTC")
    return pa.decimal128(kind.precision, kind.scale)


def _frame(spark: Any, key_type: str, columns: dict[str, list[Any]], ddl: str) -> Any:
    """A Spark DataFrame of ``columns`` (keys typed as the column), via Arrow."""
    keys = columns.pop("key")
    kind = _kind(key_type)
    if kind.kind == "decimal":  # one scale for all, so Arrow takes values of any exponent
        quantum = decimal.Decimal(1).scaleb(-kind.scale)
        wide = decimal.Context(prec=60)
        keys = [
            None if k is None else decimal.Decimal(k).quantize(quantum, context=wide) for k in keys
        ]
    arrays = {"key": pa.array(keys, _arrow_type(key_type))}
    arrays["location"] = pa.array(columns.pop("location"), pa.string())
    for name, values in columns.items():
        arrays[name] = pa.array(values, pa.int64())
    return spark.createDataFrame(pa.table(arrays), schema=ddl)


#: Indexes the kit built, by index type, session time zone, key type, rows,
#: parameters and hints: the examples of the kit's tests draw the same
#: relations again and again (the empty one above all, the first draw of every
#: derandomised test), and each build is a few Spark jobs. A build of the same
#: rows is handed a copy of the first one (:attr:`IndexContract.reuse_builds`).
_BUILDS: dict[tuple[str, ...], BuiltIndex] = {}
_BUILDS_KEPT = 1024


def _copy_built(built: BuiltIndex) -> BuiltIndex:
    """A copy of ``built`` a caller may change (its own ``files`` dict and ``meta``)."""
    return dataclasses.replace(
        built, files=dict(built.files), meta=copy.deepcopy(built.meta), written=[]
    )


def ipc_round_trip(built: BuiltIndex) -> tuple[BuiltIndex, int]:
    """``built`` through Arrow IPC file bytes and JSON meta, as the index store keeps it.

    Returns:
        The decoded copy and the total bytes of its files.
    """
    files: dict[str, pa.Table] = {}
    total = 0
    for name, table in built.files.items():
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        data = sink.getvalue()
        total += int(data.size)
        files[name] = ipc.open_file(data).read_all()
    meta = json.loads(json.dumps(built.meta))
    return BuiltIndex(files=files, meta=meta), total


# ---------------------------------------------------------------------------
# the kit
# ---------------------------------------------------------------------------


class IndexContract:
    """Base class of an index type's contract tests (see the module docs).

    Attributes:
        index_type: the index type under test (required).
        key_types: Spark key types to draw relations for.
        delta_key_types: key types of the three ``apply_delta`` tests
            (``None``: ``key_types``), for a shorter tier that checks
            deltas on fewer types.
        options: build options used for every build.
        plugin: a plugin object or module registered with lakesieve's plugin
            manager before the tests, when not yet registered.
        exact_answers: lookups must return exactly the true locations.
        delta_matches_rebuild: after a delta, answers must equal a rebuild's.
        unsupported_key_type: a type validate must refuse (``None``: skip).
        complete: the index type indexes every type of ``key_types`` and
            implements ``apply_delta``; a refusal of either then fails the
            test instead of skipping it (set for the built-in index types).
        examples: hypothesis examples of the lookup test per key type.
        delta_examples: hypothesis examples of the delta test per key type.
        max_rows: most rows in a drawn relation.
        max_locations: most locations in a drawn relation.
        queries_per_example: random queries asked of each index (on top of
            one point per distinct key, IS NULL and the unbounded range).
        shrink: let hypothesis shrink a failing example to a minimal one
            (many more Spark builds; ``LAKESIEVE_CONTRACT_SHRINK=1`` also
            turns it on). Off, the first failing example is reported as drawn.
        reuse_builds: a build of rows the kit built before in this process
            (same index type, parameters, hints, key type and session time
            zone) is a copy of that build, not another Spark build: set it
            ``False`` for an index type whose build depends on anything else.
    """

    index_type: ClassVar[str] = ""
    key_types: ClassVar[tuple[str, ...]] = DEFAULT_KEY_TYPES
    delta_key_types: ClassVar[tuple[str, ...] | None] = None
    options: ClassVar[dict[str, str]] = {}
    plugin: ClassVar[object | None] = None
    exact_answers: ClassVar[bool] = False
    delta_matches_rebuild: ClassVar[bool] = False
    unsupported_key_type: ClassVar[str | None] = "map<string,int>"
    complete: ClassVar[bool] = False
    examples: ClassVar[int] = 6
    delta_examples: ClassVar[int] = 3
    max_rows: ClassVar[int] = 40
    max_locations: ClassVar[int] = 5
    queries_per_example: ClassVar[int] = 12
    shrink: ClassVar[bool] = False
    reuse_builds: ClassVar[bool] = True
    _delta_support: ClassVar[dict[str, bool]] = {}

    # ----------------------------------------------------------- pytest hooks

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Run the relation tests once per key type (the delta tests per ``delta_key_types``).

        Test (g) runs once, to be skipped, for an index type without
        :class:`~lakesieve.contract.protocols.RebuildsLocations`.
        """
        if "key_type" in metafunc.fixturenames:
            name = metafunc.function.__name__
            delta = name.startswith("test_apply_delta")
            chosen = self.delta_key_types if delta and self.delta_key_types is not None else None
            types = list(chosen or self.key_types)
            if name == "test_rebuilt_locations_answer_as_a_build" and not isinstance(
                self.index_object(), RebuildsLocations
            ):
                types = types[:1]  # skipped once, not once per key type
            metafunc.parametrize("key_type", types)

    @pytest.fixture(scope="class")
    @classmethod
    def contract_spark(cls, request: pytest.FixtureRequest) -> Iterator[Any]:
        """The project's ``spark`` fixture, else lakesieve's ``lakesieve_spark`` (a ``local[2]`` session)."""
        cls._register_plugin()
        yield kit_spark(request)

    # ----------------------------------------------------------- overridable

    def values(self, key_type: str) -> st.SearchStrategy[Any]:
        """Key values to draw for ``key_type`` (override for types the kit lacks)."""
        return key_values(key_type)

    def query_values(self, key_type: str) -> st.SearchStrategy[Any]:
        """Values to ask about: the column's own and, for ``float``, doubles between floats."""
        if _kind(key_type).kind == "float":
            return self.values(key_type) | st.sampled_from(_INEXACT_FOR_FLOAT)
        return self.values(key_type)

    def specials(self, key_type: str) -> list[Any]:
        """The values of the deterministic examples (override for types the kit lacks)."""
        return special_values(key_type)

    # ----------------------------------------------------------- index type calls

    @classmethod
    def _register_plugin(cls) -> None:
        if cls.plugin is None:
            return
        pm = registry.get_plugin_manager()
        if not pm.is_registered(cls.plugin):
            pm.register(cls.plugin)

    def index_object(self) -> IndexType:
        """The index type object, as :func:`lakesieve.contract.registry.index_type` gives it."""
        if not self.index_type:
            raise TypeError(f"{type(self).__name__} must set index_type")
        self._register_plugin()
        found = registry.index_type(self.index_type)
        assert isinstance(found, IndexType), f"the plugin gave {type(found).__name__}"
        return found

    def validate(self, key_type: str, options: dict[str, str] | None = None) -> dict[str, Any]:
        """Call ``validate``; skip the test for an unsupported key type."""
        try:
            params = self.index_object().validate(
                dict(self.options if options is None else options), key_type
            )
        except UnsupportedKeyTypeError as exc:
            if self.complete:
                pytest.fail(f"{self.index_type} refuses key type {key_type}: {exc}")
            pytest.skip(f"{self.index_type} does not index {key_type}: {exc}")
        assert isinstance(params, dict), f"validate returned {type(params).__name__}, not a dict"
        return params

    def build(
        self,
        spark: Any,
        key_type: str,
        rows: list[Row],
        params: dict[str, Any],
        hinted: bool = False,
    ) -> BuiltIndex:
        """Build the index of ``rows`` with Spark.

        ``hinted`` tells the build the locations (and one without rows) and
        the row count, as the framework does from a table's metadata.
        """
        itype = self.index_object()
        zone = str(spark.conf.get("spark.sql.session.timeZone"))
        key = (
            f"{type(itype).__module__}.{type(itype).__qualname__}",
            self.index_type,
            zone,
            key_type,
            repr(rows),
            repr(sorted(params.items())),
            str(hinted),
        )
        known = _BUILDS.get(key) if self.reuse_builds else None
        if known is not None:
            return _copy_built(known)
        frame = _frame(
            spark,
            key_type,
            {"key": [k for k, _ in rows], "location": [loc for _, loc in rows]},
            f"key {key_type}, location string",
        )
        built = itype.build(
            spark,
            frame,
            key_type,
            params,
            sorted({loc for _, loc in rows} | {"zz-no-rows"}) if hinted else None,
            len(rows) if hinted else None,
        )
        assert isinstance(built, BuiltIndex), f"build returned {type(built).__name__}"
        if self.reuse_builds and built.fetch is None and not built.written:
            if len(_BUILDS) >= _BUILDS_KEPT:
                _BUILDS.clear()
            _BUILDS[key] = _copy_built(built)
        return built

    def load(self, built: BuiltIndex) -> Any:
        """Load a built index for lookups."""
        return self.index_object().load(built)

    def lookup(self, index: Any, query: KeyQuery) -> LookupResult:
        """Ask one query, as the planner does (:func:`lakesieve.contract.loaded.answering`)."""
        result = answering(self.index_object(), index).lookup(query)
        assert isinstance(result, LookupResult), f"lookup returned {type(result).__name__}"
        return result

    def describe(self, index: Any) -> dict[str, Any]:
        """Describe an index, as ``index describe`` does."""
        desc = answering(self.index_object(), index).describe()
        assert isinstance(desc, dict), f"describe returned {type(desc).__name__}"
        return desc

    def delta_frame(self, spark: Any, key_type: str, delta: list[tuple[Any, str, int]]) -> Any:
        """A Spark frame of ``(key, location, count)`` rows, keys typed as the column."""
        return _frame(
            spark,
            key_type,
            {
                "key": [k for k, _, _ in delta],
                "location": [loc for _, loc, _ in delta],
                "count": [n for _, _, n in delta],
            },
            f"key {key_type}, location string, count bigint",
        )

    def apply_delta(
        self, spark: Any, index: Any, frame: Any, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Call ``apply_delta``; ``None`` when the index type does not implement it."""
        changed = self.index_object().apply_delta(spark, index, frame, params)
        if changed is not None:
            assert isinstance(changed, BuiltIndex), f"apply_delta returned {type(changed).__name__}"
        return changed

    def _refuse_delta(self) -> NoReturn:
        """Skip (or, for a ``complete`` index type, fail) a test needing ``apply_delta``."""
        why = (
            f"index type {self.index_type!r} does not implement "
            "apply_delta (the framework rebuilds it instead)"
        )
        if self.complete:
            pytest.fail(why)
        pytest.skip(why)

    def require_delta(self, spark: Any, key_type: str, params: dict[str, Any]) -> None:
        """Skip the test when the index type does not implement ``apply_delta`` (probed once).

        A ``complete`` index type fails instead: its delta checks must run.
        """
        supported = type(self)._delta_support.get(self.index_type)
        if supported is None:
            index = self.load(self.build(spark, key_type, [], params))
            empty = self.delta_frame(spark, key_type, [])
            supported = self.apply_delta(spark, index, empty, params) is not None
            type(self)._delta_support[self.index_type] = supported
        if not supported:
            self._refuse_delta()

    def _applied(
        self, spark: Any, index: Any, frame: Any, params: dict[str, Any], probes: list[KeyQuery]
    ) -> Any:
        """Apply a delta, check ``index`` is left as it was, load the result through Arrow IPC."""
        before = [self.lookup(index, q).locations for q in probes]
        changed = self.apply_delta(spark, index, frame, params)
        if changed is None:
            self._refuse_delta()
        after = [self.lookup(index, q).locations for q in probes]
        assert after == before, "apply_delta changed the index it was given"
        copy, _ = ipc_round_trip(changed)
        return self.load(copy)

    def _applied_on_driver(
        self,
        index: Any,
        key_type: str,
        delta: list[tuple[Any, str, int]],
        params: dict[str, Any],
        probes: list[KeyQuery],
    ) -> Any:
        """Fold ``delta`` with ``apply_delta_arrow`` (``None`` where the type has none or declines).

        The delta is summed per (key, location) by Spark's equality, zeros
        dropped (:func:`summed_delta`), as the framework hands it over; the
        result is checked to leave ``index`` as it was and loaded through
        Arrow IPC.
        """
        itype = self.index_object()
        if not isinstance(itype, FoldsOnDriver):
            return None
        summed = summed_delta(delta)
        table = pa.table(
            {
                "key": pa.array([k for k, _, _ in summed], _arrow_type(key_type)),
                "location": pa.array([loc for _, loc, _ in summed], pa.string()),
                "count": pa.array([n for _, _, n in summed], pa.int64()),
            }
        )
        before = [self.lookup(index, q).locations for q in probes]
        changed = itype.apply_delta_arrow(index, table, params)
        if changed is None:
            return None
        assert isinstance(changed, BuiltIndex), (
            f"apply_delta_arrow returned {type(changed).__name__}"
        )
        after = [self.lookup(index, q).locations for q in probes]
        assert after == before, "apply_delta_arrow changed the index it was given"
        copy, _ = ipc_round_trip(changed)
        return self.load(copy)

    # ----------------------------------------------------------- drawing

    def _draw_rows(self, data: st.DataObject, key_type: str) -> list[Row]:
        return data.draw(
            relations(self.values(key_type), self.max_rows, self.max_locations), label="rows"
        )

    def _draw_queries(self, data: st.DataObject, key_type: str, rows: list[Row]) -> list[KeyQuery]:
        drawn = data.draw(
            st.lists(
                key_queries(self.query_values(key_type), rows),
                min_size=self.queries_per_example,
                max_size=self.queries_per_example,
            ),
            label="queries",
        )
        return standard_queries(rows) + list(drawn)

    def _settings(self, examples: int) -> settings:
        shrink = self.shrink or os.environ.get("LAKESIEVE_CONTRACT_SHRINK", "") in ("1", "true")
        phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else [])
        return settings(
            max_examples=examples,
            deadline=None,
            derandomize=not self._soak(),
            database=None,
            phases=phases,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            print_blob=True,
        )

    @staticmethod
    def _soak() -> bool:
        """Whether ``LAKESIEVE_CONTRACT_EXAMPLES`` asks for a longer, randomised run."""
        raw = os.environ.get("LAKESIEVE_CONTRACT_EXAMPLES", "").strip()
        return raw.isdigit() and int(raw) > 0

    def _examples(self) -> tuple[int, int]:
        raw = os.environ.get("LAKESIEVE_CONTRACT_EXAMPLES", "").strip()
        if raw.isdigit() and int(raw) > 0:
            return int(raw), max(1, int(raw) // 2)
        return self.examples, self.delta_examples

    # ----------------------------------------------------------- checks

    def truths(
        self, spark: Any, key_type: str, rows: list[Row], queries: list[KeyQuery]
    ) -> list[frozenset[str]]:
        """Per query, the locations holding a matching row, as Spark SQL decides.

        Spark evaluates every query over the rows (:func:`spark_true_locations`),
        so the truth depends on neither the index under test nor lakesieve's
        own evaluator; the kit's Python reference (:func:`true_locations`)
        must agree, which keeps it honest for Spark-free property tests.
        """
        spark_truth = spark_true_locations(spark, key_type, rows, queries)
        for query, want in zip(queries, spark_truth, strict=True):
            mine = true_locations(rows, query)
            assert mine == want, (
                f"the kit's Python reference disagrees with Spark SQL on {key_type} "
                f"for {query} ({spark_condition(query, key_type)}): {sorted(mine)} vs {sorted(want)}"
            )
        return spark_truth

    def _check_answers(
        self, index: Any, truths: list[frozenset[str]], queries: list[KeyQuery], what: str
    ) -> list[frozenset[str] | None]:
        answers = []
        for query, truth in zip(queries, truths, strict=True):
            got = self.lookup(index, query).locations
            if got is not None:
                missing = truth - got
                assert not missing, f"{what}: {query} misses true locations {sorted(missing)}"
                if self.exact_answers:
                    extra = got - truth
                    assert not extra, f"{what}: {query} returns extra locations {sorted(extra)}"
            else:
                assert not self.exact_answers, f"{what}: {query} answered 'all'"
            answers.append(got)
        return answers

    def special_queries(self, key_type: str) -> list[KeyQuery]:
        """Every special value as a point, with each range operator, and in pairs.

        For ``float`` columns the doubles between floats are asked too.
        """
        values = list(self.specials(key_type))
        if _kind(key_type).kind == "float":
            values += list(_INEXACT_FOR_FLOAT)
        out = [KeyQuery("is_null"), KeyQuery("range"), KeyQuery("points", tuple(values))]
        for v in values:
            out.append(KeyQuery("points", (v,)))
            for inclusive in (True, False):
                out.append(KeyQuery("range", low=v, low_inclusive=inclusive))
                out.append(KeyQuery("range", high=v, high_inclusive=inclusive))
        for lo, hi in zip(values, values[1:] + values[:1], strict=True):
            out.append(KeyQuery("range", low=lo, high=hi))  # the last pair is reversed
            out.append(
                KeyQuery("range", low=lo, low_inclusive=False, high=hi, high_inclusive=False)
            )
        return out

    def special_rows(self, key_type: str, prefix: str = "part=0/special") -> list[Row]:
        """Each special value alone at a location of its own, all of them together at
        another, and a location holding only NULLs."""
        values = self.specials(key_type)
        rows: list[Row] = [(v, f"{prefix}-{i}") for i, v in enumerate(values)]
        rows += [(v, f"{prefix}-all") for v in values] + [(None, f"{prefix}-all")]
        rows += [(None, f"{prefix}-nulls"), (None, f"{prefix}-nulls")]
        return rows

    def test_lookups_cover_truth_and_survive_ipc(self, contract_spark: Any, key_type: str) -> None:
        """(a) answers hold every true location; (c) describe's size and an IPC round trip.

        First a deterministic example of every special value of the type
        (:meth:`special_rows`, :meth:`special_queries`), then random ones.
        """
        params = self.validate(key_type)
        examples, _ = self._examples()

        def check(rows: list[Row], queries: list[KeyQuery], hinted: bool) -> None:
            truths = self.truths(contract_spark, key_type, rows, queries)
            built = self.build(contract_spark, key_type, rows, params, hinted)
            index = self.load(built)
            answers = self._check_answers(index, truths, queries, "fresh build")

            copy, stored_bytes = ipc_round_trip(built)
            desc = self.describe(index)
            size = desc.get("size_bytes")
            assert type(size) is int and size > 0, f"describe's size_bytes is {size!r}"
            assert size == stored_bytes, (
                f"describe's size_bytes {size} differs from the Arrow IPC files' {stored_bytes}"
            )
            again = self.load(copy)
            for query, before in zip(queries, answers, strict=True):
                after = self.lookup(again, query).locations
                assert after == before, f"{query}: {before} before Arrow IPC, {after} after"
            assert self.describe(again).get("size_bytes") == size

        check(self.special_rows(key_type), self.special_queries(key_type), False)

        @self._settings(examples)
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            rows = self._draw_rows(data, key_type)
            queries = self._draw_queries(data, key_type, rows)
            hinted = data.draw(st.booleans(), label="build told the locations")
            check(rows, queries, hinted)

        run()

    def test_apply_delta_keeps_every_true_location(
        self, contract_spark: Any, key_type: str
    ) -> None:
        """(b) after random adds and removes, answers hold every true location.

        First a deterministic example: every special value added by a delta
        (at new locations and at ones the build knew), then random ones.
        """
        params = self.validate(key_type)
        self.require_delta(contract_spark, key_type, params)
        _, examples = self._examples()

        def check(
            rows: list[Row],
            delta: list[tuple[Any, str, int]],
            after: list[Row],
            queries: list[KeyQuery],
        ) -> None:
            truths = self.truths(contract_spark, key_type, after, queries)
            index = self.load(self.build(contract_spark, key_type, rows, params))
            frame = self.delta_frame(contract_spark, key_type, delta)
            updated = self._applied(contract_spark, index, frame, params, queries)
            answers = self._check_answers(updated, truths, queries, "after apply_delta")
            folded = self._applied_on_driver(index, key_type, delta, params, queries)
            driver = (
                self._check_answers(folded, truths, queries, "after apply_delta_arrow")
                if folded is not None
                else None
            )
            if self.delta_matches_rebuild:
                rebuilt = self.load(self.build(contract_spark, key_type, after, params))
                for i, (query, got) in enumerate(zip(queries, answers, strict=True)):
                    fresh = self.lookup(rebuilt, query).locations
                    assert got == fresh, f"{query}: {got} after apply_delta, {fresh} rebuilt"
                    if driver is not None:
                        assert driver[i] == fresh, (
                            f"{query}: {driver[i]} after apply_delta_arrow, {fresh} rebuilt"
                        )

        base = [(v, f"part=0/special-{i % 2}") for i, v in enumerate(self.specials(key_type)[:2])]
        added = self.special_rows(key_type, "part=9/added") + [
            (v, "part=0/special-1") for v in self.specials(key_type)
        ]
        delta = [(v, loc, 1) for v, loc in added]
        check(base, delta, base + added, self.special_queries(key_type))

        @self._settings(examples)
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            rows = self._draw_rows(data, key_type)
            delta, after = draw_delta(data, self.values(key_type), rows)
            queries = self._draw_queries(data, key_type, after)
            check(rows, delta, after, queries)

        run()

    def test_apply_delta_empty_changes_no_answer(self, contract_spark: Any, key_type: str) -> None:
        """(e) an empty delta, typed or as the framework's untyped empty frame, changes nothing."""
        params = self.validate(key_type)
        self.require_delta(contract_spark, key_type, params)
        _, examples = self._examples()
        untyped = contract_spark.createDataFrame([], "key string, location string, count bigint")

        @self._settings(max(1, examples // 2))
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            rows = self._draw_rows(data, key_type)
            queries = self._draw_queries(data, key_type, rows)
            truths = self.truths(contract_spark, key_type, rows, queries)
            index = self.load(self.build(contract_spark, key_type, rows, params))
            before = self._check_answers(index, truths, queries, "fresh build")
            typed = self.delta_frame(contract_spark, key_type, [])
            for what, frame in (("typed", typed), ("untyped", untyped)):
                updated = self._applied(contract_spark, index, frame, params, queries)
                for query, was in zip(queries, before, strict=True):
                    got = self.lookup(updated, query).locations
                    assert got == was, f"{query}: {was} before, {got} after an empty {what} delta"

        run()

    def test_apply_delta_twice_keeps_every_true_location(
        self, contract_spark: Any, key_type: str
    ) -> None:
        """(f) two summed deltas one after the other: answers hold the truth after each."""
        params = self.validate(key_type)
        self.require_delta(contract_spark, key_type, params)
        _, examples = self._examples()

        @self._settings(examples)
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            rows = self._draw_rows(data, key_type)
            first, middle = draw_delta(data, self.values(key_type), rows)
            second, last = draw_delta(data, self.values(key_type), middle)
            queries = self._draw_queries(data, key_type, last)
            index = self.load(self.build(contract_spark, key_type, rows, params))
            for step, (delta, truth) in enumerate(((first, middle), (second, last)), start=1):
                frame = self.delta_frame(contract_spark, key_type, summed_delta(delta))
                index = self._applied(contract_spark, index, frame, params, queries)
                truths = self.truths(contract_spark, key_type, truth, queries)
                answers = self._check_answers(index, truths, queries, f"after delta {step} of 2")
            if self.delta_matches_rebuild:
                rebuilt = self.load(self.build(contract_spark, key_type, last, params))
                for query, got in zip(queries, answers, strict=True):
                    fresh = self.lookup(rebuilt, query).locations
                    assert got == fresh, f"{query}: {got} after two deltas, {fresh} rebuilt"

        run()

    def test_rebuilt_locations_answer_as_a_build(self, contract_spark: Any, key_type: str) -> None:
        """(g) the entries a delta left inexact, built again from their rows, answer as a fresh build."""
        itype = self.index_object()
        if not isinstance(itype, RebuildsLocations):
            pytest.skip(f"index type {self.index_type!r} does not build locations again")
        params = self.validate(key_type)
        self.require_delta(contract_spark, key_type, params)
        _, examples = self._examples()

        @self._settings(max(1, examples))
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            rows = self._draw_rows(data, key_type)
            delta, after = draw_delta(data, self.values(key_type), rows)
            queries = self._draw_queries(data, key_type, after)
            truths = self.truths(contract_spark, key_type, after, queries)
            index = self.load(self.build(contract_spark, key_type, rows, params))
            assert itype.inexact_locations(index) == [], "a fresh build names inexact locations"
            frame = self.delta_frame(contract_spark, key_type, delta)
            updated = self._applied(contract_spark, index, frame, params, queries)
            stale = set(itype.inexact_locations(updated))
            fresh = self.load(self.build(contract_spark, key_type, after, params))
            wanted = [self.lookup(fresh, q).locations for q in queries]
            again = [(k, loc, 1) for k, loc in after if loc in stale]
            kept = itype.without_locations(updated, sorted(stale))
            frame = self.delta_frame(contract_spark, key_type, again)
            outcomes = [
                (
                    "built again by apply_delta",
                    self._applied(contract_spark, kept, frame, params, queries),
                )
            ]
            on_driver = self._applied_on_driver(kept, key_type, again, params, queries)
            if on_driver is not None:
                outcomes.append(("built again by apply_delta_arrow", on_driver))
            for what, rebuilt in outcomes:
                assert itype.inexact_locations(rebuilt) == [], f"{what}: inexact locations remain"
                answers = self._check_answers(rebuilt, truths, queries, what)
                for query, got, want in zip(queries, answers, wanted, strict=True):
                    assert got == want, f"{query}: {got} {what}, {want} by a fresh build"

        run()

    def test_validate_accepts_its_options(self) -> None:
        """(d) validate fills in JSON-serialisable parameters for every key type."""
        for key_type in self.key_types:
            try:
                params = self.index_object().validate(dict(self.options), key_type)
            except UnsupportedKeyTypeError:
                continue
            assert isinstance(params, dict)
            assert json.loads(json.dumps(params)) == params, "parameters must survive JSON"

    def test_validate_rejects_unknown_option(self) -> None:
        """(d) an unknown option is an OptionError that names it."""
        bad = "no_such_option_for_the_contract"
        with pytest.raises(OptionError, match=bad):
            self.index_object().validate({**self.options, bad: "1"}, self.key_types[0])

    def test_validate_rejects_unsupported_key_type(self) -> None:
        """(d) a key type the index cannot order or hash is refused, naming it."""
        if self.unsupported_key_type is None:
            pytest.skip("no unsupported key type declared")
        index_type = self.index_object()
        with pytest.raises(UnsupportedKeyTypeError) as info:
            index_type.validate(dict(self.options), self.unsupported_key_type)
        assert self.unsupported_key_type in str(info.value)

    def test_index_type_is_registered(self) -> None:
        """The plugin lists the index type through ``lakesieve_index_types``."""
        self._register_plugin()
        assert self.index_type in registry.index_type_names()
        assert self.index_object().name == self.index_type
