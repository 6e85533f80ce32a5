"""``Table.read`` of plain Parquet units is one Spark Parquet scan with the filter pushed down.

Issue 53 measured ``Table.read`` 2.8-4.5x slower than the formats' own Spark
reads on a query nothing can prune: every read handed its 64 data files to
``spark.read.parquet``, which lists them again first. A plan whose units are
all files Spark reads as they are is now one scan of known files
(:mod:`lakesieve.query.parquet_read`). These tests keep that shape visible in
the physical plan, and check the rows against Spark SQL over the format's own
reader (delta-rs, pyiceberg, hudi-rs), for tables written by delta-rs,
pyiceberg and lakesieve's Hudi writer; merged units (Hudi log files) keep
the format's own read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve import spark_source

from tests.differential import formats
from tests.differential.data import SCHEMA, Mutation, TableSpec
from tests.differential.oracle import Oracle, canonical, describe, multiset_diff

pytestmark = pytest.mark.spark

WHERES = [
    "i = 5 AND s = 'prefix-ab'",
    "i >= 2 OR s IS NULL",
    "f > 0.5",  # a double: Spark's Parquet statistics disagree on NaN and -0.0, nothing pushed
    "NOT (d = DATE '2024-01-02')",
]


def _row(rid: int, loc: int, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {f.name: None for f in SCHEMA}
    out.update(id=rid, v=0, loc=loc, **values)
    return out


def _rows() -> list[dict[str, Any]]:
    import datetime as dt
    import math

    words = ["prefix-ab", "prefix-abc", "", "z", None]
    doubles = [0.5, -0.0, math.nan, 2.0, None, 0.0]
    out = []
    for rid in range(24):
        out.append(
            _row(
                rid,
                rid % 4,
                i=[5, 2, None, 1][rid % 4] if rid % 5 else 5,
                s=words[rid % len(words)],
                f=doubles[rid % len(doubles)],
                d=dt.date(2024, 1, 1 + rid % 3) if rid % 7 else None,
            )
        )
    return out


def _scans(frame: Any) -> list[str]:
    """The file scans of ``frame``'s physical plan, each as its formatted block."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    return [line for line in plan.splitlines() if "FileScan" in line]


def _oracle_rows(spark: Any, fmt: str, path: Path, where: str) -> list[Any]:
    oracle = Oracle(spark, formats.rows_with_location(fmt, path))
    try:
        answer = oracle.answer(where)
    finally:
        oracle.close()
    assert answer.rows is not None, answer.error
    return answer.rows


def _check_rows(spark: Any, fmt: str, path: Path, table: Any, where: str) -> None:
    want = _oracle_rows(spark, fmt, path, where)
    got = canonical(table.read(spark, where=where).toArrow())
    missing, extra = multiset_diff(want, got)
    assert not missing and not extra, (
        f"{fmt} {where!r}: missing {describe(missing)}, extra {describe(extra)}"
    )


@pytest.mark.parametrize("fmt", ["delta", "iceberg", "hudi-cow"])
def test_plain_parquet_units_read_as_one_scan_with_pushed_filters(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / "t"
    formats.create(spark, fmt, path, TableSpec(4, _rows(), [], False))
    table = lakesieve.open(path)
    table.auto_refresh = False
    plan = table.plan("i = 5 AND s = 'prefix-ab'")
    assert len(plan.units) == 4  # no index: every location is read

    frame = table.read(spark, where="i = 5 AND s = 'prefix-ab'")
    scans = _scans(frame)
    assert len(scans) == 1, f"{fmt}: expected one file scan, got {scans}"
    assert scans[0].lstrip(" +-:*(0123456789)").startswith("FileScan parquet"), scans[0]
    pushed = re.search(r"PushedFilters: \[([^\]]*)\]", scans[0])
    assert pushed is not None and "EqualTo(i,5)" in pushed.group(1), scans[0]
    assert "EqualTo(s,prefix-ab)" in pushed.group(1), scans[0]
    text = frame._jdf.queryExecution().executedPlan().toString()
    assert "Union" not in text and "Join" not in text, text
    if spark_source.registered(spark):  # the driver has lakesieve's jar: nothing is listed
        assert "KnownFileIndex" in scans[0], scans[0]
    for where in WHERES:
        _check_rows(spark, fmt, path, table, where)


@pytest.mark.parametrize("fmt", ["delta", "iceberg", "hudi-mor"])
def test_reads_after_deletes_equal_spark_sql_over_the_native_read(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    """Rewritten files (Delta, Iceberg) stay one scan; log files (Hudi MOR) keep the merged read."""
    path = tmp_path / "t"
    spec = TableSpec(4, _rows(), [Mutation("delete", ids=[1, 5, 6])], False)
    formats.create(spark, fmt, path, spec)
    formats.mutate(spark, fmt, path, spec, spec.mutations[0])
    table = lakesieve.open(path)
    table.auto_refresh = False
    merged = any(u.log_files or u.delete_files for u in table.plan(None).units)
    assert merged == (fmt == "hudi-mor"), f"{fmt}: the deletes did not make the units expected"
    frame = table.read(spark, where="id < 8")
    text = frame._jdf.queryExecution().executedPlan().toString()
    if merged:
        assert "MapInArrow" in text, text  # hudi-rs merges the log files in Spark tasks
    else:
        assert len(_scans(frame)) == 1 and "Union" not in text, text
    assert {r["id"] for r in frame.collect()} == {0, 2, 3, 4, 7}
    for where in WHERES:
        _check_rows(spark, fmt, path, table, where)
