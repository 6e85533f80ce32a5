"""Clustering: rewrite file groups into new ones sorted by a column, as one ``replacecommit``.

:func:`cluster` reads the chosen file groups as readers see them at the latest
completed instant (base files and merged logs, with their meta columns), cuts
each partition's rows into ``target_file_groups`` new file groups by ranges of
``sort_by`` (ties broken by record key), sorts each new group's rows and writes
one base file per group. The timeline gets ``<instant>.replacecommit.requested``
(empty), ``.replacecommit.inflight`` and the completed ``.replacecommit`` whose
``partitionToReplaceFileIds`` names the replaced groups. Rows keep their
``_hoodie_commit_time``; readers see the same rows before and after.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.plugins.hudi.partitions import location_of
from lakesieve.plugins.hudi.services.common import (
    collect_batches,
    open_table_state,
    refuse,
    select_slices,
    task_token,
    write_base_file,
)
from lakesieve.plugins.hudi.spark_read import map_in_arrow
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.commit import (
    FileWrite,
    commit_metadata,
    inflight_metadata,
    next_instant,
    to_json_bytes,
)
from lakesieve.plugins.hudi.writer.plan import const_array
from lakesieve.plugins.hudi.writer.rollback import rollback_pending
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS, file_schema
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.task import STATS_ARROW, STATS_SCHEMA
from lakesieve.plugins.hudi.writer.timeline import rollback_instant
from lakesieve.sdk import Instant, TableRef
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

RECORD_KEY, PARTITION_PATH = META_COLUMNS[2], META_COLUMNS[3]
_FID = "_lakesieve_c_fid"
_SLOT = "_lakesieve_c_slot"


def _write_groups(
    storage: TableStorage, instant: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: one new base file per (partition, new file id) in the task's rows."""
    rows = collect_batches(batches)
    if rows is None:
        return
    _task, token = task_token()
    fids = rows[_FID].to_numpy(zero_copy_only=False)
    pps = rows[PARTITION_PATH].to_numpy(zero_copy_only=False)
    change = np.flatnonzero((fids[1:] != fids[:-1]) | (pps[1:] != pps[:-1])) + 1
    bounds = [0, *change.tolist(), rows.num_rows]
    out = []
    for start, stop in itertools.pairwise(bounds):
        started = time.monotonic()
        part = rows.slice(start, stop - start).select(schema.names).cast(schema)
        pp, fid = str(pps[start]), str(fids[start])
        name = f"{fid}_{token}_{instant}.parquet"
        size = write_base_file(storage, instant, pp, name, part, "CREATE")
        out.append(
            {
                "partition_path": pp,
                "file_id": fid,
                "file_name": name,
                "prev_commit": "null",
                "num_writes": part.num_rows,
                "num_deletes": 0,
                "num_update_writes": 0,
                "num_inserts": part.num_rows,
                "file_size": size,
                "create_ms": int((time.monotonic() - started) * 1000),
                "upsert_ms": 0,
                "base_file": "",
                "log_version": 0,
            }
        )
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=STATS_ARROW)


