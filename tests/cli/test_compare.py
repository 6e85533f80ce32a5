"""``lakesieve compare`` / ``advise``: every index type on one column, one seeded query set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.errors import ColumnNotFoundError, LakesieveError, UnknownPluginError
from lakesieve.measure.advise import advise, parse_workload, toml_fragment
from lakesieve.measure.compare import compare_indexes
from lakesieve.measure.compare_report import write_html

from tests.tables import expected_rows, make_rows, sorted_rows, write_rows

pytestmark = pytest.mark.spark

TYPES = ["sieve", "zonemap", "bloom", "exact"]
REQUIRED = {"size_bytes", "build_seconds", "lookup_p50_ms", "lookup_p99_ms", "selected"}


@pytest.fixture(scope="module")
def cmp_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cmp") / "t"
    write_rows(spark, path, make_rows(range(0, 1200), 3), mode="bulk_insert", file_groups=4)
    return path


@pytest.fixture(scope="module")
def result(spark: Any, cmp_table: Path) -> dict[str, Any]:
    return compare_indexes(
        lakesieve.open(cmp_table), "k", types=TYPES, queries=15, seed=7, spark=spark
    )


def test_every_type_has_the_figures(result: dict[str, Any], cmp_table: Path) -> None:
    assert set(result["types"]) == set(TYPES)
    for fig in result["types"].values():
        assert set(fig) >= REQUIRED
        assert fig["size_bytes"] > 0 and fig["build_seconds"] >= 0
        assert fig["lookup_p99_ms"] >= fig["lookup_p50_ms"] >= 0
        assert {
            "point",
            "in",
            "range_0.01pct",
            "range_0.1pct",
            "range_1pct",
            "range_low",
            "range_high",
        } <= set(fig["selected"])
        assert all(0 <= v <= result["locations_total"] for v in fig["selected"].values())
    assert result["column_compressed_bytes"] and result["column_compressed_bytes"] > 0
    assert "parquet footers" in result["column_compressed_bytes_source"]
    # the temporary indexes are gone
    assert not [d for d in lakesieve.open(cmp_table).indexes() if d.name.startswith("cmp_")]


def test_exact_is_the_ideal(result: dict[str, Any]) -> None:
    ideal = result["types"]["exact"]["selected"]
    assert ideal["point"] >= 1  # points are existing keys
    for t, fig in result["types"].items():
        for kind, v in fig["selected"].items():
            assert ideal[kind] <= v + 1e-9, (t, kind)
        assert fig["overhead_vs_exact"]["point"] >= 1.0


def test_readable_table(result: dict[str, Any]) -> None:
    from lakesieve.measure.compare import format_table

    text = format_table(result)
    for word in (*TYPES, "size_bytes", "lookup p99 ms", "range_0.1pct", "end-to-end point"):
        assert word in text


def test_bloom_answers_all_for_ranges(result: dict[str, Any]) -> None:
    total = result["locations_total"]
    bloom = result["types"]["bloom"]
    for kind in ("range_0.01pct", "range_0.1pct", "range_1pct", "range_low", "range_high"):
        assert bloom["selected"][kind] == total
        assert bloom["answered_all"][kind] == result["queries_per_kind"][kind]


def test_end_to_end_reads_agree(spark: Any, result: dict[str, Any], cmp_table: Path) -> None:
    """The end-to-end queries: counts and rows checked against hudi-rs filtered by Spark SQL.

    The report's own ``equal`` flag compares with ``full_read``, which shares the
    read path under test; the rows are checked here independently.
    """
    assert [e["kind"] for e in result["end_to_end"]] == ["point", "in", "range_0.1pct"]
    table = lakesieve.open(cmp_table)
    for e in result["end_to_end"]:
        want = expected_rows(spark, cmp_table, e["where"])
        assert want and e["rows"] == len(want), e
        assert sorted_rows(table.read(spark, where=e["where"])) == want, e["where"]
    assert all(e["equal"] for e in result["end_to_end"])


def test_html_report(result: dict[str, Any], tmp_path: Path) -> None:
    written = write_html(result, tmp_path / "r" / "report.html")
    assert [f.name for f in (tmp_path / "r").iterdir()] == [
        "report.html"
    ]  # one file, charts inside
    text = written.read_text()
    assert text.count('src="data:image/png;base64,') == 1 + len(result["queries_per_kind"])
    assert 'id="recommendation"' in text and "<details>" in text


def test_advise(result: dict[str, Any]) -> None:
    advice = advise(result, parse_workload("point=0.6,range_0.1pct=0.3,in=0.1"))
    assert advice["type"] in TYPES
    assert "\n" not in advice["reason"] and advice["reason"].startswith("k: ")
    ranges = advise(result, parse_workload("range_1pct=1"))
    assert ranges["type"] != "bloom"
    frag = toml_fragment("events", advice)
    assert (
        "[[tables.events.indexes]]" in frag
        and 'column = "k"' in frag
        and f'type = "{advice["type"]}"' in frag
    )
    with pytest.raises(LakesieveError, match="bad workload item"):
        parse_workload("nope=1")


def test_bad_input_is_one_line(cmp_table: Path) -> None:
    table = lakesieve.open(cmp_table)
    with pytest.raises(ColumnNotFoundError) as col:
        compare_indexes(table, "nope", types=["sieve"])
    assert "\n" not in str(col.value) and "nope" in str(col.value)
    with pytest.raises(UnknownPluginError) as typ:
        compare_indexes(table, "k", types=["sieve", "btree"])
    assert "\n" not in str(typ.value) and "btree" in str(typ.value)


def test_cli_json_and_advise(
    cmp_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html_path = tmp_path / "cmp.html"
    assert (
        main(
            [
                "compare",
                str(cmp_table),
                "--column",
                "s",
                "--types",
                "zonemap,exact",
                "--queries",
                "5",
                "--json",
                "--html",
                str(html_path),
                "--no-e2e",
                "--advise",
                "--workload",
                "point=1",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out["types"]) == {"zonemap", "exact"} and set(out["types"]["exact"]) >= REQUIRED
    assert html_path.exists() and not list(tmp_path.glob("*.png"))
    advice = out.pop("advice")
    assert advice == advise(out, parse_workload("point=1"))
    assert "point=1.00 (given with --workload)" in html_path.read_text()
    saved = tmp_path / "cmp.json"
    saved.write_text(json.dumps(out))
    assert (
        main(
            [
                "advise",
                str(cmp_table),
                "--column",
                "s",
                "--from-json",
                str(saved),
                "--toml",
                "--table-name",
                "t",
            ]
        )
        == 0
    )
    frag = capsys.readouterr().out
    assert "[[tables.t.indexes]]" in frag and 'column = "s"' in frag
    assert f"path = {json.dumps(str(cmp_table))}" in frag
    assert main(["compare", str(cmp_table), "--column", "k", "--types", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown index type 'nope'" in err and err.count("\n") == 1


def test_query_set_for_dates_and_doubles() -> None:
    import datetime as dt

    import pyarrow as pa
    from lakesieve.expressions import bind, resolve_column
    from lakesieve.measure.compare import KINDS, _Queries

    schema = pa.schema([("d", pa.date32()), ("x", pa.float64())])
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(0, 365, 5)]
    q = _Queries(resolve_column(schema, "d"), days, days[0], days[-1], 4, 1)
    assert all(len(q.by_kind[k]) == 4 for k in KINDS)
    assert "DATE '" in q.by_kind["range_1pct"][0]
    xs = [i / 7 for i in range(100)]
    qx = _Queries(resolve_column(schema, "x"), xs, xs[0], xs[-1], 3, 1)
    for kind in KINDS:
        for where in q.by_kind[kind] + qx.by_kind[kind]:
            bind(where, schema)  # every generated predicate binds
