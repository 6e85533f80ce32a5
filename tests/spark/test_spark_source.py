"""``format("lakesieve")`` and ``USING lakesieve``: the JVM data source and its Python planner.

Real Spark, real Hudi tables (copy-on-write, read by Spark's own Parquet scan;
merge-on-read, whose log files are merged as ``Table.read`` merges them), and
the truth from hudi-rs filtered by Spark SQL. Pure tests of the filter
translation and of the jar cache sit beside them.
"""

from __future__ import annotations

import json
import os
import threading
import zipfile
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve import expressions as p
from lakesieve.spark_source import JvmSourceError, jar
from lakesieve.spark_source import jar_build as jar_module
from lakesieve.spark_source.filters import column_name, filter_node, filters_to_predicate

from tests.tables import (
    arrow_frame,
    expected_rows,
    hudi_rs_rows,
    make_rows,
    sorted_rows,
    write_rows,
)

QUERIES = [
    "k = 60",
    "k BETWEEN 40 AND 45",
    "k IN (1, 170, 390)",
    "k = 180 OR s = 'cedar-0003'",
    "NOT (k = 60) AND k < 70",
    "s = 'cedar-0003' AND d >= DATE '2024-01-05'",
    "amount > 500.25 AND k < 120",
    "version = 1 AND part = 'p1'",
    "k IS NULL",
    "k IS NOT NULL AND k > 390",
    "k + 1 = 61",  # no filter Spark can push: every location
    "k > 100000",
]


@pytest.fixture(autouse=True)
def _sparks_default_codegen(spark: Any) -> Any:
    """Whole-stage code generation on, as Spark's default has it (the tests' sessions turn it
    off): Spark's Parquet scan gives columnar batches (``ColumnarToRow``) only with it."""
    key = "spark.sql.codegen.wholeStage"
    before = spark.conf.get(key)
    spark.conf.set(key, "true")
    yield
    spark.conf.set(key, before)


