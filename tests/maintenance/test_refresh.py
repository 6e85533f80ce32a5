"""Incremental refresh, compaction, vacuum and time travel of indexes on a changing Hudi table.

Every check compares what the indexes select with the locations that truly
hold matching rows (read unit by unit), and pruned reads with full reads.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import LakesieveError, LakesieveWarning
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.maintenance.refresh import run as refresh_mod
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.tables import (
    expected_rows,
    make_rows,
    rows_by_location,
    sorted_rows,
    true_locations,
    true_locations_each,
    write_rows,
)

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
        truths = true_locations_each(spark, queries, rows_by_location(table, inst.id))
        for where, truth in truths.items():
            plan = table.plan(where, as_of=inst.id)
            selected = {u.location for u in plan.units}
            assert truth <= selected, (inst.id, where, truth - selected)
    last = table.timeline()[-1].id
    for where in queries[:4]:
        assert sorted_rows(table.read(spark, where, as_of=last)) == expected_rows(
            spark, table.path, where, last
        ), where


def _selected(table: Table, where: str, index: str) -> set[str] | None:
    for item in table.plan(where).indexes:
        if item.definition.name == index:
            return set(item.selected) if item.answered else None
    raise AssertionError(f"index {index} not consulted for {where}")


#: these tests follow delta chains: a small commit must not fold them on bytes alone
#: (test_deltas_past_their_share_of_the_base_are_folded checks that rule)
CHAINING = RefreshPolicy(max_delta_share=math.inf)


@pytest.fixture(scope="module")
def indexed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 600-row table in 6 file groups with every index type on ``k`` and Sieve on ``id``."""
    path = tmp_path_factory.mktemp("indexed") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    t = open_table(path, refresh_policy=CHAINING)
    for typ in TYPES:
        t.build_index("k", type=typ, spark=spark)
    t.build_index("id", type="sieve", name="id_sieve", spark=spark)
    return path


@pytest.fixture()
def table(indexed: Path, tmp_path: Path) -> Table:
    """A fresh copy of :func:`indexed` (table and index store) for one test to change."""
    path = tmp_path / "t"
    shutil.copytree(indexed, path)
    return open_table(path, refresh_policy=CHAINING)


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
    truth = true_locations(spark, "k = 215", rows_by_location(table))
    assert truth and _selected(table, "k = 215", "k_exact") == truth
    _check_every_instant(spark, table)
    before = table.describe_index("k_exact")
    assert before["deltas"] == 1 and before["delta_rows"] > 0
    compacted = {r.index: r for r in table.compact(spark=spark)}
    # ORC partitions (what a Spark build writes) are folded by a rebuild, the others in place
    assert compacted["k_exact"].action == "rebuilt"
    assert {compacted[n].action for n in ("k_sieve", "k_zonemap", "k_bloom")} == {"compacted"}
    assert table.describe_index("k_exact")["deltas"] == 0
    # after compaction the exact index answers exactly: deleted keys are gone
    truths = true_locations_each(
        spark, ("k = 5", "k = 215", "k in (1, 100, 205)"), rows_by_location(table)
    )
    for where, truth in truths.items():
        assert _selected(table, where, "k_exact") == truth, where
    _check_every_instant(spark, table)


def test_compaction_threshold_folds_deltas(spark: Any, table: Table) -> None:
    path = Path(table.path)
    policy = RefreshPolicy(max_deltas=2, max_delta_share=math.inf)
    for i in range(3):
        write_rows(spark, path, make_rows(range(600 + 10 * i, 610 + 10 * i), 4 + i), mode="upsert")
        results = {r.index: r for r in table.refresh("k_zonemap", spark=spark, policy=policy)}
        expected = "delta" if i < 2 else "compacted"
        assert results["k_zonemap"].action == expected
    assert table.describe_index("k_zonemap")["deltas"] == 0
    _check_every_instant(spark, table)


