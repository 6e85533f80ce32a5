"""The Bloom index: the shared hash, filter sizing and rates, lookups, deltas, Spark build.

The central properties: a key hashes the same in Spark's Python workers
(build) and on the driver (lookup) for every key type, so a lookup of a key
a location holds always selects it; ranges are never pruned; IS NULL is
exact; deltas never lose a location.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import OptionError, UnsupportedKeyTypeError
from lakesieve.indexes.bloom import plugin
from lakesieve.indexes.bloom.build import build_local, filter_rows_local
from lakesieve.indexes.bloom.delta import filter_shapes, merge_changes
from lakesieve.indexes.bloom.filters import (
    filter_shape,
    make_bits,
    might_contain,
    probe_locations,
)
from lakesieve.indexes.bloom.hashing import key_hashes, mix64, value_hashes
from lakesieve.indexes.bloom.lookup import BloomFormatError, BloomIndex, load_index
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import BuiltIndex, KeyQuery
from lakesieve.testing.index_contract import (
    draw_delta,
    ipc_round_trip,
    key_queries,
    key_values,
    relations,
    standard_queries,
    true_locations,
)

from tests.indexes.test_exact import ALL_KEY_TYPES, SAMPLES, _sample_rows, _spark_frame

LOCAL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Row = tuple[Any, str]


def _build(rows: list[Row], key_type: str, **options: Any) -> BuiltIndex:
    return build_local([k for k, _ in rows], [loc for _, loc in rows], key_type, options)


def _load(built: BuiltIndex) -> BloomIndex:
    return load_index(ipc_round_trip(built)[0])


# ---------------------------------------------------------------------------
# the hash
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_array_and_value_hashes_agree(key_type: str, data: st.DataObject) -> None:
    order = KeyOrder.of(key_type)
    values = data.draw(st.lists(key_values(key_type), max_size=10))
    hashes, valid = key_hashes(pa.array([*values, None], order.arrow_type()), order)
    assert valid.tolist() == [True] * len(values) + [False]
    for value, h in zip(values, hashes[:-1], strict=True):
        assert value_hashes(value, order) == [int(h)]


def test_hash_separates_near_values() -> None:
    strings = KeyOrder.of("string")
    keys = ["", "\x00", "a", "a\x00", "a\x00\x00", "commonprefix_1", "commonprefix_2", "é"]
    hashes = key_hashes(pa.array(keys), strings)[0]
    assert len(set(hashes.tolist())) == len(keys)
    rng = np.random.default_rng(7)
    many = [
        bytes(rng.integers(0, 256, int(n)).astype(np.uint8)) for n in rng.integers(0, 40, 50_000)
    ]
    distinct = len(set(many))
    assert (
        len(set(key_hashes(pa.array(many, pa.binary()), KeyOrder.of("binary"))[0].tolist()))
        == distinct
    )
    ints = key_hashes(pa.array(np.arange(-50_000, 50_000)), KeyOrder.of("bigint"))[0]
    assert len(np.unique(ints)) == 100_000
    assert mix64(np.array([1, 2], np.uint64)).dtype == np.uint64


def test_equal_values_share_a_hash() -> None:
    doubles = KeyOrder.of("double")
    assert value_hashes(-0.0, doubles) == value_hashes(0.0, doubles)
    assert value_hashes(math.nan, doubles) == value_hashes(-math.nan, doubles)
    wide = KeyOrder.of("decimal(30,3)")
    assert value_hashes(pa.scalar(1, pa.int64()).as_py(), wide) == value_hashes(
        pa.array([1], pa.decimal128(30, 3))[0].as_py(), wide
    )
    # no integer equals 1.5 in Spark's comparison, so nothing is probed
    assert value_hashes(1.5, KeyOrder.of("int")) == []
    assert value_hashes(2.0, KeyOrder.of("int")) == value_hashes(2, KeyOrder.of("int"))


# ---------------------------------------------------------------------------
# filters
# ---------------------------------------------------------------------------


def test_filter_shape() -> None:
    assert filter_shape(0, 0.01) == (0, 0)
    bits, probes = filter_shape(1000, 0.01)
    assert bits % 64 == 0 and 9500 <= bits <= 9700 and probes == 7
    assert filter_shape(1, 0.01)[0] == 64


@pytest.mark.parametrize("fpp", [0.01, 0.001])
def test_false_positive_rate_is_near_the_target(fpp: float) -> None:
    rng = np.random.default_rng(1)
    held = rng.integers(0, 2**62, 20_000).astype(np.uint64)
    absent = rng.integers(2**62, 2**63, 100_000).astype(np.uint64)
    bits, probes = filter_shape(len(held), fpp)
    raw = make_bits(held, bits, probes)
    assert might_contain(held, raw, bits, probes).all()
    rate = float(might_contain(absent, raw, bits, probes).mean())
    assert fpp / 3 <= rate <= fpp * 2, rate
    data = np.frombuffer(raw + b"\0", np.uint8)
    one = {
        "num_bits": np.array([bits, 0]),
        "num_probes": np.array([probes, 0]),
        "byte_offset": np.array([0, len(raw)]),
        "data": data,
    }
    assert probe_locations(held[:3], **one).tolist() == [True, False]
    assert probe_locations(absent[:0], **one).tolist() == [False, False]


# ---------------------------------------------------------------------------
# options and hooks
# ---------------------------------------------------------------------------


def test_validate_options() -> None:
    assert plugin.BloomIndexType().validate({}, "string") == {
        "fpp": 0.01,
        "expected_keys": None,
    }
    assert plugin.BloomIndexType().validate({"fpp": "0.05", "expected_keys": "1000"}, "int") == {
        "fpp": 0.05,
        "expected_keys": 1000,
    }
    assert plugin.BloomIndexType().validate({"expected_keys": "auto"}, "int") == {
        "fpp": 0.01,
        "expected_keys": None,
    }
    with pytest.raises(OptionError, match=r"'fpp' of index type 'bloom' expects a number > 0"):
        plugin.BloomIndexType().validate({"fpp": "often"}, "int")
    with pytest.raises(OptionError, match="'fpp'"):
        plugin.BloomIndexType().validate({"fpp": "0.9"}, "int")
    with pytest.raises(OptionError, match=r"'expected_keys'.*integer"):
        plugin.BloomIndexType().validate({"expected_keys": "1.5"}, "int")
    with pytest.raises(OptionError, match=r"'block_size'.*valid options: expected_keys, fpp"):
        plugin.BloomIndexType().validate({"block_size": "1"}, "int")
    with pytest.raises(UnsupportedKeyTypeError, match=r"array<string>"):
        plugin.BloomIndexType().validate({}, "array<string>")


def test_expected_keys_sizes_every_filter() -> None:
    rows = [(i, f"loc-{i % 3}") for i in range(30)]
    auto = _load(_build(rows, "bigint"))
    fixed = _load(_build(rows, "bigint", expected_keys=1000, fpp=0.001))
    assert auto.num_bits.tolist() == [filter_shape(10, 0.01)[0]] * 3
    assert fixed.num_bits.tolist() == [filter_shape(1000, 0.001)[0]] * 3
    assert fixed.describe()["params"] == {"fpp": 0.001, "expected_keys": 1000}


# ---------------------------------------------------------------------------
# lookups and deltas without Spark
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@LOCAL
@given(data=st.data())
def test_lookups_hold_every_true_location(key_type: str, data: st.DataObject) -> None:
    values = key_values(key_type)
    rows = data.draw(relations(values))
    queries = standard_queries(rows) + data.draw(
        st.lists(key_queries(values, rows), min_size=8, max_size=8)
    )
    index = _load(_build(rows, key_type))
    for q in queries:
        got = index.lookup(q).locations
        if q.kind == "range":
            assert got is None
        elif q.kind == "is_null":
            assert got == true_locations(rows, q)
        else:
            assert got is not None and true_locations(rows, q) <= got, q
    d = index.describe()
    assert d["rows"] == len(rows) and d["size_bytes"] == ipc_round_trip(_build(rows, key_type))[1]


@pytest.mark.parametrize("key_type", ["bigint", "double", "string", "decimal(30,3)", "timestamp"])
@LOCAL
@given(data=st.data())
def test_delta_never_loses_a_location(key_type: str, data: st.DataObject) -> None:
    order = KeyOrder.of(key_type)
    values = key_values(key_type)
    rows = data.draw(relations(values))
    delta, after = draw_delta(data, values, rows)
    index = _load(_build(rows, key_type))
    changes = filter_rows_local(
        pa.array([k for k, _, _ in delta], order.arrow_type()),
        [loc for _, loc, _ in delta],
        [n for _, _, n in delta],
        key_type,
        index.params,
        filter_shapes(index),
    )
    merged = _load(merge_changes(index, changes, index.params))
    fresh = _load(_build(after, key_type))
    for q in standard_queries(after) + data.draw(
        st.lists(key_queries(values, after), min_size=6, max_size=6)
    ):
        got = merged.lookup(q).locations
        if q.kind == "is_null":
            assert got == true_locations(after, q)
        elif q.kind == "points":
            assert got is not None and true_locations(after, q) <= got, q
    assert merged.locations.tolist() == fresh.locations.tolist()
    assert np.array_equal(merged.rows, fresh.rows)
    assert np.array_equal(merged.null_count, fresh.null_count)


def _merged(index: BloomIndex, delta: list[tuple[Any, str, int]], key_type: str) -> BloomIndex:
    """``index`` with ``delta``'s ``(key, location, count)`` rows folded in on the driver."""
    changes = filter_rows_local(
        pa.array([k for k, _, _ in delta], KeyOrder.of(key_type).arrow_type()),
        [loc for _, loc, _ in delta],
        [n for _, _, n in delta],
        key_type,
        index.params,
        filter_shapes(index),
    )
    return _load(merge_changes(index, changes, index.params))


