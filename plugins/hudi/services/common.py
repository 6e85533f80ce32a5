"""What the table services (compaction, clustering, clean, rollback) share.

Each service opens the table through :func:`open_table_state` (one-line
:class:`~lakesieve.sdk.WriteError` when there is no Hudi table or it cannot
be served), picks file groups with :func:`select_slices`, and writes its files
from Spark tasks with the writer's markers, so a service that fails half-way is
rolled back like a failed write.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lakesieve.plugins.hudi.partitions import location_of
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.timeline import Slice, TimelineState, load_timeline, marker_path
from lakesieve.sdk import WriteError

RECORD_KEY, FILE_NAME = META_COLUMNS[2], META_COLUMNS[4]


def refuse(path: str, service: str, message: str) -> NoReturn:
    """Raise the one-line :class:`WriteError` of a refused table service."""
    raise WriteError(f"cannot {service} Hudi table {path}: {message}")


@dataclass
class ServiceTable:
    """A table opened for a service: storage, properties and timeline."""

    path: str
    storage: TableStorage
    props: dict[str, str]
    state: TimelineState

    @property
    def merge_on_read(self) -> bool:
        """Whether the table is merge-on-read."""
        return self.props.get(cfg.TYPE, cfg.COPY_ON_WRITE).upper() == cfg.MERGE_ON_READ


def open_table_state(path: str, service: str) -> ServiceTable:
    """Open the table at ``path`` for ``service`` (a verb for messages).

    Raises:
        WriteError: no Hudi table at ``path``, or one of another table version.
    """
    storage = TableStorage(path)
    props = cfg.read_table_properties(storage)
    if props is None:
        refuse(path, service, "there is no Hudi table at this path")
    if props.get(cfg.VERSION, "6") != "6":
        refuse(path, service, f"table version {props.get(cfg.VERSION)} is not supported (only 6)")
    return ServiceTable(path, storage, props, load_timeline(storage))


def select_slices(
    table: ServiceTable, service: str, file_groups: Iterable[str] | None
) -> list[Slice]:
    """The latest slices named by ``file_groups`` (all when ``None``), in location order.

    A file group is named by its location (``<partition path>/<file id>``, the id
    alone when the table is not partitioned) or by its id alone.

    Raises:
        WriteError: a name matching no live file group of the table.
    """
    slices = sorted(
        table.state.slices.values(), key=lambda s: location_of(s.partition_path, s.file_id)
    )
    if file_groups is None:
        return slices
    if isinstance(file_groups, str):
        file_groups = [file_groups]
    wanted = list(dict.fromkeys(file_groups))
    by_name: dict[str, list[Slice]] = {}
    for s in slices:
        by_name.setdefault(location_of(s.partition_path, s.file_id), []).append(s)
        by_name.setdefault(s.file_id, []).append(s)
    chosen: dict[tuple[str, str], Slice] = {}
    for name in wanted:
        if name not in by_name:
            refuse(
                table.path, service, f"file group {name!r} is not a live file group of the table"
            )
        for s in by_name[name]:
            chosen[(s.partition_path, s.file_id)] = s
    return [s for s in slices if (s.partition_path, s.file_id) in chosen]


def task_token() -> tuple[int, str]:
    """``(partition id, write token)`` of the running Spark task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, "0-0-0"
    return ctx.partitionId(), f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.attemptNumber()}"


def write_base_file(
    storage: TableStorage,
    instant: str,
    partition_path: str,
    file_name: str,
    rows: pa.Table,
    io_type: str,
) -> int:
    """Write ``rows`` as base file ``file_name`` (marker first); return its size in bytes.

    ``_hoodie_file_name`` is set to ``file_name``; the other meta columns are kept.
    """
    index = rows.schema.get_field_index(FILE_NAME)
    names = pa.nulls(rows.num_rows, pa.string()).fill_null(file_name)
    rows = rows.set_column(index, FILE_NAME, names)
    metadata = dict(rows.schema.metadata or {})
    if rows.num_rows:
        bounds = pc.min_max(rows[RECORD_KEY])
        metadata[b"hoodie_min_record_key"] = str(bounds["min"].as_py()).encode()
        metadata[b"hoodie_max_record_key"] = str(bounds["max"].as_py()).encode()
    rows = rows.replace_schema_metadata(metadata)
    rel = f"{partition_path}/{file_name}" if partition_path else file_name
    storage.write_bytes(marker_path(instant, partition_path, file_name, io_type), b"")
    if partition_path:
        storage.makedirs(partition_path)
    with storage.fs.open_output_stream(storage.full(rel)) as stream:
        pq.write_table(rows, stream, compression="snappy")
    return storage.size(rel)


def collect_batches(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """All non-empty batches of a task as one table (``None`` when there are none)."""
    kept = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(kept) if kept else None
