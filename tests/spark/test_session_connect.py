"""A real Spark Connect server on 127.0.0.1, and :func:`get_spark` as its client.

The server is the one pyspark ships (``SparkConnectServer``, in the
``spark-connect`` jar under ``pyspark/jars``), started with ``spark-submit``
on a free port. The client runs in a child Python, since this process holds
the suite's classic session. It must get a Connect session without one
``CANNOT_MODIFY_CONFIG`` warning, with lakesieve's runtime defaults set, and
with one warning naming a setting the user asked for that the server cannot
change; then write a Hudi table, build a Sieve index and read it pruned
through ``Table.read`` and the data source, rows equal to hudi-rs's filtered
by Spark SQL (on the same server). Skipped when ``java`` or the ``lakesieve[connect]`` extra is missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_JVM_OPTIONS, TEST_SPARK_CONF

ROOT = Path(__file__).resolve().parents[2]
WHERE = "k = 70"  # three rows: at most three of the four file groups

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed"),
    pytest.mark.skipif(
        importlib.util.find_spec("grpc") is None,
        reason="the Spark Connect client is not installed (pip install 'lakesieve[connect]')",
    ),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def connect_url(tmp_path: Path) -> Iterator[str]:
    """A Spark Connect server (``local[1]``) for the length of one test."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    log = tmp_path / "server.log"
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(home / "bin" / "spark-submit"), "--master", "local[1]"]
    command += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    command += ["--conf", f"spark.connect.grpc.binding.port={port}"]
    command += ["--conf", "spark.connect.grpc.binding.address=127.0.0.1"]
    command += ["--conf", "spark.ui.enabled=false", "--conf", "spark.driver.memory=1g"]
    # the tests' JVM and Spark settings (a first-tier JIT, the serial collector, no
    # whole-stage code generation): the server runs a few small jobs, as the suite does
    command += ["--driver-java-options", TEST_JVM_OPTIONS]
    for key, value in TEST_SPARK_CONF.items():
        if key.startswith("spark.sql.") or key == "spark.default.parallelism":
            command += ["--conf", f"{key}={value}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "Spark Connect server started" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(15)
                break


def test_a_connect_session_is_set_up_without_config_warnings_and_prunes(
    connect_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESIEVE_SPARK")}
    env.pop("SPARK_REMOTE", None)
    env.update(
        LAKESIEVE_SPARK_REMOTE=connect_url,
        LAKESIEVE_SPARK_CONF="spark.executor.memory=2g,spark.sql.shuffle.partitions=3",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark.test_session_connect", str(tmp_path / "job")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["connect"] and out["count"] == 5
    assert not [w for w in out["warnings"] if "CANNOT_MODIFY_CONFIG" in w], out["warnings"]
    assert "CANNOT_MODIFY_CONFIG" not in done.stderr
    # lakesieve's runtime defaults reached the server; the user's runtime setting too
    assert out["conf"] == {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.sql.shuffle.partitions": "3",
    }
    # the one static setting the user asked for is named, once; lakesieve's own are not
    refused = [w for w in out["warnings"] if "cannot change" in w]
    assert len(refused) == 1 and "spark.executor.memory" in refused[0], out["warnings"]
    assert "spark.driver.memory" not in refused[0] and "spark.ui" not in refused[0]
    # lakesieve itself works through the Connect session: write, build, pruned reads
    assert 0 < out["planned"] < out["units"], out
    assert out["expected"], "the predicate matches no row: the comparison would prove nothing"
    assert out["read"] == out["expected"]
    assert out["datasource"] == out["expected"]


def _client(work: Path) -> dict[str, Any]:
    """Start the session :func:`get_spark` makes from the environment; report what happened.

    Then write a Hudi table, build a Sieve index and read through ``Table.read`` and the
    data source, all on the Connect session.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from lakesieve.spark.session import get_spark

        spark = get_spark(conf={"spark.ui.showConsoleProgress": "true"})
        count = spark.range(5).count()
    import lakesieve

    from tests.tables import expected_rows, make_rows, sorted_rows, write_rows

    path = work / "events"
    write_rows(
        spark, path, make_rows(range(300), 3), mode="bulk_insert", file_groups=4, partition_by=()
    )
    table = lakesieve.open(path)
    table.build_index("k", type="sieve", spark=spark)
    frame = spark.read.format("lakesieve").option("prune", "true").load(str(path)).where(WHERE)
    keys = (
        "spark.sql.session.timeZone",
        "spark.sql.python.filterPushdown.enabled",
        "spark.sql.shuffle.partitions",
    )
    return {
        "connect": type(spark).__module__.startswith("pyspark.sql.connect"),
        "count": count,
        "warnings": [str(w.message) for w in caught],
        "conf": {k: spark.conf.get(k) for k in keys},
        "units": len(table.snapshot().units),
        "planned": len(table.plan(WHERE).units),
        "expected": [list(map(str, r)) for r in expected_rows(spark, path, WHERE)],
        "read": [list(map(str, r)) for r in sorted_rows(table.read(spark, where=WHERE))],
        "datasource": [list(map(str, r)) for r in sorted_rows(frame)],
    }


if __name__ == "__main__":
    print(json.dumps(_client(Path(sys.argv[1]))))
