"""Races on one index store: log reads beside a committer, and two builds of one index name.

A log read that overlaps a commit must never call the new commit "missing"
(and so advise a repair while a writer is active); a commit that is really
gone must still be reported. Two builds of one name must not both succeed:
the one that commits second fails in one line naming the definition that
won. No Spark: the builds' Spark job is replaced by a stub.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.cli import main
from lakesieve.errors import ConcurrentBuildError, IndexCorruptError
from lakesieve.maintenance import index_build
from lakesieve.model import BuiltIndex
from lakesieve.store import IndexStore

from tests.store_helpers import add_index, delta_table, state_folders_on_disk

# ----------------------------------------------------------------- log reads


def _store(tmp_path: Path, commits: int = 3) -> IndexStore:
    store = IndexStore(tmp_path / ".lakesieve")
    for i in range(commits):
        add_index(store, f"i{i}")
    return store


def test_a_commit_landing_between_the_listing_and_the_head_is_not_missing(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    other = IndexStore(store.root)
    listed = store.versions

    def versions_then_a_commit() -> list[int]:
        out = listed()
        if len(out) == 3:  # another writer commits right after this reader listed the log
            add_index(other, "late")
        return out

    store.versions = versions_then_a_commit  # type: ignore[method-assign]
    snap = store.read_log()  # strict: raises on anything it calls missing
    assert not snap.problems and snap.version >= 2
    assert {"i0", "i1", "i2"} <= set(snap.indexes)
    assert set(IndexStore(store.root).read_log().indexes) == {"i0", "i1", "i2", "late"}


#: Seconds the committer of the race test commits (``LAKESIEVE_RACE_SECONDS``; a minute by hand).
RACE_SECONDS = float(os.environ.get("LAKESIEVE_RACE_SECONDS", "4"))


def test_readers_racing_a_committer_never_see_a_missing_commit(tmp_path: Path) -> None:
    """Reads (strict and not) beside a committing process: no commit is ever reported missing."""
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    store = _store(tmp_path, commits=1)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the committer
        code = 1
        try:
            writer = IndexStore(store.root)
            stop = time.monotonic() + RACE_SECONDS
            n = 0
            while time.monotonic() < stop and n < 100 * RACE_SECONDS:
                writer.commit_with_retry(lambda snap: [{"op": "drop", "index": "none"}])
                n += 1
            code = 0
        finally:
            os._exit(code)
    reads, last, errors = 0, -1, []
    status: int | None = None
    try:
        while status is None:
            finished, code = os.waitpid(pid, os.WNOHANG)
            if finished:
                status = os.waitstatus_to_exitcode(code)
            for strict in (True, False):
                try:
                    snap = store.read_log(strict=strict)
                except IndexCorruptError as exc:
                    errors.append(str(exc))
                    continue
                errors.extend(str(p) for p in snap.problems)
                assert snap.version >= last
                last = snap.version
                reads += 1
    finally:
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert status == 0
    assert not errors, errors[:3]
    assert reads > 50 and last > 20
    assert store.read_log().version == last


def test_a_commit_that_is_really_gone_is_still_reported(tmp_path: Path) -> None:
    store = _store(tmp_path, commits=4)
    (store.log_dir / f"{1:020d}.json").unlink()
    started = time.perf_counter()
    with pytest.raises(IndexCorruptError, match=r"commit 1 is missing.*lakesieve index repair"):
        store.read_log()
    assert time.perf_counter() - started < 2.0  # a few short re-reads, no long wait
    assert [p.version for p in store.read_log(strict=False).problems] == [1]
    (store.log_dir / f"{3:020d}.json").unlink()  # the newest, recorded in the head
    (store.log_dir / f"{2:020d}.json").unlink()
    with pytest.raises(IndexCorruptError, match=r"commit 3 was written"):
        IndexStore(store.root).read_log()


# ----------------------------------------------------------------- builds


def _stub_build(rows: int = 3) -> BuiltIndex:
    return BuiltIndex({"blocks": pa.table({"lo": list(range(rows))})}, {"n": rows})


def test_two_racing_builds_of_one_name_one_fails_naming_the_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = delta_table(tmp_path / "t")
    both_built = threading.Barrier(2, timeout=10)

    def build_state(table: Any, definition: Any, inst: Any, spark: Any) -> BuiltIndex:
        both_built.wait()  # each has read the log and finished its Spark work
        return _stub_build()

    monkeypatch.setattr(index_build, "build_state", build_state)
    outcome: dict[str, Any] = {}

    def build(column: str, type: str) -> None:
        table = lakesieve.open(path)
        try:
            outcome[f"{type} on {column}"] = index_build.build_index(
                table.states, column, type, "race", spark=object()
            )
        except ConcurrentBuildError as exc:
            outcome[f"{type} on {column}"] = exc

    threads = [
        threading.Thread(target=build, args=("id", "sieve")),
        threading.Thread(target=build, args=("s", "exact")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    lost = [k for k, v in outcome.items() if isinstance(v, ConcurrentBuildError)]
    won = [k for k, v in outcome.items() if v == "race"]
    assert len(lost) == 1 and len(won) == 1, outcome
    message = str(outcome[lost[0]])
    assert f"index 'race' already exists ({won[0]}), built by another process" in message
    assert "\n" not in message
    definition = lakesieve.open(path).index("race")
    assert f"{definition.type} on {definition.column}" == won[0]
    # the loser's files went with it: one state folder, the winner's
    assert state_folders_on_disk(path / ".lakesieve") == {
        f"race/{definition.latest().state_id}"  # type: ignore[union-attr]
    }


def test_a_build_that_loses_the_race_fails_in_one_line_on_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = delta_table(tmp_path / "t")

    def build_state(table: Any, definition: Any, inst: Any, spark: Any) -> BuiltIndex:
        if definition.type == "sieve":  # the CLI's build: a rival commits meanwhile
            rival = lakesieve.open(path)
            index_build.build_index(rival.states, "s", "exact", "race", spark=object())
        return _stub_build()

    monkeypatch.setattr(index_build, "build_state", build_state)
    monkeypatch.setattr(index_build, "get_spark", lambda **kw: object())
    capsys.readouterr()
    code = main(["index", "build", str(path), "--column", "id", "--name", "race"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("lakesieve: error: index 'race' already exists (exact on s)")
    assert "built by another process" in err[-1]
    assert lakesieve.open(path).index("race").type == "exact"


def test_a_rebuild_of_an_existing_index_beside_a_refresh_still_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a rival *definition* is a race: a state another writer adds meanwhile is not."""
    path = delta_table(tmp_path / "t")
    store = lakesieve.open(path).store
    monkeypatch.setattr(index_build, "build_state", lambda *a: _stub_build())
    index_build.build_index(lakesieve.open(path).states, "k", "sieve", spark=object())

    def build_state(table: Any, definition: Any, inst: Any, spark: Any) -> BuiltIndex:
        add_index(IndexStore(store.root), "k_sieve")  # a refresh of the same index commits
        return _stub_build()

    monkeypatch.setattr(index_build, "build_state", build_state)
    table = lakesieve.open(path)
    assert index_build.build_index(table.states, "k", "sieve", spark=object()) == "k_sieve"
    assert len(lakesieve.open(path).index("k_sieve").by_id) == 3
