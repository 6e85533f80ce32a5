"""Folding an index's delta chain into a new base: on the driver where the index type can, else by Spark.

Refresh (past its policy's limits) and compaction fold the chain's stored
deltas, and a refresh's new delta, into the base. An index type that
implements :class:`~lakesieve.contract.protocols.FoldsOnDriver` folds a
chain of at most :data:`DRIVER_FOLD_ROWS` rows in this process: the deltas
are summed with Spark's equality for keys
(:func:`~lakesieve.maintenance.refresh.driver.spark_sums`) and handed over
as one table. Otherwise ``IndexType.apply_delta`` folds them in Spark, or the
index is rebuilt at the instant where the type cannot fold.

A fold is exact for some index types and only correct for others (a Bloom
filter keeps the size and the removed keys of its first build). Compaction
then builds those entries again (:func:`rebuild_inexact`, for types that
implement :class:`~lakesieve.contract.protocols.RebuildsLocations`): it
reads the rows of the locations the type names, on the driver when they are
small, and folds them into the index without those locations, so the
compacted index is what a build at that instant writes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.contract.format_read import read_columns
from lakesieve.contract.protocols import FoldsOnDriver, RebuildsLocations, RenamesLocations
from lakesieve.errors import LakesieveError, LakesieveWarning
from lakesieve.files.arrow_frame import frame_of
from lakesieve.keys.key_order import KeyOrder
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.refresh.driver import column_bytes, delta_schema, local_rows, spark_sums
from lakesieve.model import BuiltIndex, Instant, ReadUnit
from lakesieve.state.overlay import (
    DELTA_FILE,
    RENAMES_FILE,
    delta_of,
    follow_chain,
    renames_of,
)
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store.index_log import IndexDefinition, IndexState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Most stored and new delta rows a fold runs on the driver; above, Spark folds them.
DRIVER_FOLD_ROWS = 4_000_000


def stored_changes(
    table: TableIndexes, chain: list[IndexState], then: Mapping[str, str] | None = None
) -> tuple[list[pa.Table], dict[str, str]]:
    """The chain's stored deltas under its newest names, and every name it moved (old to newest).

    ``then`` moves names once more after the chain (a refresh's new renames,
    whose delta already uses the new names).
    """
    states: list[tuple[pa.Table | None, Mapping[str, str]]] = []
    for state in chain[1:]:
        files = table.store.read_files(state)
        states.append((delta_of(files.get(DELTA_FILE)), renames_of(files.get(RENAMES_FILE))))
    if then:
        states.append((None, then))
    return follow_chain(states)


def stored_rows(chain: list[IndexState]) -> int:
    return sum(f.rows for s in chain[1:] for f in s.files if f.name == DELTA_FILE)


def _moved_base(
    table: TableIndexes, definition: IndexDefinition, chain: list[IndexState], moved: dict[str, str]
) -> object | None:
    """The chain's loaded base with its entries under the names ``moved`` gives; ``None``: cannot.

    A moved name the base does not hold (a file a stored delta brought in)
    moves with the stored deltas' rows alone. ``None`` when the index type
    does not move entries (:class:`~lakesieve.contract.protocols.RenamesLocations`),
    declines, or the base's snapshot can no longer be read (the table
    expired it) to tell which names it holds.
    """
    base_obj = table.load(definition, chain[0])
    if not moved:
        return base_obj
    itype = registry.index_type(definition.type)
    if not isinstance(itype, RenamesLocations):
        return None
    in_base = moved
    if len(chain) > 1:
        base = chain[0]
        try:
            held = table.view.snapshot_at(Instant(base.instant_sort_key, base.instant)).locations
        except Exception:  # an expired snapshot: rebuild rather than guess
            return None
        in_base = {old: new for old, new in moved.items() if old in held}
    return itype.rename_locations(base_obj, in_base)


def fold(
    table: TableIndexes,
    spark: SparkSession,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: DataFrame | None,
    target: Instant,
    rebuild: bool = True,
    renames: Mapping[str, str] | None = None,
) -> tuple[BuiltIndex | None, str]:
    """A new base at ``target``: the chain's base with every delta folded in (or a rebuild).

    ``renames`` are the locations ``extra`` moved (its rows use the new
    names). Without ``rebuild``, an index type that cannot fold in place
    (``apply_delta`` answers ``None``, or the chain moved names and the type
    cannot move its entries) gets ``None`` instead of a rebuild.
    """
    from pyspark.sql import functions as F

    stored, moved = stored_changes(table, chain, renames)
    base_obj = _moved_base(table, definition, chain, moved)
    built: BuiltIndex | None = None
    if base_obj is not None:
        parts: list[DataFrame] = []
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
        built = _checked(built, definition, "apply_delta")
    if built is None:
        if not rebuild:
            return None, "delta"
        return build_state(table, definition, target, spark), "rebuilt"
    return built, "compacted"


def fold_on_driver(
    table: TableIndexes,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: pa.Table | None,
    renames: Mapping[str, str] | None = None,
) -> BuiltIndex | None:
    """The chain's base with every delta (and ``extra``) folded in on the driver.

    ``renames`` are the locations ``extra`` moved (its rows use the new
    names); the base's entries move with them and with those the chain's
    stored deltas moved. ``None`` when the index type does not fold on the
    driver (:class:`~lakesieve.contract.protocols.FoldsOnDriver`), cannot
    move the names, declines this index, or the deltas pass
    :data:`DRIVER_FOLD_ROWS` rows.
    """
    itype = registry.index_type(definition.type)
    if not isinstance(itype, FoldsOnDriver):
        return None
    extra_rows = extra.num_rows if extra is not None else 0
    if stored_rows(chain) + extra_rows > DRIVER_FOLD_ROWS:
        return None
    stored, moved = stored_changes(table, chain, renames)
    base_obj = _moved_base(table, definition, chain, moved)
    if base_obj is None:
        return None
    key_type = KeyOrder.of(definition.key_type, definition.type).arrow_type()
    # a refresh's new delta is summed already: alone, it needs no second sum
    delta = (
        extra
        if extra is not None and not stored
        else spark_sums(stored + ([extra] if extra is not None else []), key_type)
    )
    built = itype.apply_delta_arrow(base_obj, delta, definition.params)
    return _checked(built, definition, "apply_delta_arrow")


def folds_on_driver(definition: IndexDefinition) -> bool:
    return isinstance(registry.index_type(definition.type), FoldsOnDriver)


def fold_small(
    table: TableIndexes,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: pa.Table | None,
    driver_max_mb: float,
    renames: Mapping[str, str] | None = None,
    otherwise: str = "folding them with Spark",
) -> tuple[BuiltIndex | None, str]:
    """:func:`fold_on_driver` where the policy lets the driver fold; ``(None, ...)``: it did not.

    A fold that fails on the driver warns, saying what the caller does
    instead (``otherwise``).
    """
    if driver_max_mb <= 0:
        return None, "delta"
    try:
        built = fold_on_driver(table, definition, chain, extra, renames)
    except Exception as exc:
        warnings.warn(
            f"index {definition.name!r} on table {table.path}: deltas cannot be folded on the "
            f"driver ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); {otherwise}",
            LakesieveWarning,
            stacklevel=3,
        )
        return None, "delta"
    return built, "compacted"


def _checked(built: object, definition: IndexDefinition, method: str) -> BuiltIndex | None:
    if built is not None and not isinstance(built, BuiltIndex):
        raise LakesieveError(
            f"index type {definition.type!r} returned {type(built).__name__} from {method}"
        )
    return built


def _small_units(
    table: TableIndexes, units: tuple[ReadUnit, ...], target: Instant, mb: float
) -> bool:
    """Whether reading the key column of ``units`` comes to at most ``mb`` MiB (the driver's share)."""
    if mb <= 0:
        return False
    try:
        width = len(table.view.fmt.schema(target.id).names)
    except Exception:  # the Spark path needs no width
        return False
    return column_bytes(units, width) <= mb * 2**20


def rebuilds_locations(definition: IndexDefinition) -> bool:
    """Whether the index type builds inexact entries again at compaction (:func:`rebuild_inexact`)."""
    return isinstance(registry.index_type(definition.type), RebuildsLocations)


def rebuild_inexact(
    table: TableIndexes,
    definition: IndexDefinition,
    index: object,
    target: Instant,
    driver_max_mb: float,
    spark: Callable[[], SparkSession],
) -> tuple[BuiltIndex | None, int]:
    """The loaded ``index`` with the entries folds left inexact built again from their rows at ``target``.

    ``(None, 0)`` when the index type is not
    :class:`~lakesieve.contract.protocols.RebuildsLocations`, names no
    location, or cannot fold here. The locations' rows are read on the
    driver when they come to at most ``driver_max_mb`` MiB and the type
    folds on the driver; otherwise by Spark (``spark()`` starts a session
    only then). A location no longer in the snapshot simply loses its entry.

    Returns:
        The new index (``None``: keep the one there is) and the number of
        locations built again.
    """
    itype = registry.index_type(definition.type)
    if not isinstance(itype, RebuildsLocations):
        return None, 0
    stale = sorted(set(itype.inexact_locations(index)))
    if not stale:
        return None, 0
    units = table.view.snapshot_at(target).units_for(set(stale))
    kept = itype.without_locations(index, stale)
    key_type = KeyOrder.of(definition.key_type, definition.type).arrow_type()
    if isinstance(itype, FoldsOnDriver) and _small_units(table, units, target, driver_max_mb):
        try:
            rows = local_rows(table, definition.column, key_type, units, target)
            out = _checked(
                itype.apply_delta_arrow(kept, rows, definition.params),
                definition,
                "apply_delta_arrow",
            )
        except Exception as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            warnings.warn(
                f"index {definition.name!r} on table {table.path}: the locations to build again "
                f"cannot be read on the driver ({why}); reading them with Spark",
                LakesieveWarning,
                stacklevel=2,
            )
            out = None
        if out is not None:
            return out, len(stale)
    session = spark()
    from pyspark.sql import functions as F

    if units:
        frame = read_columns(table.view.fmt, session, units, target.id, [definition.column])
        delta = frame.toDF("key", "location").select(
            F.col("key"),
            F.col("location").cast("string").alias("location"),
            F.lit(1).cast("long").alias("count"),
        )
    else:
        delta = frame_of(session, delta_schema(key_type).empty_table())
    out = _checked(
        itype.apply_delta(session, kept, delta, definition.params), definition, "apply_delta"
    )
    if out is None:
        return None, 0
    return out, len(stale)
