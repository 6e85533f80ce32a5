"""Hudi change-data (CDC) log files: what they hold and how to read their images.

A table with ``hoodie.table.cdc.enabled=true`` records, for every write that
changes the records of an existing file group, a CDC log file next to the
group's data: ``.<fileId>_<instant>.log.<version>_<write token>.cdc``. The
write stat of that group in the commit metadata names it in ``cdcStats``
(path relative to the table root -> bytes). Its log blocks have type
``CDC_DATA_BLOCK`` (6) and an Avro data block's content: ``int`` version,
``int`` record count, then per record an ``int`` size and the record's Avro
binary encoding under the writer schema of the block's ``SCHEMA`` header.

With supplemental logging mode ``data_before_after`` a record is
``{op, ts_ms, before, after}``: ``op`` is ``i`` (insert: ``after`` only),
``u`` (update: both) or ``d`` (delete: ``before`` only), and the images are
whole rows of the table schema. So, for one file group and one commit, the
rows there afterwards are the rows there before minus every ``before`` image
plus every ``after`` image -- exactly what an index's delta needs, without
reading the file group itself. Other modes (``op_key_only``,
``data_before``) hold no after image; lakesieve does not use them.

Readers of the table's data never see these files: Hudi's readers skip
``.cdc`` log files, and on a copy-on-write table no reader looks at log files.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

#: ``hoodie.properties`` switch of change-data logging.
CDC_ENABLED = "hoodie.table.cdc.enabled"
#: ``hoodie.properties`` key of what a CDC record holds.
CDC_MODE = "hoodie.table.cdc.supplemental.logging.mode"
#: The mode whose records carry both images (compared case-insensitively).
BEFORE_AFTER = "data_before_after"
#: Suffix of a CDC log file name.
CDC_SUFFIX = ".cdc"
#: Log block type of a CDC data block.
CDC_DATA_BLOCK = 6
#: Version of the Avro data block content.
AVRO_BLOCK_VERSION = 3
#: Operations of a CDC record.
INSERT, UPDATE, DELETE = "i", "u", "d"


class CdcFormatError(ValueError):
    """A CDC log file lakesieve cannot take as a complete record of a commit's changes."""


class NotVectorizable(Exception):
    """A block's schema or column is outside what the vectorised decoder reads."""


@dataclass
class ImageColumn:
    """One column of the images of a sequence of CDC data blocks, record by record.

    Attributes:
        record_block: per record, the index of its block in the sequence.
        has_before: per record, whether it holds a before image.
        before: the column's value in each before image, in record order.
        has_after: per record, whether it holds an after image.
        after: the column's value in each after image, in record order.
    """

    record_block: np.ndarray
    has_before: np.ndarray
    before: pa.Array
    has_after: np.ndarray
    after: pa.Array

    @property
    def records(self) -> int:
        """The number of records."""
        return int(self.record_block.size)


def records_images(config: Mapping[str, str]) -> bool:
    """Whether a table's properties say its CDC records carry before and after images."""
    enabled = str(config.get(CDC_ENABLED, "")).strip().lower() == "true"
    mode = str(config.get(CDC_MODE, "")).strip().lower()
    return enabled and mode == BEFORE_AFTER


def cdc_schema(record_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The writer schema of ``data_before_after`` records for rows of ``record_schema``."""
    name = str(record_schema.get("name") or "record")
    namespace = record_schema.get("namespace")
    full = f"{namespace}.{name}" if namespace else name
    nullable_string = ["null", "string"]
    return {
        "type": "record",
        "name": "CDC",
        **({"namespace": namespace} if namespace else {}),
        "fields": [
            {"name": "op", "type": nullable_string, "default": None},
            {"name": "ts_ms", "type": nullable_string, "default": None},
            {"name": "before", "type": ["null", dict(record_schema)], "default": None},
            {"name": "after", "type": ["null", full], "default": None},
        ],
    }


def block_content(records: Sequence[bytes]) -> bytes:
    """The content of an Avro (or CDC) data block holding the encoded ``records``."""
    out = io.BytesIO()
    out.write(struct.pack(">ii", AVRO_BLOCK_VERSION, len(records)))
    for raw in records:
        out.write(struct.pack(">i", len(raw)))
        out.write(raw)
    return out.getvalue()


def encode_records(schema: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> list[bytes]:
    """Each record's Avro binary encoding under ``schema``."""
    from fastavro import parse_schema, schemaless_writer

    parsed = parse_schema(dict(schema))
    out = []
    for record in records:
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, dict(record))
        out.append(buf.getvalue())
    return out


