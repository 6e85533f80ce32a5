"""The instants of a log file's blocks, read from their headers alone.

A Hudi log file is a sequence of blocks: ``#HUDI#``, the block's size (int64),
the log format version, the block type and the header entry count (int32
each), then header entries (int32 key, int32 length, UTF-8 value), footers
and content. Key 0 of the header is the instant that wrote the block. Only
those bytes are read: each block's content is skipped by seeking past it.

Time travel uses it: hudi-rs lists, in a slice as of an older instant, log
files written later (table version 6 names log files after the base instant,
so names cannot tell), and a read as of that instant skips their blocks. A
file whose every block was written after the instant holds nothing for it.
"""

from __future__ import annotations

import struct

import pyarrow.fs as pafs

_MAGIC = b"#HUDI#"
_INSTANT_TIME = 0


def block_instants(fs: pafs.FileSystem, path: str) -> list[str] | None:
    """The ``INSTANT_TIME`` of every block of the log file at ``path``, in order.

    ``None`` when the file cannot be opened or a block is not well formed, or
    a block names no instant: the caller must then assume the worst.
    """
    out: list[str] = []
    try:
        with fs.open_input_file(path) as handle:
            size = handle.size()
            pos = 0
            while pos < size:
                handle.seek(pos)
                lead = handle.read(26)
                if len(lead) < 26 or lead[:6] != _MAGIC:
                    return None
                (block_size,) = struct.unpack_from(">q", lead, 6)
                _version, _kind, entries = struct.unpack_from(">iii", lead, 14)
                if block_size <= 0 or entries < 0:
                    return None
                instant: str | None = None
                for _ in range(entries):
                    entry = handle.read(8)
                    if len(entry) < 8:
                        return None
                    key, length = struct.unpack(">ii", entry)
                    if length < 0:
                        return None
                    value = handle.read(length)
                    if len(value) < length:
                        return None
                    if key == _INSTANT_TIME:
                        instant = value.decode("utf-8", errors="replace")
                if instant is None:
                    return None
                out.append(instant)
                pos += 14 + block_size
    except (OSError, ValueError, struct.error):
        return None
    return out


def written_after(fs: pafs.FileSystem, path: str, instant: str) -> bool:
    """Whether every block of a log file was written by an instant after ``instant``.

    ``False`` whenever that cannot be shown (unreadable file, instant ids of
    another length, an empty file).
    """
    instants = block_instants(fs, path)
    if not instants:
        return False
    return all(len(i) == len(instant) and i > instant for i in instants)
