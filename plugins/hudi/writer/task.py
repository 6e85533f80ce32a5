"""What each Spark task of a write does: merge one file group and write its new base file.

The driver routes every incoming row to its target file group (columns
:data:`FG_COLUMN` and ``_hoodie_partition_path``) and shuffles so that all
rows of one file group meet in one task. :class:`FileGroupWriter` is the
function ``mapInArrow`` runs there: for each file group in its rows it reads
the group's latest base file with pyarrow (when there is one), applies the
commit (insert, upsert or delete by record key), writes a new base file
``<fileId>_<task>-<stage>-<attempt>_<instant>.parquet`` next to it, and
yields one small stats row per file for the driver's commit metadata.

Every file is announced by a marker under ``.hoodie/.temp/<instant>/`` before
it is written, so a failed write can be rolled back. Bad rows (null record
key, null bucket value) raise :class:`WriteDataError` before the group's file
is written.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lakesieve.plugins.hudi.cdc import (
    CDC_DATA_BLOCK,
    CDC_SUFFIX,
    block_content,
    cdc_schema,
    encode_records,
)
from lakesieve.plugins.hudi.writer.log_block import (
    INSTANT_TIME,
    SCHEMA,
    encode_block,
    log_file_name,
    with_meta_fields,
)
from lakesieve.plugins.hudi.writer.mor import append_to_slice
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS
from lakesieve.plugins.hudi.writer.task_plan import TaskPlan, dedupe
from lakesieve.plugins.hudi.writer.timeline import marker_path

COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_COLUMNS
FG_COLUMN = "_lakesieve_w_fg"
SHUFFLE_COLUMN = "_lakesieve_w_pk"
ERROR_TAG = "[lakesieve-write] "

#: Spark schema of the stats rows the write job returns (one row per file).
STATS_SCHEMA = (
    "partition_path string, file_id string, file_name string, prev_commit string, "
    "num_writes long, num_deletes long, num_update_writes long, num_inserts long, "
    "file_size long, create_ms long, upsert_ms long, base_file string, log_version long, "
    "cdc_file string, cdc_size long"
)
#: The Arrow schema of the per-file write statistics a write or table-service task yields.
STATS_ARROW = pa.schema(
    [pa.field(n, pa.string()) for n in ("partition_path", "file_id", "file_name", "prev_commit")]
    + [
        pa.field(n, pa.int64())
        for n in (
            "num_writes",
            "num_deletes",
            "num_update_writes",
            "num_inserts",
            "file_size",
            "create_ms",
            "upsert_ms",
        )
    ]
    + [pa.field("base_file", pa.string()), pa.field("log_version", pa.int64())]
    + [pa.field("cdc_file", pa.string()), pa.field("cdc_size", pa.int64())]
)


class WriteDataError(ValueError):
    """A row the writer refuses; the message starts with :data:`ERROR_TAG`."""

    def __init__(self, message: str) -> None:
        super().__init__(ERROR_TAG + message)


def _constant(value: str, n: int) -> pa.Array:
    return pa.nulls(n, pa.string()).fill_null(value)


def _task_ids() -> tuple[int, str]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, "0-0-0"
    return ctx.partitionId(), f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.attemptNumber()}"


def merged_in_place(old: pa.Table, new: pa.Table, is_update: pa.ChunkedArray) -> pa.Table:
    """``old`` with each updated record's row replaced where it stood, then the inserts.

    Apache Hudi's merge handle writes a file group's new base file this way
    (old records in their order, an updated one as its new version, new
    records after them), so a record keeps its position unless a record
    before it was deleted. Readers do not depend on it; a refresh that
    compares the two versions of a base file row by row reads less for it.
    """
    n = old.num_rows
    update_of = pc.index_in(old[RECORD_KEY], value_set=new[RECORD_KEY].combine_chunks())
    updated = update_of.is_valid().to_numpy(zero_copy_only=False)
    source = pc.fill_null(update_of, 0).to_numpy().astype(np.int64) + n
    order = np.where(updated, source, np.arange(n, dtype=np.int64))
    inserted = np.flatnonzero(~is_update.to_numpy(zero_copy_only=False)) + n
    return pa.concat_tables([old, new]).take(pa.array(np.concatenate([order, inserted])))


def _group_slices(rows: pa.Table) -> Iterator[tuple[str, str, pa.Table]]:
    """Split the task's rows by ``(partition path, file id)``."""
    pp = rows[PARTITION_PATH]
    fg = rows[FG_COLUMN]
    if pc.count_distinct(pp).as_py() == 1 and pc.count_distinct(fg).as_py() == 1:
        yield pp[0].as_py(), fg[0].as_py(), rows
        return
    order = pc.sort_indices(
        rows.select([PARTITION_PATH, FG_COLUMN]),
        sort_keys=[(PARTITION_PATH, "ascending"), (FG_COLUMN, "ascending")],
    )
    rows = rows.take(order)
    pp_np = rows[PARTITION_PATH].to_numpy(zero_copy_only=False)
    fg_np = rows[FG_COLUMN].to_numpy(zero_copy_only=False)
    change = np.flatnonzero((pp_np[1:] != pp_np[:-1]) | (fg_np[1:] != fg_np[:-1])) + 1
    bounds = [0, *change.tolist(), rows.num_rows]
    for start, stop in itertools.pairwise(bounds):
        yield str(pp_np[start]), str(fg_np[start]), rows.slice(start, stop - start)


