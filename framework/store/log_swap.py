"""The log swap of ``lakesieve index repair``, safe against a kill at any step.

Repair replaces a damaged log folder in these steps:

1. it writes the new log (commit 0 and its head) into ``_log.repair-<id>``;
2. it writes :data:`MARKER` there, naming the repair and the folder the old
   log will be moved to: from now on the new log is *complete*;
3. it renames ``_log`` to ``_log.damaged-<time>-<id>`` (kept for inspection);
4. it renames ``_log.repair-<id>`` to ``_log``.

A kill before step 3 leaves ``_log`` as it was, and a ``_log.repair-*``
folder that vacuum or the next repair removes. A kill between steps 3 and 4
leaves no ``_log``: :func:`settle`, which every opening of the log runs
when ``_log`` is missing, then finishes step 4 itself (any process may; the
first rename wins). A missing ``_log`` beside repair leftovers that cannot
be settled so is reported as damage, never read as an empty store (which a
vacuum would take as "delete every index folder"); :func:`restore` (repair)
puts the newest complete new log, else the newest moved-aside log, back.

This module only names and moves folders; it imports no store.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from lakesieve.errors import IndexCorruptError
from lakesieve.store.errors import replace_file, write_error

#: The log folder under the index root.
LOG_DIR = "_log"
#: Prefix of a log folder a repair moved aside.
DAMAGED_PREFIX = "_log.damaged-"
#: Prefix of the folder a repair writes its new log into.
REPAIR_PREFIX = "_log.repair-"
#: The file that makes a ``_log.repair-*`` folder a complete log.
MARKER = "_repair.json"
_FIRST_COMMIT = f"{0:020d}.json"


@dataclass(frozen=True)
class NewLog:
    """A complete new log a repair wrote (its marker read back)."""

    folder: Path
    repair_id: str
    aside: str
    created_ms: int


def _folders(root: Path, prefix: str) -> list[Path]:
    """The plain folders (never links) under ``root`` whose names start with ``prefix``, by name."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    return sorted(
        Path(e.path)
        for e in entries
        if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
    )


def repair_folders(root: Path) -> list[Path]:
    """Every ``_log.repair-*`` folder under ``root``."""
    return _folders(root, REPAIR_PREFIX)


def damaged_folders(root: Path) -> list[Path]:
    """Every ``_log.damaged-*`` folder under ``root``."""
    return _folders(root, DAMAGED_PREFIX)


def read_marker(folder: Path) -> NewLog | None:
    """The repair that wrote ``folder``, when it is a complete new log (marker and commit 0)."""
    try:
        body = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        if not stat.S_ISREG(os.lstat(folder / _FIRST_COMMIT).st_mode):
            return None
        return NewLog(folder, str(body["repair_id"]), str(body["aside"]), int(body["created_ms"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_marker(folder: Path, repair_id: str, aside: str) -> None:
    """Mark ``folder`` a complete new log of repair ``repair_id`` (step 2).

    Raises:
        StoreWriteError: the marker cannot be written.
    """
    body = {"repair_id": repair_id, "aside": aside, "created_ms": int(time.time() * 1000)}
    try:
        replace_file(
            folder / MARKER, folder / f".tmp-marker-{repair_id}", json.dumps(body).encode()
        )
    except OSError as exc:
        raise write_error(exc, folder / MARKER) from None


def pending(root: Path) -> NewLog | None:
    """The complete new log whose old log was moved aside (a kill between steps 3 and 4)."""
    found = [m for m in map(read_marker, repair_folders(root)) if m is not None]
    moved = [m for m in found if os.path.isdir(root / m.aside)]
    return max(moved, key=lambda m: (m.created_ms, m.folder.name), default=None)


def settle(root: Path, log_dir: Path) -> None:
    """Finish a log swap a kill interrupted, when ``log_dir`` is missing; see the module docstring.

    Raises:
        IndexCorruptError: ``log_dir`` is missing beside repair leftovers and
            cannot be put back here (``lakesieve index repair`` can).
    """
    if os.path.lexists(log_dir):
        return
    found = pending(root)
    if found is not None:
        try:
            os.rename(found.folder, log_dir)
        except OSError as exc:
            if not os.path.isdir(log_dir):  # another process may just have done it
                raise IndexCorruptError(
                    f"the index log {log_dir} is missing: an interrupted `lakesieve index repair` "
                    f"left the new log in {found.folder}, which cannot be moved into place "
                    f"({exc.strerror}); run `lakesieve index repair` where {root} is writable"
                ) from None
        return
    leftovers = [p.name for p in damaged_folders(root) + repair_folders(root)]
    if leftovers and not os.path.isdir(log_dir):
        raise IndexCorruptError(
            f"the index log {log_dir} is missing while {', '.join(leftovers)} "
            f"{'is' if len(leftovers) == 1 else 'are'} there (an interrupted `lakesieve index repair`);"
            " run `lakesieve index repair` to put it back"
        )


def restore(root: Path, log_dir: Path) -> str | None:
    """Put a missing ``log_dir`` back (repair): the newest complete new log, else the newest old log.

    Returns the folder moved into place (``None`` when ``log_dir`` was there or
    there is nothing to put back).

    Raises:
        StoreWriteError: the folder cannot be renamed.
    """
    if os.path.lexists(log_dir):
        return None
    complete = [m for m in map(read_marker, repair_folders(root)) if m is not None]
    newest = max(complete, key=lambda m: (m.created_ms, m.folder.name), default=None)
    candidates = [newest.folder] if newest is not None else damaged_folders(root)[-1:]
    for folder in candidates:
        try:
            os.rename(folder, log_dir)
        except OSError as exc:
            raise write_error(exc, log_dir) from None
        return str(folder)
    return None


def marker_id(log_dir: Path) -> str | None:
    """The id of the repair that wrote ``log_dir`` (``None`` when no repair did)."""
    found = read_marker(log_dir)
    return found.repair_id if found is not None else None