def record_offsets(content: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offset of each record in a data block's content.

    Raises:
        CdcFormatError: the content is not a version-3 data block of whole records.
    """
    if len(content) < 8:
        raise CdcFormatError("CDC block content shorter than its header")
    version, count = struct.unpack_from(">ii", content, 0)
    if version != AVRO_BLOCK_VERSION:
        raise CdcFormatError(f"CDC block content version {version} is not {AVRO_BLOCK_VERSION}")
    starts = np.empty(max(count, 0), dtype=np.int64)
    ends = np.empty(max(count, 0), dtype=np.int64)
    pos, total = 8, len(content)
    unpack = struct.Struct(">i").unpack_from
    for i in range(count):
        if pos + 4 > total:
            raise CdcFormatError("CDC block ends inside a record")
        (size,) = unpack(content, pos)
        pos += 4
        if size < 0 or pos + size > total:
            raise CdcFormatError("CDC block ends inside a record")
        starts[i], ends[i] = pos, pos + size
        pos += size
    if pos != total:
        raise CdcFormatError("CDC block holds bytes after its last record")
    return starts, ends


def split_records(content: bytes) -> list[memoryview]:
    """Each record's bytes in a data block's content (see :func:`record_offsets`)."""
    view = memoryview(content)
    starts, ends = record_offsets(content)
    return [view[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _projection(writer: Mapping[str, Any], column: str) -> dict[str, Any] | None:
    """A reader schema of ``op`` and images holding ``column`` only (decodes twice as fast).

    ``None`` when the writer schema's images are not a record with ``column``
    in the shapes Avro allows here (a union of ``null`` and the record, the
    second image naming the first's type); the whole record is decoded then.
    """
    fields = {f.get("name"): f for f in writer.get("fields", [])}
    projected: dict[str, Any] = {}
    out_fields: list[dict[str, Any]] = [dict(fields["op"])]
    defined: set[str] = set()
    for name in ("before", "after"):
        branches = fields[name].get("type")
        if not isinstance(branches, list):
            return None
        new_branches: list[Any] = []
        for branch in branches:
            if branch == "null":
                new_branches.append(branch)
            elif isinstance(branch, dict) and branch.get("type") == "record":
                kept = [f for f in branch.get("fields", []) if f.get("name") == column]
                if len(kept) != 1:
                    return None
                full = _full_name(branch, writer.get("namespace"))
                if full in defined:
                    return None
                defined.add(full)
                projected = {k: v for k, v in branch.items() if k != "fields"}
                projected["fields"] = kept
                new_branches.append(projected)
            elif isinstance(branch, str) and branch in defined | {projected.get("name")}:
                new_branches.append(branch)
            else:
                return None
        out_fields.append({**fields[name], "type": new_branches})
    return {**{k: v for k, v in writer.items() if k != "fields"}, "fields": out_fields}


def _full_name(record: Mapping[str, Any], enclosing: str | None) -> str:
    name = str(record.get("name"))
    if "." in name:
        return name
    namespace = record.get("namespace", enclosing)
    return f"{namespace}.{name}" if namespace else name


def image_values(data: bytes, column: str) -> tuple[list[Any], list[Any], int]:
    """The ``column`` values of every before and every after image in one CDC file, and its records.

    Decoded record by record (:func:`records_column`), block by block.

    Raises:
        CdcFormatError: a block is not a CDC data block, a record is not a
            ``data_before_after`` record, an image lacks ``column``, or an
            operation's images do not match it.
    """
    from lakesieve.plugins.hudi.writer.log_block import SCHEMA, iter_blocks

    before: list[Any] = []
    after: list[Any] = []
    blocks = records = 0
    for block in iter_blocks(data):
        blocks += 1
        if block.block_type != CDC_DATA_BLOCK:
            raise CdcFormatError(f"log block of type {block.block_type} in a CDC file")
        col = records_column([block.content], json.loads(block.header[SCHEMA]), column)
        before += col.before.to_pylist()
        after += col.after.to_pylist()
        records += col.records
    if blocks == 0:
        raise CdcFormatError("CDC file without a block")
    return before, after, records


def records_column(contents: list[bytes], writer: Mapping[str, Any], column: str) -> ImageColumn:
    """:class:`ImageColumn` of blocks of one writer schema, decoded record by record (fastavro).

    The fallback of :func:`lakesieve.plugins.hudi.cdc_columns.blocks_column`
    for schemas and columns it does not read.

    Raises:
        CdcFormatError: as :func:`image_values`.
    """
    from fastavro import parse_schema, schemaless_reader

    names = [f.get("name") for f in writer.get("fields", [])]
    if names != ["op", "ts_ms", "before", "after"]:
        raise CdcFormatError(f"CDC records with fields {names} carry no before and after images")
    parsed = parse_schema(dict(writer))
    projection = _projection(writer, column)
    reader = parse_schema(projection) if projection is not None else None
    blocks: list[int] = []
    has_before: list[bool] = []
    has_after: list[bool] = []
    before: list[Any] = []
    after: list[Any] = []
    for b, content in enumerate(contents):
        for raw in split_records(content):
            record = schemaless_reader(io.BytesIO(raw), parsed, reader)
            assert isinstance(record, dict)
            old, new = _checked_images(record)
            blocks.append(b)
            has_before.append(old is not None)
            has_after.append(new is not None)
            for image, out in ((old, before), (new, after)):
                if image is not None:
                    if column not in image:
                        raise CdcFormatError(f"CDC image without column {column!r}")
                    out.append(image[column])
    return ImageColumn(
        np.asarray(blocks, dtype=np.int64),
        np.asarray(has_before, dtype=bool),
        pa.array(before),
        np.asarray(has_after, dtype=bool),
        pa.array(after),
    )


def _checked_images(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """A record's before and after image, checked against its operation."""
    op, old, new = record.get("op"), record.get("before"), record.get("after")
    expect_old, expect_new = {INSERT: (False, True), UPDATE: (True, True)}.get(
        str(op), (True, False) if op == DELETE else (None, None)
    )
    if expect_old is None or (old is not None) != expect_old or ((new is not None) != expect_new):
        raise CdcFormatError(f"CDC record with op {op!r} has the wrong images")
    return old, new
