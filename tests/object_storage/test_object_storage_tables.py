"""Tables on object storage: a Delta table on a local S3 server, indexed and read with Spark.

The table is written by delta-rs to a moto S3 server on 127.0.0.1 (a child
process: see :mod:`tests.s3_server`); lakesieve opens it by its ``s3://``
URI with only the standard ``AWS_*`` variables set, keeps its indexes in a
local folder (``index_root``: the index store on object storage is the next
step), and Spark reads the data files through Hadoop's S3A connector
(``.ci/fetch-s3a`` puts it on the tests' class path). Every read is checked
against delta-rs's own read filtered by Spark SQL, before and after a change
delta-rs makes and a refresh.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import lakesieve
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from lakesieve.config import build_declared, load_config
from lakesieve.files import paths
from lakesieve.maintenance.repair import check_store
from lakesieve.spark.object_storage import (
    ObjectStorageError,
    hadoop_settings,
    prepare,
    store_scheme,
)

from tests.conftest import S3A_JARS, child_spark_env
from tests.s3_server import S3Server, moto_s3
from tests.tables import spark_where

FILES = 16
ROWS_PER_FILE = 40


# ----------------------------------------------------------------- pure logic


def test_hadoop_settings_follow_the_standard_aws_variables() -> None:
    """Endpoint, path style, plain HTTP, region and keys become their S3A settings."""
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REGION": "eu-west-1",
        "HOME": "/root",
    }
    got = hadoop_settings({}, env)
    assert got["fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert got["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert got["fs.s3a.path.style.access"] == "true"
    assert got["fs.s3a.connection.ssl.enabled"] == "false"
    assert got["fs.s3a.endpoint.region"] == "eu-west-1"
    assert (got["fs.s3a.access.key"], got["fs.s3a.secret.key"]) == ("id", "secret")
    assert got["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    # a table's storage options win over the environment; a session token changes the provider
    table = {"AWS_REGION": "us-east-2", "AWS_SESSION_TOKEN": "tok"}
    got = hadoop_settings(table, env)
    assert got["fs.s3a.endpoint.region"] == "us-east-2"
    assert got["fs.s3a.session.token"] == "tok"
    assert got["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    # nothing given: S3A's own default chain (profiles, instance roles) decides
    bare = hadoop_settings({}, {})
    assert not any(k.startswith("fs.s3a.") for k in bare)


def test_store_scheme_names_object_stores_only() -> None:
    """``s3``/``s3a`` are S3; ``gs`` and ``abfss`` their own; paths and ``file:`` none."""
    assert store_scheme("s3://b/t") == store_scheme("s3a://b/t") == "s3"
    assert store_scheme("gs://b/t") == "gs"
    assert store_scheme("abfss://c@acct.dfs.core.windows.net/t") == "abfss"
    assert store_scheme("/data/t") is None
    assert store_scheme("file:///data/t") is None


def test_a_tables_storage_options_reach_pyarrows_s3_file_system() -> None:
    """Explicit options, or those of the scope a plugin recognises a table in, win over the environment."""
    options = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }
    fs, inner = paths.filesystem_and_path("s3://lake/t/_delta_log", options)
    assert isinstance(fs, pafs.S3FileSystem) and inner == "lake/t/_delta_log"
    assert fs.region == "eu-west-1"
    with paths.storage_scope({"AWS_REGION": "us-east-2"}):
        scoped, _ = paths.filesystem_and_path("s3a://lake/t")
    assert isinstance(scoped, pafs.S3FileSystem) and scoped.region == "us-east-2"
    local, where = paths.filesystem_and_path("/data/t", options)
    assert isinstance(local, pafs.LocalFileSystem) and where == "/data/t"


class _NoConnectorJvm:
    class java:
        class lang:
            class Class:
                @staticmethod
                def forName(name: str) -> None:
                    raise RuntimeError(f"java.lang.ClassNotFoundException: {name}")


class _FakeSession:
    _jsc = object()
    _jvm = _NoConnectorJvm()


def test_spark_without_the_connector_is_named_in_one_line() -> None:
    """A session whose JVM lacks S3A is refused before any work, with what to add."""
    with pytest.raises(ObjectStorageError) as info:
        prepare(_FakeSession(), "s3://lake/t")  # type: ignore[arg-type]
    text = str(info.value)
    assert "\n" not in text and "s3://lake/t" in text and "hadoop-aws" in text
    prepare(_FakeSession(), "/local/table")  # type: ignore[arg-type]  # nothing to do


def test_object_store_table_keeps_its_indexes_beside_it(
    s3: S3Server, aws_env: dict[str, str]
) -> None:
    """With no ``index_root``, the index store of an ``s3://`` table is ``<table>/.lakesieve`` there."""
    url = _delta_table(s3, "beside", files=2)
    table = lakesieve.open(url, options=_storage(s3))
    assert table.store.remote and str(table.store.root) == f"{url}/.lakesieve"
    local = lakesieve.open(url, index_root="/tmp/idx", options=_storage(s3))
    assert not local.store.remote and str(local.store.root) == "/tmp/idx"


