"""The index store never touches anything outside its root and notices edited log commits.

Every test works on a copy of one real Hudi table with a real Sieve index,
with a sentinel file outside the index root that must survive.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow.compute as pc
import pytest
from lakesieve.cli import main
from lakesieve.errors import IndexCorruptError, LakesieveWarning
from lakesieve.spark.session import get_spark
from lakesieve.store.index_log import commit_checksum

from tests.tables import make_rows, rows_by_location, true_locations, write_rows

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table indexed at its first instant; a second commit adds keys 200..233 the index never saw."""
    path = tmp_path_factory.mktemp("safety") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    lakesieve.open(path).build_index("k", type="sieve", spark=spark)
    write_rows(spark, path, make_rows(range(600, 700), 2), mode="upsert")
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(source, dest)
    return dest


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    """``outside/victim/sentinel.txt``: outside the table, in a folder shaped like an index state."""
    folder = tmp_path / "outside" / "victim"
    folder.mkdir(parents=True)
    (folder / "sentinel.txt").write_text("keep me")
    os.utime(folder / "sentinel.txt", (0, 0))
    os.utime(folder, (0, 0))
    return folder / "sentinel.txt"


def _commit_path(table: Path, version: int) -> Path:
    return table / ".lakesieve" / "_log" / f"{version:020d}.json"


def _append_commit(table: Path, actions: list[dict[str, Any]]) -> None:
    """A commit with a correct checksum, as a crafted log would carry."""
    store = lakesieve.open(table).store
    version = store.read_log().version + 1
    body: dict[str, Any] = {"version": version, "timestamp_ms": 0, "actions": actions}
    body["checksum"] = commit_checksum(body)
    _commit_path(table, version).write_text(json.dumps(body))


def _vacuum(table: Path) -> int:
    return main(["index", "vacuum", str(table), "--grace-seconds", "0"])


def _assert_exact(table: Any, where: str) -> None:
    """The plan holds every location with a matching row, and the driver read returns every such row."""
    by_loc = rows_by_location(table)
    truth = true_locations(get_spark(), where, by_loc)
    assert truth, f"{where} matches nothing: the check would prove nothing"
    assert truth <= {u.location for u in table.plan(where).units}, where
    expected = (
        sum(t.filter(pc.field("k") >= 200).num_rows for t in by_loc.values())
        if where == "k >= 200"
        else None
    )
    if expected is not None:
        assert table.read_arrow(where).num_rows == expected


# ---------------------------------------------------------------- 1: nothing outside the root


def test_vacuum_never_follows_a_symlinked_index_folder(table_path: Path, sentinel: Path) -> None:
    (table_path / ".lakesieve" / "data" / "planted").symlink_to(
        sentinel.parent.parent, target_is_directory=True
    )
    assert _vacuum(table_path) == 0
    assert sentinel.read_text() == "keep me"


def test_vacuum_never_follows_a_symlinked_state_folder(table_path: Path, sentinel: Path) -> None:
    link = table_path / ".lakesieve" / "data" / "k_sieve" / "1-planted"
    link.symlink_to(sentinel.parent, target_is_directory=True)
    assert _vacuum(table_path) == 0
    assert sentinel.read_text() == "keep me" and link.is_symlink()


def test_vacuum_refuses_a_symlinked_data_folder(
    table_path: Path, sentinel: Path, capsys: Any
) -> None:
    data = table_path / ".lakesieve" / "data"
    moved = sentinel.parent.parent / "data"
    shutil.move(str(data), moved)
    data.symlink_to(moved, target_is_directory=True)
    shutil.move(
        str(sentinel.parent), moved / "k_sieve" / "1-orphan"
    )  # an old unreferenced state, outside
    assert _vacuum(table_path) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert (moved / "k_sieve" / "1-orphan" / "sentinel.txt").read_text() == "keep me"


def test_a_crafted_state_id_is_refused(table_path: Path, sentinel: Path, capsys: Any) -> None:
    victim = sentinel.parent
    sentinel.unlink()  # an empty folder: the one a path through the state id would remove
    index_dir = table_path / ".lakesieve" / "data" / "k_sieve"
    crafted = os.path.relpath(victim, index_dir)
    assert crafted.startswith("..")
    _append_commit(
        table_path,
        [
            {
                "op": "add_state",
                "index": "k_sieve",
                "state_id": crafted,
                "instant": "19990101000000000",
                "instant_sort_key": "19990101000000000",
                "files": [],
                "meta": {},
                "created_ms": 0,
            }
        ],
    )
    assert _vacuum(table_path) == 2
    err = capsys.readouterr().err
    assert "state id" in err and "index repair" in err
    assert victim.is_dir()
    table = lakesieve.open(table_path)
    with pytest.warns(LakesieveWarning, match="state id"):
        _assert_exact(table, "k >= 200")


def test_a_data_file_linked_outside_the_root_is_not_read(table_path: Path, tmp_path: Path) -> None:
    table = lakesieve.open(table_path)
    state = table.index("k_sieve").latest()
    assert state is not None
    inside = table.store.root / state.files[0].path
    outside = tmp_path / "copy.arrow"
    shutil.copyfile(inside, outside)  # same bytes: the checksum alone would pass it
    inside.unlink()
    inside.symlink_to(outside)
    with pytest.raises(IndexCorruptError, match="symbolic link"):
        table.store.read_files(state)
    with pytest.warns(LakesieveWarning, match="symbolic link"):
        plan = table.plan("k = 5")
    assert plan.locations_selected == plan.locations_total


# ---------------------------------------------------------------- 2: edited and deleted commits


def test_an_edited_commit_gives_no_wrong_rows_and_warns(table_path: Path) -> None:
    """The index claims the newest instant, which it never saw: without the checksum it hides new keys."""
    table = lakesieve.open(table_path)
    latest = table.timeline()[-1]
    path = _commit_path(table_path, 0)
    body = json.loads(path.read_text())
    for action in body["actions"]:
        if action["op"] == "add_state":
            action["instant"], action["instant_sort_key"] = latest.id, latest.sort_key
    path.write_text(json.dumps(body, indent=1))
    for where in ("k >= 200", "k IN (5, 210, 221, 233)"):
        with pytest.warns(LakesieveWarning, match="fails its checksum"):
            _assert_exact(lakesieve.open(table_path), where)
    with pytest.raises(IndexCorruptError, match="index repair"):
        lakesieve.open(table_path).indexes()


def test_a_deleted_newest_commit_is_reported(spark: Any, table_path: Path, capsys: Any) -> None:
    table = lakesieve.open(table_path)
    table.refresh(spark=spark)
    assert table.store.read_log().version == 1
    _commit_path(table_path, 1).unlink()
    with pytest.warns(LakesieveWarning, match="commit 1 is missing"):
        _assert_exact(lakesieve.open(table_path), "k >= 200")
    assert main(["index", "list", str(table_path), "--json"]) == 0
    printed = capsys.readouterr()
    assert [r["health"] for r in json.loads(printed.out)] == ["unreadable log entry"]
    assert "commit 1 is missing" in printed.err and "index repair" in printed.err
