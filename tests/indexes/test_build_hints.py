"""What the framework tells an index build from the table's metadata, and the one-job Sieve build it allows.

``Table.build_index`` passes the snapshot's locations and its row count
(``Snapshot.rows_upper_bound``) to ``IndexType.build``. With both, the
Sieve build skips its per-location pass. These tests check the hint itself,
which path each format takes, and that pruned reads still equal full reads.
"""

from __future__ import annotations

import os
from typing import Any

import lakesieve
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.model import ReadUnit, Snapshot, WriteOptions
from lakesieve.table import write

from tests.tables import (
    df_of,
    expected_from,
    make_rows,
    rows_by_location,
    sorted_rows,
    true_locations,
)


def _unit(loc: str, records: int | None, logs: tuple[str, ...] = ()) -> ReadUnit:
    return ReadUnit(location=loc, base_file=f"{loc}.parquet", log_files=logs, num_records=records)


def test_rows_upper_bound_sums_base_file_counts() -> None:
    assert Snapshot(None, ()).rows_upper_bound == 0
    assert Snapshot(None, (_unit("a", 3), _unit("b", 0), _unit("c", 9))).rows_upper_bound == 12


def test_rows_upper_bound_unknown_with_a_missing_count_or_log_files() -> None:
    assert Snapshot(None, (_unit("a", 3), _unit("b", None))).rows_upper_bound is None
    assert Snapshot(None, (_unit("a", 3), _unit("b", 4, (".b.log.1",)))).rows_upper_bound is None


