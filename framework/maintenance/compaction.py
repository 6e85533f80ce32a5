"""Compaction: an index's delta chain folded into a new base at the same instant.

``lakesieve index compact`` and ``Table.compact``. The index type folds the
chain (:mod:`lakesieve.maintenance.refresh.fold`), on the driver where it can
and the deltas are small, else by Spark, or the index is rebuilt where the
type cannot fold. For an index type whose folds leave entries correct but
not as a build writes them
(:class:`~lakesieve.contract.protocols.RebuildsLocations`: Bloom), those
entries are built again from their locations' rows, so the compacted index
is the one a build at that instant writes. Commits go through the same
exclusive log commit as refresh: a compaction that loses a race starts
again from the new head.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lakesieve.contract import registry
from lakesieve.contract.protocols import RebuildsLocations
from lakesieve.errors import CommitConflictError
from lakesieve.maintenance.refresh.fold import (
    fold,
    fold_small,
    rebuild_inexact,
    rebuilds_locations,
    stored_rows,
)
from lakesieve.maintenance.refresh.run import (
    HeadMoved,
    RefreshPolicy,
    RefreshResult,
    commit_state,
    on_demand,
)
from lakesieve.maintenance.vacuum import vacuum
from lakesieve.model import BuiltIndex, Instant
from lakesieve.spark.session import SessionOnDemand
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store.index_log import IndexDefinition
from lakesieve.store.seen_locations import seen_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["compact_index", "compaction_work"]


def compaction_work(table: TableIndexes, definition: IndexDefinition) -> bool:
    """Whether :func:`compact_index` has work on ``definition``: deltas to fold or inexact entries."""
    head = definition.latest()
    if head is None:
        return False
    if head.is_delta:
        return True
    itype = registry.index_type(definition.type)
    if not isinstance(itype, RebuildsLocations):
        return False
    try:
        return bool(itype.inexact_locations(table.load(definition, head)))
    except Exception:  # an unreadable base: compact_index says what is wrong
        return True


def compact_index(
    table: TableIndexes,
    name: str,
    spark: SparkSession | SessionOnDemand | None,
    policy: RefreshPolicy,
    attempts: int = 8,
) -> RefreshResult:
    """Fold the newest state's delta chain into a new base at the same instant.

    For an index type that builds inexact entries again
    (:class:`~lakesieve.contract.protocols.RebuildsLocations`), the entries
    folds left correct but not as a build writes them are built again from
    their locations' rows at that instant, also when the newest state is a
    base: the compacted index is the one a build there writes.

    ``spark`` may be ``None`` or a :class:`SessionOnDemand`: an index whose
    newest state is a base needs no session, nor one whose deltas the index
    type folds on the driver (within the policy's ``driver_max_mb``).
    """
    started = time.perf_counter()
    sessions = on_demand(spark)
    asked = sessions.asked
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
        if head is None or not (head.is_delta or rebuilds_locations(definition)):
            return result
        chain = definition.chain(head)
        target = Instant(head.instant_sort_key, head.instant)
        built: BuiltIndex | None = None
        how = "compacted"
        if head.is_delta:
            stored = sum(s.size_bytes for s in chain[1:])
            if stored <= policy.driver_max_mb * 2**20:
                built, how = fold_small(table, definition, chain, None, policy.driver_max_mb)
            if built is None:
                built, how = fold(table, sessions.get(), definition, chain, None, target)
            assert built is not None  # a rebuild where the type cannot fold in place
        again: BuiltIndex | None = None
        if how != "rebuilt" and rebuilds_locations(definition):
            # entries folds left correct but not as a build writes them, built again
            index = (
                table.load(definition, head)
                if built is None
                else registry.index_type(definition.type).load(built)
            )
            again, result.locations_read = rebuild_inexact(
                table, definition, index, target, policy.driver_max_mb, sessions.get
            )
        built = again or built
        if built is None:  # a base whose entries are all as a build writes them
            return result
        try:
            commit_state(table, name, head, built, target, "base", None, seen_of(chain))
        except HeadMoved:
            continue
        result.action, result.delta_rows = how, stored_rows(chain)
        if policy.vacuum_after_compaction:
            vacuum(table, policy.vacuum_grace_seconds)
        result.engine = "spark" if sessions.asked > asked else "driver"
        result.seconds = time.perf_counter() - started
        return result
    raise CommitConflictError(f"index {name!r} on table {table.path}: compaction kept losing races")
