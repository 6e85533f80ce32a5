"""Reading one Delta read unit (a data file) as Arrow record batches, without Spark.

Runs on the driver and inside Spark's Python workers (the ``lakesieve`` data
source), so it needs only the table path, the instant and the unit. The file
is read with pyarrow batch by batch (columns by their physical names under
column mapping); rows its deletion vector deletes are dropped (positions from delta-rs at the unit's version); partition columns
are added from the unit's partition values; every batch is conformed to the
table's Arrow schema (columns in order, cast, nulls for missing columns).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.errors import ColumnNotFoundError
from lakesieve.model import ReadUnit, TableRef
from lakesieve.plugins.delta import deletion_vectors, schema, storage, tables

#: Rows per batch.
BATCH_ROWS = 65_536


def conform(
    batch: pa.RecordBatch, target: pa.Schema, constants: dict[str, str | None]
) -> pa.RecordBatch:
    """Select, order and cast ``batch``'s columns to ``target``.

    Columns named in ``constants`` are filled with that (text) value cast to
    the column's type; other columns the batch lacks are nulls.
    """
    names = batch.schema.names
    arrays: list[pa.Array] = []
    for fld in target:
        if fld.name in constants:
            text = constants[fld.name]
            value = pa.array([text], type=pa.string()).cast(fld.type)
            arrays.append(
                pa.repeat(value[0], batch.num_rows)
                if text is not None
                else pa.nulls(batch.num_rows, type=fld.type)
            )
        elif fld.name in names:
            column = batch.column(names.index(fld.name))
            arrays.append(column if column.type == fld.type else column.cast(fld.type))
        else:
            arrays.append(pa.nulls(batch.num_rows, type=fld.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def project(target: pa.Schema, columns: Sequence[str] | None, table_path: str) -> pa.Schema:
    """``target`` narrowed to ``columns`` (in that order); all of it when ``None``."""
    if columns is None:
        return target
    missing = [c for c in columns if c not in target.names]
    if missing:
        raise ColumnNotFoundError(f"table {table_path} has no column(s) {', '.join(missing)}")
    return pa.schema([target.field(c) for c in columns])


def keep_mask(start: int, count: int, deleted: np.ndarray) -> np.ndarray:
    """Which of the rows ``start .. start + count - 1`` survive the sorted ``deleted`` positions."""
    lo, hi = np.searchsorted(deleted, [start, start + count])
    keep = np.ones(count, dtype=bool)
    keep[deleted[lo:hi] - start] = False
    return keep


def read_unit_batches(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one unit as of ``instant`` (latest when ``None``).

    Raises:
        DeltaFeatureError: the table needs a reader feature lakesieve cannot honour.
    """
    dt = tables.open_table(table, instant)
    tables.check_readable(dt, table.path)
    full = schema.arrow_schema(dt)
    target = project(full, columns, table.path)
    part_cols = set(schema.partition_columns(dt))
    constants = {c: unit.partition_values.get(c) for c in part_cols if c in target.names}
    deleted = deletion_vectors.deleted_rows(dt).get(unit.location) if unit.delete_files else None
    physical = schema.physical_names(dt)
    logical = {p: name for name, p in physical.items()}
    fs, path = storage.filesystem_and_path(
        storage.join(table.path, unit.base_file or unit.location)
    )
    with fs.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        in_file = parquet.schema_arrow.names
        wanted = [physical.get(n, n) for n in target.names if n not in part_cols]
        present = [n for n in wanted if n in in_file]
        if not present and in_file:  # only partition columns asked for: still count rows
            present = in_file[:1]
        offset = 0
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
            rows = batch.num_rows
            if deleted is not None and len(deleted):
                batch = batch.filter(pa.array(keep_mask(offset, rows, deleted)))
            offset += rows
            if batch.num_rows:
                named = batch.rename_columns([logical.get(n, n) for n in batch.schema.names])
                yield conform(named, target, constants)
