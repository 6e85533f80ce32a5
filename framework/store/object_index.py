"""The index store on object storage (S3, GCS, Azure): the same log and files, with no renames.

:class:`ObjectIndexStore` keeps the layout, records, checksums and replay of
:class:`~lakesieve.store.IndexStore` and replaces its mechanics with what an
object store offers (:class:`~lakesieve.store.blobs.ObjectBlobs`):

- a commit is one create-only write of ``_log/<n>.json`` (``If-None-Match: *``);
  of two writers racing for a version exactly one wins, the other gets
  :class:`~lakesieve.errors.CommitConflictError` and retries on the newer log;
- data files go to their state's fresh folder (a new state id each time) and
  become live only through the commit that names them; a writer killed before
  its commit leaves unreferenced files, which vacuum removes after its grace
  period (judged by the time in the state id: a live writer's staged files
  look like orphans until then);
- ``_log/_head.json`` is a hint written after each commit, as on a disk;
- there is no writers' lock to take: writers never need one among themselves,
  and a repair renames nothing: it appends a *reset* commit holding every good
  state, create-only like any commit, then a marker ``_log/_reset-<version>``
  from which replays start (the damaged commits before it stay, unread);
- before the first write a process proves once per store that it keeps the
  first of two creates (:func:`~lakesieve.store.blobs.probe_create_only`), so a
  store without put-if-absent is refused, never written to unsafely.

Paths keep their ``scheme://`` (:class:`UrlPath`), so every message names the
object as a user would type it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any, cast

from lakesieve.errors import (
    CommitConflictError,
    IndexCorruptError,
    IndexNotFoundError,
    LakesieveError,
    StoreWriteError,
)
from lakesieve.files.ipc_files import decode_problem
from lakesieve.model import BuiltIndex
from lakesieve.store import HEAD_FILE, IndexStore
from lakesieve.store.blobs import BlobNotFound, Blobs, ObjectBlobs, probe_create_only
from lakesieve.store.index_log import (
    DATA_DIR,
    IndexState,
    LogSnapshot,
    StoredFile,
    check_name,
    commit_bytes,
    mentioned_indexes,
    safe_data_path,
)
from lakesieve.store.log_swap import LOG_DIR
from lakesieve.store.task_files import ON_DEMAND_PREFIX, file_record, ipc_file_bytes

__all__ = ["ObjectIndexStore", "UrlPath", "clear_file_cache", "state_time_ms"]

#: stores whose create-only writes this process has proved (by URL)
_PROVED: set[str] = set()
_PROVED_LOCK = threading.Lock()
#: commits of one log fetched at once while it is replayed
FETCH_THREADS = 8
#: replays started ahead of a plan (:meth:`ObjectIndexStore.read_log_ahead`)
_AHEAD = ThreadPoolExecutor(4, thread_name_prefix="lakesieve-log-ahead")
#: bytes of verified data files kept in the process (by root, path and checksum)
FILE_CACHE_BYTES = 256 << 20
_FILES: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
_FILES_SIZE = [0]
_FILES_LOCK = threading.Lock()
#: most bytes a plan fetches ahead of its readers
PREFETCH_BYTES = 64 << 20
#: ``_log/_reset-<version>``: a repair's reset commit, where replays start
RESET_PREFIX = "_reset-"


def clear_file_cache() -> None:
    """Forget the data files kept in the process (a benchmark's fresh start)."""
    with _FILES_LOCK:
        _FILES.clear()
        _FILES_SIZE[0] = 0


def _is_reset_marker(name: str) -> bool:
    digits = name[len(RESET_PREFIX) :]
    return name.startswith(RESET_PREFIX) and digits.isdigit() and len(digits) == 20


class UrlPath(PurePosixPath):
    """A path below an object-store URL whose text keeps its ``scheme://``."""

    def __str__(self) -> str:
        text = super().__str__()
        scheme, sep, rest = text.partition(":/")
        if sep and scheme and "/" not in scheme and not rest.startswith("/"):
            return f"{scheme}://{rest}"
        return text


def state_time_ms(state_id: str) -> int | None:
    """The creation time a state id carries (``<ms>-<random>``), or ``None``."""
    stamp, _, rest = state_id.partition("-")
    return int(stamp) if stamp.isdigit() and rest else None


class ObjectIndexStore(IndexStore):
    """An index store whose root is an object-store URL (``s3://bucket/t/.lakesieve``).

    Args:
        root: the index root's URL.
        options: the store's options by their environment-variable names
            (``AWS_ENDPOINT_URL``, ``AWS_REGION``...), over the environment's.
        blobs: the blobs to use instead of opening ``root`` (tests).
    """

    remote = True

    def __init__(
        self, root: str, options: dict[str, str] | None = None, blobs: Blobs | None = None
    ) -> None:
        url = str(root).rstrip("/")
        self.blobs = blobs if blobs is not None else ObjectBlobs(url, options)
        # a PurePath with the scheme kept: the base class composes paths, never opens them here
        self.root = cast(Path, UrlPath(url))
        self.log_dir = self.root / LOG_DIR
        self.data_dir = self.root / DATA_DIR
        self._replaying = threading.local()
        self._ahead: Future[LogSnapshot] | None = None

    def key(self, path: Path) -> str:
        """The object key of ``path`` relative to the root (checked to stay below it)."""
        return self.confined(path).relative_to(self.root).as_posix()

    # ------------------------------------------------------------------ root

    def confined(self, path: Path) -> Path:
        """``path`` if it lies below the root with no ``..`` (an object store has no links)."""
        try:
            rel = PurePosixPath(path).relative_to(PurePosixPath(self.root))
        except ValueError:
            raise IndexCorruptError(f"path {path} is outside the index root {self.root}") from None
        if ".." in rel.parts:
            raise IndexCorruptError(f"path {path} escapes the index root {self.root}")
        return path

    def log_names(self) -> list[str]:
        """The names in ``_log/`` (one listing request); notes the newest reset marker."""
        try:
            keys = self.blobs.list(LOG_DIR)
        except LakesieveError as exc:
            raise IndexCorruptError(
                f"the index log {self.log_dir} cannot be listed: {exc}"
            ) from exc
        names = [k.rsplit("/", 1)[-1] for k in keys if k.count("/") == 1]
        resets = [int(n[len(RESET_PREFIX) :]) for n in names if _is_reset_marker(n)]
        self._replaying.reset = max(resets, default=0)
        return names

    def replay_start(self) -> int:
        """The newest reset commit a repair marked (0 when none): a replay starts there."""
        return int(getattr(self._replaying, "reset", 0))

    def reset_log(self, actions: list[dict[str, Any]]) -> int:
        """Commit ``actions`` as a reset after everything listed, then mark it; its version.

        A repair's way on object storage: nothing is renamed or deleted. The
        reset commit (``{"op": "reset"}`` first) is written create-only after
        the highest version listed or recorded in the head, then the marker
        ``_log/_reset-<version>`` tells readers to start there. A kill between the
        two leaves the old log in force (the next repair resets after it).

        Raises:
            CommitConflictError: another writer committed that version first.
            StoreWriteError: the log cannot be written.
        """
        listed = self.versions()
        version = max([*listed, self.head_hint(), -1]) + 1
        self.commit([{"op": "reset"}, *actions], version - 1)
        self.blobs.put(f"{LOG_DIR}/{RESET_PREFIX}{version:020d}", str(version).encode())
        return version

    def check_layout(self) -> None:
        """Nothing to check: an object store has no links."""

    def remove_tree(self, path: Path) -> bool:
        """Delete every object below ``path``; ``False`` if it lies outside the root."""
        try:
            prefix = self.key(path)
        except IndexCorruptError:
            return False
        if not prefix or prefix == ".":
            return False
        for key in self.blobs.list(prefix):
            self.blobs.delete(key)
        return True

    def writing(
        self, exclusive: bool = False, create: bool = False, probe: bool = True
    ) -> contextlib.AbstractContextManager[None]:
        """No lock to take; the store's create-only writes are proved once per process.

        A repair needs no exclusion here: it appends a reset commit
        (:meth:`reset_log`), create-only like any other.

        Raises:
            StoreWriteError: the store keeps no first create (no put-if-absent), or
                cannot be written.
        """
        self.prove_create_only()
        return contextlib.nullcontext()

    def prove_create_only(self) -> None:
        """Refuse a store that does not keep the first of two creates (once per process)."""
        url = str(self.root)
        with _PROVED_LOCK:
            if url in _PROVED:
                return
        probe_create_only(self.blobs)
        with _PROVED_LOCK:
            _PROVED.add(url)

    # ------------------------------------------------------------------ log

    def versions(self) -> list[int]:
        """The commit numbers listed, ascending; a replay also fetches them all at once.

        Each commit is one GET; during :meth:`_replay` they are fetched together
        (:data:`FETCH_THREADS` at a time), so replaying a log costs about three
        round trips (head, listing, commits) whatever its length.
        """
        listed = super().versions()
        fetched = getattr(self._replaying, "fetched", None)
        wanted = [v for v in listed if v >= self.replay_start()]  # none a reset left behind
        if fetched is not None and len(wanted) > 1:
            keys = {v: self.key(self._log_path(v)) for v in wanted}
            with ThreadPoolExecutor(min(FETCH_THREADS, len(keys))) as pool:
                futures = {v: pool.submit(self.blobs.read, k) for v, k in keys.items()}
            for v, future in futures.items():
                error = future.exception()
                fetched[v] = future.result() if error is None else error
        return listed

    def read_log_ahead(self) -> None:
        """Start replaying the log in the background; the next :meth:`read_log` of a reader takes it.

        A plan starts it before it reads the table's own metadata, so the
        store's round trips overlap the format's. Only a reader's replay
        (``strict=False``) takes it: a log read a moment early is what a reader
        that started a moment earlier sees. A writer always replays afresh.
        """
        self._ahead = _AHEAD.submit(IndexStore.read_log, self, False)

    def read_log(self, strict: bool = True) -> LogSnapshot:
        """:meth:`IndexStore.read_log`, or for a reader the replay started ahead."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and not strict:
            return ahead.result()
        return super().read_log(strict)

    def head_and_versions(self) -> tuple[int, list[int]]:
        """The head hint and the listing in one round trip (two requests at once).

        A commit that lands between the two can look missing for a moment:
        :meth:`read_log` reads again before it reports one.
        """
        with ThreadPoolExecutor(1) as pool:
            head = pool.submit(self.head_hint)
            listed = self.versions()
        return head.result(), listed

    def _replay(self) -> LogSnapshot:
        self._replaying.fetched = {}
        try:
            return super()._replay()
        finally:
            self._replaying.fetched = None

    def load_commit(self, version: int) -> list[dict[str, Any]]:
        """The actions of one commit (one GET), checked like a local one.

        Raises:
            IndexCorruptError: the commit is missing, unreadable, not a commit, or fails its checksum.
        """
        path = self._log_path(version)
        fetched = getattr(self._replaying, "fetched", None) or {}
        try:
            got = fetched.pop(version, None)
            if isinstance(got, BaseException):
                raise got
            data = got if got is not None else self.blobs.read(self.key(path))
        except BlobNotFound:
            raise IndexCorruptError(f"index log commit {path} is missing") from None
        except LakesieveError as exc:
            raise IndexCorruptError(f"index log commit {path} is unreadable: {exc}") from exc
        return self.parse_commit(path, data, version)

    def head_hint(self) -> int:
        """The highest version a writer recorded in ``_log/_head.json`` (-1 when none)."""
        try:
            value = json.loads(self.blobs.read(f"{LOG_DIR}/{HEAD_FILE}")).get("version")
        except (LakesieveError, OSError, ValueError, AttributeError):
            return -1
        return value if isinstance(value, int) and value >= 0 else -1

    def _write_head(self, version: int) -> None:
        with contextlib.suppress(LakesieveError, OSError):  # a hint: it may lag behind
            self.blobs.put(f"{LOG_DIR}/{HEAD_FILE}", json.dumps({"version": version}).encode())

    def peek_indexes(self, version: int) -> tuple[str, ...]:
        """The index names commit ``version`` mentions, read without trusting it."""
        try:
            return mentioned_indexes(json.loads(self.blobs.read(self.key(self._log_path(version)))))
        except (LakesieveError, OSError, ValueError):
            return ()

    def commit(self, actions: list[dict[str, Any]], expected_version: int) -> int:
        """Write commit ``expected_version + 1`` create-only (with its checksum).

        Raises:
            CommitConflictError: another writer committed that version first.
            StoreWriteError: the log cannot be written, or the store has no create-only writes.
        """
        version = expected_version + 1
        data = commit_bytes(actions, version)
        self.prove_create_only()
        if not self.blobs.create(self.key(self._log_path(version)), data):
            raise CommitConflictError(
                f"index log {self.log_dir}: version {version} was committed by another writer"
            )
        self._write_head(version)
        return version

    # ------------------------------------------------------------------ files

    def _write_tables(self, folder: Path, built: BuiltIndex) -> list[dict[str, Any]]:
        """Put ``built``'s tables below ``folder`` (a fresh state folder); their records.

        Raises:
            StoreWriteError: a file cannot be written; what this call wrote is deleted first.
        """
        records: list[dict[str, Any]] = []
        try:
            for name, table in sorted(built.files.items()):
                key = self.key(folder / f"{name}.arrow")
                data = ipc_file_bytes(table)
                self.blobs.put(key, data)
                records.append({**file_record(name, data, table.num_rows), "path": key})
        except StoreWriteError:
            for rec in records:
                with contextlib.suppress(LakesieveError, OSError):
                    self.blobs.delete(str(rec["path"]))
            raise
        return records

    def _task_records(self, folder: Path, built: BuiltIndex) -> list[dict[str, Any]]:
        """Spark tasks never write into an object-store state (their files come back in memory)."""
        if built.written:
            raise IndexCorruptError(
                f"index files written by Spark tasks cannot be kept in {folder} on object storage"
            )
        return []

    def read_bytes(self, f: StoredFile) -> bytes:
        """One data file's bytes, checked against its checksum: one GET, or none when cached.

        A data file is never rewritten (a new state gets a new folder) and the
        log records its checksum, so the bytes that passed it are kept in the
        process (:data:`FILE_CACHE_BYTES` at most, least recently used out).

        Raises:
            IndexCorruptError: the file is missing, unreadable or fails its checksum.
        """
        cache_key = (str(self.root), f.path, f.sha256)
        with _FILES_LOCK:
            cached = _FILES.get(cache_key)
            if cached is not None:
                _FILES.move_to_end(cache_key)
                return cached
        data = self._fetch_checked(f)
        with _FILES_LOCK:
            _FILES[cache_key] = data
            _FILES_SIZE[0] += len(data)
            while _FILES_SIZE[0] > FILE_CACHE_BYTES and _FILES:
                _FILES_SIZE[0] -= len(_FILES.popitem(last=False)[1])
        return data

    def prefetch(self, files: Iterable[StoredFile]) -> None:
        """Fetch the eagerly read ``files`` together into the process's cache (errors ignored).

        Files read on demand (large exact indexes) and more than
        :data:`PREFETCH_BYTES` in all are left to their readers.
        """
        todo, budget = [], PREFETCH_BYTES
        try:
            for f in files:
                if f.name.startswith(ON_DEMAND_PREFIX) or f.size_bytes > budget:
                    continue
                budget -= f.size_bytes
                todo.append(f)
        except Exception:  # a broken chain: its reader reports it
            return
        if len(todo) < 2:
            return
        with ThreadPoolExecutor(min(FETCH_THREADS, len(todo))) as pool:
            for future in [pool.submit(self.read_bytes, f) for f in todo]:
                future.exception()  # a bad file fails again, with its message, when read

    def _fetch_checked(self, f: StoredFile) -> bytes:
        """One data file's bytes from the store (one GET), checked against its checksum."""
        path = self.root / safe_data_path(f.path)
        try:
            data = self.blobs.read(self.key(path))
        except BlobNotFound:
            raise IndexCorruptError(f"index file {path} is unreadable: it is missing") from None
        except LakesieveError as exc:
            raise IndexCorruptError(f"index file {path} is unreadable: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != f.sha256:
            raise IndexCorruptError(f"index file {path} fails its checksum")
        return data

    def file_problem(
        self, f: StoredFile, checksum: bool = True, decode: bool = False
    ) -> str | None:
        """Why data file ``f`` cannot be used, or ``None`` (a HEAD; a GET for the checksum)."""
        try:
            path = self.root / safe_data_path(f.path)
            size = self.blobs.size(self.key(path))
        except (ValueError, IndexCorruptError) as exc:
            return str(exc)
        except LakesieveError as exc:
            return f"index file {self.root / f.path} is unreadable: {exc}"
        if size is None:
            return f"index file {self.root / f.path} is missing"
        if size != f.size_bytes:
            return f"index file {path} has {size} bytes, the log records {f.size_bytes}"
        if not (checksum or decode):
            return None
        try:
            data = self._fetch_checked(f)  # what is stored now, never the cache
        except IndexCorruptError as exc:
            return str(exc)
        return decode_problem(data, path) if decode else None

    def delete_state_files(self, states: Iterable[IndexState]) -> None:
        """Delete the data files of states no longer in the log."""
        for state in states:
            for f in state.files:
                with contextlib.suppress(LakesieveError, OSError, ValueError):
                    self.blobs.delete(self.key(self.root / safe_data_path(f.path)))

    def state_folders(self) -> Iterator[tuple[str, str, Path]]:
        """Every ``data/<index>/<state id>`` prefix that holds objects (one listing)."""
        seen: set[tuple[str, str]] = set()
        for key in self.blobs.list(DATA_DIR):
            parts = key.split("/")
            if len(parts) < 4 or (parts[1], parts[2]) in seen:
                continue
            try:
                check_name(parts[1], "index name")
                check_name(parts[2], "state id")
            except IndexNotFoundError:
                continue
            seen.add((parts[1], parts[2]))
            yield parts[1], parts[2], self.data_dir / parts[1] / parts[2]
