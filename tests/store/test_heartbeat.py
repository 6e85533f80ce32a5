"""Heartbeat lines while a long step runs, and a quiet stderr on a real command.

:class:`~lakesieve.spark.heartbeat.Heartbeat` is driven by a fake clock and
a fake status tracker; its thread is run for real with a short interval.
The Spark tests read the running tasks of a real job from Spark's status
tracker, and run ``lakesieve write`` in a child process with stderr on a
pipe: its stderr holds the command's own step lines, heartbeat lines, and
none of the JVM's, log4j's or Spark's start-up lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import namedtuple
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve.spark.heartbeat import (
    DEFAULT_INTERVAL,
    INTERVAL_ENV,
    NO_JOB,
    NO_SESSION,
    Heartbeat,
    TaskCount,
    heartbeat_line,
    interval_from,
    running_tasks,
    spark_status,
    wanted,
)

from tests.conftest import child_spark_env

ROOT = Path(__file__).resolve().parents[2]

#: pyspark's ``SparkStageInfo``, as ``StatusTracker.getStageInfo`` returns it
StageInfo = namedtuple(
    "StageInfo",
    "stageId currentAttemptId name numTasks numActiveTasks numCompletedTasks numFailedTasks",
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeTracker:
    """A status tracker whose active stages the test sets."""

    def __init__(self) -> None:
        self.stages: dict[int, StageInfo] = {}

    def getActiveStageIds(self) -> list[int]:
        return sorted(self.stages)

    def getStageInfo(self, stage: int) -> StageInfo | None:
        return self.stages.get(stage)


class FakeSpark:
    def __init__(self, tracker: FakeTracker) -> None:
        self.sparkContext = self
        self._tracker = tracker

    def statusTracker(self) -> FakeTracker:
        return self._tracker


def test_running_tasks_add_up_the_active_stages() -> None:
    tracker = FakeTracker()
    spark = FakeSpark(tracker)
    assert running_tasks(spark) is None
    tracker.stages[3] = StageInfo(3, 0, "collect", 8, 2, 5, 0)
    tracker.stages[4] = StageInfo(4, 0, "save", 2, 1, 1, 0)
    assert running_tasks(spark) == TaskCount(done=6, total=10)


def test_no_task_count_where_spark_cannot_say() -> None:
    class Connect:  # a Spark Connect session has no SparkContext
        @property
        def sparkContext(self) -> Any:
            raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED]")

    assert running_tasks(Connect()) is None


def test_a_line_every_interval_never_more_often() -> None:
    clock, tracker = FakeClock(), FakeTracker()
    spark = FakeSpark(tracker)
    beat = Heartbeat("index build", lambda: spark_status(spark), print, 10.0, clock)
    assert beat.beat() is None and beat.due_in() == 10.0
    clock.now += 9.9
    assert beat.beat() is None
    clock.now += 0.1
    assert beat.beat() == "index build: no Spark job running, 10 s"
    assert beat.beat() is None  # printed: the next one is due 10 s later
    tracker.stages[0] = StageInfo(0, 0, "x", 8, 2, 3, 0)
    clock.now += 5
    assert beat.beat() is None
    clock.now += 5
    assert beat.beat() == "index build: 3 of 8 tasks done, 20 s"
    clock.now += 35  # a late caller gets one line, not the ones it missed
    assert beat.beat() == "index build: 3 of 8 tasks done, 55 s"
    assert beat.beat() is None
    assert beat.due_in() == pytest.approx(5.0)


def test_the_line_names_the_step_how_far_it_is_and_the_time() -> None:
    tracker = FakeTracker()
    assert spark_status(None) == NO_SESSION == "no Spark session yet"
    assert spark_status(FakeSpark(tracker)) == NO_JOB == "no Spark job running"
    tracker.stages[1] = StageInfo(1, 0, "x", 8, 2, 3, 0)
    assert spark_status(FakeSpark(tracker)) == "3 of 8 tasks done"
    assert heartbeat_line("write", "3 of 8 tasks done", 20.4) == "write: 3 of 8 tasks done, 20 s"
    assert heartbeat_line("query", NO_SESSION, 9.6) == "query: no Spark session yet, 10 s"


def test_no_heartbeat_on_a_terminal_beside_the_bar_or_when_turned_off() -> None:
    assert wanted(terminal=False, bar=False, interval=10.0)
    assert not wanted(terminal=True, bar=False, interval=10.0)
    assert not wanted(terminal=False, bar=True, interval=10.0)  # LAKESIEVE_SPARK_CONF forces it
    assert not wanted(terminal=False, bar=False, interval=0.0)
    assert interval_from({}) == DEFAULT_INTERVAL == 10.0
    assert interval_from({INTERVAL_ENV: "2.5"}) == 2.5
    assert interval_from({INTERVAL_ENV: "0"}) == 0.0
    assert interval_from({INTERVAL_ENV: "often"}) == DEFAULT_INTERVAL


def test_the_thread_prints_while_the_step_runs_and_stops_with_it() -> None:
    lines: list[str] = []
    beat = Heartbeat("write", lambda: "1 of 2 tasks done", lines.append, interval=0.05).start()
    deadline = time.monotonic() + 10
    while len(lines) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    beat.stop()
    stopped_with = len(lines)
    assert stopped_with >= 3
    assert all(re.fullmatch(r"write: 1 of 2 tasks done, \d+ s", line) for line in lines), lines
    time.sleep(0.3)
    assert len(lines) == stopped_with  # nothing after the step ended


def test_a_closed_stderr_ends_the_heartbeat_quietly() -> None:
    calls: list[str] = []

    def broken(line: str) -> None:
        calls.append(line)
        raise BrokenPipeError(32, "Broken pipe")

    beat = Heartbeat("write", lambda: NO_JOB, broken, interval=0.01).start()
    assert beat._thread is not None
    beat._thread.join(10)
    assert not beat._thread.is_alive()  # one failed write, then no more tries
    assert len(calls) == 1 and calls[0].startswith("write: no Spark job running, "), calls
    beat.stop()


@pytest.mark.spark
def test_running_tasks_of_a_real_job(spark: Any) -> None:
    from pyspark.sql import functions as F

    slow = F.udf(lambda x: time.sleep(1.0) or x, "bigint").asNondeterministic()
    frame = spark.range(0, 4, numPartitions=2).select(slow("id").alias("id"))
    job = threading.Thread(target=lambda: frame.agg(F.count("id")).first(), daemon=True)
    job.start()
    seen = None
    deadline = time.monotonic() + 120
    while seen is None and job.is_alive() and time.monotonic() < deadline:
        seen = running_tasks(spark)
        time.sleep(0.05)
    job.join(300)
    assert seen is not None and seen.total >= 2 and 0 <= seen.done <= seen.total, seen
    assert running_tasks(spark) is None  # the job is over


#: lines of a plain pyspark start that a lakesieve command must not print
NOISE = (
    "WARNING: Using incubator modules",
    "log4j",
    "Setting default log level",
    "setLogLevel",
    "loopback address",
    "SPARK_LOCAL_IP",
    "native-hadoop",
    " WARN ",
)

HEARTBEAT = re.compile(
    r"^write: (\d+ of \d+ tasks done|no Spark job running|no Spark session yet), \d+ s$"
)


@pytest.mark.spark
def test_a_real_write_prints_its_steps_and_heartbeats_and_no_start_up_noise(
    tmp_path: Path,
) -> None:
    """Also: stdout holds the ``--json`` result and nothing else, and stderr (a pipe)
    no progress bar, though the command asks Spark for one."""
    src = tmp_path / "src.parquet"
    target = tmp_path / "t"
    pq.write_table(pa.table({"id": list(range(200)), "k": [i % 17 for i in range(200)]}), src)
    env = child_spark_env(dict(os.environ, LAKESIEVE_SPARK_MASTER="local[1]"))
    env[INTERVAL_ENV] = "1"
    env.pop("SPARK_CONF_DIR", None)
    argv = ["write", str(target), "--from", str(src), "--format", "delta", "--json"]
    argv += ["--file-groups", "2", "--bucket-column", "id"]  # a layout: no warning line
    proc = subprocess.run(
        [sys.executable, "-m", "lakesieve.cli", *argv, "--record-key", "id"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    noisy = [ln for ln in lines if any(n in ln for n in NOISE)]
    assert noisy == [], noisy
    assert "[Stage " not in proc.stderr
    beats = [ln for ln in lines if HEARTBEAT.match(ln)]
    steps = [ln for ln in lines if not HEARTBEAT.match(ln)]
    assert beats, lines
    assert steps[0] == "starting Spark ..." and steps[-1].startswith("done in "), steps
    assert len(steps) == 4, steps  # start, ready, writing, done: nothing else
    assert f"writing 200 rows from {src} to {target} (upsert) ..." in steps
    assert "Spark start-up" in steps[-1]

    doc = json.loads(proc.stdout)  # stdout holds the result and nothing else
    assert doc["table"] == str(target) and doc["source_rows"] == 200 and doc["mode"] == "upsert"
    assert doc["spark_start_seconds"] > 0 and doc["write_seconds"] > 0
    from deltalake import DeltaTable

    table = DeltaTable(str(target))
    assert str(table.version()) == doc["instant"]
    assert table.to_pyarrow_table().num_rows == 200
    assert table.metadata().configuration.get("lakesieve.recordKey") == "id"
