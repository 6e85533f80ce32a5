"""The table handle: ``lakesieve.open(path)`` and everything done with one table.

A :class:`Table` is a facade over the parts that do the work: its
:class:`~lakesieve.query.table_view.TableView` (timeline, schema and read units per
instant), its :class:`~lakesieve.state.table_indexes.TableIndexes` (the index log,
loaded states, overlays and fallbacks), :mod:`lakesieve.maintenance.index_build`,
:mod:`lakesieve.maintenance.refresh` and :mod:`lakesieve.query.query_plan`. It builds, lists,
describes and drops indexes, keeps them in step with the table, plans which
locations a predicate needs, explains that plan without starting Spark, and
reads the pruned rows.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.contract.protocols import TableFormat
from lakesieve.errors import LakesieveWarning, TableNotFoundError
from lakesieve.expressions import bind, to_sql
from lakesieve.expressions.time_zone import session_time_zone
from lakesieve.files import paths
from lakesieve.maintenance.compaction import compact_index, compaction_work
from lakesieve.maintenance.index_build import build_declared, declare_index, same_definition
from lakesieve.maintenance.index_health import broken_head, drop_broken_states
from lakesieve.maintenance.refresh import (
    RefreshPolicy,
    RefreshResult,
    refresh_index,
)
from lakesieve.maintenance.repair import refresh_broken
from lakesieve.maintenance.vacuum import VacuumResult, vacuum
from lakesieve.model import Instant, Snapshot, TableRef, WriteOptions
from lakesieve.query.arrow_read import read_plan_arrow
from lakesieve.query.parquet_read import parquet_frame
from lakesieve.query.planner import evaluate
from lakesieve.query.query_plan import Plan, elapsed_ms, explain_plan
from lakesieve.query.table_view import TableView
from lakesieve.spark.object_storage import prepare, storage_of
from lakesieve.spark.session import SessionOnDemand, get_spark, time_zone_of
from lakesieve.state.in_use import IndexInUse
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store import DEFAULT_DIRNAME
from lakesieve.store.index_log import IndexDefinition, LogSnapshot
from lakesieve.store.table_store import open_table_store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Plan", "Table", "open", "write"]


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
        index_root: where the index lives (default ``<path>/.lakesieve``): a local
            folder or an object-store URL (``s3://...``), for a table anywhere.
        options: format-specific options (for a table on object storage, its
            storage options: ``AWS_ENDPOINT_URL``, ``AWS_REGION``...; the standard
            ``AWS_*`` variables are read too).
        auto_refresh: let :meth:`Table.read` bring the indexes up to the
            latest instant before planning.
        refresh_policy: when refresh compacts deltas (defaults otherwise).

    Raises:
        TableNotFoundError: nothing at ``path``, or no plugin recognises it.
        AmbiguousFormatError: two plugins claim the table.
    """
    root = table_root(path)
    remote = paths.local_path(root) is None
    if not remote and not os.path.exists(root):
        raise TableNotFoundError(f"no table at {root!r}: the path does not exist")
    if format is None:
        fmt = registry.open_format(root, options)
    else:
        fmt = registry.open_format(root, {**(options or {}), "format": format})
        fmt.timeline()  # a forced format must be able to read the table
    return Table(
        TableRef(root, fmt.name, dict(options or {})), index_root, auto_refresh, refresh_policy, fmt
    )


def table_root(path: str | os.PathLike[str]) -> str:
    """The table root ``path`` names: an absolute local path, or an object-store URI kept as given.

    ``file:`` URIs become local paths; ``s3://``, ``gs://``, ``abfss://`` and
    other URIs are kept (minus a trailing ``/``), never read as a relative path.
    """
    text = os.fspath(path)
    local = paths.local_path(text)
    if local is not None:
        return os.path.abspath(local)
    return text.rstrip("/")


