"""Refresh of a column outside the record key from the rows stamped since the index's instant.

Random upserts (new values of the indexed non-key column, stale versions
that lose to the stored row, new records) and deletes on Hudi copy-on-write
and merge-on-read tables; after refresh and compaction the exact index must
select exactly the locations a fresh build selects, and pruned reads must
return the rows Spark SQL selects from hudi-rs' own full read.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.model import WriteOptions
from lakesieve.plugins.hudi import instant_touches, tables
from lakesieve.plugins.hudi.changes import compute_changes
from lakesieve.plugins.hudi.writer.table_config import LATEST_PAYLOAD
from lakesieve.table import open as open_table
from lakesieve.table import write

from tests.tables import (
    CHAINS,
    check_compacted_exact,
    check_refreshed_k,
    df_of,
    k_ops,
    k_predicates,
    rows_with_random_k,
)

OPS = k_ops(["upsert", "upsert", "delete"])
PREDICATE = k_predicates()


def _write(spark: Any, path: Path, mode: str, rows: list[dict[str, Any]], table_type: str) -> None:
    options = WriteOptions(
        mode=mode,
        record_key=("id",),
        precombine="version",
        table_type=table_type,
        file_groups=4 if mode == "bulk_insert" else None,
    )
    write(path, df_of(spark, rows), format="hudi", options=options, spark=spark)


def _refreshed_equals_fresh(
    spark: Any, table_type: str, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    work = Path(tempfile.mkdtemp(prefix="lakesieve-stamped-"))
    try:
        path = work / "t"
        _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 180)), 1), table_type)
        table = open_table(path)
        table.build_index("k", type="exact", name="k_exact", spark=spark)
        table.build_index("k", type="sieve", name="k_sieve", spark=spark)
        for mode, ids, seed in ops:
            _write(spark, path, mode, rows_with_random_k(ids, seed), table_type)
        results = {r.index: r for r in table.refresh(spark=spark, policy=CHAINS)}
        refreshed = results["k_exact"]
        assert refreshed.action == "delta", refreshed
        if all(mode == "upsert" for mode, _, _ in ops):
            # no record left any file group: every touched location is read from its stamps
            assert refreshed.locations_stamped > 0, refreshed
            assert refreshed.locations_stamped == refreshed.locations_read, refreshed
            if table_type == "mor":  # every row written since lies in log files
                changes = table.view.fmt.changes(table.timeline()[0].id, table.timeline()[-1].id)
                assert changes.written_in_logs == changes.stamped, changes
        check_refreshed_k(spark, table, path, predicates, ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("table_type", ["cow", "mor"])
@settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(ops=OPS, predicates=st.lists(PREDICATE, min_size=4, max_size=8))
def test_refreshed_index_equals_a_fresh_build(
    spark: Any, table_type: str, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    """Refreshed from commit-time stamps, the index answers as a fresh build (CI: two draws)."""
    _refreshed_equals_fresh(spark, table_type, ops, predicates)


@pytest.mark.long
@pytest.mark.parametrize("table_type", ["cow", "mor"])
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(ops=OPS, predicates=st.lists(PREDICATE, min_size=4, max_size=8))
def test_refreshed_index_equals_a_fresh_build_more_examples(
    spark: Any, table_type: str, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    """The long tier's draws of :func:`test_refreshed_index_equals_a_fresh_build`."""
    _refreshed_equals_fresh(spark, table_type, ops, predicates)


# --------------------------------------------------------------------------- metadata


def _commit(operation: str, stats: list[dict[str, Any]], replaced: list[str] = ()) -> dict:
    meta: dict[str, Any] = {
        "partitionToWriteStats": {"p": stats},
        "operationType": operation,
    }
    if replaced:
        meta["partitionToReplaceFileIds"] = {"p": list(replaced)}
    return meta


def test_touches_keep_keys_only_without_recorded_deletes() -> None:
    stats = [
        {"fileId": "a", "prevCommit": "001", "numInserts": 3, "numDeletes": 0},
        {"fileId": "b", "prevCommit": "001", "numInserts": 0, "numDeletes": 2},
        {"fileId": "c", "prevCommit": "001", "numInserts": 0},  # deletes not recorded
        {"fileId": "d", "prevCommit": "null", "numInserts": 5, "numDeletes": 0},
    ]
    touches = instant_touches.touches_of_commit(_commit("UPSERT", stats))
    assert touches.kept_keys == {"p/a", "p/d"}
    assert not touches.moves_rows


