"""Writing a Spark DataFrame as Parquet data files from Spark tasks, one file per group.

Format-neutral: the Delta and the Iceberg plugins both write their data files
this way and then commit them on the driver through their native library
(``deltalake``, ``pyiceberg``). Nothing but small per-file descriptions comes
back to the driver, so frames far larger than the driver's memory can be
written.

A **group** is one combination of partition values, of further ``group_by``
columns (the Iceberg plugin writes one position delete file per data file
this way) and, for a bucketed write, one bucket of the table's
:class:`~lakesieve.files.bucket_layout.BucketLayout` (``value mod N`` of an
integer column, or contiguous ranges of it). Every group is written as
exactly one file:

- with a bucket column or ``group_by`` columns the frame is repartitioned
  by the group columns, so each group lands in one task;
- otherwise the frame keeps its partitioning (a partition value found in two
  tasks gives two files, as in Spark's own writers);
- inside a task rows are sorted by group, so one Parquet writer is open at a
  time and rows are buffered into row groups of :data:`ROW_GROUP_ROWS`.

Files are named ``<directory>/<col>=<value>/.../part-<n>-<uuid>-c000.snappy.parquet``
relative to the table root, where ``<n>`` is the bucket (or the task number)
and partition values are escaped Hive-style.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lakesieve.files import paths
from lakesieve.files.batches import conform

if TYPE_CHECKING:
    from lakesieve.files.bucket_layout import BucketLayout
    from pyspark.sql import DataFrame

#: Rows buffered before a row group is written.
ROW_GROUP_ROWS = 262_144

#: Hive's name for a null partition value in a directory name.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_PART_PREFIX = "__lakesieve_part_"
_BUCKET = "__lakesieve_bucket"
_OUT_SCHEMA = (
    "path string, size_bytes bigint, num_records bigint, "
    "partition_values array<string>, bucket int, group_values array<string>, info string"
)
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

#: Describes one written file on the worker: ``(footer, relative path) -> JSON text``.
Describe = Callable[[pq.FileMetaData, str], str]


@dataclass(frozen=True)
class WrittenFile:
    """One data file written by a task.

    Attributes:
        path: path relative to the table root (plain, not URL-encoded).
        size_bytes: file size.
        num_records: rows in the file.
        partition_values: the partition column values as Spark casts them to
            string (``None`` for null), in the order of the layout's columns.
        bucket: the bucket of a bucketed write, else ``None``.
        group_values: the values of the ``group_by`` columns, as text.
        info: what the layout's ``describe`` callback returned (``""`` without one).
    """

    path: str
    size_bytes: int
    num_records: int
    partition_values: tuple[str | None, ...]
    bucket: int | None
    group_values: tuple[str | None, ...]
    info: str


@dataclass(frozen=True)
class FileLayout:
    """Where and how the data files of one write go.

    Attributes:
        root: the table root (local path or URI).
        directory: folder under the root that holds data files (``""`` or ``"data"``).
        partition_columns: columns whose values name sub-folders, in order.
        file_schema: the Arrow schema of the files; frame columns are selected
            by name and cast to it (columns the frame lacks are written as nulls).
        describe: optional callback run on the worker after each file is closed.
    """

    root: str
    directory: str
    partition_columns: tuple[str, ...]
    file_schema: pa.Schema
    describe: Describe | None = None


def escape_partition_value(value: str | None) -> str:
    """Hive-style directory escaping: every character outside ``[A-Za-z0-9._-]`` as ``%XX``."""
    if value is None:
        return NULL_PARTITION
    out = []
    for ch in value:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out) or NULL_PARTITION


def _run_starts(batch: pa.RecordBatch, key_names: Sequence[str]) -> list[int]:
    """Offsets in ``batch`` where the group key differs from the previous row (0 included)."""
    n = batch.num_rows
    if n == 0:
        return []
    same = np.ones(n - 1, dtype=bool)
    for name in key_names:
        col = batch.column(batch.schema.get_field_index(name))
        left, right = col.slice(0, n - 1), col.slice(1)
        equal = pc.fill_null(pc.equal(left, right), False)
        both_null = pc.and_(pc.is_null(left), pc.is_null(right))
        same &= np.asarray(pc.or_(equal, both_null).to_numpy(zero_copy_only=False), dtype=bool)
    return [0, *(np.flatnonzero(~same) + 1).tolist()]


class _GroupFile:
    """One open output file of a task."""

    def __init__(
        self,
        layout: FileLayout,
        parts: tuple[str | None, ...],
        groups: tuple[str | None, ...],
        bucket: int | None,
        number: int,
    ) -> None:
        self.layout = layout
        self.parts = parts
        self.groups = groups
        self.bucket = bucket
        folders = [
            f"{escape_partition_value(c)}={escape_partition_value(v)}"
            for c, v in zip(layout.partition_columns, self.parts, strict=True)
        ]
        name = f"part-{number:05d}-{uuid.uuid4()}-c000.snappy.parquet"
        self.rel = "/".join(p for p in (layout.directory, *folders, name) if p)
        self.fs, self.abs = paths.filesystem_and_path(paths.join(layout.root, self.rel))
        parent = self.abs.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        self.stream = self.fs.open_output_stream(self.abs)
        self.writer = pq.ParquetWriter(self.stream, layout.file_schema, compression="snappy")
        self.buffer: list[pa.Table] = []
        self.buffered = 0
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        self.buffer.append(table)
        self.buffered += table.num_rows
        if self.buffered >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            merged = pa.concat_tables(self.buffer).combine_chunks()
            self.writer.write_table(merged, row_group_size=max(merged.num_rows, 1))
            self.rows += merged.num_rows
        self.buffer, self.buffered = [], 0

    def close(self) -> dict[str, object]:
        self._flush()
        self.writer.close()
        self.stream.close()
        size = self.fs.get_file_info(self.abs).size
        info = ""
        if self.layout.describe is not None:
            with self.fs.open_input_file(self.abs) as handle:
                info = self.layout.describe(pq.read_metadata(handle), self.rel)
        return {
            "path": self.rel,
            "size_bytes": int(size or 0),
            "num_records": self.rows,
            "partition_values": list(self.parts),
            "bucket": self.bucket,
            "group_values": list(self.groups),
            "info": info,
        }


def _write_task(
    layout: FileLayout,
    key_names: tuple[str, ...],
    n_groups: int,
    bucketed: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows arrive sorted by group; write one file per group."""
    import pyspark

    task = pyspark.TaskContext.get()
    number = task.partitionId() if task is not None else 0
    n_parts = len(layout.partition_columns)
    current: _GroupFile | None = None
    current_key: tuple[object, ...] | None = None
    done: list[dict[str, object]] = []
    for batch in batches:
        starts = _run_starts(batch, key_names)
        for i, start in enumerate(starts):
            stop = starts[i + 1] if i + 1 < len(starts) else batch.num_rows
            piece = batch.slice(start, stop - start)
            key = tuple(piece.column(piece.schema.get_field_index(k))[0].as_py() for k in key_names)
            if current is None or key != current_key:
                if current is not None:
                    done.append(current.close())
                text = tuple(None if v is None else str(v) for v in key)
                parts, groups = text[:n_parts], text[n_parts : n_parts + n_groups]
                bucket = int(key[-1]) if bucketed else None  # type: ignore[call-overload]
                current = _GroupFile(
                    layout, parts, groups, bucket, number if bucket is None else bucket
                )
                current_key = key
            current.add(pa.Table.from_batches([conform(piece, layout.file_schema)]))
    if current is not None:
        done.append(current.close())
    if done:
        yield pa.RecordBatch.from_pylist(
            done,
            schema=pa.schema(
                [
                    ("path", pa.string()),
                    ("size_bytes", pa.int64()),
                    ("num_records", pa.int64()),
                    ("partition_values", pa.list_(pa.string())),
                    ("bucket", pa.int32()),
                    ("group_values", pa.list_(pa.string())),
                    ("info", pa.string()),
                ]
            ),
        )


