"""The index store: a numbered JSON log plus Arrow IPC data files with checksums.

Layout under the index root (``<table>/.lakesieve/`` by default)::

    _log/00000000000000000000.json   one commit per file, numbered from 0
    _log/_head.json                  the highest version ever committed (a hint)
    data/<index name>/<state id>/<file name>.arrow
    _lock                            the writers' lock (:mod:`lakesieve.store.lock`)

A commit lists actions; replaying the log from 0 gives the state of every
index. A commit is written to a temporary file and hard-linked to its numbered
name, which fails if the name exists: of two writers racing for one version
the loser gets :class:`~lakesieve.errors.CommitConflictError` and may retry.
Data files are written before the commit that names them (a crash leaves orphans).

Records and replay: :mod:`.index_log`; on object storage: :mod:`.object_index`.

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

**Races and faults.** A read that overlaps a commit may list the log
before the commit lands; ``_head.json`` is read before the listing, and a
commit that still looks missing is re-read a few times before it counts as
damage. Writers hold the root's lock (shared among them, exclusive for a
repair, whose log swap :mod:`lakesieve.store.log_swap` makes safe against a kill).
A refused write (read-only, full, forbidden) raises a one-line
:class:`~lakesieve.errors.StoreWriteError` and leaves no temporary file.

**Confinement.** Nothing the store reads, writes or deletes resolves outside
the index root: ids and names from the log must be plain names, file paths
must stay under ``data/``, and no path below the root may pass through a
symbolic link (a planted one is refused, never followed or deleted through).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
from lakesieve.errors import CommitConflictError, IndexCorruptError, IndexNotFoundError
from lakesieve.files.ipc_files import decode_problem, read_index_file
from lakesieve.model import BuiltIndex
from lakesieve.store.errors import replace_file, write_error, write_new_file
from lakesieve.store.index_log import (
    IndexDefinition,
    IndexState,
    LogProblem,
    LogSnapshot,
    StoredFile,
    apply_action,
    check_name,
    clone_indexes,
    commit_bytes,
    commit_checksum,
    mentioned_indexes,
    safe_data_path,
)
from lakesieve.store.lock import store_lock
from lakesieve.store.log_swap import DAMAGED_PREFIX, LOG_DIR
from lakesieve.store.paths import StoreRoot
from lakesieve.store.task_files import file_record, ipc_file_bytes, task_file_suffix

__all__ = ["DAMAGED_PREFIX", "DEFAULT_DIRNAME", "HEAD_FILE", "LOG_DIR", "IndexStore"]

DEFAULT_DIRNAME = ".lakesieve"
HEAD_FILE = "_head.json"
_VERSION_DIGITS = 20
#: Pauses before re-reading a log that looks as if a commit were missing (mid-commit).
_REREAD_SECONDS = (0.01, 0.05, 0.2)


class IndexStore(StoreRoot):
    """Reads and writes the index log and data files of one table.

    Args:
        root: the index root folder (``<table>/.lakesieve`` by default).
    """

    # ------------------------------------------------------------------ log

    def versions(self) -> list[int]:
        """The commit numbers present in the log folder, ascending.

        The folder is listed by :meth:`~lakesieve.store.paths.StoreRoot.log_names`,
        which first puts in place a ``_log`` that a repair's log swap left
        missing (or moved aside while it was being listed).

        Raises:
            IndexCorruptError: ``_log`` is missing beside repair leftovers that
                cannot be settled here: not an empty store (repair fixes it).
        """
        out = []
        for name in self.log_names():
            stem, dot, ext = name.partition(".")
            if dot and ext == "json" and stem.isdigit() and len(stem) == _VERSION_DIGITS:
                out.append(int(stem))
        return sorted(out)

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
                data = fh.read()
        except FileNotFoundError:
            raise IndexCorruptError(f"index log commit {path} is missing") from None
        except IndexCorruptError:
            raise
        except OSError as exc:
            raise IndexCorruptError(f"index log commit {path} is unreadable: {exc}") from exc
        return self.parse_commit(path, data, version)

    def parse_commit(self, path: Path, data: bytes, version: int) -> list[dict[str, Any]]:
        """The actions of commit ``version`` read from ``path`` as ``data``, checked.

        Raises:
            IndexCorruptError: not JSON, not a commit, fails its checksum, or another version.
        """
        try:
            body = json.loads(data.decode("utf-8"))
        except ValueError as exc:
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
        out = clone_indexes(indexes)
        try:
            for action in actions:
                fingerprint = apply_action(out, action, fingerprint)
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
        with contextlib.suppress(OSError):  # a hint: a head that lags behind is allowed
            replace_file(self.log_dir / HEAD_FILE, tmp, json.dumps({"version": version}).encode())

    def read_log(self, strict: bool = True) -> LogSnapshot:
        """Replay every commit and return the current state of all indexes.

        A commit that looks missing (a gap, a head beyond the last commit, a
        ``_log`` gone in a repair's swap) is re-read a few times over a
        fraction of a second first: a read that overlaps a commit can list
        the folder before the commit lands; only damage that stays is reported.

        Args:
            strict: raise on the first bad commit (writers); when ``False``,
                return the state before it with the problem listed (readers).

        Raises:
            IndexCorruptError: (strict) a commit is missing, unreadable, fails its
                checksum or has a bad shape, or the newest commit was removed.
        """
        snap = self._replay()
        for pause in _REREAD_SECONDS:
            if not any(p.reason.startswith("is missing") for p in snap.problems):
                break
            time.sleep(pause)
            snap = self._replay()
        if snap.problems and strict:
            first = snap.problems[0]
            if "`lakesieve index repair`" in first.reason:  # it says where, and what to do
                raise IndexCorruptError(str(first))
            raise IndexCorruptError(
                f"{first} in {self.log_dir}; run `lakesieve index repair` to rebuild the log"
            )
        return snap

    def read_log_ahead(self) -> None:
        """Start a reader's :meth:`read_log` in the background where requests cost (a local disk: no)."""

    def _replay(self) -> LogSnapshot:
        """One pass of :meth:`read_log`: every commit up to the first bad one."""
        indexes: dict[str, IndexDefinition] = {}
        fingerprint: str | None = None
        version = -1
        problems: list[LogProblem] = []
        try:
            head, listed = self.head_and_versions()
        except IndexCorruptError as exc:
            return LogSnapshot(-1, {}, None, [LogProblem(0, f"is missing: {exc}")])
        version = self.replay_start() - 1  # a reset commit replaces all before it
        for v in (v for v in listed if v > version):
            if v != version + 1:
                problems.append(LogProblem(version + 1, "is missing"))
                break
            try:
                indexes, fingerprint = self.apply_commit(indexes, self.load_commit(v), fingerprint)
            except IndexCorruptError as exc:
                problems.append(self.problem(v, exc))
                break
            version = v
        if not problems and head > version:
            problems.append(
                LogProblem(
                    version + 1,
                    f"is missing (commit {head} was written; the log ends at {version})",
                )
            )
        return LogSnapshot(version, indexes, fingerprint, problems)

    def head_and_versions(self) -> tuple[int, list[int]]:
        """The head hint, then the listed versions: each commit the head names is listed, unless lost."""
        return self.head_hint(), self.versions()

    def replay_start(self) -> int:
        """The first commit a replay reads: 0 (an object store's newest reset commit)."""
        return 0

    def problem(self, version: int, exc: IndexCorruptError) -> LogProblem:
        """The :class:`LogProblem` of a commit that :meth:`load_commit` or :meth:`apply_commit` refused."""
        reason = str(exc).replace(f"index log commit {self._log_path(version)} ", "")
        return LogProblem(version, reason, self.peek_indexes(version))

    def peek_indexes(self, version: int) -> tuple[str, ...]:
        """The index names commit ``version`` mentions, read without trusting it (for reports)."""
        try:
            return mentioned_indexes(
                json.loads(self._log_path(version).read_text(encoding="utf-8"))
            )
        except (OSError, ValueError):
            return ()

    def commit(self, actions: list[dict[str, Any]], expected_version: int) -> int:
        """Atomically write commit ``expected_version + 1`` (with its checksum).

        The writers' lock is held while it is written (a repair cannot swap
        the log meanwhile).

        Raises:
            CommitConflictError: another writer committed that version first.
            IndexCorruptError: the log folder is reached through a symbolic link,
                or is missing beside a repair's leftovers.
            StoreBusyError: a repair holds the store.
            StoreWriteError: the log cannot be written (read-only, full, forbidden).
        """
        self.confined(self.log_dir)
        version = expected_version + 1
        data = commit_bytes(actions, version)
        with store_lock(self.root, create=True):
            if version == 0:
                self.versions()  # a first commit must not hide a log a repair left aside
            target = self._log_path(version)
            tmp = self.log_dir / f".tmp-{uuid.uuid4().hex}.json"
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise write_error(exc, self.log_dir) from None
            try:
                write_new_file(tmp, data)
                os.link(tmp, target)
            except FileExistsError:
                raise CommitConflictError(
                    f"index log {self.log_dir}: version {version} was committed by another writer"
                ) from None
            except OSError as exc:
                raise write_error(exc, self.log_dir) from None
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
        """Write a built index's tables as Arrow IPC files; return the state id and file records.

        Files Spark tasks already wrote (``built.written``, in the folder of
        ``built.state_id``) are checked to be there with their recorded size
        and listed with the rest.

        Raises:
            StoreWriteError: a file cannot be written (read-only, full, forbidden);
                the state's folder, which nothing names yet, is removed first.
        """
        check_name(index, "index name")
        for name in built.files:
            check_name(name, "index file name")
        state_id = built.state_id or f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        check_name(state_id, "state id")
        folder = self.confined(self.data_dir / index / state_id)
        written = self._task_records(folder, built)
        try:
            return state_id, self._write_tables(folder, built) + written
        except OSError as exc:
            # nothing names the state yet: its folder goes, and with it what a full disk needs back
            self.remove_state_folder(index, state_id)
            raise write_error(exc, folder) from None

    def _write_tables(self, folder: Path, built: BuiltIndex) -> list[dict[str, Any]]:
        """Write ``built``'s tables into ``folder`` as Arrow IPC files; their records."""
        folder.mkdir(parents=True, exist_ok=True)
        self.confined(folder)
        records = []
        for name, table in sorted(built.files.items()):
            path = folder / f"{name}.arrow"
            data = ipc_file_bytes(table)
            replace_file(path, folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp", data)
            rec = file_record(name, data, table.num_rows)
            records.append({**rec, "path": path.relative_to(self.root).as_posix()})
        return records

    def _task_records(self, folder: Path, built: BuiltIndex) -> list[dict[str, Any]]:
        """The records of the files Spark tasks wrote into ``folder``, each checked to be there."""
        records = []
        for rec in built.written:
            name = check_name(str(rec["name"]), "index file name")
            path = folder / f"{name}{task_file_suffix(rec)}"
            if rec.get("path") != path.relative_to(self.root).as_posix() or name in built.files:
                raise IndexCorruptError(f"task-written index file {name!r} is not in {folder}")
            if os.lstat(path).st_size != int(rec["size_bytes"]):
                raise IndexCorruptError(f"task-written index file {path} changed size")
            records.append({k: rec[k] for k in ("name", "path", "sha256", "size_bytes", "rows")})
        return records

    def read_bytes(self, f: StoredFile) -> bytes:
        """One data file's bytes, checked against its checksum; never through a link.

        Raises:
            IndexCorruptError: the file is missing, a link, unreadable or fails its checksum.
        """
        path = self.root / safe_data_path(f.path)
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

    def file_problem(
        self, f: StoredFile, checksum: bool = True, decode: bool = False
    ) -> str | None:
        """Why data file ``f`` cannot be used, or ``None`` when it verifies.

        With ``checksum=False`` only what ``stat`` tells is checked (the file
        exists, is a plain file reached through no link, and has the recorded
        size): cheap, and it catches a deleted or truncated file but not
        flipped bytes. With ``checksum=True`` the bytes are read and hashed
        too, and with ``decode=True`` they must also open as Arrow IPC.
        """
        try:
            path = self.root / safe_data_path(f.path)
            self.confined(path)
            info = os.lstat(path)
        except (ValueError, IndexCorruptError) as exc:
            return str(exc)
        except FileNotFoundError:
            return f"index file {self.root / f.path} is missing"
        except OSError as exc:
            return f"index file {self.root / f.path} is unreadable: {exc}"
        if not stat.S_ISREG(info.st_mode):
            return f"index file {path} is not a plain file"
        if info.st_size != f.size_bytes:
            return f"index file {path} has {info.st_size} bytes, the log records {f.size_bytes}"
        if not (checksum or decode):
            return None
        try:
            data = self.read_bytes(f)
        except IndexCorruptError as exc:
            return str(exc)
        return decode_problem(data, path) if decode else None

    def prefetch(self, files: Iterable[StoredFile]) -> None:
        """Nothing on a local disk (an object store fetches them together)."""

    def read_files(self, state: IndexState) -> dict[str, pa.Table]:
        """Read and verify a state's data files.

        Raises:
            IndexCorruptError: a file is missing, a link, fails its checksum or does not decode.
        """
        out: dict[str, pa.Table] = {}
        for f in state.files:
            data = self.read_bytes(f)
            try:
                out[f.name] = read_index_file(data)
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
                    safe_data_path(f.path)
                    self.confined(path)
                    path.unlink()
            with contextlib.suppress(OSError, IndexCorruptError, IndexNotFoundError):
                folder = (
                    self.data_dir / check_name(state.index) / check_name(state.state_id, "state id")
                )
                self.confined(folder)
                folder.rmdir()
