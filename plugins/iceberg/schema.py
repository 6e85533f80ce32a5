"""The schema of an Iceberg table as Arrow (for the framework) and as Spark (for reads).

The Arrow schema is pyiceberg's, with plain (not large) string, binary and
list types, ``uuid`` and ``fixed`` as binary (what Spark's Parquet reader
returns for them), and no field ids. Iceberg ``timestamp`` is Spark's
``timestamp_ntz``, ``timestamptz`` Spark's ``timestamp``.

Columns are read by name, so a table whose history renamed a column (one
field id, two names) is refused with
:class:`~lakesieve.plugins.iceberg.errors.IcebergFeatureError`, as is a
column of a type Spark cannot read from Parquet here (``time``,
nanosecond timestamps, ``variant``, geospatial types).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.plugins.iceberg.errors import IcebergFeatureError

if TYPE_CHECKING:
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.table.metadata import TableMetadata
    from pyspark.sql.types import DataType, StructType


def _plain(t: pa.DataType, where: str, table_path: str) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return _plain(t.storage_type, where, table_path)
    if (
        pa.types.is_fixed_size_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return pa.binary()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_time(t) or (pa.types.is_timestamp(t) and t.unit == "ns"):
        raise IcebergFeatureError(
            f"Iceberg table {table_path}: column {where!r} has type {t}, which lakesieve "
            "cannot read through Spark's Parquet reader; refusing the table"
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        item = t.value_field
        return pa.list_(pa.field(item.name, _plain(item.type, where, table_path), item.nullable))
    if pa.types.is_map(t):
        return pa.map_(
            _plain(t.key_type, where, table_path), _plain(t.item_type, where, table_path)
        )
    if pa.types.is_struct(t):
        return pa.struct(
            [pa.field(f.name, _plain(f.type, f"{where}.{f.name}", table_path), True) for f in t]
        )
    return t


def arrow_schema(schema: IcebergSchema, table_path: str) -> pa.Schema:
    """The Arrow schema of an Iceberg schema (plain types, every column nullable).

    Raises:
        IcebergFeatureError: a column type Spark cannot read here.
    """
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    raw = schema_to_pyarrow(schema, include_field_ids=False)
    return pa.schema([pa.field(f.name, _plain(f.type, f.name, table_path), True) for f in raw])


def _spark_type(t: pa.DataType) -> DataType:
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if pa.types.is_list(t):
        return ArrayType(_spark_type(t.value_type), True)
    if pa.types.is_map(t):
        return MapType(_spark_type(t.key_type), _spark_type(t.item_type), True)
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, _spark_type(f.type), True) for f in t])
    return from_arrow_type(t, prefer_timestamp_ntz=True)


def spark_schema(arrow: pa.Schema) -> StructType:
    """The Spark schema of a read, from the table's Arrow schema."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, _spark_type(f.type), True) for f in arrow])


def check_no_renames(metadata: TableMetadata, table_path: str) -> None:
    """Refuse a table whose schema history gives one field id two names.

    Raises:
        IcebergFeatureError: naming the table, the field and its names.
    """
    from pyiceberg.schema import index_name_by_id

    names: dict[int, set[str]] = {}
    for schema in metadata.schemas:
        for field_id, name in index_name_by_id(schema).items():
            names.setdefault(field_id, set()).add(name)
    renamed = {fid: sorted(n) for fid, n in names.items() if len(n) > 1}
    if renamed:
        fid, both = next(iter(sorted(renamed.items())))
        raise IcebergFeatureError(
            f"Iceberg table {table_path}: field {fid} was renamed ({' -> '.join(both)}); lakesieve "
            "reads Parquet columns by name and cannot honour renames; refusing the table"
        )


def schema_at(metadata: TableMetadata, schema_id: int | None) -> IcebergSchema:
    """The schema a snapshot was written with (the current one when unknown)."""
    if schema_id is not None:
        for schema in metadata.schemas:
            if schema.schema_id == schema_id:
                return schema
    return metadata.schema()