@dataclass
class ChangeImages:
    """The rows one file group lost and gained in a write, for its change data file.

    ``before_updated`` and ``after_updated`` hold the old and new versions of
    the updated records (same record keys); ``before_only`` the deleted rows;
    ``after_only`` the inserted rows.
    """

    before_updated: pa.Table | None = None
    after_updated: pa.Table | None = None
    before_only: pa.Table | None = None
    after_only: pa.Table | None = None

    @property
    def records(self) -> int:
        """The number of change records."""
        return sum(
            t.num_rows
            for t in (self.after_updated, self.before_only, self.after_only)
            if t is not None
        )

    def cdc_records(self, instant: str) -> list[dict[str, object]]:
        """``data_before_after`` records: updates (paired by record key), deletes, inserts."""
        out: list[dict[str, object]] = []
        if self.before_updated is not None and self.after_updated is not None:
            old = self.before_updated.sort_by(RECORD_KEY).to_pylist()
            new = self.after_updated.sort_by(RECORD_KEY).to_pylist()
            if [r[RECORD_KEY] for r in old] != [r[RECORD_KEY] for r in new]:
                raise AssertionError("updated records differ between their two versions")
            out += [
                {"op": "u", "ts_ms": instant, "before": b, "after": a}
                for b, a in zip(old, new, strict=True)
            ]
        if self.before_only is not None:
            out += [
                {"op": "d", "ts_ms": instant, "before": b, "after": None}
                for b in self.before_only.to_pylist()
            ]
        if self.after_only is not None:
            out += [
                {"op": "i", "ts_ms": instant, "before": None, "after": a}
                for a in self.after_only.to_pylist()
            ]
        return out


