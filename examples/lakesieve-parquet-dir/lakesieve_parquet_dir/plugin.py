"""The ``parquetdir`` format: a folder of Parquet files, as small as a format can be.

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
* **No writes**: :meth:`ParquetDirFormat.write` refuses; tests write files
  with pyarrow (:mod:`lakesieve_parquet_dir.testing`).

The plugin answers one hook, ``lakesieve_format_open``, with a
:class:`ParquetDirFormat` bound to the table (and ``lakesieve_format_names``
with its name). The class builds on :class:`lakesieve.contract.plugin_base.TableFormatBase`,
which keeps the path and options and decides whether to answer at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.sdk import (
    LOCATION_COLUMN,
    Changes,
    Instant,
    InstantNotFoundError,
    ReadUnit,
    Snapshot,
    TableFormatBase,
    WriteError,
    WriteOptions,
    hookimpl,
    select_columns,
)

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


class ParquetDirFormat(TableFormatBase):
    """A folder of Parquet files; see :class:`lakesieve.contract.protocols.TableFormat` for the contract."""

    name = FORMAT

    @classmethod
    def identify(cls, path: str) -> bool:
        """The marker file is in ``path``; never raises."""
        return os.path.isfile(os.path.join(path, MARKER))

    def _upto(self, instant: str | None) -> int | None:
        """The second an instant names (latest when ``None``; ``None`` for an empty folder)."""
        seconds = sorted({_second(s) for s in _files(self.path).values()})
        if instant is None:
            return seconds[-1] if seconds else None
        try:
            wanted = int(instant)
        except ValueError:
            wanted = -1
        if wanted not in seconds:
            raise InstantNotFoundError(f"parquetdir table {self.path} has no instant {instant!r}")
        return wanted

    def timeline(self) -> list[Instant]:
        """One instant per distinct modification second of the data files, oldest first."""
        return [_instant(s) for s in sorted({_second(st) for st in _files(self.path).values()})]

    def schema(self, instant: str | None) -> pa.Schema:
        """The schema of the newest data file visible at ``instant`` (empty for no files)."""
        snapshot = self.snapshot(instant)
        if not snapshot.units:
            return pa.schema([])
        return pq.read_schema(os.path.join(self.path, snapshot.units[-1].location))

    def snapshot(self, instant: str | None) -> Snapshot:
        """One unit per data file modified in or before the instant's second."""
        upto = self._upto(instant)
        if upto is None:
            return Snapshot(None, ())
        files = sorted((_second(st), name, st.st_size) for name, st in _files(self.path).items())
        units = tuple(
            ReadUnit(name, name, size_bytes=size) for second, name, size in files if second <= upto
        )
        return Snapshot(_instant(upto), units)

    def changes(self, start: str | None, end: str) -> Changes:
        """Files whose modification second is in ``(start, end]``, as added."""
        low = -1 if start is None else int(start)
        high = int(end)
        low, high = min(low, high), max(low, high)
        added = frozenset(
            name for name, st in _files(self.path).items() if low < _second(st) <= high
        )
        return Changes(start, end, added=added)

    def read(
        self,
        spark: SparkSession,
        units: Sequence[ReadUnit],
        instant: str | None,
        with_location: bool,
        columns: Sequence[str] | None = None,
    ) -> DataFrame:
        """Spark reads the units' files; with ``with_location`` each row names its file.

        With ``columns``, only those (Spark prunes the others from its scan).
        """
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = from_arrow_schema(self.schema(instant))
        if not units:
            frame = spark.createDataFrame([], schema)
            if with_location:
                frame = frame.withColumn(LOCATION_COLUMN, F.lit(None).cast("string"))
        else:
            paths = [Path(self.path, u.location).as_uri() for u in units]
            frame = spark.read.schema(schema).parquet(*paths)
            if with_location:
                frame = frame.withColumn(
                    LOCATION_COLUMN, F.url_decode(F.col("_metadata.file_name"))
                )
        return select_columns(frame, columns, with_location, self.path)

    def read_unit(
        self, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one file, read with pyarrow."""
        parquet = pq.ParquetFile(os.path.join(self.path, unit.location))
        return parquet.iter_batches(columns=list(columns) if columns is not None else None)

    def write(self, spark: SparkSession, df: DataFrame, options: WriteOptions) -> Instant:
        """Refused: a parquetdir table is written with pyarrow, outside lakesieve."""
        raise WriteError(f"the {FORMAT} format does not write; add Parquet files to {self.path}")


@hookimpl
def lakesieve_format_names() -> list[str]:
    """This plugin provides ``parquetdir``."""
    return [FORMAT]


@hookimpl
def lakesieve_format_open(path: str, options: Mapping[str, str]) -> ParquetDirFormat | None:
    """A :class:`ParquetDirFormat` when the marker file is in ``path`` or the format is forced."""
    return ParquetDirFormat.open(path, options)
