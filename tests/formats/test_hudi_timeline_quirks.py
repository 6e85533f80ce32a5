"""Hudi tables whose timeline commit metadata says less than what happened: reads at every instant.

lakesieve's Hudi ``changes`` hook (:mod:`lakesieve.plugins.hudi.changes`)
reads which file groups an instant touched from its commit metadata: the
write stats (``partitionToWriteStats``) and, for a replacecommit, the
replaced file ids (``partitionToReplaceFileIds``). A writer that leaves a
file group out of that metadata still leaves its files on storage, and
hudi-rs lists file slices from storage: a stale index trusting the metadata
alone would prune a file group whose rows it never saw.

lakesieve's writer (table version 6) writes the timeline as JSON files under
``.hoodie/``: ``<instant>.commit`` (copy-on-write), ``.deltacommit``
(merge-on-read) and ``.replacecommit`` (clustering). One copy-on-write and
one merge-on-read table are written with the same four instants:

- ``i0`` a bulk insert into two file groups, ``A`` (ids 1..4) and ``B`` (5..8);
- ``i1`` an upsert updating a row of ``A`` and one of ``B`` and inserting two
  rows into a new file group ``C`` (merge-on-read: log files for the updates);
- ``i2`` a delete of a row of each of ``A``, ``B`` and ``C``;
- ``i3`` a clustering of ``A`` and ``B`` into two new file groups, ``D1``
  (holding the updated row of ``A``) and ``D2``: a replacecommit.

Then, on a copy of each table, the commit metadata is edited as a writer with
the quirk would have written it:

- ``stats``: the commit (deltacommit) of ``i1`` leaves out the write stats of
  ``A`` and ``C``, that of ``i2`` those of ``B`` and ``C``; each keeps one
  file group, so the instant still names a change;
- ``replace``: the replacecommit of ``i3`` leaves ``B`` out of its replaced
  file ids and ``D1`` out of its write stats. hudi-rs then lists ``B`` as
  live after ``i3`` too (its rows are read twice: in ``B`` and in the
  clustered groups), and that is the oracle.

Each quirky table gets three indexes on ``x`` (one index type per case):
built at the first instant, built at the last, and built at the first and
refreshed to the last. Every instant is then read through ``read_arrow``,
``Table.read`` and the ``lakesieve`` Spark data source, against hudi-rs's
own read of that instant filtered by Spark SQL. A query reads the
intersection of what the three indexes select, so any one of them ruling out
a location wrongly loses rows. The Spark reads of one check run as one job
(a union of every read, tagged), to keep the file fast.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from lakesieve.contract import registry
from lakesieve.model import WriteOptions
from lakesieve.plugins.hudi.partitions import location_of
from lakesieve.plugins.hudi.services.cluster import cluster
from lakesieve.table import write
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tests.tables import hudi_rs_rows, spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

SCHEMA = "id long, x int, s string, v int"
COLUMNS = ["id", "x", "s"]
TAG = "_quirk_tag"
#: ``x = 500``: the updated row of ``A`` (``D1`` after clustering); ``x = 600``:
#: that of ``B``; ``x = 990``: ``C``'s row deleted at ``i2`` (above every value
#: left at ``i3``, so that even a coarse index built there rules it out);
#: ``x = 70``: ``B``'s row deleted at ``i2``.
WHERES = (
    "x = 500",
    "x = 600",
    "x = 990",
    "x = 70",
    "x BETWEEN 65 AND 95",
    "x >= 550",
    "x IS NULL",
    None,
)
#: What the two Spark read paths are checked with at every instant (each read
#: is a scan of the tagged union; ``read_arrow`` is checked with all of WHERES).
SPARK_WHERES = ("x = 500", "x = 990", "x >= 550", None)
COMPLETED = {"cow": "commit", "mor": "deltacommit"}


def _write(spark: Any, path: Path, rows: list[tuple[Any, ...]], **kw: Any) -> str:
    kw.setdefault("record_key", ("id",))
    kw.setdefault("precombine", "v")
    frame = spark.createDataFrame(rows, SCHEMA)
    return write(path, frame, format="hudi", options=WriteOptions(**kw), spark=spark).id


def _file_ids(path: Path, as_of: str) -> dict[int, str]:
    """The file group id of every row hudi-rs reads at ``as_of``, by ``id``."""
    rows = hudi_rs_rows(path, as_of)
    names = rows.column("_hoodie_file_name").to_pylist()
    return {
        i: str(n).lstrip(".").split("_", 1)[0]
        for i, n in zip(rows.column("id").to_pylist(), names, strict=True)
    }


def _write_table(spark: Any, path: Path, table_type: str) -> dict[str, Any]:
    """The four instants of the module docstring; the instants and the file group ids."""
    first = [(i, None if i == 4 else i * 10, f"a{i}", 0) for i in range(1, 9)]
    i0 = _write(spark, path, first, mode="bulk_insert", file_groups=2, table_type=table_type)
    at0 = _file_ids(path, i0)
    groups = {"A": at0[1], "B": at0[8]}
    assert groups["A"] != groups["B"] and len(set(at0.values())) == 2
    update = [(1, 500, "b1", 1), (8, 600, "b8", 1), (9, 990, "b9", 1), (10, 100, "b10", 1)]
    i1 = _write(spark, path, update, mode="upsert", small_file_limit_bytes=0)
    at1 = _file_ids(path, i1)
    groups["C"] = at1[9]
    assert at1[10] == groups["C"] and groups["C"] not in (groups["A"], groups["B"])
    i2 = _write(spark, path, [(i, 0, "", 2) for i in (2, 7, 9)], mode="delete")
    done = cluster(
        spark, str(path), "x", file_groups=[groups["A"], groups["B"]], target_file_groups=2
    )
    assert done is not None
    i3 = done.id
    at3 = _file_ids(path, i3)
    groups["D1"] = at3[1]
    groups["D2"] = next(f for i, f in at3.items() if f not in (groups["D1"], groups["C"]))
    return {"instants": [i0, i1, i2, i3], "groups": groups}


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both tables, written once for the module (each test reads a copy)."""
    out: dict[str, dict[str, Any]] = {}
    for table_type in ("cow", "mor"):
        path = tmp_path_factory.mktemp(f"hudi_{table_type}") / "t"
        out[table_type] = {"path": path, **_write_table(spark, path, table_type)}
    return out


