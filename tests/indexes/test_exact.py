"""The exact index: comparison forms, options, stored form, lookups, deltas, Spark build.

The central property: for random relations of every supported key type, the
exact index answers every point, IN list, range and IS NULL query with
exactly the locations holding a matching row, before and after deltas, and a
delta gives the same index as a rebuild.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import OptionError, UnsupportedKeyTypeError
from lakesieve.indexes.exact import partitions, plugin
from lakesieve.indexes.exact.build import build_local
from lakesieve.indexes.exact.delta import merge_changes
from lakesieve.indexes.exact.loading import load_index
from lakesieve.indexes.exact.lookup import ExactFormatError
from lakesieve.indexes.exact.partitioned import PartitionedExactIndex
from lakesieve.indexes.exact.spark_files import (
    SPARK_FILES_FORMAT,
    codes_of_table,
    partition_from_codes,
)
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

#: Every key type the exact index (and the zone map and Bloom filter) indexes.
ALL_KEY_TYPES = [
    "tinyint",
    "int",
    "bigint",
    "boolean",
    "float",
    "double",
    "date",
    "timestamp",
    "timestamp_ntz",
    "decimal(10,2)",
    "decimal(30,3)",
    "string",
    "binary",
]

LOCAL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(built: BuiltIndex) -> PartitionedExactIndex:
    copy, _ = ipc_round_trip(built)
    return load_index(copy)


def _build(rows: list[tuple[Any, str]], key_type: str) -> BuiltIndex:
    return build_local([k for k, _ in rows], [loc for _, loc in rows], key_type)


def _pairs(built: BuiltIndex, key_type: str) -> list[tuple[Any, str, int]]:
    """Every (key form, location, count) row of a format-2 or format-3 index's partitions, in file order.

    Keys are given as their comparison forms (``-0.0`` and ``0.0`` are one key, as are NaNs).
    A format-3 partition (raw rows Spark wrote) is laid out as loading lays it out.
    """
    order = KeyOrder.of(key_type)
    codes = None
    if built.meta.get("format_version") == SPARK_FILES_FORMAT:
        codes = codes_of_table(built.files["locations"])
    out: list[tuple[Any, str, int]] = []
    for name in built.files["manifest"].column("file").to_pylist():
        part = built.files[name]
        if codes is not None:
            assert "location" not in part.column_names
            part = partition_from_codes(order, part, codes)
        locs = part.column("location").combine_chunks().dictionary_decode().to_pylist()
        keys = part.column("key").combine_chunks()
        forms = order.array(keys).tolist()
        nulls = keys.is_null().to_pylist()
        forms = [None if n else f for f, n in zip(forms, nulls, strict=True)]
        out += list(zip(forms, locs, part.column("count").to_pylist(), strict=True))
    return out


def _assert_same_files(got: BuiltIndex, want: BuiltIndex, key_type: str) -> None:
    """Equal files; key columns compared by their comparison forms (Arrow never equates NaNs)."""
    order = KeyOrder.of(key_type)
    assert sorted(got.files) == sorted(want.files)
    for name, table in want.files.items():
        other = got.files[name]
        assert other.column_names == table.column_names, name
        for col in table.column_names:
            a, b = other.column(col).combine_chunks(), table.column(col).combine_chunks()
            if col in ("key", "low", "high"):
                assert a.type == b.type and a.is_null().equals(b.is_null()), (name, col)
                assert order.array(a).tolist() == order.array(b).tolist(), (name, col)
            else:
                assert a.equals(b), (name, col)


@pytest.fixture
def small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut indexes into partitions of a few pairs, so lookups span several of them."""
    monkeypatch.setattr(partitions, "PAIRS_PER_PARTITION", 3)
    monkeypatch.setattr(partitions, "ROWS_PER_PARTITION", 4)


