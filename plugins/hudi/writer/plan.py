"""Routing: which file group each incoming row goes to, computed in Spark.

Three routings, one per kind of write:

- **bucketed** (``bucket_column`` and ``file_groups = N``): a row goes to file
  group ``value mod N`` of its partition, whose id is fixed
  (``0000000b-0000-0000-0000-000000000000-0``). No lookup of existing keys:
  the task merges with the group's latest base file itself.
- **bulk insert**: ``file_groups`` new file groups per partition, each holding
  a contiguous range of the record key in its fields' own order (like Hudi's
  ``GLOBAL_SORT`` bulk-insert mode, so min/max statistics and indexes can
  prune). Range-partitioned by Spark for unpartitioned tables; ranked per
  partition path otherwise. Existing groups are never touched.
- **indexed** (insert, upsert and delete otherwise): a "simple index" join of
  the incoming keys with the ``_hoodie_record_key`` column of the latest base
  files finds the file group of every key that exists; the rest are inserts,
  which first fill the partition's small file groups (latest base file below
  ``small_file_limit_bytes``) up to ``max_file_size_bytes`` and then go to new
  file groups, like Hudi's upsert partitioner.

When the driver knows the set of target file groups, each gets its own Spark
partition: the shuffle key is chosen so that Spark's hash partitioning
(Murmur3, seed 42, ``pmod`` by the partition count) sends target ``t`` to
partition ``t``. Otherwise tasks receive several file groups and handle each.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.plugins.hudi.keygen import KeySpec
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.task import FG_COLUMN, SHUFFLE_COLUMN, WriteDataError
from lakesieve.plugins.hudi.writer.timeline import Slice, TimelineState
from lakesieve.sdk.spark import default_parallelism
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

RECORD_KEY, PARTITION_PATH, FILE_NAME = META_COLUMNS[2], META_COLUMNS[3], META_COLUMNS[4]
SLOTS = 1_000_000
MAX_EXACT_TARGETS = 4096
_EXISTING_TID = "_lakesieve_w_etid"
_EXISTING_PP = "_lakesieve_w_epp"
_EXISTING_RK = "_lakesieve_w_erk"
_EXISTING_FN = "_lakesieve_w_efn"
_NAME_PP = "_lakesieve_w_npp"
_ASSIGN_PP = "_lakesieve_w_app"
_ASSIGN_BOUNDS = "_lakesieve_w_abounds"
_ASSIGN_TIDS = "_lakesieve_w_atids"
_MASK32 = 0xFFFFFFFF


def new_file_id() -> str:
    """A fresh file group id (``<uuid>-0``, as Hudi names them)."""
    return f"{uuid.uuid4()}-0"


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & np.uint64(_MASK32)


def spark_int_hash(values: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``hash()`` (Murmur3 x86 32-bit) of 32-bit integers, vectorised."""
    m = np.uint64(_MASK32)
    k = values.astype(np.int64).astype(np.uint64) & m
    k = (k * np.uint64(0xCC9E2D51)) & m
    k = _rotl(k, 15)
    k = (k * np.uint64(0x1B873593)) & m
    h = np.uint64(seed) ^ k
    h = _rotl(h, 13)
    h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & m
    h = h ^ np.uint64(4)
    h = h ^ (h >> np.uint64(16))
    h = (h * np.uint64(0x85EBCA6B)) & m
    h = h ^ (h >> np.uint64(13))
    h = (h * np.uint64(0xC2B2AE35)) & m
    h = h ^ (h >> np.uint64(16))
    return h.astype(np.uint32).view(np.int32)


def shuffle_keys(num_targets: int) -> list[int]:
    """Integers ``k[t]`` such that Spark's ``repartition(num_targets, k)`` puts ``k[t]`` in partition ``t``."""
    keys = np.full(num_targets, -1, dtype=np.int64)
    start = 0
    while (keys < 0).any():
        candidates = np.arange(start, start + 16 * num_targets + 1024, dtype=np.int64)
        parts = spark_int_hash(candidates).astype(np.int64) % num_targets
        uniq, first = np.unique(parts, return_index=True)
        fill = keys[uniq] < 0
        keys[uniq[fill]] = candidates[first[fill]]
        start += len(candidates)
    return keys.tolist()