def _make(spark: Any, root: Path, table_type: str) -> str:
    path = root / table_type
    opts: dict[str, Any] = {"partition_by": ("part",), "table_type": table_type}
    write_rows(spark, path, make_rows(range(0, 1200), 1), mode="bulk_insert", file_groups=4, **opts)
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    write_rows(spark, path, make_rows(range(100, 300, 2), 2, version=1), mode="upsert", **opts)
    write_rows(spark, path, make_rows(range(500, 600), 3), mode="delete", **opts)
    return str(path)


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A copy-on-write and a merge-on-read Hudi table: bulk insert, upsert, delete; Sieve on ``k``."""
    root = tmp_path_factory.mktemp("sql")
    return {kind: _make(spark, root, kind) for kind in ("cow", "mor")}


# ---------------------------------------------------------------- rows


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_dataframe_and_sql_rows_equal_spark_over_hudi_rs(
    spark: Any, tables: dict[str, str], kind: str
) -> None:
    path = tables[kind]
    relation = spark.read.format("lakesieve").load(path)
    view = f"sql_{kind}"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING lakesieve OPTIONS (path '{path}')")
    # the truth as expected_rows has it (Spark SQL over hudi-rs's rows held in memory),
    # the rows read by hudi-rs and handed to Spark once for all the queries
    native = f"native_{kind}"
    arrow_frame(spark, hudi_rs_rows(path)).createOrReplaceTempView(native)
    for where in QUERIES:
        want = sorted_rows(spark.sql(f"SELECT * FROM {native} WHERE {where}"))
        assert sorted_rows(relation.where(where)) == want, (kind, where)
        assert sorted_rows(spark.sql(f"SELECT * FROM {view} WHERE {where}")) == want, (kind, where)


def test_reused_relation_reads_every_row_after_a_filtered_query(
    spark: Any, tables: dict[str, str]
) -> None:
    """The same relation: a filter, then none, then one Spark cannot push (each scan plans anew)."""
    for path in tables.values():
        relation = spark.read.format("lakesieve").load(path)
        every = len(expected_rows(spark, path, "true"))
        sixty = len(expected_rows(spark, path, "k = 60"))
        assert 0 < sixty < every
        assert relation.where("k = 60").count() == sixty
        assert relation.count() == every
        assert relation.where("k + 1 = 61").count() == sixty
        assert relation.where("k = 60").count() == sixty


def test_time_travel_with_as_of(spark: Any, tables: dict[str, str]) -> None:
    path = tables["mor"]
    first = lakesieve.open(path).timeline()[0].id
    relation = spark.read.format("lakesieve").option("asOf", first).load(path)
    for where in ("k = 60", "k BETWEEN 180 AND 200", "version = 1"):
        want = expected_rows(spark, path, where, as_of=first)
        assert sorted_rows(relation.where(where)) == want, where
    assert relation.count() == 1200


def test_two_queries_at_once_on_one_relation_get_their_own_files(
    spark: Any, tables: dict[str, str]
) -> None:
    path = tables["cow"]
    relation = spark.read.format("lakesieve").load(path)
    wheres = ["k = 60", "k BETWEEN 300 AND 330", "k IN (5, 390)", "version = 1"] * 2
    got: dict[int, list[tuple]] = {}
    errors: list[BaseException] = []

    def run(i: int, where: str) -> None:
        try:
            got[i] = sorted_rows(relation.where(where))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(wheres)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for i, where in enumerate(wheres):
        assert got[i] == expected_rows(spark, path, where), where


def test_a_table_kept_by_the_planner_sees_new_commits_and_index_states(
    spark: Any, tmp_path: Path
) -> None:
    """The planner reuses the table it opened: a commit, then a refresh, are each seen by the next query."""
    path = tmp_path / "kept"
    write_rows(spark, path, make_rows(range(0, 400), 1), mode="bulk_insert", file_groups=4)
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW kept_table USING lakesieve OPTIONS (path '{path}')"
    )
    where = "k >= 120"
    query = f"SELECT * FROM kept_table WHERE {where}"
    assert sorted_rows(spark.sql(query)) == expected_rows(spark, str(path), where)
    write_rows(spark, path, make_rows(range(400, 460), 2), mode="upsert")
    write_rows(spark, path, make_rows(range(0, 400, 7), 3, version=1), mode="delete")
    latest = lakesieve.open(path).timeline()[-1].id
    stale = _plan(spark.sql(query))
    assert f"at {latest}" in stale and "stale" in stale
    assert sorted_rows(spark.sql(query)) == expected_rows(spark, str(path), where)
    lakesieve.open(path).refresh(spark=spark)
    fresh = _plan(spark.sql(query))
    assert f"at {latest}" in fresh and "k_sieve (sieve)" in fresh and "stale" not in fresh
    assert sorted_rows(spark.sql(query)) == expected_rows(spark, str(path), where)


def test_repeated_scans_plan_once_and_a_commit_plans_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer is kept per (table, instant, index log version, filters, columns)."""
    from lakesieve.spark_source.planner import ScanPlanner
    from lakesieve.table import Table

    path = tmp_path / "cached"
    write_rows(spark, path, make_rows(range(0, 400), 1), mode="bulk_insert", file_groups=4)
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    planned: list[Any] = []
    real = Table.plan

    def counted(self: Table, *args: Any, **kwargs: Any) -> Any:
        planned.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Table, "plan", counted)
    planner = ScanPlanner(spark)
    column = {"name": "k", "type": "long", "nullable": True, "metadata": {}}

    def request(where: list[Any]) -> str:
        schema = {"type": "struct", "fields": [column]}
        return json.dumps({"options": {"path": str(path)}, "filters": where, "schema": schema})

    sixty = request([_cmp("k", "=", "int", "60")])
    first = planner.plan(sixty)
    assert first.error() is None and first.files() is not None
    assert planner.plan(sixty).files() == first.files() and len(planned) == 1
    other = planner.plan(request([_cmp("k", "=", "int", "61")]))
    assert other.files() is not None and len(planned) == 2  # other filters: planned anew
    write_rows(spark, path, make_rows(range(400, 420), 2), mode="upsert")
    assert planner.plan(sixty).files() is not None and len(planned) == 3  # a table commit
    lakesieve.open(path).refresh(spark=spark)
    after = planner.plan(sixty)
    assert len(planned) == 4 and "stale" not in after.description()  # an index commit
    assert planner.plan(sixty).description() == after.description() and len(planned) == 4


