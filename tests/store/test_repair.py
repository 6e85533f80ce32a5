"""Every broken index store is visible in ``index list`` / ``index check`` and repaired from the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.spark.session import get_spark

from tests.tables import make_rows, rows_by_location, true_locations_each, write_rows

pytestmark = pytest.mark.spark

WHERE = ("k >= 200", "k IN (5, 150, 210)", "k BETWEEN 40 AND 60")


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sieve (commit 0) and exact (commit 1) indexes at the first instant; then a second table commit."""
    path = tmp_path_factory.mktemp("repair") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    table = lakesieve.open(path)
    table.build_index("k", type="sieve", spark=spark)
    table.build_index("k", type="exact", spark=spark)
    write_rows(spark, path, make_rows(range(600, 700), 2), mode="upsert")
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(source, dest)
    return dest


def _health(path: Path, capsys: Any) -> dict[str, str]:
    capsys.readouterr()
    assert main(["index", "list", str(path), "--json"]) == 0
    return {r["name"]: r["health"] for r in json.loads(capsys.readouterr().out)}


def _assert_exact(path: Path) -> None:
    table = lakesieve.open(path)
    for where, truth in true_locations_each(get_spark(), WHERE, rows_by_location(table)).items():
        assert truth and truth <= {u.location for u in table.plan(where).units}, where


def _log(path: Path) -> Path:
    return path / ".lakesieve" / "_log"


def test_a_garbage_commit_blocks_writers_until_the_cli_repairs_it(
    table_path: Path, capsys: Any
) -> None:
    (_log(table_path) / f"{2:020d}.json").write_text("{not json")
    t = str(table_path)
    for argv in (
        ["index", "build", t, "--column", "k"],
        ["index", "refresh", t],
        ["index", "drop", t, "k_sieve"],
        ["index", "vacuum", t],
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        assert "lakesieve index repair" in capsys.readouterr().err, argv
    assert _health(table_path, capsys) == {
        "k_sieve": "unreadable log entry",
        "k_exact": "unreadable log entry",
    }
    assert main(["index", "check", t]) == 1
    capsys.readouterr()

    assert main(["index", "repair", t]) == 0
    assert "moved the damaged index log" in capsys.readouterr().out
    aside = list((table_path / ".lakesieve").glob("_log.damaged-*"))
    assert len(aside) == 1 and (aside[0] / f"{2:020d}.json").read_text() == "{not json"
    assert _health(table_path, capsys) == {"k_sieve": "stale", "k_exact": "stale"}
    assert main(["index", "check", t]) == 0
    assert main(["index", "refresh", t]) == 0
    assert _health(table_path, capsys) == {"k_sieve": "ok", "k_exact": "ok"}
    _assert_exact(table_path)


def test_an_edited_commit_loses_only_its_states(table_path: Path, capsys: Any) -> None:
    path = _log(table_path) / f"{0:020d}.json"  # the sieve build
    body = json.loads(path.read_text())
    body["actions"][-1]["instant"] = "99999999999999999"
    path.write_text(json.dumps(body))
    assert _health(table_path, capsys)["k_sieve"] == "unreadable log entry"
    capsys.readouterr()
    assert main(["index", "repair", str(table_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["indexes_dropped"] == ["k_sieve"] and result["states_kept"] == 1
    assert result["commits_skipped"] and "checksum" in result["commits_skipped"][0]
    assert _health(table_path, capsys) == {"k_exact": "stale"}
    _assert_exact(table_path)


def test_a_missing_first_commit_is_repaired(table_path: Path, capsys: Any) -> None:
    (_log(table_path) / f"{0:020d}.json").unlink()  # the sieve build; the exact build stays
    assert _health(table_path, capsys) == {
        "k_exact": "unreadable log entry"
    }  # k_sieve was defined in commit 0
    assert main(["index", "check", str(table_path)]) == 1
    assert main(["index", "refresh", str(table_path)]) == 2
    assert main(["index", "repair", str(table_path)]) == 0
    assert _health(table_path, capsys) == {"k_exact": "stale"}
    assert main(["index", "refresh", str(table_path)]) == 0
    _assert_exact(table_path)


def test_a_corrupt_data_file_is_listed_checked_and_dropped(table_path: Path, capsys: Any) -> None:
    table = lakesieve.open(table_path)
    state = table.index("k_exact").latest()
    assert state is not None
    data_file = table.store.root / state.files[0].path
    raw = bytearray(data_file.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data_file.write_bytes(bytes(raw))
    assert _health(table_path, capsys) == {"k_sieve": "stale", "k_exact": "corrupt data file"}
    assert main(["index", "check", str(table_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [s["index"] for s in report["bad_states"]] == ["k_exact"] and not report["bad_commits"]
    assert main(["index", "repair", str(table_path), "--rebuild"]) == 0
    assert not list(
        (table_path / ".lakesieve").glob("_log.damaged-*")
    )  # an intact log is kept, not moved
    assert _health(table_path, capsys) == {"k_sieve": "stale", "k_exact": "ok"}
    assert main(["index", "check", str(table_path)]) == 0
    _assert_exact(table_path)