def const_array(values: Sequence[Any], sql_type: str) -> Column:
    """A constant Spark array (folded to one literal by the optimiser)."""
    return F.from_json(F.lit(json.dumps(list(values))), f"array<{sql_type}>")


@dataclass
class Routing:
    """Rows tagged with their target file group, ready for the write job.

    Attributes:
        frame: incoming rows with ``_hoodie_record_key``,
            ``_hoodie_partition_path``, the target file id and the shuffle key.
        num_tasks: Spark partitions for the write job.
        prev: latest file slice per ``(partition, file id)`` the write may touch.
        cached: a persisted frame to release after the write.
    """

    frame: DataFrame
    num_tasks: int
    prev: dict[tuple[str, str], Slice] = field(default_factory=dict)
    cached: DataFrame | None = None

    def release(self) -> None:
        """Unpersist what this routing cached."""
        if self.cached is not None:
            self.cached.unpersist()
            self.cached = None


def _prev_of(slices: Mapping[tuple[str, str], Slice]) -> dict[tuple[str, str], Slice]:
    return dict(slices)


def _shuffle_by_target(
    frame: DataFrame, target: Column, dense: Sequence[int], max_tasks: int
) -> tuple[DataFrame, int]:
    """Add the shuffle key for integer targets.

    ``dense[t]`` numbers the targets that get rows (-1 for none); target
    ``t`` goes to task ``dense[t] mod tasks``, so file groups are spread
    round-robin over at most ``max_tasks`` tasks.
    """
    used = max(dense, default=-1) + 1
    if used == 0:
        return frame.withColumn(SHUFFLE_COLUMN, F.lit(0)), 1
    tasks = max(1, min(used, max_tasks, MAX_EXACT_TARGETS))
    keys = shuffle_keys(tasks)
    by_target = [keys[d % tasks] if d >= 0 else 0 for d in dense]
    column = F.element_at(const_array(by_target, "int"), (target + 1).cast("int"))
    return frame.withColumn(SHUFFLE_COLUMN, column), tasks


def route_bucketed(
    frame: DataFrame,
    spec: KeySpec,
    bucket_column: str,
    buckets: int,
    state: TimelineState,
    max_tasks: int,
) -> Routing:
    """Route rows to bucket ``bucket_column mod buckets`` of their partition."""
    bucket = F.pmod(F.col(bucket_column).cast("long"), F.lit(buckets))
    file_id = F.when(bucket.isNull(), F.lit(None)).otherwise(
        F.format_string("%08d-0000-0000-0000-000000000000-0", bucket)
    )
    frame = frame.withColumn(FG_COLUMN, file_id)
    prev = _prev_of(state.slices)
    if not spec.partitioned:
        frame, tasks = _shuffle_by_target(frame, bucket, list(range(buckets)), max_tasks)
        return Routing(frame, tasks, prev)
    tasks = max(1, min(buckets * max(1, len(state.partitions)), max_tasks))
    frame = frame.withColumn(SHUFFLE_COLUMN, F.hash(F.col(PARTITION_PATH), bucket))
    return Routing(frame, tasks, prev)


def route_bulk_insert(
    frame: DataFrame, spec: KeySpec, groups: int, instant: str, max_tasks: int
) -> Routing:
    """Cut each partition's rows into ``groups`` new file groups by record-key range."""
    order = [F.col(c) for c in spec.record_key]
    if not spec.partitioned:
        frame = frame.repartitionByRange(groups, *order)
        slot = F.spark_partition_id()
    else:
        rank = F.percent_rank().over(Window.partitionBy(F.col(PARTITION_PATH)).orderBy(*order))
        slot = F.least(F.floor(rank * F.lit(groups)).cast("int"), F.lit(groups - 1))
    frame = frame.withColumn("_lakesieve_slot", slot)
    slot = F.col("_lakesieve_slot")
    if not spec.partitioned:
        file_ids = [new_file_id() for _ in range(groups)]
        frame = frame.withColumn(
            FG_COLUMN, F.element_at(const_array(file_ids, "string"), (slot + 1).cast("int"))
        )
        frame, tasks = _shuffle_by_target(frame, slot, list(range(groups)), max_tasks)
        return Routing(frame, tasks)
    digest = F.sha2(
        F.concat_ws("/", F.lit(instant), F.col(PARTITION_PATH), slot.cast("string")), 256
    )
    pieces = [
        F.substring(digest, start, length)
        for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    ]
    file_id = F.concat(F.concat_ws("-", *pieces), F.lit("-0"))
    frame = frame.withColumn(FG_COLUMN, file_id)
    frame = frame.withColumn(SHUFFLE_COLUMN, F.hash(F.col(PARTITION_PATH), slot))
    return Routing(frame, max(1, max_tasks))


