"""Reading one Iceberg read unit (a data file) as Arrow record batches, without Spark.

Runs on the driver and inside Spark's Python workers (the ``lakesieve`` data
source, and the Spark reader's field-id path), so it needs only the table
path, the instant and the unit: the unit names its data file, delete files
and identity partition values itself; the table's metadata is opened only for
the schema at the instant. Columns are resolved by field id
(:mod:`.columns`); rows named by the unit's position delete files are
dropped; every batch is conformed to the snapshot's schema (columns in
order, cast, identity partition values or nulls for fields the file lacks).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.plugins.iceberg import catalog, columns, schema, timeline
from lakesieve.plugins.iceberg.deletes import deleted_positions, position_delete_paths
from lakesieve.plugins.iceberg.errors import IcebergFeatureError
from lakesieve.plugins.iceberg.snapshot import data_path, read_path
from lakesieve.sdk import ReadUnit, TableRef, paths
from lakesieve.sdk.arrow import keep_mask, project
from lakesieve.sdk.paths import storage_of

#: Rows per batch.
BATCH_ROWS = 65_536

_CACHE_SIZE = 16


@dataclass(frozen=True)
class ReadSchema:
    """What a read at one snapshot needs to know of the table.

    Attributes:
        arrow: the snapshot's schema as Arrow (lakesieve's plain types).
        ids: field id of each top-level field of ``arrow``, by name.
        mapping: the table's name mapping (names -> field id; may be empty).
        fallback: names -> field ids of the current schema (files without
            ids when there is no name mapping).
    """

    arrow: pa.Schema
    ids: dict[str, int]
    mapping: dict[str, int]
    fallback: dict[str, int]


_schemas: OrderedDict[tuple[str, str], ReadSchema] = OrderedDict()
_lock = threading.Lock()


def read_schema(ref: TableRef, instant: str | None) -> ReadSchema:
    """The read schema of the table at ``instant`` (cached per process for a fixed instant).

    Raises:
        IcebergFeatureError: a column type lakesieve cannot read.
    """
    key = (ref.path, instant or "")
    if instant is not None:
        with _lock:
            if key in _schemas:
                _schemas.move_to_end(key)
                return _schemas[key]
    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    chosen = schema.schema_at(table.metadata, snap.schema_id if snap is not None else None)
    columns.check_nested_fields(table.metadata, ref.path)
    out = ReadSchema(
        arrow=schema.arrow_schema(chosen, ref.path),
        ids=columns.top_level_ids(chosen),
        mapping=columns.name_mapping(table.metadata),
        fallback=columns.top_level_ids(table.metadata.schema()),
    )
    if instant is not None:
        with _lock:
            _schemas[key] = out
            while len(_schemas) > _CACHE_SIZE:
                _schemas.popitem(last=False)
    return out


def _plain_array(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``array`` with an extension type (``arrow.uuid``...) replaced by its storage."""
    if isinstance(array, pa.ChunkedArray):
        if isinstance(array.type, pa.BaseExtensionType):
            return pa.chunked_array([c.storage for c in array.chunks], type=array.type.storage_type)
        return array
    return array.storage if isinstance(array, pa.ExtensionArray) else array


def conform_by_id(
    batch: pa.RecordBatch,
    target: pa.Schema,
    ids: dict[str, int],
    physical: dict[int, str],
    constants: dict[int, object],
) -> pa.RecordBatch:
    """``batch`` (a file's columns) as ``target``: columns found by field id, cast, filled."""
    names = batch.schema.names
    arrays: list[pa.Array] = []
    for fld in target:
        field_id = ids.get(fld.name)
        column = physical.get(field_id) if field_id is not None else None
        if column is not None and column in names:
            array = _plain_array(batch.column(names.index(column)))
            arrays.append(array if array.type == fld.type else array.cast(fld.type))
        elif field_id is not None and field_id in constants:
            arrays.append(columns.constant_array(constants[field_id], fld.type, batch.num_rows))
        else:
            arrays.append(pa.nulls(batch.num_rows, type=fld.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def read_unit_batches(
    ref: TableRef, unit: ReadUnit, instant: str | None, wanted: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one unit as of ``instant``, position deletes applied.

    Raises:
        IcebergFeatureError: the unit has delete files lakesieve cannot apply,
            or its data file is not Parquet or cannot be found.
    """
    delete_paths = position_delete_paths([unit], ref.path)
    info = read_schema(ref, instant)
    target = project(info.arrow, wanted, ref.path)
    fmt = unit.extra.get("file_format", "parquet")
    if fmt != "parquet":
        raise IcebergFeatureError(
            f"Iceberg table {ref.path} has {fmt.upper()} data files (e.g. {data_path(unit)}); "
            "lakesieve reads Parquet data files only; refusing to read it"
        )
    constants = columns.decode_identity(unit.extra.get(columns.IDENTITY_KEY))
    storage = storage_of(ref.options)  # the table's own storage options win over the environment
    deleted = deleted_positions(data_path(unit), delete_paths, storage) if delete_paths else None
    fs, inner = paths.filesystem_and_path(read_path(unit), storage)
    with fs.open_input_file(inner) as handle:
        parquet = pq.ParquetFile(handle)
        physical = columns.physical_columns(parquet.schema_arrow, info.mapping, info.fallback)
        needed = [physical[info.ids[n]] for n in target.names if info.ids.get(n) in physical]
        present = list(dict.fromkeys(needed)) or parquet.schema_arrow.names[:1]
        offset = 0
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
            rows = batch.num_rows
            if deleted is not None and len(deleted):
                batch = batch.filter(pa.array(keep_mask(offset, rows, deleted)))
            offset += rows
            if batch.num_rows:
                yield conform_by_id(batch, target, info.ids, physical, constants)
