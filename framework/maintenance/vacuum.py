"""Vacuum: removing index states and files that nothing needs any more.

**Vacuum** removes states whose instants the table no longer has (unless a
retained delta still builds on them), states replaced at their instant by a
compaction, and files no committed state names that are older than a grace
period (a refresh still running may be about to commit them).

Only plain ``data/<index>/<state id>`` folders under the index root are
removed, the empty ``data/cmp_*`` folders that ``lakesieve compare`` left
behind before it cleaned up after itself, and the ``_log.repair-*`` folders
of repairs a kill interrupted (older than the grace period, and only while
``_log`` is in place); see :func:`vacuum`. Vacuum holds the store's
writers' lock, so it never runs beside a repair.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lakesieve.errors import IndexCorruptError, LakesieveError, OptionError
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store import IndexStore
from lakesieve.store.folders import folder_time, remove_repair_leftovers, state_folders
from lakesieve.store.index_log import IndexDefinition, IndexState, LogSnapshot

#: prefix of the temporary index names ``cmp_<column>_<type>`` of ``lakesieve compare``
TEMP_PREFIX = "cmp_"


@dataclass
class VacuumResult:
    """States and files a vacuum removed."""

    states_removed: list[str] = field(default_factory=list)
    orphan_folders_removed: list[str] = field(default_factory=list)
    temp_files_removed: int = 0
    empty_folders_removed: list[str] = field(default_factory=list)
    repair_folders_removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def _kept_states(definition: IndexDefinition, on_timeline: set[str]) -> set[str]:
    keep: set[str] = set()
    roots = [s for s in definition.states if s.instant in on_timeline]
    latest = definition.latest()
    if latest is not None:
        roots.append(latest)
    for state in roots:
        try:
            keep.update(s.state_id for s in definition.chain(state))
        except LakesieveError:
            keep.add(state.state_id)
    return keep


def vacuum(table: TableIndexes, grace_seconds: float = 3600.0) -> VacuumResult:
    """Remove index states and files no longer needed; see the module docstring.

    Only plain ``data/<index>/<state id>`` folders under the index root are
    removed: a symbolic link anywhere below the root is never followed or
    deleted through, and ids from the log must be plain names.

    Raises:
        OptionError: ``grace_seconds`` is negative or not a finite number.
        IndexCorruptError: the log is damaged (see ``lakesieve index repair``), or
            the root's ``_log`` or ``data`` folder is a symbolic link.
        StoreBusyError: a repair is running on the store.
        StoreWriteError: the index root cannot be written.
    """
    if (
        not isinstance(grace_seconds, (int, float))
        or not math.isfinite(grace_seconds)
        or grace_seconds < 0
    ):
        raise OptionError(
            f"vacuum grace seconds must be a finite number >= 0, got {grace_seconds!r}"
        )
    store = table.store
    store.check_layout()
    with store.writing():  # a repair runs alone; the root must be writable
        return _vacuum(table, store, grace_seconds)


def _vacuum(table: TableIndexes, store: IndexStore, grace_seconds: float) -> VacuumResult:
    """:func:`vacuum` with the store's writers' lock held."""
    on_timeline = {i.id for i in table.view.timeline()}
    out = VacuumResult()
    removed: list[IndexState] = []

    def actions(snap: LogSnapshot) -> list[dict[str, Any]]:
        removed.clear()
        acts: list[dict[str, Any]] = []
        for definition in snap.indexes.values():
            keep = _kept_states(definition, on_timeline)
            for state_id, state in definition.by_id.items():
                if state_id not in keep:
                    removed.append(state)
                    acts.append(
                        {"op": "remove_state", "index": definition.name, "state_id": state_id}
                    )
        return acts

    snap = store.read_log()
    if actions(snap):
        store.commit_with_retry(actions)
        store.delete_state_files(removed)
        out.states_removed = [s.state_id for s in removed]
    log_now = store.read_log()
    referenced = {(d.name, s.state_id) for d in log_now.indexes.values() for s in d.by_id.values()}
    cutoff = time.time() - grace_seconds
    for index_name, state_id, folder in state_folders(store):
        if (index_name, state_id) in referenced:
            continue
        newest = folder_time(store, state_id, folder)
        if newest is not None and newest <= cutoff and store.remove_tree(folder):
            out.orphan_folders_removed.append(f"{index_name}/{state_id}")
    emptied = {entry.split("/", 1)[0] for entry in out.orphan_folders_removed}
    out.empty_folders_removed = _remove_empty_compare_folders(
        store, set(log_now.indexes), emptied, cutoff
    )
    if not store.remote and store.log_dir.is_dir():
        with os.scandir(store.log_dir) as entries:
            temps = [
                e
                for e in entries
                if e.name.startswith(".tmp-") and e.is_file(follow_symlinks=False)
            ]
        for tmp in temps:
            with contextlib.suppress(OSError):
                if tmp.stat(follow_symlinks=False).st_mtime <= cutoff:
                    os.unlink(tmp.path)
                    out.temp_files_removed += 1
    out.repair_folders_removed = remove_repair_leftovers(store, cutoff)
    return out


def _remove_empty_compare_folders(
    store: IndexStore, defined: set[str], emptied: set[str], cutoff: float
) -> list[str]:
    """Remove empty ``data/cmp_*`` folders of indexes the log does not define; their names.

    A folder is removed only when it is empty (``rmdir`` refuses anything
    else), is not a link, lies under the index root, and is older than
    ``cutoff`` or was emptied by this vacuum (a build may have just made it).
    """
    if store.remote or not store.data_dir.is_dir():
        return []  # an object store has no empty folders
    with os.scandir(store.data_dir) as entries:
        candidates = sorted(
            e.name
            for e in entries
            if e.name.startswith(TEMP_PREFIX)
            and e.name not in defined
            and e.is_dir(follow_symlinks=False)
        )
    removed: list[str] = []
    for name in candidates:
        folder = Path(store.data_dir) / name
        with contextlib.suppress(OSError, IndexCorruptError):
            store.confined(folder)
            if name not in emptied and folder.lstat().st_mtime > cutoff:
                continue
            os.rmdir(folder)
            removed.append(name)
    return removed
