"""Ctrl-C during ``lakesieve index build``: one line, exit 130, nothing committed.

A terminal's Ctrl-C sends ``SIGINT`` to the whole process group: the
command's Python and Spark's JVM. The child runs in a session of its own,
the test waits until the heartbeat reports a Spark job with tasks, then
signals the group, as a terminal does.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

from tests.conftest import child_spark_env

FILES = 8
ROWS = 1_500_000


@pytest.mark.spark
def test_ctrl_c_in_index_build_prints_one_line_and_commits_nothing(tmp_path: Path) -> None:
    table = tmp_path / "t"
    for f in range(FILES):
        deltalake.write_deltalake(table, pa.table({"id": range(f, ROWS, FILES)}), mode="append")
    env = child_spark_env({**os.environ, "LAKESIEVE_HEARTBEAT_SECONDS": "0.5"})
    err = tmp_path / "stderr.txt"
    command = ["index", "build", str(table), "--column", "id", "--type", "exact"]
    with err.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lakesieve.cli", *command],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            start_new_session=True,  # its own process group, as a terminal's foreground job
        )
    try:
        deadline = time.monotonic() + 240
        while not re.search(r"\d+ of \d+ tasks done", err.read_text()):
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        rc = proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = err.read_text()
    assert rc == 130, text
    lines = [line for line in text.splitlines() if not line.startswith(("index build: ", "build"))]
    assert lines == ["lakesieve: index build interrupted; nothing was committed"], text
    assert not (table / ".lakesieve" / "_log").exists() or not any(
        (table / ".lakesieve" / "_log").glob("*.json")
    )
