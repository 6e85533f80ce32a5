"""The ``lakesieve`` Spark data source: exact rows, the pruned tasks' row filter, the scan description.

Real Spark and real Hudi tables: a merge-on-read table with upserts and
deletes (log files to merge) indexed by Sieve, and a table of doubles holding
NaN, -0.0 and NULL where Arrow's comparisons differ from Spark SQL's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.errors import OptionError
from lakesieve.model import WriteOptions
from lakesieve.python_source import LakesieveReader, describe_scan
from lakesieve.python_source.units import (
    UnitPartition,
    read_partition,
    to_target,
    unit_from_json,
    unit_to_json,
)
from lakesieve.table import write
from pyspark.sql.datasource import EqualTo, GreaterThan

from tests.tables import (
    arrow_frame,
    hudi_rs_rows,
    make_rows,
    sorted_rows,
    spark_where,
    write_rows,
)


@pytest.fixture(scope="module")
def mor(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A partitioned merge-on-read table: bulk insert, upserts and deletes; Sieve on ``k``."""
    path = tmp_path_factory.mktemp("ds") / "mor"
    opts: dict[str, Any] = {"partition_by": ("part",), "table_type": "mor"}
    write_rows(spark, path, make_rows(range(0, 1200), 1), mode="bulk_insert", file_groups=4, **opts)
    table = lakesieve.open(path)
    table.build_index("k", type="sieve", spark=spark)
    write_rows(spark, path, make_rows(range(100, 300, 2), 2, version=1), mode="upsert", **opts)
    write_rows(spark, path, make_rows(range(500, 600), 3), mode="delete", **opts)
    return {"path": str(path), "table": lakesieve.open(path)}


def expected(
    spark: Any,
    mor: dict[str, Any],
    where: str,
    columns: Sequence[str] = ("id", "k", "s", "d", "amount", "part", "version"),
) -> list[tuple]:
    """:func:`~tests.tables.expected_rows` of the module's table: Spark SQL over hudi-rs's rows.

    The table does not change after the fixture: hudi-rs reads its rows and
    they are handed to Spark (a temporary view) once, not once per check.
    """
    if "native_view" not in mor:
        arrow_frame(spark, hudi_rs_rows(mor["path"])).createOrReplaceTempView("ds_mor_native")
        mor["native_view"] = "ds_mor_native"
    return sorted_rows(spark.sql(f"SELECT * FROM {mor['native_view']} WHERE {where}"), columns)


QUERIES = [
    "k = 60",
    "k BETWEEN 40 AND 45",
    "k IN (1, 170, 390)",
    "k = 180",  # rows 540..542 were deleted
    "s = 'cedar-0003' AND d >= DATE '2024-01-05'",
    "amount > 500.25 AND k < 120",
    "version = 1 AND part = 'p1'",
    "k IS NULL",
    "k > 100000",
]


@pytest.mark.parametrize("where", QUERIES)
def test_data_source_rows_equal_spark_over_hudi_rs(
    spark: Any, mor: dict[str, Any], where: str
) -> None:
    got = spark.read.format("lakesieve_python").load(mor["path"]).where(where)
    assert sorted_rows(got) == expected(spark, mor, where)


@pytest.mark.parametrize("where", QUERIES)
def test_pruned_data_source_rows_equal_spark_over_hudi_rs(
    spark: Any, mor: dict[str, Any], where: str
) -> None:
    """With pruning on, the tasks filter rows too: still exactly Spark SQL's rows."""
    got = (
        spark.read.format("lakesieve_python").option("prune", "true").load(mor["path"]).where(where)
    )
    assert sorted_rows(got) == expected(spark, mor, where)


def test_pruned_tasks_hand_spark_only_the_matching_rows(spark: Any, mor: dict[str, Any]) -> None:
    """A pruned scan's tasks keep only the rows the pushed filters can match, in the chosen columns.

    The filter's column ``amount`` is read for the filter but not handed on.
    """
    options = {"path": mor["path"], "prune": "true", "columns": "id,k"}
    reader = LakesieveReader(options, None)  # type: ignore[arg-type]
    reader.pushFilters([GreaterThan(("amount",), 500.25), GreaterThan(("k",), 100)])
    parts = reader.partitions()
    target = pa.schema([("id", pa.int64()), ("k", pa.int64())])
    batches = [b for part in parts for b in read_partition(part, target)]  # type: ignore[arg-type]
    assert all(b.schema.equals(target) for b in batches)
    got = sorted((r["id"], r["k"]) for b in batches for r in b.to_pylist())
    want = expected(spark, mor, "amount > 500.25 AND k > 100", columns=("id", "k"))
    assert got == want
    unfiltered = [
        UnitPartition(p.unit_json, p.table_path, p.table_format, p.instant, {}, ["id", "k"])  # type: ignore[attr-defined]
        for p in parts
    ]
    unit_rows = sum(b.num_rows for p in unfiltered for b in read_partition(p, target))
    assert 0 < len(got) < unit_rows


