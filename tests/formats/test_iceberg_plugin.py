"""The Iceberg plugin against pyiceberg: writes, timeline, snapshots, changes, deletes, maintenance.

One table goes through the write hook over five snapshots (bucketed create,
bucketed copy-on-write upsert, copy-on-write delete, then merge-on-read
delete and upsert, which write position delete files); at every snapshot
the plugin's snapshot, Spark read and per-unit reads must equal what
pyiceberg itself reads. Equality deletes, which lakesieve cannot apply, must
refuse the table. Finally an index must survive snapshot expiry and an
orphan-file removal that deletes every unreachable file under the table
location -- which is why Iceberg indexes live beside the table, not in it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import InstantNotFoundError, OptionError, WriteError
from lakesieve.model import LOCATION_COLUMN, TableRef, WriteOptions
from lakesieve.plugins.iceberg import catalog, commit
from lakesieve.plugins.iceberg.errors import IcebergFeatureError
from lakesieve.plugins.iceberg.identify import latest_metadata_file
from lakesieve.table import write
from pyiceberg.table import StaticTable

from tests.tables import spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

BUCKETS = 4
SCHEMA = "id bigint, k bigint, s string, d date, amount double"
COLUMNS = ["id", "k", "s", "d", "amount"]
MERGE_ON_READ = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def _rows(ids: range | list[int], tag: str) -> list[tuple[Any, ...]]:
    return [
        (i, i // 3, f"{tag}-{i % 17:02d}", dt.date(2024, 1, 1) + dt.timedelta(days=i % 40), i * 0.5)
        for i in ids
    ]


def _frame(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(rows, SCHEMA).repartition(2)


def _plain(table: pa.Table) -> pa.Table:
    fields = []
    for f in table.schema:
        t = (
            pa.string()
            if pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type)
            else f.type
        )
        fields.append(pa.field(f.name, t))
    cast = table.select([f.name for f in fields]).cast(pa.schema(fields))
    return cast.sort_by([(n, "ascending") for n in cast.column_names])


def _static(path: Path) -> StaticTable:
    found = latest_metadata_file(str(path))
    assert found is not None
    return StaticTable.from_metadata(found)


def _native(path: Path, snapshot_id: str | None = None) -> pa.Table:
    table = _static(path)
    scan = table.scan(snapshot_id=int(snapshot_id)) if snapshot_id else table.scan()
    return _plain(scan.to_arrow())


def _spark_rows(frame: Any, columns: list[str]) -> pa.Table:
    return _plain(frame.select(*columns).toArrow())


def _read_units(table: Any, instant: str) -> tuple[pa.Table, dict[str, int]]:
    parts, counts = [], {}
    for unit in table.snapshot(instant).units:
        batches = list(
            registry.table_format(table.ref).read_unit(
                unit=unit,
                instant=instant,
                columns=None,
            )
        )
        got = pa.Table.from_batches(batches, schema=table.schema(instant))
        counts[unit.location] = got.num_rows
        parts.append(got)
    return _plain(pa.concat_tables(parts)), counts


def _set_properties(path: Path, props: dict[str, str]) -> None:
    _, _, table = catalog.load_for_write(str(path))
    assert table is not None
    with table.transaction() as tx:
        tx.set_properties(props)


@pytest.fixture(scope="module")
def iceberg(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("warehouse") / "orders"
    bucketed = {"bucket_column": "id", "file_groups": BUCKETS}
    key = {"record_key": ("id",)}
    instants = [
        write(
            path,
            _frame(spark, _rows(range(0, 300), "a")),
            format="iceberg",
            spark=spark,
            options=WriteOptions(mode="bulk_insert", **bucketed),
        ),
        write(
            path,
            _frame(spark, _rows(range(250, 350), "c")),
            spark=spark,
            options=WriteOptions(mode="upsert", **key, **bucketed),
        ),
        write(
            path,
            _frame(spark, _rows(range(0, 350, 10), "x")),
            spark=spark,
            options=WriteOptions(mode="delete", **key),
        ),
    ]
    _set_properties(path, MERGE_ON_READ)
    instants += [
        write(
            path,
            _frame(spark, _rows(range(1, 350, 7), "y")),
            spark=spark,
            options=WriteOptions(mode="delete", **key),
        ),
        write(
            path,
            _frame(spark, _rows(range(2, 350, 9), "z")),
            spark=spark,
            options=WriteOptions(mode="upsert", **key),
        ),
    ]
    return {"path": path, "instants": [i.id for i in instants], "table": lakesieve.open(path)}


def test_identify_timeline_and_index_root(iceberg: dict[str, Any]) -> None:
    path, table, ids = iceberg["path"], iceberg["table"], iceberg["instants"]
    assert registry.identify_format(str(path)) == "iceberg"
    line = table.timeline()
    assert [i.id for i in line] == ids
    assert [i.action for i in line] == ["append", "overwrite", "overwrite", "delete", "overwrite"]
    assert [i.sort_key for i in line] == sorted(i.sort_key for i in line)
    assert line[0].sort_key.startswith(f"{1:020d}.")
    assert [s.snapshot_id for s in _static(path).snapshots()] == [int(i) for i in ids]
    # the index lives beside the table, outside the table location
    assert table.store.root == path.parent / ".lakesieve" / "indexes" / "orders"
    with pytest.raises(InstantNotFoundError):
        table.snapshot("12345")


def test_bucketed_writes_give_one_file_per_bucket(iceberg: dict[str, Any]) -> None:
    table = iceberg["table"]
    for instant in iceberg["instants"][:2]:  # the create and the bucketed upsert
        units = table.snapshot(instant).units
        assert len(units) == BUCKETS
        buckets = []
        for unit in units:
            batches = registry.table_format(table.ref).read_unit(
                unit=unit,
                instant=instant,
                columns=["id"],
            )
            ids = pa.Table.from_batches(list(batches)).column("id").to_numpy()
            buckets.append(set((ids % BUCKETS).tolist()))
        assert all(len(b) == 1 for b in buckets) and set().union(*buckets) == set(range(BUCKETS))


def test_snapshot_matches_pyiceberg_at_every_snapshot(iceberg: dict[str, Any]) -> None:
    path, table = iceberg["path"], iceberg["table"]
    static = _static(path)
    for instant in iceberg["instants"]:
        tasks = list(static.scan(snapshot_id=int(instant)).plan_files())
        snap = table.snapshot(instant)
        assert {u.extra["file_path"] for u in snap.units} == {t.file.file_path for t in tasks}
        for unit in snap.units:
            assert os.path.join(path, unit.location) == unit.extra["file_path"]
            task = next(t for t in tasks if t.file.file_path == unit.extra["file_path"])
            assert unit.num_records == task.file.record_count
            expected_deletes = {f"position-parquet|{d.file_path}" for d in task.delete_files}
            assert set(unit.delete_files) == expected_deletes
    last = table.snapshot(iceberg["instants"][-1])
    assert any(u.delete_files for u in last.units), "merge-on-read wrote position deletes"


def test_sql_over_position_deletes_equals_pyiceberg(spark: Any, iceberg: dict[str, Any]) -> None:
    """A SQL view ``USING lakesieve`` answers with pyiceberg's rows, deletes applied, at each snapshot."""
    path = iceberg["path"]
    last = iceberg["table"].snapshot(iceberg["instants"][-1])
    assert any(u.delete_files for u in last.units)
    columns = ["id", "k", "s", "d", "amount"]
    for instant in iceberg["instants"][-2:]:
        view = f"iceberg_sql_{instant}"
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW {view} USING lakesieve "
            f"OPTIONS (path '{path}', asOf '{instant}')"
        )
        native = _native(path, instant)
        for where in ("id % 7 = 1", "k BETWEEN 10 AND 40", "s = 'z-03'", "true"):
            want = spark_where(spark, native, where)
            got = spark.sql(f"SELECT {', '.join(columns)} FROM {view} WHERE {where}")
            assert _spark_rows(got, columns).sort_by("id") == _spark_rows(want, columns).sort_by(
                "id"
            ), (instant, where)


