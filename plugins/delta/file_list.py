"""Which Delta data files Spark's own Parquet reader reads as they are.

``format("lakesieve")`` hands such files to Spark's Parquet scan as data (no
listing, no DataFrame per scan). A Delta data file qualifies when reading it
by column name in the table's Spark schema gives exactly the unit's rows, as
:func:`lakesieve.plugins.delta.spark_read.read_units` reads them: no deletion
vector, no partition columns (Delta keeps their values out of the files), no
column mapping (files name columns by physical names), and a protocol whose
reader features lakesieve honours. Any other unit keeps the format's merged
read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakesieve.plugins.delta import schema, tables, timeline
from lakesieve.sdk import ReadUnit, TableRef, paths

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def read_by_name(ref: TableRef, instant: str | None) -> bool:
    """Whether the table's files at ``instant`` hold every column under its own name."""
    version = timeline.resolve(ref, instant)
    if version is None:
        return False
    dt = tables.open_table(ref, str(version))
    try:
        tables.check_readable(dt, ref.path)
    except Exception:  # the format's own read says why
        return False
    if schema.partition_columns(dt) or schema.nested_mapped_column(dt) is not None:
        return False
    return all(name == physical for name, physical in schema.physical_names(dt).items())


def parquet_files(
    ref: TableRef, units: Sequence[ReadUnit], instant: str | None
) -> list[tuple[str, int] | None]:
    """Per unit, its data file and exact size when Spark reads it as it is; else ``None``."""
    if not units or not read_by_name(ref, instant):
        return [None] * len(units)
    return [
        (paths.join(ref.path, u.base_file or u.location), u.size_bytes)
        if not u.delete_files and u.size_bytes > 0
        else None
        for u in units
    ]


def spark_schema(ref: TableRef, instant: str | None) -> StructType | None:
    """The Spark schema :func:`~lakesieve.plugins.delta.spark_read.read_units` gives at ``instant``."""
    version = timeline.resolve(ref, instant)
    if version is None:
        return None
    return schema.spark_schema(tables.open_table(ref, str(version)))
