"""A small reader for Avro object container files (``Obj\\x01``).

Hudi stores some timeline metadata as Avro container files: rollback and
restore metadata in every table version, and commit metadata from table
version 8 on. hudi-rs decodes commit metadata for us
(``HudiTimeline.get_instant_metadata_in_json``) but exposes no rollback or
restore metadata, so the Hudi plugin decodes those files itself with this
module.

Only what such files need is supported: the ``null`` and ``deflate`` codecs
and every Avro type (records, enums, arrays, maps, unions, fixed, named type
references). Values decode to plain Python objects: records to dicts, maps to
dicts, arrays to lists, bytes and fixed to ``bytes``. Anything unexpected
raises :class:`AvroDecodeError`; callers treat that as "metadata unreadable".
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

MAGIC = b"Obj\x01"
SYNC_SIZE = 16

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


class AvroDecodeError(ValueError):
    """The bytes are not an Avro container file this module can decode."""


class _Cursor:
    """A read position over a bytes buffer with Avro's primitive decoders."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise AvroDecodeError("truncated Avro data")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def long(self) -> int:
        shift = 0
        acc = 0
        while True:
            if self.pos >= len(self.data):
                raise AvroDecodeError("truncated variable-length integer")
            byte = self.data[self.pos]
            self.pos += 1
            acc |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 63:
                raise AvroDecodeError("variable-length integer too long")
        return (acc >> 1) ^ -(acc & 1)

    def bytes_(self) -> bytes:
        return self.take(self.long())

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


class _Schema:
    """Resolves named types while decoding values against a parsed schema."""

    def __init__(self, schema: Any) -> None:
        self.names: dict[str, Any] = {}
        self.root = schema
        self._register(schema, "")

    def _fullname(self, node: dict[str, Any], namespace: str) -> tuple[str, str]:
        name = str(node.get("name", ""))
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        space = str(node.get("namespace", namespace) or "")
        return (f"{space}.{name}" if space else name), space

    def _register(self, node: Any, namespace: str) -> None:
        if isinstance(node, list):
            for branch in node:
                self._register(branch, namespace)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            full, space = self._fullname(node, namespace)
            self.names[full] = node
            self.names.setdefault(str(node["name"]).rsplit(".", 1)[-1], node)
            node["_space"] = space
            for fld in node.get("fields", []) if kind != "enum" else []:
                self._register(fld.get("type"), space)
        elif kind == "array":
            self._register(node.get("items"), namespace)
        elif kind == "map":
            self._register(node.get("values"), namespace)
        elif isinstance(kind, dict | list):
            self._register(kind, namespace)

    def _lookup(self, name: str, namespace: str) -> Any:
        for candidate in (f"{namespace}.{name}" if namespace else name, name):
            if candidate in self.names:
                return self.names[candidate]
        raise AvroDecodeError(f"unknown Avro type {name!r}")

    def read(self, node: Any, cur: _Cursor, namespace: str = "") -> Any:
        """Decode one value of type ``node`` at the cursor."""
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return self._primitive(node, cur)
            return self.read(self._lookup(node, namespace), cur, namespace)
        if isinstance(node, list):
            index = cur.long()
            if not 0 <= index < len(node):
                raise AvroDecodeError("union branch out of range")
            return self.read(node[index], cur, namespace)
        if not isinstance(node, dict):
            raise AvroDecodeError(f"bad Avro schema node {node!r}")
        kind = node.get("type")
        if isinstance(kind, dict | list) or (isinstance(kind, str) and kind not in _COMPLEX):
            return self.read(kind, cur, namespace)
        if kind in ("record", "error"):
            space = str(node.get("_space", namespace))
            return {f["name"]: self.read(f["type"], cur, space) for f in node.get("fields", [])}
        if kind == "enum":
            symbols = node.get("symbols", [])
            index = cur.long()
            if not 0 <= index < len(symbols):
                raise AvroDecodeError("enum symbol out of range")
            return symbols[index]
        if kind == "fixed":
            return cur.take(int(node.get("size", 0)))
        if kind == "array":
            return [
                item for item in self._blocks(cur, lambda: self.read(node["items"], cur, namespace))
            ]
        if kind == "map":
            pairs = self._blocks(
                cur,
                lambda: (cur.bytes_().decode("utf-8"), self.read(node["values"], cur, namespace)),
            )
            return dict(pairs)
        raise AvroDecodeError(f"unsupported Avro type {kind!r}")

    @staticmethod
    def _blocks(cur: _Cursor, read_item: Any) -> Iterator[Any]:
        while True:
            count = cur.long()
            if count == 0:
                return
            if count < 0:
                count = -count
                cur.long()  # block size in bytes, not needed
            for _ in range(count):
                yield read_item()

    @staticmethod
    def _primitive(kind: str, cur: _Cursor) -> Any:
        if kind == "null":
            return None
        if kind == "boolean":
            return cur.take(1) != b"\x00"
        if kind in ("int", "long"):
            return cur.long()
        if kind == "float":
            return struct.unpack("<f", cur.take(4))[0]
        if kind == "double":
            return struct.unpack("<d", cur.take(8))[0]
        if kind == "bytes":
            return cur.bytes_()
        return cur.bytes_().decode("utf-8")


_COMPLEX = frozenset({"record", "error", "enum", "fixed", "array", "map"})


def read_container(data: bytes) -> list[Any]:
    """Decode every datum of an Avro object container file.

    Args:
        data: the whole file.

    Returns:
        The data, in file order, as plain Python values.

    Raises:
        AvroDecodeError: not a container file, an unsupported codec, or corrupt data.
    """
    if not data.startswith(MAGIC):
        raise AvroDecodeError("not an Avro container file")
    cur = _Cursor(data, len(MAGIC))
    header: dict[str, bytes] = {}
    for key, value in _Schema._blocks(cur, lambda: (cur.bytes_().decode("utf-8"), cur.bytes_())):
        header[key] = value
    sync = cur.take(SYNC_SIZE)
    try:
        schema = _Schema(json.loads(header["avro.schema"].decode("utf-8")))
    except (KeyError, ValueError) as exc:
        raise AvroDecodeError(f"bad Avro schema header: {exc}") from exc
    codec = header.get("avro.codec", b"null").decode("utf-8")
    if codec not in ("null", "deflate"):
        raise AvroDecodeError(f"unsupported Avro codec {codec!r}")
    out: list[Any] = []
    while not cur.at_end():
        count = cur.long()
        block = cur.bytes_()
        if cur.take(SYNC_SIZE) != sync:
            raise AvroDecodeError("Avro sync marker mismatch")
        if codec == "deflate":
            try:
                block = zlib.decompress(block, -15)
            except zlib.error as exc:
                raise AvroDecodeError(f"bad deflate block: {exc}") from exc
        inner = _Cursor(block)
        for _ in range(count):
            out.append(schema.read(schema.root, inner))
    return out
