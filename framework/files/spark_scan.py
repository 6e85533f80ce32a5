"""Scanning Parquet data files with Spark's own reader, for any table format.

Spark's Parquet reader scans many data files in one scan. When a frame needs
per-file facts (the location, partition values, deleted rows), each row's
file is recognised by ``_metadata.file_name`` (URL-decoded: Spark reports it
encoded, :func:`decoded_file_name`) and joined with a small broadcast frame
keyed by :data:`FILE_KEY`. Deleted rows are removed by an anti-join on
(:data:`FILE_KEY`, :data:`ROW_KEY`) with a frame of deleted positions
(:func:`deleted_frame`).

Data file names are unique in practice (writers put a UUID in them); if two
units share a name, :func:`unique_name_rounds` splits them into separate
scans that are unioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.files.arrow_frame import frame_of
from lakesieve.files.paths import file_name
from lakesieve.model import LOCATION_COLUMN, ReadUnit

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: Column carrying a row's data file name in a scan.
FILE_KEY = "__lakesieve_file"
#: Column carrying a row's position in its data file in a scan.
ROW_KEY = "__lakesieve_row"

#: Deleted rows up to which the deleted-position frame is broadcast.
BROADCAST_DELETES = 2_000_000

#: Data source options that read local files without Hadoop's ``.crc`` side files:
#: other engines rewrite or copy data files without them (the formats' own
#: readers never look at them), and a stale one fails the read.
RAW_LOCAL_FILES = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}


def parquet_reader(spark: SparkSession, schema: StructType | str) -> Any:
    """``spark.read`` with ``schema`` for Parquet data files (``.crc`` side files ignored)."""
    return spark.read.options(**RAW_LOCAL_FILES).schema(schema)


def decoded_file_name() -> Column:
    """Spark's ``_metadata.file_name``, URL-decoded (``+`` kept literally)."""
    from pyspark.sql import functions as F

    return F.url_decode(F.replace(F.col("_metadata.file_name"), F.lit("+"), F.lit("%2B")))


def unique_name_rounds(units: Sequence[ReadUnit]) -> list[list[ReadUnit]]:
    """Split ``units`` into rounds inside which file names are unique."""
    rounds: list[list[ReadUnit]] = []
    names: list[set[str]] = []
    for unit in units:
        name = file_name(unit.base_file or unit.location)
        for i, taken in enumerate(names):
            if name not in taken:
                taken.add(name)
                rounds[i].append(unit)
                break
        else:
            names.append({name})
            rounds.append([unit])
    return rounds


def empty_frame(spark: SparkSession, full: StructType, with_location: bool) -> DataFrame:
    """An empty frame of the table's schema (and the location column when asked)."""
    from pyspark.sql.types import StringType, StructField, StructType

    fields = list(full.fields)
    if with_location:
        fields.append(StructField(LOCATION_COLUMN, StringType(), True))
    return spark.createDataFrame([], StructType(fields))


def deleted_frame(
    spark: SparkSession, deleted: dict[str, np.ndarray], units: Sequence[ReadUnit]
) -> DataFrame | None:
    """A frame of (file name, row index) for every deleted row of ``units``, or ``None``.

    Args:
        deleted: sorted deleted row positions per unit location.
    """
    from pyspark.sql import functions as F

    names, rows = [], []
    for unit in units:
        positions = deleted.get(unit.location)
        if positions is not None and len(positions):
            names.append(pa.array([file_name(unit.base_file or unit.location)] * len(positions)))
            rows.append(pa.array(positions, type=pa.int64()))
    if not names:
        return None
    arrow = pa.table({FILE_KEY: pa.concat_arrays(names), ROW_KEY: pa.concat_arrays(rows)})
    frame = frame_of(spark, arrow)
    return F.broadcast(frame) if arrow.num_rows <= BROADCAST_DELETES else frame
