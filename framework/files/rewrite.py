"""Copy-on-write deletes and upserts by record key, planned in Spark.

Format-neutral: the Delta and the Iceberg plugins hand over the table's rows
as of the latest instant (read through their own read hook, deletes already
applied, with the location column) and the frame being written; this module
says which locations a commit must replace and which rows the replacement
files must hold. Only the list of touched locations comes to the driver.

- **delete**: a location is touched when it holds a row whose key is among
  the frame's keys; its replacement holds its other rows.
- **upsert**: as delete, and the frame's rows are written too. For a
  bucketed table every location holding a row of a bucket the frame writes
  to is touched as well, so that a bucket stays one file.

Keys are compared with SQL equality: a null key component never matches.
With a ``precombine`` column, duplicate keys in the frame keep the row with
the greatest value; without one, one of them is kept arbitrarily.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakesieve.errors import WriteError
from lakesieve.model import LOCATION_COLUMN

if TYPE_CHECKING:
    from lakesieve.files.bucket_layout import BucketLayout
    from pyspark.sql import DataFrame

_BUCKET = "__lakesieve_rewrite_bucket"


@dataclass
class Rewrite:
    """What a copy-on-write commit replaces and writes.

    Attributes:
        touched: locations to remove from the table.
        rows: rows to write as new files (the table's columns, no location).
    """

    touched: list[str]
    rows: DataFrame


def _quoted(names: Sequence[str]) -> list[str]:
    return [f"`{n}`" for n in names]


def dedupe(frame: DataFrame, keys: Sequence[str], precombine: str | None) -> DataFrame:
    """One row per key: the greatest ``precombine`` value wins (any row without one)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not precombine:
        return frame.dropDuplicates(list(keys))
    order = Window.partitionBy(*_quoted(keys)).orderBy(F.col(f"`{precombine}`").desc_nulls_last())
    ranked = frame.withColumn("__lakesieve_rank", F.row_number().over(order))
    return ranked.where(F.col("__lakesieve_rank") == 1).drop("__lakesieve_rank")


def check_keys(frame: DataFrame, keys: Sequence[str], table_path: str) -> None:
    """Refuse a delete or upsert without record key columns present in the frame.

    Raises:
        WriteError: naming the table and the missing columns.
    """
    if not keys:
        raise WriteError(
            f"cannot delete or upsert into table {table_path}: no record key given ({{argument}})",
            argument="record_key",
        )
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise WriteError(
            f"cannot write table {table_path}: record key column(s) {', '.join(missing)} "
            "are not in the frame"
        )


def plan_rewrite(
    table_rows: DataFrame,
    frame: DataFrame,
    keys: Sequence[str],
    mode: str,
    bucket: BucketLayout | None = None,
    precombine: str | None = None,
) -> Rewrite:
    """Plan a copy-on-write ``delete`` or ``upsert``.

    Args:
        table_rows: the table's current rows with the location column.
        frame: the rows written (its columns are the table's, cast to its types).
        keys: record key columns.
        mode: ``"delete"`` or ``"upsert"``.
        bucket: the layout of a bucketed table.
        precombine: column deciding between frame rows sharing a key.
    """
    from pyspark.sql import functions as F

    incoming = dedupe(frame, keys, precombine) if mode == "upsert" else frame
    key_frame = frame.select(*_quoted(keys)).dropna().distinct()
    hits = table_rows.join(key_frame, on=list(keys), how="left_semi").select(LOCATION_COLUMN)
    if mode == "upsert" and bucket is not None:
        layout = bucket

        def bucket_of(df: DataFrame) -> DataFrame:
            return df.withColumn(_BUCKET, layout.value())

        wanted = bucket_of(incoming).select(_BUCKET).distinct()
        same_bucket = (
            bucket_of(table_rows).join(wanted, on=_BUCKET, how="left_semi").select(LOCATION_COLUMN)
        )
        hits = hits.union(same_bucket)
    touched = sorted({row[0] for row in hits.distinct().collect()})
    spark = table_rows.sparkSession
    chosen = spark.createDataFrame([(loc,) for loc in touched], f"{LOCATION_COLUMN} string")
    kept = (
        table_rows.join(F.broadcast(chosen), on=LOCATION_COLUMN, how="left_semi")
        .join(key_frame, on=list(keys), how="left_anti")
        .drop(LOCATION_COLUMN)
    )
    rows = kept if mode == "delete" else kept.unionByName(incoming.select(*_quoted(kept.columns)))
    return Rewrite(touched=touched, rows=rows)