def test_deltas_past_their_share_of_the_base_are_folded(spark: Any, table: Table) -> None:
    """Past ``max_delta_share`` of the base's bytes a refresh folds where the type folds in place.

    Sieve, zone map and Bloom end within 1.25x of a fresh build's bytes; the
    exact index's ORC partitions fold only by a rebuild, which the byte rule
    never starts (its delta stays until ``max_deltas``/``max_delta_rows`` or
    ``compact``, which then writes what a build writes).
    """
    path = Path(table.path)
    write_rows(spark, path, make_rows(range(600, 690), 5), mode="upsert")
    write_rows(spark, path, make_rows(range(0, 30), 5, version=2), mode="delete")
    chained = RefreshPolicy(max_delta_share=math.inf)
    assert table.refresh("k_zonemap", spark=spark, policy=chained)[0].action == "delta"
    delta = table.index("k_zonemap").latest()
    base = table.index("k_zonemap").chain(delta)[0]
    assert delta.size_bytes > 0.2 * base.size_bytes, "the change must pass the default share"
    in_place = ("k_sieve", "k_bloom")
    for name in (*in_place, "k_exact"):
        result = table.refresh(name, spark=spark, policy=RefreshPolicy())[0]
        head = table.index(name).latest()
        chain = table.index(name).chain(head)
        share = sum(s.size_bytes for s in chain[1:]) / chain[0].size_bytes
        if name in in_place:
            assert result.action == "compacted" or share <= 0.2, (name, result.action, share)
        else:
            assert result.action == "delta", (name, result.action)
    # the zone map's chain (base + the delta above) passes 20%: the next commit folds it
    write_rows(spark, path, make_rows(range(700, 705), 6), mode="upsert")
    folded = table.refresh("k_zonemap", spark=spark, policy=RefreshPolicy())[0]
    assert folded.action == "compacted" and not table.index("k_zonemap").latest().is_delta
    table.refresh(spark=spark, policy=RefreshPolicy())
    assert table.compact("k_exact", spark=spark)[0].action == "rebuilt"
    for name in ("k_sieve", "k_zonemap", "k_bloom", "k_exact"):
        typ = name.split("_", 1)[1]
        fresh = f"fresh_{typ}"
        table.build_index("k", type=typ, name=fresh, spark=spark)
        now = table.describe_index(name)["size_bytes"]
        built = table.describe_index(fresh)["size_bytes"]
        assert now <= (1.05 if name == "k_exact" else 1.25) * built, (name, now, built)
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
    assert sorted_rows(table.read(spark, "k < 40", as_of=first)) == expected_rows(
        spark, table.path, "k < 40", first
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


def test_corrupt_delta_falls_back_to_the_state_before_it(spark: Any, table: Table) -> None:
    """An unreadable delta: the index answers as of its previous state, stale but exact."""
    base = table.index("k_exact").latest()
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
    assert exact.usable and exact.state is not None and exact.state.instant == base.instant
    assert exact.overlay is None
    assert exact.added_for_staleness, "the locations the later commit touched are added"
    assert any("unreadable" in str(w.message) and "checksum" in str(w.message) for w in caught)
    explained = fresh.explain("k = 205")
    assert any("unreadable" in w for w in explained["warnings"])
    truths = true_locations_each(
        spark, ("k = 205", "k = 206", "k >= 200", "k < 3"), rows_by_location(fresh)
    )
    for where, truth in truths.items():
        assert truth <= {u.location for u in fresh.plan(where).units}, where
    assert sorted_rows(fresh.read(spark, "k = 205")) == expected_rows(spark, fresh.path, "k = 205")
    assert sorted_rows(fresh.read(spark, "k >= 200")) == expected_rows(
        spark, fresh.path, "k >= 200"
    )


def test_explain_counts_the_bytes_of_base_and_deltas(spark: Any, table: Table) -> None:
    """After a refresh ``explain`` gives the bytes a query loads: the base and its delta."""
    base = table.index("k_exact").latest()
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 8), mode="upsert")
    table.refresh("k_exact", spark=spark)
    head = table.index("k_exact").latest()
    assert head.is_delta and head.size_bytes > 0
    fresh = open_table(table.path)
    entry = next(i for i in fresh.explain("k = 605")["indexes"] if i["name"] == "k_exact")
    assert entry["instant"] == head.instant
    assert entry["size_bytes"] == base.size_bytes + head.size_bytes
    assert entry["size_bytes"] == fresh.describe_index("k_exact")["size_bytes"]


