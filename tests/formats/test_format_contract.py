"""The format contract kit run for Hudi, Delta, Iceberg and the example Parquet-folder plugin.

Each class gives the kit a reference reader built on the format's own library
(hudi-rs, delta-rs, pyiceberg; pyarrow for the example's plain folder), so
the plugins are held to a truth that does not pass through lakesieve. The
Delta tables are written by delta-rs in small row groups, so a reader that
drops a row group of a file fails the kit.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve.model import Instant, WriteOptions
from lakesieve.table import write
from lakesieve.testing.format_contract import (
    REFERENCE_LOCATION,
    ROW_GROUP_ROWS,
    SPARK_SCHEMA,
    ContractTable,
    FormatContract,
)

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lakesieve-parquet-dir"


def _with_location(table: pa.Table, location: str) -> pa.Table:
    """``table`` with a :data:`REFERENCE_LOCATION` column holding ``location``."""
    return table.append_column(
        REFERENCE_LOCATION, pa.array([location] * table.num_rows, pa.string())
    )


class _WriterContract(FormatContract):
    """Formats lakesieve can write: every commit goes through :func:`lakesieve.write`."""

    first_options: ClassVar[dict[str, Any]] = {}
    change_options: ClassVar[dict[str, Any]] = {}

    def frame(self, spark: Any, rows: list[dict[str, Any]]) -> Any:
        """A Spark DataFrame of kit rows (the columns of :data:`SPARK_SCHEMA` the class keeps)."""
        ddl = ", ".join(f for f in SPARK_SCHEMA.split(", ") if f.split()[0] in self.columns)
        return spark.createDataFrame([tuple(r[c] for c in self.columns) for r in rows], schema=ddl)

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        options = WriteOptions(mode="bulk_insert", record_key=("id",), **self.first_options)
        write(path, self.frame(spark, rows), format=self.format_name, options=options, spark=spark)

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        mode = self.change_modes[step]
        mode = "insert" if mode == "append" else mode
        options = WriteOptions(mode=mode, record_key=("id",), **self.change_options)
        write(path, self.frame(spark, rows), format=self.format_name, options=options, spark=spark)


class _HudiReference:
    """Hudi rows read by hudi-rs: each file slice as of the instant, merged by hudi-rs."""

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        from hudi import HudiReadOptions, HudiTableBuilder

        table = HudiTableBuilder.from_base_uri(str(path)).build()
        as_of = HudiReadOptions().with_as_of_timestamp(instant.id)
        reader = table.create_file_group_reader_with_options(as_of)
        parts = []
        for file_slice in table.get_file_slices(as_of):
            rows = pa.Table.from_batches([reader.read_file_slice(file_slice)])
            partition = file_slice.partition_path.strip("/")
            location = f"{partition}/{file_slice.file_id}" if partition else file_slice.file_id
            parts.append(_with_location(rows, location))
        return pa.concat_tables(parts)


class TestHudiContract(_HudiReference, _WriterContract):
    format_name = "hudi"
    first_options: ClassVar[dict[str, Any]] = {"file_groups": 4, "precombine": "id"}
    change_options: ClassVar[dict[str, Any]] = {"precombine": "id"}


class TestHudiMorContract(_HudiReference, _WriterContract):
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


#: Ids per data file of the delta-rs tables (delta-rs rewrites all the files
#: one operation touches into one, so each step writes one commit per group).
DELTA_GROUP = 60


def _delta_groups(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["id"] // DELTA_GROUP, []).append(r)
    return [groups[g] for g in sorted(groups)]


class TestDeltaContract(FormatContract):
    """Tables written by delta-rs, the format's own writer, in row groups of ``ROW_GROUP_ROWS`` rows.

    Appends add files; upserts (``overwrite`` with a predicate) and deletes
    rewrite the file of each group of ids, one commit per group.
    """

    format_name = "delta"

    def _properties(self) -> Any:
        from deltalake import WriterProperties

        return WriterProperties(max_row_group_size=ROW_GROUP_ROWS)

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        from deltalake import write_deltalake

        for group in _delta_groups(rows):
            data = pa.Table.from_pylist(group, self.arrow_schema)
            write_deltalake(path, data, mode="append", writer_properties=self._properties())

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        from deltalake import DeltaTable, write_deltalake

        mode = self.change_modes[step]
        for group in _delta_groups(rows):
            data = pa.Table.from_pylist(group, self.arrow_schema)
            ids = f"id IN ({', '.join(str(r['id']) for r in group)})"
            if mode == "append":
                write_deltalake(path, data, mode="append", writer_properties=self._properties())
            elif mode == "upsert":
                write_deltalake(
                    path,
                    data,
                    mode="overwrite",
                    predicate=ids,
                    writer_properties=self._properties(),
                )
            else:
                DeltaTable(str(path)).delete(ids, writer_properties=self._properties())

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        """delta-rs lists the version's data files; each is read as delta-rs' dataset gives it."""
        from deltalake import DeltaTable

        table = DeltaTable(str(path), version=int(instant.id))
        assert not pa.table(table.deletion_vectors()).num_rows, (
            "the reference reader ignores deletion vectors"
        )
        actions = pa.table(table.get_add_actions(flatten=True))
        listed = {unquote(p) for p in actions.column("path").to_pylist()}
        dataset = table.to_pyarrow_dataset()
        parts = []
        for fragment in dataset.get_fragments():
            # delta-rs' dataset reads through a file system rooted at the table
            location = fragment.path
            if os.path.isabs(location):
                location = Path(os.path.relpath(location, path)).as_posix()
            assert location in listed, f"{location} is not in the add actions"
            parts.append(_with_location(fragment.to_table(schema=dataset.schema), location))
        return pa.concat_tables(parts)

    def test_data_files_have_several_row_groups(self, contract_table: ContractTable) -> None:
        """The tables really hold files of many row groups (what a row-group-skipping reader misses)."""
        from deltalake import DeltaTable

        for inst in contract_table.instants:
            files = DeltaTable(str(contract_table.path), version=int(inst.id)).file_uris()
            groups = [pq.read_metadata(f).num_row_groups for f in files]
            assert groups and min(groups) > 1, f"row groups per file at {inst.id}: {groups}"


def _newest_iceberg_metadata(path: Path) -> Path:
    """The metadata file with the highest version (``v<n>.`` or ``<n>-<uuid>.metadata.json``)."""
    found = [
        (int(m.group(1)), f)
        for f in (path / "metadata").glob("*.metadata.json")
        if (m := re.match(r"^v?(\d+)", f.name))
    ]
    assert found, f"no Iceberg metadata under {path}"
    return max(found)[1]


class TestIcebergContract(_WriterContract):
    format_name = "iceberg"
    first_options: ClassVar[dict[str, Any]] = {"file_groups": 4, "bucket_column": "id"}

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        """pyiceberg plans the snapshot's scan tasks and reads each with its deletes applied."""
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table import StaticTable

        table = StaticTable.from_metadata(str(_newest_iceberg_metadata(path)))
        scan = table.scan(snapshot_id=int(instant.id))
        reader = ArrowScan(table.metadata, table.io, scan.projection(), scan.row_filter)
        root = table.metadata.location.rstrip("/") + "/"
        parts = []
        for task in scan.plan_files():
            file_path = task.file.file_path
            location = file_path[len(root) :] if file_path.startswith(root) else file_path
            parts.append(_with_location(reader.to_table([task]), location))
        return pa.concat_tables(parts)


def _example_modules() -> tuple[Any, Any]:
    """Import the example plugin and its test helpers from their source folder (not installed here)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        return (
            importlib.import_module("lakesieve_parquet_dir.plugin"),
            importlib.import_module("lakesieve_parquet_dir.testing"),
        )
    finally:
        sys.path.remove(str(EXAMPLE))


_EXAMPLE_PLUGIN, _EXAMPLE_TESTING = _example_modules()


class TestParquetDirExampleContract(FormatContract):
    """The worked example of ``docs/writing-a-format-plugin.md``, registered by hand."""

    format_name = "parquetdir"
    change_modes = ("append", "append")
    plugin = _EXAMPLE_PLUGIN
    plugin_name = "parquetdir-example"

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        _EXAMPLE_TESTING.create_folder(path, rows, files=4)

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        _EXAMPLE_TESTING.append_file(path, rows, step + 1)

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        table: pa.Table = _EXAMPLE_TESTING.reference_rows(path, int(instant.id))
        return table
