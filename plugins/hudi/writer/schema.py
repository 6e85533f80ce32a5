"""Schemas for the Hudi writer: Spark -> Avro (commit metadata) and Spark -> Arrow (files).

Hudi records the table schema as an Avro record named ``<table>_record`` in
namespace ``hoodie.<table>`` inside every commit (``extraMetadata.schema``),
converted from the Spark schema the way spark-avro does it: byte, short and
int become ``int``; dates, timestamps and decimals carry logical types
(decimals as ``fixed`` of the smallest size that holds the precision); nested
records are named after their field. Nullable fields are unions with
``"null"`` first and a ``null`` default. hudi-rs reads that schema back to
type the rows it returns, so the Parquet files we write use the matching
Arrow types: :func:`arrow_schema` is that mapping.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SchemaProblem(ValueError):
    """A column whose type or name the writer cannot store; ``column`` names it."""

    def __init__(self, column: str, reason: str) -> None:
        super().__init__(f"column {column!r} {reason}")
        self.column = column
        self.reason = reason


def avro_safe_name(name: str) -> str:
    """``name`` with every character Avro forbids in a name replaced by ``_``."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + cleaned if cleaned[0].isdigit() else cleaned


def record_names(table_name: str) -> tuple[str, str]:
    """Avro ``(record name, namespace)`` Hudi uses for a table's schema."""
    safe = avro_safe_name(table_name)
    return f"{safe}_record", f"hoodie.{safe}"


def _decimal_size(precision: int) -> int:
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _nullable(avro: Any, nullable: bool) -> Any:
    return ["null", avro] if nullable else avro


def _avro_type(dtype: T.DataType, name: str, namespace: str, path: str) -> Any:
    """Avro type of a Spark type; ``name``/``namespace`` name records and fixed types."""
    simple: dict[type, Any] = {
        T.BooleanType: "boolean",
        T.ByteType: "int",
        T.ShortType: "int",
        T.IntegerType: "int",
        T.LongType: "long",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.StringType: "string",
        T.CharType: "string",
        T.VarcharType: "string",
        T.BinaryType: "bytes",
        T.DateType: {"type": "int", "logicalType": "date"},
        T.TimestampType: {"type": "long", "logicalType": "timestamp-micros"},
    }
    if isinstance(dtype, T.TimestampNTZType):
        # Hudi writes it as Avro's local-timestamp-micros, but hudi-rs (the reader every
        # lakesieve command opens Hudi tables with) panics on that type: refuse it here
        raise SchemaProblem(
            path,
            "has type timestamp_ntz, which hudi-rs (the Hudi reader lakesieve opens tables "
            "with) cannot read; cast it to timestamp",
        )
    if type(dtype) in simple:
        return simple[type(dtype)]
    if isinstance(dtype, T.DecimalType):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": _decimal_size(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if isinstance(dtype, T.ArrayType):
        items = _avro_type(dtype.elementType, name, namespace, path + "[]")
        return {"type": "array", "items": _nullable(items, dtype.containsNull)}
    if isinstance(dtype, T.MapType):
        if not isinstance(dtype.keyType, T.StringType):
            raise SchemaProblem(path, "is a map with non-string keys, which Avro cannot store")
        values = _avro_type(dtype.valueType, name, namespace, path + "{}")
        return {"type": "map", "values": _nullable(values, dtype.valueContainsNull)}
    if isinstance(dtype, T.StructType):
        return _avro_record(dtype, name, namespace, path, top_level=False)
    raise SchemaProblem(path, f"has type {dtype.simpleString()}, which Hudi cannot store")


def _avro_record(
    struct: T.StructType, name: str, namespace: str, path: str, top_level: bool
) -> dict[str, Any]:
    child_ns = f"{namespace}.{name}" if namespace else name
    fields = []
    for field in struct.fields:
        where = f"{path}.{field.name}" if path else field.name
        if not _AVRO_NAME.match(field.name):
            raise SchemaProblem(where, "is not a valid Avro field name")
        nullable = True if top_level else field.nullable
        avro = _nullable(_avro_type(field.dataType, field.name, child_ns, where), nullable)
        entry: dict[str, Any] = {"name": field.name, "type": avro}
        if nullable:
            entry["default"] = None
        fields.append(entry)
    return {"type": "record", "name": name, "namespace": namespace, "fields": fields}


