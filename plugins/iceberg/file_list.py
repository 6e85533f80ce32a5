"""Which Iceberg data files Spark's own Parquet reader reads as they are.

``format("lakesieve")`` hands such files to Spark's Parquet scan as data (no
listing, no DataFrame per scan). An Iceberg data file qualifies when reading
it by column name in the snapshot's Spark schema gives exactly the unit's
rows, as :func:`lakesieve.plugins.iceberg.spark_read.read_units` reads them: a
Parquet file with no delete files, of a table whose fields never changed name
or id (:func:`~lakesieve.plugins.iceberg.columns.by_name_is_exact`), and with
no identity partition value (a file may lack its partition column; the merged
read fills it in). Any other unit keeps the format's merged read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakesieve.plugins.iceberg import catalog, columns, schema, timeline
from lakesieve.plugins.iceberg.snapshot import read_path
from lakesieve.sdk import ReadUnit, TableRef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


def _plain(unit: ReadUnit) -> bool:
    return (
        not unit.delete_files
        and unit.extra.get("file_format", "parquet") == "parquet"
        and not columns.decode_identity(unit.extra.get(columns.IDENTITY_KEY))
        and unit.size_bytes > 0
    )


def parquet_files(
    ref: TableRef, units: Sequence[ReadUnit], instant: str | None
) -> list[tuple[str, int] | None]:
    """Per unit, its data file and exact size when Spark reads it as it is; else ``None``."""
    if not units:
        return []
    table = catalog.load_for_read(ref.path, ref.options)
    if not columns.by_name_is_exact(table.metadata):
        return [None] * len(units)
    # without delete files a unit's size is its data file's exact size
    return [(read_path(u), u.size_bytes) if _plain(u) else None for u in units]


def spark_schema(spark: SparkSession, ref: TableRef, instant: str | None) -> StructType | None:
    """The Spark schema :func:`~lakesieve.plugins.iceberg.spark_read.read_units` gives at ``instant``.

    Raises:
        IcebergFeatureError: a column type Spark cannot read, or two names equal but for case.
    """
    from lakesieve.plugins.iceberg.spark_read import check_spark_names

    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    chosen = schema.schema_at(table.metadata, snap.schema_id if snap is not None else None)
    arrow = schema.arrow_schema(chosen, ref.path)
    check_spark_names(spark, arrow.names, ref.path)
    return schema.spark_schema(arrow)
