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
(:mod:`lakesieve.maintenance.refresh_plan` derives why that is exact).

A small delta is stored as a **delta state** on top of the previous state;
lookups add its positive pairs to the base's answer
(:mod:`lakesieve.query.overlay`). When the chain grows past ``max_deltas`` states
or ``max_delta_rows`` summed rows, refresh **compacts**: the index type folds
the summed chain into a new base (``IndexType.apply_delta``), or, for a
type whose ``apply_delta`` answers ``None``, the index is rebuilt at the instant.

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

import math
import time
import warnings
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.errors import CommitConflictError, LakesieveError
from lakesieve.files.arrow_frame import frame_of
from lakesieve.files.ipc_files import ipc_size
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.refresh_plan import DeltaPlan, DeltaRows, plan_delta, summed_frame
from lakesieve.maintenance.vacuum import vacuum
from lakesieve.model import BuiltIndex, Instant
from lakesieve.query.overlay import DELTA_COLUMNS, DELTA_FILE
from lakesieve.query.planner import LakesieveWarning
from lakesieve.spark.session import get_spark
from lakesieve.store.index_log import IndexDefinition, IndexState, LogSnapshot, add_state_action
from lakesieve.store.index_state import TableIndexes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class RefreshPolicy:
    """When refresh folds deltas into a new base.

    Attributes:
        max_deltas: compact once the chain would hold more delta states.
        max_delta_rows: compact once the chain's stored delta rows would exceed this.
        max_delta_share: compact once the chain's delta bytes would exceed this
            share of its base's bytes (a delta holds one entry per changed
            ``(key, location)``, which for a compact index such as Sieve or a
            zone map is soon larger than the whole base); ``inf`` never
            compacts on bytes.
        vacuum_after_compaction: run vacuum after each compaction.
        vacuum_grace_seconds: files no state names are kept this long.
    """

    max_deltas: int = 8
    max_delta_rows: int = 1_000_000
    max_delta_share: float = 0.2
    vacuum_after_compaction: bool = False
    vacuum_grace_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if self.max_deltas < 0:
            raise LakesieveError(f"refresh option max_deltas must be >= 0, got {self.max_deltas}")
        if self.max_delta_rows < 0:
            raise LakesieveError(
                f"refresh option max_delta_rows must be >= 0, got {self.max_delta_rows}"
            )
        if math.isnan(self.max_delta_share) or self.max_delta_share < 0:
            raise LakesieveError(
                f"refresh option max_delta_share must be a number >= 0 (inf: never), got {self.max_delta_share}"
            )
        if not math.isfinite(self.vacuum_grace_seconds) or self.vacuum_grace_seconds < 0:
            raise LakesieveError(
                f"refresh option vacuum_grace_seconds must be a finite number >= 0, got {self.vacuum_grace_seconds}"
            )


@dataclass
class RefreshResult:
    """What a refresh or compaction did to one index."""

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
    chain_length: int = 0
    seconds: float = 0.0
    retries: int = 0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


class _HeadMoved(Exception):
    """Another writer committed a new state for the index meanwhile."""


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

    Frames it keeps cached are recorded in ``plan.held`` for the caller to release.
    """
    rows, held = summed_frame(table, spark, column, start, end, plan)
    if held is not None:
        plan.held.append(held)
    return rows


def _stored_deltas(table: TableIndexes, chain: list[IndexState]) -> list[pa.Table]:
    out = []
    for state in chain[1:]:
        files = table.store.read_files(state)
        if DELTA_FILE in files:
            out.append(files[DELTA_FILE].select(list(DELTA_COLUMNS)))
    return out


def _stored_rows(chain: list[IndexState]) -> int:
    return sum(f.rows for s in chain[1:] for f in s.files)


def _over_share(chain: list[IndexState], new_bytes: int, policy: RefreshPolicy) -> bool:
    """Whether the chain's deltas plus ``new_bytes`` would pass ``max_delta_share`` of its base."""
    stored = sum(s.size_bytes for s in chain[1:])
    return stored + new_bytes > policy.max_delta_share * chain[0].size_bytes


# --------------------------------------------------------------------------- new states


def _fold(
    table: TableIndexes,
    spark: SparkSession,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: DataFrame | None,
    target: Instant,
    rebuild: bool = True,
) -> tuple[BuiltIndex | None, str]:
    """A new base at ``target``: the chain's base with every delta folded in (or a rebuild).

    Without ``rebuild``, an index type that cannot fold in place
    (``apply_delta`` answers ``None``) gets ``None`` instead of a rebuild.
    """
    from pyspark.sql import functions as F

    base_obj = table.load(definition, chain[0])
    parts: list[DataFrame] = []
    stored = _stored_deltas(table, chain)
    if stored:
        parts.append(frame_of(spark, pa.concat_tables(stored, promote_options="default")))
    if extra is not None:
        parts.append(extra)
    if parts:
        union = parts[0]
        for p in parts[1:]:
            union = union.unionByName(p)
        delta = union.groupBy("key", "location").agg(F.sum("count").cast("long").alias("count"))
        delta = delta.where(F.col("count") != 0)
    else:
        delta = spark.createDataFrame([], "key string, location string, count long")
    built = registry.index_type(definition.type).apply_delta(
        spark, base_obj, delta, definition.params
    )
    if built is None:
        if not rebuild:
            return None, "delta"
        return build_state(table, definition, target, spark), "rebuilt"
    if not isinstance(built, BuiltIndex):
        raise LakesieveError(
            f"index type {definition.type!r} returned {type(built).__name__} from apply_delta"
        )
    return built, "compacted"