# ---------------------------------------------------------------------------
# comparison forms
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@LOCAL
@given(data=st.data())
def test_forms_of_arrays_equal_forms_of_values(key_type: str, data: st.DataObject) -> None:
    order = KeyOrder.of(key_type)
    values = data.draw(st.lists(key_values(key_type), max_size=12))
    forms = order.array(pa.array(values, order.arrow_type()))
    for value, form in zip(values, forms, strict=True):
        q = order.query(value)
        assert q.exact and q.low == form and q.high == form and q.points() == [form]


def test_forms_keep_what_the_prefix_mapping_loses() -> None:
    strings = KeyOrder.of("string")
    a, b = strings.query("commonprefix_1").low, strings.query("commonprefix_2").low
    assert a < b
    wide = KeyOrder.of("decimal(30,3)")
    assert wide.query(decimal.Decimal("1.001")).low > wide.query(decimal.Decimal("1.000")).low


@pytest.mark.parametrize(
    ("key_type", "value", "exact"),
    [
        ("int", 3, True),
        ("int", 2.5, False),
        ("int", decimal.Decimal("4.0"), True),
        ("bigint", 2**70, False),
        ("date", dt.date(2000, 1, 1), True),
        ("date", dt.datetime(2000, 1, 1), True),
        ("date", dt.datetime(2000, 1, 1, 12), False),
        ("timestamp", dt.date(2000, 1, 1), True),
        ("decimal(10,2)", decimal.Decimal("1.5"), True),
        ("decimal(10,2)", decimal.Decimal("1.505"), False),
        ("float", 1.5, True),
        ("float", 0.1, False),
        ("double", 0.1, True),
        ("double", math.nan, True),
    ],
)
def test_exactness_of_query_values(key_type: str, value: Any, exact: bool) -> None:
    assert KeyOrder.of(key_type).query(value).exact is exact


@pytest.mark.parametrize(
    ("key_type", "value", "low", "high"),
    [
        ("int", 2.5, 2, 3),
        ("int", decimal.Decimal("-2.5"), -3, -2),
        ("date", dt.datetime(2000, 1, 1, 12), dt.date(2000, 1, 1), dt.date(2000, 1, 2)),
        (
            "decimal(10,2)",
            decimal.Decimal("1.505"),
            decimal.Decimal("1.50"),
            decimal.Decimal("1.51"),
        ),
        (
            "decimal(30,3)",
            decimal.Decimal("1.0005"),
            decimal.Decimal("1.000"),
            decimal.Decimal("1.001"),
        ),
        ("float", 0.1, 0.099999994, 0.1),
    ],
)
def test_values_between_column_values_get_both_neighbours(
    key_type: str, value: Any, low: Any, high: Any
) -> None:
    order = KeyOrder.of(key_type)
    q = order.query(value)
    column = pa.array([low, high], order.arrow_type())
    assert [q.low, q.high] == order.array(column).tolist()


def test_unsupported_key_type_is_named() -> None:
    with pytest.raises(UnsupportedKeyTypeError, match=r"array<int>"):
        KeyOrder.of("array<int>", "exact")


# ---------------------------------------------------------------------------
# options and hooks
# ---------------------------------------------------------------------------


def test_validate_takes_no_options() -> None:
    assert plugin.ExactIndexType().validate({}, "string") == {}
    with pytest.raises(OptionError, match=r"'fpp'.*valid options: none"):
        plugin.ExactIndexType().validate({"fpp": "0.1"}, "string")
    with pytest.raises(UnsupportedKeyTypeError, match="map<string,int>"):
        plugin.ExactIndexType().validate({}, "map<string,int>")
    assert not isinstance(registry.index_type("bloom"), plugin.ExactIndexType)


