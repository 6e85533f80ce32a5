"""The timeline of a Delta table: its committed versions.

An instant's ``id`` is the version as the user writes it (``"0"``, ``"1"``...),
its ``sort_key`` the version zero-padded to 20 digits, its ``action`` the
commit's operation in lower case (``write``, ``delete``, ``merge``,
``create table``...).

Listing the versions means loading the table and its history through delta-rs
(milliseconds, more as the log grows), and every query plan asks for the
latest version. For a table on the local file system the listing is kept per
process together with a fingerprint of ``_delta_log`` (name, size and
modification time of each entry): a log that has not changed has the same
versions, so one directory listing answers. Any new commit, checkpoint or
cleaned-up file changes the fingerprint and the versions are listed again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from lakesieve.plugins.delta import tables
from lakesieve.sdk import Instant, InstantNotFoundError, TableRef, paths

#: Tables whose version list is remembered (least recently used dropped first).
_TIMELINE_CACHE_SIZE = 32
_Fingerprint = tuple[tuple[str, int, int], ...]
_timelines: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], tuple[_Fingerprint, list[Instant]]]
_timelines = OrderedDict()
_timelines_lock = threading.Lock()


def sort_key(version: int) -> str:
    """The timeline sort key of a version."""
    return f"{version:020d}"


def instant_of(version: int, action: str = "") -> Instant:
    """The :class:`Instant` of one version."""
    return Instant(sort_key=sort_key(version), id=str(version), action=action)


def log_fingerprint(table: TableRef) -> _Fingerprint | None:
    """Name, size and modification time (ns) of each entry of a local table's ``_delta_log``.

    ``None`` when the table is not on the local file system or the log cannot
    be listed: then nothing is remembered.
    """
    local = paths.local_path(table.path)
    if local is None:
        return None
    log = os.path.join(os.path.abspath(local), "_delta_log")
    try:
        with os.scandir(log) as entries:
            out = []
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                out.append((entry.name, st.st_size, st.st_mtime_ns))
    except OSError:
        return None
    return tuple(sorted(out))


def list_instants(table: TableRef) -> list[Instant]:
    """Every version delta-rs can still see in the log, oldest first.

    Remembered per process while the local log is unchanged (see the module
    docstring).
    """
    key = (table.path, tuple(sorted((tables.storage_options(table.options) or {}).items())))
    before = log_fingerprint(table)
    if before is not None:
        with _timelines_lock:
            hit = _timelines.get(key)
            if hit is not None and hit[0] == before:
                _timelines.move_to_end(key)
                return list(hit[1])
    line = _list_from_log(table)
    # remembered only when the log did not change while it was being read
    if before is not None and line and log_fingerprint(table) == before:
        with _timelines_lock:
            _timelines[key] = (before, list(line))
            _timelines.move_to_end(key)
            while len(_timelines) > _TIMELINE_CACHE_SIZE:
                _timelines.popitem(last=False)
    return line


def _list_from_log(table: TableRef) -> list[Instant]:
    """Every version delta-rs can still see in the log, read through delta-rs."""
    dt = tables.open_table(table)
    out: dict[int, Instant] = {}
    for commit in dt.history():
        version = commit.get("version")
        if not isinstance(version, int) or version < 0:
            continue
        action = str(commit.get("operation") or "").lower()
        out[version] = instant_of(version, action)
    latest = dt.version()
    if latest >= 0 and latest not in out:
        out[latest] = instant_of(latest)
    return [out[v] for v in sorted(out)]


def resolve(table: TableRef, instant: str | None) -> int | None:
    """The version to read: ``instant`` checked against the table, or the latest one.

    Returns ``None`` for a table without any version.

    Raises:
        InstantNotFoundError: ``instant`` is not a version of the table.
    """
    latest = tables.open_table(table).version()
    if instant is None:
        return latest if latest >= 0 else None
    version = tables.parse_version(instant, table.path)
    if version > latest:
        raise InstantNotFoundError(
            f"version {version} is not a committed version of Delta table {table.path} "
            f"(latest: {latest})"
        )
    return version