@pytest.fixture(scope="module")
def quirky(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, written: dict[str, dict[str, Any]]
) -> Any:
    """``quirky(table_type, quirk)``: a copy of the table with the quirk planted, and its oracle.

    Made once per table type and quirk (each test copies it again, so its
    index store starts empty): the path, the instants, the file group ids
    and hudi-rs's rows per instant and condition.
    """
    made: dict[tuple[str, str], dict[str, Any]] = {}

    def get(table_type: str, quirk: str) -> dict[str, Any]:
        if (table_type, quirk) not in made:
            source = written[table_type]
            path = tmp_path_factory.mktemp(f"{table_type}_{quirk}") / "t"
            shutil.copytree(source["path"], path)
            _plant(path, source, table_type, quirk)
            _check_hook_says_less(path, source, quirk)
            expected = _expected(spark, path, source["instants"])
            i2, i3 = source["instants"][2:]
            # 7 rows live after i2; the replace quirk leaves B's 3 rows live beside their copies
            assert len(expected[i2, None]) == 7
            assert len(expected[i3, None]) == 7 + (3 if quirk == "replace" else 0)
            made[table_type, quirk] = {**source, "path": path, "expected": expected}
        return made[table_type, quirk]

    return get


# ---------------------------------------------------------------------------
# the quirks
# ---------------------------------------------------------------------------


def _commit_file(path: Path, instant: str, action: str) -> Path:
    return path / ".hoodie" / f"{instant}.{action}"


def _edit(file: Path, change: Any) -> dict[str, Any]:
    """Rewrite the JSON commit metadata in ``file`` with ``change(meta)`` applied; the result."""
    meta = json.loads(file.read_text())
    change(meta)
    file.write_text(json.dumps(meta, indent=2))
    return json.loads(file.read_text())


def _drop_stats(meta: dict[str, Any], file_ids: set[str]) -> None:
    stats = meta["partitionToWriteStats"]
    for part in stats:
        stats[part] = [s for s in stats[part] if s["fileId"] not in file_ids]


def _stat_ids(meta: dict[str, Any]) -> set[str]:
    return {s["fileId"] for stats in meta["partitionToWriteStats"].values() for s in stats}


def _replaced_ids(meta: dict[str, Any]) -> set[str]:
    return {f for ids in meta.get("partitionToReplaceFileIds", {}).values() for f in ids}


