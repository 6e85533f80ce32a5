"""lakesieve on a real Spark standalone cluster started by the test on 127.0.0.1.

A master and one worker (one core) run from the scripts pyspark ships. A JVM
holds one SparkContext and the rest of the suite shares a ``local[2]`` one, so
the lakesieve side runs in a child Python (``python -m tests.spark.test_cluster``),
the way a user's program would: ``LAKESIEVE_SPARK_MASTER`` names the cluster,
``PYSPARK_PYTHON`` this interpreter. The job writes a Hudi table, builds a
Sieve index from a ``lakesieve.toml``, and reads through ``Table.read`` and
the ``lakesieve`` data source; the test compares both with hudi-rs's rows
filtered by Spark SQL. A second child asks for more cores per executor than
the worker has: Spark's "has not accepted any resources" warning must reach
its stderr rather than leave it waiting in silence.

Both tests are in the long tier (``pytest -m long``: a cluster's start and
its child jobs cost a minute of CI). Skipped only when ``java`` is absent. Every process the test starts runs in
its own process group, killed on the way out whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
WHERE = "k = 170"  # three rows: at most three of the six file groups
STARVED = "has not accepted any resources"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LAKESIEVE_SPARK_MASTER", "LAKESIEVE_SPARK_REMOTE", "LAKESIEVE_SPARK_CONF"):
        env.pop(key, None)
    env.pop("SPARK_REMOTE", None)
    env.update(
        SPARK_HOME=str(_spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(work / "logs"),
        SPARK_DAEMON_MEMORY="256m",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def _stop(proc: subprocess.Popen[Any]) -> None:
    """Stop ``proc`` and everything it started (its process group): TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # executors the worker left behind
            return
        except subprocess.TimeoutExpired:
            continue


