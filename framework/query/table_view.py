"""A table as its format plugin shows it: timeline, schema and read units per instant.

:class:`TableView` asks the table's format plugin and remembers what a
completed instant holds (its schema and its read units never change), so
planning, index builds and refreshes of one table share those answers.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.contract.protocols import HasTableId, TableFormat
from lakesieve.errors import InstantNotFoundError
from lakesieve.model import Changes, Instant, Snapshot, TableRef
from lakesieve.query.live_changes import checked_changes
from lakesieve.store.index_log import table_id_fingerprint

#: Instants whose schema and snapshot a view remembers.
INSTANT_CACHE = 8


class TableView:
    """The format plugin's answers about one table, cached per completed instant.

    A view assumes its path is not deleted and re-created under it with the
    same instant ids (open a new table then).
    """

    def __init__(self, ref: TableRef, fmt: TableFormat | None = None) -> None:
        self.ref = ref
        #: The format plugin's object for this table, opened once; every question goes to it.
        self.fmt: TableFormat = fmt if fmt is not None else registry.table_format(ref)
        # what a completed instant holds never changes: schema and snapshot per instant, last few kept
        self._at_instant: OrderedDict[tuple[str, Instant], Any] = OrderedDict()
        self._table_id: tuple[str | None] | None = None

    @property
    def path(self) -> str:
        """The table root."""
        return self.ref.path

    @property
    def format(self) -> str:
        """The format plugin's name."""
        return self.ref.format

    def timeline(self) -> list[Instant]:
        """Completed instants, oldest first."""
        return list(self.fmt.timeline())

    def resolve_instant(
        self, as_of: str | None, line: list[Instant] | None = None
    ) -> Instant | None:
        """The instant ``as_of`` names (latest when ``None``).

        Raises:
            InstantNotFoundError: ``as_of`` is not a completed instant of the table.
        """
        line = self.timeline() if line is None else line
        if as_of is None:
            return line[-1] if line else None
        for inst in line:
            if inst.id == str(as_of):
                return inst
        known = ", ".join(i.id for i in line[-5:]) or "none"
        raise InstantNotFoundError(
            f"instant {as_of!r} is not a completed instant of table {self.path} (latest: {known})"
        )

    def fingerprint(self) -> str:
        """What ties an index log to this table: its identity where the format
        gives one (:meth:`table_id`), else its format and first instant."""
        found = self.table_id()
        if found is not None:
            return found
        line = self.timeline()
        first = line[0].id if line else ""
        return f"{self.format}:{first}"

    def table_id(self) -> str | None:
        """The table's lifelong identity as an index log records it; ``None`` without one."""
        if self._table_id is None:  # read once: a table keeps its identity
            found = self.fmt.table_id() if isinstance(self.fmt, HasTableId) else None
            self._table_id = (table_id_fingerprint(self.format, found) if found else None,)
        return self._table_id[0]

    def _cached(self, kind: str, inst: Instant, make: Any) -> Any:
        """``make()``, remembered for ``(kind, inst)``: a completed instant's schema and units are fixed."""
        key = (kind, inst)
        if key in self._at_instant:
            self._at_instant.move_to_end(key)
            return self._at_instant[key]
        value = make()
        self._at_instant[key] = value
        while len(self._at_instant) > INSTANT_CACHE:
            self._at_instant.popitem(last=False)
        return value

    def remembered(self, kind: str, inst: Instant, make: Any) -> Any:
        """``make()``, remembered for ``(kind, inst)``: for answers fixed per completed instant."""
        return self._cached(kind, inst, make)

    def schema_at(self, inst: Instant | None) -> pa.Schema:
        """The table's Arrow schema at ``inst`` (the format's answer for no instant when ``None``)."""

        def make() -> pa.Schema:
            return self.fmt.schema(inst.id if inst else None)

        return make() if inst is None else self._cached("schema", inst, make)

    def schema(self, as_of: str | None = None) -> pa.Schema:
        """The table's Arrow schema at the instant ``as_of`` names (latest when ``None``)."""
        return self.schema_at(self.resolve_instant(as_of))

    def snapshot_at(self, inst: Instant | None) -> Snapshot:
        """The read units visible at ``inst`` (none for an empty table's ``None``)."""
        if inst is None:
            return Snapshot(None, ())
        return self._cached(
            "snapshot",
            inst,
            lambda: self.fmt.snapshot(inst.id),
        )

    def changes(self, start: Instant | None, end: Instant) -> Changes:
        """The locations touched between ``start`` and ``end``, checked against both snapshots.

        The format's change record (its ``changes`` hook) is corrected by the
        read units live at each instant (:mod:`lakesieve.query.live_changes`),
        so a writer that records less than it did costs a wider read, never a
        lost row. When the snapshot at ``start`` cannot be listed any more
        (expired), the hook's answer stands alone: hooks report every location
        as rewritten then.
        """
        reported = self.fmt.changes(start.id if start is not None else None, end.id)
        try:
            old = self.snapshot_at(start)
        except Exception:  # an expired start: the hook already widened its answer
            return reported
        return checked_changes(reported, old, self.snapshot_at(end))

    def snapshot(self, as_of: str | None = None) -> Snapshot:
        """The read units visible at the instant ``as_of`` names (latest when ``None``)."""
        return self.snapshot_at(self.resolve_instant(as_of))