def test_touches_mark_log_appends() -> None:
    stats = [
        {"fileId": "a", "prevCommit": "001", "path": "p/.a_20240101000000001.log.2_0-1-0"},
        {"fileId": "b", "prevCommit": "001", "path": "p/b_0-1-0_20240101000000002.parquet"},
        {"fileId": "c", "prevCommit": "001", "path": "p/.c_20240101000000001.log.1_0-1-0"},
        {"fileId": "c", "prevCommit": "001", "path": "p/c_0-1-0_20240101000000002.parquet"},
        {"fileId": "d", "prevCommit": "001"},  # no path: not known to be a log append
    ]
    assert instant_touches.touches_of_commit(_commit("UPSERT", stats)).logged == {"p/a"}


@pytest.mark.parametrize(
    ("opts", "version", "expected"),
    [
        ({}, 6, True),
        ({"hoodie.table.precombine.field": "ts"}, 6, True),
        ({"hoodie.compaction.payload.class": LATEST_PAYLOAD}, 6, True),
        (
            {
                "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
            },
            6,
            False,
        ),
        (
            {
                "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
                "hoodie.table.precombine.field": "ts",
            },
            8,
            True,
        ),
        ({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}, 8, False),
        ({"hoodie.record.merge.mode": "CUSTOM"}, 8, False),
        ({}, 8, True),
        ({"hoodie.table.ordering.fields": "ts"}, 8, False),
    ],
)
def test_commit_time_merging_from_table_properties(
    opts: dict[str, str], version: int, expected: bool
) -> None:
    assert tables.merges_by_commit_time(opts, version) is expected


def test_touches_of_clustering_move_rows() -> None:
    stats = [{"fileId": "n", "prevCommit": "null", "numInserts": 9, "numDeletes": 0}]
    assert instant_touches.touches_of_commit(_commit("CLUSTER", stats, ["a", "b"])).moves_rows
    assert instant_touches.touches_of_commit(_commit("INSERT_OVERWRITE", stats)).moves_rows


def test_changes_stamp_upserts_but_not_deletes_or_clustering(spark: Any, tmp_path: Path) -> None:
    from lakesieve.model import TableRef
    from lakesieve.plugins.hudi import services as maintenance

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 120)), 1), "mor")
    table = open_table(path)
    first = table.timeline()[-1].id
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 120, 7)), 2), "mor")
    upserted = table.timeline()[-1].id
    ref = TableRef(str(path), "hudi")
    changes = compute_changes(ref, first, upserted)
    assert changes.stamped and changes.stamped == changes.touched
    assert changes.record_id_column == "_hoodie_record_key"
    assert changes.write_time_column == "_hoodie_commit_time"
    assert changes.record_id_fields == ("id",)  # an integer field of a simple key

    _write(spark, path, "delete", rows_with_random_k([1, 2], 3), "mor")
    deleted = table.timeline()[-1].id
    after_delete = compute_changes(ref, upserted, deleted)
    assert after_delete.touched and not (after_delete.touched & after_delete.stamped)
    assert compute_changes(ref, first, deleted).stamped == (changes.touched - after_delete.touched)

    maintenance.cluster(spark, str(path), sort_by="d")
    clustered = table.timeline()[-1].id
    assert not compute_changes(ref, deleted, clustered).stamped
    assert not compute_changes(ref, first, clustered).stamped
    # backwards (time travel) is never stamped
    assert not compute_changes(ref, upserted, first).stamped


