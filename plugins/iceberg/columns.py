"""Which column of a data file holds which field of an Iceberg schema, and partition constants.

Iceberg identifies columns by **field id**, not by name (spec, "Column
Projection"):

- a data file's column carries the field id it was written for
  (``PARQUET:field_id``); a renamed field keeps its id, a dropped and re-added
  one gets a new id;
- files without field ids (added from existing Parquet, Hive migrations) are
  resolved through the table's ``schema.name-mapping.default`` (names ->
  field id); without a mapping, through the names of the current schema;
- a field of the read schema that no column of a file carries is read as the
  file's **identity partition value** when the field is the source of an
  identity partition field, else as null.

:func:`by_name_is_exact` tells the Spark reader when reading columns by name
gives exactly the same answer (no field ever changed name or id, and the
name mapping agrees), so that Spark's own Parquet reader can scan the files.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.table.metadata import TableMetadata

#: Table property holding the default name mapping (spec, "Column Projection").
NAME_MAPPING = "schema.name-mapping.default"
#: Parquet field metadata key of a column's field id (as pyarrow exposes it).
FIELD_ID_KEY = b"PARQUET:field_id"
#: ``ReadUnit.extra`` key of a data file's identity partition values (JSON).
IDENTITY_KEY = "identity_values"


def name_mapping(metadata: TableMetadata) -> dict[str, int]:
    """Top-level names -> field id from ``schema.name-mapping.default`` (empty when unset)."""
    text = (metadata.properties or {}).get(NAME_MAPPING)
    if not text:
        return {}
    out: dict[str, int] = {}
    for entry in json.loads(text):
        field_id = entry.get("field-id")
        if field_id is None:
            continue
        for name in entry.get("names") or ():
            out[str(name)] = int(field_id)
    return out


def file_field_ids(file_schema: pa.Schema) -> dict[int, str]:
    """Field id -> column name of a Parquet file's top-level columns that carry an id."""
    out: dict[int, str] = {}
    for fld in file_schema:
        raw = (fld.metadata or {}).get(FIELD_ID_KEY)
        if raw is not None:
            out[int(raw)] = fld.name
    return out


def physical_columns(
    file_schema: pa.Schema, mapping: Mapping[str, int], fallback: Mapping[str, int]
) -> dict[int, str]:
    """Field id -> the file's column holding it.

    Args:
        file_schema: the data file's Arrow schema (with Parquet field ids when written).
        mapping: the table's name mapping (used for files without field ids).
        fallback: names -> ids of the current schema, used without a name mapping.
    """
    with_ids = file_field_ids(file_schema)
    if with_ids:
        return with_ids
    names = mapping or fallback
    out: dict[int, str] = {}
    for fld in file_schema:
        field_id = names.get(fld.name)
        if field_id is not None and field_id not in out:
            out[field_id] = fld.name
    return out


def top_level_ids(schema: IcebergSchema) -> dict[str, int]:
    """Top-level field name -> field id of an Iceberg schema."""
    return {f.name: f.field_id for f in schema.fields}


def by_name_is_exact(metadata: TableMetadata) -> bool:
    """Whether reading data files by column name resolves every field as field ids would.

    True when, over every schema of the table's history, each field id (at any
    depth) has had one name and each name one field id, and the name mapping
    (if any) maps every name to that same id.
    """
    from pyiceberg.schema import index_name_by_id

    id_names: dict[int, set[str]] = {}
    name_ids: dict[str, set[int]] = {}
    for schema in metadata.schemas:
        for field_id, name in index_name_by_id(schema).items():
            id_names.setdefault(field_id, set()).add(name)
            name_ids.setdefault(name, set()).add(field_id)
    if any(len(n) > 1 for n in id_names.values()) or any(len(i) > 1 for i in name_ids.values()):
        return False
    for name, field_id in name_mapping(metadata).items():
        if name_ids.get(name) != {field_id}:  # an alias the schemas never used: by id
            return False
    return True


