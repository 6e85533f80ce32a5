"""``USING lakesieve`` over Delta and Iceberg: plain Parquet files go to Spark's own scan as data.

Each table holds plain data files and one that needs the format's merged read
(a Delta deletion vector, an Iceberg position delete). The truth is the
format's own reader (delta-rs, pyiceberg) filtered by Spark SQL. A scan that
selects only plain files plans without a Spark job, even with Spark's
parallel listing threshold at 1 (the merged read lists its files with one).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.formats.test_delta_plugin import _add_deletion_vector
from tests.formats.test_iceberg_deletes_renamed import _position_delete
from tests.tables import native_where, plain_types, rows_repr, spark_where

#: Rows per data file, and the data files written before the index (one more after it).
ROWS = 200
FILES = 4
#: Predicates selecting one plain file, one or more files, and the file with deletes.
PLAIN = ["k = 250", "k BETWEEN 410 AND 420", "s = 'v-0005'", "k >= 600"]
MERGED = ["k = 5", "k < 210"]


def _rows(start: int) -> pa.Table:
    ids = list(range(start, start + ROWS))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(ids, pa.int64()),
            "s": pa.array([f"v-{i % 50:04d}" for i in ids], pa.string()),
            "amount": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )


def _delta(root: Path) -> str:
    path = root / "delta"
    for f in range(FILES):
        write_deltalake(
            str(path),
            _rows(f * ROWS),
            mode="append",
            configuration={"delta.enableDeletionVectors": "true"},
        )
    actions = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    first = next(a["path"] for a in actions if a["min.k"] == 0)
    _add_deletion_vector(path, first, [0, 5, 7, 199])
    return str(path)


def _iceberg(root: Path) -> str:
    from pyiceberg.catalog.sql import SqlCatalog

    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("fl", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("fl")
    path = root / "iceberg"
    table = catalog.create_table(
        ("fl", "events"),
        schema=_rows(0).schema,
        location=str(path),
        properties={"format-version": "2"},
    )
    for f in range(FILES):
        table.append(_rows(f * ROWS))
    _position_delete(table, {5, 7, 199}, bounded=True)
    return str(path)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> dict[str, str]:
    """A Delta and an Iceberg table of plain files and one with deletes; Sieve on ``k``."""
    root = tmp_path_factory.mktemp("formats")
    out = {"delta": _delta(root), "iceberg": _iceberg(root)}
    for path in out.values():
        lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    return out


def _plan(frame: Any) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def _truth(spark: Any, fmt: str, path: str, where: str) -> tuple[list[str], list[str]]:
    """(columns, rows) of the format's own read that Spark SQL selects with ``where``."""
    if fmt != "delta":
        return native_where(spark, fmt, path, where)
    rows = plain_types(pa.table(DeltaTable(path).scan()))  # delta-rs' scan applies deletion vectors
    return rows.column_names, rows_repr(spark_where(spark, rows, where), rows.column_names)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_plain_files_plan_without_a_job_and_answer_as_the_formats_reader(
    spark: Any, tables: dict[str, str], fmt: str
) -> None:
    path = tables[fmt]
    table = lakesieve.open(path)
    total = len(table.snapshot().units)
    assert sum(bool(u.delete_files) for u in table.snapshot().units) == 1
    view = f"files_{fmt}"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING lakesieve OPTIONS (path '{path}')")
    tracker = spark.sparkContext.statusTracker()
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    spark.conf.set(key, "1")
    try:
        for where in PLAIN + MERGED:
            frame = spark.sql(f"SELECT * FROM {view} WHERE {where}")
            jobs = set(tracker.getJobIdsForGroup())
            plan = _plan(frame)
            planned_without_job = set(tracker.getJobIdsForGroup()) == jobs
            selected = table.plan(where).units
            assert f"selected {len(selected)} of {total} locations" in plan, (where, plan)
            if any(u.delete_files for u in selected):
                assert "merged read" in plan, where
            else:
                assert "ParquetScan" in plan and "merged read" not in plan, where
                assert planned_without_job, where
            columns, rows = _truth(spark, fmt, path, where)
            assert rows_repr(frame, columns) == rows, where
    finally:
        spark.conf.set(key, before)
    explained = spark.sql(f"EXPLAIN SELECT id FROM {view} WHERE k = 250").first()[0]
    assert f"selected 1 of {total} locations" in explained


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_filterless_count_after_filtered_ones_is_the_full_count(
    spark: Any, tables: dict[str, str], fmt: str
) -> None:
    path = tables[fmt]
    relation = spark.read.format("lakesieve").load(path)
    for where in PLAIN:
        relation.where(where).count()
    columns, rows = _truth(spark, fmt, path, "true")
    assert relation.count() == len(rows)
    assert rows_repr(relation, columns) == rows


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_two_queries_at_once_on_one_relation_get_their_own_files(
    spark: Any, tables: dict[str, str], fmt: str
) -> None:
    path = tables[fmt]
    relation = spark.read.format("lakesieve").load(path)
    wheres = [*PLAIN, *MERGED] * 2
    got: dict[int, list[str]] = {}
    errors: list[BaseException] = []
    columns = relation.columns

    def run(i: int, where: str) -> None:
        try:
            got[i] = rows_repr(relation.where(where), columns)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(wheres)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for i, where in enumerate(wheres):
        assert got[i] == _truth(spark, fmt, path, where)[1], where


def test_a_table_commit_and_an_index_commit_each_plan_anew(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept answer is per (table, instant, index log version, filters, columns) on Delta too."""
    from lakesieve.spark_source.planner import ScanPlanner
    from lakesieve.table import Table

    path = tmp_path / "kept"
    for f in range(3):
        write_deltalake(str(path), _rows(f * ROWS), mode="append")
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    planned: list[Any] = []
    real = Table.plan

    def counted(self: Table, *args: Any, **kwargs: Any) -> Any:
        planned.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Table, "plan", counted)
    planner = ScanPlanner(spark)
    schema = {"type": "struct", "fields": [{"name": "k", "type": "long", "nullable": True}]}
    request = json.dumps(
        {
            "options": {"path": str(path)},
            "filters": [{"op": ">=", "col": "k", "v": {"t": "int", "v": "250"}}],
            "schema": schema,
        }
    )
    first = planner.plan(request)
    assert first.error() is None and first.files() is not None, first.error()
    assert "selected 2 of 3 locations" in first.description()
    assert planner.plan(request).files() == first.files() and len(planned) == 1
    write_deltalake(str(path), _rows(3 * ROWS), mode="append")
    after_commit = planner.plan(request)
    assert len(planned) == 2 and after_commit.files() != first.files()  # a table commit
    assert "selected 3 of 4 locations" in after_commit.description()
    lakesieve.open(path).refresh(spark=spark)
    after_refresh = planner.plan(request)
    assert len(planned) == 3 and "stale" not in after_refresh.description()  # an index commit
    assert planner.plan(request).files() == after_refresh.files() and len(planned) == 3