# ---------------------------------------------------------------------------
# lookups and deltas without Spark
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@LOCAL
@given(data=st.data())
def test_lookups_are_exact(key_type: str, data: st.DataObject) -> None:
    rows = data.draw(relations(key_values(key_type)))
    queries = standard_queries(rows) + data.draw(
        st.lists(key_queries(key_values(key_type), rows), min_size=8, max_size=8)
    )
    index = _load(_build(rows, key_type))
    for q in queries:
        assert index.lookup(q).locations == true_locations(rows, q), q
    d = index.describe()
    assert d["rows"] == len(rows)
    assert d["null_rows"] == sum(1 for k, _ in rows if k is None)
    assert d["locations"] == len({loc for _, loc in rows})


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@LOCAL
@given(data=st.data())
def test_delta_equals_rebuild(key_type: str, data: st.DataObject) -> None:
    order = KeyOrder.of(key_type)
    rows = data.draw(relations(key_values(key_type)))
    delta, after = draw_delta(data, key_values(key_type), rows)
    changes = pa.table(
        {
            "key": pa.array([k for k, _, _ in delta], order.arrow_type()),
            "location": pa.array([loc for _, loc, _ in delta], pa.string()),
            "cnt": pa.array([n for _, _, n in delta], pa.int64()),
        }
    )
    merged = merge_changes(_load(_build(rows, key_type)), changes, {})
    fresh = _build(after, key_type)
    assert merged.meta == fresh.meta
    _assert_same_files(merged, fresh, key_type)
    got = _load(merged)
    for q in standard_queries(after):
        assert got.lookup(q).locations == true_locations(after, q)


