"""Run ``lakesieve`` commands in a fresh interpreter and ask pyspark there whether Spark started.

:func:`run_one` runs one command per interpreter. :func:`run_batch` runs many
commands that must each stop before Spark, one after the other in a single
interpreter (an interpreter start costs about a second, and the tests run
dozens of such commands): each command's exit code, stdout and stderr are
kept apart (and nothing may reach the interpreter's own stderr around
that capture), and after each one the probe asks pyspark whether a
SparkContext or its JVM gateway exists. A command that started Spark marks
itself and every later one as started, so the first marked is the culprit.
``test_cli_validation.py::test_the_probe_sees_spark_start`` proves the probe
sees a start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from tests.conftest import child_spark_env

_STARTED = """
def _started():
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext
    return SparkContext._gateway is not None or SparkContext._active_spark_context is not None
"""

ONE = (
    "import json, sys\n"
    + _STARTED
    + """
from lakesieve.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("PROBE " + json.dumps({"code": code, "spark_started": _started()}))
"""
)

BATCH = (
    "import contextlib, io, json, sys\n"
    + _STARTED
    + """
from lakesieve.cli import main
results = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append(
        {"code": code, "spark_started": _started(), "out": out.getvalue(), "err": err.getvalue()}
    )
print("PROBE " + json.dumps(results))
"""
)


@dataclass(frozen=True)
class Probed:
    """One command's outcome: ``result`` is ``{"code": ..., "spark_started": ...}``."""

    result: dict[str, Any]
    out: str
    err: str


def _env() -> dict[str, str]:
    return child_spark_env(dict(os.environ, LAKESIEVE_SPARK_MASTER="local[1]"))


def _probe_line(proc: subprocess.CompletedProcess[str]) -> tuple[Any, str]:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert lines, proc.stdout + proc.stderr
    out = "\n".join(ln for ln in proc.stdout.splitlines() if not ln.startswith("PROBE "))
    return json.loads(lines[-1][len("PROBE ") :]), out


def run_one(*argv: str) -> Probed:
    """``lakesieve <argv>`` alone in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", ONE, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    result, out = _probe_line(proc)
    return Probed(result, out, proc.stderr)


def run_batch(commands: list[list[str]]) -> list[Probed]:
    """Each of ``commands`` (argv lists), in order, in one fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", BATCH],
        input=json.dumps(commands),
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    results, _ = _probe_line(proc)
    assert len(results) == len(commands), proc.stderr[-3000:]
    # what went around the per-command capture (a handler bound to the real stderr)
    assert not proc.stderr.strip(), proc.stderr[-3000:]
    return [
        Probed({"code": r["code"], "spark_started": r["spark_started"]}, r["out"], r["err"])
        for r in results
    ]
