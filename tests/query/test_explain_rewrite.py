"""After files are rewritten, an index never reports more locations than the snapshot has.

An index's base keeps naming files a later commit removed until compaction
folds its deltas in; those files are never read, and they must not be
counted either: explain's index line selects no more than the plan does.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.model import WriteOptions
from lakesieve.table import write

from tests.differential.formats import data_files
from tests.formats.test_write_layout import _create, _frame, _rows, _shuffled

pytestmark = pytest.mark.spark


def _rewritten(spark: Any, tmp_path: Path) -> tuple[Path, set[str]]:
    """A 300-row Delta table in 3 files with Sieve on ``id``, then an upsert that rewrote every file.

    Returns the path and the files the index was built on.
    """
    path = tmp_path / "delta" / "t"
    _create(spark, path, "delta", _shuffled(300, seed=3))  # files follow Spark's partitions
    table = lakesieve.open(path)
    table.build_index("id", type="sieve", spark=spark)
    built_on = set(table.snapshot().locations)
    assert len(built_on) == 3
    write(
        path,
        _frame(spark, _rows(list(range(0, 300, 4)), "u"), partitions=1),
        spark=spark,
        options=WriteOptions(mode="upsert"),
    )
    return path, built_on


def test_explain_after_rewrite_counts_no_more_locations_than_the_snapshot(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 40: after an unbucketed upsert rewrote files, an index said 'selected 65' of 4."""
    from lakesieve.cli import main
    from lakesieve.maintenance.refresh import RefreshPolicy

    path, built_on = _rewritten(spark, tmp_path)
    table = lakesieve.open(path)
    # keep the refresh a delta on the old base, which still names the removed files: read by
    # location with Spark (on the driver the rewritten files would be followed to the new ones
    # and the chain folded into a new base)
    never = RefreshPolicy(
        max_deltas=100,
        max_delta_rows=10**9,
        max_delta_share=float("inf"),
        driver_max_mb=0,
        rebuild_share=float("inf"),
    )
    results = table.refresh(spark=spark, policy=never)
    assert [r.action for r in results] == ["delta"]
    snapshot = table.snapshot()
    assert not built_on & set(snapshot.locations), "the upsert rewrote every file"
    where = "id BETWEEN 0 AND 299"
    plan = table.plan(where)
    [index] = plan.indexes
    assert index.selected <= set(snapshot.locations)
    explained = table.explain(where)
    line = explained["indexes"][0]
    assert line["status"] == "used" and not line.get("stale")
    assert line["locations_selected"] <= explained["locations_total"]
    assert line["locations_selected"] == explained["locations_selected"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["explain", str(path), "--where", where, "--json"]) == 0
    printed = json.loads(out.getvalue())
    assert printed["indexes"][0]["locations_selected"] == printed["locations_selected"]
    assert printed["locations_selected"] <= printed["locations_total"] == len(snapshot.units)


def test_explain_after_rewrite_followed_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """The same upsert refreshed on the driver: a rewritten file is followed to the new one, counts stay within the snapshot."""
    path, _ = _rewritten(spark, tmp_path)
    table = lakesieve.open(path)
    [result] = table.refresh(spark=spark)
    # three files were rewritten: those followed to a new file keep their entries under its name
    assert (result.action, result.engine) == ("compacted", "driver"), result
    assert result.locations_renamed >= 1, result
    snapshot = table.snapshot()
    files = {Path(loc).name: rows for loc, rows in data_files("delta", path)}
    for k in (8, 9, 150):
        explained = table.explain(f"id = {k}")
        line = explained["indexes"][0]
        assert line["status"] == "used" and not line.get("stale")
        assert line["locations_selected"] == explained["locations_selected"]
        assert explained["locations_selected"] <= explained["locations_total"]
        assert explained["locations_total"] == len(snapshot.units) == len(files)
        holding = {n for n, rows in files.items() if k in rows.column("id").to_pylist()}
        selected = {Path(u.location).name for u in table.plan(f"id = {k}").units}
        assert holding and holding <= selected, (k, holding, selected)
