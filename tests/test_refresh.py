"""Incremental refresh, compaction, vacuum and time travel of indexes on a changing Hudi table.

Every check compares what the indexes select with the locations that truly
hold matching rows (read unit by unit), and pruned reads with full reads.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from lakesieve import refresh as refresh_mod
from lakesieve.errors import LakesieveError
from lakesieve.planner import LakesieveWarning
from lakesieve.refresh import RefreshPolicy
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.tables import make_rows, rows_by_location, sorted_rows, true_locations, write_rows

TYPES = ("sieve", "zonemap", "bloom", "exact")
QUERIES = (
    "k = 5",
    "k = 120",
    "k = 215",
    "k in (1, 100, 205, 333)",
    "k between 30 and 40",
    "k >= 190",
    "k < 3",
    "id = 620",
    "id between 95 and 140",
)


def _check_every_instant(spark: Any, table: Table, queries: tuple[str, ...] = QUERIES) -> None:
    """At every instant: indexes select a superset of the truth; pruned reads equal full reads."""
    for inst in table.timeline():
        by_loc = rows_by_location(table, inst.id)
        for where in queries:
            truth = true_locations(table, where, by_loc)
            plan = table.plan(where, as_of=inst.id)
            selected = {u.location for u in plan.units}
            assert truth <= selected, (inst.id, where, truth - selected)
    last = table.timeline()[-1].id
    for where in queries[:4]:
        assert sorted_rows(table.read(spark, where, as_of=last)) == sorted_rows(
            table.full_read(spark, where, as_of=last)
        ), where


def _selected(table: Table, where: str, index: str) -> set[str] | None:
    for item in table.plan(where).indexes:
        if item.definition.name == index:
            return set(item.selected) if item.answered else None
    raise AssertionError(f"index {index} not consulted for {where}")


@pytest.fixture()
def table(spark: Any, tmp_path: Path) -> Table:
    path = tmp_path / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    t = open_table(path)
    for typ in TYPES:
        t.build_index("k", type=typ, spark=spark)
    t.build_index("id", type="sieve", name="id_sieve", spark=spark)
    return t


def test_refresh_after_updates_reads_only_what_changed(spark: Any, table: Table) -> None:
    write_rows(spark, Path(table.path), make_rows(range(100, 130), 2, version=1), mode="upsert")
    results = {r.index: r for r in table.refresh(spark=spark)}
    latest = table.timeline()[-1].id
    assert all(r.to_instant == latest and r.action == "delta" for r in results.values())
    # ids 100..129 live in one file group: one location read for k, none for the record key
    assert results["k_sieve"].locations_read == 1
    assert results["k_sieve"].delta_rows == 0  # updates of k's rows cancel out
    assert results["id_sieve"].locations_read == 0
    assert results["id_sieve"].locations_skipped_in_place == 1
    for name in results:
        assert table.index(name).latest().instant == latest
    _check_every_instant(spark, table)


def test_refresh_inserts_and_deletes_then_compact(spark: Any, table: Table) -> None:
    path = Path(table.path)
    write_rows(spark, path, make_rows(range(600, 660), 3), mode="upsert")
    write_rows(spark, path, make_rows(range(0, 50), 3, version=2), mode="delete")
    results = {r.index: r for r in table.refresh(spark=spark)}
    assert results["k_exact"].action == "delta" and results["k_exact"].delta_rows > 0
    # new keys are found through the delta overlay
    truth = true_locations(table, "k = 215", rows_by_location(table))
    assert truth and _selected(table, "k = 215", "k_exact") == truth
    _check_every_instant(spark, table)
    before = table.describe_index("k_exact")
    assert before["deltas"] == 1 and before["delta_rows"] > 0
    compacted = {r.index: r for r in table.compact(spark=spark)}
    assert compacted["k_exact"].action == "compacted"
    assert table.describe_index("k_exact")["deltas"] == 0
    # after compaction the exact index answers exactly: deleted keys are gone
    by_loc = rows_by_location(table)
    for where in ("k = 5", "k = 215", "k in (1, 100, 205)"):
        assert _selected(table, where, "k_exact") == true_locations(table, where, by_loc), where
    _check_every_instant(spark, table)


def test_compaction_threshold_folds_deltas(spark: Any, table: Table) -> None:
    path = Path(table.path)
    policy = RefreshPolicy(max_deltas=2)
    for i in range(3):
        write_rows(spark, path, make_rows(range(600 + 10 * i, 610 + 10 * i), 4 + i), mode="upsert")
        results = {r.index: r for r in table.refresh("k_zonemap", spark=spark, policy=policy)}
        expected = "delta" if i < 2 else "compacted"
        assert results["k_zonemap"].action == expected
    assert table.describe_index("k_zonemap")["deltas"] == 0
    _check_every_instant(spark, table)


def test_time_travel_uses_older_states(spark: Any, table: Table) -> None:
    path = Path(table.path)
    first = table.timeline()[0].id
    for i in range(2):
        write_rows(spark, path, make_rows(range(700 + 30 * i, 730 + 30 * i), 9 + i), mode="upsert")
        table.refresh(spark=spark)
    table.compact(spark=spark)
    table.vacuum(grace_seconds=0)
    plan = table.plan("k = 240", as_of=first)
    assert plan.units == ()  # k = 240 did not exist at the first instant
    for item in plan.indexes:
        assert item.state is not None and item.state.instant == first
    assert sorted_rows(table.read(spark, "k < 40", as_of=first)) == sorted_rows(
        table.full_read(spark, "k < 40", as_of=first)
    )
    assert table.read(spark, "id >= 600", as_of=first).count() == 0
    _check_every_instant(spark, table)


def test_vacuum_removes_replaced_states_and_orphans(spark: Any, table: Table) -> None:
    path = Path(table.path)
    write_rows(spark, path, make_rows(range(600, 620), 5), mode="upsert")
    table.refresh(spark=spark)
    table.compact(spark=spark)
    orphan = table.store.data_dir / "k_sieve" / "0-orphan"
    orphan.mkdir(parents=True)
    (orphan / "blocks.arrow").write_bytes(b"left by a killed refresh")
    kept = table.vacuum(grace_seconds=3600)
    assert "k_sieve/0-orphan" not in kept.orphan_folders_removed
    result = table.vacuum(grace_seconds=0)
    assert "k_sieve/0-orphan" in result.orphan_folders_removed and not orphan.exists()
    # the delta states replaced by compaction are gone; every listed state still loads
    for definition in table.indexes():
        for state in definition.states:
            for member in definition.chain(state):
                assert (table.store.root / member.files[0].path).exists() if member.files else True
    _check_every_instant(spark, table)


def test_index_older_than_the_timeline_is_rebuilt(spark: Any, table: Table, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_rows(spark, other, make_rows(range(0, 100), 7), mode="bulk_insert", file_groups=2)
    shutil.copytree(Path(table.path) / ".lakesieve", other / ".lakesieve")
    foreign = open_table(other)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = foreign.refresh("k_sieve", spark=spark)
    assert results[0].action == "rebuilt"
    assert any(issubclass(w.category, LakesieveWarning) for w in caught)
    _check_every_instant(spark, foreign, ("k = 5", "k between 10 and 20"))


def test_corrupt_delta_falls_back_to_full_scan(spark: Any, table: Table) -> None:
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 8), mode="upsert")
    table.refresh("k_exact", spark=spark)
    head = table.index("k_exact").latest()
    assert head.is_delta and head.files
    (table.store.root / head.files[0].path).write_bytes(b"not arrow")
    fresh = open_table(table.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = fresh.plan("k = 205")
    exact = next(i for i in plan.indexes if i.definition.name == "k_exact")
    assert not exact.usable and "checksum" in exact.error
    assert any("unreadable" in str(w.message) for w in caught)
    assert true_locations(fresh, "k = 205", rows_by_location(fresh)) <= {u.location for u in plan.units}
    assert sorted_rows(fresh.read(spark, "k = 205")) == sorted_rows(fresh.full_read(spark, "k = 205"))


def test_racing_refresh_commits_once(spark: Any, table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh that loses the race to another one retries from the new head and applies nothing twice."""
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 8), mode="upsert")
    real = refresh_mod.delta_frame
    raced: list[Any] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        frame = real(*args, **kwargs)
        if not raced:  # another process commits the same refresh meanwhile
            raced.append(None)
            raced[0] = open_table(table.path).refresh("k_exact", spark=spark)
        return frame

    monkeypatch.setattr(refresh_mod, "delta_frame", racing)
    before = table.index("k_exact").latest()
    result = table.refresh("k_exact", spark=spark)[0]
    assert raced and raced[0][0].action == "delta"
    assert result.retries == 1 and result.action == "up to date"
    definition = table.index("k_exact")
    deltas = [s for s in definition.by_id.values() if s.is_delta]
    assert len(deltas) == 1 and deltas[0].parent == before.state_id
    # the loser's files were removed
    folders = {p.name for p in (table.store.data_dir / "k_exact").iterdir()}
    assert folders == set(definition.by_id)
    _check_every_instant(spark, table)


def test_auto_refresh_on_read(spark: Any, table: Table) -> None:
    write_rows(spark, Path(table.path), make_rows(range(600, 630), 6), mode="upsert")
    auto = open_table(table.path, auto_refresh=True)
    rows = auto.read(spark, "k = 205")
    assert sorted_rows(rows) == sorted_rows(auto.full_read(spark, "k = 205"))
    latest = auto.timeline()[-1].id
    assert all(d.latest().instant == latest for d in auto.indexes())


def test_bad_policy_is_refused() -> None:
    with pytest.raises(LakesieveError, match="max_deltas"):
        RefreshPolicy(max_deltas=-1)