def test_full_read_through_sql_view_equals_hudi_rs(spark: Any, mor: dict[str, Any]) -> None:
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ds_mor USING lakesieve_python OPTIONS (path '{mor['path']}')"
    )
    got = spark.sql("SELECT * FROM ds_mor")
    want = expected(spark, mor, "TRUE")
    assert len(want) == 1200 - 100 and sorted_rows(got) == want


def test_read_without_predicate_returns_every_row_of_the_unit(mor: dict[str, Any]) -> None:
    table = mor["table"]
    plan = table.plan(None)
    instant = plan.table_instant.id if plan.table_instant else None
    rows = 0
    for unit in plan.units:
        part = UnitPartition(unit_to_json(unit), table.path, table.format, instant, {})
        rows += sum(b.num_rows for b in read_partition(part, table.schema()))
    assert rows == 1100


def test_to_target_passes_matching_batches_and_casts_the_others() -> None:
    target = pa.schema([("a", pa.int64()), ("b", pa.string())])
    same = pa.record_batch([pa.array([1, 2]), pa.array(["x", None])], schema=target)
    assert to_target(same, target) is same
    other = pa.record_batch(
        [pa.array(["y", "z"], pa.large_string()), pa.array([3, 4], pa.int32())], names=["b", "a"]
    )
    got = to_target(other, target)
    assert got.schema.equals(target) and got.column("a").to_pylist() == [3, 4]
    assert got.column("b").to_pylist() == ["y", "z"]


