"""The writer's view of a table's timeline: latest file slices, partitions, schema.

The writer needs, before each commit, the latest base file of every file
group and the partitions that exist. Both come from replaying the completed
``commit`` and ``replacecommit`` instants' metadata in order (never from
listing folders, so foreign folders such as ``.lakesieve/`` are ignored).
Instants that were started but never completed are rolled back the way Hudi
does with direct markers: every base file a write creates has a marker under
``.hoodie/.temp/<instant>/``, so a failed write's files can be found and
deleted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from lakesieve.plugins.hudi.write_storage import TableStorage
from lakesieve.plugins.hudi.write_table_config import HOODIE_DIR

_INSTANT_FILE = re.compile(r"^(\d{14,17})\.([a-z_]+)(?:\.(requested|inflight))?$")
MARKER_DIR = f"{HOODIE_DIR}/.temp"
MARKER_SUFFIX = ".marker."


@dataclass(frozen=True)
class Slice:
    """The latest file slice of one file group.

    Attributes:
        partition_path: the file group's partition ("" when not partitioned).
        file_id: the file group id.
        base_file: base file path relative to the table root.
        instant: instant time of the base file.
        size: base file size in bytes.
        records: rows in the base file.
    """

    partition_path: str
    file_id: str
    base_file: str
    instant: str
    size: int
    records: int


@dataclass
class TimelineState:
    """What the writer knows about a table before a commit.

    Attributes:
        instants: every instant time found in ``.hoodie`` (any state).
        completed: completed ``commit``/``replacecommit`` instants, in order.
        pending: ``commit`` instants started but never completed.
        slices: latest slice per ``(partition path, file id)``.
        partitions: every partition path a completed commit wrote to.
        schema: the Avro schema of the latest completed commit, if any.
    """

    instants: set[str] = field(default_factory=set)
    completed: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    slices: dict[tuple[str, str], Slice] = field(default_factory=dict)
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
        if status is None and action in ("commit", "replacecommit"):
            completed[ts] = name
        elif (action == "commit" and status == "requested") or (
            action == "inflight" and status is None
        ):
            started.add(ts)
    state.completed = sorted(completed)
    state.pending = sorted(started - set(completed))
    for ts in state.completed:
        meta = json.loads(storage.read_bytes(f"{HOODIE_DIR}/{completed[ts]}") or b"{}")
        _replay(state, meta)
        schema = (meta.get("extraMetadata") or {}).get("schema")
        if schema:
            state.schema = json.loads(schema)
    return state


def _replay(state: TimelineState, meta: dict[str, Any]) -> None:
    for partition, file_ids in (meta.get("partitionToReplaceFileIds") or {}).items():
        for file_id in file_ids:
            state.slices.pop((partition, file_id), None)
    for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
        state.partitions.add(partition)
        for stat in stats or []:
            path = stat.get("path")
            file_id = stat.get("fileId")
            if not path or not file_id or not path.endswith(".parquet"):
                continue
            name = path.rsplit("/", 1)[-1]
            state.slices[(partition, file_id)] = Slice(
                partition_path=partition,
                file_id=file_id,
                base_file=path,
                instant=_instant_of_base_file(name),
                size=int(stat.get("fileSizeInBytes") or stat.get("totalWriteBytes") or 0),
                records=int(stat.get("numWrites") or 0),
            )


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


def rollback_instant(storage: TableStorage, instant: str, keep: set[str] | None = None) -> None:
    """Delete everything an unfinished write of ``instant`` left behind.

    Args:
        storage: the table.
        instant: the instant to roll back.
        keep: base files to keep; when given, only the instant's markers and
            unlisted base files are removed (the reconcile step of a
            successful commit) and the timeline files stay.
    """
    for rel in marked_files(storage, instant):
        if keep is None or rel not in keep:
            storage.delete_file(rel)
    storage.delete_dir(f"{MARKER_DIR}/{instant}")
    if keep is None:
        storage.delete_file(f"{HOODIE_DIR}/{instant}.inflight")
        storage.delete_file(f"{HOODIE_DIR}/{instant}.commit.requested")
