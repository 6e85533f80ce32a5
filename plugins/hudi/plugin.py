"""The Hudi format plugin: lakesieve's table format for Apache Hudi tables.

Registered through the ``lakesieve`` entry-point group
(``hudi = "lakesieve.plugins.hudi.plugin"``), exactly like a third-party
plugin.

Table metadata and merge-on-read merging come from hudi-rs (the ``hudi``
package, table versions 6, 8 and 9); Spark reads base files itself. Writing
goes through the plugin's own writer (copy-on-write and merge-on-read, table
version 6: :mod:`lakesieve.plugins.hudi.writer`).

A location is ``"<partition path>/<file group id>"`` (the id alone when the
table is not partitioned).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from lakesieve.plugins.hudi.identify import is_hudi_table
from lakesieve.sdk import TableFormatBase, hookimpl

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import (
        ChangeImageFiles,
        Changes,
        Instant,
        MinMaxSkipping,
        ReadUnit,
        Snapshot,
        WriteOptions,
    )
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

FORMAT = "hudi"

#: What ``lakesieve compare``'s native row of a Hudi table is.
NATIVE_SOURCE = (
    "approximation: Parquet footer min/max; Hudi's metadata-table column stats are not read"
)


class HudiFormat(TableFormatBase):
    """A Hudi table; see :class:`~lakesieve.sdk.TableFormat` for each method's contract."""

    name = FORMAT
    known_options = ("hoodie.", "storage.")

    @classmethod
    def identify(cls, path: str) -> bool:
        """``<path>/.hoodie/hoodie.properties`` exists; never raises."""
        return is_hudi_table(path)

    def timeline(self) -> list[Instant]:
        """Completed commit, deltacommit and replacecommit instants, oldest first.

        Instants of the active timeline only; ``sort_key`` and ``id`` are the
        instant's requested time.
        """
        from lakesieve.plugins.hudi import tables, timeline

        ht = tables.open_ref(self.ref)
        return [timeline.to_instant(i) for i in timeline.completed_data_instants(ht)]

    def schema(self, instant: str | None) -> pa.Schema:
        """The Arrow schema a snapshot read returns (``_hoodie_*`` first when populated).

        The latest table schema is returned for any instant (schema evolution
        is not tracked per instant); ``instant`` is checked to be a completed one.
        """
        from lakesieve.plugins.hudi import tables, timeline

        ht = tables.open_ref(self.ref)
        if instant is not None:
            timeline.resolve(timeline.completed_data_instants(ht), instant, self.path)
        return tables.read_schema(ht)

    def snapshot(self, instant: str | None) -> Snapshot:
        """One read unit per file group visible at ``instant`` (latest when ``None``)."""
        from lakesieve.plugins.hudi.snapshot import build_snapshot

        return build_snapshot(self.ref, instant)

    def changes(self, start: str | None, end: str) -> Changes:
        """Locations touched by instants strictly after the smaller bound up to the larger.

        The order of ``start`` and ``end`` does not change which locations are
        touched; see :mod:`lakesieve.plugins.hudi.changes`.
        """
        from lakesieve.plugins.hudi.changes import compute_changes

        return compute_changes(self.ref, start, end)

    def read(
        self,
        spark: SparkSession,
        units: Sequence[ReadUnit],
        instant: str | None,
        with_location: bool,
        columns: Sequence[str] | None = None,
    ) -> DataFrame:
        """A DataFrame of the rows of ``units`` as of ``instant``; see :mod:`.spark_read`."""
        from lakesieve.plugins.hudi.spark_read import read_units
        from lakesieve.sdk.spark import prepare

        prepare(spark, self.path, self.ref.options)
        return read_units(spark, self.ref, units, instant, with_location, columns)

    def parquet_files(
        self, units: Sequence[ReadUnit], instant: str | None = None
    ) -> list[tuple[str, int] | None]:
        """Per unit, the Parquet base file Spark's Parquet reader reads as it is, and its size.

        ``None`` for a unit that needs merging (log files) or is not Parquet.
        Such a file is read by column name in :meth:`spark_schema`'s types,
        exactly as :meth:`read` reads it.
        """
        from lakesieve.plugins.hudi import storage
        from lakesieve.plugins.hudi.unit_reader import is_parquet

        out: list[tuple[str, int] | None] = []
        for unit in units:
            size = unit.extra.get("base_file_size")
            if unit.log_files or not is_parquet(unit.base_file) or size is None:
                out.append(None)
            else:
                out.append((storage.join(self.path, unit.base_file or ""), int(size)))
        return out

    def spark_schema(
        self, spark: SparkSession, instant: str | None, units: Sequence[ReadUnit]
    ) -> StructType:
        """The Spark schema :meth:`read` gives ``units`` at ``instant`` (all columns, nullable)."""
        from lakesieve.plugins.hudi import tables
        from lakesieve.plugins.hudi.spark_read import sample_base_file, spark_schema

        arrow_schema = tables.read_schema(tables.open_ref(self.ref))
        return spark_schema(spark, self.path, arrow_schema, sample_base_file(units))

    def read_change_images(
        self,
        spark: SparkSession,
        images: Mapping[str, ChangeImageFiles],
        column: str,
        key_type: DataType,
    ) -> DataFrame | None:
        """``(key, location, count)`` rows of the changes in ``images`` (``None``: not for this column).

        See :mod:`lakesieve.plugins.hudi.change_read`.
        """
        from lakesieve.plugins.hudi.change_read import read_change_images

        return read_change_images(spark, self.ref, images, column, key_type)

    def native_skipping(self, instant: str | None, column: str, key_type: str) -> MinMaxSkipping:
        """Min/max of ``column`` in the Parquet footer of each file group's base file.

        Hudi's own data skipping reads the column stats of its metadata table;
        neither this plugin nor hudi-rs reads them (hudi-rs prunes by the same
        footers), so the row is labelled an approximation. A file group with
        log files is always read.
        """
        from lakesieve.sdk import MinMaxSkipping, footer_statistics

        units = self.snapshot(instant).units
        stats = footer_statistics(self.path, units, column, key_type)
        return MinMaxSkipping(key_type, stats, NATIVE_SOURCE)

    def read_unit(
        self, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one unit as Arrow batches in the table's read schema, without Spark."""
        from lakesieve.plugins.hudi.unit_reader import read_unit_batches

        return read_unit_batches(
            self.path, self.options, unit.base_file, unit.log_files, instant, None, columns
        )

    def write(self, spark: SparkSession, df: DataFrame, options: WriteOptions) -> Instant:
        """Write ``df`` as one commit with the plugin's own writer (table version 6).

        ``options.table_type`` picks copy-on-write (``cow``) or merge-on-read
        (``mor``) for a new table; see :mod:`lakesieve.plugins.hudi.writer`.

        Raises:
            WriteError: bad options or data (one line naming the problem).
        """
        from lakesieve.plugins.hudi.writer import write_table

        result: Instant = write_table(spark, self.path, df, options)
        return result

    def check_write(self, schema: pa.Schema | None, options: WriteOptions) -> None:
        """Refuse before Spark starts what :meth:`write` would refuse from options and types.

        Reads ``hoodie.properties`` only; see :func:`.writer.validate.precheck`.
        """
        from lakesieve.plugins.hudi.writer.validate import check_write

        check_write(self.path, schema, options)


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides the ``hudi`` format."""
    return [FORMAT]


@hookimpl
def lakesieve_format_open(path: str, options: Mapping[str, str]) -> HudiFormat | None:
    """A :class:`HudiFormat` when ``<path>/.hoodie/hoodie.properties`` exists or the format is forced."""
    return HudiFormat.open(path, options)
