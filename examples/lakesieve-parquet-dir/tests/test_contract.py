"""The example plugin passes lakesieve's format contract kit.

Run from this folder after ``pip install -e .`` (the entry point registers
the plugin); ``plugin`` also registers it when it is not installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from lakesieve.model import Instant
from lakesieve.testing.format_contract import FormatContract
from lakesieve_parquet_dir import plugin as parquetdir_plugin
from lakesieve_parquet_dir.testing import append_file, create_folder, reference_rows


class TestParquetDirContract(FormatContract):
    """A folder only gains files, so both later commits are appends."""

    format_name = "parquetdir"
    change_modes = ("append", "append")
    plugin = parquetdir_plugin

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        create_folder(path, rows, files=4)

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        append_file(path, rows, step + 1)

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        # pyarrow.dataset over the files of the instant's second, never the plugin
        return reference_rows(path, int(instant.id))
