"""The indexes of one table: their log, their loaded states, delta overlays and fallbacks.

:class:`TableIndexes` is what a query, a refresh, a repair and the Spark data
source share below the :class:`~lakesieve.table.Table` facade:

* the declared indexes (:meth:`TableIndexes.index`, :meth:`TableIndexes.indexes`);
* a state loaded through its index type, cached per state
  (:meth:`TableIndexes.load`);
* the summed deltas stacked on a base (:meth:`TableIndexes.overlay`), and the
  longest readable prefix of a chain when a delta is damaged;
* the indexes a query at an instant can use, and why the others cannot
  (:meth:`TableIndexes.usable_indexes`). An index that is missing, corrupt,
  stale beyond what the format can account for, or of another table makes
  the query read more (every location at worst) with a
  :class:`~lakesieve.query.planner.LakesieveWarning`; the rows stay exact.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

from lakesieve.contract import registry
from lakesieve.contract.loaded import answering
from lakesieve.contract.protocols import TableFormat
from lakesieve.errors import IndexCorruptError, IndexNotFoundError, LakesieveWarning
from lakesieve.model import BuiltIndex, Changes, Instant, Snapshot, TableRef
from lakesieve.state.in_use import IndexInUse
from lakesieve.state.overlay import (
    DELTA_FILE,
    RENAMES_FILE,
    DeltaOverlay,
    delta_of,
    renames_of,
)
from lakesieve.store import IndexStore
from lakesieve.store.index_log import IndexDefinition, IndexState, LogSnapshot
from lakesieve.store.seen_locations import seen_of
from lakesieve.store.seen_locations import unseen as unseen_locations
from lakesieve.store.task_files import eager_files, on_demand_reader


def off_timeline(state: IndexState, timeline: set[str], path: str) -> str | None:
    """Why ``state`` cannot answer for table ``path``: its instant is not among ``timeline``'s ids.

    ``None`` when it is on the timeline. Queries then read without the index
    and ``lakesieve index list`` shows it, by this one rule.
    """
    if state.instant in timeline:
        return None
    return (
        f"index instant {state.instant} is not on the timeline of table {path} "
        "(archived, or the index belongs to another table)"
    )


class TableMetadata(Protocol):
    """What a table's indexes need of the table as its format shows it.

    :class:`lakesieve.query.table_view.TableView` is one (answers cached per
    instant); this package stays below :mod:`lakesieve.query`.
    """

    ref: TableRef
    fmt: TableFormat

    @property
    def path(self) -> str:
        """The table root."""
        ...

    @property
    def format(self) -> str:
        """The format plugin's name."""
        ...

    def timeline(self) -> list[Instant]:
        """Completed instants, oldest first."""
        ...

    def resolve_instant(
        self, as_of: str | None, line: list[Instant] | None = None
    ) -> Instant | None:
        """The instant ``as_of`` names (latest when ``None``)."""
        ...

    def fingerprint(self) -> str:
        """The table's identity fingerprint for the index log."""
        ...

    def table_id(self) -> str | None:
        """The format's lifelong table identity, fingerprinted (``None``: it has none)."""
        ...

    def snapshot_at(self, inst: Instant | None) -> Snapshot:
        """The read units at ``inst``."""
        ...

    def changes(self, start: Instant | None, end: Instant) -> Changes:
        """What changed between two instants."""
        ...


class IndexedTable(Protocol):
    """What repair and index health need of a :class:`lakesieve.table.Table`."""

    store: IndexStore
    states: TableIndexes

    @property
    def path(self) -> str:
        """The table root."""
        ...

    def timeline(self) -> list[Instant]:
        """Completed instants, oldest first."""
        ...


