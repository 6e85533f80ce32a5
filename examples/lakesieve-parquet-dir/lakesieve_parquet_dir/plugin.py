"""The ``parquetdir`` format: a folder of Parquet files, as small as the hooks allow.

A table is a folder holding a marker file ``_lakesieve_parquet_dir`` and
``*.parquet`` files directly inside it (no subfolders, no partitions). The
marker keeps the plugin from claiming Hudi, Delta or Iceberg tables, which
also hold Parquet files.

* **Location**: a data file's name. One read unit per file.
* **Timeline**: one instant per distinct modification second of the data
  files. Instant ``"1700000000"`` is the table as it was when every file
  modified in or before that second existed. This is honest only for a folder
  that gains files and never loses or rewrites them: a deleted file vanishes
  from every instant, and a rewritten one moves to its new second. Readers
  that need real history use a table format.
* **Changes**: the files whose second falls in ``(start, end]``, reported as
  added. Files deleted in between cannot be seen; their locations simply
  drop out of the snapshot, which the framework handles.
* **Reads**: Spark reads the chosen files; the location comes from
  ``_metadata.file_name``. There are no deletes to honour.
* **No write hook**: tests write files with pyarrow
  (:mod:`lakesieve_parquet_dir.testing`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.errors import InstantNotFoundError
from lakesieve.hookspecs import hookimpl
from lakesieve.model import LOCATION_COLUMN, Changes, Instant, ReadUnit, Snapshot, TableRef

from lakesieve_parquet_dir import FORMAT, MARKER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _files(root: str) -> dict[str, os.stat_result]:
    """Every data file directly in ``root`` (hidden and ``_`` names skipped), by name."""
    out: dict[str, os.stat_result] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_file() and entry.name.endswith(".parquet") and entry.name[0] not in "._":
                out[entry.name] = entry.stat()
    return out


def _second(stat: os.stat_result) -> int:
    return int(stat.st_mtime)


def _instant(second: int) -> Instant:
    return Instant(sort_key=f"{second:012d}", id=str(second), action="files")


def _upto(table: TableRef, instant: str | None) -> int | None:
    """The second an instant names (latest when ``None``; ``None`` for an empty folder)."""
    seconds = sorted({_second(s) for s in _files(table.path).values()})
    if instant is None:
        return seconds[-1] if seconds else None
    try:
        wanted = int(instant)
    except ValueError:
        wanted = -1
    if wanted not in seconds:
        raise InstantNotFoundError(f"parquetdir table {table.path} has no instant {instant!r}")
    return wanted


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides ``parquetdir``."""
    return [FORMAT]


@hookimpl
def lakesieve_format_identify(path: str) -> str | None:
    """``"parquetdir"`` when the marker file is in ``path``; never raises."""
    return FORMAT if os.path.isfile(os.path.join(path, MARKER)) else None


@hookimpl
def lakesieve_format_timeline(table: TableRef) -> list[Instant] | None:
    """One instant per distinct modification second of the data files, oldest first."""
    if table.format != FORMAT:
        return None
    return [_instant(s) for s in sorted({_second(st) for st in _files(table.path).values()})]


@hookimpl
def lakesieve_format_schema(table: TableRef, instant: str | None) -> pa.Schema | None:
    """The schema of the newest data file visible at ``instant`` (empty for no files)."""
    if table.format != FORMAT:
        return None
    snapshot = lakesieve_format_snapshot(table, instant)
    assert snapshot is not None
    if not snapshot.units:
        return pa.schema([])
    return pq.read_schema(os.path.join(table.path, snapshot.units[-1].location))


@hookimpl
def lakesieve_format_snapshot(table: TableRef, instant: str | None) -> Snapshot | None:
    """One unit per data file modified in or before the instant's second."""
    if table.format != FORMAT:
        return None
    upto = _upto(table, instant)
    if upto is None:
        return Snapshot(None, ())
    files = sorted((_second(st), name, st.st_size) for name, st in _files(table.path).items())
    units = tuple(
        ReadUnit(name, name, size_bytes=size) for second, name, size in files if second <= upto
    )
    return Snapshot(_instant(upto), units)


@hookimpl
def lakesieve_format_changes(table: TableRef, start: str | None, end: str) -> Changes | None:
    """Files whose modification second is in ``(start, end]``, as added."""
    if table.format != FORMAT:
        return None
    low = -1 if start is None else int(start)
    high = int(end)
    low, high = min(low, high), max(low, high)
    added = frozenset(name for name, st in _files(table.path).items() if low < _second(st) <= high)
    return Changes(start, end, added=added)


@hookimpl
def lakesieve_format_read(
    table: TableRef,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame | None:
    """Spark reads the units' files; with ``with_location`` each row names its file."""
    if table.format != FORMAT:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(lakesieve_format_schema(table, instant))
    if not units:
        frame = spark.createDataFrame([], schema)
        return (
            frame.withColumn(LOCATION_COLUMN, F.lit(None).cast("string"))
            if with_location
            else frame
        )
    paths = [Path(table.path, u.location).as_uri() for u in units]
    frame = spark.read.schema(schema).parquet(*paths)
    if with_location:
        frame = frame.withColumn(LOCATION_COLUMN, F.url_decode(F.col("_metadata.file_name")))
    return frame


@hookimpl
def lakesieve_format_read_unit(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch] | None:
    """The rows of one file, read with pyarrow."""
    if table.format != FORMAT:
        return None
    parquet = pq.ParquetFile(os.path.join(table.path, unit.location))
    return parquet.iter_batches(columns=list(columns) if columns is not None else None)