@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_lookups_across_many_partitions_are_exact(
    small_partitions: None, key_type: str, data: st.DataObject
) -> None:
    rows = data.draw(relations(key_values(key_type)))
    queries = standard_queries(rows) + data.draw(
        st.lists(key_queries(key_values(key_type), rows), min_size=8, max_size=8)
    )
    built = _build(rows, key_type)
    parts = built.files["manifest"].num_rows
    distinct = len({KeyOrder.of(key_type).query(k).low for k, _ in rows if k is not None})
    assert parts >= min(distinct, 1 + (distinct - 1) // 3)
    index = _load(built)
    for q in queries:
        assert index.lookup(q).locations == true_locations(rows, q), q


def test_lookups_read_only_the_partitions_they_need(small_partitions: None) -> None:
    rows = [(k, f"loc-{k % 5}") for k in range(40)] + [(None, "loc-null")]
    built, _ = ipc_round_trip(_build(rows, "bigint"))
    in_memory = {n: t for n, t in built.files.items() if not n.startswith("part-")}
    read: list[str] = []

    def fetch(name: str) -> pa.Table:
        read.append(name)
        return built.files[name]

    index = load_index(BuiltIndex(files=in_memory, meta=built.meta, fetch=fetch))
    assert read == [] and index.describe()["partitions"] >= 10
    assert index.lookup(KeyQuery("points", (7,))).locations == {"loc-2"}
    assert len(read) == 1
    assert index.lookup(KeyQuery("points", (7, 8))).locations == {"loc-2", "loc-3"}
    assert len(read) <= 2  # the partition of 7 came from the cache
    assert index.lookup(KeyQuery("range", low=30, high=32)).locations == {"loc-0", "loc-1", "loc-2"}
    assert index.lookup(KeyQuery("is_null")).locations == {"loc-null"}
    assert len(set(read)) < built.files["manifest"].num_rows
    assert index.lookup(KeyQuery("range", low=100)).locations == frozenset()


def test_partition_cache_is_bounded(
    small_partitions: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakesieve.indexes.exact import partitioned

    monkeypatch.setattr(partitioned, "CACHE_BYTES", 1)
    rows = [(k, f"loc-{k % 5}") for k in range(40)]
    index = _load(_build(rows, "bigint"))
    for k in range(40):
        assert index.lookup(KeyQuery("points", (k,))).locations == {f"loc-{k % 5}"}
    assert isinstance(index, partitioned.PartitionedExactIndex) and len(index._cache) == 1


def test_damaged_partition_fails_the_lookup_not_the_answer(small_partitions: None) -> None:
    from lakesieve.errors import IndexCorruptError

    rows = [(k, f"loc-{k % 5}") for k in range(40)]
    built, _ = ipc_round_trip(_build(rows, "bigint"))
    second = built.files["manifest"].column("file")[1].as_py()
    part = built.files[second]
    damaged = {
        "unsorted": part.take(list(reversed(range(part.num_rows)))),
        "shifted": part.set_column(0, "key", pa.array([k + 100 for k in part["key"].to_pylist()])),
        "bad count": part.set_column(2, "count", pa.array([0] * part.num_rows, pa.int64())),
        "no column": part.drop_columns(["count"]),
    }
    low = built.files["manifest"].column("low")[1].as_py()
    for what, table in damaged.items():
        index = load_index(BuiltIndex(files={**built.files, second: table}, meta=built.meta))
        with pytest.raises(IndexCorruptError, match=second):
            index.lookup(KeyQuery("points", (low,)))
        # partitions that are intact still answer
        assert index.lookup(KeyQuery("points", (0,))).locations == {"loc-0"}, what
    missing = {n: t for n, t in built.files.items() if n != second}
    with pytest.raises(IndexCorruptError, match="missing"):
        load_index(BuiltIndex(files=missing, meta=built.meta)).lookup(KeyQuery("points", (low,)))


def test_load_rejects_a_corrupt_manifest() -> None:
    built = _build([(1, "a"), (2, "b"), (3, "a"), (None, "b")], "bigint")
    manifest = built.files["manifest"]
    bad = {
        "file name": manifest.set_column(0, "file", pa.array(["../x"] * manifest.num_rows)),
        "ends before": manifest.set_column(
            2, "high", pa.array([-5] * manifest.num_rows, pa.int64())
        ),
        "columns": manifest.drop_columns(["null_rows"]),
    }
    for what, table in bad.items():
        with pytest.raises(ExactFormatError, match=what):
            load_index(BuiltIndex(files={**built.files, "manifest": table}, meta=built.meta))
    with pytest.raises(ExactFormatError, match="format"):
        load_index(BuiltIndex(files=built.files, meta={**built.meta, "format_version": 99}))


def test_range_bounds_and_mismatched_values() -> None:
    rows = [(1, "a"), (2, "b"), (3, "c"), (None, "n"), (3, "a")]
    index = _load(_build(rows, "bigint"))
    assert index.lookup(KeyQuery("range", low=1, low_inclusive=False, high=3)).locations == {
        "a",
        "b",
        "c",
    }
    assert index.lookup(KeyQuery("range", low=1, high=3, high_inclusive=False)).locations == {
        "a",
        "b",
    }
    # values between two column values compare exactly, as Spark compares them
    # (``k between 1.5 and 2.5`` holds for 2 only; ``k = 2.5`` for no bigint)
    assert index.lookup(KeyQuery("range", low=1.5, high=2.5)).locations == {"b"}
    assert index.lookup(KeyQuery("range", low=1.5, high=1.7)).locations == frozenset()
    assert index.lookup(KeyQuery("range", low=0.5, low_inclusive=False, high=1.5)).locations == {
        "a"
    }
    assert index.lookup(KeyQuery("points", (2.5,))).locations == frozenset()
    assert index.lookup(KeyQuery("range", low=4)).locations == frozenset()
    assert index.lookup(KeyQuery("points", (None,))).locations == frozenset()
    assert index.lookup(KeyQuery("is_null")).locations == {"n"}
    assert index.lookup(KeyQuery("points", ("x",))).locations is None


# ---------------------------------------------------------------------------
# stored form: corrupt files raise instead of answering wrongly
# ---------------------------------------------------------------------------


def test_load_rejects_corrupt_files() -> None:
    from lakesieve.indexes.exact.partitioned import partition_index

    built = _build([(1, "a"), (2, "b"), (3, "a"), (None, "b")], "bigint")
    load_index(built)
    order = KeyOrder.of("bigint")
    (name,) = built.files["manifest"].column("file").to_pylist()
    part = built.files[name]
    assert part.num_rows == 4 and partition_index(order, part).points(order.query(3).points()) == {
        "a"
    }
    with pytest.raises(ExactFormatError, match="sorted"):
        partition_index(order, part.take([1, 0, 2, 3]))
    locs = part.column("location").combine_chunks()
    unknown = pa.DictionaryArray.from_arrays(
        pa.array([0, 7, 0, 1], locs.indices.type), locs.dictionary, safe=False
    )
    with pytest.raises(ExactFormatError, match="unknown location"):
        partition_index(order, part.set_column(1, "location", unknown))
    with pytest.raises(ExactFormatError, match="not positive"):
        partition_index(order, part.set_column(2, "count", pa.array([1, 0, 1, 1], pa.int64())))
    with pytest.raises(ExactFormatError, match="'manifest' is missing"):
        load_index(
            BuiltIndex(
                files={k: v for k, v in built.files.items() if k != "manifest"}, meta=built.meta
            )
        )
    with pytest.raises(ExactFormatError, match="no key type"):
        load_index(BuiltIndex(files=built.files, meta={**built.meta, "key_type": None}))
    with pytest.raises(ExactFormatError, match="do not fit"):
        load_index(BuiltIndex(files=built.files, meta={**built.meta, "key_type": "date"}))


def test_load_refuses_other_format_versions() -> None:
    built = _build([(1, "a"), (2, "b"), (3, "a"), (None, "b")], "bigint")
    # format 1 (every pair in four files read at load) is no longer read, nor any other
    for version in (1, 0, 4, 99, None, "2"):
        with pytest.raises(ExactFormatError, match=f"format version {version!r},") as caught:
            load_index(
                BuiltIndex(files=built.files, meta={**built.meta, "format_version": version})
            )
        assert "\n" not in str(caught.value) and "rebuild" in str(caught.value)


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------

SAMPLES: dict[str, list[Any]] = {
    "tinyint": [-128, -1, 0, 127],
    "int": [-3, 0, 2, 2**31 - 1],
    "bigint": [-(2**63), -7, 0, 2**63 - 1],
    "boolean": [False, True],
    "float": [-math.inf, -2.5, -0.0, 0.0, 1.25, math.nan],
    "double": [-1.5, -0.0, 0.0, 2.25, math.inf, math.nan],
    "date": [dt.date(1970, 1, 1), dt.date(1999, 12, 31), dt.date(2024, 2, 29)],
    "timestamp": [dt.datetime(2000, 1, 1, 0, 0, s, us) for s in range(2) for us in (0, 1)],
    "timestamp_ntz": [dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(2030, 5, 5)],
    "decimal(10,2)": [decimal.Decimal(x) for x in ("-1.50", "0.00", "0.01", "99999999.99")],
    "decimal(30,3)": [
        decimal.Decimal(x)
        for x in ("-123456789012345678901.123", "0.001", "0.002", "123456789012345678901.123")
    ],
    "string": ["", "a", "a\x00", "é", "commonprefix_1", "commonprefix_2", "😀"],
    "binary": [b"", b"\x00", b"\x01\x02", b"\xff" * 9, b"\xff" * 10],
}


def _sample_rows(key_type: str) -> list[tuple[Any, str]]:
    values = SAMPLES[key_type]
    locs = [f"part={i % 2}/fg-{i}" for i in range(4)]
    rows = [(v, locs[(i * 7 + j) % 4]) for i, v in enumerate(values) for j in range(1 + i % 3)]
    return [*rows, (None, locs[0]), (None, locs[3])]


def _spark_frame(spark: Any, key_type: str, rows: list[tuple[Any, str]]) -> Any:
    order = KeyOrder.of(key_type)
    table = pa.table(
        {
            "key": pa.array([k for k, _ in rows], order.arrow_type()),
            "location": pa.array([loc for _, loc in rows], pa.string()),
        }
    )
    return spark.createDataFrame(table, schema=f"key {key_type}, location string")


@pytest.mark.spark
@pytest.mark.parametrize("key_type", ALL_KEY_TYPES)
def test_spark_build_equals_local_build(spark: Any, key_type: str) -> None:
    rows = _sample_rows(key_type)
    params = plugin.ExactIndexType().validate({}, key_type)
    assert params is not None
    built = plugin.ExactIndexType().build(
        spark, _spark_frame(spark, key_type, rows), key_type, params
    )
    assert built is not None
    local = _build(rows, key_type)
    assert built.meta == local.meta
    assert not built.written and built.state_id is None
    assert _pairs(built, key_type) == _pairs(local, key_type)
    index = plugin.ExactIndexType().load(ipc_round_trip(built)[0])
    values = SAMPLES[key_type]
    queries = [*standard_queries(rows), KeyQuery("points", tuple(values[:2]))]
    for v in values:
        queries += [
            KeyQuery("range", low=v, low_inclusive=False),
            KeyQuery("range", high=v, high_inclusive=False),
            KeyQuery("range", low=values[0], high=v),
        ]
    for q in queries:
        answer = plugin.ExactIndexType().lookup(index, q)
        assert answer is not None and answer.locations == true_locations(rows, q), q


@pytest.mark.spark
def test_spark_apply_delta_equals_rebuild(spark: Any) -> None:
    rows = _sample_rows("string")
    index = _load(_build(rows, "string"))
    held = rows.count(("a", "part=0/fg-0"))
    assert held > 0
    delta_rows = [("a", "part=0/fg-0", -held), ("zz", "part=9/new", 2), (None, "part=0/fg-0", -1)]
    frame = spark.createDataFrame(delta_rows, "key string, location string, count bigint")
    built = plugin.ExactIndexType().apply_delta(spark, index, frame, {})
    assert built is not None
    after = [r for r in rows if not (r[0] == "a" and r[1] == "part=0/fg-0")]
    after.remove((None, "part=0/fg-0"))
    after += [("zz", "part=9/new")] * 2
    assert built.meta == _build(after, "string").meta
    d = plugin.ExactIndexType().describe(_load(built))
    assert d is not None and d["size_bytes"] == ipc_round_trip(built)[1]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("key_type", "known"),
    [("bigint", None), ("double", "some"), ("string", "all"), ("decimal(30,3)", "some")],
)
def test_spark_build_writes_key_ranges_in_tasks(
    spark: Any, key_type: str, known: str | None, small_partitions: None
) -> None:
    rows = _sample_rows(key_type) * 3
    names = sorted({loc for _, loc in rows})
    # the caller's locations may miss some the rows hold and name some they do not
    locations = {None: None, "some": [names[0], names[2], "part=7/absent"], "all": names}[known]
    built = plugin.ExactIndexType().build(
        spark, _spark_frame(spark, key_type, rows), key_type, {}, locations, len(rows)
    )
    assert built.meta["locations"] == len(names)
    manifest = built.files["manifest"]
    assert manifest.num_rows > 1
    assert sorted(_pairs(built, key_type), key=repr) == sorted(
        _pairs(_build(rows, key_type), key_type), key=repr
    )
    index = _load(built)
    values = SAMPLES[key_type]
    queries = [*standard_queries(rows), KeyQuery("points", tuple(values[:2]))]
    for v in values:
        queries += [
            KeyQuery("range", low=v, low_inclusive=False),
            KeyQuery("range", high=v, high_inclusive=False),
            KeyQuery("points", (v,)),
        ]
    for q in queries:
        assert index.lookup(q).locations == true_locations(rows, q), q


def test_task_body_sums_raw_rows_and_counts_nulls_per_location(tmp_path: Any) -> None:
    names = ["a", "b"]
    batches = [
        pa.RecordBatch.from_pydict(
            {
                "key": pa.array([3, None, 1, 3, None], pa.int64()),
                "loc_id": pa.array([0, 1, None, 0, 0], pa.int32()),
                "loc_name": pa.array([None, None, "c", None, None], pa.string()),
            }
        ),
        pa.RecordBatch.from_pydict(
            {
                "key": pa.array([None, None], pa.int64()),
                "loc_id": pa.array([1, None], pa.int32()),
                "loc_name": pa.array([None, "c"], pa.string()),
            }
        ),
    ]
    (row,) = [
        b.to_pylist()[0]
        for b in partitions.write_partitions(iter(batches), "bigint", str(tmp_path), names)
    ]
    assert (row["keys"], row["entries"], row["row_count"], row["null_rows"]) == (2, 2, 7, 4)
    table = pa.ipc.open_file(str(tmp_path / f"{row['file']}.arrow")).read_all()
    got = list(
        zip(
            table.column("key").to_pylist(),
            table.column("location").combine_chunks().dictionary_decode().to_pylist(),
            table.column("count").to_pylist(),
            strict=True,
        )
    )
    assert got == [(1, "c", 1), (3, "a", 2), (None, "a", 1), (None, "b", 2), (None, "c", 1)]
    lost = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([None], pa.int64()),
            "loc_id": pa.array([None], pa.int32()),
            "loc_name": pa.array([None], pa.string()),
        }
    )
    with pytest.raises(ValueError, match="null location"):
        list(partitions.write_partitions(iter([lost]), "bigint", str(tmp_path), names))


