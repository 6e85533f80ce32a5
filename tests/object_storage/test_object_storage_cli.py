"""The command line on tables on object storage, tried as a new user would.

A moto S3 server on 127.0.0.1 holds a Delta table written by delta-rs, an
Iceberg table written by pyiceberg (found by location: lakesieve keeps no
catalog) and an Apache Hudi table uploaded with boto3. Only the standard
``AWS_*`` variables are set; each command runs in its own process from an
empty working folder, which stays empty. For each format:
``index build`` (Sieve and zone map), ``index list``, ``explain`` (a point
selects at most two locations), ``query --engine arrow``, a change made by
the format's own writer, ``index refresh``, ``index compact``,
``index vacuum`` and ``index check``. Every answer is compared with the
format's own reader filtered by Spark SQL, before and after the change.

Long tier: each format takes a minute or two of Spark starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.conftest import S3A_JARS, child_spark_env, fixture_zips, unzip_fixture
from tests.s3_server import S3Server, moto_s3, pyiceberg_catalog
from tests.tables import hudi_rs_rows, spark_where

NO_CONNECTOR = "no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)"
FILES = 16
ROWS_PER_FILE = 40
HUDI_ZIP = "quickstart_trips_table_mor_avro_v8_trips_8i3u1d.zip"
#: the last delta commit of the Hudi fixture: held back, then uploaded as "the change"
HUDI_LAST_INSTANT = "20251220210130911"


@dataclass
class Lake:
    """A table on the server, how its own library reads it, and a change its own writer makes."""

    url: str
    column: str
    #: a point, and conditions whose rows are compared
    point: str
    wheres: Sequence[str]
    columns: Sequence[str]
    #: the table's rows as the format's own reader sees them now
    native: Callable[[], pa.Table]
    #: makes a change with the format's own writer
    change: Callable[[], None]
    #: locations a point may select at most
    most: int = 2


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3(process=True) as server:
        yield server


def _delta(s3: S3Server, tmp: Path) -> Lake:
    import deltalake

    url = s3.url("delta/events")
    for f in range(FILES):
        ids = [f + FILES * i for i in range(ROWS_PER_FILE)]
        rows = pa.table({"id": ids, "s": [f"v{i}" for i in ids]})
        deltalake.write_deltalake(url, rows, mode="append", storage_options=s3.options)

    def change() -> None:
        deltalake.DeltaTable(url, storage_options=s3.options).delete("id = 37")
        extra = pa.table({"id": [37, 5000], "s": ["new37", "new5000"]})
        deltalake.write_deltalake(url, extra, mode="append", storage_options=s3.options)

    return Lake(
        url=url,
        column="id",
        point="id = 37",
        wheres=("id = 37", "id IN (5, 300)", "id = 5000"),
        columns=("id", "s"),
        native=lambda: deltalake.DeltaTable(url, storage_options=s3.options).to_pyarrow_table(),
        change=change,
    )


def _iceberg(s3: S3Server, tmp: Path) -> Lake:
    catalog_dir = tmp / "writer-catalog"  # the writer's catalog; lakesieve never sees it
    catalog_dir.mkdir()
    catalog = pyiceberg_catalog(s3, catalog_dir)
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    written = catalog.create_table("db.events", schema=schema)
    for f in range(FILES):
        ids = [f + FILES * i for i in range(ROWS_PER_FILE)]
        written.append(pa.table({"id": ids, "s": [f"v{i}" for i in ids]}, schema=schema))

    def change() -> None:
        table = catalog.load_table("db.events")
        table.delete("id = 37")
        extra = pa.table({"id": [37, 5000], "s": ["new37", "new5000"]}, schema=schema)
        catalog.load_table("db.events").append(extra)

    return Lake(
        url=written.location(),
        column="id",
        point="id = 37",
        wheres=("id = 37", "id IN (5, 300)", "id = 5000"),
        columns=("id", "s"),
        native=lambda: catalog.load_table("db.events").scan().to_arrow(),
        change=change,
    )


def _hudi(s3: S3Server, tmp: Path) -> Lake:
    found = [z for z in fixture_zips() if z.name == HUDI_ZIP]
    if not found:
        pytest.skip(f"fixture {HUDI_ZIP} absent (../shared/fixtures/hudi)")
    root = unzip_fixture(found[0], tmp / "src")
    prefix = "hudi/trips"
    client = s3.client()
    files = sorted(f for f in root.rglob("*") if f.is_file())

    def held_back(f: Path) -> bool:
        """The last delta commit's instant files and the log file it wrote (data timeline)."""
        relative = f.relative_to(root).as_posix()
        return HUDI_LAST_INSTANT in f.name and not relative.startswith(".hoodie/metadata/")

    def upload(chosen: list[Path]) -> None:
        for f in chosen:
            client.upload_file(str(f), s3.bucket, f"{prefix}/{f.relative_to(root).as_posix()}")

    later = [f for f in files if held_back(f)]
    assert any(f.name.endswith(".deltacommit") for f in later), later
    assert any(".log." in f.name for f in later), later
    # the data of the last commit may already be there (a writer mid-commit):
    # only its completed instant makes it part of the table
    upload([f for f in files if not held_back(f) or ".log." in f.name])

    def change() -> None:
        upload([f for f in later if ".log." not in f.name])

    return Lake(
        url=s3.url(prefix),
        column="rider",
        point="rider = 'rider-I'",
        wheres=("rider = 'rider-I'", "rider IN ('rider-G', 'rider-C')", "rider = 'rider-J'"),
        columns=("uuid", "rider", "fare", "city"),
        native=lambda: hudi_rs_rows(s3.url(prefix)),
        change=change,
        most=1,
    )