def avro_schema(struct: T.StructType, table_name: str) -> dict[str, Any]:
    """The Avro schema (as a dict) Hudi records for a table of Spark schema ``struct``."""
    name, namespace = record_names(table_name)
    return _avro_record(struct, name, namespace, "", top_level=True)


def _arrow_type(dtype: T.DataType) -> pa.DataType:
    simple: dict[type, pa.DataType] = {
        T.BooleanType: pa.bool_(),
        T.ByteType: pa.int32(),
        T.ShortType: pa.int32(),
        T.IntegerType: pa.int32(),
        T.LongType: pa.int64(),
        T.FloatType: pa.float32(),
        T.DoubleType: pa.float64(),
        T.StringType: pa.string(),
        T.CharType: pa.string(),
        T.VarcharType: pa.string(),
        T.BinaryType: pa.binary(),
        T.DateType: pa.date32(),
        T.TimestampType: pa.timestamp("us", tz="UTC"),
        T.TimestampNTZType: pa.timestamp("us"),
    }
    if type(dtype) in simple:
        return simple[type(dtype)]
    if isinstance(dtype, T.DecimalType):
        return pa.decimal128(dtype.precision, dtype.scale)
    if isinstance(dtype, T.ArrayType):
        return pa.list_(pa.field("element", _arrow_type(dtype.elementType), dtype.containsNull))
    if isinstance(dtype, T.MapType):
        value = pa.field("value", _arrow_type(dtype.valueType), dtype.valueContainsNull)
        return pa.map_(pa.string(), value)
    if isinstance(dtype, T.StructType):
        return pa.struct(
            [pa.field(f.name, _arrow_type(f.dataType), f.nullable) for f in dtype.fields]
        )
    raise SchemaProblem(dtype.simpleString(), "cannot be stored")


def arrow_schema(struct: T.StructType) -> pa.Schema:
    """Arrow schema of the data columns in our base files (all top-level fields nullable)."""
    return pa.schema([pa.field(f.name, _arrow_type(f.dataType), True) for f in struct.fields])


def file_schema(struct: T.StructType) -> pa.Schema:
    """Arrow schema of a whole base file: the five meta columns, then the data columns."""
    meta = [pa.field(name, pa.string(), True) for name in META_COLUMNS]
    return pa.schema(meta + list(arrow_schema(struct)))


def _signature(avro: Any) -> Any:
    """An Avro type with nullability, defaults, docs and names removed, for comparisons."""
    if isinstance(avro, list):
        members = [_signature(m) for m in avro if m != "null"]
        return members[0] if len(members) == 1 else members
    if isinstance(avro, dict):
        kind = avro.get("type")
        if kind == "record":
            return {"record": [(f["name"], _signature(f["type"])) for f in avro.get("fields", [])]}
        if kind == "array":
            return {"array": _signature(avro["items"])}
        if kind == "map":
            return {"map": _signature(avro["values"])}
        keep = ("type", "logicalType", "precision", "scale")
        return {k: _signature(v) if k == "type" else v for k, v in avro.items() if k in keep}
    return avro


def schema_mismatch(new_avro: dict[str, Any], table_avro: dict[str, Any]) -> str | None:
    """Describe the first difference between two top-level Avro record schemas, else ``None``."""
    new_fields = {f["name"]: _signature(f["type"]) for f in new_avro.get("fields", [])}
    old_fields = {f["name"]: _signature(f["type"]) for f in table_avro.get("fields", [])}
    for name in old_fields:
        if name not in new_fields:
            return f"column {name!r} of the table is missing from the data"
    for name, sig in new_fields.items():
        if name not in old_fields:
            return f"column {name!r} is not in the table schema"
        if sig != old_fields[name]:
            return f"column {name!r} has type {sig} but the table has {old_fields[name]}"
    return None


def table_column_order(table_avro: dict[str, Any]) -> list[str]:
    """Names of the top-level fields of a table's Avro schema, in order."""
    return [f["name"] for f in table_avro.get("fields", [])]
