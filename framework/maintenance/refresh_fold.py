"""Folding an index's delta chain into a new base: on the driver where the index type can, else by Spark.

Refresh (past its policy's limits) and compaction fold the chain's stored
deltas, and a refresh's new delta, into the base. An index type that
implements :class:`~lakesieve.contract.protocols.FoldsOnDriver` folds a
chain of at most :data:`DRIVER_FOLD_ROWS` rows in this process: the deltas
are summed with Spark's equality for keys
(:func:`~lakesieve.maintenance.refresh_local.spark_sums`) and handed over
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
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.contract.format_read import read_columns
from lakesieve.contract.protocols import FoldsOnDriver, RebuildsLocations, RenamesLocations
from lakesieve.errors import LakesieveError
from lakesieve.files.arrow_frame import frame_of
from lakesieve.keys.key_order import KeyOrder
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.refresh_local import column_bytes, delta_schema, local_rows, spark_sums
from lakesieve.model import BuiltIndex, Instant, ReadUnit
from lakesieve.query.overlay import DELTA_COLUMNS, DELTA_FILE
from lakesieve.query.planner import LakesieveWarning
from lakesieve.store.index_log import IndexDefinition, IndexState
from lakesieve.store.index_state import TableIndexes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Most stored and new delta rows a fold runs on the driver; above, Spark folds them.
DRIVER_FOLD_ROWS = 4_000_000


def stored_deltas(table: TableIndexes, chain: list[IndexState]) -> list[pa.Table]:
    out = []
    for state in chain[1:]:
        files = table.store.read_files(state)
        if DELTA_FILE in files:
            out.append(files[DELTA_FILE].select(list(DELTA_COLUMNS)))
    return out


def stored_rows(chain: list[IndexState]) -> int:
    return sum(f.rows for s in chain[1:] for f in s.files)


def fold(
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
    stored = stored_deltas(table, chain)
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
) -> BuiltIndex | None:
    """The chain's base with every delta (and ``extra``) folded in on the driver.

    ``None`` when the index type does not fold on the driver
    (:class:`~lakesieve.contract.protocols.FoldsOnDriver`), declines this
    index, or the deltas pass :data:`DRIVER_FOLD_ROWS` rows.
    """
    itype = registry.index_type(definition.type)
    if not isinstance(itype, FoldsOnDriver):
        return None
    extra_rows = extra.num_rows if extra is not None else 0
    if stored_rows(chain) + extra_rows > DRIVER_FOLD_ROWS:
        return None
    key_type = KeyOrder.of(definition.key_type, definition.type).arrow_type()
    stored = stored_deltas(table, chain)
    # a refresh's new delta is summed already: alone, it needs no second sum
    delta = (
        extra
        if extra is not None and not stored
        else spark_sums(stored + ([extra] if extra is not None else []), key_type)
    )
    built = itype.apply_delta_arrow(table.load(definition, chain[0]), delta, definition.params)
    return _checked(built, definition, "apply_delta_arrow")


def renames_on_driver(definition: IndexDefinition) -> bool:
    """Whether the index type moves entries to new names and folds on the driver (:func:`fold_renamed`)."""
    itype = registry.index_type(definition.type)
    return isinstance(itype, RenamesLocations) and isinstance(itype, FoldsOnDriver)


def _renamed_rows(delta: pa.Table, renames: dict[str, str]) -> pa.Table:
    """A stored delta's rows with each old location name replaced by its new one."""
    if not delta.num_rows:
        return delta
    # one lookup per distinct name, not per row (a stored chain may hold millions of rows)
    encoded = delta.column("location").combine_chunks().cast(pa.string()).dictionary_encode()
    names = pa.array([renames.get(n, n) for n in encoded.dictionary.to_pylist()], pa.string())
    moved = names.take(encoded.indices)
    return delta.set_column(delta.schema.get_field_index("location"), "location", moved)


def fold_renamed(
    table: TableIndexes,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: pa.Table,
    renames: dict[str, str],
) -> BuiltIndex | None:
    """The chain's base with entries moved by ``renames``, then every delta and ``extra`` folded in.

    ``extra`` is a refresh's delta summed by rewrite pairs
    (:mod:`~lakesieve.maintenance.refresh_pairs`): its rows use the new
    names. The chain's stored deltas are about the locations of their own
    instants, so their old names are moved too; an old name the base does
    not hold (a file a stored delta brought in) moves with those rows alone.
    ``None`` when the index
    type does not rename and fold on the driver, declines either, or the
    deltas pass :data:`DRIVER_FOLD_ROWS` rows: the refresh then reads the
    change by location.
    """
    itype = registry.index_type(definition.type)
    if not (isinstance(itype, RenamesLocations) and isinstance(itype, FoldsOnDriver)):
        return None
    if stored_rows(chain) + extra.num_rows > DRIVER_FOLD_ROWS:
        return None
    in_base = renames
    if len(chain) > 1:
        # a file the chain's deltas brought in has no entry in the base: its rows move
        # with the stored deltas' names alone
        base = chain[0]
        held = table.view.snapshot_at(Instant(base.instant_sort_key, base.instant)).locations
        in_base = {old: new for old, new in renames.items() if old in held}
    moved = itype.rename_locations(table.load(definition, chain[0]), in_base)
    if moved is None:
        return None
    key_type = KeyOrder.of(definition.key_type, definition.type).arrow_type()
    stored = [_renamed_rows(t, renames) for t in stored_deltas(table, chain)]
    delta = spark_sums([*stored, extra], key_type) if stored else extra
    return _checked(
        itype.apply_delta_arrow(moved, delta, definition.params), definition, "apply_delta_arrow"
    )


def folds_on_driver(definition: IndexDefinition) -> bool:
    return isinstance(registry.index_type(definition.type), FoldsOnDriver)


def fold_small(
    table: TableIndexes,
    definition: IndexDefinition,
    chain: list[IndexState],
    extra: pa.Table | None,
    driver_max_mb: float,
) -> tuple[BuiltIndex | None, str]:
    """:func:`fold_on_driver` where the policy lets the driver fold; ``(None, ...)``: it did not.

    A fold that fails on the driver is left to Spark, with a warning.
    """
    if driver_max_mb <= 0:
        return None, "delta"
    try:
        built = fold_on_driver(table, definition, chain, extra)
    except Exception as exc:
        warnings.warn(
            f"index {definition.name!r} on table {table.path}: deltas cannot be folded on the "
            f"driver ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); folding "
            "them with Spark",
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