def test_corrupt_middle_delta_keeps_the_states_before_it(spark: Any, table: Table) -> None:
    """Base, delta 1, delta 2 (unreadable), delta 3: lookups use base + delta 1, stale from its instant."""
    policy = RefreshPolicy(max_deltas=10, max_delta_rows=10**9, max_delta_share=math.inf)
    states = []
    for i, keys in enumerate((range(600, 620), range(700, 720), range(800, 820))):
        write_rows(spark, Path(table.path), make_rows(keys, 9 + i), mode="upsert")
        table.refresh("k_sieve", spark=spark, policy=policy)
        states.append(table.index("k_sieve").latest())
    assert all(s.is_delta for s in states)
    (table.store.root / states[1].files[0].path).unlink()
    fresh = open_table(table.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = fresh.plan("k = 201")
    item = next(i for i in plan.indexes if i.definition.name == "k_sieve")
    assert item.usable and item.state is not None and item.state.instant == states[0].instant
    assert item.overlay is not None, "delta 1 still applies"
    assert any(states[1].instant in str(w.message) for w in caught)
    # ids 600-619, 700-719, 800-819 are new rows with k 200-206, 233-239, 266-273
    wheres = ("k = 201", "k = 235", "k = 270", "k between 204 and 268", "k = 5")
    for where, truth in true_locations_each(spark, wheres, rows_by_location(fresh)).items():
        assert truth <= {u.location for u in fresh.plan(where).units}, where
    assert sorted_rows(fresh.read(spark, "k = 235")) == expected_rows(spark, fresh.path, "k = 235")
    # as of delta 1's own instant the index is not stale at all
    early = fresh.plan("k = 201", as_of=states[0].instant)
    item = next(i for i in early.indexes if i.definition.name == "k_sieve")
    assert item.usable and not item.added_for_staleness


def test_corrupt_base_still_disables_the_index(spark: Any, table: Table) -> None:
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 8), mode="upsert")
    table.refresh("k_exact", spark=spark)
    chain = table.index("k_exact").chain(table.index("k_exact").latest())
    (table.store.root / chain[0].files[0].path).write_bytes(b"not arrow")
    fresh = open_table(table.path)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        plan = fresh.plan("k = 205")
    exact = next(i for i in plan.indexes if i.definition.name == "k_exact")
    assert not exact.usable and "unreadable" in exact.error
    assert sorted_rows(fresh.read(spark, "k = 205")) == expected_rows(spark, fresh.path, "k = 205")