@pytest.mark.spark
@pytest.mark.parametrize("known", ["all", "all but one"])
def test_spark_build_leaves_only_the_files_it_lists(
    spark: Any, known: str, small_partitions: None
) -> None:
    """Locations travel as codes; a location the build was not told of makes it start over by ids.

    Either way the staging folder holds exactly the files the build lists,
    and their pairs are those of an in-process build.
    """
    from lakesieve.store.task_files import folder_reader, scratch_staging

    key_type = "bigint"
    rows = _sample_rows(key_type) * 2
    names = sorted({loc for _, loc in rows})
    given = names if known == "all" else names[1:]
    with scratch_staging() as area:
        built = plugin.ExactIndexType().build(
            spark, _spark_frame(spark, key_type, rows), key_type, {}, given, len(rows)
        )
        on_disk = sorted(os.listdir(area.folder))
        # Spark writes ORC partitions (format 3) when every location is known; the
        # fallback's tasks write Arrow IPC ones (format 2)
        suffix = ".orc" if known == "all" else ".arrow"
        assert on_disk == sorted(f"{r['name']}{suffix}" for r in built.written)
        assert [os.path.basename(r["path"]) for r in built.written] == on_disk
        assert len(built.written) > 1
        fetch = folder_reader(area, built.written)
        files = {str(r["name"]): fetch(str(r["name"])) for r in built.written}
    whole = BuiltIndex(files={**built.files, **files}, meta=dict(built.meta))
    in_process = _build(rows, key_type).meta
    if known == "all":
        assert built.meta["format_version"] == SPARK_FILES_FORMAT
        for field in ("key_type", "params", "rows", "null_rows", "locations"):
            assert built.meta[field] == in_process[field], field
    else:
        assert built.meta == in_process
    assert sorted(_pairs(whole, key_type), key=repr) == sorted(
        _pairs(_build(rows, key_type), key_type), key=repr
    )


