"""What a write task is given (:class:`TaskPlan`) and how it keeps one row per record key.

Shared by the copy-on-write task (:mod:`lakesieve.plugins.hudi.writer.task`)
and the merge-on-read log appends (:mod:`lakesieve.plugins.hudi.writer.mor`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS
from lakesieve.plugins.hudi.writer.storage import TableStorage
from lakesieve.plugins.hudi.writer.timeline import Slice

RECORD_KEY = META_COLUMNS[2]


@dataclass
class TaskPlan:
    """Everything a write task needs, shipped to executors with the function.

    Attributes:
        storage: the table.
        instant: the commit's instant time.
        mode: ``bulk_insert``, ``insert``, ``upsert`` or ``delete``.
        file_schema: schema of a base file (meta columns, then data columns);
            ``None`` for deletes, which keep the stored files' schema.
        precombine: column deciding which duplicate of a key wins, if any.
        prev: latest file slice per ``(partition path, file id)`` for the file
            groups this write may touch.
        key_description: how to name the record key in error messages.
        bucket_description: how to name the bucket column in error messages.
        compression: Parquet compression codec.
        table_type: ``cow`` (rewrite base files) or ``mor`` (append log files
            to existing file groups).
        schema_json: the commit's Avro schema (log block headers).
        completed: completed instants (log blocks of others are ignored).
        cdc: log change data for every existing file group rewritten
            (:mod:`lakesieve.plugins.hudi.cdc`).
    """

    storage: TableStorage
    instant: str
    mode: str
    file_schema: pa.Schema | None
    precombine: str | None
    prev: dict[tuple[str, str], Slice] = field(default_factory=dict)
    key_description: str = "record key"
    bucket_description: str = ""
    compression: str = "snappy"
    table_type: str = "cow"
    schema_json: str = ""
    completed: frozenset[str] = frozenset()
    cdc: bool = False


def dedupe(rows: pa.Table, precombine: str | None) -> pa.Table:
    """Keep one row per record key: the largest ``precombine`` value, else the last one."""
    n = rows.num_rows
    keys = rows[RECORD_KEY].combine_chunks()
    if n <= 1 or pc.count_distinct(keys).as_py() == n:
        return rows
    order_table = pa.table({"k": keys, "i": pa.array(np.arange(n, dtype=np.int64))})
    sort_keys = [("k", "ascending")]
    if precombine:
        order_table = order_table.append_column("p", rows[precombine])
        sort_keys.append(("p", "descending"))
    sort_keys.append(("i", "descending"))
    # nulls sort last, so a row without a precombine value wins only when alone
    order = pc.sort_indices(order_table, sort_keys=sort_keys)
    sorted_keys = keys.take(order)
    differs = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1))
    first_of_key = np.insert(differs.to_numpy(zero_copy_only=False), 0, True)
    kept = np.sort(order.to_numpy()[first_of_key])
    return rows.take(pa.array(kept))