def test_removed_keys_keep_their_bits_until_a_rebuild() -> None:
    rows = [("a", "x"), ("b", "x"), ("c", "y"), (None, "z"), ("d", "z")]
    index = _load(_build(rows, "string"))
    delta = [("a", "x", -1), ("c", "y", -1), ("d", "z", -1), ("e", "w", 1), ("f", "x", 1)]
    merged = _merged(index, delta, "string")
    assert merged.locations.tolist() == ["w", "x", "z"]  # y emptied
    assert merged.lookup(KeyQuery("points", ("a",))).locations == {"x"}  # kept: a superset
    assert merged.lookup(KeyQuery("points", ("f",))).locations == {"x"}
    assert merged.lookup(KeyQuery("points", ("e",))).locations == {"w"}
    assert merged.lookup(KeyQuery("points", ("d",))).locations == frozenset()  # z: nulls only
    assert merged.lookup(KeyQuery("is_null")).locations == {"z"}
    assert merged.num_bits[merged.locations.tolist().index("x")] == index.num_bits[0]
    # changed filters are marked; the one the delta brought whole is as a build writes it
    assert dict(zip(merged.locations.tolist(), merged.as_built.tolist(), strict=True)) == {
        "w": True,
        "x": False,
        "z": False,
    }
    assert plugin.BloomIndexType().inexact_locations(merged) == ["x", "z"]


