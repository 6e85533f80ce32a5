"""Index files written by Spark tasks into a state's folder, and read back on demand.

An index whose files can be computed one Spark partition at a time (the
exact index's key ranges) has its tasks write them, so that the driver only
ever holds a small manifest:

1. :func:`staging` (opened by the framework around ``IndexType.build``)
   creates the new state's folder ``data/<index>/<state id>/`` under the
   index root and makes it current (:func:`current_staging`).
2. Each task writes its files there with :func:`write_task_file` (a
   temporary name, then a rename) and returns only the file's record: name,
   SHA-256, size and rows. (A build may also have Spark's own writer put
   ORC files there; its records say so with ``suffix``.)
3. The index type returns those records in
   :attr:`~lakesieve.model.BuiltIndex.written` with the state id; the store
   writes the remaining (driver) files into the same folder and lists every
   file, with its checksum, in one commit. Until that commit nothing is
   visible; a failed build removes the folder, and a killed one leaves an
   unreferenced folder that ``lakesieve index vacuum`` removes after its
   grace period.

Files whose names start with :data:`ON_DEMAND_PREFIX` are not read when a
state is loaded: the loaded object reads the ones a query needs through
:attr:`~lakesieve.model.BuiltIndex.fetch`, each checked against the checksum
the log records for it.

An index type called directly, without a staging area (tests, the contract
kit, the benchmark's in-memory builds), uses :func:`local_staging`: a
temporary folder whose files :func:`read_back` returns as in-memory tables.
That runs the same task code, and suits a local Spark, whose tasks see the
driver's disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.ipc as ipc
from lakesieve.errors import IndexCorruptError
from lakesieve.files.ipc_files import read_index_file
from lakesieve.store.errors import replace_file, write_error

if TYPE_CHECKING:
    from lakesieve.store.index_log import IndexState, StoredFile


class StateStore(Protocol):
    """What staging and reading index files need of :class:`lakesieve.store.IndexStore`."""

    root: Path
    data_dir: Path
    remote: bool

    def confined(self, path: Path) -> Path:
        """``path``, refused when it leaves the index root through a link."""
        ...

    def remove_state_folder(self, index: str, state_id: str) -> bool:
        """Remove one state's folder; whether it was there."""
        ...

    def read_bytes(self, f: StoredFile) -> bytes:
        """One data file's bytes, checked against its checksum."""
        ...


__all__ = [
    "ON_DEMAND_PREFIX",
    "StagingArea",
    "current_staging",
    "eager_files",
    "folder_reader",
    "local_staging",
    "new_state_id",
    "on_demand_reader",
    "read_back",
    "scratch_staging",
    "staging",
    "task_file_suffix",
    "write_task_file",
]

#: Files named so are read when a lookup needs them, not when the state is loaded.
ON_DEMAND_PREFIX = "part-"

#: Suffix of the Arrow IPC files tasks and the store write.
ARROW_SUFFIX = ".arrow"

#: Suffix of the ORC files Spark's own writer produces (never ``.parquet``: Hudi
#: readers take any Parquet file under a table's folders for a base file).
ORC_SUFFIX = ".orc"

#: Suffixes a task-written file may have.
TASK_FILE_SUFFIXES = (ARROW_SUFFIX, ORC_SUFFIX)


@dataclass(frozen=True)
class StagingArea:
    """The folder a build's tasks write into.

    Attributes:
        folder: absolute path of the folder.
        state_id: the state the files will belong to (``None`` for a local area).
        prefix: the files' paths relative to the index root, without the file
            name (``data/<index>/<state id>``); empty for a local area.
    """

    folder: str
    state_id: str | None
    prefix: str


_CURRENT: ContextVar[StagingArea | None] = ContextVar("lakesieve_staging", default=None)


def new_state_id() -> str:
    """A fresh state id: creation time in milliseconds and a random suffix."""
    return f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"


def current_staging() -> StagingArea | None:
    """The staging area of the build running in this thread, if the framework opened one."""
    return _CURRENT.get()