def _plant(path: Path, table: dict[str, Any], table_type: str, quirk: str) -> None:
    """Edit the commit metadata of the table at ``path`` as :data:`quirk` says; check it took."""
    i0, i1, i2, i3 = table["instants"]
    g = table["groups"]
    if quirk == "stats":
        action = COMPLETED[table_type]
        for instant, dropped, kept in (
            (i1, {g["A"], g["C"]}, g["B"]),
            (i2, {g["B"], g["C"]}, g["A"]),
        ):
            file = _commit_file(path, instant, action)
            before = _stat_ids(json.loads(file.read_text()))
            assert dropped | {kept} <= before, (instant, before)
            after = _stat_ids(_edit(file, functools.partial(_drop_stats, file_ids=dropped)))
            assert after == before - dropped and kept in after  # the quirk is in place
    else:
        file = _commit_file(path, i3, "replacecommit")

        def change(meta: dict[str, Any]) -> None:
            _drop_stats(meta, {g["D1"]})
            for part, ids in meta["partitionToReplaceFileIds"].items():
                meta["partitionToReplaceFileIds"][part] = [f for f in ids if f != g["B"]]

        written = json.loads(file.read_text())
        assert _replaced_ids(written) == {g["A"], g["B"]}
        assert _stat_ids(written) == {g["D1"], g["D2"]}
        edited = _edit(file, change)
        assert _replaced_ids(edited) == {g["A"]} and _stat_ids(edited) == {g["D2"]}
    # hudi-rs still lists every file group the metadata left out
    live = _hudi_groups(path, i3)
    assert {g["C"], g["D1"], g["D2"]} <= live
    assert (g["B"] in live) == (quirk == "replace")
    assert {g["A"], g["B"]} <= _hudi_groups(path, i0)


def _check_hook_says_less(path: Path, table: dict[str, Any], quirk: str) -> None:
    """The format's change hook, reading the edited metadata, misses what the quirk left out."""
    i0, i1, i2, i3 = table["instants"]
    loc = {name: location_of("", file_id) for name, file_id in table["groups"].items()}
    fmt = registry.table_format(lakesieve.open(str(path)).ref)
    if quirk == "stats":
        assert fmt.changes(i0, i1).touched == {loc["B"]}
        assert fmt.changes(i1, i2).touched == {loc["A"]}
    else:
        changes = fmt.changes(i2, i3)
        assert changes.added == {loc["D2"]} and changes.removed == {loc["A"]}


def _hudi_groups(path: Path, as_of: str) -> set[str]:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of)
    return {s.file_id for s in table.get_file_slices(options)}


# ---------------------------------------------------------------------------
# reads
# ---------------------------------------------------------------------------


def _key(row: tuple[Any, ...]) -> str:
    return repr(row)


def _triples(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True), key=_key)


def _collect_tagged(frames: list[DataFrame]) -> dict[int, list[tuple[Any, ...]]]:
    """Rows of every frame, by its position in ``frames``, in one Spark job."""
    tagged = [f.select(*COLUMNS).withColumn(TAG, F.lit(n)) for n, f in enumerate(frames)]
    out: dict[int, list[tuple[Any, ...]]] = {n: [] for n in range(len(frames))}
    for row in functools.reduce(DataFrame.unionByName, tagged).collect():
        out[row[TAG]].append(tuple(row[c] for c in COLUMNS))
    return {n: sorted(rows, key=_key) for n, rows in out.items()}


def _expected(
    spark: Any, path: Path, instants: list[str]
) -> dict[tuple[str, str | None], list[tuple[Any, ...]]]:
    """hudi-rs's rows at each instant, filtered by Spark SQL with each of :data:`WHERES`."""
    keys: list[tuple[str, str | None]] = []
    frames: list[DataFrame] = []
    out: dict[tuple[str, str | None], list[tuple[Any, ...]]] = {}
    for as_of in instants:
        rows = hudi_rs_rows(path, as_of).select(COLUMNS)
        for where in WHERES:
            if where is None:
                out[as_of, None] = _triples(rows)
            else:
                keys.append((as_of, where))
                frames.append(spark_where(spark, rows, where))
    for n, rows in _collect_tagged(frames).items():
        out[keys[n]] = rows
    return out


def _selections(
    table: Any, where: str | None, as_of: str, names: dict[str, str]
) -> dict[str, list[str]]:
    """What each index selected for ``where`` at ``as_of``, by file group name (for messages)."""
    if where is None:
        return {}
    plan = table.plan(where, as_of=as_of)
    return {
        item.definition.name: sorted(names.get(loc, loc) for loc in item.selected)
        for item in plan.indexes
    }


