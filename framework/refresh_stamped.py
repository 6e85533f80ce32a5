"""Reading the stamped locations of a refresh: both sides of a location in one Python task.

One Spark task reads a few locations; for each it asks the format plugin for
rows (``TableFormat.read_unit``, the contract the ``lakesieve`` data source
uses in workers) with only the columns needed, and filters them before
anything crosses into the JVM:

* at ``end``, the record id, the write time and the column; rows whose write
  time is above ``start`` leave the task as ``+1`` and their record ids are
  kept (they are the changed records: few, for a small commit);
* at ``start``, the record id and the column, streamed batch by batch; rows
  whose record id is among those leave the task as ``-1``.

So the large side is never shuffled, joined or sent to the JVM, and no row
identifier travels at all. The record ids kept per location are bounded
(:data:`PAIR_IDS`): beyond it the ``start`` side is read again for each
further chunk. The plugin decides how cheaply it reads a unit: Hudi reads a
base file with pyarrow, merges slices with hudi-rs, and for
``Changes.written_in_logs`` locations gets an ``end`` unit without its base
file (:func:`lakesieve.refresh_plan.logs_only`).

See :mod:`lakesieve.refresh_plan` for why the result is the exact delta.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.contracts import TableFormat
from lakesieve.model import ReadUnit, TableRef
from lakesieve.session import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

_PAIR_DDL = "loc_id int, old binary, new binary"

#: Record ids of one location's changed rows held at once in a task; past
#: it, the ``start`` side of the location is read once per chunk of ids.
PAIR_IDS = 2_000_000


def _paired_rows(
    ref: TableRef,
    start: str,
    end: str,
    rid: str,
    wtime: str,
    column: str,
    key_type: pa.DataType,
    pair_ids: int,
    descriptors: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``(key, _loc, count)`` of each described location, read in the task.

    ``+1`` per row of the unit at ``end`` stamped after ``start``; ``-1`` per
    row of the unit at ``start`` whose record id is among those rows' ids
    (streamed batch by batch against at most ``pair_ids`` of them at once).
    """
    from lakesieve import registry

    fmt = registry.table_format(ref)
    new_columns = list(dict.fromkeys([rid, wtime, column]))
    old_columns = list(dict.fromkeys([rid, column]))
    for descriptor in descriptors:
        for row in descriptor.to_pylist():
            loc_id = row["loc_id"]
            old = pickle.loads(row["old"]) if row["old"] is not None else None
            ids: list[pa.Array] = []
            held = 0
            for batch in fmt.read_unit(pickle.loads(row["new"]), end, new_columns):
                if not batch.num_rows:
                    continue
                times = pc.cast(batch.column(batch.schema.get_field_index(wtime)), pa.string())
                batch = batch.filter(pc.greater(times, pa.scalar(start, pa.string())))
                if not batch.num_rows:
                    continue
                keys = batch.column(batch.schema.get_field_index(column)).cast(key_type)
                yield _counted(keys, loc_id, 1)
                if old is None:
                    continue
                ids.append(pc.cast(batch.column(batch.schema.get_field_index(rid)), pa.string()))
                held += batch.num_rows
                if held >= pair_ids:
                    yield from _previous(fmt, old, start, old_columns, ids, key_type, loc_id)
                    ids, held = [], 0
            if ids and old is not None:
                yield from _previous(fmt, old, start, old_columns, ids, key_type, loc_id)


def _previous(
    fmt: TableFormat,
    old: ReadUnit,
    start: str,
    columns: list[str],
    ids: list[pa.Array],
    key_type: pa.DataType,
    loc_id: int,
) -> Iterator[pa.RecordBatch]:
    """``-1`` rows of the ``start`` side of a location whose record id is among ``ids``."""
    rid, column = columns[0], columns[-1]
    written = pa.chunked_array(ids, pa.string()).combine_chunks()
    for batch in fmt.read_unit(old, start, columns):
        if not batch.num_rows:
            continue
        old_ids = pc.cast(batch.column(batch.schema.get_field_index(rid)), pa.string())
        batch = batch.filter(pc.is_in(old_ids, value_set=written))
        if batch.num_rows:
            keys = batch.column(batch.schema.get_field_index(column)).cast(key_type)
            yield _counted(keys, loc_id, -1)


def _counted(keys: pa.Array, loc_id: int, sign: int) -> pa.RecordBatch:
    n = len(keys)
    return pa.RecordBatch.from_arrays(
        [keys, pa.array([loc_id] * n, pa.int32()), pa.array([sign] * n, pa.int64())],
        names=["key", "_loc", "count"],
    )


def paired_delta(
    spark: SparkSession,
    ref: TableRef,
    old_units: Sequence[ReadUnit],
    new_units: Sequence[ReadUnit],
    start: str,
    end: str,
    names: tuple[str, str, str],
    key_type: DataType,
    pair_ids: int = PAIR_IDS,
) -> DataFrame:
    """``(key, location, count)`` of stamped locations, both sides of each read in one Python task."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    rid, wtime, column = names
    old_of = {u.location: u for u in old_units}
    loc_ids = {u.location: i for i, u in enumerate(sorted(new_units, key=lambda u: u.location))}
    rows = [
        (
            loc_ids[u.location],
            pickle.dumps(old_of[u.location]) if u.location in old_of else None,
            pickle.dumps(u),
        )
        for u in new_units
    ]
    parallel = max(1, min(len(rows), 2 * default_parallelism(spark)))
    descriptors = spark.createDataFrame(rows, _PAIR_DDL).repartition(parallel)
    schema = StructType(
        [
            StructField("key", key_type, True),
            StructField("_loc", IntegerType(), True),
            StructField("count", LongType(), True),
        ]
    )
    body = functools.partial(
        _paired_rows,
        TableRef(ref.path, ref.format, dict(ref.options)),
        start,
        end,
        rid,
        wtime,
        column,
        to_arrow_type(key_type, timezone="UTC"),
        pair_ids,
    )
    locations = F.broadcast(
        spark.createDataFrame(list(loc_ids.items()), "location string, _loc int")
    )
    return (
        descriptors.mapInArrow(body, schema)
        .join(locations, on="_loc")
        .select("key", "location", "count")
    )


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
    """``(key, location, count)`` frames of the stamped locations, and the cached frame to release.

    The frame is computed here (and cached: it holds the changed rows only),
    so that a unit the plugin cannot read fails this call, which the caller
    answers by reading the locations whole.
    """
    if not new_units:
        return [], None  # nothing at ``end``: no record written, none removed
    ref = TableRef(fmt.path, fmt.name, dict(fmt.options))
    frame = paired_delta(
        spark, ref, old_units, new_units, start, end, (rid, wtime, column), key_type
    ).persist()
    try:
        frame.count()
    except Exception:
        frame.unpersist()
        raise
    return [frame], frame