def cluster(
    spark: SparkSession,
    path: str,
    sort_by: str,
    file_groups: Iterable[str] | None = None,
    target_file_groups: int | None = None,
) -> Instant | None:
    """Rewrite file groups of the table at ``path`` into new ones sorted by ``sort_by``.

    Args:
        spark: the session that runs the clustering job.
        path: the table root (copy-on-write or merge-on-read).
        sort_by: the data column to sort and range-partition by.
        file_groups: locations (``<partition path>/<file id>``) or file ids to
            rewrite; all live file groups by default.
        target_file_groups: new file groups per partition; by default as many
            as the partition's replaced ones.

    Returns:
        The completed ``replacecommit`` instant, or ``None`` when the table
        has no file group to rewrite.

    Raises:
        WriteError: no table, an unknown column or file group, or a bad
            ``target_file_groups``.
    """
    table = open_table_state(path, "cluster")
    storage, state = table.storage, table.state
    if state.schema is None:
        return None
    columns = [f["name"] for f in state.schema.get("fields", [])]
    if sort_by not in columns:
        refuse(path, "cluster", f"column {sort_by!r} is not in the table (option sort_by)")
    if target_file_groups is not None and (
        not isinstance(target_file_groups, int) or target_file_groups < 1
    ):
        refuse(
            path,
            "cluster",
            f"target_file_groups must be an integer >= 1, not {target_file_groups!r}",
        )
    chosen = select_slices(table, "cluster", file_groups)
    if not chosen:
        return None
    rollback_pending(storage, state)
    as_of = state.completed[-1]
    instant = next_instant(state.instants)
    hoodie = cfg.HOODIE_DIR
    storage.write_bytes(f"{hoodie}/{instant}.replacecommit.requested", b"")
    storage.write_bytes(
        f"{hoodie}/{instant}.replacecommit.inflight", to_json_bytes(inflight_metadata("cluster"))
    )
    replaced: dict[str, list[str]] = {}
    for s in chosen:
        replaced.setdefault(s.partition_path, []).append(s.file_id)
    try:
        writes = _rewrite(
            spark,
            table.path,
            storage,
            instant,
            as_of,
            chosen,
            sort_by,
            target_file_groups,
            replaced,
        )
        rollback_instant(storage, instant, keep={w.path for w in writes})
        schema_json = json.dumps(state.schema, separators=(",", ":"))
        metadata = commit_metadata(writes, "cluster", schema_json, replaced=replaced)
        storage.write_atomic(
            f"{hoodie}/{instant}.replacecommit",
            to_json_bytes(metadata),
            f"{hoodie}/.temp/{instant}.replacecommit.tmp",
        )
    except BaseException:
        rollback_instant(storage, instant)
        raise
    return Instant(sort_key=instant, id=instant, action="replacecommit")


def _rewrite(
    spark: SparkSession,
    path: str,
    storage: TableStorage,
    instant: str,
    as_of: str,
    chosen: list[Any],
    sort_by: str,
    target: int | None,
    replaced: dict[str, list[str]],
) -> list[FileWrite]:
    from lakesieve.plugins.hudi.snapshot import build_snapshot
    from lakesieve.plugins.hudi.spark_read import read_units

    ref = TableRef(path=path, format="hudi")
    wanted = {location_of(s.partition_path, s.file_id) for s in chosen}
    units = [u for u in build_snapshot(ref, as_of).units if u.location in wanted]
    df = read_units(spark, ref, units, as_of, with_location=False)
    partitions = sorted(replaced)
    counts = [target or len(replaced[p]) for p in partitions]
    data = T.StructType([f for f in df.schema.fields if f.name not in META_COLUMNS])
    schema = file_schema(data)
    p_index = F.array_position(const_array(partitions, "string"), F.col(PARTITION_PATH))
    groups = F.element_at(const_array(counts, "int"), p_index.cast("int"))
    order = [F.col(sort_by), F.col(RECORD_KEY)]
    rank = F.percent_rank().over(Window.partitionBy(F.col(PARTITION_PATH)).orderBy(*order))
    slot = F.least(F.floor(rank * groups).cast("int"), groups - 1)
    digest = F.sha2(
        F.concat_ws("/", F.lit(instant), F.col(PARTITION_PATH), F.col(_SLOT).cast("string")), 256
    )
    pieces = [F.substring(digest, a, n) for a, n in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))]
    df = df.withColumn(_SLOT, slot).withColumn(
        _FID, F.concat(F.concat_ws("-", *pieces), F.lit("-0"))
    )
    tasks = max(1, min(sum(counts), 64))
    df = df.repartition(tasks, F.col(PARTITION_PATH), F.col(_SLOT)).sortWithinPartitions(
        F.col(PARTITION_PATH), F.col(_FID), *order
    )
    body = functools.partial(_write_groups, storage, instant, schema)
    stats_schema = T.StructType.fromDDL(STATS_SCHEMA)
    assert isinstance(stats_schema, T.StructType)
    stats = map_in_arrow(df, body, stats_schema).collect()
    return [FileWrite(**r.asDict()) for r in stats]
