"""Reading one Iceberg read unit (a data file) as Arrow record batches, without Spark.

Runs on the driver and inside Spark's Python workers (the ``lakesieve`` data
source), so it needs only the table path, the instant and the unit: the unit
names its data file and delete files itself; the table's metadata is opened
only for the schema at the instant. Rows named by the unit's position delete
files are dropped; every batch is conformed to the schema (columns in order,
cast, nulls for columns the file lacks).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.model import ReadUnit, TableRef
from lakesieve.plugins.delta import storage
from lakesieve.plugins.delta.unit_reader import conform, keep_mask, project
from lakesieve.plugins.iceberg import catalog, schema, timeline
from lakesieve.plugins.iceberg.deletes import deleted_positions, position_delete_paths
from lakesieve.plugins.iceberg.spark_read import data_path

#: Rows per batch.
BATCH_ROWS = 65_536

_CACHE_SIZE = 16
_schemas: OrderedDict[tuple[str, str], pa.Schema] = OrderedDict()
_lock = threading.Lock()


def schema_of(ref: TableRef, instant: str | None) -> pa.Schema:
    """The Arrow schema of the table at ``instant`` (cached per process for a fixed instant).

    Raises:
        IcebergFeatureError: the table renamed a column or has an unreadable type.
    """
    key = (ref.path, instant or "")
    if instant is not None:
        with _lock:
            if key in _schemas:
                _schemas.move_to_end(key)
                return _schemas[key]
    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    schema.check_no_renames(table.metadata, ref.path)
    arrow = schema.arrow_schema(
        schema.schema_at(table.metadata, snap.schema_id if snap is not None else None), ref.path
    )
    if instant is not None:
        with _lock:
            _schemas[key] = arrow
            while len(_schemas) > _CACHE_SIZE:
                _schemas.popitem(last=False)
    return arrow


def read_unit_batches(
    ref: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one unit as of ``instant``, position deletes applied.

    Raises:
        IcebergFeatureError: the unit has delete files lakesieve cannot apply.
    """
    delete_paths = position_delete_paths([unit], ref.path)
    target = project(schema_of(ref, instant), columns, ref.path)
    path = data_path(unit)
    deleted = deleted_positions(path, delete_paths) if delete_paths else None
    fs, inner = storage.filesystem_and_path(path)
    with fs.open_input_file(inner) as handle:
        parquet = pq.ParquetFile(handle)
        in_file = parquet.schema_arrow.names
        present = [n for n in target.names if n in in_file] or in_file[:1]
        offset = 0
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
            rows = batch.num_rows
            if deleted is not None and len(deleted):
                batch = batch.filter(pa.array(keep_mask(offset, rows, deleted)))
            offset += rows
            if batch.num_rows:
                yield conform(batch, target, {})
