"""Helpers that write ``parquetdir`` tables for tests (the format does not write)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakesieve_parquet_dir import MARKER

#: Modification second of the first commit; commit ``n`` is ``n * 10`` seconds later.
BASE_SECOND = 1_700_000_000

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("s", pa.string())])


def _write(path: Path, name: str, rows: list[dict[str, Any]], commit: int) -> None:
    target = path / name
    pq.write_table(pa.Table.from_pylist(rows, SCHEMA), target)
    second = BASE_SECOND + 10 * commit
    os.utime(target, (second, second))


def create_folder(path: Path, rows: list[dict[str, Any]], files: int = 4) -> None:
    """Make a new table: the marker and ``rows`` split over ``files`` files (commit 0)."""
    path.mkdir(parents=True, exist_ok=False)
    (path / MARKER).write_text("")
    size = max(1, -(-len(rows) // files))
    for n, start in enumerate(range(0, len(rows), size)):
        _write(path, f"part-0-{n:03d}.parquet", rows[start : start + size], 0)


def append_file(path: Path, rows: list[dict[str, Any]], commit: int) -> None:
    """Add ``rows`` as one new file stamped with commit ``commit``'s second."""
    _write(path, f"part-{commit}-000.parquet", rows, commit)
