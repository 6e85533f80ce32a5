"""Folding an index's delta chain into a new base: on the driver where the index type can, else by Spark.

Refresh (past its policy's limits) and compaction fold the chain's stored
deltas, and a refresh's new delta, into the base. An index type that
implements :class:`~lakesieve.contract.protocols.FoldsOnDriver` folds a
chain of at most :data:`DRIVER_FOLD_ROWS` rows in this process: the deltas
are summed with Spark's equality for keys
(:func:`~lakesieve.maintenance.refresh_local.spark_sums`) and handed over
as one table. Otherwise ``IndexType.apply_delta`` folds them in Spark, or the
index is rebuilt at the instant where the type cannot fold.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.contract.protocols import FoldsOnDriver
from lakesieve.errors import LakesieveError
from lakesieve.files.arrow_frame import frame_of
from lakesieve.keys.key_order import KeyOrder
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.refresh_local import spark_sums
from lakesieve.model import BuiltIndex, Instant
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
    if built is None:
        if not rebuild:
            return None, "delta"
        return build_state(table, definition, target, spark), "rebuilt"
    if not isinstance(built, BuiltIndex):
        raise LakesieveError(
            f"index type {definition.type!r} returned {type(built).__name__} from apply_delta"
        )
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
    if built is not None and not isinstance(built, BuiltIndex):
        raise LakesieveError(
            f"index type {definition.type!r} returned {type(built).__name__} from apply_delta_arrow"
        )
    return built


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
