"""Rolling back writes that started but never completed, recorded as ``rollback`` instants.

A write, compaction or clustering that failed half-way leaves data or log
files (each announced by a marker) and a requested or inflight instant, but no
completed instant file, so no reader ever shows its rows (hudi-rs skips files
and log blocks of instants that are not completed). Rolling it back deletes
the marked files and the instant's timeline files, then records a completed
``<new instant>.rollback`` (Avro ``HoodieRollbackMetadata``, as Hudi writes it,
preceded by empty ``.rollback.requested`` and ``.rollback.inflight`` files)
that names the rolled-back instant and the files deleted. lakesieve's change
listing reads that file and reports the file groups named there as touched.
"""

from __future__ import annotations

import time
from collections import defaultdict

from lakesieve.plugins.hudi.writer.avro import ROLLBACK_METADATA, container
from lakesieve.plugins.hudi.writer.commit import next_instant
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.table_config import HOODIE_DIR
from lakesieve.plugins.hudi.writer.timeline import TimelineState, instant_files, rollback_instant


def _pending_action(storage: TableStorage, instant: str) -> str:
    """The action of a pending instant, from its timeline file names."""
    for rel in instant_files(storage, instant):
        parts = rel.rsplit("/", 1)[-1].split(".")
        if len(parts) >= 3:
            return "commit" if parts[1] == "compaction" else parts[1]
    return "commit"


def rollback_pending(storage: TableStorage, state: TimelineState) -> list[str]:
    """Roll back every pending write of ``state``; return the new rollback instants.

    ``state`` is updated: the rolled-back instants leave ``pending`` and the
    rollback instants join ``instants``.
    """
    created = []
    for pending in list(state.pending):
        started = time.monotonic()
        action = _pending_action(storage, pending)
        deleted = rollback_instant(storage, pending)
        state.pending.remove(pending)
        state.instants.discard(pending)
        instant = next_instant(state.instants | {pending})
        state.instants.add(instant)
        by_partition: dict[str, list[str]] = defaultdict(list)
        for rel in deleted:
            partition = rel.rsplit("/", 1)[0] if "/" in rel else ""
            by_partition[partition].append(rel)
        metadata = {
            "startRollbackTime": instant,
            "timeTakenInMillis": int((time.monotonic() - started) * 1000),
            "totalFilesDeleted": len(deleted),
            "commitsRollback": [pending],
            "partitionMetadata": {
                partition: {
                    "partitionPath": partition,
                    "successDeleteFiles": sorted(storage.full(rel) for rel in files),
                    "failedDeleteFiles": [],
                    "rollbackLogFiles": None,
                    "logFilesFromFailedCommit": None,
                }
                for partition, files in sorted(by_partition.items())
            },
            "version": 1,
            "instantsRollback": [{"commitTime": pending, "action": action}],
        }
        storage.write_bytes(f"{HOODIE_DIR}/{instant}.rollback.requested", b"")
        storage.write_bytes(f"{HOODIE_DIR}/{instant}.rollback.inflight", b"")
        storage.write_atomic(
            f"{HOODIE_DIR}/{instant}.rollback",
            container(ROLLBACK_METADATA, [metadata]),
            f"{HOODIE_DIR}/.temp/{instant}.rollback.tmp",
        )
        created.append(instant)
    return created
