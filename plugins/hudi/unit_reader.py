"""Reading one read unit (file slice) as Arrow record batches, without Spark.

Runs on the driver for :meth:`~lakesieve.sdk.TableFormat.read_unit` and inside Spark's
Python workers for merge-on-read units, so it needs only the table path, its
options, the instant and the unit's files.

- A unit with only a Parquet base file is read with pyarrow, batch by batch.
- A unit with log files, or a base file in another format (Lance: table
  property ``hoodie.table.base.file.format``), is read by hudi-rs' file
  group reader, which honours the table's base file format; it is created
  from the table with the read's as-of instant, so that log blocks written
  after the instant are skipped (time travel).

Every batch is conformed to one target schema: the table's read schema
(:func:`lakesieve.plugins.hudi.tables.read_schema`) or the one the caller
asks for. Columns are selected and ordered by name, cast where the Arrow type
differs (a legacy two-level Parquet list, a timestamp zone, ...), and filled
with nulls where a file lacks a column.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from hudi import HudiFileGroupReader, HudiReadOptions, HudiTable
from lakesieve.plugins.hudi import storage, tables
from lakesieve.sdk.arrow import conform

#: Rows per batch for base files read with pyarrow.
BATCH_ROWS = 65_536

_CACHE_SIZE = 16
_readers: OrderedDict[
    tuple[str, tuple[tuple[str, str], ...], str], tuple[HudiTable, HudiFileGroupReader, pa.Schema]
] = OrderedDict()
_readers_lock = threading.Lock()


def _reader_for(
    table_path: str, options: Mapping[str, str] | None, instant: str | None
) -> tuple[HudiTable, HudiFileGroupReader, pa.Schema]:
    """The hudi-rs table, file group reader and read schema for one as-of instant.

    Cached per process for a fixed instant (its answer cannot change); the
    latest-instant reader (``instant is None``) is built afresh every time.
    """
    key = (table_path, tuple(sorted((options or {}).items())), instant or "")
    if instant is not None:
        with _readers_lock:
            if key in _readers:
                _readers.move_to_end(key)
                return _readers[key]
    table = tables.open_table(table_path, options)
    reader = table.create_file_group_reader_with_options(tables.as_of(instant))
    entry = (table, reader, tables.read_schema(table))
    if instant is not None:
        with _readers_lock:
            _readers[key] = entry
            while len(_readers) > _CACHE_SIZE:
                _readers.popitem(last=False)
    return entry


def project(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """``schema`` narrowed to ``columns`` (in that order); all of it when ``None``."""
    if columns is None:
        return schema
    missing = [c for c in columns if c not in schema.names]
    if missing:
        from lakesieve.sdk import ColumnNotFoundError

        raise ColumnNotFoundError(f"Hudi table has no column(s) {', '.join(missing)}")
    return pa.schema([schema.field(c) for c in columns])


def is_parquet(base_file: str | None) -> bool:
    """Whether a base file is Parquet (by its extension), so that Parquet readers can open it."""
    return bool(base_file) and str(base_file).lower().endswith(".parquet")


def read_unit_batches(
    table_path: str,
    options: Mapping[str, str] | None,
    base_file: str | None,
    log_files: Sequence[str],
    instant: str | None,
    target: pa.Schema | None = None,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one file slice as of ``instant``.

    Args:
        table_path: table root (path or URI).
        options: the table's hudi-rs options.
        base_file: base file relative to the root, or ``None`` for a log-only slice.
        log_files: log files relative to the root.
        instant: the as-of instant (latest when ``None``).
        target: the schema to yield; the table's read schema when ``None``.
        columns: keep only these columns of ``target`` (in this order).
    """
    if not log_files and base_file and is_parquet(base_file):
        if target is None:
            _, _, target = _reader_for(table_path, options, instant)
        target = project(target, columns)
        fs, root = storage.resolve(table_path)
        with fs.open_input_file(storage.join(root, base_file)) as handle:
            parquet = pq.ParquetFile(handle)
            present = [n for n in target.names if n in parquet.schema_arrow.names]
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
                yield conform(batch, target)
        return
    _, reader, schema = _reader_for(table_path, options, instant)
    target = project(target if target is not None else schema, columns)
    # asked for a few columns, hudi-rs reads only those (and what merging needs)
    read_options = HudiReadOptions(projection=list(target.names)) if columns else HudiReadOptions()
    stream = reader.read_file_slice_from_paths_stream(
        base_file or "", list(log_files), read_options
    )
    for batch in stream:
        if batch.num_rows:
            yield conform(batch, target)
