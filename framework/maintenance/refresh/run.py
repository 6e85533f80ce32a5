"""Keeping indexes in step with the table's timeline: refresh, compaction, vacuum.

**Refresh** brings an index from the instant of its newest state to the
table's latest completed instant by reading only what changed. The format
plugin names the locations touched in between (``TableFormat.changes``);
Spark reads the key column of those locations as they were at the index's
instant (count -1 per row) and as they are now (+1), and sums per
``(key, location)``. What does not cancel out is the **delta**: rows added
and removed per key and location, so a delete never takes away a location
that other rows of the key still need. Locations the format reports as
updated in place (records replaced by new versions of themselves) are not
read when the indexed column identifies records: their keys cannot change.
Locations whose rows carry the instant that wrote them (Hudi's
``_hoodie_commit_time``) are read as only the rows written since the index's
instant and the previous versions of exactly those records
(:mod:`lakesieve.maintenance.refresh.plan` derives why that is exact).

A small delta is stored as a **delta state** on top of the previous state;
lookups add its positive pairs to the base's answer
(:mod:`lakesieve.state.overlay`). When the chain grows past ``max_deltas`` states
or ``max_delta_rows`` summed rows, refresh **compacts**: the index type folds
the summed chain into a new base (``IndexType.apply_delta``), or, for a
type whose ``apply_delta`` answers ``None``, the index is rebuilt at the instant.

**Small changes without Spark.** When the locations a delta reads hold at
most ``RefreshPolicy.driver_max_mb``, the delta is read and summed on the
driver with Arrow (:mod:`lakesieve.maintenance.refresh.driver`), and a fold
the policy asks for runs there too where the index type folds on the driver
(:class:`~lakesieve.contract.protocols.FoldsOnDriver`): such a refresh starts
no Spark session. Larger changes, and a rebuild, run as Spark jobs.

**Rewritten files followed by name.** Delta Lake and Iceberg rewrite a
whole file to change a few rows; by location, the delta would hold every
row of the old file and of the new one. Refresh pairs each removed file
with the added file that holds most of its keys (on the driver, or by Spark
jobs over a sample of the keys: :mod:`lakesieve.maintenance.refresh.pairs_spark`),
and the delta holds only the keys that changed
(:mod:`lakesieve.maintenance.refresh.pairs` says why that is exact for any
pairing). A stored delta keeps the pairs in
a ``renames`` file, and lookups answer the base under the new names
(:mod:`lakesieve.state.overlay`); a fold moves the base's entries to the new
names first, for an index type that can
(:class:`~lakesieve.contract.protocols.RenamesLocations`), and rebuilds the
index where it must fold and the type cannot.

**A build instead of a large fold.** A ``MERGE`` that rewrote every file
and moved rows between files leaves no pairs: the delta holds every row
twice, once removed and once added. Folding that into the base by Spark cost
more than twice a build at SF1 (the ``groupBy`` and ``apply_delta`` over
twice the table's rows). A delta that must be folded by Spark and holds at
least ``RefreshPolicy.rebuild_share`` of the table's rows is therefore not
folded: the index is built afresh, which reads the table once.

**Crash safety and concurrency.** Every new state is written as files first
and becomes visible with one exclusive log commit naming its parent state.
A refresh killed at any point leaves the previous state (and at worst some
unreferenced files, which vacuum removes); a rerun starts from the newest
committed state. Two refreshes racing on one index compute from the same
parent; the commit of the second sees a newer head, drops its work and starts
again from that head (or stops when it is already current), so no delta is
lost or applied twice.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve.errors import CommitConflictError, LakesieveError, LakesieveWarning
from lakesieve.files.arrow_frame import frame_of
from lakesieve.files.ipc_files import ipc_size
from lakesieve.keys.key_order import KeyOrder
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.refresh.driver import delta_schema, driver_bytes, local_delta
from lakesieve.maintenance.refresh.fold import fold, fold_small, folds_on_driver, stored_rows
from lakesieve.maintenance.refresh.pairs_spark import spark_pairs
from lakesieve.maintenance.refresh.plan import (
    DeltaPlan,
    DeltaRows,
    plan_delta,
    seen_after,
    summed_frame,
)
from lakesieve.maintenance.refresh.policy import RefreshPolicy
from lakesieve.maintenance.vacuum import vacuum
from lakesieve.model import BuiltIndex, Instant
from lakesieve.spark.session import SessionOnDemand
from lakesieve.state.overlay import DELTA_FILE, RENAMES_FILE, renames_table, stored_delta
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store.index_log import IndexDefinition, IndexState, LogSnapshot, add_state_action
from lakesieve.store.seen_locations import hashes, seen_of, stamp

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class RefreshResult:
    """What a refresh or compaction did to one index.

    ``engine`` says where the work ran: ``"driver"`` (Arrow, no Spark job),
    ``"spark"``, or ``""`` when there was nothing to do.
    ``locations_renamed`` counts files rewritten copy-on-write whose entries
    moved to the files that replaced them
    (:mod:`~lakesieve.maintenance.refresh.pairs`); ``locations_read`` counts
    both files of each such pair. For compaction, ``locations_read`` counts
    the locations whose entries were built again from their rows.
    """

    index: str
    action: str
    from_instant: str | None = None
    to_instant: str | None = None
    delta_rows: int = 0
    locations_read: int = 0
    locations_skipped_in_place: int = 0
    locations_stamped: int = 0
    locations_from_change_data: int = 0
    locations_from_logs: int = 0
    locations_renamed: int = 0
    chain_length: int = 0
    seconds: float = 0.0
    retries: int = 0
    note: str = ""
    engine: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


class HeadMoved(Exception):
    """Another writer committed a new state for the index meanwhile."""


def on_demand(spark: SparkSession | SessionOnDemand | None) -> SessionOnDemand:
    return spark if isinstance(spark, SessionOnDemand) else SessionOnDemand(spark)


# --------------------------------------------------------------------------- deltas


def delta_frame(
    table: TableIndexes,
    spark: SparkSession,
    column: str,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
) -> DeltaRows | None:
    """The summed ``(key, location, count)`` rows between two instants; ``None`` when nothing to read.

    Files rewritten copy-on-write are first paired with the files that
    replaced them by Spark jobs
    (:mod:`~lakesieve.maintenance.refresh.pairs_spark`; a pairing that fails
    warns and reads the change by location). Frames it keeps cached are
    recorded in ``plan.held`` for the caller to release.
    """
    renames: dict[str, str] = {}
    try:
        renames = spark_pairs(table, spark, column, start, end, plan.old_units, plan.new_units)
    except Exception as exc:
        warnings.warn(
            f"table {table.path}: rewritten files cannot be paired with the files that "
            f"replaced them ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
            "reading the change by location",
            LakesieveWarning,
            stacklevel=3,
        )
    rows, held = summed_frame(table, spark, column, start, end, plan, renames)
    if held is not None:
        plan.held.append(held)
    return rows


def _over_share(chain: list[IndexState], new_bytes: int, policy: RefreshPolicy) -> bool:
    """Whether the chain's deltas plus ``new_bytes`` would pass ``max_delta_share`` of its base."""
    stored = sum(s.size_bytes for s in chain[1:])
    return stored + new_bytes > policy.max_delta_share * chain[0].size_bytes


