"""A scan's answer as data: the Parquet files Spark reads as they are, with their sizes.

A format plugin that can say so implements
:class:`~lakesieve.contract.protocols.ReadsParquetFiles` (the Hudi, Delta and
Iceberg plugins do):

- ``parquet_files(units, instant)``: per read unit, the data file (absolute
  path or URI) and its exact size in bytes that Spark's own Parquet reader
  reads as it is, by column name, to give the unit's rows; ``None`` for a
  unit that needs the format's own read (log files to merge, deletes or a
  deletion vector to apply, columns renamed or mapped);
- ``spark_schema(spark, instant, units)``: the Spark schema the format's
  ``read`` gives those units (every column, typed as Spark reads the files).

The planner asks them once per table instant and keeps the answer as an
:class:`InstantFiles` (defined in :mod:`lakesieve.query.parquet_read`, which
``Table.read`` shares): the JSON of every such file (read by
``FileTable.java``, sent to the driver JVM once, under a digest of its text)
and each unit's position in it. A scan whose selected units are all such files, when the
columns it needs are typed as that schema types them, is answered with the
token and the positions read (:func:`selection`), and the JVM builds Spark's
Parquet scan over a file index made from those statuses: no listing, no Spark
job, no DataFrame and no file list per scan. A scan that selects any unit
needing the format's own read (a table may hold both kinds) reads the frame
``Table.read`` would read for all of them, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakesieve.query.parquet_read import InstantFiles, instant_files, selection, spark_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["InstantFiles", "covers", "instant_files", "selection", "spark_schema"]


def covers(data: StructType, wanted: StructType) -> bool:
    """Whether every wanted column is a column of ``data`` of the same type."""
    have = {f.name: f.dataType for f in data.fields}
    return all(have.get(f.name) == f.dataType for f in wanted.fields)
