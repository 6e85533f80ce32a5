"""An index delta read from change data files instead of the file groups themselves.

For the locations :func:`lakesieve.plugins.hudi.changes.compute_changes`
reports in ``Changes.change_images``, Spark tasks read the change data files
(:mod:`lakesieve.plugins.hudi.cdc`) and yield ``(key, location, count)``
rows: ``-1`` for the indexed column's value in every before image, ``+1`` in
every after image. A task refuses (raises) when a location's files hold a
different number of change records than its write stats recorded, so a lost
or truncated file can never shrink a delta; the caller then reads the
locations another way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve.model import ChangeImageFiles, TableRef
from lakesieve.plugins.hudi import storage
from lakesieve.plugins.hudi.cdc import CdcFormatError, image_values

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


class ImageReader:
    """``mapInArrow`` body: the signed column values of each location's change data files."""

    def __init__(self, root: str, column: str, key_type: pa.DataType) -> None:
        self.root = root
        self.column = column
        self.key_type = key_type

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Yield ``(key, location, count)`` batches, one per described location."""
        fs, root = storage.resolve(self.root)
        for batch in batches:
            for row in batch.to_pylist():
                yield self._location(fs, root, row)

    def _location(self, fs: Any, root: str, row: dict[str, Any]) -> pa.RecordBatch:
        location, expected = str(row["location"]), row["records"]
        keys: list[Any] = []
        counts: list[int] = []
        records = 0
        for rel in row["files"]:
            before, after, held = image_values(
                storage.read_bytes(fs, storage.join(root, rel)), self.column
            )
            records += held
            keys += before + after
            counts += [-1] * len(before) + [1] * len(after)
        if expected is not None and expected >= 0 and records != expected:
            raise CdcFormatError(
                f"change data of {location} holds {records} records, its commits wrote {expected}"
            )
        return pa.RecordBatch.from_arrays(
            [
                pa.array(keys, self.key_type),
                pa.array([location] * len(keys), pa.string()),
                pa.array(counts, pa.int64()),
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
    described = spark.createDataFrame(rows, "location string, files array<string>, records long")
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    described = described.repartition(min(len(rows), parallelism))
    schema = T.StructType(
        [
            T.StructField("key", key_type, True),
            T.StructField("location", T.StringType(), False),
            T.StructField("count", T.LongType(), False),
        ]
    )
    body = ImageReader(table.path, column, to_arrow_type(key_type))
    return map_in_arrow(described, body, schema)
