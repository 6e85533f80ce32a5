"""Turning Iceberg read units into one Spark DataFrame.

Spark's own Parquet reader scans every data file (by the path the metadata
gives) with the snapshot's schema; Iceberg keeps partition source columns
in the data files, so nothing is added back. When the frame needs per-file
facts -- the location, or position deletes -- each row's file is recognised
by its URL-decoded ``_metadata.file_name`` and joined with a small broadcast
frame of (file name, location, data file path). Position delete files are
read by Spark too: their ``(file_path, pos)`` rows are mapped to file names
through the same small frame and removed with an anti-join on
``_metadata.row_index``. Delete kinds that cannot be applied refuse the
read (:mod:`lakesieve.plugins.iceberg.deletes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakesieve.model import LOCATION_COLUMN, ReadUnit, TableRef
from lakesieve.plugins.delta.spark_read import (
    FILE_KEY,
    ROW_KEY,
    decoded_file_name,
    empty_frame,
    file_name,
    unique_name_rounds,
)
from lakesieve.plugins.iceberg import catalog, schema, timeline
from lakesieve.plugins.iceberg.deletes import FILE_PATH, POS, position_delete_paths

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: Column carrying a row's position in its data file, when asked for.
POSITION_COLUMN = "__lakesieve_pos"
#: Column carrying a row's data file path as the metadata writes it, when asked for.
FILE_PATH_COLUMN = "__lakesieve_file_path"


def data_path(unit: ReadUnit) -> str:
    """The data file path of a unit as the metadata writes it."""
    return unit.extra.get("file_path") or unit.base_file or unit.location


def _read_round(
    spark: SparkSession,
    full: StructType,
    units: Sequence[ReadUnit],
    delete_paths: list[str],
    with_location: bool,
    with_position: bool,
) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    df = spark.read.schema(full).parquet(*[data_path(u) for u in units])
    columns = [F.col(f"`{n}`") for n in full.names]
    if not (with_location or with_position or delete_paths):
        return df.select(*columns)
    need_rows = with_position or bool(delete_paths)
    scanned = df.select(
        *columns,
        decoded_file_name().alias(FILE_KEY),
        *([F.col("_metadata.row_index").alias(ROW_KEY)] if need_rows else []),
    )
    files = F.broadcast(
        spark.createDataFrame(
            [(file_name(data_path(u)), u.location, data_path(u)) for u in units],
            StructType(
                [
                    StructField(FILE_KEY, StringType(), False),
                    StructField(LOCATION_COLUMN, StringType(), True),
                    StructField(FILE_PATH_COLUMN, StringType(), True),
                ]
            ),
        )
    )
    if delete_paths:
        positions = (
            spark.read.schema(f"{FILE_PATH} string, {POS} bigint")
            .parquet(*delete_paths)
            .join(files, files[FILE_PATH_COLUMN] == F.col(FILE_PATH), "inner")
            .select(F.col(FILE_KEY), F.col(POS).alias(ROW_KEY))
            .distinct()
        )
        scanned = scanned.join(positions, on=[FILE_KEY, ROW_KEY], how="left_anti")
    joined = scanned.join(files, on=FILE_KEY, how="inner")
    out = [F.col(f"`{n}`") for n in full.names]
    if with_location:
        out.append(F.col(LOCATION_COLUMN))
    if with_position:
        out.extend([F.col(FILE_PATH_COLUMN), F.col(ROW_KEY).alias(POSITION_COLUMN)])
    return joined.select(*out)


def read_units(
    spark: SparkSession,
    ref: TableRef,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
    with_position: bool = False,
) -> DataFrame:
    """The rows of ``units`` as of ``instant`` (current when ``None``), position deletes applied.

    Args:
        spark: the session.
        ref: the table.
        units: read units of the snapshot at ``instant``.
        instant: snapshot id.
        with_location: add the location column.
        with_position: also add each row's data file path and position
            (:data:`FILE_PATH_COLUMN`, :data:`POSITION_COLUMN`), for writers of
            position deletes.

    Raises:
        InstantNotFoundError: ``instant`` is not a snapshot on the timeline.
        IcebergFeatureError: a delete kind or a schema change lakesieve cannot honour.
    """
    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    schema.check_no_renames(table.metadata, ref.path)
    chosen = schema.schema_at(table.metadata, snap.schema_id if snap is not None else None)
    full = schema.spark_schema(schema.arrow_schema(chosen, ref.path))
    if not units or snap is None:
        return empty_frame(spark, full, with_location)
    delete_paths = position_delete_paths(units, ref.path)
    parts = [
        _read_round(spark, full, group, delete_paths, with_location, with_position)
        for group in unique_name_rounds(units)
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
