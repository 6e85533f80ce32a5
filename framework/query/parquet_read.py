"""Read units that are Parquet files Spark reads as they are: one Spark Parquet scan, nothing listed.

A format plugin that implements
:class:`~lakesieve.contract.protocols.ReadsParquetFiles` says, per read unit of
an instant, which data file (and its exact size) Spark's own Parquet reader
reads by column name to give the unit's rows, and in which Spark schema.
Those answers are kept per table instant as an :class:`InstantFiles`: the
JSON of every such file (read by the JVM's ``FileTable``, sent to the driver
JVM once, under a digest of its text) and each unit's position in it.

Two readers use it:

- ``format("lakesieve")`` (:mod:`lakesieve.spark_source`) answers a scan
  whose selected units are all such files with the token and the positions
  (:func:`selection`);
- ``Table.read`` (:func:`parquet_frame`) reads a plan whose units are all
  such files as one DataFrame: Spark's Parquet file source over a file index
  made from the known statuses (``FileTables.frame`` in the JVM), the same
  scan ``spark.read.parquet`` makes, without listing 64 or 10,000 paths
  first. Where the session's driver lacks lakesieve's jar (a session not
  started by :func:`lakesieve.get_spark`), the files are handed to
  ``spark.read.parquet`` itself: still one scan, but listed.

A plan selecting any unit that needs the format's own read (log files to
merge, deletes or a deletion vector to apply, renamed columns, partition
values kept outside the files) reads every unit through the format's
``read`` as before. The predicate is applied on top by the caller, so Spark
pushes what it can into the Parquet scan and evaluates the rest exactly.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakesieve.contract.protocols import ReadsParquetFiles
from lakesieve.files.spark_scan import RAW_LOCAL_FILES, parquet_reader
from lakesieve.spark.object_storage import prepare

if TYPE_CHECKING:
    from lakesieve.model import ReadUnit
    from lakesieve.query.query_plan import Plan
    from lakesieve.query.table_view import TableView
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

_lock = threading.Lock()
#: Sessions (by id) whose driver has no ``FileTables.frame``: asked once, then read by listing.
_NO_JVM_FRAMES: set[int] = set()


@dataclass(frozen=True)
class InstantFiles:
    """The files of one table instant that Spark reads as they are, as the JVM reads them.

    Attributes:
        token: a digest of ``table``: one token, one content.
        table: JSON ``{"files": [[path, size], ...], "data": <schema>, "options": {...}}``.
        position: each such unit's location -> its position in ``files``.
        data: the Spark schema the files are read in.
        paths: the files, in ``files``' order.
    """

    token: str
    table: str
    position: Mapping[str, int]
    data: StructType
    paths: tuple[str, ...] = ()


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
    return InstantFiles(token, text, position, data, tuple(f[0] for f in files))


def positions(files: InstantFiles, units: Sequence[ReadUnit]) -> list[int] | None:
    """The sorted positions of ``units``' files; ``None`` when a unit needs the format's own read."""
    found: list[int] = []
    for unit in units:
        at = files.position.get(unit.location)
        if at is None:
            return None
        found.append(at)
    found.sort()
    return found


def selection(files: InstantFiles, units: Sequence[ReadUnit], every: bool = False) -> str | None:
    """The positions of ``units``' files as the JVM reads them (``"0-9999"``, ``"3,17-20"``).

    ``every``: ``units`` are all the instant's units. ``None`` when a unit
    needs the format's own read.
    """
    if every and len(files.position) == len(units):
        return f"0-{len(units) - 1}" if units else ""
    found = positions(files, units)
    if found is None:
        return None
    parts: list[str] = []
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and found[j + 1] == found[j] + 1:
            j += 1
        parts.append(str(found[i]) if i == j else f"{found[i]}-{found[j]}")
        i = j + 1
    return ",".join(parts)


def _jvm_frame(spark: SparkSession, files: InstantFiles, chosen: str) -> DataFrame | None:
    """The JVM's frame of the chosen files (nothing listed); ``None`` where the driver lacks it."""
    session = getattr(spark, "_jsparkSession", None)
    if session is None or id(spark) in _NO_JVM_FRAMES:
        return None  # Spark Connect (no driver JVM to ask), or a driver without the jar
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.sql import DataFrame as SparkDataFrame

    try:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        tables = jvm.org.lakesieve.spark.FileTables
        jdf = tables.frame(session, files.token, chosen)
        if jdf is None:  # not sent yet, or no longer kept there
            jdf = tables.loadFrame(session, files.token, files.table, chosen)
    except Py4JJavaError:  # the JVM refused these files: spark.read.parquet reads them
        return None
    except Py4JError:  # no lakesieve jar on this driver, or one without FileTables.frame
        with _lock:
            _NO_JVM_FRAMES.add(id(spark))
        return None
    return SparkDataFrame(jdf, spark)


def parquet_frame(spark: SparkSession, view: TableView, plan: Plan) -> DataFrame | None:
    """The plan's units as one Spark Parquet scan, when each is a file Spark reads as it is.

    Every column of the format's Spark schema, in its order, exactly the rows
    the format's ``read`` gives those units. ``None``: the format cannot say,
    or a unit needs the format's own read (the caller reads them all that
    way).
    """
    inst = plan.table_instant
    fmt = view.fmt
    if inst is None or not plan.units or not isinstance(fmt, ReadsParquetFiles):
        return None
    prepare(spark, view.path, view.ref.options)  # a table on object storage: S3A settings

    def make() -> InstantFiles | None:
        units = plan.snapshot.units
        return instant_files(fmt, units, inst.id, spark_schema(spark, fmt, inst.id, units))

    # Hudi types its schema as Spark reads a base file: the answer is the session's
    files = view.remembered(f"parquet_files@{id(spark)}", inst, make)
    if files is None:
        return None
    chosen = selection(files, plan.units, plan.units is plan.snapshot.units)
    if chosen is None:
        return None
    frame = _jvm_frame(spark, files, chosen)
    if frame is not None:
        return frame
    at = positions(files, plan.units) or []
    return parquet_reader(spark, files.data).parquet(*[files.paths[i] for i in at])