def _check_every_instant(
    spark: Any,
    table: Any,
    instants: list[str],
    expected: dict[tuple[str, str | None], list[tuple[Any, ...]]],
    names: dict[str, str],
) -> None:
    """``read_arrow``, ``Table.read`` and the data source at every instant: hudi-rs's rows.

    ``read_arrow`` is checked with every condition of :data:`WHERES`; the
    two Spark paths with :data:`SPARK_WHERES`, in one Spark job. Every wrong
    read is reported (``i0``..``i3`` name the instants), with what each index
    selected.
    """
    keys: list[tuple[str, str, str | None]] = []
    frames: list[DataFrame] = []
    wrong: list[tuple[Any, ...]] = []
    for as_of in instants:
        for where in WHERES:
            if _triples(table.read_arrow(where=where, as_of=as_of)) != expected[as_of, where]:
                wrong.append(("read_arrow", as_of, where))
        for where in SPARK_WHERES:
            keys.append(("read", as_of, where))
            frames.append(table.read(spark, where=where, as_of=as_of))
            source = spark.read.format("lakesieve").option("asOf", as_of).load(table.path)
            keys.append(("data source", as_of, where))
            frames.append(source.where(where) if where is not None else source)
    for n, rows in _collect_tagged(frames).items():
        how, as_of, where = keys[n]
        if rows != expected[as_of, where]:
            wrong.append((how, as_of, where))
    named = {as_of: f"i{n}" for n, as_of in enumerate(instants)}
    assert not wrong, "wrong rows:\n" + "\n".join(
        f"{how} as of {named[at]} where {where}: selected {_selections(table, where, at, names)}"
        for how, at, where in wrong
    )


def _check_unseen_selected(
    table: Any, instants: list[str], seen: dict[str, frozenset[str]]
) -> None:
    """Each index named in ``seen`` selects every location of every instant it never saw."""
    for as_of in instants:
        live = table.snapshot(as_of).locations
        items = {item.definition.name: item for item in table.plan("x = 500", as_of=as_of).indexes}
        for name, locations in seen.items():
            item = items[name]
            assert item.answered, (name, as_of, item.error)
            missing = (live - locations) - item.selected
            assert not missing, (name, as_of, missing)


@pytest.mark.parametrize(
    ("table_type", "quirk", "kind"),
    [
        ("cow", "stats", "sieve"),
        pytest.param("mor", "stats", "zonemap", marks=pytest.mark.long),
        pytest.param("cow", "replace", "zonemap", marks=pytest.mark.long),
        ("mor", "replace", "sieve"),
    ],
)
def test_quirky_commit_metadata_reads_like_hudi_rs(
    spark: Any, tmp_path: Path, quirky: Any, table_type: str, quirk: str, kind: str
) -> None:
    """Every instant, through every read path, with indexes at either end and refreshed: hudi-rs's rows.

    Three indexes of ``kind`` on ``x``: ``x_first`` built at the first
    instant, ``x_last`` at the last, ``x_refreshed`` built at the first and
    refreshed to the last. A query asks each of them and reads the
    intersection of their answers, so a location any one of them wrongly
    rules out is not read: its rows go missing from the comparison.
    """
    source = quirky(table_type, quirk)
    path = tmp_path / "t"
    shutil.copytree(source["path"], path)
    instants: list[str] = source["instants"]
    groups: dict[str, str] = source["groups"]
    first, last = instants[0], instants[-1]

    table = lakesieve.open(str(path))
    assert [i.id for i in table.timeline()] == instants
    live = table.snapshot(last).locations
    assert {location_of("", groups[g]) for g in ("C", "D1", "D2")} <= live
    built = table.build_index("x", type=kind, name="x_refreshed", as_of=first, spark=spark)
    assert built["instant"] == first
    results = table.refresh(name="x_refreshed", spark=spark)
    assert [(r.index, r.to_instant) for r in results] == [("x_refreshed", last)]
    assert [s.instant for s in table.index("x_refreshed").states] == [first, last]
    for name, at in (("x_first", first), ("x_last", last)):
        assert table.build_index("x", type=kind, name=name, as_of=at, spark=spark)["instant"] == at
    names = {location_of("", file_id): name for name, file_id in groups.items()}
    _check_every_instant(spark, table, instants, source["expected"], names)
    seen = {"x_first": table.snapshot(first).locations, "x_last": live}
    _check_unseen_selected(table, instants, seen)
