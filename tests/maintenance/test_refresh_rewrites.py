"""Refresh follows files Delta Lake and Iceberg rewrite copy-on-write to the files that replace them.

An upsert that touches every bucket of a table rewrites every file: by
location, the refresh's delta would hold every row twice. On the driver,
refresh pairs each removed file with the added file holding most of its
keys, moves the index entry to the new name, and folds in only the keys
that changed (``lakesieve.maintenance.refresh.pairs``). These tests check
the pairing rules, the renaming rules, and, on tables written by
lakesieve's own Delta and Iceberg writers and read back by delta-rs and
pyiceberg, that every index selects every file Spark SQL finds a matching
row in, after the pairs, after a declined rename and after a failed fold.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.errors import LakesieveWarning
from lakesieve.keys.location_renames import renamed_locations
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.maintenance.refresh.pairs import pair_rewrites
from lakesieve.model import WriteOptions
from lakesieve.table import Table, write
from lakesieve.table import open as open_table

from tests.differential.formats import data_files
from tests.tables import plain_types, true_locations_each

TYPES = ("sieve", "zonemap", "bloom", "exact")
BUCKETS = 4
#: keep deltas stored whatever their share of the base (the chained case)
CHAINING = RefreshPolicy(max_delta_share=float("inf"))


# ------------------------------------------------------------------ pairing rules


def _arrays(*values: list[Any]) -> list[pa.Array]:
    return [pa.array(v, pa.int64()) for v in values]


def test_pairs_follow_most_keys_each_location_once() -> None:
    removed = {"a": _arrays(list(range(0, 100))), "b": _arrays(list(range(100, 200)))}
    added = {
        "x": _arrays(list(range(100, 190)), [500, 501]),  # most of b
        "y": _arrays(list(range(0, 60)) + list(range(150, 160))),  # most of a
        "z": _arrays(list(range(60, 100))),  # the rest of a: 40 of 100
    }
    assert pair_rewrites(removed, added) == {"a": "y", "b": "x"}


def test_no_pair_below_half_of_the_keys() -> None:
    removed = {"a": _arrays(list(range(0, 100)))}
    added = {"x": _arrays(list(range(0, 49))), "y": _arrays(list(range(49, 100)))}
    assert pair_rewrites(removed, added) == {"a": "y"}  # 51 of 100
    added = {"x": _arrays(list(range(0, 49))), "y": _arrays(list(range(51, 100)))}
    assert pair_rewrites(removed, added) == {}


def test_one_added_location_takes_one_removed() -> None:
    removed = {"a": _arrays(list(range(10))), "b": _arrays(list(range(10)))}
    added = {"x": _arrays(list(range(10)))}
    assert pair_rewrites(removed, added) == {"a": "x"}  # ties go by name


def test_sampled_keys_nulls_and_empty_sides() -> None:
    many = list(range(100_000))
    assert pair_rewrites({"a": _arrays(many)}, {"x": _arrays(many[::-1])}, sample=64) == {"a": "x"}
    assert pair_rewrites({"a": _arrays([None, None])}, {"x": _arrays([None])}) == {}
    assert pair_rewrites({}, {"x": _arrays([1])}) == {}
    assert pair_rewrites({"a": _arrays([1])}, {}) == {}


def test_string_and_unjoinable_keys() -> None:
    words = [pa.array(["p", "q", "r", None])]
    assert pair_rewrites({"a": words}, {"x": [pa.array(["q", "r", "s"])]}) == {"a": "x"}
    lists = [pa.array([[1], [2]])]
    assert pair_rewrites({"a": lists}, {"x": lists}) == {}  # a list key cannot be joined on


def test_renamed_locations_rules() -> None:
    assert renamed_locations(["a", "b", "c"], {"a": "x", "c": "b2"}) == ["x", "b", "b2"]
    assert renamed_locations(["a", "b"], {"a": "b", "b": "a"}) == ["b", "a"]  # a swap
    assert renamed_locations(["a", "b"], {"z": "x"}) is None  # no entry to move
    assert renamed_locations(["a", "b"], {"a": "b"}) is None  # the new name has one
    assert renamed_locations(["a", "b"], {"a": "x", "b": "x"}) is None  # two onto one


# ------------------------------------------------------------------ tables


def _rows(spark: Any, ids: list[int], version: int) -> Any:
    return spark.createDataFrame(
        [(i, (i * 7 + version * 3) % 1000, f"s{i % 13}", version) for i in ids],
        "id bigint, k bigint, s string, v int",
    )


def _written(spark: Any, path: Path, fmt: str) -> Table:
    """400 rows in :data:`BUCKETS` files bucketed on ``id``, every index type on ``k``."""
    options = WriteOptions(
        mode="bulk_insert", record_key=("id",), file_groups=BUCKETS, bucket_column="id"
    )
    write(path, _rows(spark, list(range(400)), 0), format=fmt, options=options, spark=spark)
    table = open_table(path, refresh_policy=CHAINING)
    for typ in TYPES:
        table.build_index("k", type=typ, spark=spark)
    return table


def _upsert(spark: Any, path: Path, ids: list[int], version: int) -> None:
    write(path, _rows(spark, ids, version), options=WriteOptions(mode="upsert"), spark=spark)


QUERIES = (
    "k = 0",
    "k = 7",
    "k = 700",
    "k = 343",
    "k in (14, 793, 999)",
    "k between 100 and 120",
    "k >= 990",
    "k < 5",
    "k is null",
)


def _check_truth(spark: Any, table: Table, fmt: str) -> None:
    """Every index selects every file Spark SQL finds a matching row in (files read by the format's reader)."""
    by_file = {
        Path(loc).name: plain_types(rows).select(["id", "k", "s", "v"])
        for loc, rows in data_files(fmt, Path(table.path))
    }
    truths = true_locations_each(spark, QUERIES, by_file)
    for where, truth in truths.items():
        plan = table.plan(where)
        for item in plan.indexes:
            chosen = {Path(s).name for s in item.selected} if item.answered else set(by_file)
            assert truth <= chosen, (fmt, item.definition.name, where, truth - chosen)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_an_upsert_over_every_bucket_is_refreshed_by_pairs(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    table = _written(spark, tmp_path / "t", fmt)
    # a stored delta first (a new file, nothing rewritten), so the pairs land on a chain
    write(
        table.path,
        _rows(spark, list(range(400, 420)), 1),
        options=WriteOptions(mode="insert"),
        spark=spark,
    )
    first = {r.index: r for r in table.refresh(spark=spark)}
    assert {r.action for r in first.values()} == {"delta"}, first
    # updates in every bucket (keys move: k follows v), inserts, so every file is rewritten
    _upsert(spark, Path(table.path), [*range(0, 400, 9), *range(420, 440)], 2)
    results = {r.index: r for r in table.refresh(spark=spark)}
    for typ in TYPES:  # stored deltas that say which files moved, for every index type
        r = results[f"k_{typ}"]
        assert (r.action, r.engine, r.chain_length) == ("delta", "driver", 2), r
        assert r.locations_renamed == BUCKETS, r
        assert 0 < r.delta_rows < 200, r  # the changed keys, not every row of both files
    _check_truth(spark, table, fmt)
    # a second rewrite of every file: names move twice along the chain
    _upsert(spark, Path(table.path), [*range(3, 400, 11), *range(440, 450)], 3)
    results = {r.index: r for r in table.refresh(spark=spark)}
    for typ in TYPES:
        r = results[f"k_{typ}"]
        assert (r.action, r.locations_renamed, r.chain_length) == ("delta", BUCKETS, 3), r
    _check_truth(spark, table, fmt)
    # the upsert kept the layout (the inserted file's rows went to their buckets);
    # no index selects more files than the table has
    total = table.plan(None).locations_total
    assert total == BUCKETS
    for where in QUERIES:
        for item in table.plan(where).indexes:
            assert len(item.selected) <= total
    # compaction moves the base's entries along the whole chain (exact: a rebuild)
    done = {r.index: r.action for r in table.compact(spark=spark)}
    assert done == {f"k_{t}": ("rebuilt" if t == "exact" else "compacted") for t in TYPES}
    _check_truth(spark, table, fmt)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_spark_jobs_pair_rewritten_files_too(spark: Any, tmp_path: Path, fmt: str) -> None:
    """A change past the driver's share is paired by Spark jobs, as the driver pairs it."""
    table = _written(spark, tmp_path / "t", fmt)
    _upsert(spark, Path(table.path), [*range(0, 400, 7), *range(400, 430)], 1)
    # every file was rewritten: read as a delta all the same (not built afresh) to pair by Spark
    by_spark = open_table(
        table.path, refresh_policy=RefreshPolicy(driver_max_mb=0, rebuild_share=float("inf"))
    )
    results = {r.index: r for r in by_spark.refresh(spark=spark)}
    for typ in TYPES:
        r = results[f"k_{typ}"]
        assert (r.engine, r.locations_renamed) == ("spark", BUCKETS), r
        assert 0 < r.delta_rows < 200, r  # the changed keys, not every row of both files
    _check_truth(spark, table, fmt)
    # the same pairs the driver finds, on the same change
    from lakesieve.maintenance.refresh.pairs_spark import spark_pairs
    from lakesieve.maintenance.refresh.plan import plan_delta

    again = open_table(table.path)
    indexes = again.states
    line = again.timeline()
    start, end = line[-2], line[-1]
    plan = plan_delta(indexes, "k", start, end)
    paired = spark_pairs(indexes, spark, "k", start, end, plan.old_units, plan.new_units)
    assert len(paired) == BUCKETS
    assert paired == spark_pairs(  # a sample of one key in eight of each file: the same pairs
        indexes, spark, "k", start, end, plan.old_units, plan.new_units, sample=12
    )


@pytest.mark.parametrize("how", ["declined", "failed"])
def test_a_rename_an_index_type_does_not_take_is_stored(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A fold the policy asks for that cannot move entries leaves a stored delta that moves them."""
    from lakesieve.indexes.sieve.plugin import SieveIndexType

    path = tmp_path / "t"
    write(
        path,
        _rows(spark, list(range(400)), 0),
        format="delta",
        options=WriteOptions(
            mode="bulk_insert", record_key=("id",), file_groups=BUCKETS, bucket_column="id"
        ),
        spark=spark,
    )
    table = open_table(path)  # the default policy: a delta past a fifth of the base folds
    table.build_index("k", type="sieve", spark=spark)
    _upsert(spark, path, list(range(0, 400, 5)), 1)
    if how == "declined":
        monkeypatch.setattr(SieveIndexType, "rename_locations", lambda *a, **k: None)
    else:

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("planted failure")

        monkeypatch.setattr(SieveIndexType, "rename_locations", broken)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        results = {r.index: r for r in table.refresh("k_sieve", spark=spark)}
    r = results["k_sieve"]
    assert (r.action, r.locations_renamed, r.engine) == ("delta", BUCKETS, "driver"), r
    assert r.delta_rows < 200, r
    said = [str(w.message) for w in seen if issubclass(w.category, LakesieveWarning)]
    if how == "failed":
        assert any("planted failure" in m and "delta stored" in m for m in said), said
    else:
        assert not said, said
    _check_truth(spark, table, "delta")
    monkeypatch.undo()
    assert [c.action for c in table.compact(spark=spark)] == ["compacted"]
    _check_truth(spark, table, "delta")


def test_a_file_a_stored_delta_brought_in_is_followed_too(spark: Any, tmp_path: Path) -> None:
    """A file appended after the base (its entry only in a stored delta), then rewritten, still pairs."""
    from deltalake import DeltaTable, write_deltalake

    table = _written(spark, tmp_path / "t", "delta")
    ids = list(range(400, 460))
    appended = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([(i * 7) % 1000 for i in ids], pa.int64()),
            "s": pa.array([f"s{i % 13}" for i in ids]),
            "v": pa.array([0] * len(ids), pa.int32()),
        }
    )
    write_deltalake(table.path, appended, mode="append")
    first = {r.index: r for r in table.refresh(spark=spark)}
    assert first["k_sieve"].action == "delta" and first["k_sieve"].locations_renamed == 0
    # delta-rs rewrites the appended file without two of its rows
    DeltaTable(table.path).delete("id IN (401, 402)")
    results = {r.index: r for r in table.refresh(spark=spark)}
    for typ in TYPES:
        r = results[f"k_{typ}"]
        assert (r.action, r.locations_renamed, r.locations_read) == ("delta", 1, 2), r
        assert r.delta_rows <= 2, r  # the two deleted keys
    _check_truth(spark, table, "delta")
    # the fold moves only what the base holds: the appended file moves with the stored rows
    done = {r.index: r.action for r in table.compact(spark=spark)}
    assert done == {f"k_{t}": ("rebuilt" if t == "exact" else "compacted") for t in TYPES}
    _check_truth(spark, table, "delta")


def test_a_chain_whose_base_snapshot_expired_is_rebuilt(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folding moved names needs the base's snapshot (which names it holds); without it, a rebuild."""
    table = _written(spark, tmp_path / "t", "delta")
    write(
        table.path,
        _rows(spark, list(range(400, 420)), 1),
        options=WriteOptions(mode="insert"),
        spark=spark,
    )
    table.refresh("k_sieve", spark=spark)
    _upsert(spark, Path(table.path), list(range(0, 400, 7)), 2)
    (r,) = table.refresh("k_sieve", spark=spark)
    assert (r.action, r.locations_renamed, r.chain_length) == ("delta", BUCKETS, 2), r
    base = table.index("k_sieve").chain(table.index("k_sieve").latest())[0].instant
    view = type(table.states.view)
    real = view.snapshot_at

    def expired(self: Any, inst: Any) -> Any:
        if inst is not None and inst.id == base:
            raise RuntimeError(f"snapshot {inst.id} expired")
        return real(self, inst)

    monkeypatch.setattr(view, "snapshot_at", expired)
    assert [c.action for c in table.compact("k_sieve", spark=spark)] == ["rebuilt"]
    monkeypatch.undo()
    _check_truth(spark, table, "delta")
