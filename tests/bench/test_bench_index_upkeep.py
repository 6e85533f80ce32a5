"""``lakesieve_bench.index_upkeep``: bytes after refresh and compaction, and selections, on a tiny table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lakesieve_bench import index_upkeep, runner, upkeep_data


def test_upkeep_figures_on_a_tiny_shuffled_table(spark: Any, tmp_path: Path) -> None:
    """Every figure is there, and no upkept index misses a location holding a matching key."""
    rows = 2_000
    path = upkeep_data.write_shuffled(spark, tmp_path / "shuffled", rows, file_groups=4)
    types = ("sieve", "exact")
    out = index_upkeep.run_table(
        spark,
        path,
        "id",
        upkeep_data.shuffled_upsert(rows, 0.01, seed=3),
        index_types=types,
        points=4,
        ranges=2,
        seed=3,
        fresh_builds=2,
    )
    assert out["upsert"]["updates"] + out["upsert"]["inserts"] == out["upsert"]["rows"] == 20
    assert len(out["queries"]) == 6
    assert set(out["indexes"]) == set(types)
    for figs in out["indexes"].values():
        for stage in ("built", "refreshed", "compacted", "fresh"):
            assert figs[stage]["size_bytes"] > 0
        assert figs["compacted"]["deltas"] == 0
        assert figs["refreshed_over_fresh"] > 0 and figs["compacted_over_fresh"] > 0
        assert len(figs["fresh_repeats"]) == 2 and figs["fresh_spread"] >= 0
        for key in ("answers_refreshed", "answers_compacted"):
            answers = figs[key]
            assert answers["queries"] == 6
            # the exact index selects exactly the locations holding the key; a
            # Sieve may pick other false positives than a fresh build, never miss one
            assert answers["misses_truth"] == 0 and answers["covers_truth"], answers["problems"]
        assert figs["answers_refreshed"]["equal"] + figs["answers_refreshed"]["not_supersets"] <= 6
    exact = out["indexes"]["exact"]
    assert exact["answers_refreshed"]["equal"] == exact["answers_compacted"]["equal"] == 6
    rows_out = index_upkeep.summary({"tables": {"tiny": out}})
    assert [r["index"] for r in rows_out] == list(types)
    assert index_upkeep.markdown_table({"tables": {"tiny": out}}).count("\n| tiny |") == 2


def test_upkeep_is_a_bench_suite() -> None:
    """``lakesieve bench --suite upkeep`` hands its arguments to the upkeep bench."""
    assert runner.delegated(["--suite", "upkeep", "--tables", "shuffled"]) == (
        "lakesieve_bench.index_upkeep",
        ["--tables", "shuffled"],
    )