def test_a_scan_reads_the_index_log_and_the_timeline_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keying the answer and planning it share one listing of the timeline and one log read,
    whether the answer is planned afresh, kept, or for a column without an index."""
    from lakesieve.query.table_view import TableView
    from lakesieve.spark_source.planner import ScanPlanner
    from lakesieve.store.table_store import TableStore

    path = tmp_path / "once"
    write_rows(spark, path, make_rows(range(0, 400), 1), mode="bulk_insert", file_groups=4)
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    reads = {"log": 0, "timeline": 0}
    read_log, timeline = TableStore.read_log, TableView.timeline

    def counted_log(self: TableStore, strict: bool = True) -> Any:
        reads["log"] += 1
        return read_log(self, strict)

    def counted_timeline(self: TableView) -> Any:
        reads["timeline"] += 1
        return timeline(self)

    monkeypatch.setattr(TableStore, "read_log", counted_log)
    monkeypatch.setattr(TableView, "timeline", counted_timeline)
    planner = ScanPlanner(spark)
    fields = [
        {"name": "k", "type": "long", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
    ]
    schema = {"type": "struct", "fields": fields}
    options = {"path": str(path)}
    planner.schema(json.dumps(options))  # the relation: opened before its scans
    for where in (
        [_cmp("k", "=", "int", "60")],  # planned afresh
        [_cmp("k", "=", "int", "60")],  # kept
        [_cmp("s", "=", "string", "cedar-0003")],  # no index on s
        [],  # no filter
    ):
        reads.update(log=0, timeline=0)
        answer = planner.plan(json.dumps({"options": options, "filters": where, "schema": schema}))
        assert answer.error() is None and answer.files() is not None, answer.error()
        assert reads == {"log": 1, "timeline": 1}, (where, reads)


def test_unreadable_index_costs_a_full_scan_not_rows(
    spark: Any, tables: dict[str, str], tmp_path: Path
) -> None:
    import shutil

    path = tmp_path / "broken"
    shutil.copytree(tables["cow"], path)
    for data_file in (path / ".lakesieve").rglob("*"):
        if data_file.is_file() and "_log" not in data_file.parts:
            data_file.write_bytes(b"not an index")
    relation = spark.read.format("lakesieve").load(str(path))
    with pytest.warns(Warning):  # the planner's warning, raised in py4j's callback thread
        plan = _plan(relation.where("k = 60"))
    total = len(lakesieve.open(path).snapshot().units)
    assert f"selected {total} of {total} locations" in plan
    assert "k_sieve (sieve) unusable, full scan:" in plan and "checksum" in plan
    assert sorted_rows(relation.where("k = 60")) == expected_rows(spark, str(path), "k = 60")


# ---------------------------------------------------------------- what Spark runs


def _plan(frame: Any) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def test_copy_on_write_scan_is_sparks_parquet_scan_with_the_selection(
    spark: Any, tables: dict[str, str]
) -> None:
    path = tables["cow"]
    table = lakesieve.open(path)
    selected = len(table.plan("k = 60").units)
    total = len(table.snapshot().units)
    assert 0 < selected < total
    frame = spark.read.format("lakesieve").load(path).where("k = 60").select("id", "amount")
    plan = _plan(frame)
    assert "ParquetScan" in plan and "ColumnarToRow" in plan
    assert f"selected {selected} of {total} locations" in plan
    assert "indexes used: k_sieve (sieve), stale: +" in plan  # upserts since the build
    assert "ReadSchema: struct<id:bigint,k:bigint,amount:double>" in plan  # columns pruned
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sql_plan USING lakesieve OPTIONS (path '{path}')")
    formatted = spark.sql("EXPLAIN FORMATTED SELECT id FROM sql_plan WHERE k = 60").first()[0]
    assert f"selected {selected} of {total} locations" in formatted


def test_a_plain_scan_plans_without_listing_files_or_a_spark_job(
    spark: Any, tables: dict[str, str]
) -> None:
    """The planner hands the selected files and sizes to the JVM: Spark lists nothing.

    With the parallel listing threshold at 1, Spark lists more than one path
    with a Spark job (the plain read below proves the detector sees it).
    """
    path = tables["cow"]
    table = lakesieve.open(path)
    files = [f"{path}/{u.base_file}" for u in table.snapshot().units]
    tracker = spark.sparkContext.statusTracker()
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    spark.conf.set(key, "1")
    try:
        jobs = set(tracker.getJobIdsForGroup())
        spark.read.parquet(*files).where("k >= 0")._jdf.queryExecution().executedPlan()
        assert set(tracker.getJobIdsForGroup()) != jobs  # a listing job: the detector works
        relation = spark.read.format("lakesieve").load(path)
        for where in ("k >= 0", "k = 60", "k > 100000"):
            jobs = set(tracker.getJobIdsForGroup())
            plan = _plan(relation.where(where))
            assert set(tracker.getJobIdsForGroup()) == jobs, where
            assert "ParquetScan" in plan and "merged read" not in plan
            selected = len(table.plan(where).units)
            assert f"selected {selected} of {len(files)} locations" in plan
            assert relation.where(where).count() == len(expected_rows(spark, path, where))
    finally:
        spark.conf.set(key, before)


def test_merge_on_read_scan_merges_log_files_and_shows_the_selection(
    spark: Any, tables: dict[str, str]
) -> None:
    path = tables["mor"]
    table = lakesieve.open(path)
    assert any(u.log_files for u in table.snapshot().units)
    frame = spark.read.format("lakesieve").load(path).where("k BETWEEN 40 AND 45")
    plan = _plan(frame)
    selected = len(table.plan("k BETWEEN 40 AND 45").units)
    assert f"selected {selected} of {len(table.snapshot().units)} locations" in plan
    assert "merged read" in plan


def test_count_without_columns(spark: Any, tables: dict[str, str]) -> None:
    for path in tables.values():
        relation = spark.read.format("lakesieve").load(path)
        assert relation.count() == len(expected_rows(spark, path, "true"))
        assert relation.where("k = 60").select().count() == len(
            expected_rows(spark, path, "k = 60")
        )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prune": "true"}, "option prune of format('lakesieve') is retired"),
        ({"columns": "k"}, "option columns of format('lakesieve') is retired"),
        ({"asOf": "19990101000000000"}, "19990101000000000"),
    ],
)
def test_bad_options_fail_with_one_line(
    spark: Any, tables: dict[str, str], options: dict[str, str], message: str
) -> None:
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(IllegalArgumentException) as caught:
        spark.read.format("lakesieve").options(**options).load(tables["cow"]).count()
    assert message in str(caught.value).splitlines()[0]


def test_a_path_without_a_table_fails_with_one_line(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(IllegalArgumentException) as caught:
        spark.read.format("lakesieve").load(str(tmp_path / "nothing")).count()
    assert "nothing" in str(caught.value).splitlines()[0]


def test_a_misspelt_option_is_refused_with_the_nearest_name(
    spark: Any, tables: dict[str, str]
) -> None:
    """``as_of`` would read the latest instant silently: refused, naming ``asOf``."""
    from pyspark.errors import AnalysisException, IllegalArgumentException

    path = tables["cow"]
    first = lakesieve.open(path).timeline()[0].id
    with pytest.raises(IllegalArgumentException) as caught:
        spark.read.format("lakesieve").option("as_of", first).load(path).count()
    line = str(caught.value).splitlines()[0]
    assert "'as_of'" in line and "did you mean asOf?" in line
    with pytest.raises((IllegalArgumentException, AnalysisException)) as caught:
        spark.sql(
            "CREATE OR REPLACE TEMPORARY VIEW misspelt USING lakesieve "
            f"OPTIONS (path '{path}', as_of '{first}')"
        ).count()
    assert "did you mean asOf?" in str(caught.value)
    with pytest.raises(IllegalArgumentException) as caught:
        spark.read.format("lakesieve").option("Storage.AWS_REGION", "x").load(path).count()
    assert "did you mean storage.AWS_REGION?" in str(caught.value).splitlines()[0]
    # names the Hudi plugin reads pass, in any case for the source's own
    assert spark.read.format("lakesieve").option("ASOF", first).load(path).count() == 1200
    hoodie = spark.read.format("lakesieve").option("hoodie.read.x", "1").load(path)
    assert hoodie.where("k = 60").count() == len(expected_rows(spark, path, "k = 60"))


def test_nearest_option_names() -> None:
    from lakesieve.sources.scan import nearest_option

    known = ["path", "format", "asOf", "indexRoot", "storage."]
    assert nearest_option("as_of", known) == "asOf"
    assert nearest_option("index-root", known) == "indexRoot"
    assert nearest_option("pth", known) == "path"
    assert nearest_option("storge.AWS_REGION", known) == "storage.AWS_REGION"
    assert nearest_option("zzzzzz", known) is None


def test_an_index_root_that_does_not_exist_is_refused(
    spark: Any, tables: dict[str, str], tmp_path: Path
) -> None:
    from pyspark.errors import IllegalArgumentException

    missing = str(tmp_path / "no_such_store")
    with pytest.raises(IllegalArgumentException) as caught:
        spark.read.format("lakesieve").option("indexRoot", missing).load(tables["cow"]).count()
    line = str(caught.value).splitlines()[0]
    assert "option indexRoot" in line and missing in line and "no folder there" in line


def test_the_plan_line_says_why_no_index_was_used(spark: Any, tables: dict[str, str]) -> None:
    """No filter, or a filter on a column without an index, is not "the table has no index"."""
    path = tables["cow"]
    relation = spark.read.format("lakesieve").load(path)
    everything = _plan(relation)
    assert "no filter to prune with; indexes on k" in everything
    assert "has no index" not in everything
    other = _plan(relation.where("s = 'cedar-0003'"))
    assert "no index on the filtered columns; indexes on k" in other
    assert "has no index" not in other


def test_the_plan_line_says_the_table_has_no_index_only_when_it_has_none(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "bare"
    write_rows(spark, path, make_rows(range(0, 40), 1), mode="bulk_insert", file_groups=2)
    plan = _plan(spark.read.format("lakesieve").load(str(path)).where("k = 3"))
    assert "indexes used: none (the table has no index)" in plan


def test_the_plan_line_shows_float_filters_as_spark_pushed_them(
    spark: Any, tables: dict[str, str]
) -> None:
    plan = _plan(spark.read.format("lakesieve").load(tables["cow"]).where("amount > 500.25"))
    line = plan[plan.index("pushed predicate") :].split(";")[0]
    assert "amount > 500.25" in line and "amount IS NOT NULL" in line
    assert "CAST" not in line
    dated = _plan(
        spark.read.format("lakesieve").load(tables["cow"]).where("d >= DATE '2024-01-05'")
    )
    assert "d >= DATE '2024-01-05'" in dated


# ---------------------------------------------------------------- filters (no Spark)


def _cmp(col: str, op: str, t: str, v: str) -> dict[str, Any]:
    return {"op": op, "col": col, "v": {"t": t, "v": v}}


def test_filter_json_becomes_predicates_with_typed_values() -> None:
    node = filter_node(_cmp("k", "=", "int", "60"))
    assert node == p.Compare("k", "=", p.Literal("number", "60"))
    date = filter_node(_cmp("d", ">=", "date", "19727"))
    assert date == p.Compare("d", ">=", p.Literal("date", "2024-01-05"))
    ts = filter_node(_cmp("t", "<", "timestamp", "1704067200000000"))
    assert ts == p.Compare("t", "<", p.Literal("timestamp", "2024-01-01 00:00:00+00:00"))
    nan = filter_node(_cmp("f", "=", "float", "NaN"))
    assert isinstance(nan, p.Compare) and nan.value.text == "NaN"
    assert filter_node({"op": "isnotnull", "col": "k"}) == p.IsNull("k", negated=True)
    listed = filter_node({"op": "in", "col": "k", "v": [{"t": "int", "v": "1"}, None]})
    assert listed is None  # one value lakesieve cannot type: no pruning on the list


def test_dropped_and_sides_widen_but_never_under_not() -> None:
    known = _cmp("k", "=", "int", "1")
    and_ = {"op": "and", "args": [known, None]}
    assert filter_node(and_) == filter_node(known)  # wider: safe
    assert filter_node({"op": "not", "args": [and_]}) is None  # NOT of a wider side is narrower
    assert filter_node({"op": "or", "args": [known, None]}) is None
    both = filters_to_predicate([known, None, {"op": "isnull", "col": "s"}])
    assert isinstance(both, p.And) and len(both.children) == 2


def test_column_names_from_spark_attributes() -> None:
    assert column_name("k") == "k"
    assert column_name("`Super Name`") == "Super Name"
    assert column_name("`a.b`") == "a.b"
    assert column_name("`we``ird`") == "we`ird"
    assert column_name("a.b") is None  # a nested field
    assert column_name("`a`.`b`") is None


# ---------------------------------------------------------------- the jar


def test_jar_is_compiled_once_per_source_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LAKESIEVE_JAR_CACHE", str(tmp_path))
    built = Path(jar())
    assert built.parent == tmp_path and jar_module.source_hash() in built.name
    stamp = built.stat().st_mtime_ns
    assert Path(jar()).stat().st_mtime_ns == stamp  # cached: not compiled again
    with zipfile.ZipFile(built) as archive:
        names = set(archive.namelist())
        service = archive.read(
            "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
        ).decode()
    assert "org/lakesieve/spark/LakesieveSource.class" in names
    assert service.strip() == "org.lakesieve.spark.LakesieveSource"
    assert [f.name for f in tmp_path.iterdir()] == [built.name]  # no build folder left


def test_without_javac_one_line_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LAKESIEVE_JAR_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JvmSourceError) as caught:
        jar()
    text = str(caught.value)
    assert "javac was not found" in text and "Table.read" in text and "\n" not in text
    assert not list(tmp_path.iterdir())


def test_the_planner_answers_schema_errors_as_json(spark: Any, tmp_path: Path) -> None:
    from lakesieve.spark_source.planner import ScanPlanner

    answer = json.loads(ScanPlanner(spark).schema(json.dumps({"path": str(tmp_path / "none")})))
    assert "error" in answer and str(tmp_path / "none") in answer["error"]
    assert os.path.basename(str(tmp_path)) in answer["error"]


# ---------------------------------------------------------------- a session lakesieve did not start

_PLAIN_SESSION = """
import json, sys
from pyspark.sql import SparkSession
from lakesieve import spark_source