@pytest.fixture(scope="module")
def chained(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A table with four index types refreshed over four commits (chains of deltas), and its truth."""
    path = tmp_path_factory.mktemp("chained") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    t = open_table(path)
    for typ in TYPES:
        t.build_index("k", type=typ, spark=spark)
    policy = RefreshPolicy(max_deltas=10, max_delta_rows=10**9, max_delta_share=math.inf)
    commits = (
        ("upsert", range(600, 630)),
        ("delete", range(0, 60, 7)),
        ("upsert", range(100, 140)),
        ("upsert", range(700, 720)),
    )
    for i, (mode, keys) in enumerate(commits):
        write_rows(spark, path, make_rows(keys, 20 + i, version=i + 1), mode=mode)
        t.refresh(spark=spark, policy=policy)
    # Spark SQL's answer per instant and query, computed once: the damage the
    # test draws changes the index, never the table
    truths: dict[tuple[str, str], set[str]] = {}
    for inst in t.timeline():
        each = true_locations_each(spark, QUERIES, rows_by_location(t, inst.id))
        truths.update(((inst.id, where), truth) for where, truth in each.items())
    return {"path": path, "truths": truths}


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_damaged_index_files_never_lose_rows(
    spark: Any,
    chained: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    """Any index files garbled, cut short or deleted: at every instant the plans still cover the truth."""
    work = tmp_path_factory.mktemp("damaged") / "t"
    shutil.copytree(chained["path"], work)
    files = sorted(
        str(p.relative_to(work)) for p in (work / ".lakesieve" / "data").rglob("*") if p.is_file()
    )
    victims = data.draw(
        st.lists(st.sampled_from(files), min_size=1, max_size=4, unique=True), label="files"
    )
    for rel in victims:
        target = work / rel
        how = data.draw(st.sampled_from(["garbage", "truncate", "delete"]), label=rel)
        if how == "garbage":
            target.write_bytes(b"ARROW1" + bytes(range(256)))
        elif how == "truncate":
            target.write_bytes(target.read_bytes()[: max(0, target.stat().st_size // 2)])
        else:
            target.unlink()
    table = open_table(work)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (inst_id, where), truth in chained["truths"].items():
            selected = {u.location for u in table.plan(where, as_of=inst_id).units}
            assert truth <= selected, (victims, inst_id, where, truth - selected)


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_racing_refresh_commits_once(
    spark: Any, table: Table, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """A refresh that loses the race to another one retries from the new head and applies nothing twice."""
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 8), mode="upsert")
    policy = dataclasses.replace(
        table.refresh_policy, driver_max_mb=0 if engine == "spark" else 256.0
    )
    step = "delta_frame" if engine == "spark" else "local_delta"
    real = getattr(refresh_mod, step)
    raced: list[Any] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        frame = real(*args, **kwargs)
        if not raced:  # another process commits the same refresh meanwhile
            raced.append(None)
            raced[0] = open_table(table.path, refresh_policy=policy).refresh("k_exact", spark=spark)
        return frame

    monkeypatch.setattr(refresh_mod, step, racing)
    before = table.index("k_exact").latest()
    result = table.refresh("k_exact", spark=spark, policy=policy)[0]
    assert raced and raced[0][0].action == "delta" and raced[0][0].engine == engine
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
    assert sorted_rows(rows) == expected_rows(spark, auto.path, "k = 205")
    latest = auto.timeline()[-1].id
    assert all(d.latest().instant == latest for d in auto.indexes())


def test_bad_policy_is_refused() -> None:
    with pytest.raises(LakesieveError, match="max_deltas"):
        RefreshPolicy(max_deltas=-1)


def test_large_exact_index_is_rebuilt_not_compacted_on_the_driver(
    spark: Any, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the driver's pair limit, compaction answers None and the index is rebuilt by Spark."""
    from lakesieve.indexes.exact import delta as exact_delta

    path = Path(table.path)
    write_rows(spark, path, make_rows(range(600, 640), 3), mode="upsert")
    write_rows(spark, path, make_rows(range(0, 30), 3, version=2), mode="delete")
    assert {r.index: r for r in table.refresh(spark=spark)}["k_exact"].action == "delta"
    monkeypatch.setattr(exact_delta, "DRIVER_COMPACTION_PAIRS", 0)
    compacted = {r.index: r for r in table.compact(spark=spark)}
    assert compacted["k_exact"].action == "rebuilt"
    assert table.describe_index("k_exact")["deltas"] == 0
    wheres = ("k = 5", "k = 215", "k in (1, 100, 205)", "k > 600")
    for where, truth in true_locations_each(spark, wheres, rows_by_location(table)).items():
        assert _selected(table, where, "k_exact") == truth, where
    _check_every_instant(spark, table)


def test_delta_larger_than_the_row_limit_is_folded(spark: Any, table: Table) -> None:
    """A delta of more rows than the policy lets the chain hold compacts instead."""
    write_rows(spark, Path(table.path), make_rows(range(600, 640), 3), mode="upsert")
    policy = RefreshPolicy(max_deltas=10, max_delta_rows=3)
    results = {r.index: r for r in table.refresh("k_exact", spark=spark, policy=policy)}
    # the exact index's partitions are the ORC files a Spark build writes: folding rebuilds
    assert results["k_exact"].action == "rebuilt" and results["k_exact"].delta_rows > 3
    assert table.describe_index("k_exact")["deltas"] == 0
    _check_every_instant(spark, table)
