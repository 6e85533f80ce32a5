"""Delta tables whose add and remove actions disagree with the snapshots: reads at every version.

The Delta plugin's ``changes`` hook reads the ``add`` and ``remove`` actions of
``_delta_log/<version>.json``; delta-rs lists a version's files from the JSON
commits and, from a checkpoint on, from the checkpoint. When the two disagree
(a writer that left an action out, or wrote one too many, or a commit file
gone after checkpointing) the hook says less than what changed between two
versions, and an index built at one version looked complete at another.

Each case writes a table with delta-rs (``a``: ids 1-3, ``b``: 2, 4, 5, null,
then ``c``: 2, 6, 7 appended or overwriting, ``d``: 8, 2, a checkpoint at
version 3, ``e``: 9, 2), then edits the log:

- ``missing_remove``: version 2 overwrites ``a`` and ``b`` but its JSON has
  no ``remove``; the checkpoint (written before the edit) has them gone, so
  they vanish between versions 2 and 3 with no action saying so;
- ``add_only_in_checkpoint``: version 2's ``add`` of ``c`` is only in the
  checkpoint, so ``c`` appears between versions 2 and 3 with no action;
- ``redundant_remove``: version 2 also removes ``b`` (the checkpoint keeps it
  live: it comes back at version 3 with no ``add``) and a file never added;
  version 4 removes ``d`` and adds it again (delta-rs lets the remove win);
- ``commit_json_deleted``: version 3's JSON is deleted after checkpointing
  (its ``add`` lives only in the checkpoint); the hook must widen its answer;
- ``deletion_vector_only_in_checkpoint``: version 2 puts a deletion vector on
  ``a`` (dropping id 2), but its JSON keeps no action: the deletion vector
  appears between versions 2 and 3 on a location the index has seen.

Each test asserts the quirk is in place, builds an index at the first, the
middle or the last version (or at the first, then refreshes it), and reads
every version through ``read_arrow``, ``Table.read`` and the ``lakesieve``
Spark data source, against delta-rs's own read of that version filtered by
Spark SQL; ``explain`` must select every location the index's instant did not
hold as it is at the version read.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import lakesieve
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaProtocolError
from lakesieve.contract import registry
from lakesieve.errors import InstantNotFoundError
from lakesieve.maintenance.refresh import RefreshPolicy

from tests.formats.test_delta_plugin import _add_deletion_vector
from tests.tables import spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
WHERES = ("id = 2", "id BETWEEN 4 AND 6", "id IS NULL", None)
#: what Spark's read paths are checked with: every data file holds an id 2, so a
#: location a read loses costs rows (read_arrow checks every condition)
SPARK_WHERE = "id = 2"
#: a predicate no row matches: an index in use selects nothing at its own instant
NO_MATCH = "id = 100"
GHOST = "part-00000-00000000-0000-0000-0000-000000000000-c000.snappy.parquet"
CHECKPOINT_AT = 3
LAST = 4


def _rows(ids: list[int | None], tag: str) -> pa.Table:
    return pa.table({"id": ids, "s": [f"{tag}{i}" for i in ids]}, schema=ARROW_SCHEMA)


def _log(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.json"


def _actions(path: Path, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _log(path, version).read_text().splitlines() if line]


def _put(path: Path, version: int, actions: list[dict[str, Any]]) -> None:
    _log(path, version).write_text("".join(json.dumps(a) + "\n" for a in actions))


def _paths(actions: list[dict[str, Any]], kind: str) -> list[str]:
    return [unquote(a[kind]["path"]) for a in actions if kind in a]


def _logged(path: Path, kind: str) -> dict[int, set[str]]:
    """Per commit file still in the log, the paths of its ``kind`` actions."""
    out = {}
    for version in range(LAST + 1):
        if _log(path, version).exists():
            out[version] = set(_paths(_actions(path, version), kind))
    return out


def _live(path: Path, version: int) -> set[str]:
    """The data files delta-rs lists at ``version``."""
    adds = pa.table(DeltaTable(str(path), version=version).get_add_actions(flatten=True))
    return {unquote(p) for p in adds.column("path").to_pylist()}


def _native(path: Path, version: int) -> pa.Table:
    """delta-rs's rows at ``version`` (its kernel scan where deletion vectors need it)."""
    table = DeltaTable(str(path), version=version)
    try:
        rows = table.to_pyarrow_table()
    except DeltaProtocolError:  # deletion vectors: to_pyarrow_table refuses them
        rows = pa.table(table.scan())
    return rows.select(["id", "s"]).cast(ARROW_SCHEMA)


