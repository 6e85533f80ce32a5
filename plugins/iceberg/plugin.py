"""The Iceberg format plugin: lakesieve's table format for Apache Iceberg tables.

Registered through the ``lakesieve`` entry-point group
(``iceberg = "lakesieve.plugins.iceberg.plugin"``), exactly like a
third-party plugin.

Metadata (snapshots, manifests, delete files) comes from pyiceberg, through
a catalog configured by ``catalog.*``/``table`` options or, by default, from
the table's newest metadata file (:mod:`.catalog`); Spark reads the data
files itself; writes commit through a catalog. A location is a data file's
path relative to the table location. An instant is a snapshot of the main
branch, in lineage (parent-snapshot) order: ``id`` the snapshot id,
``sort_key`` its zero-padded sequence number and time, kept strictly
increasing along the lineage (:mod:`.timeline`).

Indexes live outside the table location by default,
``<parent>/.lakesieve/indexes/<table folder>/``: Iceberg's orphan-file
removal deletes every file under the table location that the metadata does
not reach, hidden or not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from lakesieve.plugins.iceberg.identify import is_iceberg_table
from lakesieve.sdk import TableFormatBase, hookimpl

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.plugins.iceberg.skipping import IcebergPlanning
    from lakesieve.sdk import Changes, Instant, ReadUnit, Snapshot, WriteOptions
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "iceberg"


class IcebergFormat(TableFormatBase):
    """An Iceberg table; see :class:`~lakesieve.sdk.TableFormat` for each method's contract."""

    name = FORMAT
    known_options = ("catalog.", "table", "storage.")

    @classmethod
    def identify(cls, path: str) -> bool:
        """``<path>/metadata/*.metadata.json`` exists; never raises."""
        return is_iceberg_table(path)

    def table_id(self) -> str | None:
        """The ``table-uuid`` of the table's metadata (optional in format version 1)."""
        from lakesieve.plugins.iceberg import catalog

        found = catalog.load_for_read(self.path, self.options).metadata.table_uuid
        return str(found) if found else None

    def timeline(self) -> list[Instant]:
        """The main branch's snapshots still in the metadata, oldest first by lineage."""
        from lakesieve.plugins.iceberg import catalog, timeline

        return timeline.list_instants(catalog.load_for_read(self.path, self.options))

    def schema(self, instant: str | None) -> pa.Schema:
        """The Arrow schema a snapshot was written with (current snapshot when ``None``)."""
        from lakesieve.plugins.iceberg import catalog, schema, timeline

        loaded = catalog.load_for_read(self.path, self.options)
        snap = timeline.resolve(loaded, self.path, instant)
        chosen = schema.schema_at(loaded.metadata, snap.schema_id if snap is not None else None)
        return schema.arrow_schema(chosen, self.path)

    def snapshot(self, instant: str | None) -> Snapshot:
        """One read unit per live data file, with its delete files; see :mod:`.snapshot`."""
        from lakesieve.plugins.iceberg.snapshot import build_snapshot

        return build_snapshot(self.ref, instant)

    def changes(self, start: str | None, end: str) -> Changes:
        """Data files added, removed or given delete files after the smaller bound up to the larger."""
        from lakesieve.plugins.iceberg.changes import compute_changes

        return compute_changes(self.ref, start, end)

    def read(
        self,
        spark: SparkSession,
        units: Sequence[ReadUnit],
        instant: str | None,
        with_location: bool,
        columns: Sequence[str] | None = None,
    ) -> DataFrame:
        """A DataFrame of the rows of ``units`` at a snapshot, position deletes applied.

        With ``columns``, only those (Spark prunes the rest from its scans).
        """
        from lakesieve.plugins.iceberg.spark_read import read_units
        from lakesieve.sdk import select_columns
        from lakesieve.sdk.spark import prepare

        prepare(spark, self.path, self.ref.options)
        frame = read_units(spark, self.ref, units, instant, with_location)
        return select_columns(frame, columns, with_location, self.path)

    def parquet_files(
        self, units: Sequence[ReadUnit], instant: str | None
    ) -> list[tuple[str, int] | None]:
        """Per unit, the data file Spark's Parquet reader reads as it is, and its exact size.

        ``None`` for a unit with delete files or an identity partition value,
        and for every unit of a table whose fields changed name or id
        (:mod:`lakesieve.plugins.iceberg.file_list`).
        """
        from lakesieve.plugins.iceberg.file_list import parquet_files

        return parquet_files(self.ref, units, instant)

    def spark_schema(
        self, spark: SparkSession, instant: str | None, units: Sequence[ReadUnit]
    ) -> StructType | None:
        """The Spark schema :meth:`read` gives at ``instant`` (every column, nullable)."""
        from lakesieve.plugins.iceberg.file_list import spark_schema

        return spark_schema(spark, self.ref, instant)

    def read_unit(
        self, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one data file as Arrow batches, position deletes applied, without Spark."""
        from lakesieve.plugins.iceberg.unit_reader import read_unit_batches

        return read_unit_batches(self.ref, unit, instant, columns)

    def native_skipping(self, instant: str | None, column: str, key_type: str) -> IcebergPlanning:
        """pyiceberg's scan planning of each query on ``column``; see :mod:`.skipping`."""
        from lakesieve.plugins.iceberg.skipping import iceberg_skipping

        return iceberg_skipping(self.ref, instant, column, key_type)

    def write(self, spark: SparkSession, df: DataFrame, options: WriteOptions) -> Instant:
        """Write ``df`` as one Iceberg snapshot; see :mod:`.write` for modes and limits."""
        from lakesieve.plugins.iceberg.write import write_table

        self._refuse_object_storage(options)
        return write_table(spark, self.ref, df, options)

    def check_write(self, schema: pa.Schema | None, options: WriteOptions) -> None:
        """Refuse before Spark starts what :meth:`write` would refuse; see :mod:`.write_check`."""
        from lakesieve.plugins.iceberg.write_check import check_write

        self._refuse_object_storage(options)
        check_write(self.ref, schema, options)

    def _refuse_object_storage(self, options: WriteOptions) -> None:
        """A table on object storage is written only through a configured catalog."""
        from lakesieve.plugins.iceberg.catalog import catalog_options
        from lakesieve.sdk.writing import refuse_object_storage

        if not catalog_options(self.ref.options, options.extra)[0]:
            refuse_object_storage(
                self.path,
                "Iceberg",
                "with no catalog configured, lakesieve commits through a SQLite file beside the "
                "table; configure one with 'catalog.*' and 'table' options",
            )

    def index_root(self) -> str | None:
        """``<parent>/.lakesieve/indexes/<table folder>``: outside the reach of orphan-file removal."""
        from lakesieve.plugins.iceberg.catalog import index_root

        return index_root(self.path)


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``iceberg`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_open(path: str, options: Mapping[str, str]) -> IcebergFormat | None:
    """An :class:`IcebergFormat` when ``<path>/metadata/`` holds metadata or the format is forced."""
    return IcebergFormat.open(path, options)
