"""lakesieve's own Apache Hudi writer: copy-on-write and merge-on-read tables of version 6.

:func:`write_table` turns one Spark DataFrame into one completed instant:

1. Check the options and the data's schema against the table (nothing is
   written when they are wrong: :class:`~lakesieve.sdk.WriteError`).
2. Roll back any write that started but never completed (markers), recording
   a ``rollback`` instant (:mod:`.rollback`).
3. Route every row to its target file group (:mod:`.plan`).
4. Write the requested and inflight instant files; run one Spark job that
   handles each touched file group (:mod:`.task`); collect one stats
   row per file. Copy-on-write rewrites the group into a new base file;
   merge-on-read (``table_type="mor"``, every write a ``deltacommit``)
   writes new file groups as base files and appends one log file to each
   existing group (:mod:`.mor`).
5. Remove files of failed task attempts, write ``.hoodie_partition_metadata``
   for new partitions, then the completed ``<instant>.commit`` or
   ``<instant>.deltacommit``.

With ``options.extra["fail_before_commit"] = "true"`` the write stops before
step 5 and leaves its files and its inflight instant behind, as a crashed
writer would (for tests); readers never show such a write, and the next write
or :func:`lakesieve.plugins.hudi.services.rollback_failed` rolls it back.

Semantics, per ``options.mode``:

- ``bulk_insert``: new file groups (``file_groups`` per partition, default
  from the data's estimated size); bucketed tables add the rows to their
  buckets. No lookup of existing keys.
- ``insert``: new rows, packed into the partition's small file groups first.
  No lookup of existing keys: a key that already exists is stored twice.
- ``upsert``: rows whose key exists in the partition replace the stored row
  (the incoming row wins, as with Hudi's default payload); others are inserts.
- ``delete``: rows with these keys are removed. The data needs the record
  key columns; with the partition columns the match is per partition,
  without them a key is deleted from every partition holding it. A file
  group whose rows are all deleted gets a new, empty base file.

Duplicates of one key in one batch are reduced to one row before writing: the
largest ``precombine`` value wins, else the last row. In bucketed tables a
row's bucket comes from ``bucket_column``; keys are matched within their
bucket (a key whose bucket value changes is a new row of the new bucket).
"""

from __future__ import annotations

from collections.abc import Sequence

from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.commit import (
    FileWrite,
    commit_metadata,
    inflight_metadata,
    next_instant,
    to_json_bytes,
)
from lakesieve.plugins.hudi.writer.plan import (
    IndexedInputs,
    Routing,
    estimate_file_groups,
    max_write_tasks,
    route_bucketed,
    route_bulk_insert,
    route_indexed,
)
from lakesieve.plugins.hudi.writer.rollback import rollback_pending
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS, file_schema
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.task import (
    ERROR_TAG,
    SHUFFLE_COLUMN,
    STATS_SCHEMA,
    FileGroupWriter,
    TaskPlan,
    WriteDataError,
)
from lakesieve.plugins.hudi.writer.timeline import TimelineState, load_timeline, rollback_instant
from lakesieve.plugins.hudi.writer.validate import MODES, WriteJob, fail, validate
from lakesieve.sdk import Instant, WriteError, WriteOptions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["MODES", "write_table"]

FAIL_BEFORE_COMMIT = "fail_before_commit"


def commit_action(job: WriteJob) -> str:
    """``deltacommit`` for merge-on-read tables, ``commit`` otherwise."""
    return "deltacommit" if job.table_type == "mor" else "commit"


def requested_files(action: str, instant: str) -> tuple[str, str]:
    """Names of the requested and inflight files of a write instant (under ``.hoodie``)."""
    if action == "commit":
        return f"{instant}.commit.requested", f"{instant}.inflight"
    return f"{instant}.{action}.requested", f"{instant}.{action}.inflight"


def _project(df: DataFrame, job: WriteJob) -> DataFrame:
    """The incoming rows' columns in table order, plus record key and partition path."""
    columns = [F.col(c) for c in job.columns]
    columns.append(job.spec.record_key_column().alias(META_COLUMNS[2]))
    if job.mode != "delete" or job.has_partition_columns:
        columns.append(job.spec.partition_path_column().alias(META_COLUMNS[3]))
    return df.select(*columns)


def _route(
    spark: SparkSession,
    storage: TableStorage,
    df: DataFrame,
    job: WriteJob,
    state: TimelineState,
    instant: str,
    options: WriteOptions,
) -> Routing:
    frame = _project(df, job)
    max_tasks = max_write_tasks(spark, df)
    key_text = f"record key ({', '.join(job.spec.record_key)})"
    routable = job.has_bucket_column and (job.has_partition_columns or not job.spec.partitioned)
    if job.bucket is not None and (job.mode != "delete" or routable):
        return route_bucketed(frame, job.spec, job.bucket[0], job.bucket[1], state, max_tasks)
    if job.mode == "bulk_insert":
        groups = job.file_groups or estimate_file_groups(df, options.max_file_size_bytes)
        return route_bulk_insert(frame, job.spec, groups, instant, max_tasks)
    inputs = IndexedInputs(
        job.mode,
        job.mode != "delete" or job.has_partition_columns,
        options.small_file_limit_bytes,
        options.max_file_size_bytes,
        key_text,
        max_tasks,
    )
    return route_indexed(spark, storage, frame, state, inputs)


