"""The Spark JVM the CLI starts dies with the CLI, even when the CLI is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tables import make_rows, write_rows

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
]


def _children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc``."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gateway_jvm(pid: int, timeout: float) -> int:
    """The pid of the driver JVM below ``pid`` once it runs (``java ... SparkSubmit``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in _descendants(pid):
            line = _cmdline(child)
            launcher = (
                "org.apache.spark.launcher.Main" in line
            )  # builds the command line, then exits
            if (
                "java" in line.split(" ", 1)[0]
                and "org.apache.spark.deploy.SparkSubmit" in line
                and not launcher
            ):
                return child
        time.sleep(0.1)
    raise AssertionError(f"no Spark JVM started below process {pid} within {timeout}s")


def _kill_cli_and_wait(proc: subprocess.Popen[bytes], jvm: int, seconds: float) -> bool:
    """SIGKILL the CLI; whether its JVM is still alive ``seconds`` later (then it is killed here)."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + seconds
    while _alive(jvm) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(jvm)
    if alive:
        os.kill(jvm, signal.SIGKILL)
    return alive


@pytest.mark.parametrize("frozen", [False, True], ids=["busy", "frozen"])
def test_jvm_dies_when_the_cli_is_killed(spark: Any, tmp_path: Path, frozen: bool) -> None:
    """Killed during the build job; and, frozen (SIGSTOP) first, a JVM that cannot notice its stdin closing."""
    path = tmp_path / "t"
    write_rows(spark, path, make_rows(range(0, 3000), 1), mode="bulk_insert", file_groups=8)
    env = dict(os.environ, LAKESIEVE_SPARK_MASTER="local[1]")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lakesieve.cli",
            "index",
            "build",
            str(path),
            "--column",
            "k",
            "--type",
            "exact",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        jvm = _gateway_jvm(proc.pid, timeout=120)
        time.sleep(3.0)
        assert proc.poll() is None, "the build finished before it could be killed"
        if frozen:
            os.kill(jvm, signal.SIGSTOP)
    except BaseException:
        proc.kill()
        raise
    alive = _kill_cli_and_wait(proc, jvm, 5.0)
    assert not alive, f"the Spark JVM {jvm} outlived its killed CLI by more than 5 s"
