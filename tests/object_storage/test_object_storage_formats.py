"""Iceberg and Hudi tables on object storage: indexed and read with Spark, as a Delta table is.

Each table lies on a moto S3 server on 127.0.0.1 (a child process, so that
hudi-rs, which keeps the interpreter lock while it waits on HTTP, cannot
deadlock with it: see :mod:`tests.s3_server`). lakesieve opens it by its
``s3://`` URI with only the standard ``AWS_*`` variables set and keeps its
indexes beside it on the server (its default index root); Spark reads the data files
through Hadoop's S3A connector. Every read is checked against the format's
own reader (pyiceberg through the writer's catalog, hudi-rs) filtered by
Spark SQL, and nothing may be written to the working folder, nor on S3 but
the index store.

- Iceberg: written by pyiceberg through a SQLite catalog kept in a local
  folder, warehouse on S3; lakesieve finds it by location (the newest
  metadata file, by listing) and reads it without any catalog.
- Hudi: Apache Hudi's own tables (``../shared/fixtures/hudi``), a
  copy-on-write one and a merge-on-read one with a log file, uploaded with
  boto3.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.plugins.hudi.tables import hudi_rs_options, worker_options
from lakesieve.plugins.iceberg.catalog import s3_properties

from tests.conftest import S3A_JARS, fixture_zips, unzip_fixture
from tests.s3_server import S3Server, moto_s3, pyiceberg_catalog
from tests.tables import hudi_rs_rows, spark_where

NO_CONNECTOR = "no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)"
APPENDS = 8
ROWS_PER_APPEND = 40


# ----------------------------------------------------------------- pure logic


def test_iceberg_s3_properties_follow_the_standard_aws_variables() -> None:
    """pyiceberg's ``s3.*`` FileIO properties from ``AWS_*``; ``storage.`` options win; S3 only."""
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "HOME": "/root",
    }
    got = s3_properties("s3://b/t", {}, env)
    assert got == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key-id": "id",
        "s3.secret-access-key": "secret",
        "s3.region": "eu-west-1",
    }
    table = {"storage.AWS_REGION": "us-east-2", "storage.AWS_SESSION_TOKEN": "tok", "x": "y"}
    got = s3_properties("s3a://b/t", table, env)
    assert got["s3.region"] == "us-east-2" and got["s3.session-token"] == "tok"
    assert s3_properties("/local/t", table, env) == {}
    assert s3_properties("file:///local/t", table, env) == {}
    assert s3_properties("s3://b/t", {}, {}) == {}


def test_hudi_rs_options_drop_the_storage_prefix() -> None:
    """``storage.AWS_*`` reach hudi-rs by their own names; ``hoodie.*`` are kept as they are."""
    got = hudi_rs_options({"storage.AWS_REGION": "eu-west-1", "hoodie.read.x": "1"})
    assert got == {"AWS_REGION": "eu-west-1", "hoodie.read.x": "1"}
    assert hudi_rs_options(None) == {}


