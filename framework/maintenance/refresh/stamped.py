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

Where both sides of a location are whole base files (no log or delete
files) and the task sums its rows, the two files are instead compared row by
row with only the column read (:func:`positional_rows`): as multisets, the
rows at ``end`` minus those at ``start`` are ``+new[i] - old[i]`` over every
position, and the positions holding the same value cancel. That is exact
for any two files; it is cheap when the writer left each unchanged record
where it was, as Apache Hudi's copy-on-write merge does, and then no record
id or write time is decoded.

So the large side is never shuffled, joined or sent to the JVM, and no row
identifier travels at all. The record ids kept per location are bounded
(:data:`PAIR_IDS`): beyond it the ``start`` side is read again for each
further chunk.

A task owns whole locations, so it also sums its rows per ``(key,
location)`` and drops the pairs summing to 0: the frame is the location's
exact delta, needing no ``groupBy``, whenever Arrow's grouping is Spark's
equality for the key (every type but floating-point numbers, where Spark
folds ``-0.0`` into ``0.0``: those rows leave the task unsummed, see
:func:`sums_by_equality`). The descriptors are a local relation that Spark
slices into ``defaultParallelism`` partitions without a shuffle, dealt by
size so that the slices are alike, and each row names its location, so no
join brings the names back. A summed delta that the format's metadata
bounds within :data:`COLLECT_ROWS` rows (``Changes.rows_written``) comes to
the driver as an Arrow table in that one job (no cache, no count); a task
past its share says so and the delta is computed again as a cached frame.

The plugin decides how cheaply it reads a unit: Hudi reads a base file with
pyarrow, merges slices with hudi-rs, and for ``Changes.written_in_logs``
locations gets an ``end`` unit without its base file
(:func:`lakesieve.maintenance.refresh.plan.logs_only`).

See :mod:`lakesieve.maintenance.refresh.plan` for why the result is the exact delta.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.contract.protocols import TableFormat
from lakesieve.model import ReadUnit, TableRef
from lakesieve.spark.session import dealt_for_slices, default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

_PAIR_DDL = "location string, old binary, new binary"

#: Record ids of one location's changed rows held at once in a task; past
#: it, the ``start`` side of the location is read once per chunk of ids.
PAIR_IDS = 2_000_000

#: Rows of a summed refresh delta (stamped or from change data) brought to
#: the driver by the one job that computes it; above, it is cached in Spark.
#: The stamped tasks share it evenly: one past its share stops and says so,
#: and the delta is then computed again and kept in Spark.
COLLECT_ROWS = 1_000_000


def sums_by_equality(key_type: DataType) -> bool:
    """Whether summing ``(key, location)`` rows in Arrow groups keys as Spark's ``groupBy`` does.

    True for every key type but ``float`` and ``double``: Spark groups
    ``-0.0`` with ``0.0`` (and every NaN together), which Arrow's hash
    grouping of the raw values need not.
    """
    from pyspark.sql.types import DoubleType, FloatType

    return not isinstance(key_type, (FloatType, DoubleType))


