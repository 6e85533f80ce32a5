"""Hudi commit metadata (``<instant>.commit`` / ``.deltacommit`` / ``.replacecommit`` JSON).

A completed commit of a table of version 6 is a JSON ``HoodieCommitMetadata``:
``partitionToWriteStats`` maps each partition path to one write stat per file
the commit wrote (a base file, or a log file of a merge-on-read table, whose
stat also names the slice's ``baseFile``, the ``logVersion`` and the
``logFiles`` written), followed by ``compacted``, ``extraMetadata`` (with the
Avro ``schema``) and ``operationType``. A replacecommit adds
``partitionToReplaceFileIds``. The ``.inflight`` file holds the same structure
as a workload profile (Hudi fills in only the insert/update counts there).
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
    "compact": "COMPACT",
    "cluster": "CLUSTER",
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
        base_file: for a log file, the name of its slice's base file ("" if none).
        log_version: for a log file, its version number (0 for a base file).
        cdc_file: the change data file written for the group, relative to
            the table root ("" or ``None``: none).
        cdc_size: its size in bytes.
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
    base_file: str = ""
    log_version: int = 0
    cdc_file: str | None = ""
    cdc_size: int | None = 0

    @property
    def path(self) -> str:
        """Path of the base file relative to the table root."""
        if self.partition_path:
            return f"{self.partition_path}/{self.file_name}"
        return self.file_name


def write_stat(w: FileWrite) -> dict[str, Any]:
    """The ``HoodieWriteStat`` JSON object of one written file."""
    stat = _base_stat(w)
    if w.log_version:
        stat.update(
            {
                "logVersion": w.log_version,
                "logOffset": 0,
                "baseFile": w.base_file,
                "logFiles": [w.file_name],
                "recordsStats": {"val": None},
            }
        )
    return stat


def _base_stat(w: FileWrite) -> dict[str, Any]:
    return {
        "fileId": w.file_id,
        "path": w.path,
        "cdcStats": {w.cdc_file: int(w.cdc_size or 0)} if w.cdc_file else None,
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
    writes: Iterable[FileWrite],
    mode: str,
    schema_json: str,
    extra: Mapping[str, str] | None = None,
    replaced: Mapping[str, Iterable[str]] | None = None,
    stat_extra: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``HoodieCommitMetadata`` of a completed commit.

    Args:
        writes: one per written file.
        mode: the operation (a key of :data:`OPERATION_TYPES`).
        schema_json: the Avro schema recorded in ``extraMetadata``.
        extra: more ``extraMetadata`` entries.
        replaced: file group ids replaced per partition (a replacecommit).
        stat_extra: fields to add to the write stat of ``(partition, file id)``.
    """
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for w in sorted(writes, key=lambda w: (w.partition_path, w.file_id)):
        stat = write_stat(w)
        stat.update((stat_extra or {}).get((w.partition_path, w.file_id), {}))
        by_partition.setdefault(w.partition_path, []).append(stat)
    extra_metadata = {"schema": schema_json}
    extra_metadata.update(extra or {})
    out: dict[str, Any] = {"partitionToWriteStats": by_partition}
    if replaced is not None:
        out["partitionToReplaceFileIds"] = {p: sorted(ids) for p, ids in replaced.items()}
    out.update(
        {
            "compacted": mode == "compact",
            "extraMetadata": extra_metadata,
            "operationType": OPERATION_TYPES[mode],
        }
    )
    return out


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
