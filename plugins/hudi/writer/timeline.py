"""The writer's view of a table's timeline: file slices, partitions, schema, pending writes.

The writer needs, before each commit, the latest file slice (base file and
log files) of every file group and the partitions that exist; clean needs
every slice a file group ever had. All of it comes from replaying the
completed ``commit``, ``deltacommit`` and ``replacecommit`` instants'
metadata in order (never from listing folders, so foreign folders such as
``.lakesieve/`` are ignored): a write stat naming a base file starts a new
slice of its file group, one naming a log file adds to the slice the log
file's name says it belongs to, and ``partitionToReplaceFileIds`` retires
file groups.

Instants that were started but never completed are rolled back the way Hudi
does with direct markers: every base or log file a write creates has a marker
under ``.hoodie/.temp/<instant>/``, so a failed write's files can be found and
deleted (log files are never appended to, only created, so deleting them
removes exactly the failed write's blocks).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from lakesieve.plugins.hudi.writer.log_block import parse_log_file_name
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.table_config import HOODIE_DIR

_INSTANT_FILE = re.compile(r"^(\d{14,17})\.([a-z_]+)(?:\.(requested|inflight))?$")
MARKER_DIR = f"{HOODIE_DIR}/.temp"
MARKER_SUFFIX = ".marker."
#: Completed actions whose metadata lists written files.
DATA_ACTIONS = ("commit", "deltacommit", "replacecommit")
#: Actions whose requested or inflight state marks a write that may have left files.
_WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit", "compaction", "inflight")


@dataclass(frozen=True)
class Slice:
    """One file slice of one file group.

    Attributes:
        partition_path: the file group's partition ("" when not partitioned).
        file_id: the file group id.
        base_file: base file path relative to the table root ("" for a log-only slice).
        instant: the slice's base instant (of its base file, or named by its logs).
        size: base file size in bytes.
        records: rows in the base file.
        log_files: log files of the slice (relative to the table root), oldest first.
        log_size: bytes of the log files.
        cdc_files: change data files the write that created the slice logged
            (:mod:`lakesieve.plugins.hudi.cdc`); cleaned with the slice.
    """

    partition_path: str
    file_id: str
    base_file: str
    instant: str
    size: int
    records: int
    log_files: tuple[str, ...] = ()
    log_size: int = 0
    cdc_files: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of the slice, relative to the table root."""
        return ((self.base_file,) if self.base_file else ()) + self.log_files + self.cdc_files


