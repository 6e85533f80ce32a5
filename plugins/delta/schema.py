"""The schema of a Delta table as Arrow (for the framework) and as Spark (for reads).

Delta's schema JSON is Spark's own schema JSON, so the Spark schema is parsed
from it directly and types match what Spark's Parquet reader returns. The
Arrow schema comes from delta-rs (plain, not large or view, types).

With column mapping (mode ``name`` or ``id``) data files name top-level
columns by their physical names (``delta.columnMapping.physicalName``);
:func:`physical_names` maps logical to physical names for the readers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import DeltaTable
from lakesieve.sdk.arrow import plain_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def arrow_schema(dt: DeltaTable) -> pa.Schema:
    """The table's Arrow schema (partition columns included, in table order)."""
    return plain_schema(pa.schema(dt.schema().to_arrow()))


def spark_schema(dt: DeltaTable) -> StructType:
    """The table's Spark schema, parsed from the Delta schema JSON."""
    from pyspark.sql.types import StructField, StructType

    parsed = StructType.fromJson(json.loads(dt.schema().to_json()))
    return StructType([StructField(f.name, f.dataType, True) for f in parsed.fields])


def partition_columns(dt: DeltaTable) -> list[str]:
    """The table's partition columns, in order."""
    return list(dt.metadata().partition_columns or [])


PHYSICAL_NAME = "delta.columnMapping.physicalName"


def physical_names(dt: DeltaTable) -> dict[str, str]:
    """Logical -> physical name of every top-level column (identical without column mapping)."""
    fields = json.loads(dt.schema().to_json()).get("fields", [])
    return {f["name"]: (f.get("metadata") or {}).get(PHYSICAL_NAME) or f["name"] for f in fields}


def nested_mapped_column(dt: DeltaTable) -> str | None:
    """The first top-level column whose nested fields have their own physical names, if any."""

    def mapped(node: Any) -> bool:
        if isinstance(node, dict):
            if "name" in node and (node.get("metadata") or {}).get(PHYSICAL_NAME):
                return True
            return any(mapped(v) for v in node.values())
        if isinstance(node, list):
            return any(mapped(v) for v in node)
        return False

    for field in json.loads(dt.schema().to_json()).get("fields", []):
        if mapped(field.get("type")):
            return str(field["name"])
    return None