class FileGroupWriter:
    """The per-task work of a write (see the module docstring)."""

    def __init__(self, plan: TaskPlan) -> None:
        self.plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Write every file group found in ``batches``; yield their stats (one row per file)."""
        stats = self.write_batches(batches)
        if stats:
            yield pa.RecordBatch.from_pylist(stats, schema=STATS_ARROW)

    def write_batches(self, batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
        """Write every file group found in ``batches``; return one stats dict per file."""
        collected = [b for b in batches if b.num_rows]
        if not collected:
            return []
        rows = pa.Table.from_batches(collected)
        self._check(rows)
        task_id, token = _task_ids()
        out: list[dict[str, object]] = []
        seq = 0
        for partition_path, file_id, group in _group_slices(rows):
            stats, seq = self._write_group(partition_path, file_id, group, task_id, token, seq)
            if stats is not None:
                out.append(stats)
        return out

    def _check(self, rows: pa.Table) -> None:
        if rows[RECORD_KEY].null_count:
            raise WriteDataError(f"null or empty {self.plan.key_description} in the data")
        if rows[FG_COLUMN].null_count:
            raise WriteDataError(f"null value in {self.plan.bucket_description or 'routing'}")

    def _read_old(self, base_file: str) -> pa.Table:
        storage = self.plan.storage
        table = pq.read_table(storage.full(base_file), filesystem=storage.fs)
        schema = self.plan.file_schema
        return table if schema is None else table.select(schema.names).cast(schema)

    def new_rows(self, group: pa.Table, file_name: str, task_id: int, seq: int) -> pa.Table:
        """``group``'s rows in the base file schema, with their meta columns filled in."""
        return self._new_rows(group, file_name, task_id, seq)

    def _new_rows(self, group: pa.Table, file_name: str, task_id: int, seq: int) -> pa.Table:
        plan = self.plan
        assert plan.file_schema is not None
        n = group.num_rows
        seqnos = pc.binary_join_element_wise(
            _constant(f"{plan.instant}_{task_id}_", n),
            pc.cast(pa.array(np.arange(seq, seq + n, dtype=np.int64)), pa.string()),
            "",
        )
        columns = [
            _constant(plan.instant, n),
            seqnos,
            group[RECORD_KEY].combine_chunks(),
            group[PARTITION_PATH].combine_chunks(),
            _constant(file_name, n),
        ]
        data_fields = list(plan.file_schema)[len(META_COLUMNS) :]
        for f in data_fields:
            columns.append(group[f.name].cast(f.type))
        return pa.Table.from_arrays(columns, schema=plan.file_schema)

    def _write_group(
        self,
        partition_path: str,
        file_id: str,
        group: pa.Table,
        task_id: int,
        token: str,
        seq: int,
    ) -> tuple[dict[str, object] | None, int]:
        plan = self.plan
        started = time.monotonic()
        prev_slice = plan.prev.get((partition_path, file_id))
        if plan.table_type == "mor" and prev_slice is not None:
            return append_to_slice(self, prev_slice, group, task_id, token, seq)
        prev = (prev_slice.base_file, prev_slice.instant) if prev_slice is not None else None
        file_name = f"{file_id}_{token}_{plan.instant}.parquet"
        deletes = updates = inserts = 0
        images = ChangeImages()
        if plan.mode == "delete":
            if prev is None:
                return None, seq
            old = self._read_old(prev[0])
            gone = pc.is_in(old[RECORD_KEY], value_set=group[RECORD_KEY].combine_chunks())
            deletes = int(pc.sum(gone).as_py() or 0)
            if deletes == 0:
                return None, seq
            images.before_only = old.filter(gone)
            result = old.filter(pc.invert(gone))
        else:
            group = dedupe(group, plan.precombine)
            new = self._new_rows(group, file_name, task_id, seq)
            seq += new.num_rows
            inserts = new.num_rows
            if prev is None:
                result = new
            else:
                old = self._read_old(prev[0])
                images.after_only = new
                if plan.mode == "upsert":
                    new_keys = new[RECORD_KEY]
                    replaced = pc.is_in(old[RECORD_KEY], value_set=new_keys)
                    is_update = pc.is_in(new_keys, value_set=old[RECORD_KEY])
                    updates = int(pc.sum(is_update).as_py() or 0)
                    inserts -= updates
                    images.before_updated = old.filter(replaced)
                    images.after_updated = new.filter(is_update)
                    images.after_only = new.filter(pc.invert(is_update))
                    result = merged_in_place(old, new, is_update)
                else:
                    result = pa.concat_tables([old, new])
        index = result.schema.get_field_index(FILE_NAME)
        result = result.set_column(index, FILE_NAME, _constant(file_name, result.num_rows))
        size = self._write_file(partition_path, file_name, result, prev is not None)
        cdc_file, cdc_size = "", 0
        if plan.cdc and prev is not None and images.records:
            cdc_file, cdc_size = self._write_cdc(partition_path, file_id, token, images)
        elapsed = int((time.monotonic() - started) * 1000)
        stats: dict[str, object] = {
            "partition_path": partition_path,
            "file_id": file_id,
            "file_name": file_name,
            "prev_commit": prev[1] if prev else "null",
            "num_writes": result.num_rows,
            "num_deletes": deletes,
            "num_update_writes": updates,
            "num_inserts": inserts,
            "file_size": size,
            "create_ms": 0 if prev else elapsed,
            "upsert_ms": elapsed if prev else 0,
            "base_file": "",
            "log_version": 0,
            "cdc_file": cdc_file,
            "cdc_size": cdc_size,
        }
        return stats, seq

    def _write_cdc(
        self, partition_path: str, file_id: str, token: str, images: ChangeImages
    ) -> tuple[str, int]:
        """Write the group's change data file; return its path (table-relative) and size."""
        plan = self.plan
        name = f"{log_file_name(file_id, plan.instant, 1, token)}{CDC_SUFFIX}"
        rel = f"{partition_path}/{name}" if partition_path else name
        plan.storage.write_bytes(marker_path(plan.instant, partition_path, name, "CREATE"), b"")
        record_schema = json.loads(with_meta_fields(plan.schema_json))
        schema = cdc_schema(record_schema)
        content = block_content(encode_records(schema, images.cdc_records(plan.instant)))
        header = {INSTANT_TIME: plan.instant, SCHEMA: json.dumps(schema, separators=(",", ":"))}
        if partition_path:
            plan.storage.makedirs(partition_path)
        plan.storage.write_bytes(rel, encode_block(CDC_DATA_BLOCK, header, content))
        return rel, plan.storage.size(rel)

    def _write_file(self, partition_path: str, file_name: str, table: pa.Table, merge: bool) -> int:
        plan = self.plan
        storage = plan.storage
        rel = f"{partition_path}/{file_name}" if partition_path else file_name
        storage.write_bytes(
            marker_path(plan.instant, partition_path, file_name, "MERGE" if merge else "CREATE"),
            b"",
        )
        metadata = dict(table.schema.metadata or {})
        if table.num_rows:
            bounds = pc.min_max(table[RECORD_KEY])
            metadata[b"hoodie_min_record_key"] = str(bounds["min"].as_py()).encode()
            metadata[b"hoodie_max_record_key"] = str(bounds["max"].as_py()).encode()
        table = table.replace_schema_metadata(metadata)
        if partition_path:
            storage.makedirs(partition_path)
        with storage.fs.open_output_stream(storage.full(rel)) as stream:
            pq.write_table(table, stream, compression=plan.compression)
        return storage.size(rel)