# --------------------------------------------------------------------------- new states


def commit_state(
    table: TableIndexes,
    name: str,
    head: IndexState | None,
    built: BuiltIndex,
    target: Instant,
    kind: str,
    base: str | None,
    seen: frozenset[int] | None = None,
    parent_seen: frozenset[int] | None = None,
) -> None:
    """Write the files and commit the state, if ``head`` is still the index's newest state.

    ``seen`` is what the new state has seen (:mod:`lakesieve.store.seen_locations`;
    ``parent_seen`` what ``head`` had, for a delta); ``None`` records nothing.
    """
    stamp(built.meta, kind, seen, parent_seen)
    state_id, records = table.store.write_files(name, built)

    def actions(snap: LogSnapshot) -> list[dict[str, Any]]:
        current = snap.indexes.get(name)
        now = current.latest() if current else None
        if current is None or (head is not None and (now is None or now.state_id != head.state_id)):
            raise HeadMoved()
        return [
            add_state_action(
                name,
                state_id,
                target.id,
                target.sort_key,
                records,
                built.meta,
                kind=kind,
                parent=head.state_id if kind == "delta" and head is not None else None,
                base=base if kind == "delta" else None,
            )
        ]

    try:
        table.store.commit_with_retry(actions)
    except (HeadMoved, CommitConflictError):
        _discard(table, name, state_id)
        raise HeadMoved() from None


