"""Bad command-line values are refused before a table is touched or Spark starts.

The refusals run one after the other in one fresh interpreter, which asks
pyspark itself after each whether a SparkContext or its JVM gateway was ever
created there (:mod:`tests.cli_probe`); a good command run alone shows the
probe sees a start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_probe import Probed, run_batch, run_one
from tests.tables import make_rows, write_rows

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table_path(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("args") / "t"
    write_rows(spark, path, make_rows(range(0, 300), 1), mode="bulk_insert", file_groups=3)
    return path


def _run(*argv: str) -> tuple[dict[str, Any], str]:
    probed = run_one(*argv)
    return probed.result, probed.err


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
    (["index", "refresh", "{t}", "--rebuild-share", "-0.5"], "--rebuild-share"),
    (["index", "refresh", "{t}", "--rebuild-share", "nan"], "--rebuild-share"),
    (["index", "refresh", "{t}", "--name", "/abs/path"], "--name"),
    (["query", "{t}", "--where", "k = 1", "--engine", "spark", "--max-mb", "nan"], "--max-mb"),
    (["query", "{t}", "--where", "k = 1", "--engine", "spark", "--limit", "-1"], "--limit"),
]


DEEP = {
    "parentheses": "(" * 400 + "k = 1" + ")" * 400,
    "nots": "NOT " * 1000 + "k = 1",
    "nested-ands": "k = 1 AND (" * 1000 + "k = 1" + ")" * 1000,
}


def _filled(argv: list[str], table_path: Path) -> list[str]:
    return [a.replace("{t}", str(table_path)) for a in argv]


@pytest.fixture(scope="module")
def refused(table_path: Path) -> dict[str, Any]:
    """Every refusal of this module, run in one interpreter; the table's tree before and after."""
    commands = [_filled(argv, table_path) for argv, _flag in CASES]
    commands += [
        [command, str(table_path), "--where", where]
        for command in ("explain", "query")
        for where in DEEP.values()
    ]
    before = _tree(table_path)
    probed = run_batch(commands)
    return {
        "by_argv": {tuple(c): p for c, p in zip(commands, probed, strict=True)},
        "before": before,
        "after": _tree(table_path),
    }


@pytest.mark.parametrize(
    ("argv", "flag"), CASES, ids=[" ".join(c[0][:2] + c[0][3:]) for c in CASES]
)
def test_bad_values_fail_before_spark(
    table_path: Path, refused: dict[str, Any], argv: list[str], flag: str
) -> None:
    probed: Probed = refused["by_argv"][tuple(_filled(argv, table_path))]
    err = probed.err
    assert probed.result == {"code": 2, "spark_started": False}, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lakesieve: error: ") and flag in lines[0], err
    assert refused["after"] == refused["before"]


def test_the_probe_sees_spark_start(table_path: Path, tmp_path: Path) -> None:
    """A good command that needs Spark is seen starting it, alone and after a refusal in a batch."""
    import shutil

    path = tmp_path / "t"
    shutil.copytree(table_path, path)
    bad = _filled(CASES[0][0], path)
    good = ["index", "build", str(path), "--column", "k", "--type", "zonemap", "--name", "ok"]
    first, second = run_batch([bad, good])
    assert first.result == {"code": 2, "spark_started": False}, first.err
    assert second.result == {"code": 0, "spark_started": True}, second.err
    result, err = _run("index", "list", str(path))
    assert result == {"code": 0, "spark_started": False}, err


@pytest.mark.parametrize("where", list(DEEP), ids=list(DEEP))
@pytest.mark.parametrize("command", ["explain", "query"])
def test_deep_predicates_fail_in_one_line(
    table_path: Path, refused: dict[str, Any], where: str, command: str
) -> None:
    probed: Probed = refused["by_argv"][(command, str(table_path), "--where", DEEP[where])]
    err = probed.err
    assert probed.result == {"code": 2, "spark_started": False}, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "deeper than" in lines[0], err[-2000:]