# ----------------------------------------------------------------- a Delta table on S3


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


def _storage(s3: S3Server) -> dict[str, str]:
    """The server's settings as a table's storage options."""
    return {f"storage.{k}": v for k, v in s3.options.items()}


def _delta_table(s3: S3Server, name: str, files: int = FILES) -> str:
    """``files`` files written by delta-rs, each holding interleaved keys (no min/max pruning)."""
    url = s3.url(name)
    for f in range(files):
        ids = [f + FILES * i for i in range(ROWS_PER_FILE)]
        rows = pa.table({"id": ids, "s": [f"v{i}" for i in ids]})
        deltalake.write_deltalake(url, rows, mode="append", storage_options=s3.options)
    return url


def _native(url: str, options: dict[str, str], where: str, spark: Any) -> list[tuple[Any, ...]]:
    rows = deltalake.DeltaTable(url, storage_options=options).to_pyarrow_table()
    return sorted(tuple(r) for r in spark_where(spark, rows, where).select("id", "s").collect())


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.select("id", "s").collect())


def _index_keys(s3: S3Server, url: str) -> list[str]:
    """The object keys of the index store beside the table at ``url``."""
    prefix = url.split("/", 3)[3] + "/.lakesieve/"
    listed = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=prefix)
    return [o["Key"][len(prefix) :] for o in listed.get("Contents", [])]


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_delta_table_on_s3_is_indexed_queried_and_refreshed(
    spark: Any,
    s3: S3Server,
    aws_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Build, explain, read (Arrow, Spark, data source), change, refresh, compact, vacuum, check.

    The index store is on the S3 server beside the table; delta-rs's rows throughout.
    """
    if not S3A_JARS:
        pytest.skip("no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    url = _delta_table(s3, "events")
    table = lakesieve.open(url)
    assert table.path == url and table.store.remote
    for kind in ("sieve", "zonemap"):
        table.build_index("id", type=kind, spark=spark)
    keys = _index_keys(s3, url)
    assert "_log/00000000000000000000.json" in keys and any(k.endswith(".arrow") for k in keys)
    plan = table.explain("id = 37")
    assert plan["locations_total"] == FILES
    assert 1 <= plan["locations_selected"] <= 2, json.dumps(plan)
    for where in ("id = 37", "id IN (5, 300)", "id BETWEEN 100 AND 103"):
        want = _native(url, aws_env, where, spark)
        assert want
        got = table.read_arrow(where=where)
        assert sorted(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True)) == want
        assert _rows(table.read(spark, where=where)) == want
        source = spark.read.format("lakesieve").load(url)
        assert _rows(source.where(where)) == want
    # a SQL view, as a SQL user makes one: the native rows, the selection in EXPLAIN
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW s3_events USING lakesieve OPTIONS (path '{url}')")
    formatted = spark.sql("EXPLAIN FORMATTED SELECT s FROM s3_events WHERE id = 37").first()[0]
    assert f"selected {plan['locations_selected']} of {FILES} locations" in formatted
    viewed = spark.sql("SELECT id, s FROM s3_events WHERE id = 37")
    assert _rows(viewed) == _native(url, aws_env, "id = 37", spark)

    # a change made by delta-rs: an overwrite of one file's keys and a new file
    dt = deltalake.DeltaTable(url, storage_options=aws_env)
    dt.delete("id = 37")
    extra = pa.table({"id": [37, 5000], "s": ["new37", "new5000"]})
    deltalake.write_deltalake(url, extra, mode="append", storage_options=aws_env)
    changed = lakesieve.open(url)
    for where in ("id = 37", "id = 5000", "id = 38"):
        want = _native(url, aws_env, where, spark)
        assert _rows(changed.read(spark, where=where)) == want, ("stale", where)
    results = changed.refresh(spark=spark)
    assert len(results) == 2 and all(r.action not in ("skipped", "up to date") for r in results)
    compacted = changed.compact(spark=spark)
    assert compacted, "the refresh's deltas are folded into new bases"
    # files of a build killed before its commit (an hour old), and of one still running
    prefix = url.split("/", 3)[3] + "/.lakesieve/data/id_sieve"
    old, new = f"{int(time.time() * 1000) - 7_200_000}-0ld0", f"{int(time.time() * 1000)}-n3w0"
    for state in (old, new):
        s3.client().put_object(Bucket=s3.bucket, Key=f"{prefix}/{state}/x.arrow", Body=b"x")
    vacuumed = changed.vacuum(grace_seconds=3600)
    assert vacuumed.orphan_folders_removed == [f"id_sieve/{old}"], vacuumed
    assert any(k.startswith(f"data/id_sieve/{new}/") for k in _index_keys(s3, url))
    refreshed = lakesieve.open(url)
    assert check_store(refreshed)["ok"]
    for where in ("id = 37", "id = 5000", "id = 38"):
        want = _native(url, aws_env, where, spark)
        got = refreshed.read_arrow(where=where)
        assert sorted(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True)) == want
        assert _rows(refreshed.read(spark, where=where)) == want, ("refreshed", where)
    assert refreshed.explain("id = 5000")["locations_selected"] <= 2
    assert os.listdir(work) == []  # nothing written to the working folder


@pytest.mark.long  # CI keeps the API test above
@pytest.mark.spark
def test_a_config_file_declares_an_s3_table_its_storage_and_its_index_root(
    spark: Any, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lakesieve.toml``: a URL path, an ``index_root`` on S3, and ``storage_options`` alone.

    No ``AWS_*`` variable is set: the file's settings reach format detection,
    delta-rs, the index store and Spark's S3A connector.
    """
    for key in s3.options:
        monkeypatch.delenv(key, raising=False)
    url = _delta_table(s3, "declared")
    index_root = s3.url("declared-indexes")
    storage = ", ".join(f'{k} = "{v}"' for k, v in s3.options.items())
    config_file = tmp_path / "lakesieve.toml"
    config_file.write_text(
        f'[tables.events]\npath = "{url}/"\nindex_root = "{index_root}"\n'
        f"storage_options = {{ {storage} }}\n\n"
        '[[tables.events.indexes]]\ncolumn = "id"\ntype = "sieve"\n'
    )
    config = load_config(config_file)
    assert (config.tables[0].path, config.tables[0].index_root) == (url, index_root)
    assert [r["action"] for r in build_declared(config, spark)] == ["built"]
    table = lakesieve.open(url, index_root=index_root, options=_storage(s3))
    assert [d.name for d in table.indexes()] == ["id_sieve"]
    plan = table.explain("id = 17")
    assert 1 <= plan["locations_selected"] <= 2, json.dumps(plan)
    assert [r["action"] for r in build_declared(load_config(config_file), spark)] == ["up-to-date"]


@pytest.mark.long  # CI keeps the API test above
@pytest.mark.spark
def test_cli_on_a_delta_table_on_s3(
    spark: Any, s3: S3Server, aws_env: dict[str, str], tmp_path: Path
) -> None:
    """Each command its own process, only ``AWS_*`` set: build, list, explain, query, check.

    The index store is on the server beside the table; a local ``--index-root``
    is taken too (a read-only table's indexes on a local disk).
    """
    if not S3A_JARS:
        pytest.skip("no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)")
    url = _delta_table(s3, "cli")
    work = tmp_path / "cwd"
    work.mkdir()
    env = child_spark_env({**os.environ, **aws_env})
    cli = [sys.executable, "-m", "lakesieve.cli"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, *args], env=env, cwd=work, capture_output=True, text=True, timeout=300
        )

    built = run("index", "build", url, "--column", "id", "--type", "sieve")
    assert built.returncode == 0, built.stderr
    assert any(k.startswith("data/id_sieve/") for k in _index_keys(s3, url))
    listed = run("index", "list", url)
    assert listed.returncode == 0 and "id_sieve" in listed.stdout, listed.stderr
    explained = run("explain", url, "--where", "id = 37", "--json")
    assert explained.returncode == 0, explained.stderr
    plan = json.loads(explained.stdout)
    assert plan["locations_total"] == FILES and 1 <= plan["locations_selected"] <= 2
    index_root = str(tmp_path / "index")
    queried = run(
        "query", url, "--where", "id = 37", "--engine", "arrow", "--index-root", index_root
    )
    assert queried.returncode == 0, queried.stderr
    got = sorted(json.loads(line)["s"] for line in queried.stdout.splitlines() if line.strip())
    assert got == [r[1] for r in _native(url, aws_env, "id = 37", spark)]
    checked = run("index", "check", url)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert os.listdir(work) == []


