"""Turning Delta read units into one Spark DataFrame.

Spark's own Parquet reader (:func:`~lakesieve.sdk.spark.parquet_reader`) scans every
data file in one scan, with the table's Spark schema minus the partition
columns (Delta keeps those out of the files), columns named by their
physical names under column mapping. When the frame needs per-file facts --
the location, partition values or deletion vectors -- each row's file is
recognised by ``_metadata.file_name`` (URL-decoded: Spark reports it encoded)
and joined with a small broadcast frame of (file name, location, partition
values). Rows a deletion vector deletes are removed by an anti-join on (file
name, ``_metadata.row_index``) with the deleted positions, which delta-rs
decodes on the driver.

Data file names are unique in practice (writers put a UUID in them); if two
units share a name, they are read in separate scans and unioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from lakesieve.plugins.delta import deletion_vectors, schema, tables, timeline
from lakesieve.sdk import LOCATION_COLUMN, ReadUnit, TableRef, paths
from lakesieve.sdk.spark import (
    FILE_KEY,
    ROW_KEY,
    decoded_file_name,
    deleted_frame,
    empty_frame,
    parquet_reader,
    unique_name_rounds,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def _read_round(
    spark: SparkSession,
    root: str,
    full: StructType,
    part_cols: list[str],
    physical: dict[str, str],
    units: Sequence[ReadUnit],
    deleted: dict[str, np.ndarray],
    with_location: bool,
) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    data_fields = [f for f in full.fields if f.name not in part_cols]
    file_schema = StructType(
        [StructField(physical.get(f.name, f.name), f.dataType, True) for f in data_fields]
    )
    scan_paths = [paths.join(root, u.base_file or u.location) for u in units]
    df = parquet_reader(spark, file_schema).parquet(*scan_paths)
    data_columns = [F.col(f"`{physical.get(f.name, f.name)}`").alias(f.name) for f in data_fields]
    dropped = deleted_frame(spark, deleted, units)
    if not (with_location or part_cols or dropped is not None):
        return df.select(*data_columns).select(*[F.col(f"`{n}`") for n in full.names])

    scanned = df.select(
        *data_columns,
        decoded_file_name().alias(FILE_KEY),
        *([F.col("_metadata.row_index").alias(ROW_KEY)] if dropped is not None else []),
    )
    if dropped is not None:
        scanned = scanned.join(dropped, on=[FILE_KEY, ROW_KEY], how="left_anti")
    files_schema = StructType(
        [
            StructField(FILE_KEY, StringType(), False),
            StructField(LOCATION_COLUMN, StringType(), True),
            *[StructField(c, StringType(), True) for c in part_cols],
        ]
    )
    files = spark.createDataFrame(
        [
            (
                paths.file_name(u.base_file or u.location),
                u.location,
                *[u.partition_values.get(c) for c in part_cols],
            )
            for u in units
        ],
        files_schema,
    )
    joined = scanned.join(F.broadcast(files), on=FILE_KEY, how="inner")
    types = {f.name: f.dataType for f in full.fields}
    columns = [
        F.col(f"`{n}`").cast(types[n]).alias(n) if n in part_cols else F.col(f"`{n}`")
        for n in full.names
    ]
    if with_location:
        columns.append(F.col(LOCATION_COLUMN))
    return joined.select(*columns)


def read_units(
    spark: SparkSession,
    table: TableRef,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame:
    """The rows of ``units`` as of ``instant`` (latest when ``None``), deletion vectors applied.

    Raises:
        InstantNotFoundError: ``instant`` is not a committed version.
        DeltaFeatureError: the table needs a reader feature lakesieve cannot honour.
    """
    from pyspark.sql.types import StructType

    version = timeline.resolve(table, instant)
    if version is None:
        return empty_frame(spark, StructType([]), with_location)
    dt = tables.open_table(table, str(version))
    tables.check_readable(dt, table.path)
    full = schema.spark_schema(dt)
    if not units:
        return empty_frame(spark, full, with_location)
    part_cols = schema.partition_columns(dt)
    physical = schema.physical_names(dt)
    needs_dv = any(u.delete_files for u in units)
    deleted = deletion_vectors.deleted_rows(dt) if needs_dv else {}
    parts = [
        _read_round(spark, table.path, full, part_cols, physical, group, deleted, with_location)
        for group in unique_name_rounds(units)
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
