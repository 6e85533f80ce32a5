"""Building an index: checking the request, running the index type's Spark job, committing the state.

:func:`build_index` is ``Table.build_index`` and ``lakesieve index build``:
every argument is checked before Spark starts, then :func:`build_state`
reads the indexed column with the location of each row at one instant and
hands it to the index type. Refresh and repair use :func:`build_state` for
their rebuilds.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lakesieve.contract import registry
from lakesieve.contract.format_read import read_columns
from lakesieve.contract.protocols import MultiPassBuild
from lakesieve.errors import ConcurrentBuildError, IndexBuildError, LakesieveError, OptionError
from lakesieve.expressions import resolve_column
from lakesieve.model import LOCATION_COLUMN, BuiltIndex, Instant
from lakesieve.spark.job_errors import is_spark_failure, summarize
from lakesieve.spark.session import get_spark
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store.errors import job_write_error
from lakesieve.store.index_log import (
    IndexDefinition,
    add_state_action,
    check_name,
    default_index_name,
)
from lakesieve.store.seen_locations import hashes, stamp
from lakesieve.store.task_files import staging

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_index(
    table: TableIndexes,
    column: str,
    type: str = "sieve",
    name: str | None = None,
    options: dict[str, str] | None = None,
    spark: SparkSession | None = None,
    as_of: str | None = None,
    spark_conf: dict[str, str] | None = None,
    progress: Any = None,
) -> str:
    """Build (or rebuild) an index on ``column`` at an instant (latest by default); its name.

    Every argument is checked before Spark starts: the column must exist,
    the index type must be installed and accept the column's type and the
    options, and the index root must be writable.

    Raises:
        ConcurrentBuildError: another process created an index of this name
            (or defined it anew) while this build ran; the error names its definition.
        StoreBusyError: a repair is running on the store.
        StoreWriteError: the index root cannot be written (checked before Spark starts).
    """
    definition, existing, inst = declare_index(table, column, type, name, options, as_of)
    return build_declared(table, definition, existing, inst, spark, spark_conf, progress)


def build_declared(
    table: TableIndexes,
    definition: IndexDefinition,
    existing: IndexDefinition | None,
    inst: Instant,
    spark: SparkSession | None = None,
    spark_conf: dict[str, str] | None = None,
    progress: Any = None,
) -> str:
    """Build the index :func:`declare_index` declared at ``inst`` and commit it; its name.

    Raises: as :func:`build_index`, past the checks of its arguments.
    """
    name, type = definition.name, definition.type
    # the lock keeps a repair out while the build runs; taking it checks the root is writable
    with table.store.writing(create=True):
        if progress is not None:
            progress(
                f"building {type} index {name} on {table.path} column {definition.column} at instant {inst.id} ..."
            )
        spark = spark or get_spark(conf=spark_conf)
        built = build_state(table, definition, inst, spark)
        _commit_build(table, definition, existing, built, inst)
    return name


def declare_index(
    table: TableIndexes,
    column: str,
    type: str = "sieve",
    name: str | None = None,
    options: dict[str, str] | None = None,
    as_of: str | None = None,
) -> tuple[IndexDefinition, IndexDefinition | None, Instant]:
    """The index a build would declare, the stored one of that name, and the instant (no Spark).

    Raises:
        OptionError: the column, type or options are refused, or an index of
            that name exists with another type or column.
    """
    registry.require_index_type(type)
    inst = table.view.resolve_instant(as_of)
    if inst is None:
        raise LakesieveError(f"table {table.path} has no completed instant to index")
    schema = table.view.fmt.schema(inst.id)
    col = resolve_column(schema, column, table.path)
    str_options = {str(k): str(v) for k, v in (options or {}).items()}
    params = registry.index_type(type).validate(str_options, col.spark_type)
    name = check_name(name or default_index_name(col.name, type), "index name")
    existing = table.store.read_log().indexes.get(name)
    if existing is not None and (existing.type != type or existing.column != col.name):
        raise OptionError(
            f"index {name!r} on table {table.path} already exists as {existing.type} on "
            f"column {existing.column!r}; drop it first or choose another --name"
        )
    definition = IndexDefinition(
        name=name, type=type, column=col.name, key_type=col.spark_type, params=params
    )
    return definition, existing, inst


def same_definition(a: IndexDefinition, b: IndexDefinition) -> bool:
    """Whether ``a`` and ``b`` declare the same index (type, column, key type, parameters)."""
    return (a.type, a.column, a.key_type, a.params) == (b.type, b.column, b.key_type, b.params)


def _commit_build(
    table: TableIndexes,
    definition: IndexDefinition,
    existing: IndexDefinition | None,
    built: BuiltIndex,
    inst: Instant,
) -> None:
    """Write a build's files and commit its state, unless another process defined the index meanwhile.

    Raises:
        ConcurrentBuildError: the index was created (or defined anew) by
            another writer since the build read the log; its files are removed.
    """
    name = definition.name
    state_id, records = table.store.write_files(name, built)

    def actions(snap: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        mine = table.view.table_id()
        if snap.table_fingerprint is None or (mine is not None and snap.table_fingerprint != mine):
            # the first build, or an older store learning the table's identity
            out.append({"op": "table", "fingerprint": table.view.fingerprint()})
        current = snap.indexes.get(name)
        if current is not None and (existing is None or not same_definition(current, existing)):
            raise ConcurrentBuildError(
                f"index {name!r} already exists ({current.type} on {current.column}), built by "
                f"another process while this build ran; this build ({definition.type} on "
                f"{definition.column}) was not kept"
            )
        if (
            current is None
            or current.params != definition.params
            or current.key_type != definition.key_type
        ):
            out.append(
                {
                    "op": "define",
                    "index": name,
                    "type": definition.type,
                    "column": definition.column,
                    "key_type": definition.key_type,
                    "params": definition.params,
                }
            )
        out.append(add_state_action(name, state_id, inst.id, inst.sort_key, records, built.meta))
        return out

    try:
        table.store.commit_with_retry(actions)
    except ConcurrentBuildError:
        table.store.remove_state_folder(name, state_id)
        raise


def build_state(
    table: TableIndexes, definition: IndexDefinition, inst: Instant, spark: SparkSession
) -> BuiltIndex:
    """Build ``definition`` from the table's rows at ``inst`` (a Spark job); nothing is committed.

    Raises:
        IndexBuildError: the Spark job failed.
        LakesieveError: the index type returned something other than a :class:`BuiltIndex`.
    """
    started = time.perf_counter()
    snapshot = table.view.snapshot_at(inst)
    frame = read_columns(table.view.fmt, spark, snapshot.units, inst.id, [definition.column])
    from pyspark.sql import functions as F

    relation = frame.select(
        F.col(definition.column).alias("key"), F.col(LOCATION_COLUMN).alias("location")
    )
    index_type = registry.index_type(definition.type)
    # Units merged in Python tasks (log files) cost far more to read than a
    # Parquet scan; an index type that reads its input twice (a range
    # partitioning samples it first) gets them read once, into Spark's cache.
    passes = index_type.input_passes if isinstance(index_type, MultiPassBuild) else 1
    held = passes > 1 and any(u.log_files for u in snapshot.units)
    if held:
        from pyspark import StorageLevel

        relation = relation.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with staging(table.store, definition.name):
            built = index_type.build(
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
        refused = job_write_error(str(exc), table.store.data_dir / definition.name)
        if refused is not None:
            raise refused from None
        raise IndexBuildError(
            f"index {definition.name!r} ({definition.type} on {definition.column}) of table {table.path}: "
            f"the build's Spark job failed: {summarize(exc)}"
        ) from exc
    finally:
        if held:
            relation.unpersist()
    if not isinstance(built, BuiltIndex):
        got = built.__class__.__name__
        raise LakesieveError(
            f"index type {definition.type!r} returned {got} from build, not BuiltIndex"
        )
    built.meta.setdefault("build_seconds", round(time.perf_counter() - started, 3))
    stamp(built.meta, "base", hashes(snapshot.locations))  # the locations the build read
    return built
