"""Hudi table services: compaction, clustering, clean, failed writes and their rollback.

Every instant of each sequence is read back by hudi-rs (latest and time
travel) and by lakesieve's reader and compared with a Python model; change
listings must name every location whose rows changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import WriteError
from lakesieve.model import WriteOptions
from lakesieve.plugins.hudi.avro_container import read_container
from lakesieve.plugins.hudi.services import (
    clean,
    cluster,
    compact,
    rollback_failed,
    write_failed,
)
from lakesieve.plugins.hudi.writer import write_table

from tests.formats.test_hudi_mor_writer import SLOW, History, Model, df_of, hudi_rows

pytestmark = pytest.mark.spark


def _opts(table_type: str, partitioned: bool, **kw: Any) -> WriteOptions:
    extra: dict[str, Any] = dict(record_key=("id",), precombine="v", table_type=table_type)
    if partitioned:
        extra["partition_by"] = ("p",)
    extra.update(kw)
    return WriteOptions(**extra)


def test_mor_compaction_clustering_clean_and_rollback(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    model, hist = Model(partitioned=True), History(path)

    def write(mode: str, rows: list[tuple[Any, ...]], **kw: Any) -> None:
        inst = write_table(
            spark, str(path), df_of(spark, rows), _opts("mor", True, mode=mode, **kw)
        )
        model.apply(mode, rows)
        hist.record(inst.id, model.expected())

    write("bulk_insert", [(i, f"a{i}", i % 2, 1) for i in range(30)], file_groups=2)
    write("upsert", [(1, "u1", 1, 0), (2, "u2", 0, 0), (70, "n70", 0, 0)])
    write("delete", [(3, "", 1, 0), (4, "", 0, 0)])
    inst = compact(spark, str(path))
    assert inst is not None and inst.action == "commit"
    commit = json.loads((path / ".hoodie" / f"{inst.id}.commit").read_text())
    assert commit["operationType"] == "COMPACT" and commit["compacted"] is True
    plan = read_container((path / ".hoodie" / f"{inst.id}.compaction.requested").read_bytes())
    assert {op["fileId"] for op in plan[0]["operations"]} == {
        s["fileId"] for ss in commit["partitionToWriteStats"].values() for s in ss
    }
    for stats in commit["partitionToWriteStats"].values():
        for s in stats:
            assert s["numInserts"] == s["numDeletes"] == 0 and s["prevCommit"] != "null"
            assert pq.read_metadata(path / s["path"]).num_rows == s["numWrites"]
    hist.record(inst.id, model.expected())
    assert compact(spark, str(path)) is None, "nothing left to compact"

    write("upsert", [(5, "u5", 1, 0), (80, "n80", 0, 0)])
    failed = write_failed(spark, str(path), df_of(spark, [(6, "lost", 0, 9)]), _opts("mor", True))
    assert not (path / ".hoodie" / f"{failed.id}.deltacommit").exists()
    assert list(path.rglob(f".*{'.log.'}*")), "the failed write left its log files"
    hist.check_hudi()
    hist.check_lakesieve(spark)
    rb = rollback_failed(str(path))
    assert rb is not None and rb.action == "rollback"
    undo = read_container((path / ".hoodie" / f"{rb.id}.rollback").read_bytes())[0]
    assert undo["commitsRollback"] == [failed.id] and undo["totalFilesDeleted"] >= 1
    assert not list((path / ".hoodie").glob(f"{failed.id}.*"))
    assert rollback_failed(str(path)) is None

    inst = cluster(spark, str(path), sort_by="name", target_file_groups=1)
    assert inst is not None and inst.action == "replacecommit"
    replace = json.loads((path / ".hoodie" / f"{inst.id}.replacecommit").read_text())
    assert {p: len(ids) for p, ids in replace["partitionToReplaceFileIds"].items()} == {
        "0": 2,
        "1": 2,
    }
    hist.record(inst.id, model.expected())
    for stats in replace["partitionToWriteStats"].values():
        (stat,) = stats
        names = pq.read_table(path / stat["path"], columns=["name"]).column(0).to_pylist()
        assert names == sorted(names)
    write("upsert", [(7, "u7", 1, 0)])
    write("delete", [(8, "", 0, 0)])
    hist.check_hudi()
    hist.check_lakesieve(spark)
    hist.check_changes()

    files_before = {p for p in path.rglob("*") if p.is_file()}
    inst = clean(str(path), retain_commits=2)
    assert inst is not None and inst.action == "clean"
    gone = files_before - {p for p in path.rglob("*") if p.is_file()}
    assert gone and all(".hoodie" not in p.parts for p in gone)
    assert clean(str(path), retain_commits=2) is None
    hist.check_hudi(retained=2)
    hist.check_lakesieve(spark, retained=2)


def test_cow_clustering_clean_and_failed_write(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "c"
    model, hist = Model(partitioned=False), History(path)
    for mode, rows in [
        ("bulk_insert", [(i, f"n{(i * 7) % 13}", 0, 0) for i in range(40)]),
        ("upsert", [(3, "z", 0, 1), (41, "y", 0, 1)]),
    ]:
        inst = write_table(
            spark, str(path), df_of(spark, rows), _opts("cow", False, mode=mode, file_groups=3)
        )
        model.apply(mode, rows)
        hist.record(inst.id, model.expected())
    with pytest.raises(WriteError, match="MERGE_ON_READ"):
        compact(spark, str(path))
    inst = cluster(spark, str(path), sort_by="name", target_file_groups=2)
    assert inst is not None
    hist.record(inst.id, model.expected())
    failed = write_failed(spark, str(path), df_of(spark, [(1, "lost", 0, 5)]), _opts("cow", False))
    assert hudi_rows(path) == model.expected()
    inst = write_table(spark, str(path), df_of(spark, [(2, "kept", 0, 5)]), _opts("cow", False))
    model.apply("upsert", [(2, "kept", 0, 5)])
    hist.record(inst.id, model.expected())
    assert not list((path / ".hoodie").glob(f"{failed.id}.*")), "the next write rolled it back"
    assert list((path / ".hoodie").glob("*.rollback"))
    hist.check_hudi()
    hist.check_lakesieve(spark)
    hist.check_changes()
    assert clean(str(path), retain_commits=1) is not None
    hist.check_hudi(retained=1)


def test_bad_input_is_refused_with_one_line(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "e"
    write_table(spark, str(path), df_of(spark, [(1, "a", 0, 0)]), _opts("mor", False))
    cases = [
        (lambda: cluster(spark, str(path), sort_by="nope"), "column 'nope'"),
        (lambda: compact(spark, str(path), file_groups=["nope-0"]), "file group 'nope-0'"),
        (lambda: clean(str(path), retain_commits=0), "retain_commits"),
        (lambda: cluster(spark, str(path), "name", target_file_groups=0), "target_file_groups"),
        (lambda: compact(spark, str(tmp_path / "none")), "no Hudi table"),
        (lambda: rollback_failed(str(tmp_path / "none")), "no Hudi table"),
    ]
    for call, message in cases:
        with pytest.raises(WriteError, match=message) as err:
            call()
        assert "\n" not in str(err.value)
    assert compact(spark, str(path)) is None, "no log files yet"


_ops = st.lists(
    st.tuples(
        st.sampled_from(["upsert", "upsert", "delete", "compact", "cluster", "fail", "clean"]),
        st.lists(st.integers(0, 40), min_size=1, max_size=12),
    ),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=30 if SLOW else 3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=_ops, table_type=st.sampled_from(["mor", "cow"]))
def test_random_service_sequences_match_the_model(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ops: list[Any], table_type: str
) -> None:
    path = tmp_path_factory.mktemp("svc") / "t"
    model, hist = Model(partitioned=True), History(path)
    first = [(i, f"a{i}", i % 2, 0) for i in range(0, 40, 3)]
    inst = write_table(
        spark,
        str(path),
        df_of(spark, first),
        _opts(table_type, True, mode="bulk_insert", file_groups=2),
    )
    model.apply("upsert", first)
    hist.record(inst.id, model.expected())
    retained: int | None = None
    for n, (op, ids) in enumerate(ops):
        rows = [(i, f"r{n}-{i}", i % 2, n) for i in ids]
        new = None
        if op in ("upsert", "delete"):
            new = write_table(
                spark, str(path), df_of(spark, rows), _opts(table_type, True, mode=op)
            )
            model.apply(op, rows)
        elif op == "compact" and table_type == "mor":
            new = compact(spark, str(path))
        elif op == "cluster":
            new = cluster(spark, str(path), sort_by="name", target_file_groups=1 + n % 2)
        elif op == "fail":
            write_failed(spark, str(path), df_of(spark, rows), _opts(table_type, True))
        elif op == "clean":
            clean(str(path), retain_commits=2)
            retained = 2
        if new is not None:
            hist.record(new.id, model.expected())
            retained = None if retained is None else retained + 1
    hist.check_hudi(retained)
    hist.check_lakesieve(spark, retained)
    if retained is None:
        hist.check_changes()
