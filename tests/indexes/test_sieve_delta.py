"""Folding deltas into a Sieve index: exact at block granularity, never a false negative.

Most properties run in-process (:func:`apply_delta_local`, the same
classification and merge Spark runs) against brute force over random
relations, layouts, parameters and deltas; the Spark tests check that the
Spark path gives the same index and handles the framework's frames.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import os
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.indexes.sieve import build_local, load_index, plugin
from lakesieve.indexes.sieve.delta import (
    KIND_BLOCK,
    KIND_NEW,
    KIND_SHARED,
    Directory,
    apply_delta,
    apply_delta_local,
)
from lakesieve.indexes.sieve.lookup import SieveIndex
from lakesieve.keys.mapping import map_key
from lakesieve.model import BuiltIndex, KeyQuery
from lakesieve.testing.index_contract import (
    draw_delta,
    key_queries,
    key_values,
    spark_semantics_key,
    standard_queries,
    true_locations,
)

EXAMPLES = int(os.environ.get("SIEVE_DELTA_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

Row = tuple[Any, str]
Delta = list[tuple[Any, str, int]]

KEY_TYPES = ("bigint", "string", "date", "decimal(10,2)", "double")
ARROW: dict[str, pa.DataType] = {
    "bigint": pa.int64(),
    "string": pa.string(),
    "date": pa.date32(),
    "decimal(10,2)": pa.decimal128(10, 2),
    "double": pa.float64(),
}


# ---------------------------------------------------------------------------
# building and applying
# ---------------------------------------------------------------------------


def _values(key_type: str) -> st.SearchStrategy[Any]:
    if key_type == "bigint":  # wider than the kit's so that runs form
        return st.integers(-60, 60) | st.sampled_from([-(2**63), 2**63 - 1])
    return key_values(key_type)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[Row], dict[str, Any], int]:
    """A key type, ``(key, location)`` rows laid out in runs or at random, parameters, partitions."""
    key_type = draw(st.sampled_from(KEY_TYPES))
    values = draw(st.lists(_values(key_type), max_size=80))
    locs = [f"part={i % 2}/fg-{i}" for i in range(draw(st.integers(1, 5)))]
    rows: list[Row] = []
    if draw(st.booleans()):
        ordered = sorted(values, key=spark_semantics_key)
        i = 0
        while i < len(ordered):
            run = draw(st.integers(1, 15))
            loc = draw(st.sampled_from(locs))
            for v in ordered[i : i + run]:
                rows.append((v, loc))
                if draw(st.integers(0, 9)) == 0:
                    rows.append((v, draw(st.sampled_from(locs))))
            i += run
    else:
        rows = [(v, draw(st.sampled_from(locs))) for v in values]
    rows += [(None, draw(st.sampled_from(locs))) for _ in range(draw(st.integers(0, 2)))]
    params = {
        "min_run_keys": draw(st.integers(1, 6)),
        "min_keys_per_block": draw(st.integers(1, 6)),
        "max_segment_keys": draw(st.integers(1, 40)),
        "target_fpr": draw(st.sampled_from([0.0, 0.05, 0.5])),
        "budget_entries": draw(st.sampled_from([0, 8, 16_384])),
    }
    return key_type, rows, params, draw(st.integers(1, 3))


def _arrow(key_type: str, values: list[Any]) -> pa.Array:
    return pa.array(values, ARROW[key_type])


def _build(key_type: str, rows: list[Row], params: dict[str, Any], parts: int = 1) -> SieveIndex:
    built = build_local(
        _arrow(key_type, [k for k, _ in rows]), [loc for _, loc in rows], key_type, params, parts
    )
    return load_index(_ipc(built))


def _ipc(built: BuiltIndex) -> BuiltIndex:
    """Through Arrow IPC bytes and JSON-able meta, as the index store keeps it."""
    files = {}
    for name, table in built.files.items():
        sink = io.BytesIO()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        files[name] = pa.ipc.open_file(pa.py_buffer(sink.getvalue())).read_all()
    return BuiltIndex(files=files, meta=dict(built.meta))


def _apply(index: SieveIndex, key_type: str, delta: Delta) -> SieveIndex:
    built = apply_delta_local(
        index,
        _arrow(key_type, [k for k, _, _ in delta]),
        [loc for _, loc, _ in delta],
        [n for _, _, n in delta],
    )
    return load_index(_ipc(built))


def _answers(index: SieveIndex, queries: list[KeyQuery]) -> list[frozenset[str] | None]:
    return [index.lookup(q).locations for q in queries]


def _assert_covers(index: SieveIndex, rows: list[Row], queries: list[KeyQuery]) -> None:
    for q in queries:
        got = index.lookup(q).locations
        truth = true_locations(rows, q)
        assert got is not None, q
        assert truth <= got, (q, sorted(truth - got))
        if q.kind == "is_null":
            assert got == truth, q


def _queries(data: st.DataObject, key_type: str, rows: list[Row]) -> list[KeyQuery]:
    drawn = data.draw(st.lists(key_queries(_values(key_type), rows), min_size=10, max_size=10))
    points = [KeyQuery("points", (k,)) for k, _ in rows if k is not None]
    return standard_queries(rows) + points + drawn


def _mapped(index: SieveIndex, keys: list[Any]) -> np.ndarray:
    return np.array([map_key(k, index.key_type) for k in keys], dtype=np.int64)


def _kinds(index: SieveIndex, keys: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    keys = [k for k in keys if k is not None]
    return Directory.of(index).classify(_mapped(index, keys))


def _block_sets(index: SieveIndex) -> dict[int, frozenset[str]]:
    """Location names per block id (a block's answer)."""
    out = {}
    for b in range(len(index.block_first_entry) - 1):
        ids = index.entry_loc[index.block_first_entry[b] : index.block_first_entry[b + 1]]
        out[b] = frozenset(index.locations[ids].tolist())
    return out


def _segment_sets(index: SieveIndex) -> Counter[tuple[int, int, tuple[frozenset[str], ...]]]:
    """Every segment's ``(min key, max key, block answers)``."""
    blocks = _block_sets(index)
    out: Counter[tuple[int, int, tuple[frozenset[str], ...]]] = Counter()
    for lo, hi, first, n in zip(
        index.seg_min.tolist(),
        index.seg_max.tolist(),
        index.seg_first_block.tolist(),
        index.seg_blocks.tolist(),
        strict=True,
    ):
        out[(lo, hi, tuple(blocks[b] for b in range(first, first + n)))] += 1
    return out


def _new_keys_per_gap(index: SieveIndex, delta: Delta) -> int:
    """Most new distinct mapped keys any gap of ``index`` receives from ``delta``'s additions."""
    net: Counter[tuple[int, str]] = Counter()
    for k, loc, n in delta:
        if k is not None:
            net[(map_key(k, index.key_type), loc)] += n
    added = sorted({m for (m, _), n in net.items() if n > 0})
    if not added:
        return 0
    kind, gap = Directory.of(index).classify(np.array(added, np.int64))
    gaps = gap[kind == KIND_NEW]
    return int(np.bincount(gaps - gaps.min()).max()) if len(gaps) else 0


# ---------------------------------------------------------------------------
# properties, in-process
# ---------------------------------------------------------------------------


@SETTINGS
@given(cases(), st.data())
def test_delta_answers_hold_the_truth(
    case: tuple[str, list[Row], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, parts = case
    index = _build(key_type, rows, params, parts)
    delta, after = draw_delta(data, _values(key_type), rows)
    updated = _apply(index, key_type, delta)
    _assert_covers(updated, after, _queries(data, key_type, after))
    # per-location totals stay exact; locations without rows leave the list
    truth = Counter(loc for _, loc in after)
    got = dict(zip(updated.locations.tolist(), updated.location_rows.tolist(), strict=True))
    assert got == dict(truth)
    assert updated.meta["rows"] == len(after)
    assert updated.meta["unmatched_removal_rows"] == 0


@SETTINGS
@given(cases(), st.data())
def test_empty_and_net_zero_deltas_change_no_answer(
    case: tuple[str, list[Row], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, parts = case
    index = _build(key_type, rows, params, parts)
    queries = _queries(data, key_type, rows)
    before = _answers(index, queries)
    assert _answers(_apply(index, key_type, []), queries) == before

    # rows moved between keys of one block, and updates that keep their key
    present = sorted({(k, loc) for k, loc in rows if k is not None}, key=repr)
    assume(present)
    kind, block = _kinds(index, [k for k, _ in present])
    one = [(p, int(b)) for p, kd, b in zip(present, kind, block, strict=True) if kd == KIND_BLOCK]
    assume(one)
    moves = data.draw(st.lists(st.sampled_from(one), min_size=1, max_size=4, unique=True))
    candidates = data.draw(st.lists(_values(key_type), min_size=8, max_size=8))
    c_kind, c_block = _kinds(index, candidates)
    delta: Delta = []
    for (key, loc), b in moves:
        same = [
            c
            for c, kd, cb in zip(candidates, c_kind, c_block, strict=True)
            if kd == KIND_BLOCK and cb == b
        ]
        target = same[0] if same else key
        delta += [(key, loc, -1), (target, loc, 1)]
    moved = Counter(rows)
    for k, loc, n in delta:
        moved[(k, loc)] += n
    after = [pair for pair, n in moved.items() for _ in range(n)]
    updated = _apply(index, key_type, delta)
    assert _answers(updated, queries) == before
    _assert_covers(updated, after, standard_queries(after))


@SETTINGS
@given(cases(), st.data())
def test_layout_keeping_additions_add_no_location(
    case: tuple[str, list[Row], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, parts = case
    index = _build(key_type, rows, params, parts)
    keyed = [(k, loc) for k, loc in rows if k is not None]
    assume(keyed)
    picks = data.draw(st.lists(st.sampled_from(keyed), min_size=1, max_size=6))
    # the picked keys' own locations, and any key of a block at a location the block holds
    delta: Delta = [(k, loc, data.draw(st.integers(1, 3))) for k, loc in picks]
    others = data.draw(st.lists(_values(key_type), min_size=6, max_size=6))
    o_kind, o_block = _kinds(index, others)
    blocks = _block_sets(index)
    for value, kd, b in zip(others, o_kind, o_block, strict=True):
        if kd == KIND_BLOCK and blocks[int(b)]:
            delta.append((value, sorted(blocks[int(b)])[0], 1))
    queries = _queries(data, key_type, rows)
    updated = _apply(index, key_type, delta)
    assert _answers(updated, queries) == _answers(index, queries)
    assert _segment_sets(updated) == _segment_sets(index)


@SETTINGS
@given(cases(), st.data())
def test_removals_that_empty_a_block_of_a_location_drop_it(
    case: tuple[str, list[Row], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, parts = case
    index = _build(key_type, rows, params, parts)
    keyed = [(k, loc) for k, loc in rows if k is not None]
    assume(keyed)
    kind, block = _kinds(index, [k for k, _ in keyed])
    key, loc = data.draw(st.sampled_from(keyed))
    b = int(block[keyed.index((key, loc))])
    assume(kind[keyed.index((key, loc))] == KIND_BLOCK)
    # every row at ``loc`` of the keys counted in block ``b``
    in_b = [
        (k, lc)
        for (k, lc), kd, kb in zip(keyed, kind, block, strict=True)
        if lc == loc and kd == KIND_BLOCK and kb == b
    ]
    delta: Delta = [(k, lc, -1) for k, lc in in_b]
    after = list(rows)
    for pair in in_b:
        after.remove(pair)
    # the block's count of ``loc`` came from those keys alone unless a shared key adds to it
    shared_here = any(
        lc == loc and kd == KIND_SHARED for (_, lc), kd in zip(keyed, kind, strict=True)
    )
    updated = _apply(index, key_type, delta)
    got = updated.lookup(KeyQuery("points", (key,))).locations
    assert got is not None and true_locations(after, KeyQuery("points", (key,))) <= got
    if not shared_here:
        assert loc not in got
    _assert_covers(updated, after, _queries(data, key_type, after))


@SETTINGS
@given(cases(), st.data())
def test_chained_deltas_answer_like_one_combined_delta(
    case: tuple[str, list[Row], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, parts = case
    index = _build(key_type, rows, params, parts)
    first, middle = draw_delta(data, _values(key_type), rows)
    second, last = draw_delta(data, _values(key_type), middle)
    step = _apply(index, key_type, first)
    chained = _apply(step, key_type, second)
    combined = _apply(index, key_type, first + second)
    queries = _queries(data, key_type, last)
    _assert_covers(chained, last, queries)
    _assert_covers(combined, last, queries)
    # the documented conditions of the equality: no shared key touched, no
    # removal left unresolved, no gap given min_run_keys new keys at once --
    # by the sum, and by either delta on its own (a key the first adds and the
    # second removes again is in no gap of the sum, but shaped the first's)
    touched_shared = any(
        (_kinds(idx, [k for k, _, _ in d])[0] == KIND_SHARED).any()
        for idx, d in ((index, first), (step, second))
    )
    assume(not touched_shared)
    assume(chained.meta["unresolved_removal_rows"] == 0)
    assume(combined.meta["unresolved_removal_rows"] == 0)
    assume(_new_keys_per_gap(index, first + second) < index.params["min_run_keys"])
    assume(_new_keys_per_gap(index, first) < index.params["min_run_keys"])
    assume(_new_keys_per_gap(step, second) < index.params["min_run_keys"])
    assert _answers(chained, queries) == _answers(combined, queries)


# ---------------------------------------------------------------------------
# examples
# ---------------------------------------------------------------------------


def _runs(n_keys: int, run: int, n_locs: int) -> list[Row]:
    """Keys 0..n-1 in runs of ``run`` keys cycling over ``n_locs`` locations, two rows each."""
    return [(k, f"fg-{(k // run) % n_locs:02d}") for k in range(n_keys) for _ in range(2)]


def test_runs_keep_ideal_pruning_through_updates_inserts_and_deletes() -> None:
    rows = _runs(2000, 100, 4)
    index = _build("bigint", rows, {})
    assert index.describe()["entries"] == 20
    # inserts into the runs' own locations, an update keeping its key, a deleted key
    delta: Delta = [(k, f"fg-{(k // 100) % 4:02d}", 1) for k in range(0, 2000, 7)]
    delta += [(500, "fg-01", -1), (500, "fg-01", 1), (901, "fg-01", -2)]
    updated = _apply(index, "bigint", delta)
    assert updated.describe()["entries"] == 20
    assert updated.lookup(KeyQuery("points", (555,))).locations == {"fg-01"}
    # the keys beyond the end, at a new location: one new segment, one entry
    appended = _apply(updated, "bigint", [(k, "fg-new", 1) for k in range(2000, 3000)])
    assert appended.describe()["segments"] == 21 and appended.describe()["entries"] == 21
    assert appended.lookup(KeyQuery("points", (2500,))).locations == {"fg-new"}
    assert appended.lookup(KeyQuery("range", low=1950, high=2050)).locations == {"fg-03", "fg-new"}
    # a whole run deleted: its segment answers nothing, the location stays for the others
    gone = _apply(appended, "bigint", [(k, "fg-00", -2 - (k % 7 == 0)) for k in range(100)])
    assert gone.lookup(KeyQuery("points", (50,))).locations == frozenset()
    assert gone.lookup(KeyQuery("points", (450,))).locations == {"fg-00"}
    # every row of a location deleted: it leaves the location list too
    rows_00 = [(k, "fg-00", -2) for k in range(400, 2000) if (k // 100) % 4 == 0]
    rows_00 += [(k, "fg-00", -1) for k in range(0, 2000, 7) if (k // 100) % 4 == 0 and k >= 100]
    empty = _apply(gone, "bigint", rows_00)
    assert "fg-00" not in empty.locations.tolist()
    assert empty.lookup(KeyQuery("range")).locations == {"fg-01", "fg-02", "fg-03", "fg-new"}


def test_new_keys_in_a_gap_get_segments_inside_it() -> None:
    rows = [(k, "a") for k in range(0, 100)] + [(k, "b") for k in range(1000, 1100)]
    index = _build("bigint", rows, {})
    assert index.describe()["segments"] == 2
    few = _apply(index, "bigint", [(500, "c", 1), (501, "a", 2)])
    assert few.describe()["segments"] == 4  # one point segment per key
    assert few.lookup(KeyQuery("points", (500,))).locations == {"c"}
    assert few.lookup(KeyQuery("points", (502,))).locations == frozenset()
    many = _apply(index, "bigint", [(k, "c", 1) for k in range(300, 700)])
    new = [
        (int(lo), int(hi))
        for lo, hi in zip(many.seg_min, many.seg_max, strict=True)
        if (lo, hi) not in {(0, 99), (1000, 1099)}
    ]
    assert new == [(300, 699)]  # the build's walk: one stable run, inside the gap
    assert many.lookup(KeyQuery("range", low=100, high=999)).locations == {"c"}


def test_shared_keys_of_bridged_segments() -> None:
    # runs at "a" and "b", and a straddling key 20 at both: bridged, the segments overlap on 20
    rows = (
        [(k, "a") for k in range(0, 20)]
        + [(20, "a"), (20, "b")]
        + [(k, "b") for k in range(21, 41)]
    )
    index = _build("bigint", rows, {})
    kind, _ = _kinds(index, [20])
    assert kind.tolist() == [KIND_SHARED]
    # removing the straddling key's row at "b": only one candidate holds "b"
    once = _apply(index, "bigint", [(20, "b", -1)])
    assert once.lookup(KeyQuery("points", (30,))).locations == {"b"}
    assert once.meta["unresolved_removal_rows"] == 0
    # adding "b" rows at key 20 again goes to the block that holds "b"
    again = _apply(once, "bigint", [(20, "b", 1)])
    assert again.lookup(KeyQuery("points", (5,))).locations == {"a"}
    # removing every key of run "b" (their counts sum to the removal) drops "b" everywhere
    rest = _apply(again, "bigint", [(k, "b", -1) for k in range(20, 41)])
    assert rest.lookup(KeyQuery("range")).locations == {"a"}


def test_nulls_and_locations_new_to_the_index() -> None:
    rows = [(k, "a") for k in range(50)] + [(None, "a")]
    index = _build("bigint", rows, {})
    updated = _apply(index, "bigint", [(None, "z", 2), (None, "a", -1), (10, "m", 1)])
    assert updated.lookup(KeyQuery("is_null")).locations == {"z"}
    assert updated.locations.tolist() == ["a", "m", "z"]
    assert updated.lookup(KeyQuery("points", (10,))).locations == {"a", "m"}
    assert updated.location_rows.tolist() == [50, 1, 2]


def test_a_location_whose_every_row_a_delta_removes_leaves_the_index() -> None:
    rows = [(k, f"l{k % 3}") for k in range(60)]
    built = build_local(pa.array([k for k, _ in rows]), [loc for _, loc in rows], "bigint")
    index = load_index(built)
    assert index.location_rows.tolist() == [20, 20, 20]
    updated = _apply(index, "bigint", [(k, "l0", -1) for k in range(0, 60, 3)])
    assert "l0" not in updated.locations.tolist()


def test_bad_deltas_fail_with_one_line() -> None:
    index = _build("bigint", [(1, "a")], {})
    with pytest.raises(ValueError, match="null location"):
        apply_delta_local(index, pa.array([1]), pa.array([None], pa.string()), [1])
    with pytest.raises(ValueError, match="differ in length"):
        apply_delta_local(index, pa.array([1, 2]), ["a"], [1])


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------


def _frame(spark: Any, key_type: str, delta: Delta) -> Any:
    table = pa.table(
        {
            "key": _arrow(key_type, [k for k, _, _ in delta]),
            "location": pa.array([loc for _, loc, _ in delta], pa.string()),
            "count": pa.array([n for _, _, n in delta], pa.int64()),
        }
    )
    return spark.createDataFrame(table, schema=f"key {key_type}, location string, count bigint")


def _random_case(seed: int, key_type: str = "bigint") -> tuple[list[Row], Delta, list[Row]]:
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(5000, 3000, replace=False))
    rows: list[Row] = []
    for i, k in enumerate(keys.tolist()):
        loc = f"fg-{(i // 40) % 7}"
        value: Any = k if key_type == "bigint" else f"samefirst8-{k:05d}"
        rows += [(value, loc)] * int(rng.integers(1, 3))
        if rng.random() < 0.05:
            rows.append((value, f"fg-{rng.integers(0, 7)}"))
    counts = Counter(rows)
    delta: Delta = []
    for pair in list(counts)[::9]:
        delta.append((pair[0], pair[1], -counts[pair]))
        counts[pair] = 0
    for k in rng.choice(6000, 400, replace=False).tolist():
        value = k if key_type == "bigint" else f"samefirst8-{k:05d}"
        loc = f"fg-{rng.integers(0, 9)}"
        delta.append((value, loc, 1))
        counts[(value, loc)] += 1
    delta += [(None, "fg-8", 3)]
    counts[(None, "fg-8")] += 3
    after = [pair for pair, n in counts.items() for _ in range(n)]
    return rows, delta, after


@pytest.mark.spark
@pytest.mark.parametrize("key_type", ["bigint", "string"])
def test_spark_apply_delta_equals_the_in_process_fold(spark: Any, key_type: str) -> None:
    rows, delta, after = _random_case(3, key_type)
    index = _build(key_type, rows, {}, 2)
    local = apply_delta_local(
        index,
        _arrow(key_type, [k for k, _, _ in delta]),
        [loc for _, loc, _ in delta],
        [n for _, _, n in delta],
    )
    built = registry.index_type("sieve").apply_delta(
        spark, index, _frame(spark, key_type, delta), {}
    )
    assert isinstance(built, BuiltIndex)
    for name, table in local.files.items():
        assert built.files[name].equals(table), name
    assert built.meta == local.meta
    queries = standard_queries(after) + [KeyQuery("points", (k,)) for k, _ in after[::17]]
    _assert_covers(load_index(_ipc(built)), after, queries)


@pytest.mark.spark
def test_spark_segments_many_new_keys_in_spark(spark: Any) -> None:
    rows, delta, after = _random_case(5)
    delta += [(k, "fg-tail", 1) for k in range(10_000, 12_000)]
    after += [(k, "fg-tail") for k in range(10_000, 12_000)]
    index = _build("bigint", rows, {}, 2)
    built = apply_delta(spark, index, _frame(spark, "bigint", delta), {}, local_new_pairs=0)
    updated = load_index(_ipc(built))
    queries = standard_queries(after) + [KeyQuery("points", (k,)) for k, _ in after[::13]]
    queries += [KeyQuery("range", low=lo, high=lo + 50) for lo in range(-10, 12_100, 397)]
    _assert_covers(updated, after, queries)
    assert updated.lookup(KeyQuery("range", low=10_000, high=11_999)).locations == {"fg-tail"}
    assert updated.meta["rows"] == len(after)


@pytest.mark.spark
def test_spark_empty_delta_of_any_key_type_changes_nothing(spark: Any) -> None:
    rows = [*_runs(300, 30, 3), (None, "fg-01")]
    index = _build("bigint", rows, {})
    # the framework hands an empty delta with a string key column
    empty = spark.createDataFrame([], "key string, location string, count long")
    built = plugin.SieveIndexType().apply_delta(spark, index, empty, {})
    assert built is not None
    before = load_index(
        build_local(pa.array([k for k, _ in rows], pa.int64()), [loc for _, loc in rows], "bigint")
    )
    after = load_index(_ipc(built))
    queries = [*standard_queries(rows), KeyQuery("range", low=10, high=95)]
    assert _answers(after, queries) == _answers(before, queries)
    assert not isinstance(registry.index_type("zonemap"), plugin.SieveIndexType)


def test_date_and_decimal_keys_fold_like_their_mapped_values() -> None:
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(60)]
    index = _build("date", [(d, f"m{d.month}") for d in days], {})
    updated = _apply(index, "date", [(dt.date(2024, 1, 15), "m2", 1)])
    assert updated.lookup(KeyQuery("points", (dt.date(2024, 1, 15),))).locations == {"m1", "m2"}
    amounts = [decimal.Decimal(i).scaleb(-2) for i in range(100)]
    dec = _build("decimal(10,2)", [(a, "x" if a < 0.5 else "y") for a in amounts], {})
    moved = _apply(dec, "decimal(10,2)", [(decimal.Decimal("0.10"), "x", -1)])
    assert moved.lookup(KeyQuery("points", (decimal.Decimal("0.11"),))).locations == {"x"}
