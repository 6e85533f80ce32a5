"""The format contract kit run for Hudi, Delta, Iceberg and the example Parquet-folder plugin."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lakesieve.model import WriteOptions
from lakesieve.table import write
from lakesieve.testing.format_contract import FormatContract

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "lakesieve-parquet-dir"
SCHEMA = "id bigint, k bigint, s string"


def _frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([(r["id"], r["k"], r["s"]) for r in rows], schema=SCHEMA)


class _WriterContract(FormatContract):
    """Formats lakesieve can write: every commit goes through :func:`lakesieve.write`."""

    first_options: ClassVar[dict[str, Any]] = {}
    change_options: ClassVar[dict[str, Any]] = {}

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        options = WriteOptions(mode="bulk_insert", record_key=("id",), **self.first_options)
        write(path, _frame(spark, rows), format=self.format_name, options=options, spark=spark)

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        mode = self.change_modes[step]
        mode = "insert" if mode == "append" else mode
        options = WriteOptions(mode=mode, record_key=("id",), **self.change_options)
        write(path, _frame(spark, rows), format=self.format_name, options=options, spark=spark)


class TestHudiContract(_WriterContract):
    format_name = "hudi"
    first_options: ClassVar[dict[str, Any]] = {"file_groups": 4, "precombine": "id"}
    change_options: ClassVar[dict[str, Any]] = {"precombine": "id"}


class TestHudiMorContract(_WriterContract):
    """Merge-on-read: upserts and deletes land in log files, so every read merges file slices."""

    format_name = "hudi"
    first_options: ClassVar[dict[str, Any]] = {
        "file_groups": 4,
        "precombine": "id",
        "table_type": "mor",
    }
    change_options: ClassVar[dict[str, Any]] = {"precombine": "id"}

    def test_changes_land_in_log_files(self, contract_table: Any) -> None:
        """The kit's reads really merge: the latest file slices carry log files."""
        assert any(u.log_files for u in contract_table.table.snapshot().units)


class TestDeltaContract(_WriterContract):
    format_name = "delta"
    first_options: ClassVar[dict[str, Any]] = {"file_groups": 4, "bucket_column": "id"}


class TestIcebergContract(_WriterContract):
    format_name = "iceberg"
    first_options: ClassVar[dict[str, Any]] = {"file_groups": 4, "bucket_column": "id"}


def _example_plugin() -> Any:
    """Import the example plugin from its source folder (it is not installed here)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        return importlib.import_module("lakesieve_parquet_dir.plugin")
    finally:
        sys.path.remove(str(EXAMPLE))


class TestParquetDirExampleContract(FormatContract):
    """The worked example of ``docs/writing-a-format-plugin.md``, registered by hand."""

    format_name = "parquetdir"
    change_modes = ("append", "append")
    plugin = _example_plugin()
    plugin_name = "parquetdir-example"

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        from lakesieve_parquet_dir.testing import create_folder

        create_folder(path, rows, files=4)

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        from lakesieve_parquet_dir.testing import append_file

        append_file(path, rows, step + 1)
