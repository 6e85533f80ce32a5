"""Reading one Delta read unit (a data file) as Arrow record batches, without Spark.

Runs on the driver and inside Spark's Python workers (the ``lakesieve`` data
source), so it needs only the table path, the instant and the unit. The file
is read with pyarrow batch by batch (columns by their physical names under
column mapping); rows its deletion vector deletes are dropped (positions from delta-rs at the unit's version); partition columns
are added from the unit's partition values; every batch is conformed to the
table's Arrow schema (columns in order, cast, nulls for missing columns).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.plugins.delta import deletion_vectors, schema, tables
from lakesieve.sdk import ReadUnit, TableRef, paths
from lakesieve.sdk.arrow import conform, keep_mask, project
from lakesieve.sdk.paths import storage_of

#: Rows per batch.
BATCH_ROWS = 65_536


def read_unit_batches(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one unit as of ``instant`` (latest when ``None``).

    Raises:
        DeltaFeatureError: the table needs a reader feature lakesieve cannot honour.
    """
    dt = tables.open_table(table, instant)
    tables.check_readable(dt, table.path)
    full = schema.arrow_schema(dt)
    target = project(full, columns, table.path)
    part_cols = set(schema.partition_columns(dt))
    constants = {c: unit.partition_values.get(c) for c in part_cols if c in target.names}
    deleted = deletion_vectors.deleted_rows(dt).get(unit.location) if unit.delete_files else None
    physical = schema.physical_names(dt)
    logical = {p: name for name, p in physical.items()}
    fs, path = paths.filesystem_and_path(
        paths.join(table.path, unit.base_file or unit.location), storage_of(table.options)
    )
    with fs.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        in_file = parquet.schema_arrow.names
        wanted = [physical.get(n, n) for n in target.names if n not in part_cols]
        present = [n for n in wanted if n in in_file]
        if not present and in_file:  # only partition columns asked for: still count rows
            present = in_file[:1]
        offset = 0
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
            rows = batch.num_rows
            if deleted is not None and len(deleted):
                batch = batch.filter(pa.array(keep_mask(offset, rows, deleted)))
            offset += rows
            if batch.num_rows:
                named = batch.rename_columns([logical.get(n, n) for n in batch.schema.names])
                yield conform(named, target, constants)
