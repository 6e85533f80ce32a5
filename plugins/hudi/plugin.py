"""The Hudi format plugin: lakesieve's format hooks for Apache Hudi tables.

Registered through the ``lakesieve`` entry-point group
(``hudi = "lakesieve.plugins.hudi.plugin"``), exactly like a third-party
plugin. Every hook answers only for ``table.format == "hudi"`` and returns
``None`` otherwise.

Table metadata and merge-on-read merging come from hudi-rs (the ``hudi``
package, table versions 6, 8 and 9); Spark reads base files itself. Writing
goes through the plugin's own writer (copy-on-write and merge-on-read, table
version 6: :mod:`lakesieve.plugins.hudi.writer`).

A location is ``"<partition path>/<file group id>"`` (the id alone when the
table is not partitioned).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakesieve.hookspecs import hookimpl
from lakesieve.plugins.hudi import changes as _changes
from lakesieve.plugins.hudi import snapshot as _snapshot
from lakesieve.plugins.hudi import tables, timeline
from lakesieve.plugins.hudi.identify import is_hudi_table
from lakesieve.plugins.hudi.unit_reader import read_unit_batches

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.model import Changes, Instant, ReadUnit, Snapshot, TableRef, WriteOptions
    from pyspark.sql import DataFrame, SparkSession

FORMAT = "hudi"


def _mine(table: TableRef) -> bool:
    return table.format == FORMAT


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``hudi`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_identify(path: str) -> str | None:
    """``"hudi"`` when ``<path>/.hoodie/hoodie.properties`` exists; never raises."""
    return FORMAT if is_hudi_table(path) else None


@hookimpl
def lakesieve_format_timeline(table: TableRef) -> list[Instant] | None:
    """Completed commit, deltacommit and replacecommit instants, oldest first.

    Instants of the active timeline only; ``sort_key`` and ``id`` are the
    instant's requested time.
    """
    if not _mine(table):
        return None
    ht = tables.open_ref(table)
    return [timeline.to_instant(i) for i in timeline.completed_data_instants(ht)]


@hookimpl
def lakesieve_format_schema(table: TableRef, instant: str | None) -> pa.Schema | None:
    """The Arrow schema a snapshot read returns (``_hoodie_*`` first when populated).

    The latest table schema is returned for any instant (schema evolution
    is not tracked per instant); ``instant`` is checked to be a completed one.
    """
    if not _mine(table):
        return None
    ht = tables.open_ref(table)
    if instant is not None:
        timeline.resolve(timeline.completed_data_instants(ht), instant, table.path)
    return tables.read_schema(ht)


@hookimpl
def lakesieve_format_snapshot(table: TableRef, instant: str | None) -> Snapshot | None:
    """One read unit per file group visible at ``instant`` (latest when ``None``)."""
    if not _mine(table):
        return None
    return _snapshot.build_snapshot(table, instant)


@hookimpl
def lakesieve_format_changes(table: TableRef, start: str | None, end: str) -> Changes | None:
    """Locations touched by instants strictly after the smaller bound up to the larger.

    The order of ``start`` and ``end`` does not change which locations are
    touched; see :mod:`lakesieve.plugins.hudi.changes`.
    """
    if not _mine(table):
        return None
    return _changes.compute_changes(table, start, end)


@hookimpl
def lakesieve_format_read(
    table: TableRef,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame | None:
    """A DataFrame of the rows of ``units`` as of ``instant``; see :mod:`.spark_read`."""
    if not _mine(table):
        return None
    from lakesieve.plugins.hudi.spark_read import read_units

    return read_units(spark, table, units, instant, with_location)


@hookimpl
def lakesieve_format_read_unit(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch] | None:
    """The rows of one unit as Arrow batches in the table's read schema, without Spark."""
    if not _mine(table):
        return None
    return read_unit_batches(
        table.path, table.options, unit.base_file, unit.log_files, instant, None, columns
    )


@hookimpl
def lakesieve_format_write(
    table: TableRef, spark: SparkSession, df: DataFrame, options: WriteOptions
) -> Instant | None:
    """Write ``df`` as one commit with the plugin's own writer (table version 6).

    ``options.table_type`` picks copy-on-write (``cow``) or merge-on-read
    (``mor``) for a new table; see :mod:`lakesieve.plugins.hudi.writer`.

    Raises:
        WriteError: bad options or data (one line naming the problem).
    """
    if not _mine(table):
        return None
    from lakesieve.plugins.hudi.writer import write_table

    result: Instant = write_table(spark, table.path, df, options)
    return result
