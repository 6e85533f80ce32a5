"""``lakesieve index repair`` killed at every step, leftovers, and the writers' lock.

Repair swaps the damaged log for a new one with renames. A child process
runs it and dies (``os._exit``, no clean-up runs) just before its N-th
rename, replace or link, for every N until a run completes. After each kill
the store must stay readable with every index listed, a vacuum at grace 0
must delete nothing, and a second repair must finish the job and leave no
``_log.repair-*`` folder. No Spark: the table is a small Delta table and
the index states are written by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.errors import StoreBusyError
from lakesieve.maintenance.repair import repair
from lakesieve.store import lock as store_lock

from tests.store_helpers import add_index, delta_table, state_folders_on_disk

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

INDEXES = {"a_sieve", "b_sieve", "c_exact"}
KILLED = 137


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Delta table with three indexes and a garbage newest commit (repair must swap the log)."""
    path = delta_table(tmp_path_factory.mktemp("repair_crash") / "t")
    store = lakesieve.open(path).store
    add_index(store, "a_sieve")
    add_index(store, "b_sieve", column="id")
    add_index(store, "c_exact", column="s", type="exact")
    version = store.read_log().version + 1
    (store.log_dir / f"{version:020d}.json").write_text("{not json")
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "t"
    shutil.copytree(source, dest)
    return dest


def _root(path: Path) -> Path:
    return path / ".lakesieve"


def _listed(path: Path, capsys: Any) -> set[str]:
    capsys.readouterr()
    assert main(["index", "list", str(path), "--json"]) == 0
    return {row["name"] for row in json.loads(capsys.readouterr().out)}


