"""Spark's console progress bar: on a terminal's stderr only, never on stdout.

A child Python asks :func:`get_spark` for the bar, as the long ``lakesieve``
commands do, and runs a stage that lasts a few seconds (Spark draws the bar
for stages older than half a second: four one-second tasks on one core). With stderr on a pseudo-terminal the
bar is drawn there and stdout holds only the program's JSON; with stderr on
a pipe no bar is drawn at all.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pseudo-terminals"),
]

ROOT = Path(__file__).resolve().parents[2]
BAR = b"[Stage "


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESIEVE_SPARK")}
    env.pop("SPARK_REMOTE", None)
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(stderr_on_terminal: bool) -> tuple[dict[str, Any], bytes]:
    """Run the child; return its JSON and everything it wrote to stderr."""
    command = [sys.executable, "-m", "tests.spark.test_session_progress"]
    if not stderr_on_terminal:
        done = subprocess.run(command, env=_env(), cwd=ROOT, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout), done.stderr
    leader, follower = pty.openpty()
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen(
            command, env=_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=follower
        )
        os.close(follower)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, bytes(seen)[-3000:]
    finally:
        reader.join(10)
        os.close(leader)
    return json.loads(out), bytes(seen)


@pytest.mark.long
def test_the_bar_is_drawn_on_a_terminal_stderr_and_stdout_stays_json() -> None:
    out, err = _run(stderr_on_terminal=True)
    assert out == {"rows": 4, "progress": "true"}
    assert BAR in err


@pytest.mark.long  # CI: test_heartbeat.py's real write asks for the bar with stderr on a pipe
def test_no_bar_when_stderr_is_a_pipe() -> None:
    out, err = _run(stderr_on_terminal=False)
    assert out == {"rows": 4, "progress": "false"}
    assert BAR not in err


def _child() -> dict[str, Any]:
    """Ask for the bar and run a stage of four one-second tasks on one core."""
    import time

    from lakesieve.spark.session import PROGRESS_KEY, get_spark
    from pyspark.sql import functions as F

    spark = get_spark(master="local[1]", conf={PROGRESS_KEY: "true", "spark.driver.memory": "1g"})
    # counting the UDF's values (not the rows) keeps the optimizer from pruning the UDF away:
    # the stage then lasts about 4 s on a quiet machine too
    slow = F.udf(lambda x: time.sleep(1.0) or x, "bigint").asNondeterministic()
    frame = spark.range(0, 4, numPartitions=4).select(slow("id").alias("id"))
    rows = frame.agg(F.count("id")).first()[0]
    return {"rows": rows, "progress": spark.conf.get(PROGRESS_KEY)}


if __name__ == "__main__":
    print(json.dumps(_child()))
