"""A location an index never saw is always read, whatever the change record says.

Two layers keep a wrong change record from losing rows:

- the framework checks the format's record against the two snapshots' live
  read units (:mod:`lakesieve.query.live_changes`);
- each index state records which locations it has seen
  (:mod:`lakesieve.store.seen_locations`), and a query reads every location
  of its snapshot that the state never saw.

The pure logic of both is tested first. Then each layer is tested alone on
real Delta and Iceberg tables: with the framework's whole change answer
replaced by "nothing changed" (so only the guard stands), reads at every
instant, with an index built at the first instant and refreshed or not,
still return the format's own rows filtered by Spark SQL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import lakesieve
import pyarrow as pa
import pytest
from lakesieve.model import Changes, Instant, ReadUnit, Snapshot
from lakesieve.query.live_changes import checked_changes
from lakesieve.query.table_view import TableView
from lakesieve.store import seen_locations as seen
from lakesieve.store.index_log import IndexState

from tests.tables import spark_where

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _snap(*units: tuple[str, str | None, tuple[str, ...]]) -> Snapshot:
    return Snapshot(
        Instant("1", "1", "commit"),
        tuple(ReadUnit(loc, base, delete_files=dels) for loc, base, dels in units),
    )


# ----------------------------------------------------------------- pure logic


def test_checked_changes_takes_membership_from_the_snapshots() -> None:
    """A record that says nothing gets the added, removed and rewritten locations."""
    old = _snap(("a", "a", ()), ("b", "b", ()), ("c", "c", ()))
    new = _snap(("b", "b", ("dv1",)), ("c", "c", ()), ("d", "d", ()))
    got = checked_changes(Changes(start="1", end="2"), old, new)
    assert got.added == {"d"}
    assert got.removed == {"a"}
    assert got.rewritten == {"b"}


def test_checked_changes_corrects_a_wrong_classification_and_drops_refinements() -> None:
    """A location the record calls added but both snapshots hold is rewritten; claims go."""
    old = _snap(("a", "a", ()), ("b", "b", ()))
    new = _snap(("a", "a", ()), ("b", "b", ()))
    reported = Changes(
        start="1", end="2", added=frozenset({"a"}), stamped=frozenset({"a"}), key_columns=("k",)
    )
    got = checked_changes(reported, old, new)
    assert got.rewritten == {"a"} and not got.added and not got.removed
    assert not got.stamped
    assert got.key_columns == ("k",)


def test_checked_changes_keeps_an_agreeing_record_whole() -> None:
    """A record that agrees with the snapshots keeps its refinements, and a wider one stays."""
    old = _snap(("a", "a", ()), ("b", "b", ()))
    new = _snap(("a", "a2", ()), ("b", "b", ()), ("c", "c", ()))
    reported = Changes(
        start="1",
        end="2",
        added=frozenset({"c"}),
        rewritten=frozenset({"a", "b"}),
        removed=frozenset({"x"}),  # added and removed inside the range
        stamped=frozenset({"a"}),
    )
    assert checked_changes(reported, old, new) is reported


def test_seen_record_round_trips_and_replays_a_chain() -> None:
    """A base's record and its deltas' differences give the newest state's locations."""
    first = seen.hashes(["a", "b", "c"])
    assert seen.decode(seen.encode(first)) == first
    assert seen.decode(seen.encode([])) == frozenset()
    base_meta: dict[str, Any] = {"other": 1, seen.SEEN_ADDED: "stale"}
    seen.stamp(base_meta, "base", first)
    assert seen.SEEN_ADDED not in base_meta and base_meta["other"] == 1
    second = seen.after_change(first, ["a"], ["d"], ["b", "c", "d"])
    assert second == seen.hashes(["b", "c", "d"])
    delta_meta: dict[str, Any] = {seen.SEEN: "inherited from a base"}
    seen.stamp(delta_meta, "delta", second, first)
    assert seen.SEEN not in delta_meta
    chain = [
        IndexState("i", "s1", "1", "1", (), base_meta, 0),
        IndexState("i", "s2", "2", "2", (), delta_meta, 0, kind="delta", parent="s1", base="s1"),
    ]
    assert seen.seen_of(chain) == second
    assert seen.unseen(["b", "e"], second) == {"e"}
    assert seen.seen_of(chain[:1]) == first


