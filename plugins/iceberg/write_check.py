"""What an Iceberg write refuses, checked before Spark starts (:class:`~lakesieve.sdk.ChecksWrites`).

:func:`check_write` runs the checks of :func:`lakesieve.plugins.iceberg.write.write_table`
that need only the incoming rows' schema, the options and the table's
metadata (read with pyiceberg, without registering the table in a catalog):
the write mode, ``file_groups`` without a bucket column (or the reverse), and
a record key other than the one the table keeps. The messages are the writer's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakesieve.plugins.iceberg import catalog
from lakesieve.plugins.iceberg.write import record_key_of, stored_record_key
from lakesieve.sdk import TableRef, WriteOptions
from lakesieve.sdk.writing import check_bucket, normalise_mode

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table


def check_write(table: TableRef, schema: pa.Schema | None, options: WriteOptions) -> None:
    """Refuse, from metadata alone, a write ``write_table`` would refuse.

    Raises:
        WriteError: an unknown mode, bucket options that do not pair, or a
            record key differing from the table's (``lakesieve.record-key``).
    """
    normalise_mode(options.mode, table.path, "Iceberg")
    check_bucket(options, schema, table.path)
    if not options.record_key:
        return
    loaded = _existing(table, options)
    if loaded is not None:
        record_key_of(options, stored_record_key(loaded), table.path)


def _existing(table: TableRef, options: WriteOptions) -> Table | None:
    """The table as it is now, ``None`` when there is none (or it cannot be read here)."""
    sources = {**table.options, **{k: str(v) for k, v in options.extra.items()}}
    try:
        return catalog.load_for_read(table.path, sources)
    except Exception:  # no table yet, or an unreachable catalog: the write decides
        return None