def _history(path: Path, second: str = "append", deletion_vector: bool = False) -> None:
    """Versions 0-4 as the module docstring says; a checkpoint at version 3."""
    config = {"delta.enableDeletionVectors": "true"} if deletion_vector else None
    write_deltalake(str(path), _rows([1, 2, 3], "a"), configuration=config)
    write_deltalake(str(path), _rows([2, 4, 5, None], "b"), mode="append")
    if deletion_vector:
        (first,) = _paths(_actions(path, 0), "add")
        _add_deletion_vector(path, first, [1])  # id 2
    else:
        write_deltalake(str(path), _rows([2, 6, 7], "c"), mode=second)
    write_deltalake(str(path), _rows([8, 2], "d"), mode="append")
    DeltaTable(str(path)).create_checkpoint()
    write_deltalake(str(path), _rows([9, 2], "e"), mode="append")
    assert (path / "_delta_log" / f"{CHECKPOINT_AT:020d}.checkpoint.parquet").exists()
    assert DeltaTable(str(path)).version() == LAST


def _missing_remove(path: Path) -> None:
    _history(path, second="overwrite")
    replaced = set(_paths(_actions(path, 2), "remove"))
    assert len(replaced) == 2
    _put(path, 2, [a for a in _actions(path, 2) if "remove" not in a])
    # the quirk: no action ever removes them, yet the checkpoint has them gone
    assert all(not (paths & replaced) for paths in _logged(path, "remove").values())
    assert replaced <= _live(path, 2)
    assert not replaced & (_live(path, 3) | _live(path, 4))


def _add_only_in_checkpoint(path: Path) -> None:
    _history(path)
    (added,) = _paths(_actions(path, 2), "add")
    _put(path, 2, [a for a in _actions(path, 2) if "add" not in a])
    # the quirk: no commit file adds it, yet it is live from the checkpoint on
    assert all(added not in paths for paths in _logged(path, "add").values())
    assert added not in _live(path, 2)
    assert added in _live(path, 3) and added in _live(path, 4)


def _redundant_remove(path: Path) -> None:
    _history(path)
    (kept,) = _paths(_actions(path, 1), "add")
    size = next(a["add"]["size"] for a in _actions(path, 1) if "add" in a)
    body = {"dataChange": True, "deletionTimestamp": 1, "extendedFileMetadata": True}
    body |= {"partitionValues": {}, "size": size}
    removes = [{"remove": {**body, "path": kept}}, {"remove": {**body, "path": GHOST}}]
    commit = _actions(path, 2)
    _put(path, 2, commit[:1] + removes + commit[1:])
    (again,) = _paths(_actions(path, 3), "add")
    add = next(a for a in _actions(path, 3) if "add" in a)
    commit = _actions(path, LAST)
    _put(path, LAST, [*commit, {"remove": {**body, "path": again}}, add])
    # the quirk: removed at 2 by the JSON, live again from the checkpoint on, never re-added
    assert kept in _logged(path, "remove")[2]
    assert kept in _live(path, 1) and kept not in _live(path, 2)
    assert kept in _live(path, 3) and kept in _live(path, 4)
    assert all(kept not in paths for v, paths in _logged(path, "add").items() if v > 1)
    # a file never added is removed; a live file is removed and added in one commit
    # (delta-rs 1.6 lets the remove win: it is not live at 4; the reads follow delta-rs)
    assert GHOST in _logged(path, "remove")[2] and all(
        GHOST not in _live(path, v) for v in range(5)
    )
    assert again in _logged(path, "remove")[LAST] & _logged(path, "add")[LAST]