def _paired_rows(
    ref: TableRef,
    start: str,
    end: str,
    rid: str,
    wtime: str,
    column: str,
    key_type: pa.DataType,
    pair_ids: int,
    summed: bool,
    row_limit: int | None,
    id_fields: tuple[str, ...],
    descriptors: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``(key, location, count)`` of each described location, read in the task.

    ``+1`` per row of the unit at ``end`` stamped after ``start``; ``-1`` per
    row of the unit at ``start`` whose record id is among those rows' ids
    (streamed batch by batch against at most ``pair_ids`` of them at once).
    With ``summed``, a location's rows leave summed per key, pairs summing
    to 0 left out. With ``row_limit``, a task that would emit more rows
    emits one row with a null location instead (:func:`_over_limit`) and
    stops.
    """
    from lakesieve.contract import registry

    fmt = registry.table_format(ref)
    emitted = 0
    for descriptor in descriptors:
        for row in descriptor.to_pylist():
            old = pickle.loads(row["old"]) if row["old"] is not None else None
            new = pickle.loads(row["new"])
            parts = (
                positional_rows(fmt, old, new, start, end, column, key_type)
                if summed and old is not None and whole_files(old) and whole_files(new)
                else location_rows(
                    fmt, old, new, start, end, (rid, wtime, column), key_type, pair_ids, id_fields
                )
            )
            out: Iterator[pa.RecordBatch]
            if summed:
                sums = LocationSums(key_type, pair_ids)
                for keys, sign in parts:
                    sums.add(keys, sign)
                keys, counts = sums.result()
                out = iter([_counted(keys, row["location"], counts)] if len(keys) else [])
            else:
                out = (
                    _counted(keys, row["location"], pa.array(np.full(len(keys), sign, np.int64)))
                    for keys, sign in parts
                )
            for batch in out:
                emitted += batch.num_rows
                if row_limit is not None and emitted > row_limit:
                    yield _over_limit(key_type)
                    return
                yield batch


def _over_limit(key_type: pa.DataType) -> pa.RecordBatch:
    """The row a task emits instead of more than its share of a collected delta."""
    return pa.RecordBatch.from_arrays(
        [pa.nulls(1, key_type), pa.nulls(1, pa.string()), pa.array([0], pa.int64())],
        names=["key", "location", "count"],
    )


def location_rows(
    fmt: TableFormat,
    old: ReadUnit | None,
    new: ReadUnit,
    start: str,
    end: str,
    names: tuple[str, str, str],
    key_type: pa.DataType,
    pair_ids: int,
    id_fields: tuple[str, ...] = (),
) -> Iterator[tuple[pa.Array, int]]:
    """One location's keys with their sign: ``+1`` stamped after ``start``, ``-1`` their previous rows.

    Records are matched on their id column, or on ``id_fields`` when given
    (:func:`record_ids`).
    """
    rid, wtime, column = names
    id_columns = tuple(id_fields) or (rid,)
    new_columns = list(dict.fromkeys([*id_columns, wtime, column]))
    old_columns = list(dict.fromkeys([*id_columns, column]))
    ids: list[pa.Array] = []
    held = 0
    for batch in fmt.read_unit(new, end, new_columns):
        if not batch.num_rows:
            continue
        times = pc.cast(batch.column(batch.schema.get_field_index(wtime)), pa.string())
        batch = batch.filter(pc.greater(times, pa.scalar(start, pa.string())))
        if not batch.num_rows:
            continue
        yield batch.column(batch.schema.get_field_index(column)).cast(key_type), 1
        if old is None:
            continue
        ids.append(record_ids(batch, id_columns))
        held += batch.num_rows
        if held >= pair_ids:
            yield from _previous(fmt, old, start, old_columns, id_columns, ids, key_type)
            ids, held = [], 0
    if ids and old is not None:
        yield from _previous(fmt, old, start, old_columns, id_columns, ids, key_type)


def whole_files(unit: ReadUnit) -> bool:
    """Whether a unit's rows are its base file's rows, in the file's order (no logs, no deletes)."""
    return unit.base_file is not None and not unit.log_files and not unit.delete_files


def positional_rows(
    fmt: TableFormat,
    old: ReadUnit,
    new: ReadUnit,
    start: str,
    end: str,
    column: str,
    key_type: pa.DataType,
) -> Iterator[tuple[pa.Array, int]]:
    """One location's delta from its two base files compared row by row, only ``column`` read.

    The rows at ``end`` minus the rows at ``start`` are, as multisets,
    ``+new[i]`` and ``-old[i]`` over every position ``i`` either file has;
    the positions where both hold the same value cancel and are left out.
    That holds whatever order the files are in, so the delta is exact for
    any pair of files; it is small when the writer kept each unchanged
    record where it was (Apache Hudi's merge of a copy-on-write file group
    does), and then neither record ids nor write times are read. Values
    count as the same only when equal and not null, or both null; the
    caller sums the rows per key (never for floating-point keys, whose
    ``-0.0`` and NaN Spark groups by its own rules).
    """
    olds = _column_of(fmt.read_unit(old, start, [column]), column, key_type)
    news = _column_of(fmt.read_unit(new, end, [column]), column, key_type)
    before: pa.Array | None = next(olds, None)
    after: pa.Array | None = next(news, None)
    while before is not None and after is not None:
        n = min(len(before), len(after))
        was, now = before.slice(0, n), after.slice(0, n)
        both_null = pc.and_(pc.is_null(was), pc.is_null(now))
        same = pc.fill_null(pc.or_kleene(pc.equal(was, now), both_null), False)
        changed = pc.invert(same)
        if pc.any(changed).as_py():
            yield now.filter(changed), 1
            yield was.filter(changed), -1
        before = before.slice(n) if n < len(before) else next(olds, None)
        after = after.slice(n) if n < len(after) else next(news, None)
    while before is not None:
        yield before, -1
        before = next(olds, None)
    while after is not None:
        yield after, 1
        after = next(news, None)


def _column_of(
    batches: Iterator[pa.RecordBatch], column: str, key_type: pa.DataType
) -> Iterator[pa.Array]:
    """``column`` of each non-empty batch, cast to the key's type."""
    for batch in batches:
        if batch.num_rows:
            yield batch.column(batch.schema.get_field_index(column)).cast(key_type)


def _previous(
    fmt: TableFormat,
    old: ReadUnit,
    start: str,
    columns: list[str],
    id_columns: tuple[str, ...],
    ids: list[pa.Array],
    key_type: pa.DataType,
) -> Iterator[tuple[pa.Array, int]]:
    """Keys (``-1``) of the ``start`` side of a location whose record is among ``ids``.

    Each record is at most once on either side; ids that say otherwise
    (columns that do not identify records after all) fail the read, and
    refresh reads the locations whole.
    """
    column = columns[-1]
    written = pa.chunked_array(ids).combine_chunks()
    _distinct(written, "rows written since the index")
    found: list[pa.Array] = []
    for batch in fmt.read_unit(old, start, columns):
        if not batch.num_rows:
            continue
        old_ids = record_ids(batch, id_columns)
        hit = pc.is_in(old_ids, value_set=written)
        batch = batch.filter(hit)
        if batch.num_rows:
            found.append(old_ids.filter(hit))
            yield batch.column(batch.schema.get_field_index(column)).cast(key_type), -1
    if found:
        _distinct(pa.chunked_array(found).combine_chunks(), "their previous rows")


def record_ids(batch: pa.RecordBatch, id_columns: tuple[str, ...]) -> pa.Array:
    """One value per row that is equal for two rows exactly when their records are.

    The record id column as a string, one integer column as ``int64``, or
    several integer columns packed into fixed-size binary values (each as
    eight bytes and a null flag), which ``is_in`` matches like the tuples.
    """
    if len(id_columns) == 1:
        values = batch.column(batch.schema.get_field_index(id_columns[0]))
        if pa.types.is_integer(values.type):
            return values.cast(pa.int64())
        return values.cast(pa.string())
    n = batch.num_rows
    layout = [(f"v{i}", "<i8") for i in range(len(id_columns))]
    layout += [(f"n{i}", "u1") for i in range(len(id_columns))]
    packed = np.zeros(n, dtype=np.dtype(layout))
    for i, name in enumerate(id_columns):
        values = batch.column(batch.schema.get_field_index(name))
        if not pa.types.is_integer(values.type):
            raise TypeError(f"record id field {name} is {values.type}, not an integer column")
        values = values.cast(pa.int64())
        packed[f"v{i}"] = pc.fill_null(values, 0).to_numpy()
        packed[f"n{i}"] = values.is_null().to_numpy(zero_copy_only=False)
    width = packed.dtype.itemsize
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), n, [None, pa.py_buffer(packed.tobytes())]
    )


