"""A small Avro object container writer for the Hudi timeline metadata the writer records.

Hudi stores rollback, clean and compaction-plan metadata as Avro container
files (``Obj\\x01``, the writer schema in the header, one data block, the
``null`` codec). Only the types those records use are supported: ``null``,
``boolean``, ``int``, ``long``, ``double``, ``string``, records, arrays, maps
and unions (``None`` picks the ``null`` branch, any other value the first
other branch). :mod:`lakesieve.plugins.hudi.avro_container` reads them back.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Iterable, Mapping
from typing import Any

MAGIC = b"Obj\x01"


def _long(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _bytes(raw: bytes) -> bytes:
    return _long(len(raw)) + raw


def encode(schema: Any, value: Any, out: io.BytesIO) -> None:
    """Append the Avro binary encoding of ``value`` under ``schema`` to ``out``.

    Raises:
        ValueError: a schema type this writer does not support.
    """
    if isinstance(schema, list):
        if value is None:
            out.write(_long(schema.index("null")))
            return
        branch = next(i for i, s in enumerate(schema) if s != "null")
        out.write(_long(branch))
        encode(schema[branch], value, out)
        return
    kind = schema["type"] if isinstance(schema, dict) else schema
    if isinstance(kind, (dict, list)):
        encode(kind, value, out)
    elif kind == "null":
        return
    elif kind == "boolean":
        out.write(b"\x01" if value else b"\x00")
    elif kind in ("int", "long"):
        out.write(_long(int(value)))
    elif kind == "double":
        out.write(struct.pack("<d", float(value)))
    elif kind == "string":
        out.write(_bytes(str(value).encode("utf-8")))
    elif kind == "record":
        for field in schema["fields"]:
            encode(field["type"], value.get(field["name"], field.get("default")), out)
    elif kind == "array":
        items = list(value or [])
        if items:
            out.write(_long(len(items)))
            for item in items:
                encode(schema["items"], item, out)
        out.write(b"\x00")
    elif kind == "map":
        entries: Mapping[str, Any] = value or {}
        if entries:
            out.write(_long(len(entries)))
            for key, item in entries.items():
                out.write(_bytes(str(key).encode("utf-8")))
                encode(schema["values"], item, out)
        out.write(b"\x00")
    else:
        raise ValueError(f"Avro type {kind!r} is not supported by this writer")


def container(schema: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> bytes:
    """An Avro object container file holding ``records`` (one block, no compression)."""
    rows = list(records)
    schema_json = json.dumps(schema, separators=(",", ":"))
    sync = hashlib.md5(schema_json.encode("utf-8")).digest()
    out = io.BytesIO()
    out.write(MAGIC)
    meta = {"avro.schema": schema_json.encode("utf-8"), "avro.codec": b"null"}
    out.write(_long(len(meta)))
    for key, raw in meta.items():
        out.write(_bytes(key.encode("utf-8")))
        out.write(_bytes(raw))
    out.write(b"\x00")
    out.write(sync)
    if rows:
        block = io.BytesIO()
        for row in rows:
            encode(schema, row, block)
        data = block.getvalue()
        out.write(_long(len(rows)))
        out.write(_long(len(data)))
        out.write(data)
        out.write(sync)
    return out.getvalue()


def _string() -> dict[str, str]:
    return {"type": "string", "avro.java.string": "String"}


def _strings() -> dict[str, Any]:
    return {"type": "array", "items": _string()}


ROLLBACK_METADATA = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "startRollbackTime", "type": _string()},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": _strings()},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": _string()},
                        {"name": "successDeleteFiles", "type": _strings()},
                        {"name": "failedDeleteFiles", "type": _strings()},
                        {
                            "name": "rollbackLogFiles",
                            "type": ["null", {"type": "map", "values": "long"}],
                            "default": None,
                        },
                        {
                            "name": "logFilesFromFailedCommit",
                            "type": ["null", {"type": "map", "values": "long"}],
                            "default": None,
                        },
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {
            "name": "instantsRollback",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieInstantInfo",
                    "fields": [
                        {"name": "commitTime", "type": _string()},
                        {"name": "action", "type": _string()},
                    ],
                },
            },
            "default": [],
        },
    ],
}

CLEAN_METADATA = {
    "type": "record",
    "name": "HoodieCleanMetadata",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "startCleanTime", "type": _string()},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": _string()},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieCleanPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": _string()},
                        {"name": "policy", "type": _string()},
                        {"name": "deletePathPatterns", "type": _strings()},
                        {"name": "successDeleteFiles", "type": _strings()},
                        {"name": "failedDeleteFiles", "type": _strings()},
                        {
                            "name": "isPartitionDeleted",
                            "type": ["null", "boolean"],
                            "default": None,
                        },
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 2},
        {"name": "lastCompletedCommitTimestamp", "type": ["null", _string()], "default": None},
    ],
}

COMPACTION_PLAN = {
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "operations",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieCompactionOperation",
                        "fields": [
                            {"name": "baseInstantTime", "type": ["null", _string()]},
                            {
                                "name": "deltaFilePaths",
                                "type": ["null", _strings()],
                                "default": None,
                            },
                            {"name": "dataFilePath", "type": ["null", _string()], "default": None},
                            {"name": "fileId", "type": ["null", _string()]},
                            {"name": "partitionPath", "type": ["null", _string()], "default": None},
                            {
                                "name": "metrics",
                                "type": ["null", {"type": "map", "values": "double"}],
                                "default": None,
                            },
                        ],
                    },
                },
            ],
            "default": None,
        },
        {
            "name": "extraMetadata",
            "type": ["null", {"type": "map", "values": _string()}],
            "default": None,
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}
