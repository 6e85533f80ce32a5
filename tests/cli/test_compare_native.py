"""``lakesieve compare``'s native row: the files the table format's own data skipping reads.

For each format a table is written by the format's own library (Delta by
delta-rs, Iceberg by pyiceberg, Hudi by lakesieve's writer: there is no other
Hudi writer in Python) over four data files, with adversarial values (NULLs,
NaN, ``-0.0``, infinities, strings sharing long prefixes, dates far apart)
and ``id`` laid out sorted, one run per file. The truth never goes through
lakesieve: each row's file comes from the format's own file list (delta-rs,
pyiceberg) or hudi-rs's meta columns, and which rows match from Spark SQL
evaluating the predicate text over those rows.
"""

from __future__ import annotations

import html
import itertools
import math
import random
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import lakesieve
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.cli import main
from lakesieve.expressions import bind, quote_ident, resolve_column, sql_literal
from lakesieve.measure.native import choose_skipping, select_for

from tests.differential.data import DATES, DECIMALS, DOUBLES, FLOATS, INTS, STRINGS, TableSpec
from tests.differential.data import VALUE_STRATEGIES as VALUES
from tests.differential.formats import LOC, create, rows_with_location
from tests.tables import arrow_frame

pytestmark = pytest.mark.spark

FORMATS = ("delta", "iceberg", "hudi-cow")
LOCATIONS = 4
ROWS = 48
#: Columns the predicates test, and pools of the values each holds.
POOLS: dict[str, list[Any]] = {
    "id": list(range(ROWS)),
    "i": INTS,
    "f": DOUBLES,
    "g": FLOATS,
    "dec": DECIMALS,
    "s": STRINGS,
    "d": DATES,
}
#: What each format's native row says it is.
LABELS = {
    "delta": "Delta log's per-file minValues/maxValues/nullCount",
    "iceberg": "pyiceberg planning, same manifest metrics as Iceberg's Spark reader",
    "hudi-cow": "Parquet footer min/max; Hudi's metadata-table column stats are not read",
}
_views = itertools.count()


def _rows() -> list[dict[str, Any]]:
    """``ROWS`` rows over ``LOCATIONS`` files, ``id`` sorted by file, the rest drawn from the pools.

    One file holds only NULLs and NaN in ``f`` (no usable bounds there), one
    only ``-0.0`` and ``0.0``.
    """
    rng = random.Random(53)
    per = ROWS // LOCATIONS
    out = []
    for rid in range(ROWS):
        loc = rid // per
        row: dict[str, Any] = {"id": rid, "v": 0, "loc": loc, "ts": None, "tn": None, "b": None}
        for col, pool in POOLS.items():
            if col != "id":
                row[col] = None if rng.random() < 0.15 else rng.choice(pool)
        if loc == 1:
            row["f"] = None if rid % 2 else math.nan
        elif loc == 2:
            row["f"] = -0.0 if rid % 2 else 0.0
        out.append(row)
    return out


class Native:
    """One written table: its located rows (a cached Spark view) and its native skipping per column."""

    def __init__(self, spark: Any, path: Path, located: pa.Table) -> None:
        self.spark = spark
        self.table = lakesieve.open(path)
        self.schema = self.table.schema(None)
        self.located = located
        self.view = f"native_rows_{next(_views)}"
        arrow_frame(spark, self.located).createOrReplaceTempView(self.view)
        self.locations = frozenset(self.located.column(LOC).to_pylist())
        self.snapshot = self.table.snapshot(None)
        self._skipping: dict[str, Any] = {}

    def skipping(self, column: str) -> Any:
        """The native skipping of ``column``, as compare chooses it."""
        if column not in self._skipping:
            col = resolve_column(self.schema, column, self.table.path)
            self._skipping[column] = choose_skipping(
                self.table.view.fmt, self.table.path, self.snapshot, None, col
            )
        return self._skipping[column]

    def selected(self, column: str, where: str) -> frozenset[str]:
        """The locations the native row counts for ``where`` on ``column`` (all when it cannot say)."""
        bp = bind(where, self.schema, self.table.path)
        found = select_for(self.skipping(column), bp.node)
        return self.locations if found is None else found & self.locations

    def truth(self, wheres: list[str]) -> dict[str, set[str]]:
        """Per condition, the files holding a row Spark SQL selects with it.

        One projection over rows held in memory (Spark evaluates it on the
        driver, no shuffle); a condition that is NULL selects nothing, as in
        ``WHERE``.
        """
        flags = ", ".join(
            f"CASE WHEN ({w}) THEN 1 ELSE 0 END AS q{i}" for i, w in enumerate(wheres)
        )
        out: dict[str, set[str]] = {w: set() for w in wheres}
        for row in self.spark.sql(f"SELECT {LOC}, {flags} FROM {self.view}").collect():
            for i, w in enumerate(wheres):
                if row[i + 1] == 1:
                    out[w].add(row[0])
        return out