def test_hudi_worker_options_carry_the_driver_aws_variables() -> None:
    """Spark's Python workers get the driver's ``AWS_*`` for a table on S3; the table's win."""
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "eu-west-1", "HOME": "/"}
    got = worker_options("s3://b/t", {"storage.AWS_REGION": "us-east-2"}, env)
    assert got == {
        "storage.AWS_REGION": "us-east-2",
        "storage.AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    }
    assert worker_options("/local/t", {"hoodie.x": "1"}, env) == {"hoodie.x": "1"}


# ----------------------------------------------------------------- shared set-up


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3(process=True) as server:
        yield server


@pytest.fixture
def aws_env(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Only the standard ``AWS_*`` variables point the readers at the server."""
    for key, value in s3.options.items():
        monkeypatch.setenv(key, value)
    return s3.options


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, which must stay empty."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _keys(s3: S3Server, prefix: str) -> list[str]:
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix)
    return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))


def _sorted(rows: pa.Table, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    return sorted(zip(*(rows[c].to_pylist() for c in columns), strict=True))


def _spark_rows(frame: Any, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.select(*columns).collect())


def _check_reads(
    spark: Any,
    table: Any,
    native: pa.Table,
    wheres: Sequence[str],
    columns: Sequence[str],
) -> None:
    """Arrow and Spark reads through the index equal the native rows Spark SQL selects."""
    for where in wheres:
        want = _spark_rows(spark_where(spark, native, where), columns)
        assert want, where
        assert _sorted(table.read_arrow(where=where), columns) == want, ("arrow", where)
        assert _spark_rows(table.read(spark, where=where), columns) == want, ("spark", where)


def test_iceberg_delete_files_on_s3_are_read_with_the_tables_storage_options(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``AWS_*`` set: a position delete file on S3 is read with the options the table gives."""
    import pyarrow.parquet as pq
    from lakesieve.plugins.iceberg.deletes import deleted_positions

    for key in s3.options:
        monkeypatch.delenv(key, raising=False)
    data_file = s3.url("deletes/data/a.parquet")
    other = s3.url("deletes/data/b.parquet")
    local = tmp_path / "d.parquet"
    rows = {"file_path": [data_file, other, data_file], "pos": [5, 1, 2]}
    pq.write_table(
        pa.table(rows, schema=pa.schema([("file_path", pa.string()), ("pos", pa.int64())])), local
    )
    key = "deletes/data/delete-1.parquet"
    s3.client().upload_file(str(local), s3.bucket, key)
    got = deleted_positions(data_file, [f"s3://{s3.bucket}/{key}"], dict(s3.options))
    assert got.tolist() == [2, 5]


# ----------------------------------------------------------------- Iceberg


def _iceberg_table(s3: S3Server, catalog_dir: Path) -> Any:
    """``APPENDS`` appends by pyiceberg (one data file each, interleaved keys); the pyiceberg table."""
    catalog = pyiceberg_catalog(s3, catalog_dir)
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    written = catalog.create_table("db.events", schema=schema)
    for f in range(APPENDS):
        ids = [f + APPENDS * i for i in range(ROWS_PER_APPEND)]
        written.append(pa.table({"id": ids, "s": [f"v{i}" for i in ids]}, schema=schema))
    return catalog.load_table("db.events")


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_iceberg_table_on_s3_is_found_by_location_indexed_and_read(
    spark: Any, s3: S3Server, aws_env: dict[str, str], tmp_path: Path, work: Path
) -> None:
    """Newest metadata file by listing, no catalog of lakesieve's: pyiceberg's rows throughout."""
    if not S3A_JARS:
        pytest.skip(NO_CONNECTOR)
    catalog_dir = tmp_path / "writer-catalog"
    catalog_dir.mkdir()
    written = _iceberg_table(s3, catalog_dir)
    url = written.location()
    assert url.startswith(f"s3://{s3.bucket}/wh/")
    before = _keys(s3, "")
    table = lakesieve.open(url)
    assert (table.format, table.path) == ("iceberg", url)
    index_root = str(table.store.root)
    assert index_root == f"s3://{s3.bucket}/wh/db/.lakesieve/indexes/events", index_root
    table.build_index("id", type="sieve", spark=spark)
    plan = table.explain("id = 37")
    assert plan["locations_total"] == APPENDS
    assert 1 <= plan["locations_selected"] <= 2, plan
    native = written.scan().to_arrow()
    assert native.num_rows == APPENDS * ROWS_PER_APPEND
    wheres = ("id = 37", "id IN (5, 300)")
    _check_reads(spark, table, native, wheres, ("id", "s"))
    # nothing written on S3 but the index store (no SQLite catalog), nor in the cwd
    added = set(_keys(s3, "")) - set(before)
    assert added and all(k.startswith("wh/db/.lakesieve/indexes/events/") for k in added)
    assert set(before) <= set(_keys(s3, ""))
    assert os.listdir(work) == []
    assert sorted(os.listdir(catalog_dir)) == ["catalog.db"]


# ----------------------------------------------------------------- Hudi

#: zip, indexed column, index kind, conditions, columns compared, (condition, most locations)
HUDI_CASES = [
    pytest.param(
        "sample_table_cow_v8_simplekeygen_nonhivestyle.zip",
        "id",
        "sieve",
        ("id = 2", "id IN (1, 4)"),
        ("id", "name", "byteField"),
        ("id = 2", 1),
        id="cow",
    ),
    pytest.param(
        "quickstart_trips_table_mor_avro_v8_trips_8i3u1d.zip",
        "rider",
        "zonemap",
        ("rider = 'rider-I'", "rider IN ('rider-G', 'rider-C')"),
        ("uuid", "rider", "fare", "city"),
        ("rider = 'rider-I'", 1),
        id="mor-log",
    ),
]


def _upload(s3: S3Server, root: Path, prefix: str) -> str:
    client = s3.client()
    for f in sorted(root.rglob("*")):
        if f.is_file():
            client.upload_file(str(f), s3.bucket, f"{prefix}/{f.relative_to(root).as_posix()}")
    return s3.url(prefix)


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("zip_name", "column", "kind", "wheres", "columns", "pruned"), HUDI_CASES)
def test_hudi_table_on_s3_is_indexed_and_read(
    spark: Any,
    s3: S3Server,
    aws_env: dict[str, str],
    tmp_path: Path,
    work: Path,
    zip_name: str,
    column: str,
    kind: str,
    wheres: Sequence[str],
    columns: Sequence[str],
    pruned: tuple[str, int],
) -> None:
    """An Apache Hudi table uploaded with boto3, opened by URI: hudi-rs's rows throughout."""
    if not S3A_JARS:
        pytest.skip(NO_CONNECTOR)
    found = [z for z in fixture_zips() if z.name == zip_name]
    if not found:
        pytest.skip(f"fixture {zip_name} absent (../shared/fixtures/hudi)")
    root = unzip_fixture(found[0], tmp_path / "src")
    prefix = f"hudi/{Path(zip_name).stem}"
    url = _upload(s3, root, prefix)
    before = _keys(s3, prefix)
    table = lakesieve.open(url)
    assert (table.format, table.path) == ("hudi", url)
    assert str(table.store.root) == f"{url}/.lakesieve"
    table.build_index(column, type=kind, spark=spark)
    where, most = pruned
    plan = table.explain(where)
    assert plan["locations_total"] > most
    assert 1 <= plan["locations_selected"] <= most, plan
    native = hudi_rs_rows(url)  # hudi-rs on S3, from the AWS_* variables alone
    assert _sorted(native, columns) == _sorted(hudi_rs_rows(root), columns)
    _check_reads(spark, table, native, wheres, columns)
    added = set(_keys(s3, prefix)) - set(before)  # nothing beside the table but its indexes
    assert added and all(k.startswith(f"{prefix}/.lakesieve/") for k in added)
    assert set(before) <= set(_keys(s3, prefix))
    assert os.listdir(work) == []
