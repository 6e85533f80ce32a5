"""Conformance on real Apache Hudi tables (``../shared/fixtures/hudi``).

For every fixture: build a Sieve index on the record key and on one other
column; for predicates drawn from the table's own values, the planned
locations hold every matching row and the pruned read returns exactly the
rows (every column) that Spark SQL selects from hudi-rs's read of the table
(:mod:`tests.tables`), for every predicate.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.errors import LakesieveError, LakesieveWarning
from lakesieve.expressions import sql_literal

from tests.conftest import fixture_zips, unzip_fixture
from tests.tables import hudi_rs_rows, rows_by_location, spark_where, true_locations

#: in the long tier only: ``tests/formats/test_foreign_tables.py`` reads every one of
#: these tables through each door and prunes it with a zone map and a Sieve in
#: CI; this file adds a Sieve on the record key and random predicates
pytestmark = [pytest.mark.spark, pytest.mark.long]

ZIPS = fixture_zips()
SUPPORTED = (
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "string",
    "date",
    "timestamp",
    "double",
    "float",
)


def _rows(frame: Any, columns: list[str]) -> list[str]:
    """A Spark DataFrame's rows of ``columns`` as a sorted list of their reprs (a multiset)."""
    return sorted(repr(tuple(r)) for r in frame.select(*[f"`{c}`" for c in columns]).collect())


@pytest.mark.skipif(not ZIPS, reason="../shared/fixtures/hudi is absent")
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_fixture_pruned_reads_equal_hudi_rs(spark: Any, zip_path: Path, tmp_path: Path) -> None:
    root = unzip_fixture(zip_path, tmp_path)
    table = lakesieve.open(root)
    assert table.format == "hudi"
    expected: pa.Table = hudi_rs_rows(root)
    if not table.timeline():
        with pytest.raises(LakesieveError, match="no completed instant"):
            table.build_index("id", type="sieve", spark=spark)
        assert table.explain("id = 1")["locations_total"] == 0
        assert table.read(spark, where="id = 1").count() == 0
        return
    props = dict(
        line.split("=", 1)
        for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    key_fields = props["hoodie.table.recordkey.fields"].split(",")
    schema = table.schema()
    from lakesieve.expressions import resolve_column

    key_col = resolve_column(schema, key_fields[0])
    others = [
        f.name
        for f in schema
        if not f.name.startswith("_hoodie")
        and f.name not in key_fields
        and resolve_column(schema, f.name).spark_type in SUPPORTED
    ]
    columns = [key_col.name, *others[:1]]
    for column in columns:
        table.build_index(column, type="sieve", spark=spark)

    rng = random.Random(zip_path.stem)
    predicates = []
    for column in columns:
        col = resolve_column(schema, column)
        values = [v for v in expected.column(column).to_pylist() if v is not None]
        for v in rng.sample(values, min(3, len(values))):
            predicates.append(f"`{column}` = {sql_literal(v, col)}")
        if len(values) >= 2:
            lo, hi = sorted(rng.sample(values, 2))
            predicates.append(
                f"`{column}` BETWEEN {sql_literal(lo, col)} AND {sql_literal(hi, col)}"
            )
            predicates.append(f"`{column}` > {sql_literal(lo, col)} OR `{column}` IS NULL")
        predicates.append(
            f"`{column}` IN ({', '.join(sql_literal(v, col) for v in values[:3])})"
            if values
            else f"`{column}` IS NULL"
        )
    by_loc = rows_by_location(table)
    data_columns = [c for c in expected.column_names if not c.startswith("_hoodie")]
    for where in predicates:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LakesieveWarning)
            plan = table.plan(where)
        # every location holding a row Spark SQL selects from hudi-rs's read is planned
        truth = true_locations(spark, where, by_loc)
        assert truth <= {u.location for u in plan.units}, f"{zip_path.stem}: {where}"
        # and the pruned Spark read returns exactly those rows, every column
        want = _rows(spark_where(spark, expected, where), data_columns)
        got = _rows(table.read_plan(plan, spark), data_columns)
        assert got == want, f"{zip_path.stem}: {where}"
