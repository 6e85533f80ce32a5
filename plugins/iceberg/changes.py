"""Locations touched between two snapshots of an Iceberg table, from manifest entries.

Snapshots on the timeline *strictly after the smaller* bound and *up to and
including the larger* are considered, whatever the order of ``start`` and
``end``; "smaller" and "after" are by lineage (the parent-snapshot chain,
:func:`.timeline.lineage`), never by sequence number or commit time, which
a format-version 1 table (all sequence 0) cannot order by. A snapshot's
own changes are the entries it wrote itself (status
``ADDED`` or ``DELETED`` with its snapshot id) in the manifests it added.
Folded oldest first:

- a data file added is ``added``; deleted is ``removed``; added and deleted
  inside the range is ``removed``;
- a delete file added or removed rewrites the rows of data files: the one
  data file its path bounds name, or else every data file visible at that
  snapshot in its partition (every one, for an unpartitioned equality
  delete); those locations are ``rewritten``.

When ``end`` is older than ``start`` the view is from ``start`` moving back to
``end``: ``added`` and ``removed`` swap; ``touched`` is the same either way.
A ``start`` that is no longer on the timeline (expired) makes every location
of ``end`` ``rewritten``: a superset of the truth, as the hook requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakesieve.plugins.iceberg import catalog, timeline
from lakesieve.plugins.iceberg.snapshot import (
    LiveFiles,
    live_files,
    location_of,
    partition_key,
    referenced_path,
)
from lakesieve.sdk import Changes, InstantNotFoundError, TableRef

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot


def _own_entries(table: Table, snap: IcebergSnapshot) -> list[tuple[str, DataFile]]:
    """``("added" | "deleted", file)`` for every entry the snapshot wrote itself."""
    from pyiceberg.manifest import ManifestEntryStatus

    out: list[tuple[str, DataFile]] = []
    for manifest in snap.manifests(table.io):
        if manifest.added_snapshot_id != snap.snapshot_id:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            if entry.snapshot_id != snap.snapshot_id:
                continue
            if entry.status == ManifestEntryStatus.ADDED:
                out.append(("added", entry.data_file))
            elif entry.status == ManifestEntryStatus.DELETED:
                out.append(("deleted", entry.data_file))
    return out


def _rows_rewritten_by(
    table: Table, snap: IcebergSnapshot, delete_file: DataFile, memo: dict[int, LiveFiles]
) -> set[str]:
    """Locations whose rows a delete file added or removed at ``snap`` may change."""
    from pyiceberg.manifest import DataFileContent

    target = referenced_path(delete_file)
    if target is not None and delete_file.content == DataFileContent.POSITION_DELETES:
        return {location_of(table, target)}
    spec = table.metadata.specs().get(int(delete_file.spec_id or 0))
    everywhere = spec is None or spec.is_unpartitioned()
    key = partition_key(delete_file)
    if snap.snapshot_id not in memo:
        memo[snap.snapshot_id] = live_files(table, snap)
    return {
        location_of(table, e.data_file.file_path)
        for e in memo[snap.snapshot_id].data
        if everywhere or partition_key(e.data_file) == key
    }


def compute_changes(ref: TableRef, start: str | None, end: str) -> Changes:
    """The locations touched by snapshots between ``start`` and ``end``; see the module docstring.

    Raises:
        InstantNotFoundError: ``end`` is not a snapshot on the timeline.
    """
    from pyiceberg.manifest import DataFileContent

    table = catalog.load_for_read(ref.path, ref.options)
    line = timeline.lineage(table)
    position = {str(s.snapshot_id): i for i, s in enumerate(line)}
    end_pos = position.get(str(end).strip())
    if end_pos is None:
        raise InstantNotFoundError(
            f"snapshot {end!r} is not on the timeline of Iceberg table {ref.path}"
        )
    start_pos = -1 if start is None else position.get(str(start).strip())
    state: dict[str, str] = {}
    if start_pos is None:  # expired or unknown: every location of ``end`` may have changed
        for entry in live_files(table, line[end_pos]).data:
            state[location_of(table, entry.data_file.file_path)] = "rewritten"
        return Changes(start=start, end=end, rewritten=frozenset(state))

    forward = start_pos <= end_pos
    memo: dict[int, LiveFiles] = {}
    low, high = (start_pos, end_pos) if forward else (end_pos, start_pos)
    for snap in line[low + 1 : high + 1]:
        for status, data_file in _own_entries(table, snap):
            if data_file.content == DataFileContent.DATA:
                loc = location_of(table, data_file.file_path)
                if status == "added":
                    state[loc] = "added" if state.get(loc, "added") == "added" else "rewritten"
                else:
                    state[loc] = "removed"
                continue
            for loc in _rows_rewritten_by(table, snap, data_file, memo):
                if state.get(loc) not in ("added", "removed"):
                    state[loc] = "rewritten"

    added = frozenset(loc for loc, kind in state.items() if kind == "added")
    removed = frozenset(loc for loc, kind in state.items() if kind == "removed")
    rewritten = frozenset(loc for loc, kind in state.items() if kind == "rewritten")
    if not forward:
        added, removed = removed, added
    return Changes(start=start, end=end, added=added, rewritten=rewritten, removed=removed)
