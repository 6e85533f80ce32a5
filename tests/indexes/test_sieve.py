"""The Sieve index without Spark: segmentation walk, stored form, lookups, hooks.

The central property: for random relations (every supported key type,
duplicates, nulls, mapped-key collisions, few or many locations, random
layouts and parameters) and random predicates, the locations a lookup returns
include every location holding a matching row.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import io
import math
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import OptionError, UnsupportedKeyTypeError
from lakesieve.indexes.sieve import build_local, load_index, parse_options, plugin, segments
from lakesieve.indexes.sieve.build import walk_coded_partition
from lakesieve.indexes.sieve.codec import FILE_NAME, decode, encode, from_table, to_table
from lakesieve.indexes.sieve.lookup import SieveFormatError, SieveIndex
from lakesieve.indexes.sieve.params import SieveParams
from lakesieve.indexes.sieve.segments import (
    PairBuffer,
    SegmentSet,
    choose_width,
    group_keys,
    run_starts,
    sort_pairs,
    walk,
)
from lakesieve.indexes.sieve.storage import expand_ranges, rows_to_segments, segments_to_rows
from lakesieve.model import BuiltIndex, KeyQuery, LookupResult

# ---------------------------------------------------------------------------
# value domains per key type: small, so keys repeat and collide
# ---------------------------------------------------------------------------

#: Examples of the property test; raise with SIEVE_EXAMPLES=5000 for a long soak.
EXAMPLES = int(os.environ.get("SIEVE_EXAMPLES", "200"))

PREFIX = "commonpfx"  # 9 bytes: strings sharing it collide on the 8-byte prefix


def _f32(v: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(v))


DOMAINS: dict[str, st.SearchStrategy[Any]] = {
    "bigint": st.integers(-50, 50) | st.sampled_from([-(2**63), 2**63 - 1]),
    "int": st.integers(-300, 300),
    "boolean": st.booleans(),
    "date": st.dates(dt.date(1999, 12, 1), dt.date(2000, 3, 1)),
    "timestamp": st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 5)),
    "decimal(10,2)": st.integers(-2000, 2000).map(lambda u: decimal.Decimal(u).scaleb(-2)),
    "decimal(30,3)": st.integers(-(10**20), 10**20).map(
        lambda u: decimal.Decimal(u).scaleb(-3, decimal.Context(prec=60))
    ),
    "string": st.text(alphabet="ab\u00e9\U0001f600", max_size=3)
    | st.text(alphabet="xyz", max_size=2).map(lambda s: PREFIX + s),
    "binary": st.binary(max_size=3) | st.binary(max_size=2).map(lambda b: b"\xff" * 8 + b),
    "double": st.floats(-100, 100, width=16)
    | st.sampled_from([math.nan, -0.0, math.inf, -math.inf]),
    "float": st.floats(-100, 100, width=32) | st.sampled_from([math.nan, -0.0, 0.1]),
}
ARROW_TYPES: dict[str, pa.DataType] = {
    "bigint": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "decimal(10,2)": pa.decimal128(10, 2),
    "decimal(30,3)": pa.decimal128(30, 3),
    "string": pa.large_string(),
    "binary": pa.binary(),
    "double": pa.float64(),
    "float": pa.float32(),
}


def _order(key_type: str) -> Callable[[Any], Any]:
    """Spark's ordering of column values, as a sort key."""
    if key_type in ("double", "float"):
        return lambda v: (1, 0.0) if math.isnan(v) else (0, v + 0.0)
    if key_type == "string":
        return lambda v: v.encode("utf-8")
    return lambda v: v


def _equal(key_type: str, a: Any, b: Any) -> bool:
    if key_type in ("double", "float"):
        if key_type == "float":
            a, b = _f32(a), _f32(b)
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


def _matches(key_type: str, value: Any, q: KeyQuery) -> bool:
    """Brute force: does a non-null column value satisfy the query?"""
    if q.kind == "is_null":
        return False
    if q.kind == "points":
        return any(v is not None and _equal(key_type, value, v) for v in q.values)
    order = _order(key_type)
    if key_type == "float":
        # a float column holds float32(value) (0.1 is stored as 0.10000000149...),
        # and the planner compares against CAST(v AS FLOAT)
        value = _f32(value)
        q = KeyQuery(
            "range",
            low=None if q.low is None else _f32(q.low),
            low_inclusive=q.low_inclusive,
            high=None if q.high is None else _f32(q.high),
            high_inclusive=q.high_inclusive,
        )
    v = order(value)
    if q.low is not None:
        lo = order(q.low)
        if v < lo or (v == lo and not q.low_inclusive):
            return False
    if q.high is not None:
        hi = order(q.high)
        if v > hi or (v == hi and not q.high_inclusive):
            return False
    return True


