"""The table handle: ``lakesieve.open(path)`` and everything done with one table.

A :class:`Table` knows its format plugin and its index store. It builds,
lists, describes and drops indexes, plans which locations a predicate needs,
explains that plan without starting Spark, and reads the pruned rows.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve import registry
from lakesieve.errors import (
    IndexBuildError,
    IndexCorruptError,
    IndexNotFoundError,
    InstantNotFoundError,
    LakesieveError,
    OptionError,
    TableNotFoundError,
)
from lakesieve.expressions import BoundPredicate, bind, resolve_column, to_sql
from lakesieve.model import LOCATION_COLUMN, BuiltIndex, Instant, Snapshot, TableRef, WriteOptions
from lakesieve.overlay import DeltaOverlay
from lakesieve.planner import LakesieveWarning, LoadedIndex, evaluate
from lakesieve.refresh import (
    RefreshPolicy,
    RefreshResult,
    VacuumResult,
    compact_index,
    refresh_index,
    vacuum,
)
from lakesieve.store import (
    DEFAULT_DIRNAME,
    IndexDefinition,
    IndexState,
    IndexStore,
    add_state_action,
    check_name,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Instants whose schema and snapshot a Table remembers.
_INSTANT_CACHE = 8


@dataclass
class Plan:
    """Which read units a query needs, and why.

    Attributes:
        table_instant: the instant the query reads (``None`` for an empty table).
        snapshot: every read unit at that instant.
        units: the read units selected.
        bound: the bound predicate (``None`` without a ``where``).
        indexes: the indexes consulted, with their status.
        warnings: why pruning was weaker than it could be.
        plan_ms: how long planning took.
        schema: the table's Arrow schema at ``table_instant``, when planning fetched it.
    """

    table_instant: Instant | None
    snapshot: Snapshot
    units: tuple[Any, ...]
    bound: BoundPredicate | None
    indexes: list[LoadedIndex] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plan_ms: float = 0.0
    schema: pa.Schema | None = None

    @property
    def locations_total(self) -> int:
        """Locations visible at the instant."""
        return len(self.snapshot.units)

    @property
    def locations_selected(self) -> int:
        """Locations the query will read."""
        return len(self.units)


def open(
    path: str | os.PathLike[str],
    format: str | None = None,
    index_root: str | os.PathLike[str] | None = None,
    options: dict[str, str] | None = None,
    auto_refresh: bool = False,
    refresh_policy: RefreshPolicy | None = None,
) -> Table:
    """Open the table at ``path``; the format is detected when not given.

    Args:
        path: table root.
        format: format plugin name; detected from the files when ``None``.
        index_root: where the index lives (default ``<path>/.lakesieve``).
        options: format-specific options.
        auto_refresh: let :meth:`Table.read` bring the indexes up to the
            latest instant before planning.
        refresh_policy: when refresh compacts deltas (defaults otherwise).

    Raises:
        TableNotFoundError: nothing at ``path``, or no plugin recognises it.
        AmbiguousFormatError: two plugins claim the table.
    """
    root = os.path.abspath(os.fspath(path))
    if not os.path.exists(root):
        raise TableNotFoundError(f"no table at {root!r}: the path does not exist")
    if format is None:
        format = registry.identify_format(root)
    else:
        registry.open_format(root, {**(options or {}), "format": format}).timeline()
    return Table(
        TableRef(root, format, dict(options or {})), index_root, auto_refresh, refresh_policy
    )


class Table:
    """One table and its indexes."""

    def __init__(
        self,
        ref: TableRef,
        index_root: str | os.PathLike[str] | None = None,
        auto_refresh: bool = False,
        refresh_policy: RefreshPolicy | None = None,
    ) -> None:
        self.ref = ref
        self.auto_refresh = auto_refresh
        self.refresh_policy = refresh_policy or RefreshPolicy()
        if index_root is None:
            index_root = registry.table_format(ref).index_root()
        self.store = IndexStore(index_root or Path(ref.path) / DEFAULT_DIRNAME)
        self._loaded: dict[str, Any] = {}
        # what a completed instant holds never changes: schema and snapshot per instant, last few kept
        self._at_instant: OrderedDict[tuple[str, Instant], Any] = OrderedDict()

    def __repr__(self) -> str:
        return f"Table({self.ref.path!r}, format={self.ref.format!r})"

    @property
    def path(self) -> str:
        """The table root."""
        return self.ref.path

    @property
    def format(self) -> str:
        """The format plugin's name."""
        return self.ref.format

    # ------------------------------------------------------------ timeline

    def timeline(self) -> list[Instant]:
        """Completed instants, oldest first."""
        return list(registry.table_format(self.ref).timeline())

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

    def _cached(self, kind: str, inst: Instant, make: Any) -> Any:
        """``make()``, remembered for ``(kind, inst)``: a completed instant's schema and units are fixed.

        A ``Table`` object assumes its path is not deleted and re-created
        under it with the same instant ids (open a new ``Table`` then).
        """
        key = (kind, inst)
        if key in self._at_instant:
            self._at_instant.move_to_end(key)
            return self._at_instant[key]
        value = make()
        self._at_instant[key] = value
        while len(self._at_instant) > _INSTANT_CACHE:
            self._at_instant.popitem(last=False)
        return value

    def _schema_at(self, inst: Instant | None) -> pa.Schema:
        def make() -> pa.Schema:
            return registry.table_format(self.ref).schema(inst.id if inst else None)

        return make() if inst is None else self._cached("schema", inst, make)

    def schema(self, as_of: str | None = None) -> pa.Schema:
        """The table's Arrow schema at an instant."""
        return self._schema_at(self.resolve_instant(as_of))

    def snapshot(self, as_of: str | None = None) -> Snapshot:
        """The read units visible at an instant."""
        inst = self.resolve_instant(as_of)
        return self._snapshot(inst)

    def _snapshot(self, inst: Instant | None) -> Snapshot:
        if inst is None:
            return Snapshot(None, ())
        return self._cached(
            "snapshot",
            inst,
            lambda: registry.table_format(self.ref).snapshot(inst.id),
        )

    # ------------------------------------------------------------ indexes

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

    def build_index(
        self,
        column: str,
        type: str = "sieve",
        name: str | None = None,
        options: dict[str, str] | None = None,
        spark: SparkSession | None = None,
        as_of: str | None = None,
        spark_conf: dict[str, str] | None = None,
        progress: Any = None,
    ) -> dict[str, Any]:
        """Build (or rebuild) an index on ``column`` at an instant (latest by default).

        Every argument is checked before Spark starts: the column must exist,
        the index type must be installed and accept the column's type and the
        options. Returns the new state's description.
        """
        registry.require_index_type(type)
        inst = self.resolve_instant(as_of)
        if inst is None:
            raise LakesieveError(f"table {self.path} has no completed instant to index")
        schema = registry.table_format(self.ref).schema(inst.id)
        col = resolve_column(schema, column, self.path)
        str_options = {str(k): str(v) for k, v in (options or {}).items()}
        params = registry.index_type(type).validate(str_options, col.spark_type)
        from lakesieve.config import default_index_name

        name = check_name(name or default_index_name(col.name, type), "index name")
        existing = self.store.read_log().indexes.get(name)
        if existing is not None and (existing.type != type or existing.column != col.name):
            raise OptionError(
                f"index {name!r} on table {self.path} already exists as {existing.type} on "
                f"column {existing.column!r}; drop it first or choose another --name"
            )
        from lakesieve.session import get_spark

        if progress is not None:
            progress(
                f"building {type} index {name} on {self.path} column {col.name} at instant {inst.id} ..."
            )
        spark = spark or get_spark(conf=spark_conf)
        definition = IndexDefinition(
            name=name, type=type, column=col.name, key_type=col.spark_type, params=params
        )
        built = self._build(definition, inst, spark)
        state_id, records = self.store.write_files(name, built)

        def actions(snap: Any) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            if snap.table_fingerprint is None:
                out.append({"op": "table", "fingerprint": self._fingerprint()})
            current = snap.indexes.get(name)
            if current is None or current.params != params or current.key_type != col.spark_type:
                out.append(
                    {
                        "op": "define",
                        "index": name,
                        "type": type,
                        "column": col.name,
                        "key_type": col.spark_type,
                        "params": params,
                    }
                )
            out.append(
                add_state_action(name, state_id, inst.id, inst.sort_key, records, built.meta)
            )
            return out

        self.store.commit_with_retry(actions)
        return self.describe_index(name)

    def _build(self, definition: IndexDefinition, inst: Instant, spark: SparkSession) -> BuiltIndex:
        """Build ``definition`` from the table's rows at ``inst`` (a Spark job)."""
        started = time.perf_counter()
        snapshot = self._snapshot(inst)
        frame = registry.table_format(self.ref).read(spark, snapshot.units, inst.id, True)
        from lakesieve.job_errors import is_spark_failure, summarize
        from pyspark.sql import functions as F

        relation = frame.select(
            F.col(definition.column).alias("key"), F.col(LOCATION_COLUMN).alias("location")
        )
        try:
            built = registry.index_type(definition.type).build(
                spark,
                relation,
                definition.key_type,
                definition.params,
                sorted(snapshot.locations),
                snapshot.rows_upper_bound,
            )
        except Exception as exc:
            if not is_spark_failure(exc):
                raise
            raise IndexBuildError(
                f"index {definition.name!r} ({definition.type} on {definition.column}) of table {self.path}: "
                f"the build's Spark job failed: {summarize(exc)}"
            ) from exc
        if not isinstance(built, BuiltIndex):
            got = built.__class__.__name__
            raise LakesieveError(
                f"index type {definition.type!r} returned {got} from build, not BuiltIndex"
            )
        built.meta.setdefault("build_seconds", round(time.perf_counter() - started, 3))
        return built

    def _fingerprint(self) -> str:
        line = self.timeline()
        first = line[0].id if line else ""
        return f"{self.format}:{first}"

    def drop_index(self, name: str) -> None:
        """Drop an index and delete its files."""
        definition = self.index(name)
        self.store.commit_with_retry(lambda snap: [{"op": "drop", "index": name}])
        self.store.delete_state_files(definition.states)

    def _load(self, definition: IndexDefinition, state: IndexState) -> Any:
        if state.state_id in self._loaded:
            return self._loaded[state.state_id]
        files = self.store.read_files(state)
        obj = registry.index_type(definition.type).load(
            BuiltIndex(files=files, meta=dict(state.meta))
        )
        self._loaded[state.state_id] = obj
        return obj

    def _overlay(self, definition: IndexDefinition, chain: list[IndexState]) -> DeltaOverlay | None:
        """The summed deltas of ``chain`` (``None`` for a base alone); raises if one is unreadable."""
        _, overlay, problem = self._overlay_prefix(definition, chain, {s.instant for s in chain})
        if problem is not None:
            raise IndexCorruptError(
                f"index {definition.name!r}: state of instant {problem[0]} ({problem[1]})"
            )
        return overlay

    def _overlay_prefix(
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
        from lakesieve.refresh import DELTA_FILE

        if len(chain) == 1:
            return chain, None, None
        key = "overlay:" + chain[-1].state_id
        if key in self._loaded:
            return chain, self._loaded[key], None
        deltas: list[Any] = []
        problem: tuple[str, str] | None = None
        end = len(chain)
        for i, state in enumerate(chain[1:], start=1):
            try:
                files = self.store.read_files(state)
            except Exception as exc:
                problem, end = (state.instant, str(exc)), i
                break
            deltas.append(files.get(DELTA_FILE))
        if problem is None:
            overlay = DeltaOverlay.from_deltas([d for d in deltas if d is not None])
            self._loaded[key] = overlay
            return chain, overlay, None
        while end > 0 and chain[end - 1].instant not in timeline:
            end -= 1
        if end == 0:
            raise IndexCorruptError(
                f"state of instant {problem[0]} ({problem[1]}), and no earlier state is on the timeline"
            )
        kept = [d for d in deltas[: end - 1] if d is not None]
        return chain[:end], (DeltaOverlay.from_deltas(kept) if end > 1 else None), problem

    def describe_index(self, name: str) -> dict[str, Any]:
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
                overlay = self._overlay(definition, chain)
                if overlay is not None:
                    out["delta_rows"] = overlay.rows
                obj = self._load(definition, base)
                details = registry.index_type(definition.type).describe(obj)
                if details:
                    out["details"] = details
            except Exception as exc:
                out["error"] = f"unreadable: {exc}"
        return out

    # ------------------------------------------------------------ maintenance

    def refresh(
        self,
        name: str | None = None,
        spark: SparkSession | None = None,
        policy: RefreshPolicy | None = None,
    ) -> list[RefreshResult]:
        """Bring every index (or the one named) to the latest completed instant.

        Reads only the locations changed since each index's instant and
        stores the difference as a delta, compacting when ``policy`` says so
        (see :mod:`lakesieve.refresh`).
        """
        names = [self.index(name).name] if name else [d.name for d in self.indexes()]
        line = self.timeline()
        target = line[-1] if line else None
        if target is None or not names:
            return []
        from lakesieve.session import get_spark

        spark = spark or get_spark()
        policy = policy or self.refresh_policy
        return [refresh_index(self, n, spark, policy, target, line) for n in names]

    def compact(
        self,
        name: str | None = None,
        spark: SparkSession | None = None,
        policy: RefreshPolicy | None = None,
    ) -> list[RefreshResult]:
        """Fold the deltas of every index (or the one named) into a new base."""
        names = [self.index(name).name] if name else [d.name for d in self.indexes()]
        from lakesieve.session import get_spark

        spark = spark or get_spark()
        policy = policy or self.refresh_policy
        return [compact_index(self, n, spark, policy) for n in names]

    def vacuum(self, grace_seconds: float | None = None) -> VacuumResult:
        """Remove index states of instants the table no longer keeps, and unreferenced files."""
        grace = self.refresh_policy.vacuum_grace_seconds if grace_seconds is None else grace_seconds
        return vacuum(self, grace)

    # ------------------------------------------------------------ planning

    def _loaded_indexes(
        self, inst: Instant, columns: set[str], snapshot: Snapshot, line: list[Instant]
    ) -> tuple[list[LoadedIndex], list[str]]:
        notes: list[str] = []
        try:
            log = self.store.read_log(
                strict=False
            )  # a bad commit: the states before it, and a warning
        except IndexCorruptError as exc:
            msg = f"index log of table {self.path} is unreadable ({exc}); reading every location"
            warnings.warn(msg, LakesieveWarning, stacklevel=3)
            return [], [msg]
        for problem in log.problems:
            notes.append(
                f"{problem} (table {self.path}); using the index states committed before it "
                "(`lakesieve index repair` fixes the log)"
            )
            warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
        timeline = {i.id for i in line}
        out: list[LoadedIndex] = []
        for definition in log.indexes.values():
            if definition.column not in columns:
                continue
            state = definition.state_for(inst.sort_key)
            item = LoadedIndex(definition, state)
            out.append(item)
            if state is None:
                item.error = "never built"
                continue
            if state.instant not in timeline:
                item.error = (
                    f"index instant {state.instant} is not on the timeline of table {self.path} "
                    "(archived, or the index belongs to another table)"
                )
                notes.append(f"index {definition.name!r}: {item.error}; not used")
                warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
                continue
            try:
                chain = definition.chain(state)
                item.obj = self._load(definition, chain[0])
                usable, item.overlay, problem = self._overlay_prefix(definition, chain, timeline)
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
                    changes = registry.table_format(self.ref).changes(state.instant, inst.id)
                    item.added_for_staleness = changes.touched & snapshot.locations
                except Exception as exc:
                    item.obj = None
                    item.error = f"changes since index instant unknown: {exc}"
                    notes.append(f"index {definition.name!r}: {item.error}; not used")
                    warnings.warn(notes[-1], LakesieveWarning, stacklevel=3)
        return out, notes

    def plan(self, where: Any = None, as_of: str | None = None) -> Plan:
        """Decide which read units a query needs. Does not start Spark.

        ``where`` is a predicate string or an unbound predicate tree.
        """
        started = time.perf_counter()
        line = self.timeline()  # listed once per plan: instant lookup and index checks share it
        inst = self.resolve_instant(as_of, line)
        snapshot = self._snapshot(inst)
        if where is None or (isinstance(where, str) and not where.strip()):
            return Plan(inst, snapshot, snapshot.units, None, plan_ms=_ms(started))
        schema = self._schema_at(inst)
        bound = bind(where, schema, self.path)
        if inst is None:
            return Plan(inst, snapshot, (), bound, plan_ms=_ms(started), schema=schema)
        loaded, notes = self._loaded_indexes(inst, set(bound.columns), snapshot, line)
        by_column: dict[str, list[LoadedIndex]] = {}
        for item in loaded:
            by_column.setdefault(item.definition.column, []).append(item)
        answer = evaluate(bound.node, by_column)
        units = snapshot.units if answer is None else snapshot.units_for(answer)
        return Plan(
            inst, snapshot, units, bound, loaded, notes, plan_ms=_ms(started), schema=schema
        )

    def explain(self, where: str | None = None, as_of: str | None = None) -> dict[str, Any]:
        """What a query would read and which index contributed what. Does not start Spark."""
        plan = self.plan(where, as_of)
        indexes = []
        for item in plan.indexes:
            d = item.definition
            entry: dict[str, Any] = {
                "name": d.name,
                "type": d.type,
                "column": d.column,
                "instant": item.state.instant if item.state else None,
                "size_bytes": item.state.size_bytes if item.state else 0,
                "status": "used"
                if item.usable and item.answered
                else ("unusable" if item.error else "not applicable"),
            }
            if item.error:
                entry["reason"] = item.error
            if item.usable and item.answered:
                entry["locations_selected"] = len(item.selected)
            if (
                item.state is not None
                and plan.table_instant is not None
                and item.state.instant != plan.table_instant.id
            ):
                entry["stale"] = True
                entry["locations_added_for_staleness"] = len(item.added_for_staleness)
            indexes.append(entry)
        total_bytes = sum(u.size_bytes for u in plan.snapshot.units)
        sel_bytes = sum(u.size_bytes for u in plan.units)
        return {
            "table": self.path,
            "format": self.format,
            "where": where,
            "predicate_sql": to_sql(plan.bound) if plan.bound else None,
            "as_of": as_of,
            "table_instant": plan.table_instant.id if plan.table_instant else None,
            "locations_total": plan.locations_total,
            "locations_selected": plan.locations_selected,
            "bytes_total": total_bytes,
            "bytes_selected": sel_bytes,
            "selected": sorted(u.location for u in plan.units),
            "indexes": indexes,
            "warnings": plan.warnings,
            "plan_ms": round(plan.plan_ms, 3),
        }

    # ------------------------------------------------------------ reading

    def read(
        self,
        spark: SparkSession | None = None,
        where: str | None = None,
        as_of: str | None = None,
        refresh: bool | None = None,
    ) -> DataFrame:
        """The rows matching ``where`` at ``as_of``, reading only the locations the indexes allow.

        With ``refresh`` (default: the table's ``auto_refresh``) the indexes
        first catch up with the latest instant; if that fails the read goes on
        with the stale indexes (still exact) and a warning.
        """
        if refresh if refresh is not None else self.auto_refresh:
            from lakesieve.session import get_spark

            spark = spark or get_spark()
            try:
                self.refresh(spark=spark)
            except Exception as exc:
                warnings.warn(
                    f"indexes of table {self.path} could not catch up ({exc}); using them as they are",
                    LakesieveWarning,
                    stacklevel=2,
                )
        plan = self.plan(where, as_of)
        return self.read_plan(plan, spark)

    def read_plan(self, plan: Plan, spark: SparkSession | None = None) -> DataFrame:
        """Read the units of a plan and apply its predicate."""
        from lakesieve.session import get_spark

        spark = spark or get_spark()
        frame = registry.table_format(self.ref).read(
            spark, plan.units, plan.table_instant.id if plan.table_instant else None, False
        )
        if plan.bound is not None:
            frame = frame.where(to_sql(plan.bound))
        return frame

    def read_arrow(
        self,
        where: str | None = None,
        as_of: str | None = None,
        columns: list[str] | None = None,
        refresh: bool | None = None,
        max_bytes: int | None = None,
        spark: SparkSession | None = None,
    ) -> pa.Table:
        """Like :meth:`read`, but read on the driver with Arrow and return a ``pyarrow.Table``.

        No Spark job runs (unless ``refresh`` has indexes catch up first): for
        selective queries the indexes narrow to a few locations, where a
        Spark job's start-up costs more than the read. The rows are gathered
        in the driver's memory; ``max_bytes`` refuses a query whose selected
        locations exceed that size. See :mod:`lakesieve.arrow_read`.
        """
        if refresh if refresh is not None else self.auto_refresh:
            from lakesieve.session import get_spark

            try:
                self.refresh(spark=spark or get_spark())
            except Exception as exc:
                warnings.warn(
                    f"indexes of table {self.path} could not catch up ({exc}); using them as they are",
                    LakesieveWarning,
                    stacklevel=2,
                )
        return self.read_plan_arrow(self.plan(where, as_of), columns=columns, max_bytes=max_bytes)

    def read_plan_arrow(
        self, plan: Plan, columns: list[str] | None = None, max_bytes: int | None = None
    ) -> pa.Table:
        """Read the units of a plan on the driver with Arrow and apply its predicate."""
        from lakesieve.arrow_read import read_plan_arrow

        return read_plan_arrow(self, plan, columns=columns, max_bytes=max_bytes)

    def full_read(
        self, spark: SparkSession | None = None, where: str | None = None, as_of: str | None = None
    ) -> DataFrame:
        """The same rows as :meth:`read` without any index (for checks and benchmarks)."""
        plan = self.plan(None, as_of)
        if where:
            schema = self.schema(as_of)
            plan.bound = bind(where, schema, self.path)
        return self.read_plan(plan, spark)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def write(
    path: str | os.PathLike[str],
    df: DataFrame,
    format: str | None = None,
    options: WriteOptions | None = None,
    spark: SparkSession | None = None,
    table_options: dict[str, str] | None = None,
) -> Instant:
    """Write ``df`` to the table at ``path`` as one commit (creating it if needed).

    The format is detected for an existing table; a new table needs ``format``.
    ``table_options`` are format-specific (storage options, catalog settings).
    """
    root = os.path.abspath(os.fspath(path))
    if format is None:
        if not os.path.exists(root):
            raise TableNotFoundError(f"no table at {root!r}; give a format to create one")
        format = registry.identify_format(root)
    table = registry.open_format(root, {**(table_options or {}), "format": format})
    from lakesieve.session import get_spark

    spark = spark or get_spark()
    return table.write(spark, df, options or WriteOptions())
