"""The timeline of an Iceberg table: the snapshots of its main branch, in commit order.

The timeline is the current snapshot and its ancestors still kept in the
metadata, ordered by **lineage**: each snapshot follows the one its
``parent-snapshot-id`` names (snapshots of other branches, and snapshots a
rollback abandoned, are not on it; an expired or missing ancestor ends it).
Neither sequence numbers nor commit times order it: a format-version 1
table has no sequence numbers (every snapshot reads as 0, and the spec
assigns 0 to them when the table is upgraded), and commit times may tie (two
commits in one millisecond) or run backwards (writers' clocks differ).

An instant's ``id`` is the snapshot id as the user writes it; its ``action``
the snapshot's operation (``append``, ``overwrite``, ``delete``,
``replace``); its ``sort_key`` the snapshot's sequence number and commit
time, both zero-padded (``"<sequence:020d>.<timestamp ms:020d>"``), made
strictly increasing along the lineage: a snapshot whose pair is not above
its parent's key takes the key of the newest ancestor that set a pair plus
a tie counter (``"<that key>.<n:010d>"``), which sorts after that ancestor's
key and its earlier tie keys and before any greater pair. A table whose
sequence numbers and times both rise along the lineage (any format-version
2 table, and a version 1 table whose writers' clocks agree) gets plain
pairs, so keys stored with indexes stay valid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakesieve.sdk import Instant, InstantNotFoundError

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot


def _pair(snap: IcebergSnapshot) -> tuple[int, int]:
    return int(snap.sequence_number or 0), int(snap.timestamp_ms)


def _pair_key(pair: tuple[int, int]) -> str:
    return f"{pair[0]:020d}.{pair[1]:020d}"


def lineage(table: Table) -> list[IcebergSnapshot]:
    """The main branch's snapshots still in the metadata, oldest first, by parent chain."""
    chain: list[IcebergSnapshot] = []
    seen: set[int] = set()
    snap = table.current_snapshot()
    while snap is not None and snap.snapshot_id not in seen:  # a cycle would be malformed
        seen.add(snap.snapshot_id)
        chain.append(snap)
        parent = snap.parent_snapshot_id
        snap = table.metadata.snapshot_by_id(parent) if parent is not None else None
    chain.reverse()
    return chain


def sort_keys(line: list[IcebergSnapshot]) -> list[str]:
    """The sort key of each snapshot of ``line`` (oldest first); see the module docstring."""
    keys: list[str] = []
    last: tuple[int, int] | None = None
    ties = 0
    for snap in line:
        pair = _pair(snap)
        if last is None or pair > last:
            last, ties = pair, 0
            keys.append(_pair_key(pair))
        else:
            ties += 1
            keys.append(f"{_pair_key(last)}.{ties:010d}")
    return keys


def _instant(snap: IcebergSnapshot, key: str) -> Instant:
    operation = snap.summary.operation.value if snap.summary is not None else ""
    return Instant(sort_key=key, id=str(snap.snapshot_id), action=str(operation))


def instants(table: Table) -> list[tuple[IcebergSnapshot, Instant]]:
    """Each snapshot of the timeline with its :class:`Instant`, oldest first."""
    line = lineage(table)
    return [(s, _instant(s, k)) for s, k in zip(line, sort_keys(line), strict=True)]


def list_instants(table: Table) -> list[Instant]:
    """The timeline of ``table``, oldest first."""
    return [inst for _, inst in instants(table)]


def instant_of(table: Table, snap: IcebergSnapshot) -> Instant:
    """The :class:`Instant` of one snapshot of the timeline.

    Raises:
        InstantNotFoundError: ``snap`` is not on the timeline.
    """
    for candidate, inst in instants(table):
        if candidate.snapshot_id == snap.snapshot_id:
            return inst
    raise InstantNotFoundError(
        f"snapshot {snap.snapshot_id} is not on the timeline of Iceberg table "
        f"{table.metadata.location}"
    )


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