class TableIndexes:
    """One table's index store, with the table's view, and the states loaded from it."""

    def __init__(self, view: TableMetadata, store: IndexStore) -> None:
        self.view = view
        self.store = store
        self._loaded: dict[str, Any] = {}

    @property
    def ref(self) -> TableRef:
        """The table."""
        return self.view.ref

    @property
    def path(self) -> str:
        """The table root."""
        return self.view.path

    @property
    def format(self) -> str:
        """The format plugin's name."""
        return self.view.format

    # ------------------------------------------------------------ the log

    def indexes(self) -> list[IndexDefinition]:
        """Every index declared on the table."""
        return list(self.store.read_log().indexes.values())

    def index(self, name: str) -> IndexDefinition:
        """One index by name.

        Raises:
            IndexNotFoundError: no index of that name.
        """
        found = self.store.read_log().indexes.get(name)
        if found is None:
            names = ", ".join(sorted(self.store.read_log().indexes)) or "none"
            raise IndexNotFoundError(f"table {self.path} has no index {name!r} (indexes: {names})")
        return found

    def drop(self, name: str) -> None:
        """Drop an index and delete its files (holding the store's writers' lock)."""
        definition = self.index(name)
        with self.store.writing():
            self.store.commit_with_retry(lambda snap: [{"op": "drop", "index": name}])
            self.store.delete_state_files(definition.states)

    # ------------------------------------------------------------ states

    def load(self, definition: IndexDefinition, state: IndexState) -> Any:
        """``state`` loaded by its index type (remembered per state)."""
        if state.state_id in self._loaded:
            return self._loaded[state.state_id]
        files = eager_files(self.store, state)
        fetch = on_demand_reader(self.store, state)
        obj = registry.index_type(definition.type).load(
            BuiltIndex(files=files, meta=dict(state.meta), fetch=fetch)
        )
        self._loaded[state.state_id] = obj
        return obj

    def overlay(self, definition: IndexDefinition, chain: list[IndexState]) -> DeltaOverlay | None:
        """The summed deltas of ``chain`` (``None`` for a base alone); raises if one is unreadable."""
        _, overlay, problem = self.overlay_prefix(definition, chain, {s.instant for s in chain})
        if problem is not None:
            raise IndexCorruptError(
                f"index {definition.name!r}: state of instant {problem[0]} ({problem[1]})"
            )
        return overlay

    def overlay_prefix(
        self, definition: IndexDefinition, chain: list[IndexState], timeline: set[str]
    ) -> tuple[list[IndexState], DeltaOverlay | None, tuple[str, str] | None]:
        """The longest usable prefix of ``chain`` (base first), its overlay, and what cut it.

        A delta whose files do not read back (missing, failing their checksum)
        ends the prefix before it; the prefix then ends at the newest earlier
        state whose instant is still on the table's timeline, so staleness can
        be counted from there. The third item names the unreadable state's
        instant and why (``None`` when the whole chain reads).

        Raises:
            IndexCorruptError: no earlier state is on the timeline.
        """
        if len(chain) == 1:
            return chain, None, None
        key = "overlay:" + chain[-1].state_id
        if key in self._loaded:
            return chain, self._loaded[key], None
        states: list[tuple[Any, dict[str, str]]] = []
        problem: tuple[str, str] | None = None
        end = len(chain)
        for i, state in enumerate(chain[1:], start=1):
            try:
                files = self.store.read_files(state)
                states.append(
                    (delta_of(files.get(DELTA_FILE)), renames_of(files.get(RENAMES_FILE)))
                )
            except Exception as exc:
                problem, end = (state.instant, str(exc)), i
                break
        if problem is None:
            overlay = DeltaOverlay.from_states(states)
            self._loaded[key] = overlay
            return chain, overlay, None
        while end > 0 and chain[end - 1].instant not in timeline:
            end -= 1
        if end == 0:
            raise IndexCorruptError(
                f"state of instant {problem[0]} ({problem[1]}), and no earlier state is on the timeline"
            )
        return (
            chain[:end],
            (DeltaOverlay.from_states(states[: end - 1]) if end > 1 else None),
            problem,
        )

    def describe(self, name: str) -> dict[str, Any]:
        """Type, column, instants, size and the index type's own description."""
        definition = self.index(name)
        state = definition.latest()
        out: dict[str, Any] = {
            "name": definition.name,
            "type": definition.type,
            "column": definition.column,
            "key_type": definition.key_type,
            "params": definition.params,
            "instants": [s.instant for s in definition.states],
            "instant": state.instant if state else None,
            "size_bytes": state.size_bytes if state else 0,
        }
        if state is not None:
            try:
                chain = definition.chain(state)
                base = chain[0]
                out["base_instant"] = base.instant
                out["deltas"] = len(chain) - 1
                out["size_bytes"] = sum(s.size_bytes for s in chain)
                out["build_seconds"] = base.meta.get("build_seconds")
                overlay = self.overlay(definition, chain)
                if overlay is not None:
                    out["delta_rows"] = overlay.rows
                    out["locations_moved"] = len(overlay.renames)
                obj = self.load(definition, base)
                details = answering(registry.index_type(definition.type), obj).describe()
                if details:
                    out["details"] = details
            except Exception as exc:
                out["error"] = f"unreadable: {exc}"
        return out

    # ------------------------------------------------------------ queries

    def usable_indexes(
        self,
        inst: Instant,
        columns: set[str],
        snapshot: Snapshot,
        line: list[Instant],
        log: LogSnapshot | None = None,
    ) -> tuple[list[IndexInUse], list[str]]:
        """The indexes on ``columns`` loaded for a query at ``inst``, and warnings about the others.

        Every index on one of ``columns`` is returned; one that cannot be used
        carries its reason in ``error``. Each fallback is also warned about
        (attributed to the caller of the caller, the query's entry point).
        ``log`` is the index log as the caller already read it (leniently, as
        here); without it the log is read now.
        """
        notes: list[str] = []
        try:
            if log is None:  # a bad commit: the states before it, and a warning
                log = self.store.read_log(strict=False)
        except IndexCorruptError as exc:
            msg = f"index log of table {self.path} is unreadable ({exc}); reading every location"
            warnings.warn(msg, LakesieveWarning, stacklevel=3)
            return [], [msg]
        for log_problem in log.problems:
            notes.append(
                f"{log_problem} (table {self.path}); using the index states committed before it "
                "(`lakesieve index repair` fixes the log)"
            )
            warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
        timeline = {i.id for i in line}
        out: list[IndexInUse] = []
        visible = snapshot.locations
        wanted = [d for d in log.indexes.values() if d.column in columns]
        self.store.prefetch(  # every state the loop loads, at once where requests cost
            f
            for d in wanted
            if (head := d.state_for(inst.sort_key)) is not None
            for s in d.chain(head)
            for f in s.files
        )
        for definition in log.indexes.values():
            if definition.column not in columns:
                continue
            state = definition.state_for(inst.sort_key)
            item = IndexInUse(definition, state, visible=visible)
            out.append(item)
            if state is None:
                item.error = "never built"
                continue
            off = off_timeline(state, timeline, self.path)
            if off is not None:
                item.error = off
                notes.append(f"index {definition.name!r}: {item.error}; not used")
                warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
                continue
            try:
                chain = definition.chain(state)
                item.obj = self.load(definition, chain[0])
                usable, item.overlay, problem = self.overlay_prefix(definition, chain, timeline)
            except Exception as exc:
                item.obj = None
                item.error = f"unreadable: {exc}"
                notes.append(f"index {definition.name!r} is unreadable ({exc}); not used")
                warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
                continue
            if problem is not None:
                # the states before the bad delta still hold for their own
                # instant: use the newest of them as a stale index (exact, reads more)
                state = usable[-1]
                item.state = state
                notes.append(
                    f"index {definition.name!r}: its state of instant {problem[0]} is unreadable "
                    f"({problem[1]}); using its state of instant {state.instant}"
                )
                warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
            if state.instant != inst.id:
                try:
                    at = next(i for i in line if i.id == state.instant)
                    changes = self.view.changes(at, inst)
                    item.added_for_staleness = changes.touched & snapshot.locations
                except Exception as exc:
                    item.obj = None
                    item.error = f"changes since index instant unknown: {exc}"
                    notes.append(f"index {definition.name!r}: {item.error}; not used")
                    warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
                    continue
            never_seen = self.unseen(usable, inst, visible)
            item.unseen = len(never_seen)
            if never_seen - item.added_for_staleness:
                item.added_for_staleness = item.added_for_staleness | never_seen
        return out, notes

    def unseen(
        self, chain: list[IndexState], inst: Instant, locations: frozenset[str]
    ) -> frozenset[str]:
        """Locations of the snapshot at ``inst`` that the newest state of ``chain`` never saw.

        Empty when the chain records nothing (states written before the record
        existed): the format's change record answers for them alone.
        """
        seen = seen_of(chain, self._loaded)
        if seen is None or not chain:
            return frozenset()
        key = f"unseen:{chain[-1].state_id}:{inst.id}"
        if key not in self._loaded:
            self._loaded[key] = unseen_locations(locations, seen)
        found: frozenset[str] = self._loaded[key]
        return found