@pytest.mark.long
@pytest.mark.spark
def test_builds_killed_at_any_point_leave_a_checked_store_and_exact_rows(
    spark: Any, s3: S3Server, aws_env: dict[str, str], tmp_path: Path
) -> None:
    """``kill -9`` of ``index build`` on an S3 store, earlier to later: ``index check`` passes."""
    url = _delta_table(s3, "killed")
    work = tmp_path / "cwd"
    work.mkdir()
    env = child_spark_env({**os.environ, **aws_env})
    cli = [sys.executable, "-m", "lakesieve.cli"]
    want = _native(url, aws_env, "id = 37", spark)
    finished = 0
    for n, delay in enumerate((1.0, 3.0, 6.0, 10.0, 15.0, 25.0)):
        build = [*cli, "index", "build", url, "--column", "id", "--name", f"k{n}"]
        proc = subprocess.Popen(
            build, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        proc.kill()
        finished += proc.wait() == 0
        checked = subprocess.run(
            [*cli, "index", "check", url], env=env, cwd=work, capture_output=True, text=True
        )
        assert checked.returncode == 0, (delay, checked.stdout, checked.stderr)
        got = lakesieve.open(url).read_arrow(where="id = 37")
        assert sorted(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True)) == want
    assert finished < 6, "every build finished before its kill: no kill was tested"
    assert os.listdir(work) == []