_FORMATS = {
    # format -> (first write's options, whether the one-job build applies)
    "hudi": (
        {"mode": "bulk_insert", "record_key": ("id",), "precombine": "version", "file_groups": 4},
        True,
    ),
    "hudi-mor": (
        {
            "mode": "bulk_insert",
            "record_key": ("id",),
            "precombine": "version",
            "file_groups": 4,
            "bucket_column": "id",
            "table_type": "mor",
        },
        False,  # updates go to log files: rows unknown without a pass
    ),
    "delta": ({"mode": "bulk_insert", "bucket_column": "id", "file_groups": 4}, True),
    "iceberg": ({"mode": "bulk_insert", "bucket_column": "id", "file_groups": 4}, True),
}


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Per format: a table with a bulk insert, an upsert and a delete, and its Sieve builds."""
    from lakesieve.indexes.sieve import build as sieve_build

    out: dict[str, dict[str, Any]] = {}
    for name, (first, _) in _FORMATS.items():
        fmt = name.split("-")[0]
        path = tmp_path_factory.mktemp(name) / "events"
        write(
            path,
            df_of(spark, make_rows(range(0, 900), 1)),
            format=fmt,
            spark=spark,
            options=WriteOptions(**first),
        )
        same = {
            k: v
            for k, v in first.items()
            if k in ("record_key", "precombine", "bucket_column", "file_groups")
        }
        key = {"record_key": ("id",), **({"precombine": "version"} if fmt == "hudi" else {})}
        write(
            path,
            df_of(spark, make_rows(range(100, 1200, 5), 2, version=1)),
            spark=spark,
            options=WriteOptions(mode="upsert", **{**same, **key}),
        )
        write(
            path,
            df_of(spark, make_rows(range(0, 900, 11), 3, version=2)),
            spark=spark,
            options=WriteOptions(mode="delete", **{**same, **key}),
        )
        table = lakesieve.open(path)
        answers: list[Any] = []
        one_job = sieve_build._build_known

        def spy(*args: Any, _answers: list[Any] = answers, _real: Any = one_job) -> Any:
            _answers.append(_real(*args))
            return _answers[-1]

        sieve_build._build_known = spy  # type: ignore[assignment]
        try:
            for column in ("k", "s"):
                table.build_index(column, type="sieve", spark=spark)
        finally:
            sieve_build._build_known = one_job  # type: ignore[assignment]
        out[name] = {"table": table, "one_job": answers, "by_loc": rows_by_location(table)}
    return out


@pytest.mark.parametrize("name", sorted(_FORMATS))
def test_each_format_takes_the_expected_build_path(
    tables: dict[str, dict[str, Any]], name: str
) -> None:
    got = tables[name]
    expected = _FORMATS[name][1]
    hint = got["table"].snapshot().rows_upper_bound
    if expected:
        assert hint is not None and hint >= sum(t.num_rows for t in got["by_loc"].values())
        assert len(got["one_job"]) == 2 and all(b is not None for b in got["one_job"])
    else:
        assert hint is None and got["one_job"] == []


@st.composite
def _where(draw: Any) -> str:
    column = draw(st.sampled_from(["k", "s"]))
    if column == "k":
        lo = draw(st.integers(-5, 420))
        kind = draw(st.sampled_from(["=", "between", "in", "<", ">="]))
        if kind == "between":
            return f"k BETWEEN {lo} AND {lo + draw(st.integers(0, 30))}"
        if kind == "in":
            vals = draw(st.lists(st.integers(-5, 420), min_size=1, max_size=4))
            return f"k IN ({', '.join(map(str, vals))})"
        return f"k {kind} {lo}"
    word = draw(st.sampled_from(["amber", "cedar", "iris", "zzz", "a"]))
    return f"s >= '{word}-{draw(st.integers(0, 25)):04d}' AND s < '{word}-{draw(st.integers(0, 25)):04d}z'"


@pytest.mark.parametrize("name", sorted(_FORMATS))
@settings(
    # CI: 6 random predicates per format (``LAKESIEVE_SLOW=1``: 12)
    max_examples=12 if os.environ.get("LAKESIEVE_SLOW") == "1" else 6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(where=_where())
def test_hinted_builds_prune_without_losing_rows(
    spark: Any, tables: dict[str, dict[str, Any]], name: str, where: str
) -> None:
    got = tables[name]
    table = got["table"]
    plan = table.plan(where)
    truth = true_locations(spark, where, got["by_loc"])
    selected = {u.location for u in plan.units}
    assert truth <= selected, (where, truth - selected)
    # the rows the format's own reader holds, filtered by Spark SQL
    assert sorted_rows(table.read(spark, where)) == expected_from(spark, got["by_loc"], where)


def test_point_lookups_prune_on_a_key_ordered_table(tables: dict[str, dict[str, Any]]) -> None:
    """The bulk insert without buckets keeps ``k`` in order: a point selects one location."""
    plan = tables["hudi"]["table"].plan("k = 150")
    assert plan.locations_total == 4 and plan.locations_selected == 1


def test_merged_units_are_read_once_for_a_sieve_build_and_released(
    spark: Any, tables: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sieve reads its input twice: rows merged from log files are cached for it, then dropped."""
    from lakesieve.contract import registry

    seen: dict[str, Any] = {}
    for type_name in ("sieve", "zonemap"):
        index_type = registry.index_type(type_name)
        real = type(index_type).build

        def spy(
            self: Any, spark_: Any, relation: Any, *args: Any, _n: str = type_name, _r: Any = real
        ) -> Any:
            seen[_n] = relation.storageLevel
            return _r(self, spark_, relation, *args)

        monkeypatch.setattr(type(index_type), "build", spy)
    table = tables["hudi-mor"]["table"]
    assert any(u.log_files for u in table.snapshot().units)
    spark.catalog.clearCache()
    for type_name in ("sieve", "zonemap"):
        table.build_index("k", type=type_name, name=f"k_cached_{type_name}", spark=spark)
        table.drop_index(f"k_cached_{type_name}")
    assert seen["sieve"].useMemory and seen["sieve"].useDisk
    assert not seen["zonemap"].useMemory  # one pass: nothing to gain from a cache
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
    plain = tables["hudi"]["table"]
    plain.build_index("k", type="sieve", name="k_cached_plain", spark=spark)
    plain.drop_index("k_cached_plain")
    assert not seen["sieve"].useMemory  # a Parquet scan is read twice rather than cached
