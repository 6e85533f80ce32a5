"""The Delta format plugin: lakesieve's table format for Delta Lake tables.

Registered through the ``lakesieve`` entry-point group
(``delta = "lakesieve.plugins.delta.plugin"``), exactly like a third-party
plugin.

Table metadata (versions, files, deletion vectors) comes from delta-rs
(``deltalake``); Spark reads the data files itself; writes commit through
delta-rs. A location is a data file's path relative to the table root.
An instant is a version: ``id`` ``"3"``, ``sort_key`` ``"00000000000000000003"``.

Indexes live in ``<table>/.lakesieve/`` (the default): Delta's VACUUM, even
``full``, leaves files under hidden folders (names starting with ``.`` or
``_``) alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from lakesieve.plugins.delta.identify import is_delta_table
from lakesieve.sdk import TableFormatBase, hookimpl

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import Changes, Instant, MinMaxSkipping, ReadUnit, Snapshot, WriteOptions
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "delta"


class DeltaFormat(TableFormatBase):
    """A Delta table; see :class:`~lakesieve.sdk.TableFormat` for each method's contract."""

    name = FORMAT
    known_options = ("storage.",)

    @classmethod
    def identify(cls, path: str) -> bool:
        """``<path>/_delta_log/`` exists; never raises."""
        return is_delta_table(path)

    def table_id(self) -> str | None:
        """The ``id`` of the table's ``metaData`` action (kept by every later commit)."""
        from lakesieve.plugins.delta import tables

        found = tables.open_table(self.ref).metadata().id
        return str(found) if found else None

    def timeline(self) -> list[Instant]:
        """Every version still in the log, oldest first (``action``: the operation, lower case)."""
        from lakesieve.plugins.delta import timeline

        return timeline.list_instants(self.ref)

    def schema(self, instant: str | None) -> pa.Schema:
        """The table's Arrow schema at a version (latest when ``None``), partition columns included."""
        from lakesieve.plugins.delta import schema, tables, timeline

        version = timeline.resolve(self.ref, instant)
        dt = tables.open_table(self.ref, None if version is None else str(version))
        return schema.arrow_schema(dt)

    def snapshot(self, instant: str | None) -> Snapshot:
        """One read unit per data file visible at a version; see :mod:`.snapshot`."""
        from lakesieve.plugins.delta.snapshot import build_snapshot

        return build_snapshot(self.ref, instant)

    def changes(self, start: str | None, end: str) -> Changes:
        """Data files added or removed by versions after the smaller bound up to the larger."""
        from lakesieve.plugins.delta.changes import compute_changes

        return compute_changes(self.ref, start, end)

    def read(
        self,
        spark: SparkSession,
        units: Sequence[ReadUnit],
        instant: str | None,
        with_location: bool,
        columns: Sequence[str] | None = None,
    ) -> DataFrame:
        """A DataFrame of the rows of ``units`` at a version, deletion vectors applied.

        With ``columns``, only those (Spark prunes the rest from its scans).
        """
        from lakesieve.plugins.delta.spark_read import read_units
        from lakesieve.sdk import select_columns
        from lakesieve.sdk.spark import prepare

        prepare(spark, self.path, self.ref.options)
        frame = read_units(spark, self.ref, units, instant, with_location)
        return select_columns(frame, columns, with_location, self.path)

    def parquet_files(
        self, units: Sequence[ReadUnit], instant: str | None
    ) -> list[tuple[str, int] | None]:
        """Per unit, the data file Spark's Parquet reader reads as it is, and its exact size.

        ``None`` for a unit with a deletion vector, and for every unit of a
        partitioned or column-mapped table (:mod:`lakesieve.plugins.delta.file_list`).
        """
        from lakesieve.plugins.delta.file_list import parquet_files

        return parquet_files(self.ref, units, instant)

    def spark_schema(
        self, spark: SparkSession, instant: str | None, units: Sequence[ReadUnit]
    ) -> StructType | None:
        """The Spark schema :meth:`read` gives at ``instant`` (every column, nullable)."""
        from lakesieve.plugins.delta.file_list import spark_schema

        return spark_schema(self.ref, instant)

    def read_unit(
        self, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one data file as Arrow batches, deletion vector applied, without Spark."""
        from lakesieve.plugins.delta.unit_reader import read_unit_batches

        return read_unit_batches(self.ref, unit, instant, columns)

    def native_skipping(self, instant: str | None, column: str, key_type: str) -> MinMaxSkipping:
        """The log's per-file statistics of ``column``, as Delta's data skipping reads them; see :mod:`.skipping`."""
        from lakesieve.plugins.delta.skipping import delta_skipping

        return delta_skipping(self.ref, instant, column, key_type)

    def write(self, spark: SparkSession, df: DataFrame, options: WriteOptions) -> Instant:
        """Write ``df`` as one Delta commit; see :mod:`.write` for modes and limits."""
        from lakesieve.plugins.delta.write import write_table

        return write_table(spark, self.ref, df, options)

    def check_write(self, schema: pa.Schema | None, options: WriteOptions) -> None:
        """Refuse before Spark starts what :meth:`write` would refuse; see :mod:`.write_check`."""
        from lakesieve.plugins.delta.write_check import check_write

        check_write(self.ref, schema, options)


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``delta`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_open(path: str, options: Mapping[str, str]) -> DeltaFormat | None:
    """A :class:`DeltaFormat` when ``<path>/_delta_log/`` exists or the format is forced."""
    return DeltaFormat.open(path, options)
