"""Arrow record batch helpers shared by the unit readers of every format.

A unit reader yields batches in the table's schema: :func:`conform` selects,
orders, casts and null-fills a batch's columns (and fills constant columns
such as partition values), :func:`project` narrows the table's schema to the
columns asked for, and :func:`keep_mask` says which rows of a batch survive a
file's deleted row positions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
from lakesieve.errors import ColumnNotFoundError


def conform(
    batch: pa.RecordBatch,
    target: pa.Schema,
    constants: Mapping[str, str | None] | None = None,
) -> pa.RecordBatch:
    """Select, order and cast ``batch``'s columns to ``target``.

    Columns named in ``constants`` are filled with that (text) value cast to
    the column's type (nulls for ``None``); other columns the batch lacks are
    nulls. A column the batch holds twice is taken from its first occurrence.
    """
    names = batch.schema.names
    fixed = constants or {}
    arrays: list[pa.Array] = []
    for fld in target:
        if fld.name in fixed:
            text = fixed[fld.name]
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
    """``target`` narrowed to ``columns`` (in that order); all of it when ``None``.

    Raises:
        ColumnNotFoundError: a column the table does not have, naming the table.
    """
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
