"""The Delta format plugin: lakesieve's format hooks for Delta Lake tables.

Registered through the ``lakesieve`` entry-point group
(``delta = "lakesieve.plugins.delta.plugin"``), exactly like a third-party
plugin. Every hook answers only for ``table.format == "delta"`` and returns
``None`` otherwise.

Table metadata (versions, files, deletion vectors) comes from delta-rs
(``deltalake``); Spark reads the data files itself; writes commit through
delta-rs. A location is a data file's path relative to the table root.
An instant is a version: ``id`` ``"3"``, ``sort_key`` ``"00000000000000000003"``.

Indexes live in ``<table>/.lakesieve/`` (the default): Delta's VACUUM, even
``full``, leaves files under hidden folders (names starting with ``.`` or
``_``) alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakesieve.hookspecs import hookimpl
from lakesieve.plugins.delta.identify import is_delta_table

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.model import Changes, Instant, ReadUnit, Snapshot, TableRef, WriteOptions
    from pyspark.sql import DataFrame, SparkSession

FORMAT = "delta"


def _mine(table: TableRef) -> bool:
    return table.format == FORMAT


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``delta`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_identify(path: str) -> str | None:
    """``"delta"`` when ``<path>/_delta_log/`` exists; never raises."""
    return FORMAT if is_delta_table(path) else None


@hookimpl
def lakesieve_format_timeline(table: TableRef) -> list[Instant] | None:
    """Every version still in the log, oldest first (``action``: the operation, lower case)."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta import timeline

    return timeline.list_instants(table)


@hookimpl
def lakesieve_format_schema(table: TableRef, instant: str | None) -> pa.Schema | None:
    """The table's Arrow schema at a version (latest when ``None``), partition columns included."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta import schema, tables, timeline

    version = timeline.resolve(table, instant)
    dt = tables.open_table(table, None if version is None else str(version))
    return schema.arrow_schema(dt)


@hookimpl
def lakesieve_format_snapshot(table: TableRef, instant: str | None) -> Snapshot | None:
    """One read unit per data file visible at a version; see :mod:`.snapshot`."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta.snapshot import build_snapshot

    return build_snapshot(table, instant)


@hookimpl
def lakesieve_format_changes(table: TableRef, start: str | None, end: str) -> Changes | None:
    """Data files added or removed by versions after the smaller bound up to the larger."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta.changes import compute_changes

    return compute_changes(table, start, end)


@hookimpl
def lakesieve_format_read(
    table: TableRef,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame | None:
    """A DataFrame of the rows of ``units`` at a version, deletion vectors applied."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta.spark_read import read_units

    return read_units(spark, table, units, instant, with_location)


@hookimpl
def lakesieve_format_read_unit(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch] | None:
    """The rows of one data file as Arrow batches, deletion vector applied, without Spark."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta.unit_reader import read_unit_batches

    return read_unit_batches(table, unit, instant, columns)


@hookimpl
def lakesieve_format_write(
    table: TableRef, spark: SparkSession, df: DataFrame, options: WriteOptions
) -> Instant | None:
    """Write ``df`` as one Delta commit; see :mod:`.write` for modes and limits."""
    if not _mine(table):
        return None
    from lakesieve.plugins.delta.write import write_table

    return write_table(spark, table, df, options)