def test_task_body_with_codes_writes_nothing_for_an_unknown_location(tmp_path: Any) -> None:
    from lakesieve.keys.location_codes import LocationCodes

    codes = LocationCodes.from_codes({"a": 7, "b": -3}, ["a", "b"])
    assert codes is not None

    def batch(keys: list[int | None], code: list[int]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(
            {
                "key": pa.array(keys, pa.int64()),
                "code": pa.array(code, pa.int64()),
                "cnt": pa.array([2] * len(keys), pa.int64()),
            }
        )

    (row,) = [
        b.to_pylist()[0]
        for b in partitions.write_partitions(
            iter([batch([5, None, 1], [7, -3, -3])]), "bigint", str(tmp_path), ["a", "b"], codes
        )
    ]
    assert (row["keys"], row["entries"], row["row_count"], row["null_rows"]) == (2, 2, 6, 2)
    table = pa.ipc.open_file(str(tmp_path / f"{row['file']}.arrow")).read_all()
    assert table.column("location").combine_chunks().dictionary_decode().to_pylist() == [
        "b",
        "a",
        "b",
    ]
    out = tmp_path / "unknown"
    out.mkdir()
    (row,) = [
        b.to_pylist()[0]
        for b in partitions.write_partitions(
            iter([batch([5], [7]), batch([6], [42])]), "bigint", str(out), ["a", "b"], codes
        )
    ]
    assert row["file"] is None
    assert list(out.iterdir()) == []
