"""Row counts and integer column statistics from an ORC file's footer.

pyarrow reads ORC files but exposes none of the statistics their footers
carry. The exact index's Spark-written partitions (format 3) need, per file,
the row count and the least and greatest key; reading them from the footer
spares a Spark job that reads every file back. This module decodes just
enough of the format for that (the ORC specification's file tail: the
postscript, the footer's ``types`` and ``statistics``), for files compressed
with nothing, zlib or zstd.

Only integer and date statistics are read: they are exact in every writer
(string bounds may be truncated, floating-point bounds ignore NaN, decimal
bounds are text), and a key of those types is compared by its plain value.
Anything unexpected raises :class:`OrcFooterError`; callers then read the
file's rows instead.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

import pyarrow as pa

#: ORC's type kinds whose statistics this module reads (the specification's ``Type.Kind``).
INTEGER_KINDS = {1: "byte", 2: "short", 3: "int", 4: "long", 15: "date"}

_STRUCT = 12
_NONE, _ZLIB, _ZSTD = 0, 1, 5
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: The tail read at first: most footers of a few columns fit, else the rest is read.
_TAIL_GUESS = 16 * 1024


class OrcFooterError(ValueError):
    """The bytes are not an ORC file this module can read statistics from."""


@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics over a whole file.

    Attributes:
        name: the column's name (top-level field).
        kind: ``byte``, ``short``, ``int``, ``long`` or ``date``.
        values: how many values are not null.
        has_null: whether some value is null.
        minimum: the least value (days since the epoch for dates); ``None`` when
            ``values`` is 0.
        maximum: the greatest value, likewise.
    """

    name: str
    kind: str
    values: int
    has_null: bool
    minimum: int | None
    maximum: int | None


