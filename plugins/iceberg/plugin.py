"""The Iceberg format plugin: lakesieve's format hooks for Apache Iceberg tables.

Registered through the ``lakesieve`` entry-point group
(``iceberg = "lakesieve.plugins.iceberg.plugin"``), exactly like a
third-party plugin. Every hook answers only for ``table.format == "iceberg"``
and returns ``None`` otherwise.

Metadata (snapshots, manifests, delete files) comes from pyiceberg, through
a catalog configured by ``catalog.*``/``table`` options or, by default, from
the table's newest metadata file (:mod:`.catalog`); Spark reads the data
files itself; writes commit through a catalog. A location is a data file's
path relative to the table location. An instant is a snapshot of the main
branch: ``id`` the snapshot id, ``sort_key`` its zero-padded sequence number
and time (:mod:`.timeline`).

Indexes live outside the table location by default,
``<parent>/.lakesieve/indexes/<table folder>/``: Iceberg's orphan-file
removal deletes every file under the table location that the metadata does
not reach, hidden or not.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lakesieve.hookspecs import hookimpl
from lakesieve.plugins.iceberg.identify import is_iceberg_table

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.model import Changes, Instant, ReadUnit, Snapshot, TableRef, WriteOptions
    from pyspark.sql import DataFrame, SparkSession

FORMAT = "iceberg"


def _mine(table: TableRef) -> bool:
    return table.format == FORMAT


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``iceberg`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_identify(path: str) -> str | None:
    """``"iceberg"`` when ``<path>/metadata/*.metadata.json`` exists; never raises."""
    return FORMAT if is_iceberg_table(path) else None


@hookimpl
def lakesieve_format_timeline(table: TableRef) -> list[Instant] | None:
    """The main branch's snapshots still in the metadata, in commit order."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg import catalog, timeline

    return timeline.list_instants(catalog.load_for_read(table.path, table.options))


@hookimpl
def lakesieve_format_schema(table: TableRef, instant: str | None) -> pa.Schema | None:
    """The Arrow schema a snapshot was written with (current snapshot when ``None``)."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg import catalog, schema, timeline

    loaded = catalog.load_for_read(table.path, table.options)
    snap = timeline.resolve(loaded, table.path, instant)
    chosen = schema.schema_at(loaded.metadata, snap.schema_id if snap is not None else None)
    return schema.arrow_schema(chosen, table.path)


@hookimpl
def lakesieve_format_snapshot(table: TableRef, instant: str | None) -> Snapshot | None:
    """One read unit per live data file, with its delete files; see :mod:`.snapshot`."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.snapshot import build_snapshot

    return build_snapshot(table, instant)


@hookimpl
def lakesieve_format_changes(table: TableRef, start: str | None, end: str) -> Changes | None:
    """Data files added, removed or given delete files after the smaller bound up to the larger."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.changes import compute_changes

    return compute_changes(table, start, end)


@hookimpl
def lakesieve_format_read(
    table: TableRef,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame | None:
    """A DataFrame of the rows of ``units`` at a snapshot, position deletes applied."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.spark_read import read_units

    return read_units(spark, table, units, instant, with_location)


@hookimpl
def lakesieve_format_read_unit(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch] | None:
    """The rows of one data file as Arrow batches, position deletes applied, without Spark."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.unit_reader import read_unit_batches

    return read_unit_batches(table, unit, instant, columns)


@hookimpl
def lakesieve_format_write(
    table: TableRef, spark: SparkSession, df: DataFrame, options: WriteOptions
) -> Instant | None:
    """Write ``df`` as one Iceberg snapshot; see :mod:`.write` for modes and limits."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.write import write_table

    return write_table(spark, table, df, options)


@hookimpl
def lakesieve_format_index_root(table: TableRef) -> str | None:
    """``<parent>/.lakesieve/indexes/<table folder>``: outside the reach of orphan-file removal."""
    if not _mine(table):
        return None
    from lakesieve.plugins.iceberg.catalog import index_root

    return index_root(table.path)
