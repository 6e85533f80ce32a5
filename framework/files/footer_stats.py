"""Minimum, maximum and null count of one column from the Parquet footers of read units.

What a reader that skips files by footer statistics sees: per location, the
column's bounds over the row groups of its base file (in the column's own
order: Spark SQL's, see :class:`~lakesieve.keys.key_order.KeyOrder`), rows
and nulls. A location the footer cannot speak for gets nulls (always read):
one with log files or delete files (rows the footer does not describe), no
readable local Parquet base file, a column chunk without statistics, or a key
type outside :data:`FOOTER_KINDS` (timestamps: units and zones differ
between writers). Parquet writers leave NaN out of a chunk's bounds;
:class:`~lakesieve.query.min_max.MinMaxSkipping` accounts for that.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import ReadUnit

__all__ = ["FOOTER_KINDS", "footer_statistics"]

#: Key types whose footer statistics are used (others: every location is read).
FOOTER_KINDS = ("int", "float", "double", "date", "string", "decimal", "boolean")


def _local_file(root: str, path: str) -> str | None:
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif "://" in path:
        return None
    return path if os.path.isabs(path) else os.path.join(root, path)


def _file_bounds(path: str, column: str) -> tuple[list[Any], list[Any], int, int | None] | None:
    """``(row group minimums, maximums, rows, nulls)`` of ``column`` in one footer; ``None``: unknown."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):
        return None
    lows: list[Any] = []
    highs: list[Any] = []
    rows = 0
    nulls: int | None = 0
    found = False
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        rows += group.num_rows
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.path_in_schema != column:
                continue
            found = True
            st = chunk.statistics
            if st is None:
                return None
            count = int(st.null_count) if st.has_null_count else None
            nulls = None if nulls is None or count is None else nulls + count
            if st.has_min_max:
                lows.append(st.min)
                highs.append(st.max)
            elif count is None or count != group.num_rows:
                return None  # a chunk with values but no bounds
    if not found and meta.num_row_groups:
        return None
    return lows, highs, rows, nulls


def _extreme(order: KeyOrder, values: list[Any], target: pa.DataType, lowest: bool) -> Any:
    """The smallest (``lowest``) or largest of ``values`` in the column's order."""
    if not values:
        return None
    forms = order.array(pa.array(values, target))
    pick = min if lowest else max
    return values[pick(range(len(values)), key=lambda i: forms[i])]


def footer_statistics(root: str, units: Sequence[ReadUnit], column: str, key_type: str) -> pa.Table:
    """Per location, ``min``/``max``/``null_count``/``rows`` of ``column`` from its base file's footer.

    A location with log files or delete files, no readable local Parquet base
    file, or a chunk of the column without statistics gets nulls (always read).
    """
    order = KeyOrder.of(key_type, "native skipping")
    target = order.arrow_type()
    usable = order.kind.kind in FOOTER_KINDS
    names: list[str] = []
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int | None] = []
    rows: list[int | None] = []
    for unit in units:
        bounds = None
        if usable and unit.base_file and not unit.log_files and not unit.delete_files:
            local = _local_file(root, unit.base_file)
            bounds = _file_bounds(local, column) if local else None
        lo = hi = None
        if bounds is not None:
            try:
                lo = _extreme(order, bounds[0], target, True)
                hi = _extreme(order, bounds[1], target, False)
            except (pa.ArrowException, TypeError, ValueError):
                bounds = None
        names.append(unit.location)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(None if bounds is None else bounds[3])
        rows.append(None if bounds is None else bounds[2])
    return pa.table(
        {
            "location": pa.array(names, pa.string()),
            "min": pa.array(mins, target),
            "max": pa.array(maxs, target),
            "null_count": pa.array(nulls, pa.int64()),
            "rows": pa.array(rows, pa.int64()),
        }
    )
