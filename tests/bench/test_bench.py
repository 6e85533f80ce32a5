"""The full benchmark suite: query set, native pruning model, ground truth, report, and a tiny run."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.errors import LakesieveError
from lakesieve.files.arrow_frame import frame_of
from lakesieve_bench.native import NativeStats
from lakesieve_bench.queries import KINDS, BenchQuery, literal, make_queries, to_domain
from lakesieve_bench.report import END, START, render_markdown, update_section


def test_queries_are_seeded_and_well_formed() -> None:
    sample = list(range(100, 10_000, 7))
    a = make_queries("l_orderkey", "bigint", sample, 1, 10_000, 5, seed=3)
    b = make_queries("l_orderkey", "bigint", sample, 1, 10_000, 5, seed=3)
    assert a == b
    assert set(a) == set(KINDS) and all(len(v) == 5 for v in a.values())
    assert all(len(q.intervals) == 10 for q in a["in"])
    for q in a["range_0.1pct"]:
        ((lo, hi),) = q.intervals
        assert hi - lo + 1 == 10 and q.where == f"l_orderkey BETWEEN {lo} AND {hi}"
    assert a["range_low"][0].where.startswith("l_orderkey <= ")


def test_date_queries_use_date_literals() -> None:
    day = to_domain(dt.date(1995, 3, 1))
    qs = make_queries("l_shipdate", "date", [day, day + 1], day - 100, day + 100, 2, seed=1)
    assert qs["point"][0].where.startswith("l_shipdate = DATE '1995-03-0")
    assert literal(day, "date") == "DATE '1995-03-01'"


@pytest.mark.parametrize(
    "args, message",
    [
        (("c", "string", [1], 0, 1, 1), "type string"),
        (("c", "bigint", [1], 0, 1, 0), "at least 1"),
        (("c", "bigint", [], 0, 1, 1), "no key"),
    ],
)
def test_query_errors_name_the_problem(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(LakesieveError, match=message):
        make_queries(*args, seed=0)


def test_unknown_layout_is_one_line_error() -> None:
    from lakesieve.demo.tpch import with_layout

    with pytest.raises(LakesieveError, match="unknown layout 'zigzag'"):
        with_layout(None, "zigzag")  # type: ignore[arg-type]


files_strategy = st.lists(
    st.lists(st.integers(0, 200), min_size=1, max_size=30), min_size=1, max_size=8
)
query_strategy = st.one_of(
    st.builds(lambda k: ("point", ((k, k),)), st.integers(-5, 205)),
    st.builds(
        lambda ks: ("in", tuple((k, k) for k in sorted(set(ks)))),
        st.lists(st.integers(-5, 205), min_size=1, max_size=10),
    ),
    st.builds(
        lambda a, w: ("range_0.1pct", ((a, a + w),)), st.integers(-5, 205), st.integers(0, 60)
    ),
)


@settings(max_examples=200, deadline=None)
@given(files=files_strategy, q=query_strategy, prunes_in=st.booleans())
def test_native_model_never_drops_a_file_holding_a_match(
    files: list[list[int]], q: tuple[str, Any], prunes_in: bool
) -> None:
    """The min/max model selects every file a full read finds a matching row in."""
    kind, intervals = q
    names = [f"f{i}.parquet" for i in range(len(files))]
    stats = NativeStats(
        "test",
        "min/max",
        names,
        {"k": [(min(f), max(f)) for f in files]},
        prunes_in,
        api=lambda _q: set(names),
    )
    query = BenchQuery(kind, "k", "bigint", intervals, "k = 0")
    chosen = stats.model(query)
    holding = {
        n
        for n, f in zip(names, files, strict=True)
        if any(a <= v <= b for v in f for a, b in intervals)
    }
    assert holding <= chosen
    if kind == "in" and not prunes_in:
        assert chosen == set(names)


def test_native_check_switches_disagreeing_kinds_to_the_library() -> None:
    names = ["a", "b"]
    stats = NativeStats(
        "test", "", names, {"k": [(0, 10), (20, 30)]}, True, api=lambda _q: {"a", "b"}
    )
    q = BenchQuery("point", "k", "bigint", ((5, 5),), "k = 5")
    report = stats.check({"point": [q]}, 1)
    assert report["mismatches"] == 1 and report["library_kinds"] == ["point"]
    assert stats.select(q) == {"a", "b"}


def test_update_section_replaces_only_between_markers(tmp_path: Path) -> None:
    md = tmp_path / "B.md"
    md.write_text("# head\n\nkept\n")
    update_section(md, f"{START}\none\n{END}\n")
    update_section(md, f"{START}\ntwo\n{END}\n")
    text = md.read_text()
    assert text.startswith("# head\n\nkept\n") and "two" in text and "one" not in text
    assert text.count(START) == 1 and text.count(END) == 1


def test_sieve_layout_reports_the_stored_form_it_reads() -> None:
    """``--suite sieve-layout``: the synthetic figures and the table of the stored form only."""
    from lakesieve_bench import runner, sieve_layout

    assert runner.delegated(["--suite", "sieve-layout", "--synthetic"]) == (
        "lakesieve_bench.sieve_layout",
        ["--synthetic"],
    )
    out = sieve_layout.synthetic(n_keys=3_000, per_kind=3)
    assert out["bytes_format2"] > 0 and out["entries"] > 0
    assert not any("format1" in key for key in out)
    for path in ("vectorised", "warm"):
        assert set(out[f"p50_us_{path}"]) >= {"point", "in", "range_low", "all"}
    paths = {"lookup_p50_us": 5.0, "lookup_p99_us": 9.0, "selected": {"point": 1.0}}
    figures = {
        "sort_seconds": 1.0,
        "build_seconds": 2.0,
        "build_over_sort": 2.0,
        "bytes_format2": 3946,
        "warm": paths,
        "vectorised": paths,
        "paths_agree": True,
    }
    rows = sieve_layout.table_rows({"layouts": {"interleaved": {"l_orderkey": figures}}})
    assert len(rows) == 3 and "format 1" not in rows[0]
    assert rows[0].count("|") == rows[2].count("|") == rows[1].count("|")
    assert "| 3,946 |" in rows[2]


@pytest.mark.spark
def test_ground_truth_matches_brute_force(spark: Any) -> None:
    import random

    from lakesieve.model import LOCATION_COLUMN
    from lakesieve_bench.truth import true_locations

    rng = random.Random(7)
    rows = [(rng.randint(0, 500), f"loc{rng.randint(0, 5)}") for _ in range(400)]
    frame = spark.createDataFrame(rows, f"k bigint, {LOCATION_COLUMN} string")
    sample = sorted({k for k, _ in rows})
    qs = make_queries("k", "bigint", sample, 0, 500, 6, seed=2)
    flat = [q for k in KINDS for q in qs[k]]
    got = true_locations(spark, frame, "k", "bigint", flat, width=3)
    for q, locs in zip(flat, got, strict=True):
        want = {loc for k, loc in rows if any(a <= k <= b for a, b in q.intervals)}
        assert locs == want, q.where


@pytest.mark.spark
@pytest.mark.long
def test_tiny_full_run_has_every_figure_and_passes_its_checks(spark: Any, tmp_path: Path) -> None:
    from lakesieve_bench.full import FORMATS, INDEX_TYPES, FullConfig
    from lakesieve_bench.full_run import run_full
    from lakesieve_bench.report import write_charts

    cfg = FullConfig(
        scale=0.001,
        workdir=str(tmp_path),
        queries=4,
        layouts=("interleaved",),
        groups=8,
        runs=64,
        e2e_kinds=("point",),
        check_kinds=(),
        native_check=1,
    )
    out = run_full(cfg, progress=lambda _m: None)
    json.dumps(out)  # JSON-ready
    lay = out["layouts"]["interleaved"]
    assert "error" not in lay, lay.get("error")
    assert out["correctness"]["ok"], out["correctness"]
    _check_rows_against_native_readers(spark, tmp_path / f"full-sf{cfg.scale}")
    assert out["correctness"]["pruned_reads_compared"] >= len(FORMATS) * (len(INDEX_TYPES) + 4)
    for col in ("l_orderkey", "l_partkey", "l_shipdate"):
        c = lay["columns"][col]
        assert set(c["types"]) == set(INDEX_TYPES)
        for f in c["types"].values():
            for key in (
                "build_seconds",
                "build_over_sort",
                "size_bytes",
                "size_share_of_column",
                "lookup_p50_ms",
                "lookup_p99_ms",
                "selected",
                "selected_over_exact",
            ):
                assert f[key] is not None, key
            assert f["false_negatives"] == 0
            assert all(f["selected"][k] >= c["ideal"][k] for k in KINDS)
        assert c["types"]["exact"]["selected"] == c["ideal"]
    for fmt in FORMATS:
        r = lay["formats"][fmt]
        assert r["data_files"] == 8 and r["write_seconds"] is not None
        assert r["layout_check"] in (
            "reference (first format)",
            "same rows and key ranges per bucket",
        )
        assert r["native"]["columns"]["l_orderkey"]["check"]["checked"] >= len(KINDS)
        assert r["sieve_product_build_seconds"] > 0
        (read,) = r["reads"]
        assert read["sieve_product"]["same_files_as_layout_sieve"]
        assert read["sieve_product"]["files"] <= read["native"]["files"]
        arrow = read["arrow"]
        assert arrow["full_scan_rows_equal_spark"] and arrow["rows"] == read["rows"]
        assert arrow["lakesieve"]["equal"] and arrow["native"]["equal"]
        assert arrow["lakesieve"]["files"] == read["sieve_product"]["files"]
        assert arrow["lakesieve"]["seconds"] > 0 and arrow["full_scan_seconds"] > 0
        assert r["spark_action_floor_seconds"] > 0
    mem = lay["formats"]["hudi"]
    assert mem["sieve_build_memory"]["python_heap_peak_bytes"] > 0
    assert "error" not in mem["sieve_lookup_memory"], mem["sieve_lookup_memory"]
    assert {t["target"].split(":")[0] for t in out["targets"]}
    spark_rows = [t for t in out["targets"] if ", Spark read:" in t["target"]]
    assert spark_rows and all("one-row Spark aggregate" in t["measured"] for t in spark_rows)
    md = render_markdown(out, "lakesieve bench --quick", "charts")
    assert md.startswith(START) and md.rstrip().endswith(END)
    assert "End to end without a Spark job" in md
    assert len(write_charts(out, tmp_path / "charts")) == 5

    # --from-json redraws from saved figures and states the targets anew
    from lakesieve.cli import main as cli_main

    saved = tmp_path / "figures.json"
    saved.write_text(
        json.dumps(
            {
                **out,
                "command": "lakesieve bench --quick",
                "targets": [{"target": "stale", "measured": "old words", "met": True}],
            }
        )
    )
    page = tmp_path / "page.md"
    page.write_text(f"# title\n\n{START}\nold\n{END}\n")
    assert (
        cli_main(
            [
                "bench",
                "--from-json",
                str(saved),
                "--write-markdown",
                str(page),
                "--charts",
                str(tmp_path / "redrawn"),
            ]
        )
        == 0
    )
    redrawn = page.read_text()
    assert "old words" not in redrawn and "one-row Spark aggregate" in redrawn
    assert redrawn.startswith("# title") and len(list((tmp_path / "redrawn").glob("*.png"))) == 5

    # a second run in the same folder rewrites the tables (the Iceberg one is
    # still named by the catalog beside it, at a metadata file now deleted)
    # and drops the indexes an Iceberg table keeps outside its folder
    from lakesieve.plugins.iceberg.catalog import index_root

    table_path = tmp_path / f"full-sf{cfg.scale}" / "interleaved_iceberg"
    stale = Path(index_root(str(table_path))) / "stale-marker"
    stale.write_text("from the first run")
    again = run_full(
        dataclasses.replace(cfg, formats=("iceberg",), index_types=("sieve",)),
        progress=lambda _m: None,
    )
    assert "error" not in again["layouts"]["interleaved"], again["layouts"]["interleaved"].get(
        "error"
    )
    assert again["correctness"]["ok"], again["correctness"]
    assert again["layouts"]["interleaved"]["formats"]["iceberg"]["reused"] is False
    assert not stale.exists()


def _check_rows_against_native_readers(spark: Any, tables_root: Path) -> None:
    """Every format's bench table: pruned Spark and Arrow reads equal its own reader filtered by Spark SQL.

    The bench's ``correctness`` figures compare with lakesieve's full read; this
    check does not share that read path.
    """
    import lakesieve

    from tests.tables import native_where, rows_repr

    for fmt in ("hudi", "delta", "iceberg"):
        table = lakesieve.open(tables_root / f"interleaved_{fmt}")
        for where in (
            "l_orderkey BETWEEN 100 AND 900",
            "l_orderkey IN (1, 7, 4000)",
            "l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-31'",
        ):
            columns, want = native_where(spark, fmt, table.path, where)
            assert want, (fmt, where)
            assert rows_repr(table.read(spark, where=where), columns) == want, (fmt, where)
            arrow = frame_of(spark, table.read_arrow(where=where))
            assert rows_repr(arrow, columns) == want, (fmt, where)