class Table:
    """One table and its indexes.

    Attributes:
        ref: the table (root, format, format options).
        auto_refresh: whether :meth:`read` first brings the indexes up to date.
        refresh_policy: when refresh compacts deltas.
        store: the index store.
        view: the format plugin's answers about the table, cached per instant.
        states: the table's indexes: log, loaded states, overlays, fallbacks.
    """

    def __init__(
        self,
        ref: TableRef,
        index_root: str | os.PathLike[str] | None = None,
        auto_refresh: bool = False,
        refresh_policy: RefreshPolicy | None = None,
        fmt: TableFormat | None = None,
    ) -> None:
        self.ref = ref
        self.auto_refresh = auto_refresh
        self.refresh_policy = refresh_policy or RefreshPolicy()
        self.view = TableView(ref, fmt)
        if index_root is None:
            index_root = self.view.fmt.index_root()
        self.store = open_table_store(
            index_root or paths.join(ref.path, DEFAULT_DIRNAME),
            self.view.table_id,
            storage_of(ref.options),
        )
        self.states = TableIndexes(self.view, self.store)

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
        return self.view.timeline()

    def resolve_instant(
        self, as_of: str | None, line: list[Instant] | None = None
    ) -> Instant | None:
        """The instant ``as_of`` names (latest when ``None``).

        Raises:
            InstantNotFoundError: ``as_of`` is not a completed instant of the table.
        """
        return self.view.resolve_instant(as_of, line)

    def schema(self, as_of: str | None = None) -> pa.Schema:
        """The table's Arrow schema at an instant."""
        return self.view.schema(as_of)

    def snapshot(self, as_of: str | None = None) -> Snapshot:
        """The read units visible at an instant."""
        return self.view.snapshot(as_of)

    # ------------------------------------------------------------ indexes

    def indexes(self) -> list[IndexDefinition]:
        """Every index declared on the table."""
        return self.states.indexes()

    def index(self, name: str) -> IndexDefinition:
        """One index by name.

        Raises:
            IndexNotFoundError: no index of that name.
        """
        return self.states.index(name)

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
        force: bool = True,
    ) -> dict[str, Any]:
        """Build (or rebuild) an index on ``column`` at an instant (latest by default).

        Every argument is checked before Spark starts: the column must exist,
        the index type must be installed and accept the column's type and the
        options. Returns the new state's description. Building over a broken
        index repairs it: its states that fail to verify are removed after
        the new state is committed, and listed under ``repaired``.

        With ``force`` False (the CLI's default), an index of the same
        definition whose newest state is at the instant and verifies is left
        as it is: no Spark starts, and the description says ``"action":
        "up-to-date"``.
        """
        definition, existing, inst = declare_index(self.states, column, type, name, options, as_of)
        head = existing.latest() if existing is not None else None
        if (
            not force
            and existing is not None
            and head is not None
            and head.instant == inst.id
            and same_definition(existing, definition)
            and broken_head(self.store, existing) is None
        ):
            return {**self.describe_index(existing.name), "action": "up-to-date"}
        built = build_declared(self.states, definition, existing, inst, spark, spark_conf, progress)
        removed = drop_broken_states(self.states, built)  # a build over a broken index repairs it
        desc = {**self.describe_index(built), "action": "built"}
        if removed:
            desc["repaired"] = removed
        return desc

    def drop_index(self, name: str) -> None:
        """Drop an index and delete its files."""
        self.states.drop(name)

    def describe_index(self, name: str) -> dict[str, Any]:
        """Type, column, instants, size and the index type's own description."""
        return self.states.describe(name)

    # ------------------------------------------------------------ maintenance

    def refresh(
        self,
        name: str | None = None,
        spark: SparkSession | None = None,
        policy: RefreshPolicy | None = None,
        spark_conf: dict[str, str] | None = None,
    ) -> list[RefreshResult]:
        """Bring every index (or the one named) to the latest completed instant.

        Reads only the locations changed since each index's instant and
        stores the difference as a delta, compacting when ``policy`` says so
        (see :mod:`lakesieve.maintenance.refresh`). An index whose newest state fails to
        verify (a file missing, truncated or failing its checksum) is rebuilt
        instead, and its result says so (action ``rebuilt``). Spark starts
        (with ``spark_conf``) only when a step needs it: never for "up to
        date", nor for a change small enough to be read on the driver
        (``RefreshPolicy.driver_max_mb``; ``RefreshResult.engine`` says which ran). With work to do, the store's
        writers' lock is taken first, so an unwritable index root fails in
        one line before Spark starts.

        Raises:
            StoreBusyError: a repair is running on the store.
            StoreWriteError: the index root cannot be written.
        """
        definitions = [self.index(name)] if name else self.indexes()  # one read of the log
        line = self.timeline()
        target = line[-1] if line else None
        if target is None or not definitions:
            return []
        heads = [d.latest() for d in definitions]
        broken = {d.name: p for d in definitions if (p := broken_head(self.store, d)) is not None}
        work = bool(broken) or any(
            h is not None and h.instant_sort_key < target.sort_key for h in heads
        )
        # with work to do, the writers' lock first: a repair stays out, and an
        # unwritable root fails here, before Spark starts
        with self.store.writing() if work else contextlib.nullcontext():
            sessions = SessionOnDemand(spark, spark_conf)
            policy = policy or self.refresh_policy
            return [
                refresh_broken(self.states, d, target, sessions.get(), broken[d.name])
                if d.name in broken
                else refresh_index(self.states, d.name, sessions, policy, target, line)
                for d in definitions
            ]

    def compact(
        self,
        name: str | None = None,
        spark: SparkSession | None = None,
        policy: RefreshPolicy | None = None,
        spark_conf: dict[str, str] | None = None,
    ) -> list[RefreshResult]:
        """Fold the deltas of every index (or the one named) into a new base.

        Spark starts (with ``spark_conf``) only when a fold needs it: never
        for "nothing to compact", nor for deltas the index type folds on the
        driver (within ``RefreshPolicy.driver_max_mb``).
        """
        definitions = [self.index(name)] if name else self.indexes()
        work = any(compaction_work(self.states, d) for d in definitions)
        with self.store.writing() if work else contextlib.nullcontext():
            sessions = SessionOnDemand(spark, spark_conf)
            policy = policy or self.refresh_policy
            return [compact_index(self.states, d.name, sessions, policy) for d in definitions]

    def vacuum(self, grace_seconds: float | None = None) -> VacuumResult:
        """Remove index states of instants the table no longer keeps, and unreferenced files."""
        grace = self.refresh_policy.vacuum_grace_seconds if grace_seconds is None else grace_seconds
        return vacuum(self.states, grace)

    # ------------------------------------------------------------ planning

    def plan(
        self,
        where: Any = None,
        as_of: str | None = None,
        time_zone: str | None = None,
        *,
        line: list[Instant] | None = None,
        log: LogSnapshot | None = None,
    ) -> Plan:
        """Decide which read units a query needs. Does not start Spark.

        ``where`` is a predicate string or an unbound predicate tree. Timestamp
        literals without a zone are read in ``time_zone`` (a Spark session
        time zone; default: the zone of lakesieve's own session, UTC unless
        ``LAKESIEVE_SPARK_CONF`` sets ``spark.sql.session.timeZone``).
        ``line`` (the timeline) and ``log`` (the index log, read with
        ``strict=False``) are what the caller already read for this query;
        what is not given is read here, once.
        """
        with session_time_zone(time_zone or time_zone_of()):
            return self._plan(where, as_of, line, log)

    def _plan(
        self, where: Any, as_of: str | None, line: list[Instant] | None, log: LogSnapshot | None
    ) -> Plan:
        started = time.perf_counter()
        if log is None and where is not None and not (isinstance(where, str) and not where.strip()):
            self.states.store.read_log_ahead()  # the index log's requests beside the table's
        if line is None:
            line = self.timeline()  # listed once per plan: instant lookup and index checks share it
        inst = self.view.resolve_instant(as_of, line)
        snapshot = self.view.snapshot_at(inst)
        if where is None or (isinstance(where, str) and not where.strip()):
            return Plan(inst, snapshot, snapshot.units, None, plan_ms=elapsed_ms(started))
        schema = self.view.schema_at(inst)
        bound = bind(where, schema, self.path)
        if inst is None:
            return Plan(inst, snapshot, (), bound, plan_ms=elapsed_ms(started), schema=schema)
        loaded, notes = self.states.usable_indexes(inst, set(bound.columns), snapshot, line, log)
        by_column: dict[str, list[IndexInUse]] = {}
        for item in loaded:
            by_column.setdefault(item.definition.column, []).append(item)
        answer = evaluate(bound.node, by_column)
        units = snapshot.units if answer is None else snapshot.units_for(answer)
        return Plan(
            inst, snapshot, units, bound, loaded, notes, plan_ms=elapsed_ms(started), schema=schema
        )

    def explain(self, where: str | None = None, as_of: str | None = None) -> dict[str, Any]:
        """What a query would read and which index contributed what. Does not start Spark."""
        return explain_plan(self.plan(where, as_of), self.path, self.format, where, as_of)

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
            spark = spark or get_spark()
            self._catch_up(spark)
        # literals are read as the session that runs the read reads them (without
        # one, the zone of the session get_spark would return: a bad predicate
        # still fails before Spark starts)
        plan = self.plan(where, as_of, time_zone_of(spark))
        return self.read_plan(plan, spark)

    def _catch_up(self, spark: SparkSession) -> None:
        """Refresh before a read; on failure go on with the indexes as they are (exact), warning."""
        try:
            self.refresh(spark=spark)
        except Exception as exc:
            warnings.warn(
                f"indexes of table {self.path} could not catch up ({exc}); using them as they are",
                LakesieveWarning,
                stacklevel=3,  # the caller of read or read_arrow
            )

    def read_plan(self, plan: Plan, spark: SparkSession | None = None) -> DataFrame:
        """Read the units of a plan and apply its predicate.

        Units that are all Parquet files Spark reads as they are make one Spark
        Parquet scan with nothing listed (:mod:`lakesieve.query.parquet_read`),
        which the predicate's pushable parts reach; any other plan is the
        format's own read.
        """
        spark = spark or get_spark()
        frame = parquet_frame(spark, self.view, plan)
        if frame is None:
            frame = self.view.fmt.read(
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
        locations exceed that size. See :mod:`lakesieve.query.arrow_read`.
        """
        if refresh if refresh is not None else self.auto_refresh:
            self._catch_up(spark or get_spark())
        plan = self.plan(where, as_of, time_zone_of(spark))
        return self.read_plan_arrow(plan, columns=columns, max_bytes=max_bytes)

    def read_plan_arrow(
        self, plan: Plan, columns: list[str] | None = None, max_bytes: int | None = None
    ) -> pa.Table:
        """Read the units of a plan on the driver with Arrow and apply its predicate."""
        return read_plan_arrow(self.view, plan, columns=columns, max_bytes=max_bytes)

    def full_read(
        self, spark: SparkSession | None = None, where: str | None = None, as_of: str | None = None
    ) -> DataFrame:
        """The same rows as :meth:`read` without any index (for checks and benchmarks)."""
        plan = self.plan(None, as_of)
        if where:
            schema = self.schema(as_of)
            with session_time_zone(time_zone_of(spark)):  # as Table.read: bound before Spark
                plan.bound = bind(where, schema, self.path)
        return self.read_plan(plan, spark)


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
    root = table_root(path)
    if format is None:
        local = paths.local_path(root)
        if local is not None and not os.path.exists(local):
            raise TableNotFoundError(f"no table at {root!r}; give a format to create one")
        format = registry.identify_format(root)
    table = registry.open_format(root, {**(table_options or {}), "format": format})
    spark = spark or get_spark()
    prepare(spark, root, table_options)  # a table on object storage: Spark reads it through S3A
    return table.write(spark, df, options or WriteOptions())