def write_files(
    df: DataFrame,
    layout: FileLayout,
    bucket: BucketLayout | None = None,
    group_by: Sequence[str] = (),
    order_by: Sequence[str] = (),
) -> list[WrittenFile]:
    """Write ``df`` as Parquet files, one per group, and describe them.

    Args:
        df: the rows to write.
        layout: folders, partition columns and file schema.
        bucket: the layout of a bucketed write (one file per bucket).
        group_by: further columns that split files (not folders); like a
            bucket, they repartition the frame so a group is one file.
        order_by: columns that order rows inside each file.

    Returns:
        One :class:`WrittenFile` per file written (none for an empty frame).
    """
    from pyspark.sql import functions as F

    keys: list[str] = []
    extra = []
    for i, column in enumerate(layout.partition_columns):
        extra.append(F.col(f"`{column}`").cast("string").alias(f"{_PART_PREFIX}{i}"))
        keys.append(f"{_PART_PREFIX}{i}")
    keys.extend(group_by)
    if bucket is not None:
        extra.append(bucket.value().alias(_BUCKET))
        keys.append(_BUCKET)
    frame = df.select("*", *extra) if extra else df
    if bucket is not None:
        frame = frame.repartition(bucket.buckets, *keys)
    elif group_by:
        frame = frame.repartition(*keys)
    if keys or order_by:
        frame = frame.sortWithinPartitions(*keys, *order_by)
    body = functools.partial(_write_task, layout, tuple(keys), len(group_by), bucket is not None)
    rows = frame.mapInArrow(body, _OUT_SCHEMA).collect()
    return [
        WrittenFile(
            path=r["path"],
            size_bytes=int(r["size_bytes"]),
            num_records=int(r["num_records"]),
            partition_values=tuple(r["partition_values"] or ()),
            bucket=r["bucket"],
            group_values=tuple(r["group_values"] or ()),
            info=r["info"] or "",
        )
        for r in rows
    ]
