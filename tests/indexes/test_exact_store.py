"""The exact index on a real table: partitions written by Spark tasks, committed at once, read on demand.

Every test works on a copy of one real Hudi table whose exact index on ``k``
is cut into several key-range partitions.
"""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.errors import LakesieveWarning
from lakesieve.indexes.exact import build as exact_build
from lakesieve.indexes.exact import partitions
from lakesieve.indexes.exact.partitioned import PartitionedExactIndex
from lakesieve.maintenance.index_build import build_state
from lakesieve.spark.session import get_spark

from tests.tables import make_rows, rows_by_location, true_locations, write_rows

pytestmark = pytest.mark.spark

NAME = "k_exact"


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 rows in 6 file groups; the exact index on ``k`` in ranges of about 60 rows."""
    path = tmp_path_factory.mktemp("exact_store") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    saved = partitions.ROWS_PER_PARTITION
    partitions.ROWS_PER_PARTITION = 60
    try:
        lakesieve.open(path).build_index("k", type="exact", spark=spark)
    finally:
        partitions.ROWS_PER_PARTITION = saved
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(source, dest)
    return dest


def _index_folders(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".lakesieve" / "data" / NAME).iterdir())


def _assert_exact_plan(table: Any, where: str) -> set[str]:
    truth = true_locations(get_spark(), where, rows_by_location(table))
    assert truth, f"{where} matches nothing: the check would prove nothing"
    selected = {u.location for u in table.plan(where).units}
    assert truth <= selected, where
    return selected


def test_build_commits_task_written_partitions_with_checksums(table_path: Path) -> None:
    table = lakesieve.open(table_path)
    state = table.index(NAME).latest()
    assert state is not None
    names = sorted(f.name for f in state.files)
    assert "manifest" in names and len([n for n in names if n.startswith("part-")]) >= 4
    root = table_path / ".lakesieve"
    for f in state.files:
        data = (root / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size_bytes
        assert f.path.startswith(f"data/{NAME}/{state.state_id}/")
    assert _index_folders(table_path) == [state.state_id]
    leftovers = [p.name for p in (root / "data" / NAME / state.state_id).iterdir()]
    assert not [n for n in leftovers if n.endswith(".tmp")]
    described = table.describe_index(NAME)
    assert described["details"]["partitions"] == len([n for n in names if n.startswith("part-")])
    assert described["details"]["rows"] == 600


def test_queries_read_only_the_partitions_they_need(table_path: Path) -> None:
    table = lakesieve.open(table_path)
    definition = table.index(NAME)
    state = definition.latest()
    assert state is not None
    index = table.states.load(definition, state)
    assert isinstance(index, PartitionedExactIndex) and not index._cache
    selected = _assert_exact_plan(table, "k = 17")
    assert len(selected) < 6
    assert len(index._cache) == 1
    _assert_exact_plan(table, "k between 100 and 104")
    assert len(index._cache) < len(index.files)


def test_damaged_partition_means_a_full_scan_with_a_warning(table_path: Path) -> None:
    table = lakesieve.open(table_path)
    state = table.index(NAME).latest()
    assert state is not None
    manifest = table.store.read_files(state)["manifest"]
    low = manifest.column("low").to_pylist()
    victim = next(f for f in state.files if f.name == manifest.column("file")[1].as_py())
    path = table_path / ".lakesieve" / victim.path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    where = f"k = {low[1]}"
    with pytest.warns(LakesieveWarning, match="checksum"):
        selected = _assert_exact_plan(lakesieve.open(table_path), where)
    assert len(selected) == 6
    # a key in an intact partition is still pruned
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        assert len(_assert_exact_plan(lakesieve.open(table_path), f"k = {low[0]}")) < 6


def test_failed_build_leaves_the_previous_index(
    table_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = lakesieve.open(table_path)
    before = table.index(NAME).latest()

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("driver lost after the tasks wrote their files")

    # the driver's step after the tasks (format 2) or Spark's writer (format 3) wrote files
    monkeypatch.setattr(exact_build, "_collect", fail)
    monkeypatch.setattr(exact_build.spark_files, "manifest_of", fail)
    with pytest.raises(RuntimeError, match="driver lost"):
        table.build_index("k", type="exact", spark=spark)
    table = lakesieve.open(table_path)
    assert table.index(NAME).latest() == before
    assert before is not None and _index_folders(table_path) == [before.state_id]
    assert len(_assert_exact_plan(table, "k = 42")) < 6


def test_killed_build_leaves_files_that_vacuum_removes(table_path: Path, spark: Any) -> None:
    table = lakesieve.open(table_path)
    definition = table.index(NAME)
    before = definition.latest()
    assert before is not None
    inst = table.states.view.resolve_instant(None)
    assert inst is not None
    # the tasks write their files into a new state folder; the driver dies before its commit
    built = build_state(table.states, definition, inst, spark)
    staged = built.state_id
    assert staged is not None and built.written
    assert staged in _index_folders(table_path)
    table = lakesieve.open(table_path)
    assert table.index(NAME).latest() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        assert len(_assert_exact_plan(table, "k = 42")) < 6
    result = table.vacuum(grace_seconds=0)
    assert f"{NAME}/{staged}" in result.orphan_folders_removed
    assert _index_folders(table_path) == [before.state_id]
    assert len(_assert_exact_plan(lakesieve.open(table_path), "k = 42")) < 6