@pytest.mark.long
@pytest.mark.spark
def test_maintenance_killed_at_any_point_leaves_a_checked_store_and_exact_rows(
    spark: Any, s3: S3Server, aws_env: dict[str, str], tmp_path: Path
) -> None:
    """``kill -9`` of refresh, compact, vacuum and repair on an S3 store: check passes, rows exact."""
    url = _delta_table(s3, "maintained")
    work = tmp_path / "cwd"
    work.mkdir()
    env = child_spark_env({**os.environ, **aws_env})
    cli = [sys.executable, "-m", "lakesieve.cli"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], env=env, cwd=work, capture_output=True, text=True)

    assert run("index", "build", url, "--column", "id", "--type", "sieve").returncode == 0
    commands = [
        ("index", "refresh", url),
        ("index", "compact", url),
        ("index", "vacuum", url, "--grace-seconds", "0"),
        ("index", "repair", url),
    ]
    for n, command in enumerate(commands):
        for delay in (0.5, 2.0, 5.0):
            # a change by delta-rs first, so that refresh and compact have work to do
            extra = pa.table({"id": [10_000 + 10 * n + int(delay)], "s": [f"n{n}"]})
            deltalake.write_deltalake(url, extra, mode="append", storage_options=aws_env)
            proc = subprocess.Popen(
                [*cli, *command],
                env=env,
                cwd=work,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(delay)
            proc.kill()
            proc.wait()
            checked = run("index", "check", url)
            assert checked.returncode == 0, (command, delay, checked.stdout, checked.stderr)
            for where in ("id = 37", f"id = {10_000 + 10 * n + int(delay)}"):
                want = _native(url, aws_env, where, spark)
                got = lakesieve.open(url).read_arrow(where=where)
                rows = sorted(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True))
                assert rows == want, (command, delay, where)
    assert os.listdir(work) == []