def _commit_json_deleted(path: Path) -> None:
    _history(path)
    (added,) = _paths(_actions(path, CHECKPOINT_AT), "add")
    _log(path, CHECKPOINT_AT).unlink()
    # the quirk: the add of ``d`` is in the checkpoint only
    assert CHECKPOINT_AT not in _logged(path, "add")
    assert added in _live(path, CHECKPOINT_AT) and added in _live(path, LAST)
    assert all(added not in paths for paths in _logged(path, "add").values())


def _deletion_vector_only_in_checkpoint(path: Path) -> None:
    _history(path, deletion_vector=True)
    (vectored,) = _paths(_actions(path, 0), "add")
    assert vectored in _paths(_actions(path, 2), "add")
    _put(path, 2, [a for a in _actions(path, 2) if "add" not in a and "remove" not in a])
    # the quirk: no action changes ``a``, yet from the checkpoint on id 2 is deleted
    assert all(vectored not in paths for paths in _logged(path, "remove").values())
    assert all(vectored not in paths for v, paths in _logged(path, "add").items() if v > 0)
    assert "a2" in _native(path, 2).column("s").to_pylist()
    for version in (3, LAST):
        assert "a2" not in _native(path, version).column("s").to_pylist()


QUIRKS: dict[str, Callable[[Path], None]] = {
    "missing_remove": _missing_remove,
    "add_only_in_checkpoint": _add_only_in_checkpoint,
    "redundant_remove": _redundant_remove,
    "commit_json_deleted": _commit_json_deleted,
    "deletion_vector_only_in_checkpoint": _deletion_vector_only_in_checkpoint,
}


def _pairs(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        zip(table.column("id").to_pylist(), table.column("s").to_pylist(), strict=True),
        key=repr,
    )


@pytest.fixture(scope="module")
def quirk_tables(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, dict[tuple[str, str | None], list[tuple[Any, ...]]]]]:
    """Per quirk: the table as written (copied by each test), and delta-rs's rows per
    ``(version, where)`` filtered by Spark SQL (one Spark job for all of them)."""
    out = {}
    for name, plant in QUIRKS.items():
        path = tmp_path_factory.mktemp(name) / "events"
        plant(path)
        parts = []
        for version in range(LAST + 1):
            try:
                rows = _native(path, version)
            except Exception:  # a version delta-rs cannot load (none of these quirks has one)
                continue
            parts.append(rows.append_column("v", pa.array([str(version)] * rows.num_rows)))
        every = pa.concat_tables(parts)
        flags = [f"CASE WHEN ({w}) THEN 1 ELSE 0 END AS q{i}" for i, w in enumerate(WHERES) if w]
        frame = spark_where(spark, every, "TRUE").selectExpr("v", "id", "s", *flags)
        expected: dict[tuple[str, str | None], list[tuple[Any, ...]]] = {}
        for part in parts:
            for where in WHERES:
                expected[part.column("v")[0].as_py(), where] = []
            expected[part.column("v")[0].as_py(), None] = _pairs(part)
        for row in frame.collect():
            for i, where in enumerate(WHERES):
                if where is not None and row[f"q{i}"] == 1:
                    expected[row["v"], where].append((row["id"], row["s"]))
        out[name] = (path, {k: sorted(v, key=repr) for k, v in expected.items()})
    return out


def _spark_pairs(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.select("id", "s").collect()), key=repr)


def _read_units(table: Any, version: str) -> dict[str, tuple[str, ...]]:
    return {u.location: tuple(u.delete_files) for u in table.snapshot(version).units}


#: one case per quirk in CI (each index type and refresh path met at least once);
#: the long tier takes them all
LONG = pytest.mark.long
CASES = [
    ("missing_remove", "last", "sieve"),
    pytest.param("missing_remove", "first", "zonemap", marks=LONG),
    ("missing_remove", "refresh", "exact"),
    pytest.param("add_only_in_checkpoint", "first", "bloom", marks=LONG),
    pytest.param("add_only_in_checkpoint", "last", "zonemap", marks=LONG),
    ("add_only_in_checkpoint", "refresh-spark", "sieve"),
    ("redundant_remove", "middle", "zonemap"),
    pytest.param("redundant_remove", "last", "bloom", marks=LONG),
    pytest.param("commit_json_deleted", "first", "sieve", marks=LONG),
    ("commit_json_deleted", "last", "exact"),
    pytest.param("deletion_vector_only_in_checkpoint", "last", "exact", marks=LONG),
    ("deletion_vector_only_in_checkpoint", "first", "bloom"),
]


