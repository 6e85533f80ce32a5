"""The index store: a numbered JSON log plus Arrow IPC data files with checksums.

Layout under the index root (``<table>/.lakesieve/`` by default)::

    _log/00000000000000000000.json   one commit per file, numbered from 0
    data/<index name>/<state id>/<file name>.arrow

A commit lists actions; replaying the log from 0 gives the state of every
index. A commit becomes visible atomically: it is written to a temporary file
and then hard-linked to its numbered name, which fails if the name exists, so
two writers racing for the same version cannot both win (the loser gets
:class:`~lakesieve.errors.CommitConflictError` and may retry on the new log).
Data files are written before the commit that names them, so a crash leaves
the previous state intact and at worst some unreferenced files.

Index files are data, never code: Arrow IPC read with pyarrow, checked
against the SHA-256 recorded in the log before use. Paths in the log must stay
inside the index root.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from lakesieve.errors import CommitConflictError, IndexCorruptError, IndexNotFoundError
from lakesieve.model import BuiltIndex

DEFAULT_DIRNAME = ".lakesieve"
LOG_DIR = "_log"
DATA_DIR = "data"
_VERSION_DIGITS = 20
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class StoredFile:
    """One data file of an index state, as recorded in the log."""

    name: str
    path: str
    sha256: str
    size_bytes: int
    rows: int


@dataclass(frozen=True)
class IndexState:
    """One built state of an index, tied to one table instant.

    Attributes:
        index: the index name.
        state_id: unique id of this state.
        instant: the table instant id the state reflects.
        instant_sort_key: that instant's timeline sort key.
        files: the stored data files.
        meta: the index type's metadata.
        created_ms: when the state was committed.
        kind: ``"base"`` (a whole index built or compacted by the index type) or
            ``"delta"`` (the net ``(key, location, count)`` changes since ``parent``).
        parent: for a delta, the state it applies on top of.
        base: for a delta, the base state its chain starts from.
    """

    index: str
    state_id: str
    instant: str
    instant_sort_key: str
    files: tuple[StoredFile, ...]
    meta: dict[str, Any]
    created_ms: int
    kind: str = "base"
    parent: str | None = None
    base: str | None = None

    @property
    def is_delta(self) -> bool:
        """Whether this state is a delta on top of an earlier state."""
        return self.kind == "delta"

    @property
    def size_bytes(self) -> int:
        """Bytes of all data files of this state."""
        return sum(f.size_bytes for f in self.files)


@dataclass
class IndexDefinition:
    """An index declared on a table, with its states, oldest instant first.

    ``states`` holds one state per table instant (the newest committed for
    that instant wins); ``by_id`` holds every state not yet removed, including
    states a later one replaced at the same instant: delta states still point
    at them through ``parent``/``base``.
    """

    name: str
    type: str
    column: str
    key_type: str
    params: dict[str, Any]
    states: list[IndexState] = field(default_factory=list)
    by_id: dict[str, IndexState] = field(default_factory=dict)

    def chain(self, state: IndexState) -> list[IndexState]:
        """The base state and every delta up to ``state``, oldest first.

        Raises:
            IndexCorruptError: a state of the chain was removed or is not a delta chain.
        """
        out = [state]
        seen = {state.state_id}
        current = state
        while current.is_delta:
            parent = self.by_id.get(current.parent or "")
            if parent is None or parent.state_id in seen:
                raise IndexCorruptError(
                    f"index {self.name!r}: delta state {current.state_id} lost its parent {current.parent}"
                )
            seen.add(parent.state_id)
            out.append(parent)
            current = parent
        out.reverse()
        return out

    def latest(self) -> IndexState | None:
        """The state of the newest instant, if any."""
        return self.states[-1] if self.states else None

    def state_for(self, sort_key: str) -> IndexState | None:
        """The newest state at or before ``sort_key``; else the oldest state after it."""
        best: IndexState | None = None
        for state in self.states:
            if state.instant_sort_key <= sort_key:
                best = state
        if best is None and self.states:
            best = self.states[0]
        return best


@dataclass
class LogSnapshot:
    """The replayed log: every index by name, and the version it was read at."""

    version: int
    indexes: dict[str, IndexDefinition]
    table_fingerprint: str | None = None


def _check_name(name: str, what: str) -> str:
    if not _NAME_RE.match(name or ""):
        raise IndexNotFoundError(
            f"invalid {what} {name!r}: use letters, digits, '_', '-' or '.' (at most 128)"
        )
    return name


class IndexStore:
    """Reads and writes the index log and data files of one table.

    Args:
        root: the index root folder (``<table>/.lakesieve`` by default).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.log_dir = self.root / LOG_DIR
        self.data_dir = self.root / DATA_DIR

    # ------------------------------------------------------------------ log

    def _versions(self) -> list[int]:
        if not self.log_dir.is_dir():
            return []
        out = []
        for entry in self.log_dir.iterdir():
            stem, dot, ext = entry.name.partition(".")
            if dot and ext == "json" and stem.isdigit() and len(stem) == _VERSION_DIGITS:
                out.append(int(stem))
        return sorted(out)

    def _log_path(self, version: int) -> Path:
        return self.log_dir / f"{version:0{_VERSION_DIGITS}d}.json"

    def read_log(self) -> LogSnapshot:
        """Replay every commit and return the current state of all indexes.

        Raises:
            IndexCorruptError: a commit file is not valid JSON or has a bad shape.
        """
        indexes: dict[str, IndexDefinition] = {}
        fingerprint: str | None = None
        version = -1
        for v in self._versions():
            if v != version + 1:
                raise IndexCorruptError(f"index log {self.log_dir} is missing commit {version + 1}")
            path = self._log_path(v)
            try:
                commit = json.loads(path.read_text(encoding="utf-8"))
                actions = commit["actions"]
                if not isinstance(actions, list):
                    raise TypeError("actions is not a list")
                for action in actions:
                    fingerprint = self._apply(indexes, action, fingerprint)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise IndexCorruptError(f"index log commit {path} is unreadable: {exc}") from exc
            version = v
        return LogSnapshot(version, indexes, fingerprint)

    def _apply(
        self, indexes: dict[str, IndexDefinition], action: dict[str, Any], fingerprint: str | None
    ) -> str | None:
        op = action["op"]
        if op == "table":
            return str(action["fingerprint"])
        if op == "define":
            name = _check_name(str(action["index"]), "index name")
            indexes[name] = IndexDefinition(
                name=name,
                type=str(action["type"]),
                column=str(action["column"]),
                key_type=str(action["key_type"]),
                params=dict(action["params"]),
            )
        elif op == "add_state":
            name = str(action["index"])
            if name not in indexes:
                raise KeyError(f"state for undefined index {name!r}")
            files = tuple(
                StoredFile(
                    name=str(f["name"]),
                    path=self._safe_rel(str(f["path"])),
                    sha256=str(f["sha256"]),
                    size_bytes=int(f["size_bytes"]),
                    rows=int(f["rows"]),
                )
                for f in action["files"]
            )
            state = IndexState(
                index=name,
                state_id=str(action["state_id"]),
                instant=str(action["instant"]),
                instant_sort_key=str(action["instant_sort_key"]),
                files=files,
                meta=dict(action["meta"]),
                created_ms=int(action["created_ms"]),
                kind=str(action.get("kind") or "base"),
                parent=(str(action["parent"]) if action.get("parent") else None),
                base=(str(action["base"]) if action.get("base") else None),
            )
            if state.kind not in ("base", "delta") or (state.kind == "delta" and not state.parent):
                raise ValueError(f"state {state.state_id} has kind {state.kind!r} without a parent")
            indexes[name].by_id[state.state_id] = state
            states = [s for s in indexes[name].states if s.instant_sort_key != state.instant_sort_key]
            states.append(state)
            states.sort(key=lambda s: s.instant_sort_key)
            indexes[name].states = states
        elif op == "remove_state":
            name = str(action["index"])
            if name in indexes:
                indexes[name].states = [
                    s for s in indexes[name].states if s.state_id != str(action["state_id"])
                ]
                indexes[name].by_id.pop(str(action["state_id"]), None)
        elif op == "drop":
            indexes.pop(str(action["index"]), None)
        else:
            raise ValueError(f"unknown log action {op!r}")
        return fingerprint

    def _safe_rel(self, rel: str) -> str:
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or not parts or parts[0] != DATA_DIR:
            raise ValueError(f"file path {rel!r} escapes the index root")
        return rel

    def commit(self, actions: list[dict[str, Any]], expected_version: int) -> int:
        """Atomically write commit ``expected_version + 1``.

        Raises:
            CommitConflictError: another writer committed that version first.
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        version = expected_version + 1
        body = {"version": version, "timestamp_ms": int(time.time() * 1000), "actions": actions}
        tmp = self.log_dir / f".tmp-{uuid.uuid4().hex}.json"
        tmp.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
        target = self._log_path(version)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise CommitConflictError(
                f"index log {self.log_dir}: version {version} was committed by another writer"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return version

    def commit_with_retry(
        self, make_actions: Any, attempts: int = 5
    ) -> tuple[int, LogSnapshot]:
        """Read the log, build actions from it and commit; retry on conflicts.

        Args:
            make_actions: ``callable(LogSnapshot) -> list[action]``; called again
                after each conflict with the newer log.
            attempts: how many conflicts to tolerate.
        """
        last: CommitConflictError | None = None
        for _ in range(attempts):
            snap = self.read_log()
            actions = make_actions(snap)
            try:
                return self.commit(actions, snap.version), snap
            except CommitConflictError as exc:
                last = exc
        assert last is not None
        raise last

    # ------------------------------------------------------------------ files

    def write_files(self, index: str, built: BuiltIndex) -> tuple[str, list[dict[str, Any]]]:
        """Write a built index's tables as Arrow IPC files; return the state id and file records."""
        _check_name(index, "index name")
        state_id = f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        folder = self.data_dir / index / state_id
        folder.mkdir(parents=True, exist_ok=True)
        records = []
        for name, table in sorted(built.files.items()):
            _check_name(name, "index file name")
            path = folder / f"{name}.arrow"
            sink = pa.BufferOutputStream()
            with ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            data = sink.getvalue().to_pybytes()
            tmp = folder / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, path)
            records.append(
                {
                    "name": name,
                    "path": path.relative_to(self.root).as_posix(),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size_bytes": len(data),
                    "rows": table.num_rows,
                }
            )
        return state_id, records

    def read_files(self, state: IndexState) -> dict[str, pa.Table]:
        """Read and verify a state's data files.

        Raises:
            IndexCorruptError: a file is missing, fails its checksum or does not decode.
        """
        out: dict[str, pa.Table] = {}
        for f in state.files:
            path = self.root / f.path
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise IndexCorruptError(f"index file {path} is unreadable: {exc}") from exc
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise IndexCorruptError(f"index file {path} fails its checksum")
            try:
                out[f.name] = ipc.open_file(pa.py_buffer(data)).read_all()
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise IndexCorruptError(f"index file {path} does not decode: {exc}") from exc
        return out

    def delete_state_files(self, states: Iterable[IndexState]) -> None:
        """Remove the data files of states no longer in the log."""
        for state in states:
            for f in state.files:
                with contextlib.suppress(OSError):
                    (self.root / f.path).unlink()
            with contextlib.suppress(OSError):
                (self.data_dir / state.index / state.state_id).rmdir()


def add_state_action(
    index: str,
    state_id: str,
    instant_id: str,
    instant_sort_key: str,
    files: list[dict[str, Any]],
    meta: dict[str, Any],
    kind: str = "base",
    parent: str | None = None,
    base: str | None = None,
) -> dict[str, Any]:
    """The log action that records one new index state."""
    action: dict[str, Any] = {
        "op": "add_state",
        "index": index,
        "state_id": state_id,
        "instant": instant_id,
        "instant_sort_key": instant_sort_key,
        "files": files,
        "meta": meta,
        "created_ms": int(time.time() * 1000),
        "kind": kind,
    }
    if parent is not None:
        action["parent"] = parent
    if base is not None:
        action["base"] = base
    return action


def state_folders(store: IndexStore) -> list[tuple[str, str, Path]]:
    """Every ``data/<index>/<state id>`` folder on disk, referenced or not."""
    out: list[tuple[str, str, Path]] = []
    if not store.data_dir.is_dir():
        return out
    for index_dir in sorted(store.data_dir.iterdir()):
        if not index_dir.is_dir():
            continue
        for state_dir in sorted(index_dir.iterdir()):
            if state_dir.is_dir():
                out.append((index_dir.name, state_dir.name, state_dir))
    return out