def _discard(table: TableIndexes, name: str, state_id: str) -> None:
    table.store.remove_state_folder(name, state_id)


# --------------------------------------------------------------------------- refresh


def refresh_index(
    table: TableIndexes,
    name: str,
    spark: SparkSession | SessionOnDemand | None,
    policy: RefreshPolicy,
    target: Instant,
    line: list[Instant],
    attempts: int = 8,
) -> RefreshResult:
    """Bring one index to ``target``; see the module docstring.

    ``spark`` may be ``None`` or a :class:`SessionOnDemand`: an index already
    at ``target``, or whose change is small enough for the driver, needs no
    session, and one is started only when a step needs Spark.
    """
    started = time.perf_counter()
    sessions = on_demand(spark)
    asked = sessions.asked
    on_timeline = {i.id for i in line}
    for attempt in range(attempts):
        definition = table.index(name)
        head = definition.latest()
        result = RefreshResult(
            name, "up to date", head.instant if head else None, target.id, retries=attempt
        )
        if head is None:
            result.action, result.note = "skipped", "never built; build it first"
            return result
        if head.instant_sort_key >= target.sort_key:
            result.chain_length = len(definition.chain(head)) - 1
            return result
        plan: DeltaPlan | None = None
        try:
            if head.instant not in on_timeline:
                raise LakesieveError(f"index instant {head.instant} is not on the table's timeline")
            chain = definition.chain(head)
            start = next(i for i in line if i.id == head.instant)
            plan = plan_delta(table, definition.column, start, target)
            parent_seen = seen_of(chain)
            seen = seen_after(table.view.snapshot_at(target), parent_seen, plan)
            small = _small(table, plan, target, policy)
            delta = _driver_delta(table, definition, start, target, plan) if small else None
            if delta is None:
                if small:  # the driver's read moved change data locations: plan again
                    plan = plan_delta(table, definition.column, start, target)
                delta = delta_frame(table, sessions.get(), definition.column, start, target, plan)
            result.locations_read = plan.locations_read
            result.locations_skipped_in_place = plan.skipped_in_place
            result.locations_stamped = plan.locations_stamped
            result.locations_from_change_data = plan.locations_imaged
            result.locations_from_logs = plan.locations_from_logs
        except HeadMoved:
            raise
        except Exception as exc:
            for held in plan.held if plan is not None else ():
                held.unpersist()
            warnings.warn(
                f"index {name!r} on table {table.path}: changes since {head.instant} cannot be read "
                f"incrementally ({exc}); rebuilding at {target.id}",
                LakesieveWarning,
                stacklevel=3,
            )
            try:
                commit_state(
                    table,
                    name,
                    head,
                    build_state(table, definition, target, sessions.get()),
                    target,
                    "base",
                    None,
                    hashes(table.view.snapshot_at(target).locations),
                )
            except HeadMoved:
                continue
            result.action, result.note = (
                "rebuilt",
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            )
            result.engine = "spark"
            result.seconds = time.perf_counter() - started
            return result
        renames = delta.renames if delta is not None else {}
        collected = delta.table if delta is not None else None
        cached = delta.frame.persist() if delta is not None and delta.frame is not None else None
        try:
            if collected is not None:
                rows = collected.num_rows
            else:
                rows = cached.count() if cached is not None else 0
            result.delta_rows = rows
            deltas = len(chain) - 1
            # past max_deltas or max_delta_rows the chain is folded, by a rebuild if need
            # be; past max_delta_share only where the index type folds in place
            must = (
                deltas + 1 > policy.max_deltas or stored_rows(chain) + rows > policy.max_delta_rows
            )
            got = collected
            if not must and got is None and cached is not None and rows:
                got = cached.toArrow()  # within max_delta_rows: small enough for the driver
            may = (
                not must
                and got is not None
                and rows > 0
                and _over_share(chain, ipc_size(stored_delta(got)), policy)
            )
            built: BuiltIndex | None = None
            if must or may:
                built, how = None, "delta"
                whole = collected if collected is not None else got
                if cached is None or whole is not None:  # the whole new delta is on the driver
                    built, how = fold_small(
                        table,
                        definition,
                        chain,
                        whole,
                        policy.driver_max_mb,
                        renames,
                        "folding them with Spark" if must else "keeping the new delta stored",
                    )
                if built is None and (must or not folds_on_driver(definition)):
                    rows_now = table.view.snapshot_at(target).rows_upper_bound
                    large = policy.large_delta(rows, rows_now)
                    if large:  # a fold by Spark would cost more than a build
                        built, how = (
                            build_state(table, definition, target, sessions.get()),
                            "rebuilt",
                        )
                        result.note = large
                    else:
                        extra = cached if collected is None else frame_of(sessions.get(), collected)
                        built, how = fold(
                            table,
                            sessions.get(),
                            definition,
                            chain,
                            extra,
                            target,
                            rebuild=must,
                            renames=renames,
                        )
            if built is not None:
                try:
                    commit_state(table, name, head, built, target, "base", None, seen)
                except HeadMoved:
                    continue
                result.action, result.chain_length = how, 0
                result.locations_renamed = len(renames) if how == "compacted" else 0
                if policy.vacuum_after_compaction:
                    vacuum(table, policy.vacuum_grace_seconds)
            else:
                files: dict[str, pa.Table] = {}
                if got is not None and rows:
                    files[DELTA_FILE] = stored_delta(got)
                if renames:
                    files[RENAMES_FILE] = renames_table(renames)
                meta = {"delta_rows": rows, "from_instant": head.instant}
                built = BuiltIndex(files=files, meta=meta)
                try:
                    commit_state(
                        table,
                        name,
                        head,
                        built,
                        target,
                        "delta",
                        chain[0].state_id,
                        seen,
                        parent_seen,
                    )
                except HeadMoved:
                    continue
                result.action, result.chain_length = "delta", deltas + 1
                result.locations_renamed = len(renames)
        finally:
            if cached is not None:
                cached.unpersist()
            for held in plan.held:
                held.unpersist()
        result.engine = "spark" if sessions.asked > asked else "driver"
        result.seconds = time.perf_counter() - started
        return result
    raise CommitConflictError(
        f"index {name!r} on table {table.path}: {attempts} refreshes in a row lost a race to other writers"
    )


