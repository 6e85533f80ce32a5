"""Hudi log files: encoding the blocks our merge-on-read writer appends, and reading them back.

A log file (table version 6 names it ``.<fileId>_<baseInstant>.log.<version>_<writeToken>``)
is a sequence of blocks. Each block is laid out as (big-endian integers)::

    "#HUDI#"                      magic, 6 bytes
    long   size                   bytes that follow this field, up to the end of the block
    int    log format version     1
    int    block type             0 command, 1 delete, 3 Avro data, 5 Parquet data
    int    header entries, then per entry: int key, int length, UTF-8 value
    long   content length, then the content
    int    footer entries (0 here)
    long   block length           bytes from the magic up to this field

Header keys: 0 instant time, 1 target instant (command blocks), 2 writer schema
(Avro JSON with the five ``_hoodie_*`` fields first), 3 command type (``"0"`` =
rollback). A Parquet data block's content is a whole Parquet file holding the
rows with their meta columns. A delete block's content (block content version
3) is ``int 3``, ``int length`` and the Avro binary encoding of a
``HoodieDeleteRecordList``: an array of records ``(recordKey, partitionPath,
orderingVal)``, each a union starting with ``null``.

hudi-rs 0.5.0 reads Avro and Parquet data blocks, delete blocks and rollback
command blocks; it skips blocks whose instant is not a completed instant of the
timeline and blocks named by a rollback block. :func:`read_log_keys` replays
the same rules for the writer's own needs (which keys a file slice holds).
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
DELETE_CONTENT_VERSION = 3

COMMAND_BLOCK = 0
DELETE_BLOCK = 1
AVRO_DATA_BLOCK = 3
PARQUET_DATA_BLOCK = 5

INSTANT_TIME = 0
TARGET_INSTANT_TIME = 1
SCHEMA = 2
COMMAND_BLOCK_TYPE = 3
ROLLBACK_COMMAND = "0"

_LOG_NAME = re.compile(
    r"^\.(?P<fid>.+)_(?P<base>\d{14,17})\.log\.(?P<version>\d+)(?:_(?P<token>\d+-\d+-\d+))?$"
)


class LogFormatError(ValueError):
    """A log file this module cannot decode."""


def log_file_name(file_id: str, base_instant: str, version: int, token: str) -> str:
    """Name of log file number ``version`` of the slice based at ``base_instant``."""
    return f".{file_id}_{base_instant}.log.{version}_{token}"


@dataclass(frozen=True)
class LogName:
    """The parts of a log file name."""

    file_id: str
    base_instant: str
    version: int
    token: str


def parse_log_file_name(name: str) -> LogName | None:
    """Split a log file name (a path's last part is used), or ``None`` when it is not one."""
    match = _LOG_NAME.match(name.rsplit("/", 1)[-1])
    if not match:
        return None
    return LogName(match["fid"], match["base"], int(match["version"]), match["token"] or "")


def is_log_file(path: str) -> bool:
    """Whether ``path`` names a Hudi log file."""
    return parse_log_file_name(path) is not None


def with_meta_fields(schema_json: str) -> str:
    """The table's Avro schema with the five ``_hoodie_*`` string fields first (log headers)."""
    schema = json.loads(schema_json)
    meta = [
        {"name": name, "type": ["null", "string"], "doc": "", "default": None}
        for name in META_COLUMNS
    ]
    rest = [f for f in schema.get("fields", []) if f.get("name") not in META_COLUMNS]
    schema["fields"] = meta + rest
    return json.dumps(schema, separators=(",", ":"))


def encode_block(block_type: int, header: dict[int, str], content: bytes) -> bytes:
    """One complete log block (see the module docstring for the layout)."""
    body = io.BytesIO()
    body.write(struct.pack(">ii", LOG_FORMAT_VERSION, block_type))
    body.write(struct.pack(">i", len(header)))
    for key, value in header.items():
        raw = value.encode("utf-8")
        body.write(struct.pack(">ii", key, len(raw)))
        body.write(raw)
    body.write(struct.pack(">q", len(content)))
    body.write(content)
    body.write(struct.pack(">i", 0))
    middle = body.getvalue()
    block_length = len(MAGIC) + 8 + len(middle)
    return MAGIC + struct.pack(">q", len(middle) + 8) + middle + struct.pack(">q", block_length)


def parquet_data_block(
    rows: pa.Table, instant: str, schema_json: str, compression: str = "snappy"
) -> bytes:
    """A Parquet data block holding ``rows`` (meta columns first) written by ``instant``."""
    sink = io.BytesIO()
    pq.write_table(rows, sink, compression=compression)
    header = {INSTANT_TIME: instant, SCHEMA: with_meta_fields(schema_json)}
    return encode_block(PARQUET_DATA_BLOCK, header, sink.getvalue())


def _avro_long(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _avro_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _avro_long(len(raw)) + raw


def delete_block(keys: Iterable[tuple[str, str]], instant: str, schema_json: str) -> bytes:
    """A delete block for ``(record key, partition path)`` pairs written by ``instant``."""
    pairs = list(keys)
    payload = io.BytesIO()
    if pairs:
        payload.write(_avro_long(len(pairs)))
        for key, partition in pairs:
            payload.write(b"\x02" + _avro_string(key))
            payload.write(b"\x02" + _avro_string(partition))
            payload.write(b"\x00")  # orderingVal: null
    payload.write(b"\x00")
    data = payload.getvalue()
    content = struct.pack(">ii", DELETE_CONTENT_VERSION, len(data)) + data
    header = {INSTANT_TIME: instant, SCHEMA: with_meta_fields(schema_json)}
    return encode_block(DELETE_BLOCK, header, content)


def rollback_block(instant: str, target_instant: str) -> bytes:
    """A command block telling readers to skip every block written by ``target_instant``."""
    header = {
        INSTANT_TIME: instant,
        TARGET_INSTANT_TIME: target_instant,
        COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
    }
    return encode_block(COMMAND_BLOCK, header, b"")


@dataclass(frozen=True)
class RawBlock:
    """A decoded block: its type, header and undecoded content."""

    block_type: int
    header: dict[int, str]
    content: bytes


def iter_blocks(data: bytes) -> Iterator[RawBlock]:
    """The blocks of a log file's bytes, in order.

    Raises:
        LogFormatError: bytes that are not a sequence of complete blocks.
    """
    pos = 0
    while pos < len(data):
        if data[pos : pos + 6] != MAGIC:
            raise LogFormatError(f"no log block magic at offset {pos}")
        try:
            (size,) = struct.unpack_from(">q", data, pos + 6)
            p = pos + 14
            _version, block_type, entries = struct.unpack_from(">iii", data, p)
            p += 12
            header: dict[int, str] = {}
            for _ in range(entries):
                key, length = struct.unpack_from(">ii", data, p)
                p += 8
                header[key] = data[p : p + length].decode("utf-8")
                p += length
            (content_length,) = struct.unpack_from(">q", data, p)
            p += 8
            content = data[p : p + content_length]
        except struct.error as exc:
            raise LogFormatError(f"truncated log block at offset {pos}") from exc
        if len(content) != content_length:
            raise LogFormatError(f"truncated log block content at offset {pos}")
        yield RawBlock(block_type, header, content)
        pos += 14 + size


class _AvroCursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        shift = acc = 0
        while True:
            if self.pos >= len(self.data):
                raise LogFormatError("truncated delete block")
            byte = self.data[self.pos]
            self.pos += 1
            acc |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (acc >> 1) ^ -(acc & 1)
            shift += 7

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        if len(chunk) != size:
            raise LogFormatError("truncated delete block")
        self.pos += size
        return chunk

    def optional_string(self) -> str | None:
        branch = self.long()
        if branch == 0:
            return None
        return self.raw(self.long()).decode("utf-8")

    def skip_ordering_value(self) -> None:
        branch = self.long()
        fixed = {0: 0, 3: 4, 4: 8, 7: 1}  # null, float, double, boolean
        if branch in (1, 2):  # int, long
            self.long()
        elif branch in fixed:
            self.raw(fixed[branch])
        elif branch in (5, 6):  # bytes, string
            self.raw(self.long())
        else:
            raise LogFormatError(f"delete record ordering value of union branch {branch}")


def delete_block_keys(content: bytes) -> list[str]:
    """Record keys of a delete block's content (block content version 3)."""
    if len(content) < 8:
        raise LogFormatError("delete block too short")
    version, length = struct.unpack_from(">ii", content, 0)
    if version != DELETE_CONTENT_VERSION:
        raise LogFormatError(f"delete block content version {version} is not supported")
    cursor = _AvroCursor(content[8 : 8 + length])
    keys: list[str] = []
    while True:
        count = cursor.long()
        if count == 0:
            return keys
        if count < 0:
            cursor.long()
            count = -count
        for _ in range(count):
            key = cursor.optional_string()
            cursor.optional_string()
            cursor.skip_ordering_value()
            if key is not None:
                keys.append(key)


def data_block_rows(block: RawBlock, columns: list[str] | None = None) -> pa.Table:
    """The rows of a Parquet data block.

    Raises:
        LogFormatError: an Avro data block (the writer reads only Parquet blocks).
    """
    if block.block_type != PARQUET_DATA_BLOCK:
        raise LogFormatError(f"log block type {block.block_type} holds no Parquet data")
    return pq.read_table(io.BytesIO(block.content), columns=columns)


@dataclass(frozen=True)
class LogEvent:
    """One effective block of a slice's logs: its instant, and keys upserted or deleted."""

    instant: str
    deleted: bool
    keys: tuple[Any, ...]


def valid_blocks(
    logs: Iterable[bytes], completed: set[str] | frozenset[str] | None
) -> list[RawBlock]:
    """Data and delete blocks of a slice's log files (in order) that readers apply.

    Blocks of instants outside ``completed`` (when given) and of instants named by
    a rollback command block are dropped, as hudi-rs does.
    """
    blocks = [b for data in logs for b in iter_blocks(data)]
    rolled_back = {
        b.header.get(TARGET_INSTANT_TIME, "")
        for b in blocks
        if b.block_type == COMMAND_BLOCK and b.header.get(COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
    }
    out = []
    for b in blocks:
        if b.block_type == COMMAND_BLOCK:
            continue
        instant = b.header.get(INSTANT_TIME, "")
        if instant in rolled_back or (completed is not None and instant not in completed):
            continue
        out.append(b)
    return out


def read_log_events(
    logs: Iterable[bytes], completed: set[str] | frozenset[str] | None
) -> list[LogEvent]:
    """The keys each effective block of a slice's logs upserts or deletes, in order."""
    events = []
    for block in valid_blocks(logs, completed):
        if block.block_type == DELETE_BLOCK:
            keys = tuple(delete_block_keys(block.content))
            events.append(LogEvent(block.header.get(INSTANT_TIME, ""), True, keys))
        else:
            rows = data_block_rows(block, [META_COLUMNS[2]])
            keys = tuple(rows.column(0).to_pylist())
            events.append(LogEvent(block.header.get(INSTANT_TIME, ""), False, keys))
    return events
