"""The index store: atomic numbered commits, checksums, conflicts, path safety."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from lakesieve.errors import CommitConflictError, IndexCorruptError
from lakesieve.model import BuiltIndex
from lakesieve.store import IndexStore
from lakesieve.store.index_log import commit_checksum


def _define(name: str = "k_sieve") -> dict:
    return {
        "op": "define",
        "index": name,
        "type": "sieve",
        "column": "k",
        "key_type": "bigint",
        "params": {},
    }


def _state(store: IndexStore, name: str, instant: str) -> dict:
    built = BuiltIndex({"blocks": pa.table({"lo": [1, 5], "hi": [4, 9]})}, {"n": 2})
    state_id, files = store.write_files(name, built)
    return {
        "op": "add_state",
        "index": name,
        "state_id": state_id,
        "instant": instant,
        "instant_sort_key": instant,
        "files": files,
        "meta": built.meta,
        "created_ms": 0,
    }


def test_commit_and_replay(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    assert store.read_log().version == -1
    store.commit([_define()], -1)
    store.commit([_state(store, "k_sieve", "001")], 0)
    store.commit([_state(store, "k_sieve", "002")], 1)
    snap = store.read_log()
    assert snap.version == 2
    d = snap.indexes["k_sieve"]
    assert [s.instant for s in d.states] == ["001", "002"]
    assert d.state_for("001").instant == "001"  # type: ignore[union-attr]
    assert d.state_for("0015").instant == "001"  # type: ignore[union-attr]
    assert d.state_for("000").instant == "001"  # type: ignore[union-attr]  # oldest after
    files = store.read_files(d.states[1])
    assert files["blocks"].column("lo").to_pylist() == [1, 5]


def test_second_writer_of_a_version_loses(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    store.commit([_define()], -1)
    with pytest.raises(CommitConflictError):
        store.commit([_define("other")], -1)
    assert list(store.read_log().indexes) == ["k_sieve"]


def test_retry_rebuilds_actions_on_the_newer_log(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    calls = []

    def make(snap):  # a competitor commits during our first attempt
        calls.append(snap.version)
        if len(calls) == 1:
            store.commit([_define("rival")], snap.version)
        return [_define("mine")]

    version, _ = store.commit_with_retry(make)
    assert version == 1 and calls == [-1, 0]
    assert set(store.read_log().indexes) == {"rival", "mine"}


def test_checksum_mismatch_is_reported(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    store.commit([_define(), _state(store, "k_sieve", "001")], -1)
    state = store.read_log().indexes["k_sieve"].states[0]
    path = store.root / state.files[0].path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError, match="checksum"):
        store.read_files(state)


def test_paths_escaping_the_root_are_refused(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    store.commit([_define()], -1)
    evil = {
        "op": "add_state",
        "index": "k_sieve",
        "state_id": "x",
        "instant": "1",
        "instant_sort_key": "1",
        "files": [
            {
                "name": "blocks",
                "path": "../../etc/passwd",
                "sha256": "0",
                "size_bytes": 1,
                "rows": 1,
            }
        ],
        "meta": {},
        "created_ms": 0,
    }
    store.commit([evil], 0)
    with pytest.raises(IndexCorruptError, match="escapes"):
        store.read_log()


def test_garbage_log_is_corrupt_not_a_crash(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    store.commit([_define()], -1)
    (store.log_dir / f"{1:020d}.json").write_text("{not json")
    with pytest.raises(IndexCorruptError):
        store.read_log()
    (store.log_dir / f"{1:020d}.json").write_text(
        json.dumps({"version": 1, "actions": [{"op": "define"}]})
    )
    with pytest.raises(IndexCorruptError, match="has no checksum"):
        store.read_log()
    body = {"version": 1, "actions": [{"op": "exec"}]}
    body["checksum"] = commit_checksum(body)
    (store.log_dir / f"{1:020d}.json").write_text(json.dumps(body))
    with pytest.raises(IndexCorruptError, match="unknown log action"):
        store.read_log()
