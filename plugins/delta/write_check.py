"""What a Delta write refuses, checked before Spark starts (:class:`~lakesieve.sdk.ChecksWrites`).

:func:`check_write` runs the checks of :func:`lakesieve.plugins.delta.write.write_table`
that need only the incoming rows' schema, the options and the table's
metadata (read with delta-rs): the write mode, ``file_groups`` without a
bucket column (or the reverse), and a record key other than the one the
table keeps. The messages are the writer's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltalake import DeltaTable
from lakesieve.plugins.delta import tables
from lakesieve.plugins.delta.write import record_key_of
from lakesieve.sdk import TableRef, WriteOptions
from lakesieve.sdk.writing import check_bucket, normalise_mode

if TYPE_CHECKING:
    import pyarrow as pa


def check_write(table: TableRef, schema: pa.Schema | None, options: WriteOptions) -> None:
    """Refuse, from metadata alone, a write ``write_table`` would refuse.

    Raises:
        WriteError: an unknown mode, bucket options that do not pair, or a
            record key differing from the table's (``lakesieve.recordKey``).
    """
    normalise_mode(options.mode, table.path, "Delta")
    check_bucket(options, schema, table.path)
    if not options.record_key:
        return
    opts = tables.storage_options(table.options)
    if DeltaTable.is_deltatable(table.path, storage_options=opts):
        record_key_of(options, DeltaTable(table.path, storage_options=opts), table.path)