@dataclass(frozen=True)
class FileStats:
    """What an ORC file's footer says about its rows.

    Attributes:
        rows: the file's row count.
        columns: the statistics of its top-level integer and date columns, by name.
    """

    rows: int
    columns: dict[str, ColumnStats]


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(buf):
            raise OrcFooterError("a varint runs past the end of its message")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise OrcFooterError("a varint is longer than 64 bits")


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a protobuf message, varints as ints."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(buf):
        tag, at = _varint(buf, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(buf, at)
            out.append((number, value))
        elif wire == 2:
            size, at = _varint(buf, at)
            if at + size > len(buf):
                raise OrcFooterError("a field runs past the end of its message")
            out.append((number, buf[at : at + size]))
            at += size
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise OrcFooterError(f"unsupported protobuf wire type {wire}")
    if at != len(buf):
        raise OrcFooterError("a field runs past the end of its message")
    return out


def _packed(fields: list[tuple[int, int | bytes]], number: int) -> list[int]:
    """A repeated varint field, packed or not."""
    out: list[int] = []
    for n, value in fields:
        if n != number:
            continue
        if isinstance(value, int):
            out.append(value)
            continue
        at = 0
        while at < len(value):
            item, at = _varint(value, at)
            out.append(item)
    return out


def _one(fields: list[tuple[int, int | bytes]], number: int, default: int = 0) -> int:
    found = [v for n, v in fields if n == number and isinstance(v, int)]
    return found[-1] if found else default


def _required(fields: list[tuple[int, int | bytes]], number: int, what: str) -> int:
    """A varint field that must be present (a missing count is unknown, not zero)."""
    found = [v for n, v in fields if n == number and isinstance(v, int)]
    if not found:
        raise OrcFooterError(f"{what} is missing")
    return found[-1]


def _zstd_content_size(frame: bytes) -> int:
    """The decompressed size a zstd frame's header states (the specification's ``Frame_Content_Size``)."""
    if len(frame) < 6 or frame[:4] != _ZSTD_MAGIC:
        raise OrcFooterError("a zstd chunk does not start with a zstd frame")
    descriptor = frame[4]
    size_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0:
        raise OrcFooterError("a zstd frame does not state its size")
    if at + width > len(frame):
        raise OrcFooterError("a zstd frame header is cut short")
    size = int.from_bytes(frame[at : at + width], "little")
    return size + 256 if width == 2 else size


def _inflate(buf: bytes, compression: int, block_size: int) -> bytes:
    """An ORC compressed stream's bytes, decompressed chunk by chunk."""
    if compression == _NONE:
        return buf
    parts: list[bytes] = []
    at = 0
    while at < len(buf):
        if at + 3 > len(buf):
            raise OrcFooterError("a compressed chunk header is cut short")
        header = int.from_bytes(buf[at : at + 3], "little")
        at += 3
        size, original = header >> 1, header & 1
        chunk = buf[at : at + size]
        if len(chunk) != size:
            raise OrcFooterError("a compressed chunk is cut short")
        at += size
        if original:
            parts.append(chunk)
        elif compression == _ZLIB:
            parts.append(zlib.decompress(chunk, -15))
        else:
            wanted = _zstd_content_size(chunk)
            if wanted > max(block_size, 1):
                raise OrcFooterError("a zstd chunk is larger than the file's block size")
            try:
                parts.append(pa.Codec("zstd").decompress(chunk, wanted, asbytes=True))
            except (OSError, pa.ArrowException) as exc:
                raise OrcFooterError(f"a zstd chunk does not decompress: {exc}") from exc
    return b"".join(parts)


def _column_stats(name: str, kind: int, message: bytes) -> ColumnStats:
    fields = _fields(message)
    values = _required(fields, 1, f"column {name}'s count of values")
    has_null = bool(_one(fields, 10))
    stats_field = 7 if kind == 15 else 2
    found = [v for n, v in fields if n == stats_field and isinstance(v, bytes)]
    low = high = None
    if values:
        if not found:
            raise OrcFooterError(f"column {name} has values but no bounds")
        bounds = _fields(found[-1])
        if not any(n == 1 for n, _ in bounds) or not any(n == 2 for n, _ in bounds):
            raise OrcFooterError(f"column {name} lacks its least or greatest value")
        low, high = _zigzag(_one(bounds, 1)), _zigzag(_one(bounds, 2))
        if low > high:
            raise OrcFooterError(f"column {name}'s least value is above its greatest")
    return ColumnStats(name, INTEGER_KINDS[kind], values, has_null, low, high)


def read_stats(data: bytes) -> FileStats:
    """The row count and integer column statistics of the ORC file ``data``.

    Raises:
        OrcFooterError: ``data`` is no ORC file, is compressed other than with
            nothing, zlib or zstd, or its footer is not what the format says.
    """
    if len(data) < 4 or data[:3] != b"ORC":
        raise OrcFooterError("not an ORC file")
    return _from_tail(data)


def read_file_stats(path: str) -> FileStats:
    """:func:`read_stats` of the ORC file at ``path``, reading only its first bytes and its tail.

    Raises:
        OrcFooterError: as :func:`read_stats`, naming ``path``.
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 4 or fh.read(3) != b"ORC":
                raise OrcFooterError("not an ORC file")
            take = min(size, _TAIL_GUESS)
            fh.seek(size - take)
            tail = fh.read(take)
            needed = _tail_length(tail)
            if needed + 3 > size:
                raise OrcFooterError("the footer runs past the start of the file")
            if needed > len(tail):
                fh.seek(size - needed)
                tail = fh.read(needed)
        return _from_tail(tail)
    except OrcFooterError as exc:
        raise OrcFooterError(f"{path}: {exc}") from exc


def _postscript(tail: bytes) -> list[tuple[int, int | bytes]]:
    ps_len = tail[-1]
    if ps_len + 1 > len(tail):
        raise OrcFooterError("the postscript runs past the start of the file")
    return _fields(tail[-1 - ps_len : -1])


def _tail_length(tail: bytes) -> int:
    """How many bytes at the end of the file its postscript and footer take."""
    if not tail:
        raise OrcFooterError("the file is empty")
    return 1 + tail[-1] + _required(_postscript(tail), 1, "the postscript's footer length")


def _from_tail(tail: bytes) -> FileStats:
    """The statistics of a file whose last bytes (at least postscript and footer) are ``tail``."""
    if not tail:
        raise OrcFooterError("the file is empty")
    ps_len = tail[-1]
    postscript = _postscript(tail)
    compression = _one(postscript, 2)
    if compression not in (_NONE, _ZLIB, _ZSTD):
        raise OrcFooterError(f"unsupported ORC compression kind {compression}")
    footer_len = _required(postscript, 1, "the postscript's footer length")
    end = len(tail) - 1 - ps_len
    if footer_len > end:
        raise OrcFooterError("the footer runs past the start of the file")
    footer = _fields(_inflate(tail[end - footer_len : end], compression, _one(postscript, 3)))
    types = [_fields(v) for n, v in footer if n == 4 and isinstance(v, bytes)]
    stats = [v for n, v in footer if n == 7 and isinstance(v, bytes)]
    if not types or _one(types[0], 1) != _STRUCT:
        raise OrcFooterError("the file's root type is not a struct")
    if len(stats) != len(types):
        raise OrcFooterError("the footer's statistics do not cover every column")
    names = [v.decode("utf-8") for n, v in types[0] if n == 3 and isinstance(v, bytes)]
    children = _packed(types[0], 2)
    if len(names) != len(children):
        raise OrcFooterError("the root struct's fields and names disagree")
    columns: dict[str, ColumnStats] = {}
    for name, column in zip(names, children, strict=True):
        if column >= len(types):
            raise OrcFooterError(f"column {name} names a type the footer lacks")
        kind = _one(types[column], 1)
        if kind in INTEGER_KINDS:
            columns[name] = _column_stats(name, kind, stats[column])
    return FileStats(rows=_required(footer, 6, "the footer's row count"), columns=columns)
