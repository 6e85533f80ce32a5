"""The index store: a numbered JSON log plus Arrow IPC data files with checksums.

Layout under the index root (``<table>/.lakesieve/`` by default)::

    _log/00000000000000000000.json   one commit per file, numbered from 0
    _log/_head.json                  the highest version ever committed (a hint)
    data/<index name>/<state id>/<file name>.arrow

A commit lists actions; replaying the log from 0 gives the state of every
index. A commit becomes visible atomically: it is written to a temporary file
and then hard-linked to its numbered name, which fails if the name exists, so
two writers racing for the same version cannot both win (the loser gets
:class:`~lakesieve.errors.CommitConflictError` and may retry on the new log).
Data files are written before the commit that names them, so a crash leaves
the previous state intact and at worst some unreferenced files.

**Checksums.** Every data file's SHA-256 is recorded in the log, and every
commit carries ``checksum``: the SHA-256 of its canonical JSON (sorted keys,
no whitespace) without that field, version included. A commit whose checksum
is missing or wrong counts as unreadable, exactly like one that is not JSON:
the project has no released log without checksums, so none is accepted. The
checksum catches edits and damage, not an attacker who recomputes it. After
each commit ``_head.json`` records the version written, so a deleted newest
commit is noticed (the hint can lag behind, never run ahead).

**Damaged logs.** :meth:`IndexStore.read_log` is strict by default: writers
(build, refresh, drop, vacuum) refuse to work on a log with an unreadable,
missing or tampered commit, and name ``lakesieve index repair``. Readers ask
for ``strict=False`` and get the state of every commit before the first bad
one (the previous good state) plus :attr:`LogSnapshot.problems`, which they
turn into warnings.

**Confinement.** Nothing the store reads, writes or deletes resolves outside
the index root: ids and names from the log must be plain names, file paths
must stay under ``data/``, and no path below the root may pass through a
symbolic link (lakesieve never creates one; a planted one is refused, never
followed, never deleted through).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import stat
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
HEAD_FILE = "_head.json"
#: Suffix of a log folder :func:`lakesieve.repair.repair` moved aside.
DAMAGED_PREFIX = "_log.damaged-"
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


@dataclass(frozen=True)
class LogProblem:
    """A commit of the log that could not be used.

    Attributes:
        version: the commit's number.
        reason: why (missing, not JSON, checksum mismatch, bad action...).
        indexes: the index names its actions mention, when they could be read.
    """

    version: int
    reason: str
    indexes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"index log commit {self.version} {self.reason}"


@dataclass
class LogSnapshot:
    """The replayed log: every index by name, and the version it was read at.

    ``problems`` is empty for a strict read; a lenient read stops at the first
    bad commit and lists it (and a missing newest commit) there.
    """

    version: int
    indexes: dict[str, IndexDefinition]
    table_fingerprint: str | None = None
    problems: list[LogProblem] = field(default_factory=list)


def check_name(name: str, what: str = "index name") -> str:
    """Return ``name`` if it is a plain name (no path separator, no leading dot).

    Raises:
        IndexNotFoundError: it is not.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name or ""):
        raise IndexNotFoundError(
            f"invalid {what} {name!r}: use letters, digits, '_', '-' or '.' (at most 128)"
        )
    return name


_check_name = check_name