def check_nested_fields(metadata: TableMetadata, table_path: str) -> None:
    """Refuse a table whose history renamed, or dropped and re-added, a field nested in a struct.

    Top-level fields are resolved by field id; nested ones by name inside
    their column, which is exact only while their names and ids never changed.

    Raises:
        IcebergFeatureError: naming the table and the nested field.
    """
    from lakesieve.plugins.iceberg.errors import IcebergFeatureError
    from pyiceberg.schema import index_name_by_id

    top = {f.field_id for schema in metadata.schemas for f in schema.fields}
    leaves: dict[int, set[str]] = {}
    paths: dict[str, set[int]] = {}
    for schema in metadata.schemas:
        for field_id, name in index_name_by_id(schema).items():
            if field_id in top:
                continue
            leaves.setdefault(field_id, set()).add(name.rsplit(".", 1)[-1])
            paths.setdefault(name, set()).add(field_id)
    bad = sorted(n for n, ids in paths.items() if len(ids) > 1) or sorted(
        f"field {fid} ({' -> '.join(sorted(n))})" for fid, n in leaves.items() if len(n) > 1
    )
    if bad:
        raise IcebergFeatureError(
            f"Iceberg table {table_path} renamed or re-added a nested field ({bad[0]}); lakesieve "
            "resolves top-level columns by field id but nested fields by name; refusing to read it"
        )


def case_collisions(names: list[str]) -> tuple[str, str] | None:
    """Two names equal but for case, if any (Spark cannot hold both when case-insensitive)."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.get(name.lower())
        if other is not None:
            return other, name
        seen[name.lower()] = name
    return None


# ------------------------------------------------------------ identity partition values


def _encode(value: Any) -> list[str]:
    if isinstance(value, bool):
        return ["bool", "1" if value else "0"]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, decimal.Decimal):
        return ["decimal", str(value)]
    if isinstance(value, bytes | bytearray):
        return ["bytes", base64.b64encode(bytes(value)).decode("ascii")]
    if isinstance(value, dt.datetime):
        return ["datetime", value.isoformat()]
    if isinstance(value, dt.date):
        return ["date", value.isoformat()]
    if hasattr(value, "bytes"):  # uuid.UUID
        return ["bytes", base64.b64encode(value.bytes).decode("ascii")]
    return ["str", str(value)]


def _decode(kind: str, text: str) -> Any:
    if kind == "bool":
        return text == "1"
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "decimal":
        return decimal.Decimal(text)
    if kind == "bytes":
        return base64.b64decode(text)
    if kind == "datetime":
        return dt.datetime.fromisoformat(text)
    if kind == "date":
        return dt.date.fromisoformat(text)
    return text


def identity_values(data_file: DataFile, metadata: TableMetadata) -> dict[int, Any]:
    """Source field id -> value of every identity partition field of a data file (nulls included)."""
    from pyiceberg.transforms import IdentityTransform

    spec = metadata.specs().get(int(data_file.spec_id or 0))
    record = data_file.partition
    if spec is None or record is None:
        return {}
    out: dict[int, Any] = {}
    for i, part in enumerate(spec.fields):
        if isinstance(part.transform, IdentityTransform) and i < len(record):
            out[part.source_id] = record[i]
    return out


def encode_identity(values: Mapping[int, Any]) -> str:
    """``values`` as the JSON text kept in ``ReadUnit.extra``."""
    return json.dumps(
        {str(k): (None if v is None else _encode(v)) for k, v in sorted(values.items())}
    )


def decode_identity(text: str | None) -> dict[int, Any]:
    """Inverse of :func:`encode_identity` (empty for ``None``)."""
    if not text:
        return {}
    return {
        int(k): (None if v is None else _decode(v[0], v[1])) for k, v in json.loads(text).items()
    }


def constant_array(value: Any, target: pa.DataType, rows: int) -> pa.Array:
    """``rows`` copies of a partition value as ``target``.

    Dates, times and timestamps arrive from the manifest as their Iceberg
    integer form (days, microseconds) or as Python objects; both are cast.
    """
    if value is None:
        return pa.nulls(rows, type=target)
    storage = target.storage_type if isinstance(target, pa.BaseExtensionType) else target
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (
            pa.types.is_date(storage) or pa.types.is_timestamp(storage) or pa.types.is_time(storage)
        )
    ):
        width = pa.int32() if pa.types.is_date32(storage) else pa.int64()
        scalar = pa.array([value], type=width).cast(storage)
    else:
        scalar = pa.array([value]).cast(storage)
    return pa.repeat(scalar[0], rows)