def test_reads_equal_pyiceberg_at_every_snapshot(spark: Any, iceberg: dict[str, Any]) -> None:
    path, table = iceberg["path"], iceberg["table"]
    for instant in iceberg["instants"]:
        expected = _native(path, instant)
        plan = table.plan(None, instant)
        frame = (
            registry.table_format(table.ref)
            .read(
                spark=spark,
                units=plan.units,
                instant=instant,
                with_location=True,
            )
            .cache()
        )
        assert _spark_rows(frame, COLUMNS).equals(expected), instant
        by_location = {r[0]: r[1] for r in frame.groupBy(LOCATION_COLUMN).count().collect()}
        unit_rows, counts = _read_units(table, instant)
        assert unit_rows.equals(expected)
        assert by_location == {k: v for k, v in counts.items() if v}
        frame.unpersist()
    ids = set(_native(path).column("id").to_pylist())
    gone = set(range(0, 350, 10)) | set(range(1, 350, 7))
    assert ids == set(range(350)) - gone | set(range(2, 350, 9))


def test_changes_between_snapshots(iceberg: dict[str, Any]) -> None:
    table, ids = iceberg["table"], iceberg["instants"]
    files = {i: table.snapshot(i).locations for i in ids}
    deleted = {i: {u.location for u in table.snapshot(i).units if u.delete_files} for i in ids}

    def changes(start: str | None, end: str) -> Any:
        return registry.table_format(table.ref).changes(start=start, end=end)

    for a in range(len(ids)):
        for b in range(a + 1, len(ids)):
            forward, backward = changes(ids[a], ids[b]), changes(ids[b], ids[a])
            assert forward.touched >= files[ids[a]] ^ files[ids[b]]
            assert forward.touched >= deleted[ids[b]] - deleted[ids[a]]
            assert forward.added <= files[ids[b]] and not forward.removed & files[ids[b]]
            assert backward.touched == forward.touched
            assert (backward.added, backward.removed) == (forward.removed, forward.added)
    assert changes(None, ids[0]).added == files[ids[0]]
    merge_on_read = changes(ids[2], ids[3])  # position deletes only
    assert not merge_on_read.added and not merge_on_read.removed
    assert merge_on_read.rewritten == deleted[ids[3]]