def _daemon(
    cls: str, args: list[str], env: dict[str, str], log: Path, procs: list[subprocess.Popen[Any]]
) -> None:
    with log.open("wb") as out:
        procs.append(
            subprocess.Popen(
                [str(_spark_home() / "bin" / "spark-class"), cls, *args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        )


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            return int(json.load(resp).get("aliveworkers", 0))
    except (OSError, ValueError):
        return -1


def _wait(what: str, ready: Any, timeout: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in logs)
    raise AssertionError(f"{what} not ready after {timeout:.0f}s\n{tails}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A standalone master with one one-core worker, both on 127.0.0.1."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = _env(tmp_path)
    (tmp_path / "logs").mkdir()
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[Any]] = []
    try:
        _daemon(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
            env,
            master_log,
            procs,
        )
        _wait("master", lambda: _alive_workers(ui) == 0, 90, [master_log])
        work_dir = tmp_path / "worker"
        args = ["--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port"]
        _daemon(
            "org.apache.spark.deploy.worker.Worker",
            [*args, str(worker_ui), "--work-dir", str(work_dir), url],
            env,
            worker_log,
            procs,
        )
        _wait("worker", lambda: _alive_workers(ui) == 1, 90, [master_log, worker_log])
        yield {"url": url, "env": env, "logs": [master_log, worker_log]}
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _job_env(cluster: dict[str, Any], conf: str) -> dict[str, str]:
    env = dict(cluster["env"])
    env.update(LAKESIEVE_SPARK_MASTER=cluster["url"], LAKESIEVE_SPARK_CONF=conf)
    return env


@pytest.mark.long
def test_build_and_pruned_reads_on_a_standalone_cluster(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    conf = "spark.executor.memory=512m,spark.cores.max=1,spark.driver.memory=1g"
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark.test_cluster", str(tmp_path / "job")],
        env=_job_env(cluster, conf),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["master"] == cluster["url"]
    assert out["executors"], "no executor ran on the worker"
    assert out["indexes"] == ["k_sieve"]
    assert 0 < out["planned"] < out["units"], out  # the index pruned something
    assert out["expected"], "the predicate matches no row: the comparison would prove nothing"
    assert out["read"] == out["expected"]
    assert out["datasource"] == out["expected"]
    assert out["sql"] == out["expected"]  # a SQL query through the JVM data source
    assert f"selected {out['planned']} of {out['units']} locations" in out["sql_plan"]


@pytest.mark.long
def test_a_job_without_resources_says_so_on_stderr(cluster: dict[str, Any], tmp_path: Path) -> None:
    # the only worker has one core: an executor of two cores can never start
    conf = "spark.executor.cores=2,spark.starvation.timeout=1s,spark.driver.memory=1g"
    err = tmp_path / "stderr.txt"
    with err.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.test_cluster", "--starve"],
            env=_job_env(cluster, conf),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            start_new_session=True,
        )
        try:
            _wait("the starvation warning", lambda: STARVED in err.read_text(), 120, [err])
            assert proc.poll() is None  # still waiting for an executor, as expected
        finally:
            _stop(proc)


@pytest.mark.long
def test_an_s3_table_and_its_indexes_on_a_standalone_cluster(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """No shared disk: the table and its index store on a local S3 server, the executors reading through S3A."""
    from tests.conftest import S3A_JARS
    from tests.s3_server import moto_s3

    if not S3A_JARS:
        pytest.skip("no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)")
    import deltalake
    import pyarrow as pa

    jars = ":".join(str(j) for j in S3A_JARS)  # installed on every node, as on a cluster
    conf = (
        "spark.executor.memory=512m,spark.cores.max=1,spark.driver.memory=1g,"
        f"spark.driver.extraClassPath={jars},spark.executor.extraClassPath={jars}"
    )
    with moto_s3(process=True) as s3:
        url = s3.url("cluster/events")
        for f in range(16):
            ids = [f + 16 * i for i in range(40)]
            rows = pa.table({"id": ids, "s": [f"v{i}" for i in ids]})
            deltalake.write_deltalake(url, rows, mode="append", storage_options=s3.options)
        work = tmp_path / "cwd"
        work.mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "tests.spark.test_cluster", "--s3", url],
            env={**_job_env(cluster, conf), **s3.options},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
        listed = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix="cluster/events/.lakesieve/")
        stored = [o["Key"] for o in listed.get("Contents", [])]
    assert out["master"] == cluster["url"] and out["executors"], out
    assert out["store"] == f"{url}/.lakesieve"
    assert any(k.endswith(".arrow") for k in stored), stored
    assert 1 <= out["planned"] <= 2 and out["units"] == 16, out
    assert out["expected"], "the predicate matches no row: the comparison would prove nothing"
    assert out["read"] == out["expected"]
    assert out["datasource"] == out["expected"]
    assert out["sql"] == out["expected"]
    assert f"selected {out['planned']} of 16 locations" in out["sql_plan"]


# -- the child side -------------------------------------------------------------------------


def _job(work: Path) -> dict[str, Any]:
    """Write, index and read a Hudi table on the session ``LAKESIEVE_SPARK_MASTER`` names."""
    import lakesieve
    from lakesieve.config import build_declared, load_config
    from lakesieve.spark.session import get_spark

    from tests.tables import expected_rows, make_rows, sorted_rows, write_rows

    spark = get_spark()
    work.mkdir(parents=True)
    path = work / "events"
    write_rows(
        spark, path, make_rows(range(600), 7), mode="bulk_insert", file_groups=6, partition_by=()
    )
    (work / "lakesieve.toml").write_text(
        f'[spark]\nmaster = "{spark.sparkContext.master}"\n\n'
        '[tables.events]\npath = "events"\n\n'
        '[[tables.events.indexes]]\ncolumn = "k"\ntype = "sieve"\n'
    )
    built = build_declared(load_config(work / "lakesieve.toml"))
    table = lakesieve.open(path)
    ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")  # type: ignore[union-attr]
    frame = spark.read.format("lakesieve").load(str(path)).where(WHERE)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW events USING lakesieve OPTIONS (path '{path}')")
    return {
        "master": spark.sparkContext.master,
        "executors": [e for e in str(ids).split(",") if e],
        "indexes": sorted(b["index"] for b in built if "index" in b),
        "units": len(table.snapshot().units),
        "planned": len(table.plan(WHERE).units),
        "expected": [list(map(str, r)) for r in expected_rows(spark, path, WHERE)],
        "read": [list(map(str, r)) for r in sorted_rows(table.read(spark, where=WHERE))],
        "datasource": [list(map(str, r)) for r in sorted_rows(frame)],
        "sql": [
            list(map(str, r)) for r in sorted_rows(spark.sql(f"SELECT * FROM events WHERE {WHERE}"))
        ],
        "sql_plan": spark.sql(f"EXPLAIN SELECT * FROM events WHERE {WHERE}").first()[0],
    }


def _s3_job(url: str) -> dict[str, Any]:
    """Index and read the Delta table at ``url`` (on S3) on the cluster ``LAKESIEVE_SPARK_MASTER`` names."""
    import deltalake
    import lakesieve
    from lakesieve.spark.session import get_spark

    from tests.tables import sorted_rows, spark_where

    where = "id = 37"
    spark = get_spark()
    table = lakesieve.open(url)
    table.build_index("id", type="sieve", spark=spark)
    ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")  # type: ignore[union-attr]
    options = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    native = deltalake.DeltaTable(url, storage_options=options).to_pyarrow_table()
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW events USING lakesieve OPTIONS (path '{url}')")
    frame = spark.read.format("lakesieve").load(url).where(where)

    def rows(df: Any) -> list[list[str]]:
        return [list(map(str, r)) for r in sorted_rows(df, ("id", "s"))]

    return {
        "master": spark.sparkContext.master,
        "executors": [e for e in str(ids).split(",") if e],
        "store": str(lakesieve.open(url).store.root),
        "units": len(table.snapshot().units),
        "planned": len(table.plan(where).units),
        "expected": rows(spark_where(spark, native, where)),
        "read": rows(table.read(spark, where=where)),
        "datasource": rows(frame),
        "sql": rows(spark.sql(f"SELECT id, s FROM events WHERE {where}")),
        "sql_plan": spark.sql(f"EXPLAIN SELECT * FROM events WHERE {where}").first()[0],
    }


def _starve() -> None:
    """Run one job that can never get an executor; the parent reads our stderr and kills us."""
    from lakesieve.spark.session import get_spark

    get_spark().range(10).count()


if __name__ == "__main__":
    if sys.argv[1] == "--starve":
        _starve()
    elif sys.argv[1] == "--s3":
        print(json.dumps(_s3_job(sys.argv[2])))
    else:
        print(json.dumps(_job(Path(sys.argv[1]))))