@contextlib.contextmanager
def staging(store: StateStore, index: str) -> Iterator[StagingArea]:
    """Open a new state folder of ``index`` for task-written files while the block runs.

    The folder is removed when the block raises, or when it is still empty
    after it; otherwise it stays for the store to commit (or for vacuum to
    remove, if no commit follows).
    """
    from lakesieve.store.index_log import DATA_DIR, check_name

    check_name(index, "index name")
    if store.remote:
        # an object store takes no task-written files: the tasks write into a local
        # folder and the build's files come back in memory (its writer stores them)
        with local_staging() as area:
            yield area
        return
    state_id = new_state_id()
    folder = store.confined(store.data_dir / index / state_id)
    # the folders this call creates, innermost first: a failed or empty build removes
    # them again when empty, so a build that fails leaves the table as it found it
    created = [p for p in (folder.parent, store.data_dir, Path(store.root)) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(created)
        raise write_error(exc, folder) from None
    store.confined(folder)
    area = StagingArea(str(folder), state_id, f"{DATA_DIR}/{index}/{state_id}")
    token = _CURRENT.set(area)
    try:
        yield area
    except BaseException:
        store.remove_state_folder(index, state_id)
        _remove_empty(created)
        raise
    finally:
        _CURRENT.reset(token)
    # an index type that wrote nothing there leaves no empty folder
    if _remove_if_empty(folder):
        _remove_empty(created)


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (innermost first) while they are empty."""
    for f in folders:
        if not _remove_if_empty(f):
            return


def _remove_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def local_staging() -> Iterator[StagingArea]:
    """A temporary folder for task-written files, removed when the block ends."""
    folder = tempfile.mkdtemp(prefix="lakesieve-build-")
    try:
        yield StagingArea(folder, None, "")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def ipc_file_bytes(table: pa.Table) -> bytes:
    """``table`` as an uncompressed Arrow IPC file, as the store writes it."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def file_record(name: str, data: bytes, rows: int) -> dict[str, Any]:
    """The log's record of an index file's bytes (the driver adds its ``path``)."""
    return {
        "name": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size_bytes": len(data),
        "rows": rows,
    }


def write_task_file(folder: str, name: str, table: pa.Table) -> dict[str, Any]:
    """Write ``table`` as ``<folder>/<name>.arrow`` (in a Spark task); its record.

    The bytes go to a temporary file first and are renamed into place, so a
    reader never sees half a file and a retried task simply replaces it; a
    write that fails (a full disk) removes the temporary file and raises the
    ``OSError``, whose text the driver turns into one line
    (:func:`lakesieve.store.errors.job_write_error`).

    Returns:
        ``name``, ``sha256``, ``size_bytes`` and ``rows`` (the path is added
        by the driver, which knows the state folder).
    """
    data = ipc_file_bytes(table)
    target = os.path.join(folder, f"{name}.arrow")
    tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    replace_file(Path(target), Path(tmp), data)
    return file_record(name, data, table.num_rows)


def task_file_suffix(rec: dict[str, Any]) -> str:
    """The file name suffix of a task-written file's record: ``.arrow``, or ``.orc`` (Spark wrote it)."""
    suffix = str(rec.get("suffix", ARROW_SUFFIX))
    if suffix not in TASK_FILE_SUFFIXES:
        raise IndexCorruptError(f"task file {rec.get('name')!r} has an unknown kind {suffix!r}")
    return suffix


def with_paths(area: StagingArea, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with their paths relative to the index root, sorted by name."""
    out = []
    for rec in sorted(records, key=lambda r: str(r["name"])):
        out.append({**rec, "path": f"{area.prefix}/{rec['name']}{task_file_suffix(rec)}"})
    return out


def _read_task_file(area: StagingArea, rec: dict[str, Any]) -> pa.Table:
    path = Path(area.folder) / f"{rec['name']}{task_file_suffix(rec)}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IndexCorruptError(f"task file {path} is unreadable: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != rec["sha256"]:
        raise IndexCorruptError(f"task file {path} differs from what its task wrote")
    return read_index_file(data)


def read_back(area: StagingArea, records: list[dict[str, Any]]) -> dict[str, pa.Table]:
    """The files of a local area as in-memory tables, each checked against its record.

    Raises:
        IndexCorruptError: a file is missing or differs from what its task recorded.
    """
    return {str(rec["name"]): _read_task_file(area, rec) for rec in records}


@contextlib.contextmanager
def scratch_staging() -> Iterator[StagingArea]:
    """A temporary staging area made current, for builds measured outside a table (benchmarks).

    The tasks' files stay on disk (read them with :func:`folder_reader`)
    until the block ends.
    """
    with local_staging() as area:
        token = _CURRENT.set(area)
        try:
            yield area
        finally:
            _CURRENT.reset(token)


def folder_reader(area: StagingArea, records: list[dict[str, Any]]) -> Callable[[str], pa.Table]:
    """A reader of the files tasks wrote into ``area`` by name, each checked against its record."""
    by_name = {str(rec["name"]): rec for rec in records}

    def fetch(name: str) -> pa.Table:
        rec = by_name.get(name)
        if rec is None:
            raise IndexCorruptError(f"no task file {name!r} in {area.folder}")
        return _read_task_file(area, rec)

    return fetch


def _decode(store: StateStore, data: bytes, path: str) -> pa.Table:
    try:
        return read_index_file(data)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise IndexCorruptError(f"index file {store.root / path} does not decode: {exc}") from exc


def eager_files(store: StateStore, state: IndexState) -> dict[str, pa.Table]:
    """The state's files read at load (every file but the on-demand ones), checked and decoded.

    Raises:
        IndexCorruptError: a file is missing, a link, fails its checksum or does not decode.
    """
    return {
        f.name: _decode(store, store.read_bytes(f), f.path)
        for f in state.files
        if not f.name.startswith(ON_DEMAND_PREFIX)
    }


def on_demand_reader(store: StateStore, state: IndexState) -> Callable[[str], pa.Table] | None:
    """A reader of the state's on-demand files by name; ``None`` when it has none.

    The reader raises :class:`~lakesieve.errors.IndexCorruptError` for a file
    the state does not list, or one that is missing, fails its checksum or
    does not decode.
    """
    files = {f.name: f for f in state.files if f.name.startswith(ON_DEMAND_PREFIX)}
    if not files:
        return None

    def fetch(name: str) -> pa.Table:
        stored = files.get(name)
        if stored is None:
            raise IndexCorruptError(f"index state {state.state_id} has no file {name!r}")
        return _decode(store, store.read_bytes(stored), stored.path)

    return fetch
