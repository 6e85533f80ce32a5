"""Helpers that write and read ``parquetdir`` tables for tests (the format does not write).

:func:`reference_rows` is the example's reference reader for lakesieve's
format contract kit: it reads a table's files with ``pyarrow.dataset`` (a
plain folder of Parquet files has no library of its own), never through the
plugin, and names the file each row comes from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from lakesieve.testing.format_contract import ARROW_SCHEMA, ROW_GROUP_ROWS

from lakesieve_parquet_dir import MARKER

#: Modification second of the first commit; commit ``n`` is ``n * 10`` seconds later.
BASE_SECOND = 1_700_000_000

#: The columns of lakesieve's format contract kit, and its rows per Parquet row
#: group (small, so that every file holds several).
SCHEMA = ARROW_SCHEMA

#: The column :func:`reference_rows` names each row's file in.
LOCATION = "location"


def _write(path: Path, name: str, rows: list[dict[str, Any]], commit: int) -> None:
    target = path / name
    columns = set(rows[0]) if rows else set(SCHEMA.names)
    schema = pa.schema([f for f in SCHEMA if f.name in columns])
    pq.write_table(pa.Table.from_pylist(rows, schema), target, row_group_size=ROW_GROUP_ROWS)
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


def reference_rows(path: Path, second: int) -> pa.Table:
    """The rows of every data file modified in or before ``second``, each with its file's name.

    Read with ``pyarrow.dataset``, one fragment per file, in a :data:`LOCATION` column.
    """
    names = sorted(
        f.name
        for f in path.glob("*.parquet")
        if f.name[0] not in "._" and int(f.stat().st_mtime) <= second
    )
    dataset = ds.dataset([str(path / n) for n in names], format="parquet")
    parts = [
        fragment.to_table().append_column(
            LOCATION, pa.array([Path(fragment.path).name] * fragment.count_rows(), pa.string())
        )
        for fragment in dataset.get_fragments()
    ]
    return pa.concat_tables(parts)
