"""The zone map: shortened bounds, lookups, deltas, stored form, Spark build.

The central properties, for random relations of every supported key type:
answers hold every true location; without shortened bounds one-sided ranges
and points are answered exactly as "min/max" allows (the zone map's own
optimum); deltas keep answers supersets and counts exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import OptionError, UnsupportedKeyTypeError
from lakesieve.indexes.zonemap import plugin
from lakesieve.indexes.zonemap.bounds import lower_bound, upper_bound
from lakesieve.indexes.zonemap.build import build_local
from lakesieve.indexes.zonemap.delta import merge_changes
from lakesieve.indexes.zonemap.lookup import ZoneMapFormatError, ZoneMapIndex, load_index
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import BuiltIndex, KeyQuery
from lakesieve.testing.index_contract import (
    draw_delta,
    ipc_round_trip,
    key_queries,
    key_values,
    relations,
    spark_semantics_key,
    standard_queries,
    true_locations,
)

from tests.indexes.test_exact import ALL_KEY_TYPES, SAMPLES, _sample_rows, _spark_frame

LOCAL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Row = tuple[Any, str]


def _build(rows: list[Row], key_type: str, **options: Any) -> BuiltIndex:
    return build_local([k for k, _ in rows], [loc for _, loc in rows], key_type, options)


def _load(built: BuiltIndex) -> ZoneMapIndex:
    return load_index(ipc_round_trip(built)[0])


def _zone_answer(rows: list[Row], query: KeyQuery) -> frozenset[str]:
    """What min/max alone can tell: locations whose [min, max] meets the query."""
    by_loc: dict[str, list[Any]] = {}
    for k, loc in rows:
        if k is not None:
            by_loc.setdefault(loc, []).append(spark_semantics_key(k))
    out = set()
    for loc, keys in by_loc.items():
        lo, hi = min(keys), max(keys)
        if query.kind == "points":
            hit = any(v is not None and lo <= spark_semantics_key(v) <= hi for v in query.values)
        else:
            hit = True
            if query.low is not None:
                b = spark_semantics_key(query.low)
                hit &= hi > b or (query.low_inclusive and hi == b)
            if query.high is not None:
                b = spark_semantics_key(query.high)
                hit &= lo < b or (query.high_inclusive and lo == b)
        if hit:
            out.add(loc)
    return frozenset(out)


# ---------------------------------------------------------------------------
# shortened string bounds
# ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(value=st.text(max_size=40) | st.binary(max_size=40), limit=st.integers(0, 12))
def test_shortened_bounds_stay_bounds(value: str | bytes, limit: int) -> None:
    def raw(v: str | bytes) -> bytes:
        return v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v

    low = lower_bound(value, limit)
    high, cut = upper_bound(value, limit)
    assert type(low) is type(value) and type(high) is type(value)
    assert raw(low) <= raw(value) <= raw(high)
    if limit:
        assert len(raw(low)) <= limit
        assert not cut or len(raw(high)) <= limit + 1
    else:
        assert low == value and high == value and not cut


def test_long_strings_are_shortened_and_still_bound() -> None:
    rows = [("y" * 70 + "a", "a"), ("y" * 70 + "b", "a"), ("z", "b"), ("y" * 69, "c")]
    index = _load(_build(rows, "string", string_prefix_bytes="8"))
    assert index.describe()["shortened_bounds"] == 2  # a and c; "z" is short
    assert index.zones.column("max")[0].as_py() == "yyyyyyyz"
    assert index.lookup(KeyQuery("points", ("y" * 70 + "b",))).locations == {"a", "c"}
    assert index.lookup(KeyQuery("range", low="y" * 70 + "c")).locations == {"a", "b", "c"}
    whole = _load(_build(rows, "string", string_prefix_bytes="0"))
    assert whole.describe()["shortened_bounds"] == 0
    assert whole.lookup(KeyQuery("range", low="y" * 70 + "c")).locations == {"b"}


# ---------------------------------------------------------------------------
# options and hooks
# ---------------------------------------------------------------------------


def test_validate_options() -> None:
    assert plugin.ZoneMapIndexType().validate({}, "date") == {"string_prefix_bytes": 64}
    assert plugin.ZoneMapIndexType().validate({"string_prefix_bytes": "0"}, "string") == {
        "string_prefix_bytes": 0
    }
    with pytest.raises(OptionError, match=r"'fpp'.*valid options: string_prefix_bytes"):
        plugin.ZoneMapIndexType().validate({"fpp": "0.1"}, "string")
    with pytest.raises(OptionError, match=r"'string_prefix_bytes'.*expects an integer >= 0"):
        plugin.ZoneMapIndexType().validate({"string_prefix_bytes": "many"}, "string")
    with pytest.raises(OptionError, match="string_prefix_bytes"):
        plugin.ZoneMapIndexType().validate({"string_prefix_bytes": "-1"}, "string")
    with pytest.raises(UnsupportedKeyTypeError, match=r"struct<a:int>"):
        plugin.ZoneMapIndexType().validate({}, "struct<a:int>")
    assert not isinstance(registry.index_type("exact"), plugin.ZoneMapIndexType)


# ---------------------------------------------------------------------------
# lookups and deltas without Spark
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@LOCAL
@given(data=st.data())
def test_lookups_are_what_min_max_allow(key_type: str, data: st.DataObject) -> None:
    values = key_values(key_type)
    rows = data.draw(relations(values))
    queries = standard_queries(rows) + data.draw(
        st.lists(key_queries(values, rows), min_size=8, max_size=8)
    )
    shortened = _load(_build(rows, key_type))
    whole = _load(_build(rows, key_type, string_prefix_bytes=0))
    for q in queries:
        truth = true_locations(rows, q)
        got = shortened.lookup(q).locations
        assert got is not None and truth <= got, q
        if q.kind == "is_null":
            assert whole.lookup(q).locations == truth
        else:
            assert whole.lookup(q).locations == _zone_answer(rows, q), q
    d = whole.describe()
    assert d["source"] == "data" and d["rows"] == len(rows)
    assert d["null_rows"] == sum(1 for k, _ in rows if k is None)


@pytest.mark.parametrize("key_type", ["bigint", "double", "string", "decimal(30,3)", "date"])
@LOCAL
@given(data=st.data())
def test_delta_keeps_supersets_and_exact_counts(key_type: str, data: st.DataObject) -> None:
    order = KeyOrder.of(key_type)
    values = key_values(key_type)
    rows = data.draw(relations(values))
    delta, after = draw_delta(data, values, rows)
    changes = _changes(order, delta)
    merged = _load(merge_changes(_load(_build(rows, key_type)), changes, {}))
    fresh = _load(_build(after, key_type))
    queries = standard_queries(after) + data.draw(
        st.lists(key_queries(values, after), min_size=6, max_size=6)
    )
    for q in queries:
        got = merged.lookup(q).locations
        assert got is not None and true_locations(after, q) <= got, q
        assert (fresh.lookup(q).locations or frozenset()) <= got
    assert (
        merged.lookup(KeyQuery("is_null")).locations == fresh.lookup(KeyQuery("is_null")).locations
    )
    assert sorted(merged.locations.tolist()) == sorted(fresh.locations.tolist())
    assert np.array_equal(merged.rows, fresh.rows)
    assert np.array_equal(merged.null_count, fresh.null_count)
    assert np.array_equal(merged.has_keys, fresh.has_keys)


def _changes(order: KeyOrder, delta: list[tuple[Any, str, int]]) -> pa.Table:
    """Per-location delta summary, as the Spark aggregate of ``apply_delta`` computes it."""
    names = sorted({loc for _, loc, _ in delta})
    mins: list[Any] = []
    maxs: list[Any] = []
    rows, nulls = [], []
    for name in names:
        mine = [(k, n) for k, loc, n in delta if loc == name]
        added = [k for k, n in mine if n > 0 and k is not None]
        key = lambda v: spark_semantics_key(v)  # noqa: E731
        mins.append(min(added, key=key) if added else None)
        maxs.append(max(added, key=key) if added else None)
        rows.append(sum(n for _, n in mine))
        nulls.append(sum(n for k, n in mine if k is None))
    return pa.table(
        {
            "location": pa.array(names, pa.string()),
            "min": pa.array(mins, order.arrow_type()),
            "max": pa.array(maxs, order.arrow_type()),
            "rows": pa.array(rows, pa.int64()),
            "nulls": pa.array(nulls, pa.int64()),
        }
    )


def test_removals_keep_bounds_and_empty_locations_go() -> None:
    rows = [(1, "a"), (9, "a"), (5, "b"), (None, "c"), (4, "c")]
    index = _load(_build(rows, "bigint"))
    order = KeyOrder.of("bigint")
    delta = [(9, "a", -1), (5, "b", -1), (4, "c", -1), (20, "d", 2)]
    merged = _load(merge_changes(index, _changes(order, delta), {}))
    assert merged.locations.tolist() == ["a", "c", "d"]
    assert merged.lookup(KeyQuery("points", (9,))).locations == {"a"}  # kept: a superset
    assert merged.lookup(KeyQuery("range", low=4, high=4)).locations == {"a"}  # c: nulls only
    assert merged.lookup(KeyQuery("is_null")).locations == {"c"}
    assert merged.lookup(KeyQuery("range", low=10)).locations == {"d"}


# ---------------------------------------------------------------------------
# stored form
# ---------------------------------------------------------------------------


def test_load_rejects_corrupt_files() -> None:
    built = _build([(1, "a"), (9, "a"), (None, "b")], "bigint")
    zones = built.files["zones"]

    def with_zones(table: pa.Table) -> BuiltIndex:
        return BuiltIndex(files={"zones": table}, meta=dict(built.meta))

    swapped = zones.set_column(1, "min", zones.column("max")).set_column(
        2, "max", zones.column("min")
    )
    with pytest.raises(ZoneMapFormatError, match="exceeds"):
        load_index(with_zones(swapped))
    too_many_nulls = zones.set_column(4, "null_count", pa.array([5, 1], pa.int64()))
    with pytest.raises(ZoneMapFormatError):
        load_index(with_zones(too_many_nulls))
    with pytest.raises(ZoneMapFormatError, match="missing"):
        load_index(BuiltIndex(files={}, meta=dict(built.meta)))
    with pytest.raises(ZoneMapFormatError, match="do not fit"):
        load_index(BuiltIndex(files=built.files, meta={**built.meta, "key_type": "string"}))


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
def test_spark_build_equals_local_build(spark: Any, key_type: str) -> None:
    """Spark's min/max order agrees with the comparison forms (NaN, -0.0, UTF-8, decimals)."""
    rows = _sample_rows(key_type)
    params = plugin.ZoneMapIndexType().validate({}, key_type)
    assert params is not None
    built = plugin.ZoneMapIndexType().build(
        spark, _spark_frame(spark, key_type, rows), key_type, params
    )
    assert built is not None
    index = plugin.ZoneMapIndexType().load(ipc_round_trip(built)[0])
    local = _load(_build(rows, key_type))
    assert built.meta == local.meta
    assert np.array_equal(index.min_forms, local.min_forms)
    assert np.array_equal(index.max_forms, local.max_forms)
    for v in SAMPLES[key_type]:
        for q in (KeyQuery("points", (v,)), KeyQuery("range", low=v, low_inclusive=False)):
            assert true_locations(rows, q) <= (index.lookup(q).locations or frozenset())
    d = plugin.ZoneMapIndexType().describe(index)
    assert d is not None and d["source"] == "data" and d["size_bytes"] == ipc_round_trip(built)[1]


@pytest.mark.spark
def test_spark_apply_delta(spark: Any) -> None:
    rows = _sample_rows("double")
    index = _load(_build(rows, "double"))
    frame = spark.createDataFrame(
        [(100.0, "part=9/new", 1), (-5.0, "part=0/fg-0", 2), (None, "part=1/fg-1", 1)],
        "key double, location string, count bigint",
    )
    built = plugin.ZoneMapIndexType().apply_delta(spark, index, frame, {})
    assert built is not None
    merged = _load(built)
    assert merged.lookup(KeyQuery("range", low=50.0, high=200.0)).locations == {
        "part=9/new",
        *(index.lookup(KeyQuery("range", low=50.0, high=200.0)).locations or ()),
    }
    assert "part=0/fg-0" in (merged.lookup(KeyQuery("points", (-5.0,))).locations or ())
    assert "part=1/fg-1" in (merged.lookup(KeyQuery("is_null")).locations or ())
    assert merged.describe()["rows"] == len(rows) + 4
