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
:class:`InstantFiles`: the JSON of every such file (read by ``FileTable.java``,
sent to the driver JVM once, under a digest of its text) and each unit's
position in it. A scan whose selected units are all such files, when the
columns it needs are typed as that schema types them, is answered with the
token and the positions read (:func:`selection`), and the JVM builds Spark's
Parquet scan over a file index made from those statuses: no listing, no Spark
job, no DataFrame and no file list per scan. A scan that selects any unit
needing the format's own read (a table may hold both kinds) reads the frame
``Table.read`` would read for all of them, as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakesieve.contract.protocols import ReadsParquetFiles
from lakesieve.files.spark_scan import RAW_LOCAL_FILES

if TYPE_CHECKING:
    from lakesieve.model import ReadUnit
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class InstantFiles:
    """The files of one table instant that Spark reads as they are, as the JVM reads them.

    Attributes:
        token: a digest of ``table``: one token, one content.
        table: JSON ``{"files": [[path, size], ...], "data": <schema>, "options": {...}}``.
        position: each such unit's location -> its position in ``files``.
        data: the Spark schema the files are read in.
    """

    token: str
    table: str
    position: Mapping[str, int]
    data: StructType


def spark_schema(
    spark: SparkSession, fmt: Any, instant: str | None, units: Sequence[Any]
) -> StructType | None:
    """The format's Spark schema of ``units`` at ``instant``; ``None`` when it cannot say."""
    return fmt.spark_schema(spark, instant, units) if isinstance(fmt, ReadsParquetFiles) else None


def instant_files(
    fmt: Any, units: Sequence[ReadUnit], instant: str, data: StructType | None
) -> InstantFiles | None:
    """The files of ``units`` (the snapshot at ``instant``) read as they are, in ``data``'s types.

    ``None``: the format cannot say.
    """
    if not isinstance(fmt, ReadsParquetFiles) or data is None:
        return None
    found = fmt.parquet_files(units, instant)
    if len(found) != len(units) or len({u.location for u in units}) != len(units):
        return None  # a location naming two units could not name one file
    files: list[list[Any]] = []
    position: dict[str, int] = {}
    for unit, file in zip(units, found, strict=True):
        if file is not None:
            position[unit.location] = len(files)
            files.append([str(file[0]), int(file[1])])
    text = json.dumps({"files": files, "data": json.loads(data.json()), "options": RAW_LOCAL_FILES})
    token = hashlib.sha256(text.encode()).hexdigest()[:32]
    return InstantFiles(token, text, position, data)


def selection(files: InstantFiles, units: Sequence[ReadUnit], every: bool = False) -> str | None:
    """The positions of ``units``' files as the JVM reads them (``"0-9999"``, ``"3,17-20"``).

    ``every``: ``units`` are all the instant's units. ``None`` when a unit
    needs the format's own read.
    """
    if every and len(files.position) == len(units):
        return f"0-{len(units) - 1}" if units else ""
    found: list[int] = []
    for unit in units:
        at = files.position.get(unit.location)
        if at is None:
            return None
        found.append(at)
    found.sort()
    parts: list[str] = []
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and found[j + 1] == found[j] + 1:
            j += 1
        parts.append(str(found[i]) if i == j else f"{found[i]}-{found[j]}")
        i = j + 1
    return ",".join(parts)


def covers(data: StructType, wanted: StructType) -> bool:
    """Whether every wanted column is a column of ``data`` of the same type."""
    have = {f.name: f.dataType for f in data.fields}
    return all(have.get(f.name) == f.dataType for f in wanted.fields)
