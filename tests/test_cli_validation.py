"""Bad command-line values are refused before a table is touched or Spark starts.

Each case runs the CLI in a fresh interpreter and then asks pyspark itself
whether a SparkContext or its JVM gateway was ever created there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tables import make_rows, write_rows

pytestmark = pytest.mark.spark

PROBE = """
import json, sys
from lakesieve.cli import main
code = main(sys.argv[1:])
started = False
if "pyspark" in sys.modules:
    from pyspark import SparkContext
    started = SparkContext._gateway is not None or SparkContext._active_spark_context is not None
print("PROBE " + json.dumps({"code": code, "spark_started": started}))
"""


@pytest.fixture(scope="module")
def table_path(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("args") / "t"
    write_rows(spark, path, make_rows(range(0, 300), 1), mode="bulk_insert", file_groups=3)
    return path


def _run(*argv: str) -> tuple[dict[str, Any], str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, LAKESIEVE_SPARK_MASTER="local[1]"),
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert lines, proc.stdout + proc.stderr
    return json.loads(lines[-1][len("PROBE ") :]), proc.stderr


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


CASES = [
    (["index", "build", "{t}", "--column", "k", "--name", "../../evil"], "--name"),
    (["index", "build", "{t}", "--column", "k", "--name", "a\nb"], "--name"),
    (["index", "build", "{t}", "--column", "k", "--option", "novalue"], "--option"),
    (["index", "vacuum", "{t}", "--grace-seconds", "-5"], "--grace-seconds"),
    (["index", "vacuum", "{t}", "--grace-seconds", "nan"], "--grace-seconds"),
    (["index", "refresh", "{t}", "--grace-seconds", "inf"], "--grace-seconds"),
    (["index", "refresh", "{t}", "--max-deltas", "-1"], "--max-deltas"),
    (["index", "compact", "{t}", "--max-delta-rows", "-3"], "--max-delta-rows"),
    (["index", "refresh", "{t}", "--name", "/abs/path"], "--name"),
    (["query", "{t}", "--where", "k = 1", "--engine", "spark", "--max-mb", "nan"], "--max-mb"),
    (["query", "{t}", "--where", "k = 1", "--engine", "spark", "--limit", "-1"], "--limit"),
]


@pytest.mark.parametrize(
    ("argv", "flag"), CASES, ids=[" ".join(c[0][:2] + c[0][3:]) for c in CASES]
)
def test_bad_values_fail_before_spark(table_path: Path, argv: list[str], flag: str) -> None:
    before = _tree(table_path)
    result, err = _run(*[a.replace("{t}", str(table_path)) for a in argv])
    assert result == {"code": 2, "spark_started": False}, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lakesieve: error: ") and flag in lines[0], err
    assert _tree(table_path) == before


def test_the_probe_sees_spark_start(table_path: Path) -> None:
    """A good command that needs Spark is seen starting it (the probe can tell)."""
    result, err = _run(
        "index", "build", str(table_path), "--column", "k", "--type", "zonemap", "--name", "ok_name"
    )
    assert result == {"code": 0, "spark_started": True}, err


@pytest.mark.parametrize(
    "where",
    [
        "(" * 400 + "k = 1" + ")" * 400,
        "NOT " * 1000 + "k = 1",
        "k = 1 AND (" * 1000 + "k = 1" + ")" * 1000,
    ],
    ids=["parentheses", "nots", "nested-ands"],
)
@pytest.mark.parametrize("command", ["explain", "query"])
def test_deep_predicates_fail_in_one_line(table_path: Path, where: str, command: str) -> None:
    result, err = _run(command, str(table_path), "--where", where)
    assert result == {"code": 2, "spark_started": False}, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "deeper than" in lines[0], err[-2000:]