@dataclass
class TimelineState:
    """What the writer knows about a table before a commit.

    Attributes:
        instants: every instant time found in ``.hoodie`` (any state, any action).
        completed: completed ``commit``/``deltacommit``/``replacecommit`` instants, in order.
        actions: the action of each completed data instant.
        pending: write instants started but never completed.
        slices: latest slice per ``(partition path, file id)`` (replaced groups excluded).
        history: every slice per ``(partition path, file id)``, oldest first.
        replaced: instant that replaced each retired ``(partition path, file id)``.
        partitions: every partition path a completed commit wrote to.
        schema: the Avro schema of the latest completed commit, if any.
    """

    instants: set[str] = field(default_factory=set)
    completed: list[str] = field(default_factory=list)
    actions: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    slices: dict[tuple[str, str], Slice] = field(default_factory=dict)
    history: dict[tuple[str, str], list[Slice]] = field(default_factory=dict)
    replaced: dict[tuple[str, str], str] = field(default_factory=dict)
    partitions: set[str] = field(default_factory=set)
    schema: dict[str, Any] | None = None

    def avg_record_bytes(self, default: int = 1024) -> int:
        """Average base file bytes per row over the latest slices (``default`` if unknown)."""
        size = sum(s.size for s in self.slices.values() if s.records > 0)
        rows = sum(s.records for s in self.slices.values() if s.records > 0)
        return max(1, size // rows) if rows else default


def _instant_of_base_file(name: str) -> str:
    return name.rsplit("_", 1)[-1].split(".", 1)[0]


def load_timeline(storage: TableStorage) -> TimelineState:
    """Read ``.hoodie`` and replay the completed commits."""
    state = TimelineState()
    completed: dict[str, str] = {}
    started: set[str] = set()
    for name in storage.list_names(HOODIE_DIR):
        match = _INSTANT_FILE.match(name)
        if not match:
            continue
        ts, action, status = match.groups()
        state.instants.add(ts)
        if status is None and action in DATA_ACTIONS:
            completed[ts] = name
            state.actions[ts] = action
        elif action in _WRITE_ACTIONS and (status is not None or action == "inflight"):
            started.add(ts)
    state.completed = sorted(completed)
    state.pending = sorted(started - set(completed))
    for ts in state.completed:
        meta = json.loads(storage.read_bytes(f"{HOODIE_DIR}/{completed[ts]}") or b"{}")
        _replay(state, ts, meta)
        schema = (meta.get("extraMetadata") or {}).get("schema")
        if schema:
            state.schema = json.loads(schema)
    return state


def _new_slice(state: TimelineState, key: tuple[str, str], new: Slice) -> None:
    state.slices[key] = new
    state.history.setdefault(key, []).append(new)


def _replace_latest(state: TimelineState, key: tuple[str, str], new: Slice) -> None:
    state.slices[key] = new
    state.history[key][-1] = new


def _replay(state: TimelineState, ts: str, meta: dict[str, Any]) -> None:
    for partition, file_ids in (meta.get("partitionToReplaceFileIds") or {}).items():
        for file_id in file_ids:
            key = (partition, file_id)
            state.slices.pop(key, None)
            state.replaced.setdefault(key, ts)
    for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
        state.partitions.add(partition)
        for stat in stats or []:
            path = stat.get("path")
            file_id = stat.get("fileId")
            if not path or not file_id:
                continue
            key = (partition, file_id)
            size = int(stat.get("fileSizeInBytes") or stat.get("totalWriteBytes") or 0)
            log = parse_log_file_name(path)
            if log is not None:
                _add_log(state, key, path, log.base_instant, size)
            elif path.endswith(".parquet"):
                name = path.rsplit("/", 1)[-1]
                _new_slice(
                    state,
                    key,
                    Slice(
                        partition_path=partition,
                        file_id=file_id,
                        base_file=path,
                        instant=_instant_of_base_file(name),
                        size=size,
                        records=int(stat.get("numWrites") or 0),
                        cdc_files=tuple(sorted(_change_files(stat))),
                    ),
                )


def _change_files(stat: dict[str, Any]) -> list[str]:
    cdc = stat.get("cdcStats")
    return [str(p) for p in cdc] if isinstance(cdc, dict) else []


def _add_log(state: TimelineState, key: tuple[str, str], path: str, base: str, size: int) -> None:
    current = state.slices.get(key)
    if current is not None and current.instant == base:
        if path not in current.log_files:
            updated = replace(
                current,
                log_files=(*current.log_files, path),
                log_size=current.log_size + size,
            )
            _replace_latest(state, key, updated)
        return
    for old in state.history.get(key, []):
        if old.instant == base:  # a log of an older slice: keep it with that slice
            return
    _new_slice(state, key, Slice(key[0], key[1], "", base, 0, 0, (path,), size))


def marker_path(instant: str, partition_path: str, file_name: str, io_type: str) -> str:
    """Relative path of the marker of one base file written by ``instant``."""
    folder = f"{MARKER_DIR}/{instant}"
    if partition_path:
        folder = f"{folder}/{partition_path}"
    return f"{folder}/{file_name}{MARKER_SUFFIX}{io_type}"


def marked_files(storage: TableStorage, instant: str) -> list[str]:
    """Base files (relative to the table root) that ``instant``'s markers name."""
    out = []
    for rel in storage.list_files_recursive(f"{MARKER_DIR}/{instant}"):
        if MARKER_SUFFIX in rel:
            out.append(rel.rsplit(MARKER_SUFFIX, 1)[0])
    return out


def instant_files(storage: TableStorage, instant: str, completed: bool = False) -> list[str]:
    """Timeline files of ``instant`` (relative paths): requested and inflight ones, and
    with ``completed`` also the completed ones."""
    out = []
    for name in storage.list_names(HOODIE_DIR):
        match = _INSTANT_FILE.match(name)
        if not match or match.group(1) != instant:
            continue
        if completed or match.group(3) is not None or match.group(2) == "inflight":
            out.append(f"{HOODIE_DIR}/{name}")
    return out


def rollback_instant(
    storage: TableStorage, instant: str, keep: set[str] | None = None
) -> list[str]:
    """Delete everything an unfinished write of ``instant`` left behind.

    Args:
        storage: the table.
        instant: the instant to roll back.
        keep: files to keep; when given, only the instant's markers and
            unlisted files are removed (the reconcile step of a successful
            commit) and the timeline files stay.

    Returns:
        The data and log files deleted (relative to the table root).
    """
    deleted = []
    for rel in marked_files(storage, instant):
        if keep is None or rel not in keep:
            if storage.exists(rel):
                deleted.append(rel)
            storage.delete_file(rel)
    storage.delete_dir(f"{MARKER_DIR}/{instant}")
    if keep is None:
        for rel in instant_files(storage, instant):
            storage.delete_file(rel)
    return deleted
