"""``lakesieve_bench.build_cost``: every row reaches each index, built with the locations known."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from lakesieve_bench import build_cost


def test_builds_count_every_row_and_location(spark: Any, tmp_path: Path) -> None:
    """Sieve and exact built from the bench's relation account for every row and location."""
    n = 3_000
    table = pa.table(
        {
            "l_orderkey": pa.array([i // 3 for i in range(n)], pa.int64()),
            "l_partkey": pa.array([(i * 7919) % 401 for i in range(n)], pa.int64()),
            "l_shipdate": pa.array(
                [dt.date(1995, 1, 1) + dt.timedelta(days=i % 97) for i in range(n)], pa.date32()
            ),
        }
    )
    path = tmp_path / "lineitem.parquet"
    pq.write_table(table, path)
    groups = 4
    hashed = spark.sql(
        f"SELECT count(DISTINCT pmod(xxhash64(l_orderkey), {groups})) FROM parquet.`{path}`"
    ).first()[0]
    out = build_cost.run(str(path), ["l_partkey", "l_shipdate"], ["sieve", "exact"], groups, 1)
    assert out["rows"] == n
    for col, distinct in (("l_partkey", 401), ("l_shipdate", 97)):
        figs = out["columns"][col]
        assert figs["spark_sort_seconds"] > 0
        sieve, exact = figs["sieve"]["details"], figs["exact"]["details"]
        assert sieve["rows"] == n and exact["rows"] == n
        assert exact["distinct_keys"] == distinct
        assert exact["locations"] == hashed
        assert figs["exact"]["build_over_sort"] > 0


def test_bench_command_reaches_the_focused_benches(
    monkeypatch: Any, capsys: Any, tmp_path: Path
) -> None:
    """``lakesieve bench --suite build-cost`` hands every other argument to that bench's parser."""
    from lakesieve.cli import main
    from lakesieve_bench import runner

    assert runner.delegated(["--suite", "build-cost", "--scale", "1"]) == (
        "lakesieve_bench.build_cost",
        ["--scale", "1"],
    )
    assert runner.delegated(["--json", "x", "--suite=spark-paths", "--dir", "d"]) == (
        "lakesieve_bench.spark_paths",
        ["--json", "x", "--dir", "d"],
    )
    assert runner.delegated(["--suite", "timeline"]) is None
    assert runner.delegated(["--scale", "1"]) is None
    seen: list[tuple[str, list[str], int]] = []

    def fake_run(parquet: str, columns: list[str], types: list[str], groups: int, repeat: int):  # type: ignore[no-untyped-def]
        seen.append((parquet, columns + types, groups))
        return {"rows": 0, "columns": {}}

    monkeypatch.setattr(build_cost, "run", fake_run)
    src = tmp_path / "li.parquet"
    status = main(
        [
            "bench",
            "--suite",
            "build-cost",
            "--parquet",
            str(src),
            "--types",
            "sieve",
            "--groups",
            "8",
        ]
    )
    assert status == 0
    assert seen == [(str(src), ["l_orderkey", "l_partkey", "l_shipdate", "sieve"], 8)]
    assert '"rows": 0' in capsys.readouterr().out


def test_sieve_stages_hand_over_what_the_build_hands_over(spark: Any, tmp_path: Path) -> None:
    """The stage bench hands Python every row of a wide key, the (key, location) pairs of a date."""
    from lakesieve_bench import sieve_stages as bench_stages

    n, groups = 2_000, 4
    table = pa.table(
        {
            "l_orderkey": pa.array([i // 4 for i in range(n)], pa.int64()),
            "l_partkey": pa.array([(i * 31) % 97 for i in range(n)], pa.int64()),
            "l_shipdate": pa.array([(i * 7) % 53 for i in range(n)], pa.int32()).cast(pa.date32()),
        }
    )
    path = tmp_path / "lineitem.parquet"
    pq.write_table(table, path)
    pairs = spark.sql(
        f"SELECT count(DISTINCT l_shipdate, pmod(xxhash64(l_orderkey), {groups})) "
        f"FROM parquet.`{path}`"
    ).first()[0]
    out = bench_stages.run(str(path), ["l_partkey", "l_shipdate"], groups, 1)
    assert out["rows"] == n
    assert out["columns"]["l_partkey"]["rows_handed_over"] == n
    assert out["columns"]["l_shipdate"]["rows_handed_over"] == pairs < n
    figs = out["columns"]["l_partkey"]
    for stage in ("sort", "shuffle", "hand_over", "build"):
        assert figs[f"{stage}_seconds"] > 0