def _run_in_child(body: Any) -> int:
    """Run ``body()`` in a forked child; its exit status (the child never returns to pytest)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = int(body() or 0)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _repair_killed_before_step(path: Path, step: int) -> int:
    """Repair in a child that dies just before its ``step``-th rename, replace or link."""

    def body() -> int:
        calls = [0]
        for name in ("rename", "replace", "link"):
            real = getattr(os, name)

            def fake(*args: Any, _real: Any = real, **kw: Any) -> Any:
                calls[0] += 1
                if calls[0] == step:
                    os._exit(KILLED)
                return _real(*args, **kw)

            setattr(os, name, fake)
        repair(lakesieve.open(path))
        return 0

    return _run_in_child(body)


def test_a_kill_at_every_step_of_repair_loses_nothing(
    source: Path, tmp_path: Path, capsys: Any
) -> None:
    before = state_folders_on_disk(_root(source))
    assert len(before) == 3
    step, killed = 1, 0
    while True:
        path = tmp_path / f"t{step}"
        shutil.copytree(source, path)
        code = _repair_killed_before_step(path, step)
        assert code in (0, KILLED), f"step {step}: repair failed with {code}"
        if code == KILLED:  # the kill landed inside the swap: the new log is written, not in place
            assert list(_root(path).glob("_log.repair-*")), f"killed before step {step}"
        assert _listed(path, capsys) == INDEXES, f"killed before step {step}"
        main(["index", "vacuum", str(path), "--grace-seconds", "0"])
        assert state_folders_on_disk(_root(path)) == before, f"killed before step {step}"
        capsys.readouterr()
        assert main(["index", "repair", str(path)]) == 0, f"killed before step {step}"
        assert main(["index", "check", str(path)]) == 0, capsys.readouterr()
        assert _listed(path, capsys) == INDEXES
        assert main(["index", "vacuum", str(path), "--grace-seconds", "0"]) == 0
        assert state_folders_on_disk(_root(path)) == before
        assert not list(_root(path).glob("_log.repair-*")), f"killed before step {step}"
        if code == 0:
            break
        killed += 1
        step += 1
        assert step < 30, "repair never completed"
    # the new log's commit, its head, its marker, the old log aside, the new log in place
    assert killed >= 5


def test_a_missing_log_beside_a_finished_new_log_is_put_in_place(
    table_path: Path, capsys: Any
) -> None:
    """The exact state a kill between the two renames leaves: no ``_log``, a complete new log."""
    assert _repair_killed_before_step(table_path, 5) == KILLED
    root = _root(table_path)
    assert not (root / "_log").exists() and list(root.glob("_log.repair-*"))
    assert {d.name for d in lakesieve.open(table_path).indexes()} == INDEXES
    assert (root / "_log").is_dir() and not list(root.glob("_log.repair-*"))


def test_a_missing_log_beside_repair_leftovers_is_not_an_empty_store(
    table_path: Path, capsys: Any
) -> None:
    root = _root(table_path)
    os.rename(root / "_log", root / "_log.damaged-20240101T000000Z-abcdef")
    before = state_folders_on_disk(root)
    capsys.readouterr()
    assert main(["index", "list", str(table_path)]) == 2
    err = capsys.readouterr().err
    assert "_log.damaged-" in err and "lakesieve index repair" in err and err.count("\n") == 1
    assert main(["index", "vacuum", str(table_path), "--grace-seconds", "0"]) == 2
    assert state_folders_on_disk(root) == before
    assert main(["index", "repair", str(table_path)]) == 0
    assert _listed(table_path, capsys) == INDEXES
    assert main(["index", "check", str(table_path)]) == 0


def test_vacuum_and_repair_remove_leftover_repair_folders(table_path: Path) -> None:
    root = _root(table_path)
    assert main(["index", "repair", str(table_path)]) == 0
    for name in ("_log.repair-aaaaaaaaaaaa", "_log.repair-bbbbbbbbbbbb"):
        shutil.copytree(root / "_log", root / name)
    assert main(["index", "vacuum", str(table_path)]) == 0  # an hour's grace: too recent
    assert len(list(root.glob("_log.repair-*"))) == 2
    assert main(["index", "vacuum", str(table_path), "--grace-seconds", "0"]) == 0
    assert not list(root.glob("_log.repair-*"))
    shutil.copytree(root / "_log", root / "_log.repair-cccccccccccc")
    assert main(["index", "repair", str(table_path)]) == 0
    assert not list(root.glob("_log.repair-*"))
    assert {d.name for d in lakesieve.open(table_path).indexes()} == INDEXES


@pytest.fixture
def held(table_path: Path) -> Iterator[Any]:
    """``held(exclusive)``: hold the store's writer lock in another thread until the test ends."""
    release = threading.Event()
    threads: list[threading.Thread] = []

    def hold(exclusive: bool) -> None:
        ready = threading.Event()

        def run() -> None:
            with lakesieve.open(table_path).store.writing(exclusive=exclusive):
                ready.set()
                release.wait(30)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        assert ready.wait(10)

    yield hold
    release.set()
    for thread in threads:
        thread.join(10)


def test_repair_refuses_to_run_while_a_writer_holds_the_store(
    table_path: Path, held: Any, capsys: Any
) -> None:
    log = sorted(p.name for p in (_root(table_path) / "_log").iterdir())
    held(False)
    capsys.readouterr()
    assert main(["index", "repair", str(table_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "another process is writing" in err
    assert str(_root(table_path)) in err
    assert sorted(p.name for p in (_root(table_path) / "_log").iterdir()) == log
    assert not list(_root(table_path).glob("_log.*"))


def test_writers_wait_for_a_running_repair_then_give_up_in_one_line(
    table_path: Path, held: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["index", "repair", str(table_path)]) == 0  # a sound log: only the lock refuses
    monkeypatch.setattr(store_lock, "WAIT_SECONDS", 0.3)
    held(True)
    table = lakesieve.open(table_path)
    with pytest.raises(StoreBusyError, match="being repaired") as caught:
        table.vacuum(grace_seconds=0)
    assert "\n" not in str(caught.value)
    with pytest.raises(StoreBusyError):
        table.drop_index("a_sieve")


def test_a_dead_writers_lock_does_not_block_repair(table_path: Path) -> None:
    def body() -> int:
        lakesieve.open(table_path).store.writing().__enter__()
        os._exit(KILLED)  # dies holding the lock

    assert _run_in_child(body) == KILLED
    assert main(["index", "repair", str(table_path)]) == 0
    assert {d.name for d in lakesieve.open(table_path).indexes()} == INDEXES
