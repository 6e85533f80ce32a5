"""Reading the stamped locations of a refresh: narrow, filtered reads in Spark tasks.

Units that are one file each (no log or delete files) are read by the
format's Spark reader (``TableFormat.read``): Spark prunes the columns to the
record identifier, the write time and the indexed column, and pushes the
write-time filter into the scan. For the others (Hudi file slices with log
files), Spark tasks (a few units each) ask the format plugin for the unit's
rows (``TableFormat.read_unit``, the contract the ``lakesieve`` data source
uses in workers) with only those columns, and rows are filtered in the
task, before they cross into the JVM:

* at ``end``, only rows whose write time is above ``start`` leave the task;
* at ``start`` (where the write time is not read), every row leaves it as
  ``(record id, key, location number)`` — small fixed-width numbers instead
  of location strings — and Spark keeps
  those whose ``(record id, location)`` was written in between with a
  left-semi join against the (broadcast, when small) ``end`` side.

See :mod:`lakesieve.refresh_plan` for why the result is the exact delta.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.contracts import TableFormat
from lakesieve.format_read import read_columns
from lakesieve.model import LOCATION_COLUMN, ReadUnit, TableRef

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

#: Changed records up to which the ``start`` side joins them by broadcast.
BROADCAST_ROWS = 2_000_000

_DESCRIPTOR_DDL = "loc_id int, unit binary"


def _unit_rows(
    ref: TableRef,
    instant: str,
    rid: str,
    wtime: str,
    column: str,
    key_type: pa.DataType,
    after: str | None,
    descriptors: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``(_rid, key, _loc)`` rows of each described unit.

    With ``after``, only rows whose write time is above it are kept.
    """
    from lakesieve import registry

    fmt = registry.table_format(ref)
    wanted = [rid, column] if after is None else [rid, wtime, column]
    columns = list(dict.fromkeys(wanted))
    for descriptor in descriptors:
        for row in descriptor.to_pylist():
            unit = pickle.loads(row["unit"])
            for batch in fmt.read_unit(unit, instant, columns):
                if not batch.num_rows:
                    continue
                if after is not None:
                    times = pc.cast(batch.column(batch.schema.get_field_index(wtime)), pa.string())
                    batch = batch.filter(pc.greater(times, pa.scalar(after, pa.string())))
                    if not batch.num_rows:
                        continue
                ids = pc.cast(batch.column(batch.schema.get_field_index(rid)), pa.string())
                keys = batch.column(batch.schema.get_field_index(column)).cast(key_type)
                loc = pa.array([row["loc_id"]] * batch.num_rows, pa.int32())
                yield pa.RecordBatch.from_arrays([ids, keys, loc], names=["_rid", "key", "_loc"])


def unit_rows(
    spark: SparkSession,
    ref: TableRef,
    units: Sequence[ReadUnit],
    loc_ids: Mapping[str, int],
    instant: str,
    rid: str,
    wtime: str,
    column: str,
    key_type: DataType,
    after: str | None,
) -> DataFrame:
    """Spark frame of ``(_rid, key, _loc)`` for ``units`` at ``instant`` (see :func:`_unit_rows`)."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    descriptors = spark.createDataFrame(
        [(loc_ids[u.location], pickle.dumps(u)) for u in units], _DESCRIPTOR_DDL
    ).repartition(max(1, min(len(units), 2 * spark.sparkContext.defaultParallelism)))
    schema = StructType(
        [
            StructField("_rid", StringType(), True),
            StructField("key", key_type, True),
            StructField("_loc", IntegerType(), True),
        ]
    )
    body = functools.partial(
        _unit_rows,
        TableRef(ref.path, ref.format, dict(ref.options)),
        instant,
        rid,
        wtime,
        column,
        to_arrow_type(key_type, timezone="UTC"),
        after,
    )
    return descriptors.mapInArrow(body, schema)


def _side(
    spark: SparkSession,
    fmt: TableFormat,
    units: Sequence[ReadUnit],
    loc_ids: Mapping[str, int],
    locations: DataFrame,
    instant: str,
    names: tuple[str, str, str],
    key_type: DataType,
    after: str | None,
) -> DataFrame:
    """``(_rid, key, _loc)`` rows of ``units`` at ``instant`` (written after ``after`` when given).

    Units that are single files (no log or delete files) are read by the
    format's Spark reader, whose column pruning and filter pushdown already
    read only what is needed; the others by :func:`unit_rows` in Python tasks.
    """
    from pyspark.sql import functions as F

    rid, wtime, column = names
    plain = [u for u in units if not u.log_files and not u.delete_files]
    merged = [u for u in units if u.log_files or u.delete_files]
    parts = []
    if plain:
        wanted = [rid, column] if after is None else [rid, wtime, column]
        frame = read_columns(fmt, spark, plain, instant, wanted)
        if after is not None:
            frame = frame.where(F.col(wtime) > F.lit(after))
        frame = frame.select(
            F.col(rid).cast("string").alias("_rid"),
            F.col(column).alias("key"),
            F.col(LOCATION_COLUMN).alias("location"),
        )
        parts.append(frame.join(locations, on="location").select("_rid", "key", "_loc"))
    if merged:
        parts.append(
            unit_rows(
                spark,
                TableRef(fmt.path, fmt.name, dict(fmt.options)),
                merged,
                loc_ids,
                instant,
                rid,
                wtime,
                column,
                key_type,
                after,
            )
        )
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def stamped_delta(
    spark: SparkSession,
    fmt: TableFormat,
    old_units: Sequence[ReadUnit],
    new_units: Sequence[ReadUnit],
    start: str,
    end: str,
    rid: str,
    wtime: str,
    column: str,
    key_type: DataType,
) -> tuple[list[DataFrame], DataFrame | None]:
    """``(key, location, count)`` frames of the stamped locations, and the cached frame to release."""
    from pyspark.sql import functions as F

    if not new_units:
        return [], None  # nothing at ``end``: no record written, none removed
    names = sorted({u.location for u in (*old_units, *new_units)})
    loc_ids = {name: i for i, name in enumerate(names)}
    locations = F.broadcast(
        spark.createDataFrame(list(loc_ids.items()), "location string, _loc int")
    )
    columns = (rid, wtime, column)
    written = _side(
        spark, fmt, new_units, loc_ids, locations, end, columns, key_type, start
    ).persist()
    rows = written.count()
    frames = [
        written.join(locations, on="_loc").select(
            "key", "location", F.lit(1).cast("long").alias("count")
        )
    ]
    if rows and old_units:
        ids = written.select("_rid", "_loc")
        if rows <= BROADCAST_ROWS:
            ids = F.broadcast(ids)
        old = _side(spark, fmt, old_units, loc_ids, locations, start, columns, key_type, None)
        previous = old.join(ids, on=["_rid", "_loc"], how="left_semi")
        frames.append(
            previous.join(locations, on="_loc").select(
                "key", "location", F.lit(-1).cast("long").alias("count")
            )
        )
    return frames, written