path = sys.argv[1]
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.jars", spark_source.jar())
    .config("spark.ui.enabled", "false")
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    .getOrCreate()
)
out = {}
try:
    spark.read.format("lakesieve").load(path).count()
except Exception as exc:
    out["before"] = str(exc).splitlines()[0]
spark_source.register(spark)
frame = spark.read.format("lakesieve").load(path).where("k = 60")
out["rows"] = sorted(r.id for r in frame.collect())
out["plan"] = frame._jdf.queryExecution().executedPlan().toString()
print(json.dumps(out))
"""


def test_any_classic_session_with_the_jar_and_the_planner(
    spark: Any, tables: dict[str, str], tmp_path: Path
) -> None:
    """A session built with plain pyspark: one line before ``register``, pruned rows after."""
    import subprocess
    import sys

    script = tmp_path / "plain_session.py"
    script.write_text(_PLAIN_SESSION)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(script), tables["cow"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "lakesieve.spark_source.register(spark)" in out["before"]
    want = [r[0] for r in expected_rows(spark, tables["cow"], "k = 60", columns=("id",))]
    assert out["rows"] == sorted(want) and want
    selected = len(lakesieve.open(tables["cow"]).plan("k = 60").units)
    assert f"selected {selected} of" in out["plan"] and "ParquetScan" in out["plan"]