@pytest.fixture(scope="module")
def doubles(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Hudi table whose double column holds NaN, -0.0, 0.0, infinities and NULL."""
    path = tmp_path_factory.mktemp("ds") / "doubles"
    values = [float("nan"), -0.0, 0.0, 1.5, float("inf"), float("-inf"), None, 2.0]
    rows = [(i, v) for i, v in enumerate(values * 4)]
    df = spark.createDataFrame(rows, "id bigint, x double")
    opts = WriteOptions(mode="insert", record_key=("id",), file_groups=2)
    write(path, df, format="hudi", options=opts, spark=spark)
    lakesieve.open(path).build_index("x", type="zonemap", spark=spark)
    return str(path)


@pytest.mark.parametrize(
    "where",
    [
        "x = 0.0",
        "x = CAST('NaN' AS DOUBLE)",
        "x > 1.5",
        "x >= CAST('-Infinity' AS DOUBLE)",
        "x < 0.0",
        "x IN (0.0, CAST('NaN' AS DOUBLE))",
        "x IS NULL",
    ],
)
@pytest.mark.parametrize("prune", ["false", "true"])
def test_float_edge_values_match_spark(spark: Any, doubles: str, where: str, prune: str) -> None:
    """NaN, -0.0 and NULL as Spark SQL treats them, with and without the tasks' row filter."""
    source = spark.read.format("lakesieve_python").option("prune", prune).load(doubles)
    got = source.where(where).select("id", "x")
    oracle = hudi_rs_rows(doubles).select(["id", "x"])
    want = spark_where(spark, oracle, where)
    ids = sorted(r[0] for r in got.collect())
    assert ids and ids == sorted(r[0] for r in want.collect())


def test_scan_description_names_predicate_locations_and_indexes(
    mor: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    reader = LakesieveReader({"path": mor["path"], "prune": "true"}, None)  # type: ignore[arg-type]
    reader.pushFilters([EqualTo(("k",), 60), GreaterThan(("amount",), 1.5)])
    with caplog.at_level(logging.INFO, logger="lakesieve.python_source"):
        parts = reader.partitions()
    table = mor["table"]
    total = len(table.snapshot().units)
    line = reader.description
    assert f"selected {len(parts)} of {total} locations" in line
    assert len(parts) < total
    assert "`k` = CAST(60 AS BIGINT)" in line and "`amount`" in line
    assert "indexes used: k_sieve (sieve)" in line
    assert line in caplog.text
    plan = table.plan("k = 60 AND amount > 1.5")
    assert describe_scan(plan, table).split(": ", 1)[1] == line.split(": ", 1)[1]


def test_scan_without_filters_says_nothing_was_pruned(mor: dict[str, Any]) -> None:
    reader = LakesieveReader({"path": mor["path"]}, None)  # type: ignore[arg-type]
    reader.pushFilters([])
    parts = reader.partitions()
    assert "pushed predicate none" in reader.description
    assert f"selected {len(parts)} of {len(parts)} locations" in reader.description
    assert "indexes used: none" in reader.description


def test_plan_claims_no_filter_so_spark_filters_again(spark: Any, mor: dict[str, Any]) -> None:
    df = spark.read.format("lakesieve_python").load(mor["path"]).where("k = 60")
    text = df._jdf.queryExecution().executedPlan().toString()
    scan = text.index("BatchScan lakesieve")
    assert text.index("Filter") < scan and "= 60)" in text[:scan]  # Spark filters above the scan


def test_pruned_partitions_hold_only_selected_units(mor: dict[str, Any]) -> None:
    reader = LakesieveReader({"path": mor["path"], "prune": "TRUE"}, None)  # type: ignore[arg-type]
    reader.pushFilters([EqualTo(("k",), 60)])
    parts = reader.partitions()
    want = {u.location for u in mor["table"].plan("k = 60").units}
    assert {unit_from_json(p.unit_json).location for p in parts} == want  # type: ignore[attr-defined]


def test_by_default_partitions_hold_every_unit_whatever_was_pushed(mor: dict[str, Any]) -> None:
    for options in ({"path": mor["path"]}, {"path": mor["path"], "prune": "false"}):
        reader = LakesieveReader(options, None)  # type: ignore[arg-type]
        reader.pushFilters([EqualTo(("k",), 60)])
        parts = reader.partitions()
        want = {u.location for u in mor["table"].snapshot().units}
        assert {unit_from_json(p.unit_json).location for p in parts} == want  # type: ignore[attr-defined]


def test_prune_option_other_than_true_or_false_is_refused(mor: dict[str, Any]) -> None:
    reader = LakesieveReader({"path": mor["path"], "prune": "yes"}, None)  # type: ignore[arg-type]
    reader.pushFilters([EqualTo(("k",), 60)])
    with pytest.raises(OptionError, match="option prune"):
        reader.partitions()


def test_reused_frame_and_view_without_filters_read_every_row(
    spark: Any, mor: dict[str, Any]
) -> None:
    """The default scan is exact on a relation reused after a filtered query (Spark keeps its plan)."""
    frame = spark.read.format("lakesieve_python").load(mor["path"])
    assert frame.where("k = 60").count() == len(expected(spark, mor, "k = 60"))
    assert frame.count() == 1100
    assert frame.where("k + 1 = 61").count() == len(expected(spark, mor, "k = 60"))
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ds_reused USING lakesieve_python OPTIONS (path '{mor['path']}')"
    )
    assert spark.sql("SELECT count(*) FROM ds_reused WHERE k = 60").first()[0] == len(
        expected(spark, mor, "k = 60")
    )
    assert spark.sql("SELECT count(*) FROM ds_reused").first()[0] == 1100


@pytest.mark.xfail(
    strict=True,
    reason="Spark 4.x (4.3.0 here) reuses the plan of the relation's last filter pushdown for a "
    "query with no filter to push, which is why pruning is opt-in",
)
def test_reused_pruning_frame_without_filters_reads_every_location(
    spark: Any, mor: dict[str, Any]
) -> None:
    frame = spark.read.format("lakesieve_python").option("prune", "true").load(mor["path"])
    assert frame.where("k = 60").count() == len(expected(spark, mor, "k = 60"))
    assert frame.count() == 1100


def test_columns_option_reads_only_the_named_columns(spark: Any, mor: dict[str, Any]) -> None:
    frame = spark.read.format("lakesieve_python").option("columns", "k, s,id").load(mor["path"])
    assert frame.columns == ["k", "s", "id"]
    where = "k BETWEEN 40 AND 45 OR s = 'cedar-0003'"
    got = sorted_rows(frame.where(where), ("id", "k", "s"))
    assert got and got == expected(spark, mor, where, columns=("id", "k", "s"))


def test_columns_option_in_sql_view_counts_every_row(spark: Any, mor: dict[str, Any]) -> None:
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW ds_cols USING lakesieve_python "
        f"OPTIONS (path '{mor['path']}', columns 'amount')"
    )
    row = spark.sql("SELECT count(*), sum(amount) FROM ds_cols").first()
    want = spark_where(spark, hudi_rs_rows(mor["path"]), "TRUE")  # hudi-rs, not lakesieve
    total = want.agg({"amount": "sum"}).first()[0]
    assert row[0] == 1100 and abs(row[1] - total) < 1e-6


def test_columns_option_names_an_unknown_column(spark: Any, mor: dict[str, Any]) -> None:
    frame = spark.read.format("lakesieve_python").option("columns", "k,nope")
    with pytest.raises(Exception, match="has no column 'nope'"):
        frame.load(mor["path"]).count()