def _truth(key_type: str, rows: list[tuple[Any, str]], q: KeyQuery) -> set[str]:
    if q.kind == "is_null":
        return {loc for v, loc in rows if v is None}
    return {loc for v, loc in rows if v is not None and _matches(key_type, v, q)}


@st.composite
def relations(draw: st.DrawFn) -> tuple[str, list[tuple[Any, str]], dict[str, Any], int]:
    """A key type, (key, location) rows, build parameters and a partition count."""
    key_type = draw(st.sampled_from(sorted(DOMAINS)))
    domain = DOMAINS[key_type]
    n_locs = draw(st.sampled_from([1, 2, 3, 8, 40]))
    locs = [f"loc-{i:02d}" for i in range(n_locs)]
    layout = draw(st.sampled_from(["random", "runs", "runs+noise"]))
    values = draw(st.lists(domain, min_size=0, max_size=60))
    rows: list[tuple[Any, str]] = []
    if layout == "random":
        for v in values:
            rows.append((v, draw(st.sampled_from(locs))))
    else:
        ordered = sorted(values, key=_order(key_type))
        i = 0
        while i < len(ordered):
            run = draw(st.integers(1, 12))
            loc = draw(st.sampled_from(locs))
            for v in ordered[i : i + run]:
                rows.append((v, loc))
                if layout == "runs+noise" and draw(st.integers(0, 9)) == 0:
                    rows.append((v, draw(st.sampled_from(locs))))
            i += run
    rows += [(None, draw(st.sampled_from(locs))) for _ in range(draw(st.integers(0, 3)))]
    params = {
        "min_run_keys": draw(st.integers(1, 6)),
        "min_keys_per_block": draw(st.integers(1, 6)),
        "max_segment_keys": draw(st.integers(1, 40)),
        "target_fpr": draw(st.sampled_from([0.0, 0.05, 0.5])),
        "size_weight": draw(st.sampled_from([0.0, 1.0, 6.0, 100.0])),
    }
    return key_type, rows, params, draw(st.integers(1, 4))


def _queries(
    draw: Callable[..., Any], key_type: str, rows: list[tuple[Any, str]]
) -> list[KeyQuery]:
    domain = DOMAINS[key_type]
    present = [v for v, _ in rows if v is not None]
    pick = st.sampled_from(present) | domain if present else domain
    out = [KeyQuery("is_null")]
    for _ in range(draw(st.integers(1, 6))):
        out.append(
            KeyQuery(
                "points", values=tuple(draw(st.lists(pick | st.none(), min_size=1, max_size=4)))
            )
        )
    for _ in range(draw(st.integers(1, 8))):
        low = draw(st.none() | pick)
        high = draw(st.none() | pick)
        if low is not None and high is not None and _order(key_type)(low) > _order(key_type)(high):
            low, high = high, low
        out.append(
            KeyQuery(
                "range",
                low=low,
                low_inclusive=draw(st.booleans()),
                high=high,
                high_inclusive=draw(st.booleans()),
            )
        )
    return out


def _keys_array(key_type: str, rows: list[tuple[Any, str]]) -> pa.Array:
    values = [v for v, _ in rows]
    if key_type == "timestamp":
        values = [None if v is None else v.replace(tzinfo=dt.UTC) for v in values]
    return pa.array(values, type=ARROW_TYPES[key_type])


def _ipc_round_trip(built: BuiltIndex) -> BuiltIndex:
    files = {}
    for name, table in built.files.items():
        sink = io.BytesIO()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        files[name] = pa.ipc.open_file(pa.py_buffer(sink.getvalue())).read_all()
    return BuiltIndex(files=files, meta=dict(built.meta))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relations(), st.data())