MAKERS = {"delta": _delta, "iceberg": _iceberg, "hudi": _hudi}


def _cli(
    env: dict[str, str], cwd: Path, *args: str, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """``lakesieve <args>`` in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "lakesieve.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _wanted(spark: Any, lake: Lake, where: str) -> list[tuple[Any, ...]]:
    rows = spark_where(spark, lake.native(), where).select(*lake.columns).collect()
    return sorted(tuple(r) for r in rows)


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_cli_on_a_table_on_s3_as_a_new_user(
    spark: Any, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Every command in its own process, only ``AWS_*`` set; the format's own rows throughout."""
    if not S3A_JARS:
        pytest.skip(NO_CONNECTOR)
    for key, value in s3.options.items():
        monkeypatch.setenv(key, value)  # the format's own readers and writers in this process
    lake = MAKERS[fmt](s3, tmp_path)
    prefix = lake.url.split("/", 3)[3]
    work = tmp_path / "cwd"
    work.mkdir()
    env = child_spark_env({**os.environ, **s3.options})

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = _cli(env, work, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def index_keys() -> list[str]:
        pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket=s3.bucket)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        return [k for k in keys if "/.lakesieve/" in k and k.startswith(prefix.rsplit("/", 1)[0])]

    def check_queries(stage: str) -> None:
        for where in lake.wheres:
            out = run("query", lake.url, "--where", where, "--engine", "arrow").stdout
            got = [json.loads(line) for line in out.splitlines() if line.strip()]
            rows = sorted(tuple(r[c] for c in lake.columns) for r in got)
            assert rows == _wanted(spark, lake, where), (stage, where)

    for kind in ("sieve", "zonemap"):
        run("index", "build", lake.url, "--column", lake.column, "--type", kind)
    stored = index_keys()
    assert any(k.endswith(".arrow") for k in stored) and any("/_log/" in k for k in stored)
    listed = run("index", "list", lake.url).stdout
    assert f"{lake.column}_sieve" in listed and f"{lake.column}_zonemap" in listed, listed
    plan = json.loads(run("explain", lake.url, "--where", lake.point, "--json").stdout)
    assert plan["locations_total"] > lake.most, plan
    assert 1 <= plan["locations_selected"] <= lake.most, plan
    check_queries("before the change")

    before = _wanted(spark, lake, "true")
    lake.change()
    assert _wanted(spark, lake, "true") != before, "the change changed no row"
    check_queries("stale indexes after the change")
    refreshed = json.loads(run("index", "refresh", lake.url, "--json").stdout)
    assert len(refreshed) == 2, refreshed
    assert all(r["action"] not in ("skipped", "up to date") for r in refreshed), refreshed
    check_queries("after the refresh")
    compacted = json.loads(run("index", "compact", lake.url, "--max-deltas", "0", "--json").stdout)
    # an index the refresh left with deltas is folded; one it rebuilt has nothing to fold
    left_deltas = {r["index"] for r in refreshed if r["action"] == "delta"}
    folded = {r["index"] for r in compacted if r["action"] in ("compacted", "rebuilt")}
    assert folded == left_deltas, (refreshed, compacted)
    run("index", "vacuum", lake.url, "--grace-seconds", "0")
    checked = run("index", "check", lake.url, "--json")
    assert json.loads(checked.stdout)["ok"], checked.stdout
    check_queries("after compaction and vacuum")
    after = json.loads(run("explain", lake.url, "--where", lake.point, "--json").stdout)
    assert 1 <= after["locations_selected"] <= lake.most, after
    assert os.listdir(work) == []  # nothing written to the working folder


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["delta", "hudi"])
def test_write_creates_and_upserts_a_table_on_s3(
    spark: Any, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """``lakesieve write`` to an ``s3://`` URL: the table is on the server, read back by its own reader."""
    import pyarrow.parquet as pq

    if not S3A_JARS:
        pytest.skip(NO_CONNECTOR)
    for key, value in s3.options.items():
        monkeypatch.setenv(key, value)
    work = tmp_path / "cwd"
    work.mkdir()
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    pq.write_table(pa.table({"id": list(range(50)), "s": [f"v{i}" for i in range(50)]}), first)
    pq.write_table(pa.table({"id": [3, 70], "s": ["changed", "new"]}), second)
    url = s3.url(f"written/{fmt}")
    env = child_spark_env({**os.environ, **s3.options})

    def write(source: Path, *extra: str) -> None:
        done = _cli(env, work, "write", url, "--from", str(source), *extra)
        assert done.returncode == 0, done.stderr
        assert url in done.stdout, done.stdout

    write(first, "--format", fmt, "--record-key", "id", "--mode", "insert")
    write(second)  # an upsert by the key the table keeps
    if fmt == "delta":
        import deltalake

        rows = deltalake.DeltaTable(url, storage_options=s3.options).to_pyarrow_table()
    else:
        rows = hudi_rs_rows(url)
    got = sorted(zip(rows["id"].to_pylist(), rows["s"].to_pylist(), strict=True))
    want = sorted({**{i: f"v{i}" for i in range(50)}, 3: "changed", 70: "new"}.items())
    assert got == want
    assert os.listdir(work) == []  # nothing written to the working folder


def test_write_refuses_an_iceberg_table_on_s3_in_one_line(s3: S3Server, tmp_path: Path) -> None:
    """No SQLite catalog on an object store: refused before Spark starts, nothing written."""
    import pyarrow.parquet as pq

    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), source)
    url = s3.url("written/iceberg")
    args = ["write", url, "--from", str(source), "--format", "iceberg", "--record-key", "id"]
    done = _cli({**os.environ, **s3.options}, tmp_path, *args, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("lakesieve: error")]
    assert len(lines) == 1 and "Iceberg" in lines[0] and url in lines[0], done.stderr
    assert "Spark ready" not in done.stderr
    listed = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix="written/iceberg")
    assert not listed.get("Contents"), listed
    assert sorted(os.listdir(tmp_path)) == ["rows.parquet"]


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cli_explain_selects_one_of_sixteen_file_groups_of_an_uploaded_hudi_table(
    spark: Any, s3: S3Server, tmp_path: Path
) -> None:
    """A Hudi table of 16 file groups uploaded with boto3: a point selects at most 2 of 16."""
    from tests.tables import make_rows, write_rows

    if not S3A_JARS:
        pytest.skip(NO_CONNECTOR)
    local = tmp_path / "events"
    write_rows(spark, local, make_rows(range(1600), 3), mode="bulk_insert", file_groups=16)
    prefix = "hudi/sixteen"
    client = s3.client()
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        client.upload_file(str(f), s3.bucket, f"{prefix}/{f.relative_to(local).as_posix()}")
    url = s3.url(prefix)
    work = tmp_path / "cwd"
    work.mkdir()
    env = child_spark_env({**os.environ, **s3.options})

    def run(*args: str) -> str:
        done = _cli(env, work, *args)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    run("index", "build", url, "--column", "k", "--type", "sieve")
    plan = json.loads(run("explain", url, "--where", "k = 170", "--json"))
    assert plan["locations_total"] == 16 and 1 <= plan["locations_selected"] <= 2, plan
    out = run("query", url, "--where", "k = 170", "--engine", "arrow")
    got = sorted((r["id"], r["s"]) for r in (json.loads(x) for x in out.splitlines() if x.strip()))
    native = spark_where(spark, hudi_rs_rows(local), "k = 170").select("id", "s").collect()
    assert got == sorted(tuple(r) for r in native) and got
    assert os.listdir(work) == []
