"""Walking the index store's ``data/<index>/<state id>`` folders (vacuum and repair)."""

from __future__ import annotations

import os
from pathlib import Path

from lakesieve.store import IndexStore


def state_folders(store: IndexStore) -> list[tuple[str, str, Path]]:
    """Every ``data/<index>/<state id>`` folder on disk, referenced or not.

    Symbolic links are skipped, never followed.

    Raises:
        IndexCorruptError: ``data`` itself is reached through a link.
    """
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
