"""Delta file statistics (the ``stats`` JSON of an ``add`` action) from a Parquet footer.

Runs on Spark workers right after a file is written. ``numRecords`` is always
given; per top-level column ``nullCount``, and ``minValues``/``maxValues``
only for types whose JSON form is exact and whose order other engines agree
on: integers, dates and strings (a minimum is cut to 32 characters, which
keeps it a lower bound; a longer maximum is left out). Other engines skip
files with these statistics, so leaving a value out is always safe and a
wrong one never is.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow.parquet as pq

#: Longest string kept in min/max statistics.
MAX_STRING = 32


def _json_value(value: Any, is_max: bool) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        return None
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        if len(value) <= MAX_STRING:
            return value
        return None if is_max else value[:MAX_STRING]
    return None


def _stat_kind(column: pq.ColumnChunkMetaData) -> bool:
    """Whether min/max of this column chunk may be used (integers, dates, strings)."""
    physical = column.physical_type
    logical = str(column.statistics.logical_type) if column.statistics is not None else ""
    if physical in ("INT32", "INT64"):
        return not any(t in logical for t in ("Timestamp", "Time(", "Decimal", "isSigned=false"))
    if physical == "BYTE_ARRAY":
        return "String" in logical
    return False


def delta_stats(metadata: pq.FileMetaData, rel_path: str) -> str:
    """The ``stats`` JSON for one written file (``rel_path`` is unused, kept for the callback shape)."""
    del rel_path
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    bounds_ok: dict[str, bool] = {}
    nulls_ok: dict[str, bool] = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            name = column.path_in_schema
            if "." in name:
                continue
            st = column.statistics
            if st is None or not st.has_null_count:
                nulls_ok[name] = bounds_ok[name] = False
                continue
            nulls_ok.setdefault(name, True)
            nulls[name] = nulls.get(name, 0) + int(st.null_count)
            if not bounds_ok.get(name, True):
                continue
            if not st.has_min_max:
                # a chunk of nulls only has no bounds; any other chunk must have them
                if st.null_count != group.num_rows:
                    bounds_ok[name] = False
                continue
            lo = _json_value(st.min, False) if _stat_kind(column) else None
            hi = _json_value(st.max, True) if _stat_kind(column) else None
            if lo is None or hi is None:
                bounds_ok[name] = False
                continue
            bounds_ok[name] = True
            mins[name] = lo if name not in mins else min(mins[name], lo)
            maxs[name] = hi if name not in maxs else max(maxs[name], hi)
    stats: dict[str, Any] = {"numRecords": int(metadata.num_rows)}
    keep = [n for n in mins if bounds_ok.get(n)]
    if keep:
        stats["minValues"] = {n: mins[n] for n in keep}
        stats["maxValues"] = {n: maxs[n] for n in keep}
    counted = {n: v for n, v in nulls.items() if nulls_ok.get(n)}
    if counted:
        stats["nullCount"] = counted
    return json.dumps(stats, separators=(",", ":"))
