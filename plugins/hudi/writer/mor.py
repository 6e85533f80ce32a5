"""Merge-on-read writes to an existing file group: one new log file per file group and commit.

Inside a write task (:class:`~lakesieve.plugins.hudi.writer.task.FileGroupWriter`),
rows routed to a file group that already has a slice are not merged into a new
base file as in copy-on-write: they are appended as one new log file
``.<fileId>_<baseInstant>.log.<n>_<writeToken>`` next to the slice's base file,
``n`` one more than the slice's highest log version. The file holds one block:

- for ``upsert``, ``insert`` and ``bulk_insert`` (bucketed tables) a Parquet data
  block with the incoming rows (meta columns filled in, ``_hoodie_file_name`` =
  the file group id, as Hudi writes it);
- for ``delete`` a delete block naming the keys of the batch that the slice
  currently holds (nothing is written when it holds none of them).

The counts of the write stat come from the slice's current key set (base file
keys, then its log blocks replayed in order): incoming keys found there are
updates, the rest inserts, and deletes count only keys found. So ``numInserts
== 0 and numDeletes == 0`` really means the file group's keys did not change.
"""

from __future__ import annotations

import time
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lakesieve.plugins.hudi.writer.log_block import (
    delete_block,
    log_file_name,
    parquet_data_block,
    parse_log_file_name,
    read_log_events,
)
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.task_plan import TaskPlan, dedupe
from lakesieve.plugins.hudi.writer.timeline import Slice, marker_path


class RowWriter(Protocol):
    """What :func:`append_to_slice` needs of the task's writer (``FileGroupWriter``)."""

    plan: TaskPlan

    def new_rows(self, group: pa.Table, file_name: str, task_id: int, seq: int) -> pa.Table:
        """``group``'s rows in the base file schema, with their meta columns filled in."""
        ...


RECORD_KEY, PARTITION_PATH, FILE_NAME = META_COLUMNS[2], META_COLUMNS[3], META_COLUMNS[4]


def slice_keys(storage: TableStorage, current: Slice, completed: frozenset[str]) -> set[str]:
    """Record keys the slice holds now: base file keys, then its log blocks in order."""
    keys: set[str] = set()
    if current.base_file:
        table = pq.read_table(
            storage.full(current.base_file), columns=[RECORD_KEY], filesystem=storage.fs
        )
        keys.update(k for k in table.column(0).to_pylist() if k is not None)
    logs = [storage.read_bytes(rel) for rel in current.log_files if storage.exists(rel)]
    for event in read_log_events(logs, completed or None):
        if event.deleted:
            keys.difference_update(event.keys)
        else:
            keys.update(k for k in event.keys if k is not None)
    return keys


def next_log_version(current: Slice) -> int:
    """One more than the highest log version of the slice (1 for the first log file)."""
    versions = [
        parsed.version
        for rel in current.log_files
        if (parsed := parse_log_file_name(rel)) is not None
    ]
    return max(versions, default=0) + 1


def append_to_slice(
    writer: RowWriter,
    current: Slice,
    group: pa.Table,
    task_id: int,
    token: str,
    seq: int,
) -> tuple[dict[str, object] | None, int]:
    """Append one log file with this commit's rows (or deletes) to an existing file group."""

    plan = writer.plan
    storage = plan.storage
    started = time.monotonic()
    existing = slice_keys(storage, current, plan.completed)
    partition_path, file_id = current.partition_path, current.file_id
    name = log_file_name(file_id, current.instant, next_log_version(current), token)
    updates = inserts = deletes = writes = 0
    if plan.mode == "delete":
        wanted = [k for k in group[RECORD_KEY].to_pylist() if k is not None]
        present = sorted({k for k in wanted if k in existing})
        if not present:
            return None, seq
        deletes = len(present)
        payload = delete_block(
            [(k, partition_path) for k in present], plan.instant, plan.schema_json
        )
    else:
        group = dedupe(group, plan.precombine)
        rows = writer.new_rows(group, file_id, task_id, seq)
        seq += rows.num_rows
        writes = rows.num_rows
        found = pc.is_in(rows[RECORD_KEY], value_set=pa.array(sorted(existing), pa.string()))
        updates = int(pc.sum(found).as_py() or 0)
        inserts = writes - updates
        payload = parquet_data_block(rows, plan.instant, plan.schema_json, plan.compression)
    rel = f"{partition_path}/{name}" if partition_path else name
    storage.write_bytes(marker_path(plan.instant, partition_path, name, "APPEND"), b"")
    storage.write_bytes(rel, payload)
    elapsed = int((time.monotonic() - started) * 1000)
    stats: dict[str, object] = {
        "partition_path": partition_path,
        "file_id": file_id,
        "file_name": name,
        "prev_commit": current.instant,
        "num_writes": writes,
        "num_deletes": deletes,
        "num_update_writes": updates,
        "num_inserts": inserts,
        "file_size": len(payload),
        "create_ms": 0,
        "upsert_ms": elapsed,
        "base_file": current.base_file.rsplit("/", 1)[-1] if current.base_file else "",
        "log_version": next_log_version(current),
    }
    return stats, seq
