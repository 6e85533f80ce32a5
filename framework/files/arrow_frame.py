"""Arrow tables as Spark DataFrames, every row kept.

pyspark 4.3's ``spark.createDataFrame(<pyarrow.Table>)`` silently drops every
chunk that follows an empty one: a table whose batches hold 2, 0 and 3 rows
becomes a DataFrame of 2 rows. Tables concatenated from per-file reads (a
file group emptied by a delete reads as an empty batch) have such chunks.
:func:`frame_of` hands Spark only the non-empty batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def without_empty_chunks(table: pa.Table) -> pa.Table:
    """``table`` with its empty record batches left out (no copy of the data)."""
    batches = table.to_batches()
    if all(b.num_rows for b in batches):
        return table
    return pa.Table.from_batches([b for b in batches if b.num_rows], schema=table.schema)


def frame_of(spark: SparkSession, table: pa.Table, schema: Any = None) -> DataFrame:
    """``spark.createDataFrame(table, schema)`` with every row of ``table``."""
    return spark.createDataFrame(without_empty_chunks(table), schema=schema)
