"""Refresh builds an index afresh instead of folding a delta as large as the table.

A ``MERGE`` or an overwrite that rewrites every file of a Delta or Iceberg
table and moves rows between files leaves no file pairs
(``lakesieve.maintenance.refresh.pairs``): the delta holds every row twice,
once removed and once added. Folding it into the base is a ``groupBy`` and
an ``apply_delta`` over twice the table's rows, where a build reads the table
once; at SF1 the fold cost more than twice a build. Past
``RefreshPolicy.rebuild_share`` of the table's rows such a delta is not
folded: the index is built afresh. These tests check where the rule fires and
where it does not, that a rebuild it chose warns of nothing, and that the
rebuilt indexes answer as a fresh build and select every file Spark SQL finds
a match in, with the rows read by the formats' own readers (delta-rs,
pyiceberg) and the tables and their rewrites written by those libraries.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.errors import LakesieveError, LakesieveWarning
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.model import WriteOptions
from lakesieve.table import Table, write
from lakesieve.table import open as open_table

from tests.differential.formats import data_files
from tests.tables import arrow_frame, plain_types, true_locations_each

TYPES = ("sieve", "zonemap", "bloom", "exact")
BUCKETS = 4
#: a change read by Spark and folded by Spark: the rule applies to Spark's folds only
SPARK_FOLDS = RefreshPolicy(driver_max_mb=0, max_delta_rows=10)
QUERIES = (
    "k = 0",
    "k = 7",
    "k = 343",
    "k in (14, 793, 999)",
    "k between 100 and 120",
    "k >= 990",
    "k is null",
)


def _batch(ids: list[int], salt: int, tag: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([(i * 7 + salt) % 1000 for i in ids], pa.int64()),
            "s": pa.array([f"{tag}{i % 13}" for i in ids], pa.string()),
        }
    )


def _deltalake(path: Path) -> None:
    """400 rows in four files written by delta-rs (one per append)."""
    from deltalake import write_deltalake

    for part in range(BUCKETS):
        write_deltalake(
            str(path), _batch(list(range(part * 100, part * 100 + 100)), 0, "s"), mode="append"
        )


def _deltalake_merge(path: Path) -> None:
    """A delta-rs ``MERGE``: a changed row in every file and new rows; every file is rewritten."""
    from deltalake import DeltaTable

    source = _batch(list(range(0, 400, 10)) + list(range(400, 430)), 5, "merged")
    (
        DeltaTable(str(path))
        .merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def _pyiceberg_table(path: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    side = path.parent / f"{path.name}-catalog"
    side.mkdir(exist_ok=True)
    catalog = SqlCatalog("rb", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace_if_not_exists("rb")
    if catalog.table_exists(("rb", path.name)):
        return catalog.load_table(("rb", path.name))
    return catalog.create_table(
        ("rb", path.name),
        schema=_batch([0], 0, "s").schema,
        location=str(path),
        properties={"format-version": "2"},
    )


def _pyiceberg(path: Path) -> None:
    """400 rows in four files written by pyiceberg (one per append)."""
    table = _pyiceberg_table(path)
    for part in range(BUCKETS):
        table.append(_batch(list(range(part * 100, part * 100 + 100)), 0, "s"))


def _pyiceberg_overwrite(path: Path) -> None:
    """A pyiceberg overwrite of every row (some changed, some new) in a new order."""
    ids = list(range(430))
    every = pa.concat_tables(
        [_batch([i for i in ids if i % 10 == r], 5 if r == 0 else 0, "s") for r in range(10)]
    )
    _pyiceberg_table(path).overwrite(every)


WRITERS = {"delta": (_deltalake, _deltalake_merge), "iceberg": (_pyiceberg, _pyiceberg_overwrite)}


def _indexed(path: Path, fmt: str, spark: Any) -> Table:
    WRITERS[fmt][0](path)
    table = open_table(path)
    for typ in TYPES:
        table.build_index("k", type=typ, spark=spark)
    return table


def _truths(spark: Any, fmt: str, path: Path) -> tuple[dict[str, set[str]], set[str]]:
    """Per query, the files Spark SQL finds a match in (rows read by delta-rs or pyiceberg)."""
    by_file = {
        Path(loc).name: plain_types(rows).select(["id", "k", "s"])
        for loc, rows in data_files(fmt, path)
    }
    return true_locations_each(spark, QUERIES, by_file), set(by_file)


def _selected(table: Table) -> dict[tuple[str, str], set[str] | None]:
    """Per (query, index), the file names the index selects (``None``: it did not answer)."""
    out: dict[tuple[str, str], set[str] | None] = {}
    for where in QUERIES:
        for item in table.plan(where).indexes:
            names = {Path(s).name for s in item.selected} if item.answered else None
            out[(where, item.definition.name)] = names
    return out


def _covers_truth(
    spark: Any, fmt: str, table: Table, types: int = len(TYPES)
) -> dict[tuple[str, str], set[str] | None]:
    """Every answering index selects every file with a match; the selections, for comparing."""
    truths, files = _truths(spark, fmt, Path(table.path))
    chosen = _selected(table)
    for (where, name), names in chosen.items():
        if names is not None:  # a Bloom filter answers no range: those read every file
            assert truths[where] <= names <= files, (fmt, name, where, truths[where] - names)
    # every index answered: only a Bloom filter, for the ranges, may not
    assert sum(names is not None for names in chosen.values()) >= (types - 1) * len(QUERIES)
    return chosen


def _refresh(table: Table, spark: Any, policy: RefreshPolicy) -> dict[str, Any]:
    """Refresh every index; fail on any lakesieve warning (a chosen rebuild warns of nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        return {r.index: r for r in table.refresh(spark=spark, policy=policy)}


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_rewrite_that_moves_rows_between_files_is_built_afresh(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    table = _indexed(tmp_path / "t", fmt, spark)
    WRITERS[fmt][1](Path(table.path))
    results = _refresh(table, spark, SPARK_FOLDS)
    for typ in TYPES:
        r = results[f"k_{typ}"]
        assert (r.action, r.engine, r.chain_length) == ("rebuilt", "spark", 0), r
        assert "rebuild_share 1" in r.note and "built afresh" in r.note, r.note
        assert r.delta_rows >= 430, r  # every row of the table, at least once
    _covers_truth(spark, fmt, table)
    # the same answers as indexes built afresh beside them at the same instant
    for typ in TYPES:
        table.build_index("k", type=typ, name=f"fresh_{typ}", spark=spark)
    both = _selected(table)
    for typ in TYPES:
        for where in QUERIES:
            assert both[(where, f"k_{typ}")] == both[(where, f"fresh_{typ}")], (typ, where)
    # reads equal Spark SQL over the format's own reader's rows
    rows = [t.select(["id", "k", "s"]) for _, t in data_files(fmt, Path(table.path))]
    truth = arrow_frame(spark, plain_types(pa.concat_tables(rows)))
    truth.createOrReplaceTempView(f"rebuilt_truth_{fmt}")
    for where in QUERIES:
        want = spark.sql(f"SELECT id, k, s FROM rebuilt_truth_{fmt} WHERE {where}").collect()
        got = table.read(spark=spark, where=where, refresh=False).select("id", "k", "s").collect()
        assert sorted(got) == sorted(want), where


def _lakesieve_rows(spark: Any, ids: list[int], version: int) -> Any:
    return spark.createDataFrame(
        [(i, (i * 7 + version * 3) % 1000, f"s{i % 13}") for i in ids],
        "id bigint, k bigint, s string",
    )


#: a type folded in place and the type an exact fold rebuilds (the rule does not depend on the type)
PAIRED_TYPES = ("sieve", "exact")


def test_a_rewrite_that_keeps_rows_in_their_files_is_folded(spark: Any, tmp_path: Path) -> None:
    """An upsert over every bucket rewrites every file, but each new file pairs with its old one."""
    fmt = "delta"  # the rule comes after the format's part: Iceberg's rewrites are above
    path = tmp_path / "t"
    bucketed = WriteOptions(
        mode="bulk_insert", record_key=("id",), file_groups=BUCKETS, bucket_column="id"
    )
    write(
        path, _lakesieve_rows(spark, list(range(400)), 0), format=fmt, options=bucketed, spark=spark
    )
    table = open_table(path)
    for typ in PAIRED_TYPES:
        table.build_index("k", type=typ, spark=spark)
    upsert = WriteOptions(mode="upsert")
    write(
        path,
        _lakesieve_rows(spark, [*range(0, 400, 9), *range(400, 420)], 1),
        options=upsert,
        spark=spark,
    )
    results = _refresh(table, spark, SPARK_FOLDS)
    for typ in PAIRED_TYPES:
        r = results[f"k_{typ}"]
        assert 0 < r.delta_rows < 200, r  # the changed keys: the files paired
        # an exact index cannot move its entries to new names: rebuilt by its type, as before
        assert (r.action, r.locations_renamed) == (
            ("rebuilt", 0) if typ == "exact" else ("compacted", BUCKETS)
        ), r
        assert "rebuild_share" not in r.note, r
    _covers_truth(spark, fmt, table, len(PAIRED_TYPES))
    # the same small delta past a lower share is built afresh
    write(path, _lakesieve_rows(spark, [*range(3, 400, 11)], 2), options=upsert, spark=spark)
    results = _refresh(
        table, spark, RefreshPolicy(driver_max_mb=0, max_delta_rows=10, rebuild_share=0.05)
    )
    for typ in PAIRED_TYPES:
        r = results[f"k_{typ}"]
        assert (r.action, r.chain_length) == ("rebuilt", 0) and "rebuild_share 0.05" in r.note, r
    _covers_truth(spark, fmt, table, len(PAIRED_TYPES))


def test_a_delta_folded_on_the_driver_is_never_built_afresh(spark: Any, tmp_path: Path) -> None:
    """A change small enough for the driver starts no Spark session, whatever its share."""
    table = _indexed(tmp_path / "t", "delta", spark)
    _deltalake_merge(Path(table.path))
    results = _refresh(table, None, RefreshPolicy(rebuild_share=0.0))
    assert {r.engine for r in results.values()} == {"driver"}, results
    assert all("rebuild_share" not in r.note for r in results.values()), results
    _covers_truth(spark, "delta", table)


def test_the_share_is_checked() -> None:
    for bad in (math.nan, -0.1):
        with pytest.raises(LakesieveError, match="rebuild_share must be a number >= 0"):
            RefreshPolicy(rebuild_share=bad)
    policy = RefreshPolicy()
    assert policy.rebuild_share == 1.0
    assert policy.large_delta(999, 1000) is None
    assert policy.large_delta(5, None) is None and policy.large_delta(5, 0) is None
    note = policy.large_delta(2000, 1000)
    assert note is not None and "2.00x" in note and "rebuild_share 1" in note
    assert RefreshPolicy(rebuild_share=math.inf).large_delta(10**9, 1) is None
