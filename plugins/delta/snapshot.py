"""The read units of a Delta table at one version: one per data file.

A unit's location and base file are the data file's path relative to the
table root, URL-decoded (the log stores it URL-encoded), so it is the file's
real relative path. A file with a deletion vector carries
``delete_files=("deletion_vector:<deleted rows>",)`` and
``extra["deleted_rows"]``: a deletion vector only ever grows, so the count
names its state. Partition values are kept as text that both Spark and
pyarrow cast back to the column's type.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import unquote

import pyarrow as pa
from lakesieve.plugins.delta import deletion_vectors, schema, tables, timeline
from lakesieve.sdk import ReadUnit, Snapshot, TableRef, paths

PARTITION_PREFIX = "partition."


def partition_text(value: object) -> str | None:
    """A partition value as text (``None`` for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def location_of(root: str, log_path: str) -> str:
    """The location of a data file from its (URL-encoded) path in the log."""
    plain = unquote(log_path)
    if paths.is_uri(log_path) or plain.startswith("/"):
        return paths.relative_to(root, log_path if paths.is_uri(log_path) else plain)
    return plain


def build_snapshot(table: TableRef, instant: str | None) -> Snapshot:
    """The read units of ``table`` at ``instant`` (latest when ``None``).

    Raises:
        InstantNotFoundError: ``instant`` is not a committed version.
    """
    version = timeline.resolve(table, instant)
    if version is None:
        return Snapshot(instant=None, units=())
    dt_ = tables.open_table(table, str(version))
    deleted = deletion_vectors.deleted_rows(dt_)
    actions = pa.table(dt_.get_add_actions(flatten=True))
    part_cols = schema.partition_columns(dt_)
    rows = actions.to_pylist()
    units = []
    for row in rows:
        location = location_of(table.path, str(row["path"]))
        values = {}
        for col in part_cols:
            text = partition_text(row.get(PARTITION_PREFIX + col))
            if text is not None:
                values[col] = text
        gone = deleted.get(location)
        extra: dict[str, str] = {}
        delete_files: tuple[str, ...] = ()
        if gone is not None and len(gone):
            extra["deleted_rows"] = str(len(gone))
            delete_files = (f"deletion_vector:{len(gone)}",)
        num = row.get("num_records")
        units.append(
            ReadUnit(
                location=location,
                base_file=location,
                delete_files=delete_files,
                partition_values=values,
                num_records=int(num) if num is not None else None,
                size_bytes=int(row.get("size_bytes") or 0),
                extra=extra,
            )
        )
    units.sort(key=lambda u: u.location)
    history = {i.id: i for i in timeline.list_instants(table)}
    return Snapshot(
        instant=history.get(str(version), timeline.instant_of(version)), units=tuple(units)
    )