@pytest.fixture(scope="module")
def natives(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Native]:
    spec = TableSpec(LOCATIONS, _rows(), [], refresh=False)
    out = {}
    for fmt in FORMATS:
        path = tmp_path_factory.mktemp(f"native-{fmt}") / "t"
        create(spark, fmt, path, spec)
        out[fmt] = Native(spark, path, rows_with_location(fmt, path))
    return out


@st.composite
def predicates(draw: st.DrawFn, schema: pa.Schema) -> tuple[str, str]:
    """One comparison, ``IN`` list or ``BETWEEN`` on one column, as compare asks them."""
    column = draw(st.sampled_from(sorted(POOLS)))
    col = resolve_column(schema, column)
    strategy = VALUES.get(column, st.integers(-5, ROWS + 5)).filter(lambda v: v is not None)
    values = st.one_of(st.sampled_from(POOLS[column]), strategy)
    ident = quote_ident(column)
    op = draw(st.sampled_from(["=", "IN", "BETWEEN", "<=", ">=", "<", ">"]))
    if op == "IN":
        picks = draw(st.lists(values, min_size=1, max_size=4))
        return column, f"{ident} IN ({', '.join(sql_literal(v, col) for v in picks)})"
    if op == "BETWEEN":
        a, b = draw(values), draw(values)
        return column, f"{ident} BETWEEN {sql_literal(a, col)} AND {sql_literal(b, col)}"
    return column, f"{ident} {op} {sql_literal(draw(values), col)}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_native_row_never_leaves_out_a_matching_file(fmt: str, natives: dict[str, Native]) -> None:
    """Property: for every predicate, the files the native row counts hold every matching row."""
    native = natives[fmt]
    assert LABELS[fmt] in native.skipping("id").source

    @settings(
        max_examples=24,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(st.lists(predicates(native.schema), min_size=8, max_size=8))
    def check(asked: list[tuple[str, str]]) -> None:
        truth = native.truth([where for _, where in asked])
        for column, where in asked:
            missed = truth[where] - native.selected(column, where)
            assert not missed, f"{fmt}: {where} leaves out {sorted(missed)}"

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_statistics_prune_sorted_keys(fmt: str, natives: dict[str, Native]) -> None:
    """``id`` runs one file each: a point or a short range reads one file, not all four."""
    native = natives[fmt]
    assert len(native.locations) == LOCATIONS
    # only Iceberg's planning is the format's own code, and only where no NaN widening applies
    assert native.skipping("id").approximation is (fmt != "iceberg")
    assert native.skipping("f").approximation is True
    wheres = ["`id` = 5", "`id` IN (13, 14)", "`id` BETWEEN 25 AND 27", "`id` >= 40", "`id` <= 2"]
    truth = native.truth(wheres)
    for where in wheres:
        assert len(truth[where]) == 1, where
        assert native.selected("id", where) == truth[where], (fmt, where)


def test_cli_prints_the_native_row(
    natives: dict[str, Native], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The text table has a native column and its label, and so has the HTML report."""
    delta = natives["delta"].table.path
    html_path = tmp_path / "report.html"
    args = ["compare", delta, "--column", "id", "--types", "zonemap", "--queries", "4"]
    assert main([*args, "--no-e2e", "--html", str(html_path)]) == 0
    text = capsys.readouterr().out
    head = next(line for line in text.splitlines() if "zonemap" in line)
    assert head.split() == ["zonemap", "native*"]
    label = next(line for line in text.splitlines() if line.startswith("* native"))
    assert "approximation" in label and LABELS["delta"] in label
    point = next(line for line in text.splitlines() if line.strip().startswith("point"))
    assert float(point.split()[2]) == 1.0  # the native figure of a point: one file, not all
    page = html_path.read_text()
    assert 'id="native"' in page and html.escape(LABELS["delta"]) in page


def test_delta_partition_values_prune(spark: Any, tmp_path: Path) -> None:
    """A Delta partition column is skipped by its partition values, the NULL partition included."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path / "parted"
    rows = pa.table({"k": pa.array([1, 2, 3, 4, 5], pa.int64()), "p": ["a", "b", None, "b", "c"]})
    write_deltalake(str(path), rows, partition_by=["p"])
    parts = []
    for action in pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist():
        # a file's rows with its partition value put back (Delta keeps it in the log only)
        rel = unquote(action["path"])
        local = pq.read_table(path / rel)
        part = pa.array([action["partition.p"]] * local.num_rows, pa.string())
        parts.append(
            local.append_column("p", part).append_column(LOC, pa.array([rel] * local.num_rows))
        )
    native = Native(spark, path, pa.concat_tables(parts))
    assert len(native.locations) == 4
    wheres = [
        "`p` = 'b'",
        "`p` IN ('a', 'zz')",
        "`p` BETWEEN 'a' AND 'b'",
        "`p` >= 'c'",
        "`p` < 'b'",
    ]
    truth = native.truth(wheres)
    for where in wheres:
        assert native.selected("p", where) == truth[where], where