def _distinct(ids: pa.Array, what: str) -> None:
    """Fail unless every id in ``ids`` is different (nulls included)."""
    if pc.count_distinct(ids, mode="all").as_py() != len(ids):
        raise ValueError(f"record ids of {what} repeat within a location: not record ids")


class LocationSums:
    """Running sums of one location's signed keys, folded whenever ``bound`` rows are pending.

    Held rows stay below the location's distinct changed keys plus ``bound``.
    """

    def __init__(self, key_type: pa.DataType, bound: int) -> None:
        self._type = key_type
        self._bound = max(1, bound)
        self._keys: list[pa.Array] = []
        self._counts: list[pa.Array] = []
        self._pending = 0
        self._folded = 0

    def add(self, keys: pa.Array, sign: int) -> None:
        """Count each of ``keys`` ``sign`` times."""
        self._keys.append(keys)
        self._counts.append(pa.array(np.full(len(keys), sign, np.int64)))
        self._pending += len(keys)
        if self._pending >= max(self._bound, self._folded):
            self._fold()

    def _fold(self) -> None:
        table = pa.table(
            {
                "key": pa.chunked_array(self._keys, self._type),
                "count": pa.chunked_array(self._counts, pa.int64()),
            }
        )
        summed = table.group_by("key").aggregate([("count", "sum")])
        summed = summed.filter(pc.not_equal(summed.column("count_sum"), 0))
        self._keys = [summed.column("key").combine_chunks()]
        self._counts = [summed.column("count_sum").combine_chunks()]
        self._folded, self._pending = summed.num_rows, 0

    def result(self) -> tuple[pa.Array, pa.Array]:
        """Keys with a non-zero sum, and their sums."""
        if self._pending or len(self._keys) > 1:
            self._fold()
        if not self._keys:
            return pa.array([], self._type), pa.array([], pa.int64())
        return self._keys[0], self._counts[0]