def test_record_key_fields_identify_records_only_when_integers_of_known_key_generators() -> None:
    from dataclasses import replace

    from lakesieve.plugins.hudi.writer import table_config as cfg

    schema = pa.schema(
        [("a", pa.int64()), ("b", pa.int32()), ("s", pa.string()), ("f", pa.float64())]
    )
    config = tables.TableConfig(
        6, "COPY_ON_WRITE", 1, ".hoodie", ".hoodie/archived", (), None, False, True
    )
    for keygen in (cfg.SIMPLE_KEYGEN, cfg.COMPLEX_KEYGEN, cfg.NONPARTITIONED_KEYGEN):
        keyed = replace(config, keygen=keygen, record_key_fields=("a", "b"))
        assert tables.record_id_fields(schema, keyed) == ("a", "b")
        for fields in (("a", "s"), ("f",), ("missing",), ()):
            assert tables.record_id_fields(schema, replace(keyed, record_key_fields=fields)) == ()
    custom = replace(
        config, keygen="org.apache.hudi.keygen.CustomKeyGenerator", record_key_fields=("a",)
    )
    assert tables.record_id_fields(schema, custom) == ()
    assert tables.record_id_fields(schema, replace(custom, keygen="")) == ()


def test_unreadable_stamps_fall_back_to_whole_reads(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the narrow read degrades to reading the locations whole, with a warning."""
    from lakesieve.errors import LakesieveWarning
    from lakesieve.maintenance.refresh import plan as refresh_plan

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("write times unreadable")

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 120)), 1), "cow")
    table = open_table(path)
    table.build_index("k", type="exact", name="k_exact", spark=spark)
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 120, 5)), 2), "cow")
    monkeypatch.setattr(refresh_plan, "stamped_delta", broken)
    with pytest.warns(LakesieveWarning, match="write times unreadable"):
        result = table.refresh(spark=spark, policy=CHAINS)[0]
    assert result.action == "delta" and result.locations_stamped == 0, result
    assert result.locations_read > 0
    monkeypatch.undo()
    check_compacted_exact(
        spark, table, path, ("k = 3", "k between 10 and 14", "k is null", "k > 30")
    )


def test_rows_written_since_start_are_read_from_log_files_alone(spark: Any, tmp_path: Path) -> None:
    """Merge-on-read by commit time: the logs of a slice hold every row stamped since ``start``.

    The writes carry random precombine values, so later log records often
    hold lower ones: they still replace the base file's version.

    Checked against hudi-rs: per location, the rows of its whole slice at
    ``end`` stamped after ``start`` equal those of its log files read without
    the base file; then a refresh over two delta commits (one more before
    ``start``) equals a fresh build.
    """
    import pyarrow.compute as pc
    from lakesieve.maintenance.refresh.plan import logs_only, plan_delta
    from lakesieve.plugins.hudi.unit_reader import read_unit_batches

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 160)), 1), "mor")
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 160, 3)), 2), "mor")
    table = open_table(path)
    start = table.timeline()[-1]
    table.build_index("k", type="exact", name="k_exact", spark=spark)
    _write(spark, path, "upsert", rows_with_random_k(list(range(1, 160, 4)), 3), "mor")
    _write(spark, path, "upsert", rows_with_random_k([*range(2, 160, 9), 170, 171], 4), "mor")
    end = table.timeline()[-1]
    changes = table.view.fmt.changes(start.id, end.id)
    assert changes.written_in_logs and changes.written_in_logs == changes.stamped, changes

    plan = plan_delta(table.states, "k", start, end)
    narrowed = {u.location: u for u in plan.stamped_new_units}
    whole = {u.location: u for u in table.snapshot(end.id).units}
    assert any(u.base_file is None and whole[loc].base_file for loc, u in narrowed.items())
    columns = ["_hoodie_record_key", "_hoodie_commit_time", "k"]

    def stamped_after(base: str | None, logs: tuple[str, ...]) -> list[tuple[Any, ...]]:
        batches = list(read_unit_batches(str(path), {}, base, logs, end.id, None, columns))
        rows = []
        for b in batches:
            kept = b.filter(pc.greater(b.column(1), start.id))
            rows.extend(zip(*(kept.column(i).to_pylist() for i in range(3)), strict=True))
        return sorted(rows, key=repr)

    for loc, unit in narrowed.items():
        full = whole[loc]
        assert stamped_after(unit.base_file, unit.log_files) == stamped_after(
            full.base_file, full.log_files
        ), loc
    old = {u.location: u for u in table.snapshot(start.id).units}
    moved = dict(old)
    moved[next(iter(narrowed))] = replace_base(old[next(iter(narrowed))])
    # a base file that changed since ``start`` is never narrowed
    kept = logs_only(tuple(moved.values()), tuple(whole.values()), changes.written_in_logs)
    assert next(u for u in kept if u.location == next(iter(narrowed))).base_file is not None

    result = table.refresh(spark=spark, policy=CHAINS)[0]
    assert result.action == "delta" and result.locations_stamped > 0, result
    from_logs = sum(1 for u in narrowed.values() if u.base_file is None)
    assert from_logs > 0 and result.locations_from_logs == from_logs, result
    check_compacted_exact(
        spark, table, path, ("k = 3", "k between 10 and 14", "k is null", "k > 30")
    )


def replace_base(unit: Any) -> Any:
    """``unit`` with another base file name (as if compacted since)."""
    from dataclasses import replace

    return replace(unit, base_file=f"{unit.base_file}.other")


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_stamped_delta_equals_the_difference_of_hudi_rs_snapshots(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    """Per (k, location): rows at ``end`` minus rows at ``start``, as hudi-rs reads them.

    Also with at most 3 record ids held per task, so that each location's
    ``start`` side is read once per chunk of changed records.
    """
    from collections import Counter

    from lakesieve.maintenance.refresh.plan import plan_delta
    from lakesieve.maintenance.refresh.stamped import paired_delta, stamped_delta
    from lakesieve.model import TableRef
    from pyspark.sql import functions as F

    from tests.tables import hudi_rs_rows, rows_by_location

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 150)), 1), table_type)
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 150, 4)), 2), table_type)
    table = open_table(path)
    start = table.timeline()[-1]
    _write(spark, path, "upsert", rows_with_random_k([*range(1, 150, 3), 160, 161], 3), table_type)
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 150, 7)), 4), table_type)
    end = table.timeline()[-1]

    def counts(as_of: str) -> Counter[tuple[Any, str]]:
        out: Counter[tuple[Any, str]] = Counter()
        for loc, rows in rows_by_location(table, as_of).items():
            out.update((k, loc) for k in rows.column("k").to_pylist())
        return out

    want = counts(end.id)
    want.subtract(counts(start.id))
    expected = sorted([(k, loc, n) for (k, loc), n in want.items() if n], key=repr)

    plan = plan_delta(table.states, "k", start, end)
    assert plan.stamped_new_units and not plan.new_units, plan
    fmt = table.view.fmt
    key_type = fmt.read(spark, plan.stamped_new_units[:1], end.id, False).schema["k"].dataType
    names = (plan.record_id_column, plan.write_time_column, "k")
    ref = TableRef(fmt.path, fmt.name, dict(fmt.options))
    # the integer record key field matches records as the record key does
    assert plan.record_id_fields == ("id",), plan
    for pair_ids, id_fields in ((3, ()), (10**6, plan.record_id_fields)):
        frame = paired_delta(
            spark,
            ref,
            plan.stamped_old_units,
            plan.stamped_new_units,
            start.id,
            end.id,
            names,  # type: ignore[arg-type]
            key_type,
            pair_ids,
            id_fields=id_fields,
        )
        summed = frame.groupBy("key", "location").agg(F.sum("count").alias("n")).where("n != 0")
        got = [(r["key"], r["location"], r["n"]) for r in summed.collect()]
        assert sorted(got, key=repr) == expected, (pair_ids, id_fields)
        # an integer key is summed in the tasks: the frame is the delta itself
        rows = [(r["key"], r["location"], r["count"]) for r in frame.collect()]
        assert sorted(rows, key=repr) == expected, (pair_ids, id_fields)
    if table_type == "cow":
        # both sides are whole base files: compared row by row, only ``k`` read; the
        # writer keeps records in place, so only the changed rows are read out
        from lakesieve.maintenance.refresh.stamped import positional_rows, whole_files
        from pyspark.sql.pandas.types import to_arrow_type

        arrow_type = to_arrow_type(key_type, timezone="UTC")
        old_of = {u.location: u for u in plan.stamped_old_units}
        positional: Counter[tuple[Any, str]] = Counter()
        read_out = 0
        for unit in plan.stamped_new_units:
            before = old_of[unit.location]
            assert whole_files(before) and whole_files(unit), unit
            rows = positional_rows(fmt, before, unit, start.id, end.id, "k", arrow_type)
            for keys, sign in rows:
                read_out += len(keys)
                for k in keys.to_pylist():
                    positional[(k, unit.location)] += sign
        got = sorted([(k, loc, n) for (k, loc), n in positional.items() if n], key=repr)
        assert got == expected
        assert plan.stamped_rows is not None and 0 < read_out <= 2 * plan.stamped_rows
    # the metadata's rows written bound the rows stamped after ``start`` at ``end``
    commit_times = hudi_rs_rows(path, end.id).column("_hoodie_commit_time").to_pylist()
    stamped_now = sum(1 for t in commit_times if t > start.id)
    assert plan.stamped_rows is not None and plan.stamped_rows >= stamped_now > 8, plan
    # on the driver when the metadata bounds it; in Spark when it does not, or
    # when the tasks find more rows than it said (a bound of 0)
    cases = [
        (plan.stamped_rows, 10**6, True),
        (None, 10**6, False),
        (plan.stamped_rows, 1, False),
        (0, 2, False),
    ]
    for rows_written, collect_rows, on_driver in cases:
        frames, held, collected = stamped_delta(
            spark,
            fmt,
            plan.stamped_old_units,
            plan.stamped_new_units,
            start.id,
            end.id,
            *names,  # type: ignore[misc]
            key_type,
            rows_written,
            collect_rows=collect_rows,
        )
        try:
            assert (collected is not None) == on_driver and bool(frames) != on_driver
            got_rows = collected.to_pylist() if collected is not None else frames[0].collect()
            got = [(r["key"], r["location"], r["count"]) for r in got_rows]
            assert sorted(got, key=repr) == expected, (rows_written, collect_rows)
        finally:
            if held is not None:
                held.unpersist()


_VALUES = st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=40)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    old=_VALUES,
    new=_VALUES,
    splits=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    as_text=st.booleans(),
)
def test_positional_rows_are_the_difference_of_two_files(
    old: list[int | None], new: list[int | None], splits: tuple[int, int], as_text: bool
) -> None:
    """Two versions of a location compared row by row give exactly their multiset difference.

    Whatever the order of either file and however its reader splits it into
    batches; positions holding the same value (or null on both sides) are
    left out.
    """
    from collections import Counter

    from lakesieve.maintenance.refresh.stamped import positional_rows
    from lakesieve.model import ReadUnit

    key_type = pa.string() if as_text else pa.int64()

    def typed(values: list[int | None]) -> list[Any]:
        return [None if v is None else str(v) for v in values] if as_text else values

    class _Files:
        """A format reading unit ``old`` or ``new`` as ``k``, ``split`` rows per batch."""

        def read_unit(self, unit: ReadUnit, instant: str, columns: list[str]) -> Any:
            values, split = (old, splits[0]) if unit.base_file == "old" else (new, splits[1])
            assert columns == ["k"] and instant == ("1" if unit.base_file == "old" else "2")
            for i in range(0, max(1, len(values)), split):
                yield pa.record_batch({"k": pa.array(typed(values[i : i + split]), key_type)})

    rows = list(
        positional_rows(
            _Files(),  # type: ignore[arg-type]
            ReadUnit("loc", "old"),
            ReadUnit("loc", "new"),
            "1",
            "2",
            "k",
            key_type,
        )
    )
    got: Counter[Any] = Counter()
    for keys, sign in rows:
        for k in keys.to_pylist():
            got[k] += sign
    want = Counter(typed(new))
    want.subtract(Counter(typed(old)))
    assert {k: n for k, n in got.items() if n} == {k: n for k, n in want.items() if n}
    same = sum(1 for a, b in zip(old, new, strict=False) if a == b)
    assert sum(len(keys) for keys, _ in rows) == len(old) + len(new) - 2 * same


_ID_PART = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-2, 2))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    rows=st.lists(st.tuples(_ID_PART, _ID_PART), min_size=1, max_size=12),
    narrow=st.booleans(),
)
def test_record_ids_are_equal_exactly_when_the_fields_are(
    rows: list[tuple[int | None, int | None]], narrow: bool
) -> None:
    """Packed integer fields (nulls alike) match like the tuples; one field stays an integer."""
    from lakesieve.maintenance.refresh.stamped import record_ids

    if narrow:  # an int32 field beside an int64 one
        rows = [(a, None if b is None else b % 2**31) for a, b in rows]
    second = pa.array([b for _, b in rows], pa.int32() if narrow else pa.int64())
    batch = pa.record_batch({"a": pa.array([a for a, _ in rows], pa.int64()), "b": second})
    packed = record_ids(batch, ("a", "b")).to_pylist()
    for i, j in itertools.product(range(len(rows)), repeat=2):
        assert (packed[i] == packed[j]) == (rows[i] == rows[j]), (rows[i], rows[j])
    found = pc.is_in(
        record_ids(batch, ("a", "b")), value_set=record_ids(batch.slice(0, 1), ("a", "b"))
    )
    assert found.to_pylist() == [r == rows[0] for r in rows]
    one = record_ids(batch, ("b",))
    assert one.type == pa.int64() and one.to_pylist() == [b for _, b in rows]


def test_repeated_record_ids_fail_the_stamped_read() -> None:
    """Fields that do not identify records (a repeated id on either side) fail instead of miscounting."""
    from lakesieve.maintenance.refresh.stamped import location_rows
    from lakesieve.model import ReadUnit

    sides = {
        "old": {"id": [1, 1, 2], "t": ["1", "1", "1"], "k": [5, 6, 7]},
        "new": {"id": [1, 2], "t": ["2", "2"], "k": [8, 9]},
        "twice": {"id": [2, 2], "t": ["2", "2"], "k": [8, 9]},
    }

    class _Files:
        def read_unit(self, unit: ReadUnit, instant: str, columns: list[str]) -> Any:
            yield pa.record_batch({c: sides[str(unit.base_file)][c] for c in columns})

    for old, new in (("old", "new"), ("new", "twice")):
        rows = location_rows(
            _Files(),  # type: ignore[arg-type]
            ReadUnit("loc", old, log_files=("log",)),
            ReadUnit("loc", new, log_files=("log",)),
            "1",
            "2",
            ("_hoodie_record_key", "t", "k"),
            pa.int64(),
            10,
            ("id",),
        )
        with pytest.raises(ValueError, match="repeat within a location"):
            list(rows)


def _signed_keys() -> st.SearchStrategy[list[tuple[int | None, int]]]:
    return st.lists(
        st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.sampled_from([1, -1])),
        max_size=60,
    )


@settings(max_examples=200, deadline=None, derandomize=True)
@given(rows=_signed_keys(), bound=st.integers(1, 8), chunk=st.integers(1, 7))
def test_location_sums_equal_the_sums_of_their_rows(
    rows: list[tuple[int | None, int]], bound: int, chunk: int
) -> None:
    """A task's running sums, folded every few rows, equal each key's plain sum (zeros dropped)."""
    from collections import Counter

    import pyarrow as pa
    from lakesieve.maintenance.refresh.stamped import LocationSums

    sums = LocationSums(pa.int64(), bound)
    for i in range(0, len(rows), chunk):
        part = rows[i : i + chunk]
        for sign in (1, -1):
            keys = [k for k, s in part if s == sign]
            if keys:
                sums.add(pa.array(keys, pa.int64()), sign)
    want: Counter[int | None] = Counter()
    for k, s in rows:
        want[k] += s
    keys, counts = sums.result()
    got = dict(zip(keys.to_pylist(), counts.to_pylist(), strict=True))
    assert len(got) == len(keys)  # one row per key, nulls included
    assert got == {k: n for k, n in want.items() if n}


def test_units_are_dealt_by_size_into_like_slices() -> None:
    """Every unit once; each of Spark's contiguous slices gets a like share of the bytes."""
    from lakesieve.model import ReadUnit
    from lakesieve.spark.session import dealt_for_slices

    def size(u: ReadUnit) -> int:
        return u.size_bytes

    sizes = [1000 * (i % 7 + 1) for i in range(64)]
    units = [
        ReadUnit(location=f"loc-{i:02d}", base_file=None, size_bytes=s) for i, s in enumerate(sizes)
    ]
    dealt = dealt_for_slices(units, 4, size)
    assert sorted(u.location for u in dealt) == sorted(u.location for u in units)
    shares = [sum(u.size_bytes for u in dealt[i * 16 : (i + 1) * 16]) for i in range(4)]
    assert max(shares) - min(shares) <= max(sizes), shares
    assert dealt_for_slices(units[:3], 8, size) == sorted(units[:3], key=lambda u: -u.size_bytes)


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_stamped_double_keys_are_summed_by_spark_sql(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    """A double column's stamped delta sums -0.0 with 0.0 and NaN with NaN, as Spark SQL does.

    The truth is Spark SQL's ``groupBy`` over hudi-rs' own rows at both
    instants, signed per location.
    """
    import math

    import pyarrow as pa
    from lakesieve.maintenance.refresh.plan import plan_delta, summed_frame
    from pyspark.sql import functions as F

    from tests.tables import rows_by_location

    specials = [0.0, -0.0, math.nan, 1.5, None]

    def rows(ids: list[int], seed: int) -> list[dict[str, Any]]:
        out = rows_with_random_k(ids, seed)
        for i, row in enumerate(out):
            row["amount"] = specials[(row["id"] + seed + i) % len(specials)]
        return out

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows(list(range(0, 90)), 1), table_type)
    table = open_table(path)
    start = table.timeline()[-1]
    _write(spark, path, "upsert", rows(list(range(0, 90, 2)), 2), table_type)
    _write(spark, path, "upsert", rows([*range(1, 90, 3), 95], 3), table_type)
    end = table.timeline()[-1]

    def signed(as_of: str, sign: int) -> list[pa.Table]:
        return [
            pa.table(
                {
                    "key": t.column("amount").cast(pa.float64()),
                    "location": pa.array([loc] * t.num_rows, pa.string()),
                    "count": pa.array([sign] * t.num_rows, pa.int64()),
                }
            )
            for loc, t in rows_by_location(table, as_of).items()
        ]

    both = pa.concat_tables(signed(end.id, 1) + signed(start.id, -1))
    truth = (
        spark.createDataFrame(both)
        .groupBy("key", "location")
        .agg(F.sum("count").alias("count"))
        .where("count != 0")
    )

    def norm(frame: Any) -> list[tuple[str, str, int]]:
        out = []
        for r in frame.collect():
            k = r["key"]
            key = "null" if k is None else "nan" if math.isnan(k) else repr(k + 0.0)
            out.append((key, r["location"], int(r["count"])))
        return sorted(out)

    plan = plan_delta(table.states, "amount", start, end)
    assert plan.stamped_new_units and not plan.new_units, plan
    rows, held = summed_frame(table.states, spark, "amount", start, end, plan)
    try:
        assert rows is not None and rows.frame is not None  # doubles are summed by Spark
        assert norm(rows.frame) == norm(truth)
        assert {k for k, _, _ in norm(truth)} >= {"0.0", "nan"}  # the cases are exercised
    finally:
        if held is not None:
            held.unpersist()


def test_touches_sum_rows_written_where_every_stat_says() -> None:
    """Rows written per location: updates plus inserts, only where every write stat records both."""
    stats = [
        {"fileId": "a", "prevCommit": "001", "numUpdateWrites": 3, "numInserts": 2},
        {"fileId": "a", "prevCommit": "001", "numUpdateWrites": 1, "numInserts": 0},
        {"fileId": "b", "prevCommit": "001", "numUpdateWrites": 4},  # inserts not recorded
        {"fileId": "c", "prevCommit": "null", "numUpdateWrites": 0, "numInserts": 7},
        {"fileId": "d", "prevCommit": "001", "numUpdateWrites": 1, "numInserts": 1},
    ]
    touches = instant_touches.touches_of_commit(_commit("UPSERT", stats, replaced=["d"]))
    assert touches.written == {"p/a": 6, "p/c": 7}