def test_filters_built_again_equal_a_fresh_build() -> None:
    """Dropping the changed filters and folding their locations' rows back in gives a build's table."""
    itype = plugin.BloomIndexType()
    before = [(k, f"loc{k % 3}") for k in range(60)] + [(None, "loc0")]
    after = [(k, loc) for k, loc in before if k is None or k % 5] + [
        (k, f"loc{k % 4}") for k in range(100, 400)
    ]
    removed = [(k, loc, -1) for k, loc in before if k is not None and not k % 5]
    delta = removed + [(k, f"loc{k % 4}", 1) for k in range(100, 400)]
    index = _load(_build(before, "bigint"))
    assert itype.inexact_locations(index) == []
    merged = _merged(index, delta, "bigint")
    stale = itype.inexact_locations(merged)
    assert stale == ["loc0", "loc1", "loc2"]  # loc3 came whole
    kept = itype.without_locations(merged, [*stale, "not-there"])
    assert kept.locations.tolist() == ["loc3"]
    again = [(k, loc, 1) for k, loc in after if loc in stale]
    rebuilt = itype.apply_delta_arrow(
        kept,
        pa.table(
            {
                "key": pa.array([k for k, _, _ in again], pa.int64()),
                "location": [loc for _, loc, _ in again],
                "count": pa.array([n for _, _, n in again], pa.int64()),
            }
        ),
        {},
    )
    assert rebuilt is not None
    fresh = _build(after, "bigint")
    assert rebuilt.files["filters"].equals(fresh.files["filters"])
    assert not merged.filters.equals(fresh.files["filters"])  # the fold alone is not a build


def test_an_index_stored_without_as_built_reads_as_every_filter_changed() -> None:
    built = _build([(1, "a"), (2, "b")], "bigint")
    older = built.files["filters"].drop_columns(["as_built"])
    index = load_index(BuiltIndex(files={"filters": older}, meta=built.meta))
    assert index.as_built.tolist() == [False, False]
    assert index.lookup(KeyQuery("points", (2,))).locations == {"b"}


# ---------------------------------------------------------------------------
# stored form
# ---------------------------------------------------------------------------


