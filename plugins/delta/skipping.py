"""Which data files Delta's data skipping may read: the statistics of the log, per file.

Delta skips files with the ``minValues``, ``maxValues`` and ``nullCount`` of
each ``add`` action's statistics, and with partition values. They are read
here through delta-rs (``get_add_actions(flatten=True)``) and compared as
Spark SQL compares (:class:`~lakesieve.sdk.MinMaxSkipping`), which is an
approximation of Delta's own Spark skipping code, not that code. Kept safe
where the statistics are not bounds of the rows:

- a file without statistics for the column is always read;
- a string maximum of 32 characters or more may be a truncated prefix
  (Delta's Spark writer cuts statistics there), so it is not used;
- timestamps are kept at millisecond precision in the log (a maximum cut
  below the file's largest value), so they are not used;
- Parquet writers leave NaN out of a maximum, which the comparison allows for.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.plugins.delta import schema, tables, timeline
from lakesieve.plugins.delta.snapshot import location_of
from lakesieve.sdk import MinMaxSkipping, TableRef, parse_key_type

#: Longest string maximum used; Delta's Spark writer truncates statistics at 32 characters.
MAX_STRING = 32
SOURCE = (
    "approximation: the Delta log's per-file minValues/maxValues/nullCount statistics "
    "(read with delta-rs), compared as Spark SQL compares; Delta's Spark skipping code is not run"
)


def _stat(actions: pa.Table, prefix: str, names: list[str]) -> pa.Array | None:
    for name in names:
        key = f"{prefix}.{name}"
        if key in actions.column_names:
            return actions.column(key).combine_chunks()
    return None


def delta_skipping(
    ref: TableRef, instant: str | None, column: str, key_type: str
) -> MinMaxSkipping:
    """The log's statistics of ``column`` at ``instant`` as a :class:`~lakesieve.sdk.MinMaxSkipping`."""
    version = timeline.resolve(ref, instant)
    dt = tables.open_table(ref, None if version is None else str(version))
    actions = pa.table(dt.get_add_actions(flatten=True))
    count = actions.num_rows
    names = [column]
    physical = schema.physical_names(dt).get(column)
    if physical and physical != column:
        names.append(physical)
    kind = parse_key_type(key_type).kind
    rows = actions.column("num_records") if "num_records" in actions.column_names else None
    if column in schema.partition_columns(dt):
        value = _stat(actions, "partition", names)
        lows = highs = value
        nulls = None if value is None or rows is None else pc.if_else(value.is_null(), rows, 0)
    else:
        lows = _stat(actions, "min", names)
        highs = _stat(actions, "max", names)
        nulls = _stat(actions, "null_count", names)
    empty = pa.nulls(count)
    if kind == "timestamp":
        lows = highs = None
    if highs is not None and kind == "string" and pa.types.is_string(highs.type):
        long = pc.greater_equal(pc.utf8_length(highs), MAX_STRING)
        highs = pc.if_else(long, pa.scalar(None, highs.type), highs)
    stats = pa.table(
        {
            "location": pa.array(
                [location_of(ref.path, str(p)) for p in actions.column("path").to_pylist()],
                pa.string(),
            ),
            "min": empty if lows is None else lows,
            "max": empty if highs is None else highs,
            "null_count": pa.nulls(count, pa.int64()) if nulls is None else nulls,
            "rows": pa.nulls(count, pa.int64()) if rows is None else rows,
        }
    )
    return MinMaxSkipping(key_type, stats, SOURCE)