def _small(table: TableIndexes, plan: DeltaPlan, end: Instant, policy: RefreshPolicy) -> bool:
    """Whether the policy reads ``plan`` on the driver (:func:`~lakesieve.maintenance.refresh.driver.driver_bytes`)."""
    if policy.driver_max_mb <= 0:
        return False
    try:
        width = len(table.view.fmt.schema(end.id).names)
    except Exception:  # the Spark path needs no width
        return False
    return driver_bytes(plan, width) <= policy.driver_max_mb * 2**20


def _driver_delta(
    table: TableIndexes,
    definition: IndexDefinition,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
) -> DeltaRows | None:
    """The delta read on the driver (``plan`` is small enough); ``None``: read it with Spark.

    Rewritten files are followed to the files that replaced them (the
    result's ``renames``; see
    :mod:`~lakesieve.maintenance.refresh.pairs`). A read that fails here (a
    type the driver cannot cast, a file a plugin reads only in Spark) is
    left to the Spark path, with a warning.
    """
    try:
        key_type = KeyOrder.of(definition.key_type, definition.type).arrow_type()
        rows, renames = local_delta(table, definition.column, key_type, start, end, plan)
    except Exception as exc:
        warnings.warn(
            f"index {definition.name!r} on table {table.path}: changes since {start.id} cannot be "
            f"read on the driver ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
            "reading them with Spark",
            LakesieveWarning,
            stacklevel=3,
        )
        return None
    return DeltaRows(
        table=rows if rows is not None else delta_schema(key_type).empty_table(), renames=renames
    )