def estimate_bytes(df: DataFrame) -> int | None:
    """Spark's estimate of ``df``'s size in bytes, when it has a usable one."""
    try:
        size = int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes().toString())
    except Exception:  # Spark Connect, or no statistics
        return None
    return size if 0 < size < 1 << 50 else None


def estimate_file_groups(df: DataFrame, max_file_size: int) -> int:
    """Enough file groups for ``df``'s estimated size at ``max_file_size`` each (at least 1)."""
    size = estimate_bytes(df)
    return max(1, math.ceil(size / max_file_size)) if size else 1


def max_write_tasks(spark: SparkSession, df: DataFrame) -> int:
    """Tasks for a write job: four per core, up to 32 per core for large data (256 MB each)."""
    cores = default_parallelism(spark)
    size = estimate_bytes(df) or 0
    by_size = min(math.ceil(size / (256 << 20)), 32 * cores)
    return max(1, min(MAX_EXACT_TARGETS, max(4 * cores, by_size)))


def assign_inserts(
    inserts: Mapping[str, int],
    groups: Mapping[str, Sequence[tuple[int, Slice]]],
    avg_record_bytes: int,
    small_file_limit: int,
    max_file_size: int,
) -> dict[str, list[tuple[int | None, int]]]:
    """Decide where each partition's new rows go, like Hudi's upsert partitioner.

    Args:
        inserts: rows to insert per partition path.
        groups: the existing ``(target id, latest slice)`` pairs per partition.
        avg_record_bytes: estimated bytes per row in a base file.
        small_file_limit: groups whose base file is smaller take inserts first.
        max_file_size: size a group is filled up to.

    Returns:
        Per partition, ``(target id or None for a new group, rows)`` pairs.
    """
    out: dict[str, list[tuple[int | None, int]]] = {}
    avg = max(1, avg_record_bytes)
    for partition, count in sorted(inserts.items()):
        if count <= 0:
            continue
        remaining = count
        plan: list[tuple[int | None, int]] = []
        small = sorted(
            (s.size + s.log_size, tid)
            for tid, s in groups.get(partition, ())
            if s.size + s.log_size < small_file_limit
        )
        for size, tid in small:
            capacity = (max_file_size - size) // avg
            if capacity <= 0:
                continue
            take = min(capacity, remaining)
            plan.append((tid, take))
            remaining -= take
            if remaining == 0:
                break
        if remaining:
            per_file = max(1, max_file_size // avg)
            new_groups = math.ceil(remaining / per_file)
            base, extra = divmod(remaining, new_groups)
            plan += [(None, base + (1 if j < extra else 0)) for j in range(new_groups)]
        out[partition] = plan
    return out


def _slot_bounds(counts: Sequence[int]) -> list[int]:
    """Upper slot bounds (exclusive) splitting ``SLOTS`` in proportion to ``counts``."""
    total = sum(counts)
    bounds = []
    running = 0
    for c in counts[:-1]:
        running += c
        bounds.append(running * SLOTS // total)
    return bounds


@dataclass
class IndexedInputs:
    """What :func:`route_indexed` needs besides the frame.

    Attributes:
        mode: ``insert``, ``upsert`` or ``delete``.
        has_partition_columns: whether the frame carries the partition path.
        small_file_limit: ``small_file_limit_bytes``.
        max_file_size: ``max_file_size_bytes``.
        key_description: how to name the record key in errors.
        max_tasks: most Spark tasks for the write job.
    """

    mode: str
    has_partition_columns: bool
    small_file_limit: int
    max_file_size: int
    key_description: str
    max_tasks: int


class _LogKeys:
    """``mapInArrow`` body: the record keys written to log files, one row per key."""

    def __init__(self, storage: TableStorage) -> None:
        self.storage = storage

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lakesieve.plugins.hudi.writer.log_block import read_log_events

        for batch in batches:
            for row in batch.to_pylist():
                logs = [self.storage.read_bytes(rel) for rel in row["logs"]]
                keys = sorted(
                    {k for e in read_log_events(logs, None) if not e.deleted for k in e.keys}
                )
                if keys:
                    yield pa.RecordBatch.from_pydict(
                        {
                            _EXISTING_RK: pa.array(keys, pa.string()),
                            _EXISTING_PP: pa.array([row["pp"]] * len(keys), pa.string()),
                            _EXISTING_TID: pa.array([row["tid"]] * len(keys), pa.int32()),
                        }
                    )


def _existing_keys(
    spark: SparkSession, storage: TableStorage, slices: Sequence[Slice]
) -> DataFrame:
    """``(record key, partition path, target id)`` of every row in the latest slices.

    Keys of base files come from Spark's Parquet reader; keys that merge-on-read
    log files added (a data block's keys, deleted ones included) from a small
    ``mapInArrow`` job over the slices with log files.
    """
    with_logs = [(tid, s) for tid, s in enumerate(slices) if s.log_files]
    log_keys = None
    if with_logs:
        from lakesieve.plugins.hudi.spark_read import map_in_arrow

        descriptors = spark.createDataFrame(
            [(tid, s.partition_path, list(s.log_files)) for tid, s in with_logs],
            "tid int, pp string, logs array<string>",
        ).repartition(max(1, min(len(with_logs), 64)))
        log_keys = map_in_arrow(
            descriptors,
            _LogKeys(storage),
            T.StructType(
                [
                    T.StructField(_EXISTING_RK, T.StringType()),
                    T.StructField(_EXISTING_PP, T.StringType()),
                    T.StructField(_EXISTING_TID, T.IntegerType()),
                ]
            ),
        )
    based = [(tid, s) for tid, s in enumerate(slices) if s.base_file]
    if not based:
        assert log_keys is not None
        return log_keys
    paths = [storage.spark_path(s.base_file) for _tid, s in based]
    keys = spark.read.parquet(*paths).select(
        F.col(RECORD_KEY).alias(_EXISTING_RK),
        F.col(PARTITION_PATH).alias(_EXISTING_PP),
        F.col(FILE_NAME).alias(_EXISTING_FN),
    )
    # bucket file ids repeat in every partition: a base file is known by partition and name
    names = [(s.partition_path, s.base_file.rsplit("/", 1)[-1], tid) for tid, s in based]
    by_name = spark.createDataFrame(
        names, f"{_NAME_PP} string, {_EXISTING_FN} string, {_EXISTING_TID} int"
    )
    joined = keys.join(
        F.broadcast(by_name),
        (keys[_EXISTING_FN] == by_name[_EXISTING_FN]) & (keys[_EXISTING_PP] == by_name[_NAME_PP]),
    )
    found = joined.select(_EXISTING_RK, _EXISTING_PP, _EXISTING_TID)
    return found if log_keys is None else found.unionByName(log_keys)


def route_indexed(
    spark: SparkSession,
    storage: TableStorage,
    frame: DataFrame,
    state: TimelineState,
    inputs: IndexedInputs,
) -> Routing:
    """Route by looking up existing keys; place inserts with small-file handling."""
    slices = sorted(state.slices.values(), key=lambda s: (s.partition_path, s.file_id))
    if inputs.mode in ("upsert", "delete") and slices:
        keys = _existing_keys(spark, storage, slices)
        condition = F.col(RECORD_KEY) == F.col(_EXISTING_RK)
        if inputs.has_partition_columns:
            condition = condition & (F.col(PARTITION_PATH) == F.col(_EXISTING_PP))
        tagged = frame.join(keys, condition, "inner" if inputs.mode == "delete" else "left")
        if not inputs.has_partition_columns:
            tagged = tagged.withColumn(PARTITION_PATH, F.col(_EXISTING_PP))
        tagged = tagged.drop(_EXISTING_RK, _EXISTING_PP)
    elif inputs.mode == "delete":
        return Routing(
            frame.limit(0).withColumn(FG_COLUMN, F.lit("")).withColumn(SHUFFLE_COLUMN, F.lit(0)), 1
        )
    else:
        tagged = frame.withColumn(_EXISTING_TID, F.lit(None).cast("int"))

    file_ids = [s.file_id for s in slices]
    if inputs.mode == "delete":
        tagged = tagged.withColumn(
            FG_COLUMN, F.element_at(const_array(file_ids, "string"), F.col(_EXISTING_TID) + 1)
        )
        tagged, tasks = _shuffle_by_target(
            tagged, F.col(_EXISTING_TID), list(range(len(slices))), inputs.max_tasks
        )
        return Routing(tagged.drop(_EXISTING_TID), tasks, _prev_of(state.slices))

    tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        summary = (
            tagged.groupBy(PARTITION_PATH)
            .agg(
                F.count(F.when(F.col(_EXISTING_TID).isNull(), 1)).alias("inserts"),
                F.count(F.when(F.col(RECORD_KEY).isNull(), 1)).alias("bad"),
                F.collect_set(_EXISTING_TID).alias("touched"),
            )
            .collect()
        )
        if sum(int(r["bad"]) for r in summary):
            raise WriteDataError(f"null or empty {inputs.key_description} in the data")
    except BaseException:
        tagged.unpersist()
        raise

    by_partition: dict[str, list[tuple[int, Slice]]] = {}
    for tid, s in enumerate(slices):
        by_partition.setdefault(s.partition_path, []).append((tid, s))
    plan = assign_inserts(
        {r[PARTITION_PATH]: int(r["inserts"]) for r in summary},
        by_partition,
        state.avg_record_bytes(),
        inputs.small_file_limit,
        inputs.max_file_size,
    )
    touched: set[int] = {int(t) for r in summary for t in r["touched"]}
    all_ids = list(file_ids)
    assign_rows = []
    for partition, entries in plan.items():
        tids: list[int] = []
        for existing, _rows in entries:
            if existing is None:
                tids.append(len(all_ids))
                all_ids.append(new_file_id())
            else:
                tids.append(existing)
            touched.add(tids[-1])
        assign_rows.append((partition, _slot_bounds([c for _t, c in entries]), tids))
    if assign_rows:
        assign = spark.createDataFrame(
            assign_rows,
            f"{_ASSIGN_PP} string, {_ASSIGN_BOUNDS} array<int>, {_ASSIGN_TIDS} array<int>",
        )
        tagged_in = tagged.join(
            F.broadcast(assign), F.col(PARTITION_PATH) == F.col(_ASSIGN_PP), "left"
        )
        slot = F.pmod(F.xxhash64(F.col(RECORD_KEY), F.col(PARTITION_PATH)), F.lit(SLOTS))
        index = F.size(F.filter(F.col(_ASSIGN_BOUNDS), lambda b: b <= slot))
        inserted = F.element_at(F.col(_ASSIGN_TIDS), (index + 1).cast("int"))
        target = F.coalesce(F.col(_EXISTING_TID), inserted)
        routed = tagged_in.withColumn(_EXISTING_TID, target).drop(
            _ASSIGN_PP, _ASSIGN_BOUNDS, _ASSIGN_TIDS
        )
    else:
        routed = tagged
    dense = [-1] * len(all_ids)
    for i, tid in enumerate(sorted(touched)):
        dense[tid] = i
    routed = routed.withColumn(
        FG_COLUMN, F.element_at(const_array(all_ids, "string"), F.col(_EXISTING_TID) + 1)
    )
    routed, tasks = _shuffle_by_target(routed, F.col(_EXISTING_TID), dense, inputs.max_tasks)
    return Routing(routed.drop(_EXISTING_TID), tasks, _prev_of(state.slices), cached=tagged)