def _data_error(exc: BaseException) -> str | None:
    """The message of a :class:`WriteDataError` raised in a task, if ``exc`` carries one."""
    text = str(exc)
    at = text.find(ERROR_TAG)
    if at < 0:
        return None
    return text[at + len(ERROR_TAG) :].splitlines()[0].strip()


def _finish(
    storage: TableStorage,
    job: WriteJob,
    state: TimelineState,
    instant: str,
    writes: Sequence[FileWrite],
) -> None:
    groups = [(w.partition_path, w.file_id) for w in writes]
    if len(set(groups)) != len(groups):
        raise RuntimeError(f"internal error: a file group was written twice by instant {instant}")
    kept = {w.path for w in writes} | {w.cdc_file for w in writes if w.cdc_file}
    rollback_instant(storage, instant, keep=kept)
    depth = len(job.spec.partition_by) if job.spec.partitioned else 0
    for partition in sorted({w.partition_path for w in writes} - state.partitions):
        rel = (
            f"{partition}/{cfg.PARTITION_METADATA_FILE}"
            if partition
            else cfg.PARTITION_METADATA_FILE
        )
        if not storage.exists(rel):
            storage.write_bytes(rel, cfg.partition_metadata(instant, depth))
    metadata = commit_metadata(writes, job.mode, job.schema_json)
    action = commit_action(job)
    storage.write_atomic(
        f"{cfg.HOODIE_DIR}/{instant}.{action}",
        to_json_bytes(metadata),
        f"{cfg.HOODIE_DIR}/.temp/{instant}.{action}.tmp",
    )


def write_table(spark: SparkSession, path: str, df: DataFrame, options: WriteOptions) -> Instant:
    """Write ``df`` to the Hudi table at ``path`` as one commit (deltacommit on merge-on-read).

    Creates the table (``.hoodie/hoodie.properties``) when it does not exist,
    of ``options.table_type`` (``cow`` or ``mor``). See the module docstring
    for what each mode does.

    Args:
        spark: the session that runs the write job.
        path: the table root (local path or URI).
        df: the rows to write (for ``delete``: at least the record key columns).
        options: mode, record key, partitioning, buckets, sizes...

    Returns:
        The completed instant (``action`` ``commit`` or ``deltacommit``); with
        ``fail_before_commit`` the instant left inflight.

    Raises:
        WriteError: bad options or data (unknown mode, missing or unknown key,
            partition or bucket column, schema mismatch, delete on a missing
            table, null record keys...). The table is left as it was.
    """
    storage = TableStorage(path)
    props = cfg.read_table_properties(storage)
    state = load_timeline(storage) if props is not None else TimelineState()
    job = validate(path, df, options, props, state)

    fail_before_commit = str((options.extra or {}).get(FAIL_BEFORE_COMMIT, "")).lower() == "true"
    rollback_pending(storage, state)
    instant = next_instant(state.instants)
    action = commit_action(job)
    try:
        routing = _route(spark, storage, df, job, state, instant, options)
    except WriteDataError as exc:
        fail(path, _data_error(exc) or str(exc))

    created = False
    try:
        if job.new_properties is not None:
            cfg.create_table_layout(storage, job.new_properties)
            created = True
        requested, inflight = requested_files(action, instant)
        storage.write_bytes(f"{cfg.HOODIE_DIR}/{requested}", b"")
        storage.write_bytes(
            f"{cfg.HOODIE_DIR}/{inflight}", to_json_bytes(inflight_metadata(job.mode))
        )
        plan = TaskPlan(
            storage=storage,
            instant=instant,
            mode=job.mode,
            file_schema=file_schema(job.data_schema) if job.data_schema is not None else None,
            precombine=job.precombine,
            prev=routing.prev,
            key_description=f"record key ({', '.join(job.spec.record_key)})",
            bucket_description=f"bucket column {job.bucket[0]!r}" if job.bucket else "",
            table_type=job.table_type,
            schema_json=job.schema_json,
            completed=frozenset(state.completed),
            cdc=job.cdc,
        )
        stats = (
            routing.frame.repartition(routing.num_tasks, SHUFFLE_COLUMN)
            .mapInArrow(FileGroupWriter(plan), STATS_SCHEMA)
            .collect()
        )
        writes = [FileWrite(**row.asDict()) for row in stats]
        if not fail_before_commit:
            _finish(storage, job, state, instant, writes)
    except BaseException as exc:
        rollback_instant(storage, instant)
        if created:
            storage.delete_dir(cfg.HOODIE_DIR)
        message = _data_error(exc)
        if message:
            raise WriteError(f"cannot write Hudi table {path}: {message}") from exc
        raise
    finally:
        routing.release()
    return Instant(sort_key=instant, id=instant, action=action)