def test_lookup_is_a_superset_of_the_truth(
    case: tuple[str, list[tuple[Any, str]], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, partitions = case
    arrow = data.draw(st.booleans())
    keys: Any = _keys_array(key_type, rows) if arrow else [v for v, _ in rows]
    built = build_local(keys, [loc for _, loc in rows], key_type, params, partitions=partitions)
    index = load_index(_ipc_round_trip(built))
    queries = _queries(data.draw, key_type, rows)
    for q in queries:
        result = index.lookup(q)
        assert result.locations is not None, (q, result.note)
        truth = _truth(key_type, rows, q)
        assert truth <= result.locations, (q, truth - result.locations)
    # an index over no rows of a key answers nothing for it
    if not rows:
        assert (
            index.lookup(KeyQuery("points", values=(data.draw(DOMAINS[key_type]),))).locations
            == frozenset()
        )


# ---------------------------------------------------------------------------
# layouts at reduced scale: the lead's targets
# ---------------------------------------------------------------------------


def _lineitem_like(n_keys: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Sparse increasing keys with 1-7 rows each (like l_orderkey), sorted."""
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(4 * n_keys, n_keys, replace=False)).astype(np.int64)
    return keys, rng.integers(1, 8, n_keys)


def _measure(
    index: SieveIndex, keys: np.ndarray, rows: np.ndarray, locs: np.ndarray
) -> tuple[float, float, float, float]:
    """(selected per point, ideal per point, selected per 0.1% range, ideal per range)."""
    rng = np.random.default_rng(11)
    row_keys = np.repeat(keys, rows)
    sel, ideal, rsel, rideal = [], [], [], []
    for k in rng.choice(keys, 200):
        got = index.lookup(KeyQuery("points", values=(int(k),))).locations
        true = set(locs[row_keys == k].tolist())
        assert got is not None and true <= got
        sel.append(len(got))
        ideal.append(len(true))
    width = len(keys) // 1000
    for i in rng.integers(0, len(keys) - width, 100):
        lo, hi = int(keys[i]), int(keys[i + width - 1])
        got = index.lookup(KeyQuery("range", low=lo, high=hi)).locations
        true = set(locs[(row_keys >= lo) & (row_keys <= hi)].tolist())
        assert got is not None and true <= got
        rsel.append(len(got))
        rideal.append(len(true))
    return float(np.mean(sel)), float(np.mean(ideal)), float(np.mean(rsel)), float(np.mean(rideal))


def test_interleaved_runs_prune_ideally_with_about_one_entry_per_run() -> None:
    n = 200_000
    keys, rows = _lineitem_like(n)
    run = np.minimum(np.arange(n) * 1024 // n, 1023)
    locs = np.repeat(np.array([f"fg-{r % 64:02d}" for r in run]), rows)
    built = build_local(pa.array(np.repeat(keys, rows)), locs, "bigint", partitions=4)
    index = load_index(built)
    points, _, ranges, _ = _measure(index, keys, rows, locs)
    d = index.describe()
    assert points <= 1.5 and ranges <= 3.0
    assert points == pytest.approx(1.0) and ranges <= 2.1
    assert d["size_bytes"] <= 1_000_000
    assert 1024 <= d["entries"] <= 1024 + 8  # one per run, plus partition cuts
    assert d["locations"] == 64


def test_runs_cut_by_rows_straddle_keys_cost_nothing() -> None:
    n = 100_000
    keys, rows = _lineitem_like(n, seed=3)
    total = int(rows.sum())
    run_of_row = np.arange(total) * 1024 // total  # cuts fall inside keys
    locs = np.array([f"fg-{r % 64:02d}" for r in run_of_row % 64])
    index = load_index(build_local(pa.array(np.repeat(keys, rows)), locs, "bigint", partitions=3))
    points, ideal, ranges, rideal = _measure(index, keys, rows, locs)
    assert points <= ideal + 0.01 and ranges <= rideal + 0.1
    assert index.describe()["entries"] <= 1024 + 6


def test_hashed_layout_stays_small() -> None:
    n = 100_000
    keys, rows = _lineitem_like(n, seed=5)
    rng = np.random.default_rng(5)
    locs = np.repeat(np.array([f"fg-{i:02d}" for i in range(64)])[rng.integers(0, 64, n)], rows)
    index = load_index(build_local(pa.array(np.repeat(keys, rows)), locs, "bigint", partitions=2))
    _measure(index, keys, rows, locs)  # asserts correctness
    d = index.describe()
    assert d["entries"] <= n // 100  # far from one entry per key
    assert d["size_bytes"] <= 50_000


def test_sorted_layout_is_near_ideal() -> None:
    n = 100_000
    keys, rows = _lineitem_like(n, seed=9)
    total = int(rows.sum())
    locs = np.array([f"file-{i:03d}" for i in np.arange(total) * 100 // total])
    index = load_index(build_local(pa.array(np.repeat(keys, rows)), locs, "bigint", partitions=4))
    points, ideal, ranges, rideal = _measure(index, keys, rows, locs)
    assert points <= ideal + 0.01 and ranges <= rideal + 0.05
    assert index.describe()["entries"] <= 2 * 100 + 8


def test_small_files_in_key_order_keep_narrow_blocks() -> None:
    n = 50_000
    keys, rows = _lineitem_like(n, seed=13)
    locs = np.repeat(np.array([f"f{i}" for i in np.arange(n) // 8]), rows)  # 8 keys per file
    index = load_index(build_local(pa.array(np.repeat(keys, rows)), locs, "bigint"))
    points, _, _, _ = _measure(index, keys, rows, locs)
    assert points <= 6.0  # blocks of ~32 keys span ~5 files, not thousands


# ---------------------------------------------------------------------------
# the walk's pieces
# ---------------------------------------------------------------------------


def test_group_keys_merges_and_sorts() -> None:
    g = group_keys(np.array([5, 3, 5, 3, 5]), np.array([1, 0, 1, 2, 0]), np.array([1, 2, 3, 4, 5]))
    assert g.keys.tolist() == [3, 5]
    assert g.offsets.tolist() == [0, 2, 4]
    assert g.locs.tolist() == [0, 2, 0, 1]
    assert g.counts.tolist() == [2, 4, 5, 4]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(0, 3), st.integers(1, 9)), max_size=60))
def test_sort_pairs_orders_by_key_then_location(triples: list[tuple[int, int, int]]) -> None:
    keys = np.array([t[0] for t in triples], np.int64)
    locs = np.array([t[1] for t in triples], np.int32)
    counts = np.array([t[2] for t in triples], np.int64)
    k, loc, c = sort_pairs(keys, locs, counts)
    assert sorted(zip(k.tolist(), loc.tolist(), strict=True)) == list(
        zip(k.tolist(), loc.tolist(), strict=True)
    )
    assert sorted(zip(k.tolist(), loc.tolist(), c.tolist(), strict=True)) == sorted(triples)


def _assert_covers_every_pair(segs: Any, pairs: dict[tuple[int, int], int]) -> None:
    """What a walk must give, read off the documented flat arrays, not computed by another walk.

    Every (key, location) pair lies in a segment holding its key, in the block
    its key falls in (``(key - seg_min) // seg_width``), and that block has an
    entry for the location; segments are ordered, and two in a row share at
    most their boundary key (a bridged gap key whose locations are split
    between the runs on either side; lookups read every segment holding a
    key); the entries' row counts add up to the input's rows and the
    segments' key counts to its distinct keys.
    """
    seg_min, seg_max = segs.seg_min.tolist(), segs.seg_max.tolist()
    assert all(a <= b for a, b in zip(seg_min, seg_max, strict=True))
    assert all(prev <= nxt for prev, nxt in zip(seg_max, seg_min[1:], strict=False))
    block_start = np.concatenate([[0], np.cumsum(segs.seg_blocks)]).tolist()
    entry_start = np.concatenate([[0], np.cumsum(segs.block_entries)]).tolist()
    for (key, loc), _ in pairs.items():
        inside = [i for i, (a, b) in enumerate(zip(seg_min, seg_max, strict=True)) if a <= key <= b]
        assert 1 <= len(inside) <= 2, (key, inside)
        held = []
        for i in inside:
            width = int(segs.seg_width[i])
            block = block_start[i] + ((key - seg_min[i]) // width if width else 0)
            assert block < block_start[i + 1], (key, i)
            held += segs.entry_loc[entry_start[block] : entry_start[block + 1]].tolist()
        assert loc in held, (key, loc, held)
    assert int(segs.entry_count.sum()) == sum(pairs.values())
    assert int(segs.seg_keys.sum()) == len({k for k, _ in pairs})


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 5)), min_size=1, max_size=300),
    st.integers(1, 7),
    st.randoms(use_true_random=False),
    st.booleans(),
)
# key 2 is held at the location of the run before it and at the one after:
# bridged into both, the two segments share it
@example([(0, 1), (1, 1), (2, 0), (2, 1), (3, 0), (4, 0)], 1, random.Random(0), False)
def test_coded_walk_equals_the_walk_of_sorted_pairs(
    rows: list[tuple[int, int]], batch_size: int, rnd: Any, counted: bool
) -> None:
    """The mapInArrow body: any batch cut, any order, hashed codes -> segments covering every pair.

    Batches hold pairs with their counts (``cnt``, small key domains) or the
    rows themselves, uncounted. Checked against the pairs themselves
    (:func:`_assert_covers_every_pair`) and, as a consistency check, against
    the in-memory walk of the same pairs.
    """
    pairs: dict[tuple[int, int], int] = {}
    for key, loc in rows:
        pairs[(key, loc)] = pairs.get((key, loc), 0) + 1
    items = list(pairs.items()) if counted else [(row, 1) for row in rows]
    rnd.shuffle(items)
    codes = np.array(sorted(rnd.sample(range(-(2**40), 2**40), 6)), np.int64)
    code_ids = np.array(rnd.sample(range(6), 6), np.int32)  # ids in name order, not code order
    code_of = {int(i): int(c) for c, i in zip(codes, code_ids, strict=True)}
    batches = [
        pa.record_batch(
            [
                pa.array([k for (k, _), _ in chunk], pa.int64()),
                pa.array([code_of[loc] for (_, loc), _ in chunk], pa.int64()),
                *([pa.array([n for _, n in chunk], pa.int64())] if counted else []),
            ],
            names=["key", "code", "cnt"] if counted else ["key", "code"],
        )
        for chunk in (items[i : i + batch_size] for i in range(0, len(items), batch_size))
    ]
    params = SieveParams.from_dict({"min_run_keys": "2", "min_keys_per_block": "2"})
    got = list(
        walk_coded_partition(iter(batches), "bigint", params.to_dict(), 10.0, codes, code_ids)
    )
    want = walk(
        np.array([k for k, _ in pairs], np.int64),
        np.array([loc for _, loc in pairs], np.int32),
        np.array(list(pairs.values()), np.int64),
        params,
        10.0,
    )
    assert len(got) == 1
    seen = rows_to_segments(pa.Table.from_batches(got))
    _assert_covers_every_pair(seen, pairs)
    for name in ("seg_min", "seg_max", "seg_width", "seg_blocks", "seg_keys"):
        assert getattr(seen, name).tolist() == getattr(want, name).tolist(), name
    for name in ("block_entries", "entry_loc", "entry_count"):
        assert getattr(seen, name).tolist() == getattr(want, name).tolist(), name


def test_run_starts() -> None:
    keys = np.array([1, 1, 2, 3, 3, 4, 5, 6])
    locs = np.array([0, 1, 0, 0, 1, 0, 0, 2])
    g = group_keys(keys, locs, np.ones(8, np.int64))
    # sets: 1:{0,1} 2:{0} 3:{0,1} 4:{0} 5:{0} 6:{2}
    assert run_starts(g).tolist() == [0, 1, 2, 3, 5]


def test_stable_runs_and_bridged_straddle() -> None:
    # run A (keys 0..19), one key in A and B, run B (21..40)
    keys = np.concatenate([np.arange(0, 21), np.arange(20, 41)])
    locs = np.concatenate([np.zeros(21, np.int32), np.ones(21, np.int32)])
    segs = walk(keys, locs, np.ones(len(keys), np.int64), SieveParams(min_run_keys=5))
    assert segs.num_segments == 2
    assert segs.seg_min.tolist() == [0, 20] and segs.seg_max.tolist() == [20, 40]
    assert segs.entry_loc.tolist() == [0, 1]
    assert segs.entry_count.sum() == len(keys)


def test_gap_with_foreign_location_is_its_own_segment() -> None:
    keys = np.arange(41)
    locs = np.zeros(41, np.int32)
    locs[20] = 7
    segs = walk(keys, locs, np.ones(41, np.int64), SieveParams(min_run_keys=5))
    assert segs.num_segments == 3
    assert segs.entry_loc.tolist() == [0, 7, 0]


def test_choose_width_meets_the_target_or_trades_size() -> None:
    p = SieveParams(min_keys_per_block=4, target_fpr=0.05)
    # each run of 16 keys in its own location: width 16 is exact, wider is not
    keys = np.arange(256, dtype=np.int64)
    locs = (keys // 16).astype(np.int32)
    width, blocks = choose_width(keys, np.ones(256, np.int64), locs, p)
    assert width == 16 and blocks == 16
    # scattered over 64 locations: one block
    rng = np.random.default_rng(0)
    locs = rng.integers(0, 64, 4096).astype(np.int32)
    keys = np.arange(4096, dtype=np.int64)
    width, blocks = choose_width(keys, np.ones(4096, np.int64), locs, SieveParams())
    assert blocks == 1


def test_keys_spanning_the_whole_int64_range() -> None:
    keys = np.array([-(2**63), -5, 0, 2**63 - 1] * 3, dtype=np.int64)
    locs = np.array([0, 1, 2, 3] * 3, dtype=np.int32)
    for params in (SieveParams(min_run_keys=1), SieveParams(min_run_keys=50, min_keys_per_block=1)):
        segs = walk(keys, locs, np.ones(len(keys), np.int64), params)
        built = build_local(keys.tolist(), [f"l{i}" for i in locs], "bigint", params.to_dict())
        index = load_index(built)
        for k, loc in zip(keys.tolist(), locs.tolist(), strict=True):
            got = index.lookup(KeyQuery("points", values=(k,))).locations
            assert got is not None and f"l{loc}" in got
        assert segs.num_segments >= 1


def test_expand_ranges() -> None:
    assert expand_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert expand_ranges(np.array([], np.int64), np.array([], np.int64)).tolist() == []


def test_segment_rows_round_trip() -> None:
    segs = walk(
        np.arange(100),
        (np.arange(100) // 30).astype(np.int32),
        np.ones(100, np.int64),
        SieveParams(),
    )
    back = rows_to_segments(pa.Table.from_batches([segments_to_rows(segs)]))
    for name in (
        "seg_min",
        "seg_max",
        "seg_width",
        "seg_blocks",
        "block_entries",
        "entry_loc",
        "entry_count",
    ):
        assert np.array_equal(getattr(back, name), getattr(segs, name)), name
    assert SegmentSet.concat([]).num_segments == 0


# ---------------------------------------------------------------------------
# lookups: edge cases
# ---------------------------------------------------------------------------


def _small_index(key_type: str = "bigint") -> SieveIndex:
    keys = [1, 2, 3, 10, 11, 12, None, None]
    locs = ["a", "a", "a", "b", "b", "b", "n1", "n2"]
    return load_index(build_local(keys, locs, key_type, {"min_run_keys": 2}))


def test_lookup_edges() -> None:
    idx = _small_index()
    q = KeyQuery
    assert idx.lookup(q("is_null")).locations == {"n1", "n2"}
    assert idx.lookup(q("points", values=(2,))).locations == {"a"}
    assert idx.lookup(q("points", values=(100,))).locations == frozenset()
    assert idx.lookup(q("points", values=(None,))).locations == frozenset()
    assert idx.lookup(q("points", values=(2, 11))).locations == {"a", "b"}
    assert idx.lookup(q("range", low=3, low_inclusive=False)).locations == {"b"}
    assert idx.lookup(q("range", high=10, high_inclusive=False)).locations == {"a"}
    assert idx.lookup(q("range", low=4, high=9)).locations == frozenset()
    assert idx.lookup(q("range", low=12, low_inclusive=False)).locations == frozenset()
    assert idx.lookup(q("range", low=2**63 - 1, low_inclusive=False)).locations == frozenset()
    assert idx.lookup(q("range", high=-(2**63), high_inclusive=False)).locations == frozenset()
    assert idx.lookup(q("range")).locations == {"a", "b"}
    assert idx.lookup(q("range", low=2.5, high=10.5)).locations == {"a", "b"}
    # values of a kind the column cannot compare with: cannot help, never wrong
    assert idx.lookup(q("points", values=("x",))).locations is None
    assert idx.lookup(KeyQuery("weird")).locations is None  # type: ignore[arg-type]


def test_exclusive_bound_on_colliding_strings_stays_inclusive() -> None:
    keys = [PREFIX + "a", PREFIX + "b", "zzz"]
    idx = load_index(build_local(keys, ["x", "y", "z"], "string", {"min_run_keys": 1}))
    got = idx.lookup(KeyQuery("range", low=PREFIX + "a", low_inclusive=False)).locations
    assert got is not None and {"y", "z"} <= got
    got = idx.lookup(KeyQuery("range", high=PREFIX + "b", high_inclusive=False)).locations
    assert got is not None and "x" in got


def test_empty_index() -> None:
    idx = load_index(build_local([], [], "string"))
    assert idx.lookup(KeyQuery("points", values=("a",))).locations == frozenset()
    assert idx.lookup(KeyQuery("range")).locations == frozenset()
    assert idx.lookup(KeyQuery("is_null")).locations == frozenset()
    assert idx.describe()["segments"] == 0


# ---------------------------------------------------------------------------
# stored form: checks on load
# ---------------------------------------------------------------------------


def _replace(built: BuiltIndex, name: str, table: pa.Table | None) -> BuiltIndex:
    files = dict(built.files)
    if table is None:
        files.pop(name)
    else:
        files[name] = table
    return BuiltIndex(files=files, meta=dict(built.meta))


def _with_arrays(built: BuiltIndex, **change: Any) -> BuiltIndex:
    """``built`` with some of its stored arrays replaced, encoded again as a valid blob."""
    arrays = dataclasses.replace(decode(from_table(built.files[FILE_NAME])), **change)
    return _replace(built, FILE_NAME, to_table(encode(arrays)))


def test_corrupt_files_raise_on_load() -> None:
    built = build_local(
        list(range(100)), [f"l{i // 10}" for i in range(100)], "bigint", {"min_run_keys": 2}
    )
    load_index(built)
    a = decode(from_table(built.files[FILE_NAME]))
    assert len(a.seg_min) > 1 and bool(np.all(a.seg_max > a.seg_min))
    bad = [
        _replace(built, FILE_NAME, None),
        _replace(built, FILE_NAME, pa.table({"x": [1]})),
        _with_arrays(built, entry_loc=np.full_like(a.entry_loc, 99)),
        # blocks whose entries do not add up to the stored entries
        _with_arrays(built, block_entries=np.append(a.block_entries[:-1], len(a.entry_loc))),
        _with_arrays(built, block_entries=a.block_entries[:1]),
        _with_arrays(built, seg_width=np.ones_like(a.seg_width)),
        _with_arrays(built, seg_min=np.full_like(a.seg_min, 10**6)),
        BuiltIndex(files=built.files, meta={**built.meta, "format_version": 99}),
        BuiltIndex(files=built.files, meta={**built.meta, "key_type": "array<int>"}),
    ]
    for b in bad:
        with pytest.raises((SieveFormatError, UnsupportedKeyTypeError)):
            load_index(b)


def test_describe() -> None:
    locs = [f"l{i // 100}" for i in range(1000)]
    built = build_local([*range(1000), None], [*locs, "l0"], "bigint")
    d = load_index(_ipc_round_trip(built)).describe()
    assert d["segments"] == 10 and d["blocks"] == 10 and d["entries"] == 10
    assert d["locations"] == 10 and d["null_locations"] == 1
    assert d["distinct_keys"] == 1000 and d["rows"] == 1001
    assert d["params"] == SieveParams().to_dict()
    stored = 0
    for table in built.files.values():
        sink = io.BytesIO()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        stored += len(sink.getvalue())
    assert d["size_bytes"] == stored


# ---------------------------------------------------------------------------
# options and hooks
# ---------------------------------------------------------------------------


def test_parse_options() -> None:
    assert parse_options({}) == SieveParams().to_dict()
    got = parse_options({"min_run_keys": "8", "target_fpr": "0.1", "MAX_SEGMENT_KEYS": " 5000 "})
    assert got["min_run_keys"] == 8 and got["target_fpr"] == 0.1 and got["max_segment_keys"] == 5000
    with pytest.raises(OptionError, match=r"'bogus'.*valid options: .*min_keys_per_block"):
        parse_options({"bogus": "1"})
    with pytest.raises(OptionError, match=r"'min_run_keys'.*an integer"):
        parse_options({"min_run_keys": "1.5"})
    with pytest.raises(OptionError, match=r"'target_fpr'.*a number"):
        parse_options({"target_fpr": "high"})
    with pytest.raises(OptionError, match="target_fpr"):
        parse_options({"target_fpr": "1.0"})
    with pytest.raises(OptionError, match="min_keys_per_block"):
        parse_options({"min_keys_per_block": "0"})
    for endless in (
        "inf",
        "-inf",
        "nan",
        "1e400",
        math.inf,
    ):  # the shared option parser refuses them too
        with pytest.raises(OptionError, match=r"'size_weight'.*finite"):
            parse_options({"size_weight": endless})


def test_sieve_options_go_through_the_shared_option_parser() -> None:
    from lakesieve.contract.index_options import OptionSpec
    from lakesieve.contract.index_options import parse_options as shared_parse_options
    from lakesieve.indexes.sieve.params import OPTIONS

    assert all(isinstance(spec, OptionSpec) for spec in OPTIONS.values())
    assert {name: spec.default for name, spec in OPTIONS.items()} == SieveParams().to_dict()
    validate = plugin.SieveIndexType().validate
    for raw in ("inf", "-inf", "nan", "NaN", " Infinity ", math.inf, math.nan):
        with pytest.raises(OptionError) as caught:
            validate({"size_weight": raw}, "bigint")
        message = str(caught.value)
        assert message == (
            f"option 'size_weight' of index type 'sieve' expects a number >= 0, "
            f"got {raw!r}, which is not finite"
        )
        with pytest.raises(OptionError) as shared:
            shared_parse_options("sieve", OPTIONS, {"size_weight": raw})
        assert str(shared.value) == message
    with pytest.raises(
        OptionError, match=r"^option 'target_fpr' .* got 'nan', which is not finite$"
    ):
        validate({"target_fpr": "nan"}, "bigint")


def test_hooks_answer_only_for_sieve() -> None:
    assert [t.name for t in plugin.lakesieve_index_types()] == ["sieve"]
    for other in ("zonemap", "bloom", "exact"):  # the other types are answered by other objects
        assert not isinstance(registry.index_type(other), plugin.SieveIndexType)
    params = plugin.SieveIndexType().validate({"size_weight": "2"}, "decimal(12,2)")
    assert params is not None and params["size_weight"] == 2.0
    with pytest.raises(UnsupportedKeyTypeError, match="map<string,int>"):
        plugin.SieveIndexType().validate({}, "map<string,int>")
    with pytest.raises(OptionError):
        plugin.SieveIndexType().validate({"nope": "1"}, "bigint")
    built = build_local([1, 2, 3], ["a", "b", "c"], "bigint")
    index = plugin.SieveIndexType().load(built)
    result = plugin.SieveIndexType().lookup(index, KeyQuery("points", values=(2,)))
    assert (
        isinstance(result, LookupResult)
        and result.locations is not None
        and "b" in result.locations
    )
    assert plugin.SieveIndexType().describe(index)["entries"] >= 1  # type: ignore[index]


def test_plugin_is_registered_through_the_entry_point() -> None:
    from lakesieve.contract.registry import index_type_names

    assert index_type_names().get("sieve")


def test_budget_gives_small_tables_fine_blocks() -> None:
    rng = np.random.default_rng(2)
    keys = np.repeat(np.arange(500), 3)
    locs = np.array([f"p{i % 3}/fg{rng.integers(0, 6)}" for i in range(len(keys))])
    fine = load_index(build_local(pa.array(keys), locs, "bigint", partitions=2))
    coarse = load_index(build_local(pa.array(keys), locs, "bigint", {"budget_entries": "0"}))
    for k in (0, 250, 499):
        truth = set(locs[keys == k].tolist())
        assert fine.lookup(KeyQuery("points", values=(k,))).locations == truth
        got = coarse.lookup(KeyQuery("points", values=(k,))).locations
        assert got is not None and truth <= got and len(got) == 18
    assert fine.describe()["entries"] <= 16_384


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    triples=st.lists(
        st.tuples(
            st.one_of(st.integers(-50, 50), st.integers(-(2**63), 2**63 - 1)),
            st.integers(0, 40),
            st.integers(1, 5),
        ),
        min_size=1,
        max_size=400,
    ),
    options=st.sampled_from([{}, {"min_run_keys": "2", "min_keys_per_block": "2"}]),
    budget=st.sampled_from([None, 5.0, 500.0]),
)
def test_dense_tables_and_sorts_walk_alike(
    triples: list[tuple[int, int, int]],
    options: dict[str, str],
    budget: float | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk's dense (key, location) and (block, location) tables give what its sorts give."""
    keys = np.array([t[0] for t in triples], np.int64)
    locs = np.array([t[1] for t in triples], np.int32)
    counts = np.array([t[2] for t in triples], np.int64)
    params = SieveParams.from_dict(options)
    dense = walk(keys, locs, counts, params, budget)
    with monkeypatch.context() as patch:
        patch.setattr(segments, "_DENSE_CELLS", 0)
        patch.setattr(segments, "_DENSE_PER_ROW", 0)
        sorted_ = walk(keys, locs, counts, params, budget)
    for name in (f.name for f in dataclasses.fields(SegmentSet)):
        got, want = getattr(dense, name), getattr(sorted_, name)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), name
    pairs: dict[tuple[int, int], int] = {}
    for key, loc, n in triples:
        pairs[(key, loc)] = pairs.get((key, loc), 0) + n
    _assert_covers_every_pair(dense, pairs)


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.lists(
            st.tuples(st.integers(-20, 20), st.integers(0, 4), st.integers(1, 3)), max_size=30
        ),
        max_size=8,
    ),
    bound=st.integers(1, 40),
)
def test_pair_buffer_keeps_pairs_not_rows(
    batches: list[list[tuple[int, int, int]]], bound: int
) -> None:
    """Merging held triples into pairs changes no walk, and holds at most pairs plus a bound."""
    held = PairBuffer(bound)
    every: list[tuple[int, int, int]] = []
    for batch in batches:
        held.add(
            np.array([t[0] for t in batch], np.int64),
            np.array([t[1] for t in batch], np.int32),
            np.array([t[2] for t in batch], np.int64),
        )
        every += batch
        pairs = len({(k, loc) for k, loc, _ in every})
        assert held.held <= max(bound, 2 * pairs) + len(batch)
    keys, locs, counts = held.arrays()
    assert len(keys) == held.held
    params = SieveParams.from_dict({"min_run_keys": "2", "min_keys_per_block": "2"})
    if not every:
        assert held.held == 0
        return
    got = walk(keys, locs, counts, params)
    want = walk(
        np.array([t[0] for t in every], np.int64),
        np.array([t[1] for t in every], np.int32),
        np.array([t[2] for t in every], np.int64),
        params,
    )
    for name in (f.name for f in dataclasses.fields(SegmentSet)):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name