@pytest.mark.parametrize(("quirk", "built_at", "kind"), CASES)
def test_quirky_log_reads_like_delta_rs(
    spark: Any,
    tmp_path: Path,
    quirk_tables: dict[str, tuple[Path, dict[tuple[str, str | None], list[tuple[Any, ...]]]]],
    quirk: str,
    built_at: str,
    kind: str,
) -> None:
    """Every version, through every read path, with the index at one version: delta-rs's rows."""
    written, expected = quirk_tables[quirk]
    path = tmp_path / "events"
    shutil.copytree(written, path)
    table = lakesieve.open(str(path))
    versions = [i.id for i in table.timeline()]
    loadable = sorted({v for v, _ in expected}, key=int)
    # delta-rs's history() miscounts around a missing commit file: the timeline may lack
    # version 0 there, never a version it holds that delta-rs cannot load
    assert set(versions) <= set(loadable) and set(versions) >= {"1", "2", "3", "4"}
    assert versions == sorted(versions, key=int)
    first, last = versions[0], versions[-1]
    at = {"first": first, "middle": "2", "last": last}.get(built_at, first)
    built = table.build_index("id", type=kind, as_of=at, spark=spark)
    assert built["instant"] == at
    if built_at.startswith("refresh"):
        driver_mb = 0.0 if built_at == "refresh-spark" else 256.0
        policy = RefreshPolicy(max_delta_share=math.inf, driver_max_mb=driver_mb)
        (result,) = table.refresh(spark=spark, policy=policy)
        assert (result.action, result.to_instant) == ("delta", last), result
        assert result.engine == ("spark" if driver_mb == 0 else "driver"), result
        at = last
    no_match = table.explain(NO_MATCH, as_of=at)
    assert no_match["indexes"][0]["status"] == "used" and no_match["indexes"][0]["instant"] == at
    # the index prunes (a location it loses would cost rows), and has seen every
    # location at its instant: a refresh reads every location that changed
    assert no_match["locations_total"] and no_match["selected"] == [], no_match

    fmt = registry.table_format(table.ref)
    for version in versions:
        units = _read_units(table, version)
        for where in WHERES[:-1]:
            plan = table.explain(where, as_of=version)
            (used,) = plan["indexes"]
            if used["status"] != "used":  # a bloom filter answers no range: all is read
                assert where != SPARK_WHERE and len(plan["selected"]) == len(units), plan
                continue
            # every location the state's instant did not hold as it is now is read
            held = _read_units(table, used["instant"])
            differ = {loc for loc, dv in units.items() if held.get(loc) != dv}
            assert set(plan["selected"]) >= differ, (version, where, plan)
            low, high = sorted((int(version), int(used["instant"])))
            if quirk == "commit_json_deleted" and low < CHECKPOINT_AT <= high:
                # a commit file of the range is gone: the hook widens to both bounds
                changes = fmt.changes(used["instant"], version)
                assert changes.touched >= set(units) | set(held), (version, changes)
        for where in WHERES:
            want = expected[version, where]
            assert _pairs(table.read_arrow(where=where, as_of=version)) == want, (version, where)
        # Spark's paths: one condition (every file holds an id 2), every version
        want = expected[version, SPARK_WHERE]
        frame = table.read(spark, where=SPARK_WHERE, as_of=version)
        assert _spark_pairs(frame) == want, ("read", version)
        source = spark.read.format("lakesieve").option("asOf", version).load(str(path))
        assert _spark_pairs(source.where(SPARK_WHERE)) == want, ("data source", version)
    for version in sorted(set(loadable) - set(versions)):
        with pytest.raises(InstantNotFoundError):
            table.read_arrow(where=SPARK_WHERE, as_of=version)
