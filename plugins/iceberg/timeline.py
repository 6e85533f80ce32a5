"""The timeline of an Iceberg table: the snapshots of its main branch, in commit order.

The timeline is the current snapshot and its ancestors still kept in the
metadata (snapshots of other branches, and snapshots a rollback abandoned,
are not on it; an expired ancestor ends it). An instant's ``id`` is the
snapshot id as the user writes it; its ``sort_key`` is the snapshot's
sequence number and commit time, both zero-padded
(``"<sequence:020d>.<timestamp ms:020d>"``), which orders format-version 2
tables by sequence and format-version 1 tables (all sequence 0) by time;
its ``action`` the snapshot's operation (``append``, ``overwrite``,
``delete``, ``replace``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakesieve.errors import InstantNotFoundError
from lakesieve.model import Instant

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot


def sort_key(snap: IcebergSnapshot) -> str:
    """The timeline sort key of a snapshot."""
    return f"{snap.sequence_number or 0:020d}.{snap.timestamp_ms:020d}"


def instant_of(snap: IcebergSnapshot) -> Instant:
    """The :class:`Instant` of one snapshot."""
    operation = snap.summary.operation.value if snap.summary is not None else ""
    return Instant(sort_key=sort_key(snap), id=str(snap.snapshot_id), action=str(operation))


def lineage(table: Table) -> list[IcebergSnapshot]:
    """The main branch's snapshots still in the metadata, oldest first."""
    from pyiceberg.table.snapshots import ancestors_of

    chain = list(ancestors_of(table.current_snapshot(), table.metadata))
    return sorted(chain, key=sort_key)


def list_instants(table: Table) -> list[Instant]:
    """The timeline of ``table``, oldest first."""
    return [instant_of(s) for s in lineage(table)]


def resolve(table: Table, table_path: str, instant: str | None) -> IcebergSnapshot | None:
    """The snapshot ``instant`` names on the timeline (current when ``None``).

    Returns ``None`` for a table without snapshots.

    Raises:
        InstantNotFoundError: ``instant`` is not a snapshot on the timeline.
    """
    line = lineage(table)
    if instant is None:
        return line[-1] if line else None
    for snap in line:
        if str(snap.snapshot_id) == str(instant).strip():
            return snap
    latest = ", ".join(str(s.snapshot_id) for s in line[-3:]) or "none"
    raise InstantNotFoundError(
        f"snapshot {instant!r} is not on the timeline of Iceberg table {table_path} "
        f"(latest: {latest})"
    )
