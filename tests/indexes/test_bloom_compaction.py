"""Compaction gives a Bloom index back exactly what a build at that instant writes.

A fold can only or new keys' bits into a filter sized for the keys it first
held, and a removed key keeps its bits: correct answers, more false
positives. Compaction builds the filters of the locations folds changed
again from their rows (``RebuildsLocations``). These tests compare the
compacted index's stored table with a fresh build's at the same instant,
byte for byte, on the driver's path and on Spark's, after a stored delta
and after a fold the refresh policy asked for.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.tables import make_rows, rows_by_location, true_locations_each, write_rows

#: keep the refresh's delta stored (no fold on rows, count or bytes)
KEEP_DELTA = RefreshPolicy(max_delta_share=float("inf"))
#: fold every refresh into a new base
FOLD_ALWAYS = RefreshPolicy(max_deltas=0)
QUERIES = (
    *(f"k = {k}" for k in (0, 10, 33, 150, 199, 210, 250, 299, 400)),
    "k in (5, 205, 290)",
    "k is null",
)


@pytest.fixture(scope="module")
def built(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 rows (``k = id // 3``) in 6 file groups with a Bloom index on ``k``."""
    path = tmp_path_factory.mktemp("bloom_compaction") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    open_table(path).build_index("k", type="bloom", spark=spark)
    return path


def _changed(spark: Any, built: Path, tmp_path: Path, policy: RefreshPolicy) -> Table:
    """A copy of ``built`` after many new keys and some deletes, refreshed under ``policy``."""
    path = tmp_path / "t"
    shutil.copytree(built, path)
    write_rows(spark, path, make_rows(range(600, 900), 2), mode="upsert")
    write_rows(spark, path, make_rows(range(0, 90), 2, version=1), mode="delete")
    table = open_table(path, refresh_policy=policy)
    (result,) = table.refresh(spark=spark)
    assert result.action in ("delta", "compacted"), result
    return table


def _filters(table: Table, name: str) -> pa.Table:
    definition = table.index(name)
    head = definition.latest()
    assert head is not None and not head.is_delta
    return table.states.load(definition, head).filters


def _check_as_fresh_build(spark: Any, table: Table) -> None:
    """The compacted index's table equals a fresh build's; answers cover the truth."""
    table.build_index("k", type="bloom", name="fresh", spark=spark)
    compacted, fresh = _filters(table, "k_bloom"), _filters(table, "fresh")
    assert compacted.column("as_built").to_pylist() == [True] * compacted.num_rows
    assert compacted.equals(fresh), (compacted.slice(0, 3), fresh.slice(0, 3))
    truths = true_locations_each(spark, QUERIES, rows_by_location(table))
    for where, truth in truths.items():
        (item,) = [i for i in table.plan(where).indexes if i.definition.name == "k_bloom"]
        assert truth <= set(item.selected), (where, truth - set(item.selected))


@pytest.mark.parametrize("max_mb", [256.0, 0.0], ids=["driver", "spark"])
def test_compacting_a_stored_delta_writes_what_a_build_writes(
    spark: Any, built: Path, tmp_path: Path, max_mb: float
) -> None:
    table = _changed(spark, built, tmp_path, KEEP_DELTA)
    head = table.index("k_bloom").latest()
    assert head is not None and head.is_delta
    policy = RefreshPolicy(max_delta_share=float("inf"), driver_max_mb=max_mb)
    (result,) = table.compact(spark=spark, policy=policy)
    assert result.action == "compacted" and result.locations_read > 0, result
    assert result.engine == ("driver" if max_mb else "spark"), result
    _check_as_fresh_build(spark, table)


def test_compacting_a_folded_base_builds_its_changed_filters_again(
    spark: Any, built: Path, tmp_path: Path
) -> None:
    table = _changed(spark, built, tmp_path, FOLD_ALWAYS)
    head = table.index("k_bloom").latest()
    assert head is not None and not head.is_delta
    folded = _filters(table, "k_bloom")
    changed = [
        loc
        for loc, ok in zip(
            folded.column("location").to_pylist(),
            folded.column("as_built").to_pylist(),
            strict=True,
        )
        if not ok
    ]
    assert changed, "the fold marked no filter as changed"
    (result,) = table.compact(spark=spark)
    assert (result.action, result.locations_read, result.engine) == (
        "compacted",
        len(changed),
        "driver",
    ), result
    _check_as_fresh_build(spark, table)
    (again,) = table.compact("k_bloom", spark=spark)
    assert again.action == "nothing to compact", again


def test_a_fresh_build_leaves_nothing_to_compact(spark: Any, built: Path, tmp_path: Path) -> None:
    path = tmp_path / "t"
    shutil.copytree(built, path)
    table = open_table(path)
    (result,) = table.compact(spark=spark)
    assert (result.action, result.engine) == ("nothing to compact", ""), result
