"""Named regressions: the minimal cases the differential suite found, one test per class at least.

Each test writes a concrete table with the format's own writer, builds an
index, and checks the named predicates through every read path against
Spark SQL over the native read (:class:`tests.differential.check.Case`).
Where the right answer is short, it is spelled out as well (the ``id`` values
Spark selects), so the intent survives a change of the oracle.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.errors import PredicateError

from tests.differential import formats
from tests.differential.check import Case
from tests.differential.data import SCHEMA, D, Mutation, TableSpec

pytestmark = pytest.mark.spark

NAN = math.nan


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)


def row(rid: int, loc: int = 0, version: int = 0, **values: Any) -> dict[str, Any]:
    """A row of the differential schema: ``values`` given, every other value column NULL."""
    out: dict[str, Any] = {f.name: None for f in SCHEMA}
    out.update(id=rid, v=version, loc=loc, **values)
    return out


def make_case(
    spark: Any,
    tmp_path: Path,
    fmt: str,
    rows: list[dict[str, Any]],
    indexes: list[tuple[str, str]],
    mutations: list[Mutation] | None = None,
    refresh: bool = False,
) -> Case:
    """A :class:`Case` from concrete rows (``loc`` places each row)."""
    locations = max((r["loc"] for r in rows), default=0) + 1
    spec = TableSpec(locations, rows, list(mutations or []), refresh)
    return Case(spark, fmt, tmp_path, spec, indexes)


def expect(case: Case, where: str, ids: list[int] | None, may_refuse: bool = False) -> None:
    """Spark selects exactly ``ids`` (``None``: Spark refuses the text), and lakesieve agrees everywhere.

    lakesieve must answer the text unless ``may_refuse``; then a PredicateError passes too.
    """
    answer = case.oracle.answer(where)
    if ids is None:
        assert answer.rows is None, f"Spark accepted {where!r}"
        with pytest.raises(PredicateError):
            case.table.explain(where=where)
        with pytest.raises(PredicateError):
            case.table.read_arrow(where=where)
        return
    assert answer.rows is not None, answer.error
    assert sorted(r[0][1] for r in answer.rows) == sorted(ids), (
        f"the oracle's answer to {where!r} changed"
    )
    refused = case.tally.lakesieve_only_refused
    failures = case.check(where)
    assert may_refuse or case.tally.lakesieve_only_refused == refused, (
        f"lakesieve refused {where!r}"
    )
    assert not failures, "\n".join(str(f) for f in failures)


# ---------------------------------------------------------------- 1. NaN ordering


def test_nan_is_above_every_number(spark: Any, tmp_path: Path) -> None:
    """Spark orders NaN above every number and NaN = NaN is true; read_arrow must too."""
    rows = [row(0, 0, f=NAN), row(1, 0, f=0.25), row(2, 1, f=0.75), row(3, 1, f=None)]
    case = make_case(spark, tmp_path, "delta", rows, [("f", "zonemap")])
    expect(case, "f > 0.5", [0, 2])
    expect(case, "NOT (f >= 0.5)", [1])
    expect(case, "f != 0.25", [0, 2])
    expect(case, "f > 1e300 OR f < 0.5", [0, 1])
    # lakesieve may refuse non-finite literals with a PredicateError
    expect(case, "f = CAST('NaN' AS DOUBLE)", [0], may_refuse=True)
    expect(case, "f BETWEEN 0.5 AND CAST('Infinity' AS DOUBLE)", [2], may_refuse=True)


# ---------------------------------------------------------------- 2. three-valued logic


def test_null_literals_under_not_are_unknown(spark: Any, tmp_path: Path) -> None:
    """A comparison with NULL is unknown, not false: NOT of it selects nothing."""
    rows = [row(0, 0, i=1), row(1, 0, i=5), row(2, 1, i=9), row(3, 1, i=None)]
    case = make_case(spark, tmp_path, "delta", rows, [("i", "exact")])
    expect(case, "NOT (i = NULL)", [])
    expect(case, "NOT (i BETWEEN NULL AND 5)", [2])
    expect(case, "NOT (i IN (1, NULL))", [])
    expect(case, "i NOT IN (1, NULL)", [])
    expect(case, "NOT (i IN (5))", [0, 2])
    expect(case, "i NOT IN (5)", [0, 2])
    expect(case, "NOT (NOT (i = NULL) OR i > 5)", [])


# ---------------------------------------------------------------- 3. signed zero


def test_negative_zero_equals_zero_in_lists(spark: Any, tmp_path: Path) -> None:
    """``-0.0`` equals ``0``: ``f IN (0)`` finds it like ``f = 0`` does."""
    rows = [row(0, 0, f=-0.0), row(1, 1, f=0.0), row(2, 1, f=1.0)]
    case = make_case(spark, tmp_path, "delta", rows, [("f", "sieve")])
    expect(case, "f IN (0)", [0, 1])
    expect(case, "f = 0", [0, 1])
    expect(case, "f NOT IN (0)", [2])


def test_full_and_spark_reads_keep_negative_zero_and_nan_files(spark: Any, tmp_path: Path) -> None:
    """A location whose only zero is ``-0.0``, one holding NaN and numbers: no Parquet pushdown may skip them."""
    rows = [row(0, 0, f=-0.0), row(1, 1, f=NAN), row(2, 1, f=0.25), row(3, 2, f=3.0)]
    case = make_case(spark, tmp_path, "delta", rows, [("f", "zonemap")])
    expect(case, "f = 0", [0])
    expect(case, "f > 1.0", [1, 3])
    full = case.table.full_read(spark, where="f = 0").toArrow()
    assert sorted(full.column("id").to_pylist()) == [0]
    full = case.table.full_read(spark, where="f > 1.0").toArrow()
    assert sorted(full.column("id").to_pylist()) == [1, 3]


# ---------------------------------------------------------------- 4. decimal lists


def test_decimal_in_list_with_mixed_scales(spark: Any, tmp_path: Path) -> None:
    """``dec IN (2, 852.5807)`` on ``decimal(18,4)`` is a plain IN, not an ArrowInvalid."""
    rows = [row(0, 0, dec=D("852.5807")), row(1, 0, dec=D(2)), row(2, 1, dec=D("2.5"))]
    case = make_case(spark, tmp_path, "delta", rows, [("dec", "exact")])
    expect(case, "dec IN (2, 852.5807)", [0, 1])
    expect(case, "dec NOT IN (2, 852.5807)", [2])
    expect(case, "dec IN (2.50)", [2])


# ---------------------------------------------------------------- 5. out-of-range literals


def test_literals_spark_rejects_are_refused(spark: Any, tmp_path: Path) -> None:
    """``1e400`` is no double for Spark SQL: a PredicateError, not +inf."""
    rows = [row(0, 0, f=math.inf), row(1, 0, f=1.0)]
    case = make_case(spark, tmp_path, "delta", rows, [("f", "zonemap")])
    expect(case, "f > 1e400", None)
    expect(case, "f < -1e400", None)
    expect(case, "f >= 1e308", [0])


def test_float_column_compares_in_double(spark: Any, tmp_path: Path) -> None:
    """A float32 column against ``0.1``: Spark widens the column to double, so 0.1f != 0.1."""
    f01 = float(pa.array([0.1], pa.float32())[0].as_py())
    rows = [row(0, 0, g=f01), row(1, 1, g=0.5), row(2, 1, g=-0.0)]
    case = make_case(spark, tmp_path, "delta", rows, [("g", "zonemap")])
    expect(case, "g = 0.1", [])
    expect(case, "g > 0.1", [0, 1])
    expect(case, "g IN (0.1, 0.5)", [1])
    expect(case, f"g = {f01!r}", [0])
    expect(case, "g = 0", [2])


# ---------------------------------------------------------------- 6. refreshed indexes


@pytest.mark.parametrize(
    # CI: the zone map and Sieve (every type's NaN and -0.0 refresh is in CI through the
    # differential share and test_refresh_float_keys.py); exact and Bloom in the long tier
    "index_type",
    [
        pytest.param("exact", marks=pytest.mark.long),
        "zonemap",
        "sieve",
        pytest.param("bloom", marks=pytest.mark.long),
    ],
)
def test_refreshed_index_keeps_nan_and_negative_zero(
    spark: Any, tmp_path: Path, index_type: str
) -> None:
    """NaN and ``-0.0`` rows appended after the build and folded in by refresh are found."""
    rows = [row(0, 0, f=0.5), row(1, 1, f=2.0)]
    added = Mutation("append", rows=[row(2, 0, 1, f=NAN), row(3, 1, 1, f=-0.0)])
    case = make_case(spark, tmp_path, "delta", rows, [("f", index_type)], [added], refresh=True)
    assert case.table.explain("f = 0")["indexes"][0]["instant"] == case.table.timeline()[-1].id
    expect(case, "f > 1.0", [1, 2])
    expect(case, "f >= 1e300", [2])
    expect(case, "f = 0", [3])
    expect(case, "f IN (0, 2)", [1, 3])
    expect(case, "f = CAST('NaN' AS DOUBLE)", [2], may_refuse=True)


# ---------------------------------------------------------------- data source


def test_data_source_reads_tables_with_timestamp_columns(spark: Any, tmp_path: Path) -> None:
    """``spark.read.format("lakesieve")`` over a table with timestamp columns returns its rows."""
    ts = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
    rows = [row(0, 0, ts=ts, tn=dt.datetime(2024, 1, 1)), row(1, 1, i=7)]
    case = make_case(spark, tmp_path, "delta", rows, [("i", "zonemap")])
    expect(case, "i = 7", [1])
    expect(case, "ts = TIMESTAMP '2024-01-01 12:00:00'", [0])


# ---------------------------------------------------------------- helpers are independent


def test_native_rows_and_locations_come_from_the_formats(spark: Any, tmp_path: Path) -> None:
    """The oracle's locations are the formats' own: every location lakesieve lists, no other."""
    rows = [row(0, 0, s="a"), row(1, 1, s="b"), row(2, 2, s="c", d=dt.date(2024, 2, 29))]
    for fmt in formats.FORMATS:
        path = tmp_path / fmt / "t"
        path.parent.mkdir()
        formats.create(spark, fmt, path, TableSpec(3, rows, [], False))
        table = lakesieve.open(path)
        assert sorted(formats.locations(fmt, path)) == sorted(
            u.location for u in table.snapshot().units
        )
        assert formats.native_rows(fmt, path).num_rows == 3
