"""Compaction of a merge-on-read table: merge each file slice's base file and logs into a new base file.

:func:`compact` follows the Hudi timeline for a compaction: an Avro
``HoodieCompactionPlan`` in ``<instant>.compaction.requested``, an empty
``<instant>.compaction.inflight``, then one Spark task per file group reads
the slice as readers see it at the latest completed instant (hudi-rs merges
base file and log blocks) and writes ``<fileId>_<token>_<instant>.parquet``;
the completed ``<instant>.commit`` (operation ``COMPACT``) lists the new base
files with ``prevCommit`` = the old slice's base instant. Readers see the same
rows before and after; the rows keep their ``_hoodie_commit_time``. The write
stats record ``numInserts = numDeletes = 0``: compaction changes no key.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.plugins.hudi.services.common import (
    open_table_state,
    refuse,
    select_slices,
    task_token,
    write_base_file,
)
from lakesieve.plugins.hudi.spark_read import map_in_arrow
from lakesieve.plugins.hudi.unit_reader import read_unit_batches
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.avro import COMPACTION_PLAN, container
from lakesieve.plugins.hudi.writer.commit import (
    FileWrite,
    commit_metadata,
    next_instant,
    to_json_bytes,
)
from lakesieve.plugins.hudi.writer.rollback import rollback_pending
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.task import STATS_ARROW, STATS_SCHEMA
from lakesieve.plugins.hudi.writer.timeline import Slice, rollback_instant
from lakesieve.sdk import Instant
from lakesieve.sdk.arrow import conform
from pyspark.sql import SparkSession
from pyspark.sql import types as T

_UNITS = "pp string, fid string, base string, logs array<string>, base_instant string"


def _compact_units(
    storage: TableStorage, instant: str, as_of: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: compact every described file slice into a new base file."""
    _task_id, token = task_token()
    out = []
    for descriptors in batches:
        for unit in descriptors.to_pylist():
            started = time.monotonic()
            merged = list(
                read_unit_batches(storage.base, None, unit["base"] or None, unit["logs"], as_of)
            )
            target = None
            if unit["base"]:
                target = pq.read_schema(storage.full(unit["base"]), filesystem=storage.fs)
                target = pa.schema(list(target)).with_metadata(None)
            if merged:
                schema = target or merged[0].schema
                rows = pa.Table.from_batches([conform(b, schema) for b in merged], schema=schema)
            else:
                schema = target or pa.schema([])
                rows = schema.empty_table()
            name = f"{unit['fid']}_{token}_{instant}.parquet"
            size = write_base_file(storage, instant, unit["pp"], name, rows, "CREATE")
            out.append(
                {
                    "partition_path": unit["pp"],
                    "file_id": unit["fid"],
                    "file_name": name,
                    "prev_commit": unit["base_instant"],
                    "num_writes": rows.num_rows,
                    "num_deletes": 0,
                    "num_update_writes": 0,
                    "num_inserts": 0,
                    "file_size": size,
                    "create_ms": int((time.monotonic() - started) * 1000),
                    "upsert_ms": 0,
                    "base_file": "",
                    "log_version": 0,
                }
            )
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=STATS_ARROW)


def _plan(slices: list[Slice]) -> bytes:
    operations = [
        {
            "baseInstantTime": s.instant,
            "deltaFilePaths": [p.rsplit("/", 1)[-1] for p in s.log_files],
            "dataFilePath": s.base_file.rsplit("/", 1)[-1] if s.base_file else None,
            "fileId": s.file_id,
            "partitionPath": s.partition_path,
            "metrics": {"TOTAL_LOG_FILES": float(len(s.log_files))},
        }
        for s in slices
    ]
    return container(
        COMPACTION_PLAN, [{"operations": operations, "extraMetadata": None, "version": 2}]
    )


def compact(
    spark: SparkSession, path: str, file_groups: Iterable[str] | None = None
) -> Instant | None:
    """Compact the merge-on-read table at ``path``.

    Args:
        spark: the session that runs the compaction job.
        path: the table root.
        file_groups: locations (``<partition path>/<file id>``) or file ids to
            compact; by default every file group whose latest slice has log files.

    Returns:
        The completed compaction instant (``action="commit"``), or ``None``
        when no chosen file group has log files.

    Raises:
        WriteError: no table, a copy-on-write table, or an unknown file group.
    """
    table = open_table_state(path, "compact")
    if not table.merge_on_read:
        refuse(path, "compact", "compaction needs a MERGE_ON_READ table, this one is COPY_ON_WRITE")
    storage, state = table.storage, table.state
    chosen = [s for s in select_slices(table, "compact", file_groups) if s.log_files]
    if not chosen or state.schema is None:
        return None
    rollback_pending(storage, state)
    as_of = state.completed[-1]
    instant = next_instant(state.instants)
    hoodie = cfg.HOODIE_DIR
    storage.write_bytes(f"{hoodie}/{instant}.compaction.requested", _plan(chosen))
    storage.write_bytes(f"{hoodie}/{instant}.compaction.inflight", b"")
    try:
        descriptors = spark.createDataFrame(
            [
                (s.partition_path, s.file_id, s.base_file, list(s.log_files), s.instant)
                for s in chosen
            ],
            _UNITS,
        ).repartition(max(1, min(len(chosen), 256)))
        body = functools.partial(_compact_units, storage, instant, as_of)
        schema = T.StructType.fromDDL(STATS_SCHEMA)
        assert isinstance(schema, T.StructType)
        rows = map_in_arrow(descriptors, body, schema).collect()
        writes = [FileWrite(**r.asDict()) for r in rows]
        rollback_instant(storage, instant, keep={w.path for w in writes})
        extra = {
            (s.partition_path, s.file_id): {
                "totalLogFilesCompacted": len(s.log_files),
                "totalLogSizeCompacted": s.log_size,
            }
            for s in chosen
        }
        import json

        metadata = commit_metadata(
            writes, "compact", json.dumps(state.schema, separators=(",", ":")), stat_extra=extra
        )
        storage.write_atomic(
            f"{hoodie}/{instant}.commit",
            to_json_bytes(metadata),
            f"{hoodie}/.temp/{instant}.commit.tmp",
        )
    except BaseException:
        rollback_instant(storage, instant)
        raise
    return Instant(sort_key=instant, id=instant, action="commit")