def test_seen_record_missing_or_damaged_is_not_trusted() -> None:
    """No record, or one that does not decode, answers ``None`` (the change record decides)."""
    plain = IndexState("i", "s1", "1", "1", (), {}, 0)
    assert seen.seen_of([plain]) is None
    bad = IndexState("i", "s1", "1", "1", (), {seen.SEEN: "not base64!"}, 0)
    assert seen.seen_of([bad]) is None
    odd = IndexState("i", "s1", "1", "1", (), {seen.SEEN: "AAAA"}, 0)  # 3 bytes
    assert seen.seen_of([odd]) is None
    meta: dict[str, Any] = {}
    seen.stamp(meta, "delta", frozenset({1}), None)  # a delta on a parent without a record
    assert meta == {}
    assert seen.after_change(None, [], [], ["a"]) == seen.hashes(["a"])


# ----------------------------------------------------------------- the guard alone


def _delta_table(root: Path) -> tuple[str, Any]:
    path = root / "delta"
    for i, ids in enumerate(([1, 2, 3], [4, 5], [2, 9], [7])):
        rows = pa.table({"id": ids, "s": [f"v{i}-{x}" for x in ids]}, schema=ARROW_SCHEMA)
        deltalake.write_deltalake(str(path), rows, mode="overwrite" if i == 2 else "append")

    def native(instant: str) -> pa.Table:
        return deltalake.DeltaTable(str(path), version=int(instant)).to_pyarrow_table()

    return str(path), native


def _iceberg_table(root: Path) -> tuple[str, Any]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("guard", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("guard")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StringType(), required=False),
    )
    path = root / "events"
    table = catalog.create_table(("guard", "events"), schema=schema, location=str(path))
    for i, ids in enumerate(([1, 2, 3], [4, 5], [2, 9], [7])):
        rows = pa.table({"id": ids, "s": [f"v{i}-{x}" for x in ids]}, schema=ARROW_SCHEMA)
        (table.overwrite if i == 2 else table.append)(rows)

    def native(instant: str) -> pa.Table:
        return table.scan(snapshot_id=int(instant)).to_arrow()

    return str(path), native


def _nothing_changed(self: TableView, start: Instant | None, end: Instant) -> Changes:
    """The change answer of a broken format hook *and* a broken check: no change at all."""
    return Changes(start=start.id if start else None, end=end.id)


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.select("id", "s").collect()), key=repr)


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
@pytest.mark.parametrize("refresh", [False, True])
def test_guard_alone_reads_every_location_the_index_never_saw(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, refresh: bool
) -> None:
    """With no change reported at all, reads at every instant still return the format's rows."""
    path, native = (_delta_table if fmt == "delta" else _iceberg_table)(tmp_path)
    table = lakesieve.open(path)
    line = [i.id for i in table.timeline()]
    assert len(line) >= 4
    table.build_index("id", type="sieve", as_of=line[0], spark=spark)
    monkeypatch.setattr(TableView, "changes", _nothing_changed)
    if refresh:
        table.refresh(spark=spark)
        assert table.describe_index("id_sieve")["instant"] == line[-1]
    for as_of in line:
        snapshot = table.snapshot(as_of).locations
        plan = table.explain("id = 2", as_of=as_of)
        entry = plan["indexes"][0]
        never = snapshot - table.snapshot(line[0]).locations
        assert set(plan["selected"]) >= never, as_of
        if never:
            assert entry.get("locations_unseen") == len(never), entry
        for where in ("id = 2", "id >= 5", "id IS NULL"):
            want = _rows(spark_where(spark, native(as_of).select(["id", "s"]), where))
            got = table.read_arrow(where=where, as_of=as_of)
            rows = sorted(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True), key=repr)
            assert rows == want, (as_of, where)
            assert _rows(table.read(spark, where=where, as_of=as_of)) == want, (as_of, where)
