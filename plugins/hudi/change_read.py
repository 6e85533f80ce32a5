"""An index delta read from change data files instead of the file groups themselves.

For the locations :func:`lakesieve.plugins.hudi.changes.compute_changes`
reports in ``Changes.change_images``, Spark tasks read the change data files
(:mod:`lakesieve.plugins.hudi.cdc`) and yield ``(key, location, count)``
rows: ``-1`` for the indexed column's value in every before image, ``+1`` in
every after image, summed per ``(key, location)`` in the task that reads all
of the location's files (pairs summing to 0 dropped; for floating-point keys
the sums are by bit pattern, so the caller still sums them by Spark's
equality, which puts ``-0.0`` with ``0.0``). A task refuses (raises) when a location's files hold a
different number of change records than its write stats recorded, so a lost
or truncated file can never shrink a delta; the caller then reads the
locations another way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.plugins.hudi import storage
from lakesieve.plugins.hudi.cdc import (
    CDC_DATA_BLOCK,
    CdcFormatError,
    NotVectorizable,
    records_column,
)
from lakesieve.plugins.hudi.cdc_columns import blocks_column
from lakesieve.plugins.hudi.writer.log_block import SCHEMA, iter_blocks
from lakesieve.sdk import ChangeImageFiles, TableRef
from lakesieve.sdk.spark import dealt_for_slices, default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

#: Spark types whose values the change images carry exactly as Spark reads them.
_KEY_TYPES = (
    "ByteType",
    "ShortType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "StringType",
    "BooleanType",
    "DateType",
    "DecimalType",
)


def as_key(values: pa.Array, key_type: pa.DataType) -> pa.Array:
    """Decoded values as the column's Arrow type (a ``date`` arrives as days since the epoch)."""
    if pa.types.is_date32(key_type) and pa.types.is_integer(values.type):
        return values.cast(pa.int32()).view(pa.date32())
    return values.cast(key_type)


class ImageReader:
    """``mapInArrow`` body: the signed column values of the described locations' change data files.

    Every block of a task's files is decoded together, per writer schema
    (:func:`~lakesieve.plugins.hudi.cdc_columns.blocks_column`, or record by
    record where that cannot).
    """

    def __init__(self, root: str, column: str, key_type: pa.DataType) -> None:
        self.root = root
        self.column = column
        self.key_type = key_type

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Yield one ``(key, location, count)`` batch for the task's described locations."""
        rows = [row for batch in batches for row in batch.to_pylist()]
        if rows:
            yield self.read(rows)

    def read(self, rows: list[dict[str, Any]]) -> pa.RecordBatch:
        """The batch for ``rows`` (``location``, ``files``, ``records``)."""
        fs, root = storage.resolve(self.root)
        groups: dict[str, tuple[list[bytes], list[int]]] = {}
        for i, row in enumerate(rows):
            for rel in row["files"]:
                blocks = 0
                for block in iter_blocks(storage.read_bytes(fs, storage.join(root, rel))):
                    if block.block_type != CDC_DATA_BLOCK:
                        raise CdcFormatError(f"log block of type {block.block_type} in {rel}")
                    contents, owners = groups.setdefault(block.header.get(SCHEMA, ""), ([], []))
                    contents.append(block.content)
                    owners.append(i)
                    blocks += 1
                if blocks == 0:
                    raise CdcFormatError(f"CDC file {rel} holds no block")
        keys: list[pa.Array] = []
        owners_of: list[np.ndarray] = []
        signs: list[np.ndarray] = []
        records = np.zeros(len(rows), dtype=np.int64)
        for schema_json, (contents, owners) in groups.items():
            writer = json.loads(schema_json)
            try:
                col = blocks_column(contents, writer, self.column)
            except NotVectorizable:
                col = records_column(contents, writer, self.column)
            owner = np.asarray(owners, dtype=np.int64)[col.record_block]
            records += np.bincount(owner, minlength=len(rows))
            for present, values, sign in (
                (col.has_before, col.before, -1),
                (col.has_after, col.after, 1),
            ):
                keys.append(as_key(values, self.key_type))
                owners_of.append(owner[present])
                signs.append(np.full(int(present.sum()), sign, dtype=np.int64))
        for i, row in enumerate(rows):
            expected = row["records"]
            if expected is not None and expected >= 0 and records[i] != expected:
                raise CdcFormatError(
                    f"change data of {row['location']} holds {records[i]} records, "
                    f"its commits wrote {expected}"
                )
        locations = np.asarray([str(r["location"]) for r in rows], dtype=object)
        signed = pa.table(
            {
                "key": pa.concat_arrays(keys) if keys else pa.array([], self.key_type),
                "owner": np.concatenate(owners_of) if owners_of else np.zeros(0, np.int64),
                "count": np.concatenate(signs) if signs else np.zeros(0, np.int64),
            }
        )
        # every file of a location is read by this task: its sums are complete here
        summed = signed.group_by(["key", "owner"]).aggregate([("count", "sum")])
        summed = summed.filter(pc.not_equal(summed["count_sum"], 0))
        owner = summed["owner"].to_numpy()
        return pa.RecordBatch.from_arrays(
            [
                summed["key"].combine_chunks().cast(self.key_type),
                pa.array(locations[owner].tolist(), pa.string()),
                summed["count_sum"].combine_chunks().cast(pa.int64()),
            ],
            names=["key", "location", "count"],
        )


def read_change_images(
    spark: SparkSession,
    table: TableRef,
    images: Mapping[str, ChangeImageFiles],
    column: str,
    key_type: DataType,
) -> DataFrame | None:
    """``(key, location, count)`` rows of the changes recorded for ``images``' locations.

    ``None`` when the images do not carry ``column`` exactly as a read of the
    table returns it: a type outside :data:`_KEY_TYPES`, or a partition
    column (whose value a table may keep in its paths only); the caller then
    reads the locations another way.
    """
    from lakesieve.plugins.hudi import tables
    from lakesieve.plugins.hudi.spark_read import map_in_arrow
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_type

    if type(key_type).__name__ not in _KEY_TYPES:
        return None
    if column in tables.table_config(tables.open_ref(table)).partition_fields:
        return None
    rows = [
        (loc, list(img.files), -1 if img.records is None else img.records)
        for loc, img in sorted(images.items())
    ]
    # a local relation, cut into slices without a shuffle: largest locations dealt across them
    rows = dealt_for_slices(rows, default_parallelism(spark), lambda r: r[2])
    described = spark.createDataFrame(rows, "location string, files array<string>, records long")
    schema = T.StructType(
        [
            T.StructField("key", key_type, True),
            T.StructField("location", T.StringType(), False),
            T.StructField("count", T.LongType(), False),
        ]
    )
    body = ImageReader(table.path, column, to_arrow_type(key_type))
    return map_in_arrow(described, body, schema)
