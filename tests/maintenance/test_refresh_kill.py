"""Kill tests: ``index refresh`` and ``index compact`` killed by SIGKILL at random points.

Each run works on a fresh copy of one table. A first, unkilled run measures
how long the command holds the store's writers' lock (its work: Spark's
start, the reads, the files, the commits); later runs are killed at random
moments within that span (most of them late, where files are written and
the log committed), and each kill must land inside the work: the killed
process still holds the lock the moment before, and dies of the signal.
After every kill the index must still be readable and correct, a rerun must
finish the job, and vacuum must clear what the killed run left.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.conftest import child_spark_env
from tests.tables import (
    expected_rows,
    make_rows,
    rows_by_location,
    sorted_rows,
    true_locations_each,
    write_rows,
)

#: kills per command: one of ``index refresh`` in CI; in the long tier (``pytest -m long``)
#: one of ``index compact`` and more of each (``LAKESIEVE_KILLS=N`` sets that count)
LONG_KILLS = int(os.environ.get("LAKESIEVE_KILLS", "4"))
QUERIES = ("k = 5", "k = 215", "k in (1, 100, 205)", "k between 30 and 40", "id = 620")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "lakesieve.cli", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("LAKESIEVE_SPARK_MASTER", "local[1]")
    return child_spark_env(env)


def _at_work(root: Path) -> bool:
    """Whether another process holds the writers' lock of the index root ``root`` (a refresh or compact at work)."""
    try:
        fd = os.open(root / "_lock", os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # our own lock, when we got it, goes with the file
    return False


def _start(args: list[str], root: Path, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start ``args`` (stderr to ``log``); once it holds the lock of ``root``, return it and when it took it."""
    started = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
    while not _at_work(root):
        assert proc.poll() is None, (
            f"{args} ended before it took the store's lock: {log.read_text()}"
        )
        assert time.perf_counter() - started < 300, f"{args} never took the store's lock"
        time.sleep(0.02)
    return proc, time.perf_counter()


def _check(spark: Any, table: Table) -> None:
    for where, truth in true_locations_each(spark, QUERIES, rows_by_location(table)).items():
        assert truth <= {u.location for u in table.plan(where).units}, where
    assert sorted_rows(table.read(spark, "k = 215")) == expected_rows(spark, table.path, "k = 215")


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table whose indexes are one instant behind, with a delta waiting in the chain."""
    path = tmp_path_factory.mktemp("kill") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    table = open_table(path)
    for typ in ("sieve", "exact"):
        table.build_index("k", type=typ, spark=spark)
    write_rows(spark, path, make_rows(range(600, 660), 2), mode="upsert")
    # one delta state in each chain, for compaction to fold (however small the base)
    table.refresh(spark=spark, policy=RefreshPolicy(max_delta_share=math.inf))
    write_rows(spark, path, make_rows(range(0, 40), 3, version=2), mode="delete")
    write_rows(spark, path, make_rows(range(660, 700), 4), mode="upsert")
    return path


def _copy(source: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest)
    return dest


@pytest.mark.parametrize(
    ("command", "kills"),
    [
        ("refresh", 1),
        pytest.param("compact", 1, marks=pytest.mark.long),
        pytest.param("refresh", LONG_KILLS, marks=pytest.mark.long),
        pytest.param("compact", LONG_KILLS, marks=pytest.mark.long),
    ],
)
def test_killed_at_random_points(
    spark: Any, source: Path, tmp_path: Path, command: str, kills: int
) -> None:
    rng = random.Random(f"kill-{command}-{kills}")
    probe = _copy(source, tmp_path / "probe")
    log = tmp_path / "stderr.txt"
    proc, locked = _start(_cli("index", command, str(probe)), probe / ".lakesieve", log)
    while _at_work(probe / ".lakesieve"):
        time.sleep(0.02)
    span = time.perf_counter() - locked  # how long the command holds the lock: its work
    assert proc.wait() == 0, log.read_text()
    completed = open_table(probe)
    latest = completed.timeline()[-1].id
    expected_heads = {d.name: (d.latest().instant, d.latest().kind) for d in completed.indexes()}
    if command == "refresh":
        assert all(inst == latest for inst, _ in expected_heads.values())
    else:
        assert all(kind == "base" for _, kind in expected_heads.values())

    for i in range(kills):
        copy = _copy(source, tmp_path / f"run{i}")
        before = {d.name: d.latest().state_id for d in open_table(copy).indexes()}
        # a run faster than the probe may finish first: run it again and kill it earlier
        # (a small change is refreshed on the driver in well under a second)
        for attempt in range(10):
            if attempt:
                copy = _copy(source, copy)
            proc, locked = _start(_cli("index", command, str(copy)), copy / ".lakesieve", log)
            at = span * rng.uniform(0.35, 0.95) * 0.7**attempt
            time.sleep(max(0.0, locked + at - time.perf_counter()))
            inside = _at_work(copy / ".lakesieve")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if inside:
                break
        # the kill landed inside the work: the lock was held just before, and the signal killed it
        assert inside, f"kill {i}: {command} finished before every kill"
        assert proc.returncode == -signal.SIGKILL

        table = open_table(copy)
        for definition in table.indexes():  # the previous state or the new one, never half of one
            head = definition.latest()
            assert head is not None
            assert (
                head.state_id == before[definition.name]
                or (head.instant, head.kind) == expected_heads[definition.name]
            )
            definition.chain(head)
            table.store.read_files(head)
        _check(spark, table)

        if command == "refresh":
            table.refresh(spark=spark)
        else:
            table.compact(spark=spark)
        rerun = open_table(copy)
        assert {
            d.name: (d.latest().instant, d.latest().kind) for d in rerun.indexes()
        } == expected_heads
        rerun.vacuum(grace_seconds=0)
        referenced = {s.state_id for d in rerun.indexes() for s in d.by_id.values()}
        on_disk = {p.name for d in rerun.store.data_dir.iterdir() for p in d.iterdir()}
        assert on_disk == referenced
        assert not list(rerun.store.log_dir.glob(".tmp-*"))
        _check(spark, rerun)