def test_load_rejects_corrupt_files() -> None:
    built = _build([(1, "a"), (2, "b"), (None, "b")], "bigint")
    table = built.files["filters"]
    short = table.set_column(6, "bits", pa.array([b"\0", b"\0"], pa.large_binary()))
    with pytest.raises(BloomFormatError, match="bytes disagree"):
        load_index(BuiltIndex(files={"filters": short}, meta=dict(built.meta)))
    with pytest.raises(BloomFormatError, match="hash scheme"):
        load_index(BuiltIndex(files=built.files, meta={**built.meta, "hash": "other-hash"}))
    probes = table.set_column(2, "num_hashes", pa.array([0, 99], pa.int32()))
    with pytest.raises(BloomFormatError, match="probes"):
        load_index(BuiltIndex(files={"filters": probes}, meta=dict(built.meta)))
    with pytest.raises(BloomFormatError, match="missing"):
        load_index(BuiltIndex(files={}, meta=dict(built.meta)))


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------


def _hash_columns(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        arrays = []
        for i, key_type in enumerate(ALL_KEY_TYPES):
            hashes, valid = key_hashes(batch.column(i), KeyOrder.of(key_type))
            arrays.append(pa.array(hashes.view(np.int64), pa.int64(), mask=~valid))
        yield pa.RecordBatch.from_arrays(arrays, names=[f"h{i}" for i in range(len(arrays))])


@pytest.mark.spark
def test_spark_workers_hash_like_the_driver(spark: Any) -> None:
    width = max(len(v) for v in SAMPLES.values())
    columns = {}
    for i, key_type in enumerate(ALL_KEY_TYPES):
        values = SAMPLES[key_type]
        padded = [values[j % len(values)] for j in range(width)]
        columns[f"c{i}"] = pa.array(padded, KeyOrder.of(key_type).arrow_type())
    ddl = ", ".join(f"c{i} {t}" for i, t in enumerate(ALL_KEY_TYPES))
    frame = spark.createDataFrame(pa.table(columns), schema=ddl)
    out_ddl = ", ".join(f"h{i} bigint" for i in range(len(ALL_KEY_TYPES)))
    hashed = frame.mapInArrow(_hash_columns, out_ddl).toArrow()
    for i, key_type in enumerate(ALL_KEY_TYPES):
        got = [h & (2**64 - 1) for h in hashed.column(f"h{i}").to_pylist()]
        values = columns[f"c{i}"].to_pylist()
        want = [value_hashes(v, KeyOrder.of(key_type))[0] for v in values]
        assert sorted(got) == sorted(want), key_type


@pytest.mark.spark
@pytest.mark.parametrize("key_type", ["bigint", "string", "double", "decimal(30,3)", "date"])
def test_spark_build_equals_local_build(spark: Any, key_type: str) -> None:
    rows = _sample_rows(key_type)
    params = plugin.BloomIndexType().validate({"fpp": "0.02"}, key_type)
    assert params is not None
    built = plugin.BloomIndexType().build(
        spark, _spark_frame(spark, key_type, rows), key_type, params
    )
    assert built is not None
    local = _build(rows, key_type, fpp="0.02")
    assert built.meta == local.meta
    assert built.files["filters"].equals(local.files["filters"])
    index = plugin.BloomIndexType().load(ipc_round_trip(built)[0])
    for v in SAMPLES[key_type]:
        q = KeyQuery("points", (v,))
        assert true_locations(rows, q) <= (index.lookup(q).locations or frozenset())
    assert index.lookup(KeyQuery("range", low=SAMPLES[key_type][0])).locations is None
    d = plugin.BloomIndexType().describe(index)
    assert d is not None and 0 <= d["estimated_fpp"] < 0.05 and d["params"]["fpp"] == 0.02


@pytest.mark.spark
@pytest.mark.parametrize("known", ["all", "all but one", "extra"])
def test_spark_build_with_known_locations_equals_local_build(spark: Any, known: str) -> None:
    """Locations handed to the build travel as ids; one it was not told of travels by name."""
    key_type = "bigint"
    rows = _sample_rows(key_type)
    names = sorted({loc for _, loc in rows})
    if known == "all but one":
        names = names[1:]
    elif known == "extra":
        names = [*names, "part=9/never-written"]
    itype = plugin.BloomIndexType()
    params = itype.validate({"fpp": "0.02"}, key_type)
    built = itype.build(spark, _spark_frame(spark, key_type, rows), key_type, params, names)
    local = _build(rows, key_type, fpp="0.02")
    assert built.meta == local.meta
    assert built.files["filters"].equals(local.files["filters"])


@pytest.mark.spark
def test_spark_apply_delta(spark: Any) -> None:
    rows = _sample_rows("bigint")
    index = _load(_build(rows, "bigint"))
    frame = spark.createDataFrame(
        [(123, "part=9/new", 1), (5, "part=0/fg-0", 2), (None, "part=1/fg-1", 1)],
        "key bigint, location string, count bigint",
    )
    built = plugin.BloomIndexType().apply_delta(spark, index, frame, {})
    assert built is not None
    merged = _load(built)
    assert "part=9/new" in (merged.lookup(KeyQuery("points", (123,))).locations or ())
    assert "part=0/fg-0" in (merged.lookup(KeyQuery("points", (5,))).locations or ())
    assert "part=1/fg-1" in (merged.lookup(KeyQuery("is_null")).locations or ())
    assert merged.describe()["rows"] == len(rows) + 4


@pytest.mark.spark
@pytest.mark.parametrize("key_type", ["bigint", "string", "double", "decimal(30,3)", "date"])
def test_one_shuffle_build_equals_local_build(spark: Any, key_type: str) -> None:
    """Rows coded by location, counted per pair after one shuffle: the local build's filters."""
    from lakesieve.indexes.bloom.build import filters_by_code, from_filter_rows
    from lakesieve.keys.location_codes import LocationCodes

    rows = [*_sample_rows(key_type), (None, "part=0/fg-0"), (None, "part=5/only-nulls")]
    names = sorted({loc for _, loc in rows})
    codes = LocationCodes.of(names)
    assert codes is not None
    params = plugin.BloomIndexType().validate({"fpp": "0.02"}, key_type)
    got = filters_by_code(spark, _spark_frame(spark, key_type, rows), key_type, params, codes, None)
    assert got is not None
    built = from_filter_rows(key_type, params, got)
    local = _build(rows, key_type, fpp="0.02")
    assert built.meta == local.meta
    assert built.files["filters"].equals(local.files["filters"])
    stranger = LocationCodes.of(names[1:])
    assert stranger is not None
    assert (
        filters_by_code(spark, _spark_frame(spark, key_type, rows), key_type, params, stranger, 4)
        is None
    )


def test_small_domain_types_are_counted_in_the_jvm() -> None:
    from lakesieve.indexes.bloom.build import counts_pairs

    assert all(counts_pairs(t) for t in ("date", "boolean", "tinyint", " SMALLINT"))
    assert not any(counts_pairs(t) for t in ("bigint", "int", "string", "double", "timestamp"))


def test_bits_set_in_chunks_equal_bits_set_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakesieve.indexes.bloom import filters

    hashes = np.random.default_rng(5).integers(0, 2**63, 1000).astype(np.uint64)
    bits, probes = filter_shape(len(hashes), 0.01)
    whole = make_bits(hashes, bits, probes)
    monkeypatch.setattr(filters, "_CELLS_PER_CHUNK", 20)
    assert make_bits(hashes, bits, probes) == whole


def test_task_body_holds_distinct_hashes_and_builds_the_general_filters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hashes made distinct along the way (a tiny limit) give the filters of summed pairs."""
    from lakesieve.indexes.bloom import build as bloom_build
    from lakesieve.keys.location_codes import LocationCodes

    monkeypatch.setattr(bloom_build, "COMPACT_HASHES", 3)
    rng = np.random.default_rng(11)
    names = ["a", "b", "c"]
    codes = LocationCodes.from_codes({"a": 900, "b": -4, "c": 17}, names)
    assert codes is not None
    keys = [None if v < 0 else int(v) for v in rng.integers(-3, 12, 300)]
    locs = [names[i] for i in rng.integers(0, 2, 300)]  # "c" holds nothing
    code_of = {"a": 900, "b": -4, "c": 17}
    batches = [
        pa.RecordBatch.from_pydict(
            {
                "key": pa.array(keys[a : a + 7], pa.int64()),
                "code": pa.array([code_of[x] for x in locs[a : a + 7]], pa.int64()),
                "cnt": pa.array([1] * len(keys[a : a + 7]), pa.int64()),
            }
        )
        for a in range(0, 300, 7)
    ]
    got = pa.Table.from_batches(
        list(bloom_build.filters_of_coded(iter(batches), "bigint", 0.01, None, codes))
    )
    want = bloom_build.filter_rows_local(
        pa.array(keys, pa.int64()), locs, np.ones(300, np.int64), "bigint", {"fpp": "0.01"}
    )
    assert got.sort_by("location").to_pylist() == want.sort_by("location").to_pylist()