def _equality_delete(table_path: Path) -> str:
    """Commit an equality delete file (``id`` in 1, 2) to the table; return its path."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    _, _, table = catalog.load_for_write(str(table_path))
    assert table is not None
    id_field = table.schema().find_field("id")
    arrow = schema_to_pyarrow(table.schema().select("id"))
    file_path = str(table_path / "data" / "eq-delete-0001.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}).cast(arrow), file_path)
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=file_path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=2,
        file_size_in_bytes=os.path.getsize(file_path),
        equality_ids=[id_field.field_id],
        sort_order_id=None,
        key_metadata=None,
    )
    delete_file.spec_id = table.spec().spec_id
    commit.row_delta(table, [delete_file], [])
    return file_path


def test_equality_deletes_refuse_the_table(spark: Any, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    path = tmp_path / "eq"
    sql = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    sql.create_namespace("db")
    created = sql.create_table(
        "db.eq",
        schema=pa.schema([("id", pa.int64())]),
        location=str(path),
        properties={"format-version": "2"},
    )
    created.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    eq_file = _equality_delete(path)
    table = lakesieve.open(path)
    (unit,) = table.snapshot().units
    assert unit.delete_files == (f"equality-parquet|{eq_file}",)
    with pytest.raises(IcebergFeatureError, match=r"eq has equality delete files"):
        table.full_read(spark)
    with pytest.raises(IcebergFeatureError, match="equality"):
        list(
            registry.table_format(table.ref).read_unit(
                unit=unit,
                instant=None,
                columns=None,
            )
        )
    older = table.timeline()[0].id
    assert table.full_read(spark, as_of=older).count() == 10  # before the delete: readable


def test_table_deleted_from_disk_can_be_written_again(spark: Any, tmp_path: Path) -> None:
    """The default catalog still names a deleted table's metadata file: the next write starts afresh."""
    path = tmp_path / "again"
    write(
        path,
        _frame(spark, _rows(range(0, 40), "a")),
        format="iceberg",
        options=WriteOptions(mode="append", table_name="again"),
        spark=spark,
    )
    write(
        path,
        _frame(spark, _rows(range(40, 50), "b")),
        options=WriteOptions(mode="append"),
        spark=spark,
    )
    shutil.rmtree(path)
    write(
        path,
        _frame(spark, _rows(range(100, 105), "c")),
        format="iceberg",
        options=WriteOptions(mode="append", table_name="again"),
        spark=spark,
    )
    table = lakesieve.open(path)
    assert len(table.timeline()) == 1
    assert sorted(r.id for r in table.full_read(spark).collect()) == list(range(100, 105))
    assert _native(path).num_rows == 5


def test_configured_catalog(spark: Any, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    path = tmp_path / "elsewhere" / "t"
    options = {
        "catalog.name": "c",
        "catalog.type": "sql",
        "catalog.uri": f"sqlite:///{tmp_path / 'cat.db'}",
        "catalog.warehouse": f"file://{tmp_path}",
        "table": "db.t",
    }
    sql = SqlCatalog("c", uri=options["catalog.uri"], warehouse=options["catalog.warehouse"])
    sql.create_namespace("db")
    sql.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("s", pa.string())]),
        location=str(path),
        properties={"format-version": "2"},
    )
    ref = TableRef(str(path), "iceberg", options)
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, s string")
    instant = registry.table_format(ref).write(
        spark=spark,
        df=frame,
        options=WriteOptions(mode="append"),
    )
    assert sql.load_table("db.t").current_snapshot().snapshot_id == int(instant.id)
    assert not (tmp_path / "elsewhere" / ".lakesieve" / "catalog.db").exists()
    table = lakesieve.open(path, options=options)
    assert [i.id for i in table.timeline()] == [instant.id]
    assert sorted(r.id for r in table.full_read(spark).collect()) == [1, 2]
    with pytest.raises(OptionError, match="'table'"):
        lakesieve.open(path, options={"catalog.type": "sql"}).timeline()


