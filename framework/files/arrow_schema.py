"""Plain Arrow types for the schemas of written tables.

Spark hands frames over with plain string, binary and list types; native
table libraries sometimes report large or view variants. :func:`plain_schema`
maps every such type back to its plain form, so schemas compare equal and
files are written with the types Spark reads back.
"""

from __future__ import annotations

import pyarrow as pa


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with large and view string/binary/list types replaced by the plain ones."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_list(t):
        return pa.list_(
            pa.field(t.value_field.name, plain_type(t.value_type), t.value_field.nullable)
        )
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(plain_type(t.key_type), plain_type(t.item_type))
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with plain string/binary/list types and no field metadata."""
    return pa.schema([pa.field(f.name, plain_type(f.type), f.nullable) for f in schema])
