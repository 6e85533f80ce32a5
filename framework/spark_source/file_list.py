"""A scan's answer as data: the Parquet files Spark reads as they are, with their sizes.

A format plugin that can say so answers two optional questions (both
answered by the Hudi plugin):

- ``parquet_files(units)``: per read unit, the data file (absolute path or
  URI) and its exact size in bytes that Spark's own Parquet reader reads as
  it is, by column name, to give the unit's rows; ``None`` for a unit that
  needs the format's own read (log files to merge, deletes to apply, columns
  renamed);
- ``spark_schema(spark, instant, units)``: the Spark schema the format's
  ``read`` gives those units (every column, typed as Spark reads the files).

When every selected unit is such a file and the columns a query needs are
typed as that schema types them, the planner hands the JVM the files and
their sizes (JSON, read by ``FileListScan.java``), and the JVM builds Spark's
Parquet scan over a file index made from those statuses: no listing, no
Spark job and no DataFrame per scan. Otherwise the scan reads the frame
``Table.read`` would read, as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.files.spark_scan import RAW_LOCAL_FILES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


def spark_schema(
    spark: SparkSession, fmt: Any, instant: str | None, units: Sequence[Any]
) -> StructType | None:
    """The format's Spark schema of ``units`` at ``instant``; ``None`` when it cannot say."""
    hook = getattr(fmt, "spark_schema", None)
    return None if hook is None else hook(spark, instant, units)


def plain_files(fmt: Any, units: Sequence[Any]) -> list[tuple[str, int]] | None:
    """Every unit's file and size, when each is read as it is; else ``None``."""
    hook = getattr(fmt, "parquet_files", None)
    if hook is None:
        return None
    found = hook(units)
    if len(found) != len(units) or any(f is None for f in found):
        return None
    return [(str(path), int(size)) for path, size in found]


def covers(data: StructType, wanted: StructType) -> bool:
    """Whether every wanted column is a column of ``data`` of the same type."""
    have = {f.name: f.dataType for f in data.fields}
    return all(have.get(f.name) == f.dataType for f in wanted.fields)


def files_answer(files: Sequence[tuple[str, int]], data: StructType) -> str:
    """The JSON the JVM reads: the files with their sizes, the schema they are read in, options."""
    return json.dumps(
        {
            "files": [[path, size] for path, size in files],
            "data": json.loads(data.json()),
            "options": RAW_LOCAL_FILES,
        }
    )
