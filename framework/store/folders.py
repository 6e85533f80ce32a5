"""Walking the index store's ``data/<index>/<state id>`` folders, and repair leftovers (vacuum and repair)."""

from __future__ import annotations

import os
from pathlib import Path

from lakesieve.store import IndexStore
from lakesieve.store.log_swap import repair_folders
from lakesieve.store.object_index import ObjectIndexStore, state_time_ms


def state_folders(store: IndexStore) -> list[tuple[str, str, Path]]:
    """Every ``data/<index>/<state id>`` folder on disk, referenced or not.

    Symbolic links are skipped, never followed.

    Raises:
        IndexCorruptError: ``data`` itself is reached through a link.
    """
    if isinstance(store, ObjectIndexStore):
        return list(store.state_folders())
    out: list[tuple[str, str, Path]] = []
    store.confined(store.data_dir)
    if not store.data_dir.is_dir():
        return out
    with os.scandir(store.data_dir) as indexes:
        index_dirs = sorted(
            (e.name, Path(e.path)) for e in indexes if e.is_dir(follow_symlinks=False)
        )
    for index_name, index_dir in index_dirs:
        with os.scandir(index_dir) as states:
            for entry in sorted(states, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    out.append((index_name, entry.name, Path(entry.path)))
    return out


def folder_time(store: IndexStore, state_id: str, folder: Path) -> float | None:
    """When the state folder last changed: on object storage, the time its state id carries."""
    if isinstance(store, ObjectIndexStore):
        stamp = state_time_ms(state_id)
        return None if stamp is None else stamp / 1000
    return newest_mtime(folder)


def newest_mtime(folder: Path) -> float | None:
    """The newest modification time of ``folder`` and its entries (``None`` when unreadable)."""
    try:
        with os.scandir(folder) as entries:
            times = [e.stat(follow_symlinks=False).st_mtime for e in entries]
        return max([folder.lstat().st_mtime, *times])
    except OSError:
        return None


def remove_repair_leftovers(store: IndexStore, cutoff: float) -> list[str]:
    """Remove the ``_log.repair-*`` folders of interrupted repairs unchanged since ``cutoff``; their names.

    Only while ``_log`` is in place (otherwise one of them may be the log to
    put back), and never through a link.
    """
    if store.remote or not store.log_dir.is_dir():
        return []
    removed = []
    for folder in repair_folders(store.root):
        newest = newest_mtime(folder)
        if newest is not None and newest <= cutoff and store.remove_tree(folder):
            removed.append(folder.name)
    return removed
