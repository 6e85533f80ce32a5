"""Conformance on real Apache Hudi tables (``../shared/fixtures/hudi``).

For every fixture: build a Sieve index on the record key and on one other
column; for predicates drawn from the table's own values, the pruned read
returns exactly the rows hudi-rs returns for the same predicate.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.errors import LakesieveError
from lakesieve.planner import LakesieveWarning
from lakesieve.predicate import bind, sql_literal, to_arrow

from .conftest import fixture_zips, unzip_fixture
from .tables import rows_by_location, true_locations

pytestmark = pytest.mark.spark

ZIPS = fixture_zips()
SUPPORTED = ("tinyint", "smallint", "int", "bigint", "string", "date", "timestamp", "double", "float")


def _hudi_rows(path: Path) -> pa.Table:
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _keys(tbl: pa.Table, key_fields: list[str]) -> list[str]:
    cols = [tbl.column(k).to_pylist() for k in key_fields]
    return sorted("|".join(str(v) for v in vals) for vals in zip(*cols, strict=True))


@pytest.mark.skipif(not ZIPS, reason="../shared/fixtures/hudi is absent")
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_fixture_pruned_reads_equal_hudi_rs(spark: Any, zip_path: Path, tmp_path: Path) -> None:
    root = unzip_fixture(zip_path, tmp_path)
    table = lakesieve.open(root)
    assert table.format == "hudi"
    expected = _hudi_rows(root)
    if not table.timeline():
        with pytest.raises(LakesieveError, match="no completed instant"):
            table.build_index("id", type="sieve", spark=spark)
        assert table.explain("id = 1")["locations_total"] == 0
        assert table.read(spark, where="id = 1").count() == 0
        return
    props = dict(
        line.split("=", 1) for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    key_fields = props["hoodie.table.recordkey.fields"].split(",")
    schema = table.schema()
    from lakesieve.predicate import resolve_column

    key_col = resolve_column(schema, key_fields[0])
    others = [
        f.name for f in schema
        if not f.name.startswith("_hoodie") and f.name not in key_fields
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
            predicates.append(f"`{column}` BETWEEN {sql_literal(lo, col)} AND {sql_literal(hi, col)}")
            predicates.append(f"`{column}` > {sql_literal(lo, col)} OR `{column}` IS NULL")
        predicates.append(f"`{column}` IN ({', '.join(sql_literal(v, col) for v in values[:3])})" if values else f"`{column}` IS NULL")
    by_loc = rows_by_location(table)
    for n, where in enumerate(predicates):
        bound = bind(where, schema)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LakesieveWarning)
            plan = table.plan(where)
        # every location holding a matching row is planned (cheap, per location via hudi-rs)
        truth = true_locations(table, where, by_loc)
        assert truth <= {u.location for u in plan.units}, f"{zip_path.stem}: {where}"
        if n % 4 != 0:
            continue
        # and the pruned Spark read returns exactly hudi-rs's rows
        want = _keys(expected.filter(to_arrow(bound)), key_fields)
        got_df = table.read_plan(plan, spark)
        got = sorted("|".join(str(r[k]) for k in key_fields) for r in got_df.select(*key_fields).collect())
        assert got == want, f"{zip_path.stem}: {where}"
