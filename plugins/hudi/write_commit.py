"""Hudi commit metadata (``<instant>.commit`` JSON) and instant times.

A completed commit of a copy-on-write table of version 6 is a JSON
``HoodieCommitMetadata``: ``partitionToWriteStats`` maps each partition path
to one write stat per base file the commit wrote, followed by ``compacted``,
``extraMetadata`` (with the Avro ``schema``) and ``operationType``. The
``.inflight`` file holds the same structure as a workload profile (Hudi
fills in only the insert/update counts there).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

INSTANT_FORMAT = "%Y%m%d%H%M%S"
OPERATION_TYPES = {
    "bulk_insert": "BULK_INSERT",
    "insert": "INSERT",
    "upsert": "UPSERT",
    "delete": "DELETE",
}


def format_instant(when: dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of ``when``."""
    return when.strftime(INSTANT_FORMAT) + f"{when.microsecond // 1000:03d}"


def parse_instant(instant: str) -> dt.datetime:
    """Inverse of :func:`format_instant` (14-digit instants read as whole seconds)."""
    base = dt.datetime.strptime(instant[:14], INSTANT_FORMAT)
    millis = int(instant[14:17] or 0)
    return base.replace(microsecond=millis * 1000, tzinfo=dt.UTC)


def next_instant(existing: Iterable[str], now: dt.datetime | None = None) -> str:
    """A new instant time after every instant in ``existing``.

    The clock's time (UTC) is used when it is later than the latest existing
    instant; otherwise the latest one plus one millisecond.
    """
    candidate = format_instant(now or dt.datetime.now(dt.UTC))
    latest = max(existing, default=None)
    if latest is not None and candidate <= latest:
        candidate = format_instant(parse_instant(latest) + dt.timedelta(milliseconds=1))
    return candidate


@dataclass(frozen=True)
class FileWrite:
    """What one task wrote: one new base file (a new slice of one file group).

    Attributes:
        partition_path: partition of the file group ("" when not partitioned).
        file_id: the file group id.
        file_name: the base file's name.
        prev_commit: instant of the slice it replaces, or ``"null"`` for a new group.
        num_writes: rows in the new file.
        num_deletes: rows of the previous slice removed.
        num_update_writes: rows of the previous slice replaced by new values.
        num_inserts: rows whose key was not in the previous slice.
        file_size: bytes of the new file.
        create_ms: milliseconds spent writing a new file group.
        upsert_ms: milliseconds spent merging into an existing file group.
    """

    partition_path: str
    file_id: str
    file_name: str
    prev_commit: str
    num_writes: int
    num_deletes: int
    num_update_writes: int
    num_inserts: int
    file_size: int
    create_ms: int = 0
    upsert_ms: int = 0

    @property
    def path(self) -> str:
        """Path of the base file relative to the table root."""
        if self.partition_path:
            return f"{self.partition_path}/{self.file_name}"
        return self.file_name


def write_stat(w: FileWrite) -> dict[str, Any]:
    """The ``HoodieWriteStat`` JSON object of one written file."""
    return {
        "fileId": w.file_id,
        "path": w.path,
        "cdcStats": None,
        "prevCommit": w.prev_commit,
        "numWrites": w.num_writes,
        "numDeletes": w.num_deletes,
        "numUpdateWrites": w.num_update_writes,
        "numInserts": w.num_inserts,
        "totalWriteBytes": w.file_size,
        "totalWriteErrors": 0,
        "tempPath": None,
        "partitionPath": w.partition_path,
        "totalLogRecords": 0,
        "totalLogFilesCompacted": 0,
        "totalLogSizeCompacted": 0,
        "totalUpdatedRecordsCompacted": 0,
        "totalLogBlocks": 0,
        "totalCorruptLogBlock": 0,
        "totalRollbackBlocks": 0,
        "fileSizeInBytes": w.file_size,
        "minEventTime": None,
        "maxEventTime": None,
        "runtimeStats": {
            "totalScanTime": 0,
            "totalUpsertTime": w.upsert_ms,
            "totalCreateTime": w.create_ms,
        },
    }


def commit_metadata(
    writes: Iterable[FileWrite], mode: str, schema_json: str, extra: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The ``HoodieCommitMetadata`` of a completed commit."""
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for w in sorted(writes, key=lambda w: (w.partition_path, w.file_id)):
        by_partition.setdefault(w.partition_path, []).append(write_stat(w))
    extra_metadata = {"schema": schema_json}
    extra_metadata.update(extra or {})
    return {
        "partitionToWriteStats": by_partition,
        "compacted": False,
        "extraMetadata": extra_metadata,
        "operationType": OPERATION_TYPES[mode],
    }


def inflight_metadata(mode: str) -> dict[str, Any]:
    """The ``.inflight`` content: an empty workload profile for ``mode``."""
    return {
        "partitionToWriteStats": {},
        "compacted": False,
        "extraMetadata": {},
        "operationType": OPERATION_TYPES[mode],
    }


def to_json_bytes(metadata: Mapping[str, Any]) -> bytes:
    """Serialise commit metadata as Hudi does (indented JSON)."""
    return json.dumps(metadata, indent=2).encode("utf-8")