def default_index_name(column: str, index_type: str) -> str:
    """``<column>_<type>`` with every character an index name cannot hold replaced by ``_``.

    Columns may be named anything (``Super Name``); index names are file names.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{column}_{index_type}")
    if not re.match(r"[A-Za-z0-9_]", name):
        name = "_" + name
    return name[:128]


def commit_checksum(body: dict[str, Any]) -> str:
    """SHA-256 of a commit's canonical JSON without its ``checksum`` field."""
    content = {k: v for k, v in body.items() if k != "checksum"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _clone(indexes: dict[str, IndexDefinition]) -> dict[str, IndexDefinition]:
    """A copy that applying actions may change without touching ``indexes``."""
    return {
        n: dataclasses.replace(d, states=list(d.states), by_id=dict(d.by_id))
        for n, d in indexes.items()
    }


def _mentioned(body: Any) -> tuple[str, ...]:
    """The index names a parsed commit's actions mention (best effort)."""
    names: set[str] = set()
    actions = body.get("actions") if isinstance(body, dict) else None
    for action in actions if isinstance(actions, list) else []:
        if isinstance(action, dict) and isinstance(action.get("index"), str):
            names.add(action["index"])
    return tuple(sorted(names))


class IndexStore:
    """Reads and writes the index log and data files of one table.

    Args:
        root: the index root folder (``<table>/.lakesieve`` by default).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.log_dir = self.root / LOG_DIR
        self.data_dir = self.root / DATA_DIR

    # ------------------------------------------------------------ confinement

    def confined(self, path: Path) -> Path:
        """Return ``path`` if it lies under the root and no part below the root is a link.

        Parts that do not exist yet are fine (nothing can redirect them).

        Raises:
            IndexCorruptError: the path leaves the root or passes through a symbolic link.
        """
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            raise IndexCorruptError(f"path {path} is outside the index root {self.root}") from None
        if ".." in rel.parts:
            raise IndexCorruptError(f"path {path} escapes the index root {self.root}")
        current = self.root
        for part in rel.parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                break
            except OSError as exc:
                raise IndexCorruptError(f"index path {current} cannot be checked: {exc}") from exc
            if stat.S_ISLNK(mode):
                raise IndexCorruptError(
                    f"index path {current} is a symbolic link; lakesieve never follows links in {self.root}"
                )
        return path

    def check_layout(self) -> None:
        """Refuse a root whose ``_log`` or ``data`` folder is a symbolic link.

        Raises:
            IndexCorruptError: one of them is a link.
        """
        self.confined(self.log_dir)
        self.confined(self.data_dir)

    def remove_tree(self, path: Path) -> bool:
        """Delete a folder under the root without following any link; ``False`` if it was refused.

        A folder reached through a link, or that is one, is left alone; links
        inside it are removed as links (their targets are never touched).
        """
        try:
            self.confined(path)
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except (IndexCorruptError, OSError):
            return False
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)

    def remove_state_folder(self, index: str, state_id: str) -> bool:
        """Delete ``data/<index>/<state id>`` (both plain names) and all in it."""
        try:
            check_name(index, "index name")
            check_name(state_id, "state id")
        except IndexNotFoundError:
            return False
        return self.remove_tree(self.data_dir / index / state_id)

    # ------------------------------------------------------------------ log

    def versions(self) -> list[int]:
        """The commit numbers present in the log folder, ascending."""
        if not self.log_dir.is_dir():
            return []
        out = []
        for entry in os.scandir(self.log_dir):
            stem, dot, ext = entry.name.partition(".")
            if dot and ext == "json" and stem.isdigit() and len(stem) == _VERSION_DIGITS:
                out.append(int(stem))
        return sorted(out)

    _versions = versions

    def _log_path(self, version: int) -> Path:
        return self.log_dir / f"{version:0{_VERSION_DIGITS}d}.json"

    def load_commit(self, version: int) -> list[dict[str, Any]]:
        """The actions of one commit, after checking its checksum and version.

        Raises:
            IndexCorruptError: the commit is missing, unreadable, not a commit, or fails its checksum.
        """
        path = self._log_path(version)
        try:
            self.confined(path)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                body = json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            raise IndexCorruptError(f"index log commit {path} is missing") from None
        except IndexCorruptError:
            raise
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(f"index log commit {path} is unreadable: {exc}") from exc
        if not isinstance(body, dict) or not isinstance(body.get("actions"), list):
            raise IndexCorruptError(f"index log commit {path} is unreadable: no list of actions")
        if body.get("checksum") != commit_checksum(body):
            what = (
                "has no checksum"
                if "checksum" not in body
                else "fails its checksum (edited or damaged)"
            )
            raise IndexCorruptError(f"index log commit {path} {what}")
        if body.get("version") != version:
            raise IndexCorruptError(
                f"index log commit {path} says it is version {body.get('version')!r}"
            )
        return list(body["actions"])

    def apply_commit(
        self,
        indexes: dict[str, IndexDefinition],
        actions: list[dict[str, Any]],
        fingerprint: str | None,
    ) -> tuple[dict[str, IndexDefinition], str | None]:
        """Apply one commit's actions to a copy of ``indexes``; all of them or none.

        Raises:
            IndexCorruptError: an action has a bad shape, an unknown op or an unsafe name or path.
        """
        out = _clone(indexes)
        try:
            for action in actions:
                fingerprint = self._apply(out, action, fingerprint)
        except (KeyError, TypeError, ValueError, IndexNotFoundError) as exc:
            raise IndexCorruptError(f"has a bad action: {exc}") from exc
        return out, fingerprint

    def head_hint(self) -> int:
        """The highest version a writer recorded in ``_head.json`` (-1 when none)."""
        path = self.log_dir / HEAD_FILE
        try:
            self.confined(path)
            value = json.loads(path.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError, AttributeError, IndexCorruptError):
            return -1
        return value if isinstance(value, int) and value >= 0 else -1

    def _write_head(self, version: int) -> None:
        if version <= self.head_hint():
            return
        tmp = self.log_dir / f".tmp-head-{uuid.uuid4().hex}.json"
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps({"version": version}), encoding="utf-8")
            os.replace(tmp, self.log_dir / HEAD_FILE)
        with contextlib.suppress(OSError):
            tmp.unlink()

    def read_log(self, strict: bool = True) -> LogSnapshot:
        """Replay every commit and return the current state of all indexes.

        Args:
            strict: raise on the first bad commit (writers); when ``False``,
                return the state before it with the problem listed (readers).

        Raises:
            IndexCorruptError: (strict) a commit is missing, unreadable, fails its
                checksum or has a bad shape, or the newest commit was removed.
        """
        indexes: dict[str, IndexDefinition] = {}
        fingerprint: str | None = None
        version = -1
        problems: list[LogProblem] = []
        for v in self.versions():
            if v != version + 1:
                problems.append(LogProblem(version + 1, "is missing"))
                break
            try:
                indexes, fingerprint = self.apply_commit(indexes, self.load_commit(v), fingerprint)
            except IndexCorruptError as exc:
                problems.append(self.problem(v, exc))
                break
            version = v
        if not problems:
            head = self.head_hint()
            if head > version:
                problems.append(
                    LogProblem(
                        version + 1,
                        f"is missing (commit {head} was written; the log ends at {version})",
                    )
                )
        if problems and strict:
            raise IndexCorruptError(
                f"{problems[0]} in {self.log_dir}; run `lakesieve index repair` to rebuild the log"
            )
        return LogSnapshot(version, indexes, fingerprint, problems)

    def problem(self, version: int, exc: IndexCorruptError) -> LogProblem:
        """The :class:`LogProblem` of a commit that :meth:`load_commit` or :meth:`apply_commit` refused."""
        reason = str(exc).replace(f"index log commit {self._log_path(version)} ", "")
        return LogProblem(version, reason, self.peek_indexes(version))

    def peek_indexes(self, version: int) -> tuple[str, ...]:
        """The index names commit ``version`` mentions, read without trusting it (for reports)."""
        try:
            return _mentioned(json.loads(self._log_path(version).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return ()

    def _apply(
        self, indexes: dict[str, IndexDefinition], action: dict[str, Any], fingerprint: str | None
    ) -> str | None:
        if not isinstance(action, dict):
            raise TypeError("an action is not an object")
        op = action["op"]
        if op == "table":
            return str(action["fingerprint"])
        if op == "define":
            name = check_name(action["index"], "index name")
            indexes[name] = IndexDefinition(
                name=name,
                type=str(action["type"]),
                column=str(action["column"]),
                key_type=str(action["key_type"]),
                params=dict(action["params"]),
            )
        elif op == "add_state":
            name = check_name(action["index"], "index name")
            if name not in indexes:
                raise KeyError(f"state for undefined index {name!r}")
            files = tuple(
                StoredFile(
                    name=check_name(f["name"], "index file name"),
                    path=self._safe_rel(str(f["path"])),
                    sha256=str(f["sha256"]),
                    size_bytes=int(f["size_bytes"]),
                    rows=int(f["rows"]),
                )
                for f in action["files"]
            )
            state = IndexState(
                index=name,
                state_id=check_name(action["state_id"], "state id"),
                instant=str(action["instant"]),
                instant_sort_key=str(action["instant_sort_key"]),
                files=files,
                meta=dict(action["meta"]),
                created_ms=int(action["created_ms"]),
                kind=str(action.get("kind") or "base"),
                parent=(
                    check_name(action["parent"], "parent state id")
                    if action.get("parent")
                    else None
                ),
                base=(check_name(action["base"], "base state id") if action.get("base") else None),
            )
            if state.kind not in ("base", "delta") or (state.kind == "delta" and not state.parent):
                raise ValueError(f"state {state.state_id} has kind {state.kind!r} without a parent")
            indexes[name].by_id[state.state_id] = state
            states = [
                s for s in indexes[name].states if s.instant_sort_key != state.instant_sort_key
            ]
            states.append(state)
            states.sort(key=lambda s: s.instant_sort_key)
            indexes[name].states = states
        elif op == "remove_state":
            name = check_name(action["index"], "index name")
            state_id = check_name(action["state_id"], "state id")
            if name in indexes:
                indexes[name].states = [s for s in indexes[name].states if s.state_id != state_id]
                indexes[name].by_id.pop(state_id, None)
        elif op == "drop":
            indexes.pop(check_name(action["index"], "index name"), None)
        else:
            raise ValueError(f"unknown log action {op!r}")
        return fingerprint

    def _safe_rel(self, rel: str) -> str:
        parts = Path(rel).parts
        if (
            Path(rel).is_absolute()
            or ".." in parts
            or not parts
            or parts[0] != DATA_DIR
            or "\x00" in rel
        ):
            raise ValueError(f"file path {rel!r} escapes the index root")
        return rel

    def commit(self, actions: list[dict[str, Any]], expected_version: int) -> int:
        """Atomically write commit ``expected_version + 1`` (with its checksum).

        Raises:
            CommitConflictError: another writer committed that version first.
            IndexCorruptError: the log folder is reached through a symbolic link.
        """
        self.confined(self.log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        version = expected_version + 1
        body: dict[str, Any] = {
            "version": version,
            "timestamp_ms": int(time.time() * 1000),
            "actions": actions,
        }
        # the checksum covers what a reader will parse back, so compute it on the round trip
        body = json.loads(json.dumps(body, sort_keys=True))
        body["checksum"] = commit_checksum(body)
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
        self._write_head(version)
        return version

    def commit_with_retry(self, make_actions: Any, attempts: int = 5) -> tuple[int, LogSnapshot]:
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
        check_name(index, "index name")
        for name in built.files:
            check_name(name, "index file name")
        state_id = f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        folder = self.confined(self.data_dir / index / state_id)
        folder.mkdir(parents=True, exist_ok=True)
        self.confined(folder)
        records = []
        for name, table in sorted(built.files.items()):
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

    def read_bytes(self, f: StoredFile) -> bytes:
        """One data file's bytes, checked against its checksum; never through a link.

        Raises:
            IndexCorruptError: the file is missing, a link, unreadable or fails its checksum.
        """
        path = self.root / self._safe_rel(f.path)
        self.confined(path)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise IndexCorruptError(f"index file {path} is unreadable: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != f.sha256:
            raise IndexCorruptError(f"index file {path} fails its checksum")
        return data

    def read_files(self, state: IndexState) -> dict[str, pa.Table]:
        """Read and verify a state's data files.

        Raises:
            IndexCorruptError: a file is missing, a link, fails its checksum or does not decode.
        """
        out: dict[str, pa.Table] = {}
        for f in state.files:
            data = self.read_bytes(f)
            try:
                out[f.name] = ipc.open_file(pa.py_buffer(data)).read_all()
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise IndexCorruptError(
                    f"index file {self.root / f.path} does not decode: {exc}"
                ) from exc
        return out

    def delete_state_files(self, states: Iterable[IndexState]) -> None:
        """Remove the data files of states no longer in the log (never through a link)."""
        for state in states:
            for f in state.files:
                path = self.root / f.path
                with contextlib.suppress(OSError, IndexCorruptError, ValueError):
                    self._safe_rel(f.path)
                    self.confined(path)
                    path.unlink()
            with contextlib.suppress(OSError, IndexCorruptError, IndexNotFoundError):
                folder = (
                    self.data_dir / check_name(state.index) / check_name(state.state_id, "state id")
                )
                self.confined(folder)
                folder.rmdir()


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
    """Every ``data/<index>/<state id>`` folder on disk, referenced or not.

    Symbolic links are skipped, never followed.

    Raises:
        IndexCorruptError: ``data`` itself is reached through a link.
    """
    out: list[tuple[str, str, Path]] = []
    store.confined(store.data_dir)
    if not store.data_dir.is_dir():
        return out
    with os.scandir(store.data_dir) as indexes:
        index_dirs = sorted(
            (e.name, Path(e.path)) for e in indexes if e.is_dir(follow_symlinks=False)
        )
    for index_name, index_dir in index_dirs:
        with os.scandir(index_dir) as states:
            for entry in sorted(states, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    out.append((index_name, entry.name, Path(entry.path)))
    return out