def _commit_state(
    table: TableIndexes,
    name: str,
    head: IndexState | None,
    built: BuiltIndex,
    target: Instant,
    kind: str,
    base: str | None,
) -> None:
    """Write the files and commit the state, if ``head`` is still the index's newest state."""
    state_id, records = table.store.write_files(name, built)

    def actions(snap: LogSnapshot) -> list[dict[str, Any]]:
        current = snap.indexes.get(name)
        now = current.latest() if current else None
        if current is None or (head is not None and (now is None or now.state_id != head.state_id)):
            raise _HeadMoved()
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
    except (_HeadMoved, CommitConflictError):
        _discard(table, name, state_id)
        raise _HeadMoved() from None


def _discard(table: TableIndexes, name: str, state_id: str) -> None:
    table.store.remove_state_folder(name, state_id)


# --------------------------------------------------------------------------- refresh


def refresh_index(
    table: TableIndexes,
    name: str,
    spark: SparkSession | None,
    policy: RefreshPolicy,
    target: Instant,
    line: list[Instant],
    attempts: int = 8,
) -> RefreshResult:
    """Bring one index to ``target``; see the module docstring.

    ``spark`` may be ``None``: an index already at ``target`` needs no
    session, and one is started only when there is something to read.
    """
    started = time.perf_counter()
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
        spark = spark or get_spark()
        plan: DeltaPlan | None = None
        try:
            if head.instant not in on_timeline:
                raise LakesieveError(f"index instant {head.instant} is not on the table's timeline")
            chain = definition.chain(head)
            start = next(i for i in line if i.id == head.instant)
            plan = plan_delta(table, definition.column, start, target)
            delta = delta_frame(table, spark, definition.column, start, target, plan)
            result.locations_read = plan.locations_read
            result.locations_skipped_in_place = plan.skipped_in_place
            result.locations_stamped = plan.locations_stamped
            result.locations_from_change_data = plan.locations_imaged
            result.locations_from_logs = plan.locations_from_logs
        except _HeadMoved:
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
                _commit_state(
                    table,
                    name,
                    head,
                    build_state(table, definition, target, spark),
                    target,
                    "base",
                    None,
                )
            except _HeadMoved:
                continue
            result.action, result.note = (
                "rebuilt",
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            )
            result.seconds = time.perf_counter() - started
            return result
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
                deltas + 1 > policy.max_deltas or _stored_rows(chain) + rows > policy.max_delta_rows
            )
            got = collected
            if not must and got is None and cached is not None and rows:
                got = cached.toArrow()  # within max_delta_rows: small enough for the driver
            may = (
                not must
                and got is not None
                and rows > 0
                and _over_share(chain, ipc_size(got.select(list(DELTA_COLUMNS))), policy)
            )
            built: BuiltIndex | None = None
            if must or may:
                extra = cached if collected is None else frame_of(spark, collected)
                built, how = _fold(table, spark, definition, chain, extra, target, rebuild=must)
            if built is not None:
                try:
                    _commit_state(table, name, head, built, target, "base", None)
                except _HeadMoved:
                    continue
                result.action, result.chain_length = how, 0
                if policy.vacuum_after_compaction:
                    vacuum(table, policy.vacuum_grace_seconds)
            else:
                files: dict[str, pa.Table] = {}
                if got is not None and rows:
                    files[DELTA_FILE] = got.select(list(DELTA_COLUMNS))
                meta = {"delta_rows": rows, "from_instant": head.instant}
                built = BuiltIndex(files=files, meta=meta)
                try:
                    _commit_state(table, name, head, built, target, "delta", chain[0].state_id)
                except _HeadMoved:
                    continue
                result.action, result.chain_length = "delta", deltas + 1
        finally:
            if cached is not None:
                cached.unpersist()
            for held in plan.held:
                held.unpersist()
        result.seconds = time.perf_counter() - started
        return result
    raise CommitConflictError(
        f"index {name!r} on table {table.path}: {attempts} refreshes in a row lost a race to other writers"
    )


def compact_index(
    table: TableIndexes,
    name: str,
    spark: SparkSession | None,
    policy: RefreshPolicy,
    attempts: int = 8,
) -> RefreshResult:
    """Fold the newest state's delta chain into a new base at the same instant.

    ``spark`` may be ``None``: an index whose newest state is a base needs no
    session (one is started if a delta appears meanwhile).
    """
    started = time.perf_counter()
    for attempt in range(attempts):
        definition = table.index(name)
        head = definition.latest()
        result = RefreshResult(
            name,
            "nothing to compact",
            head.instant if head else None,
            head.instant if head else None,
            retries=attempt,
        )
        if head is None or not head.is_delta:
            return result
        chain = definition.chain(head)
        target = Instant(head.instant_sort_key, head.instant)
        spark = spark or get_spark()
        built, how = _fold(table, spark, definition, chain, None, target)
        assert built is not None  # a rebuild where the type cannot fold in place
        try:
            _commit_state(table, name, head, built, target, "base", None)
        except _HeadMoved:
            continue
        result.action, result.delta_rows = how, _stored_rows(chain)
        if policy.vacuum_after_compaction:
            vacuum(table, policy.vacuum_grace_seconds)
        result.seconds = time.perf_counter() - started
        return result
    raise CommitConflictError(f"index {name!r} on table {table.path}: compaction kept losing races")