def test_write_refuses_bad_input(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad"
    frame = spark.createDataFrame([(1, "a")], "id bigint, s string")
    ref = TableRef(str(path), "iceberg", {})
    for options, message in [
        (WriteOptions(mode="merge"), "unknown mode"),
        (WriteOptions(mode="delete"), "no record key"),
        (WriteOptions(mode="delete", record_key=("id",)), "no Iceberg table"),
        (WriteOptions(mode="append", bucket_column="id", file_groups=0), "file_groups"),
    ]:
        with pytest.raises(WriteError, match=message):
            registry.table_format(ref).write(spark=spark, df=frame, options=options)
    assert not path.exists()


def _reachable(table_path: Path) -> set[str]:
    """Every file the current metadata reaches (what orphan-file removal keeps)."""
    static = _static(table_path)
    io, meta = static.io, static.metadata
    keep = {static.metadata_location} | {m.metadata_file for m in meta.metadata_log}
    for snap in meta.snapshots:
        keep.add(snap.manifest_list)
        for manifest in snap.manifests(io):
            keep.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                keep.add(entry.data_file.file_path)
    return {os.path.abspath(p.removeprefix("file://")) for p in keep}


def _remove_orphan_files(table_path: Path) -> list[str]:
    """Delete every file under the table location the metadata does not reach, hidden or not.

    This is what Iceberg's ``remove_orphan_files`` procedure does (pyiceberg
    0.12 has no such action), without its age limit or hidden-path filter.
    """
    keep = _reachable(table_path)
    removed = []
    for root, _, names in os.walk(table_path):
        for name in names:
            full = os.path.abspath(os.path.join(root, name))
            if full not in keep:
                os.remove(full)
                removed.append(os.path.relpath(full, table_path))
    return removed


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _where(draw: Any) -> str:
    kind = draw(st.sampled_from(["eq", "in", "between", "ge", "lt", "or"]))
    a, b = sorted(draw(st.lists(st.integers(990, 1110), min_size=2, max_size=2)))
    return {
        "eq": f"id = {a}",
        "in": f"id IN ({a}, {b}, {a + 7})",
        "between": f"id BETWEEN {a} AND {min(b, a + 40)}",
        "ge": f"id >= {b}",
        "lt": f"id < {a}",
        "or": f"k = {a // 25} OR id = {b}",
    }[kind]


def test_index_survives_expiry_and_orphan_removal(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "wh" / "events"
    write(
        path,
        _frame(spark, _rows(range(0, 100), "a")),
        format="iceberg",
        spark=spark,
        options=WriteOptions(mode="append"),
    )
    # runs of 25 consecutive ids per file: a layout the Sieve index prunes perfectly
    runs = [(i, i // 25, *rest) for i, _, *rest in _rows(range(1000, 1100), "o")]
    write(
        path,
        _frame(spark, runs),
        spark=spark,
        options=WriteOptions(mode="overwrite", bucket_column="k", file_groups=BUCKETS),
    )
    table = lakesieve.open(path)
    table.build_index("id", type="sieve", spark=spark)
    inside = lakesieve.open(path, index_root=path / ".lakesieve")  # what the default avoids
    inside.build_index("id", type="sieve", spark=spark)
    assert table.store.root == path.parent / ".lakesieve" / "indexes" / "events"
    assert not str(table.store.root).startswith(str(path) + os.sep)
    before = _tree_digest(table.store.root)
    assert before

    _, _, loaded = catalog.load_for_write(str(path))
    assert loaded is not None
    loaded.maintenance.expire_snapshots().older_than(
        dt.datetime.now() + dt.timedelta(seconds=1)
    ).commit()
    time.sleep(0.01)
    removed = _remove_orphan_files(path)
    assert any(r.startswith("data/") for r in removed), "expired snapshots' data files went"
    assert any(r.startswith(".lakesieve/") for r in removed), "an index inside the table would go"
    assert not [p for p in (path / ".lakesieve").rglob("*") if p.is_file()]
    assert _tree_digest(table.store.root) == before

    table = lakesieve.open(path)
    assert len(table.timeline()) == 1
    described = table.describe_index("id_sieve")
    assert "error" not in described
    explained = table.explain("id = 1042")
    assert explained["indexes"][0]["status"] == "used"
    assert explained["locations_selected"] == 1 < explained["locations_total"] == BUCKETS
    expected_all = _native(path)
    assert expected_all.num_rows == 100
    through_source = spark.read.format("lakesieve").load(str(path)).where("id = 1042 OR id = 1077")
    assert sorted(r.id for r in through_source.collect()) == [1042, 1077]

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: Any) -> None:
        where = _where(data.draw)
        # the truth: pyiceberg's rows filtered by Spark SQL
        expected = _spark_rows(spark_where(spark, expected_all, where), COLUMNS)
        assert _spark_rows(table.read(spark, where=where), COLUMNS).equals(expected), where

    check()