def location_column(location: str, n: int) -> pa.Array:
    """``location`` repeated ``n`` times, as a string column (no Python list of it)."""
    return pc.fill_null(pa.nulls(n, pa.string()), location)


def _counted(keys: pa.Array, location: str, counts: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [keys, location_column(location, len(keys)), counts],
        names=["key", "location", "count"],
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
    collect_rows: int | None = None,
    id_fields: tuple[str, ...] = (),
) -> DataFrame:
    """``(key, location, count)`` of stamped locations, both sides of each read in one Python task.

    Summed per ``(key, location)`` without zero sums when
    :func:`sums_by_equality` holds for ``key_type``; one row per changed row
    otherwise. With ``collect_rows``, each task emits at most its share of
    them, else a row with a null location (the frame is then incomplete).
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    rid, wtime, column = names
    old_of = {u.location: u for u in old_units}
    slices = max(1, min(len(new_units), default_parallelism(spark)))
    rows = [
        (
            u.location,
            pickle.dumps(old_of[u.location]) if u.location in old_of else None,
            pickle.dumps(u),
        )
        for u in dealt_for_slices(
            sorted(new_units, key=lambda u: u.location), slices, lambda u: u.size_bytes or 0
        )
    ]
    descriptors = spark.createDataFrame(rows, _PAIR_DDL)
    schema = StructType(
        [
            StructField("key", key_type, True),
            StructField("location", StringType(), True),
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
        sums_by_equality(key_type),
        None if collect_rows is None else max(1, collect_rows // slices),
        tuple(id_fields),
    )
    return descriptors.mapInArrow(body, schema)


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
    rows_written: int | None,
    collect_rows: int = COLLECT_ROWS,
    id_fields: tuple[str, ...] = (),
) -> tuple[list[DataFrame], DataFrame | None, pa.Table | None]:
    """The stamped locations' delta: frames and the cached frame to release, or a table.

    The delta is computed here, so that a unit the plugin cannot read fails
    this call, which the caller answers by reading the locations whole. When
    its tasks sum it (:func:`sums_by_equality`) and the format's metadata
    bounds it (``rows_written``, the rows written at those locations: the
    delta has at most twice as many) within ``collect_rows``, it comes back
    as the summed ``(key, location, count)`` table, in the one job that
    computes it; otherwise as a frame, cached (it holds the changed rows
    only). Should the metadata understate the rows, a task past its share
    says so and the frame path runs.
    """
    if not new_units:
        return [], None, None  # nothing at ``end``: no record written, none removed
    ref = TableRef(fmt.path, fmt.name, dict(fmt.options))
    args = (spark, ref, old_units, new_units, start, end, (rid, wtime, column), key_type)
    bounded = rows_written is not None and 2 * rows_written <= collect_rows
    if bounded and collect_rows > 0 and sums_by_equality(key_type):
        table = paired_delta(*args, collect_rows=collect_rows, id_fields=id_fields).toArrow()
        if not table.column("location").null_count:
            return [], None, table
    frame = paired_delta(*args, id_fields=id_fields).persist()
    try:
        frame.count()
    except Exception:
        frame.unpersist()
        raise
    return [frame], frame, None
