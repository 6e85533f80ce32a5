"""Clean: delete file slices no retained instant reads, and replaced file groups.

With ``retain_commits = n`` the last ``n`` completed commits (commit,
deltacommit, replacecommit) stay readable, time travel included: the earliest
retained instant ``E`` reads, per file group, the latest slice whose base
instant is at or before ``E``; every older slice of that group (base file and
log files) is deleted, and so is every file of a group replaced at or before
``E`` (no retained instant shows it). Hudi records the work as a ``clean``
instant: ``<instant>.clean.requested`` and ``.clean.inflight`` (empty), then
the completed ``<instant>.clean`` holding Avro ``HoodieCleanMetadata``.
hudi-rs lists the files that remain, so reads of retained instants are
unchanged; reads as of older instants are no longer possible.
"""

from __future__ import annotations

import time
from collections import defaultdict

from lakesieve.plugins.hudi.services.common import open_table_state, refuse
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.avro import CLEAN_METADATA, container
from lakesieve.plugins.hudi.writer.commit import next_instant
from lakesieve.plugins.hudi.writer.timeline import Slice, TimelineState
from lakesieve.sdk import Instant


def files_to_clean(state: TimelineState, retain_commits: int) -> list[str]:
    """Files (relative to the table root) that no retained instant reads."""
    if len(state.completed) <= retain_commits:
        earliest = state.completed[0] if state.completed else ""
    else:
        earliest = state.completed[-retain_commits]
    doomed: list[str] = []
    for key, history in state.history.items():
        replaced_at = state.replaced.get(key)
        if replaced_at is not None and replaced_at <= earliest:
            doomed.extend(f for s in history for f in s.files)
            continue
        visible: Slice | None = None
        for s in history:
            if s.instant <= earliest:
                visible = s
        if visible is None:
            continue
        keep = set(visible.files)
        for s in history:
            if s is visible:
                break
            doomed.extend(f for f in s.files if f not in keep)
    return sorted(set(doomed))


def clean(path: str, retain_commits: int) -> Instant | None:
    """Delete what the table at ``path`` no longer needs to read its last ``retain_commits`` commits.

    Returns:
        The completed ``clean`` instant, or ``None`` when nothing was left to delete.

    Raises:
        WriteError: no table, or ``retain_commits`` below 1.
    """
    if not isinstance(retain_commits, int) or retain_commits < 1:
        refuse(path, "clean", f"retain_commits must be an integer >= 1, not {retain_commits!r}")
    table = open_table_state(path, "clean")
    storage, state = table.storage, table.state
    started = time.monotonic()
    doomed = [rel for rel in files_to_clean(state, retain_commits) if storage.exists(rel)]
    if not doomed:
        return None
    earliest = state.completed[max(0, len(state.completed) - retain_commits)]
    instant = next_instant(state.instants)
    hoodie = cfg.HOODIE_DIR
    storage.write_bytes(f"{hoodie}/{instant}.clean.requested", b"")
    storage.write_bytes(f"{hoodie}/{instant}.clean.inflight", b"")
    by_partition: dict[str, list[str]] = defaultdict(list)
    for rel in doomed:
        storage.delete_file(rel)
        by_partition[rel.rsplit("/", 1)[0] if "/" in rel else ""].append(rel)
    metadata = {
        "startCleanTime": instant,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(doomed),
        "earliestCommitToRetain": earliest,
        "partitionMetadata": {
            partition: {
                "partitionPath": partition,
                "policy": "KEEP_LATEST_COMMITS",
                "deletePathPatterns": [rel.rsplit("/", 1)[-1] for rel in files],
                "successDeleteFiles": [rel.rsplit("/", 1)[-1] for rel in files],
                "failedDeleteFiles": [],
                "isPartitionDeleted": False,
            }
            for partition, files in sorted(by_partition.items())
        },
        "version": 2,
        "lastCompletedCommitTimestamp": state.completed[-1],
    }
    storage.write_atomic(
        f"{hoodie}/{instant}.clean",
        container(CLEAN_METADATA, [metadata]),
        f"{hoodie}/.temp/{instant}.clean.tmp",
    )
    return Instant(sort_key=instant, id=instant, action="clean")
