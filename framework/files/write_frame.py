"""Checking and conforming the frame of a write, for formats written copy-on-write.

The Delta and the Iceberg plugins accept the same write modes and options:
:func:`normalise_mode` maps a mode to what it does, :func:`bucket_of` checks
a bucketed write's options (:func:`check_bucket` the same from an Arrow
schema, before Spark starts) and :func:`bucket_value` computes each row's
bucket, and :func:`conform_frame` gives the frame exactly the table's
columns, in order and cast to their types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakesieve.errors import WriteError
from lakesieve.model import WriteOptions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

#: Write modes and what they do to a table written copy-on-write.
MODES = {
    "append": "append",
    "insert": "append",
    "bulk_insert": "append",
    "overwrite": "overwrite",
    "delete": "delete",
    "upsert": "upsert",
}


def refuse_object_storage(table_path: str, format_name: str, why: str) -> None:
    """Refuse a write to ``table_path`` on object storage where the format's writer needs a disk.

    Raises:
        WriteError: ``table_path`` is an object-store URL (``s3://``...); ``why`` says what is missing.
    """
    from lakesieve.files import paths

    if paths.local_path(table_path) is None:
        raise WriteError(
            f"cannot write {format_name} table {table_path}: lakesieve does not yet write "
            f"{format_name} tables on object storage ({why}); write it with the format's own "
            "writer, then index it with lakesieve"
        )


def normalise_mode(mode: str, table_path: str, format_name: str) -> str:
    """What a write mode does: ``append``, ``overwrite``, ``delete`` or ``upsert``.

    Args:
        mode: the mode asked for (any case).
        table_path: named in the error message.
        format_name: the table format, named in the error message.

    Raises:
        WriteError: an unknown mode.
    """
    found = MODES.get(str(mode).lower())
    if found is None:
        raise WriteError(
            f"cannot write {format_name} table {table_path}: unknown mode {mode!r}; "
            f"use one of {', '.join(sorted(MODES))}"
        )
    return found


def bucket_of(options: WriteOptions, frame: DataFrame, table_path: str) -> tuple[str, int] | None:
    """``(column, buckets)`` of a bucketed write, checked; ``None`` when not bucketed.

    Raises:
        WriteError: a bucket column without ``file_groups`` (or the reverse), a
            missing or non-integer column, or a non-positive number of buckets.
    """
    from pyspark.sql.types import IntegralType

    bucket = _bucket_options(options, table_path)
    if bucket is None:
        return None
    fields = {f.name: f.dataType for f in frame.schema.fields}
    _bucket_column_type(bucket[0], fields, IntegralType, table_path)
    return bucket


def check_bucket(options: WriteOptions, schema: pa.Schema | None, table_path: str) -> None:
    """What :func:`bucket_of` refuses, from the incoming rows' Arrow schema (no Spark).

    With ``schema`` ``None`` only the options are checked.

    Raises:
        WriteError: as :func:`bucket_of`.
    """
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import IntegralType

    bucket = _bucket_options(options, table_path)
    if bucket is None or schema is None:
        return
    fields = {}
    for field in schema:
        try:  # Spark's type for the column; one pyspark cannot map is left to the write
            fields[field.name] = from_arrow_type(field.type, prefer_timestamp_ntz=True)
        except Exception:
            continue
    if bucket[0] in fields or bucket[0] not in schema.names:
        _bucket_column_type(bucket[0], fields, IntegralType, table_path)


def _bucket_options(options: WriteOptions, table_path: str) -> tuple[str, int] | None:
    """``(column, buckets)`` from the options alone; ``None`` when not bucketed."""
    if options.bucket_column is None:
        if options.file_groups:
            raise WriteError(
                f"cannot write table {table_path}: file_groups (--file-groups) "
                f"{options.file_groups} needs an integer bucket_column (--bucket-column) "
                "whose value picks each row's file; without one the files follow Spark's partitions"
            )
        return None
    column = options.bucket_column
    if not options.file_groups or options.file_groups < 1:
        raise WriteError(
            f"cannot write table {table_path}: bucket_column (--bucket-column) {column!r} "
            "needs file_groups (--file-groups) >= 1"
        )
    return column, int(options.file_groups)


def _bucket_column_type(
    column: str, fields: Mapping[str, Any], integral: type, table_path: str
) -> None:
    """Refuse a bucket column missing from ``fields`` (name -> Spark type) or not integral."""
    if column not in fields:
        raise WriteError(
            f"cannot write table {table_path}: bucket column {column!r} is not in the frame"
        )
    if not isinstance(fields[column], integral):
        raise WriteError(
            f"cannot write table {table_path}: bucket column {column!r} must be an integer "
            f"column, not {fields[column].simpleString()}"
        )


def bucket_value(column: str, buckets: int) -> Column:
    """The bucket of each row: ``column mod buckets`` (Python's sign rule), nulls in bucket 0."""
    from pyspark.sql import functions as F

    return F.coalesce(F.pmod(F.col(f"`{column}`").cast("bigint"), F.lit(buckets)), F.lit(0))


def conform_frame(df: DataFrame, target: StructType, table_path: str) -> DataFrame:
    """``df`` with exactly the table's columns, in order and cast to their types.

    Raises:
        WriteError: a column is missing from the frame or unknown to the table.
    """
    from pyspark.sql import functions as F

    have = set(df.columns)
    want = [f.name for f in target.fields]
    missing = [n for n in want if n not in have]
    extra = [n for n in df.columns if n not in set(want)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unknown column(s) {', '.join(extra)}")
        raise WriteError(f"cannot write table {table_path}: the frame has {' and '.join(parts)}")
    return df.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in target.fields])
