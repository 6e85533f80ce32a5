"""Hudi tables written by Hudi's own Spark writer, read by lakesieve as Hudi's own reader reads them.

``tests/fixtures/hudi_spark/`` holds four small tables written once by
``bench/peers/run --fixtures tests/fixtures/hudi_spark`` (Hudi's Spark
bundle 1.2.0 on Spark 3.5, table version 9, the metadata table on with
column statistics and the record-level index, partitioned by ``region``):

- ``cow``: copy-on-write; insert, upsert, delete;
- ``mor_logs``: merge-on-read; an insert, then upserts and a delete that
  stay in log files (no compaction);
- ``mor_compacted``: merge-on-read; upserts, an inline compaction, then one
  more upsert into log files;
- ``cow_clustered``: copy-on-write; three inserts and an upsert, then an
  inline clustering (a ``replacecommit``) sorted by ``id``.

Beside each zip, ``<name>.expected.json`` holds the rows that
``spark.read.format("hudi")`` returned at the latest instant, written by the
same step. CI has no Hudi bundle: these tests read the committed files
only. lakesieve's Arrow read and its Spark read must return exactly those
rows, and reads pruned by a Sieve on the record key and a zone map on
``score`` must return exactly the matching subset of them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lakesieve
import pytest

from tests.conftest import unzip_fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hudi_spark"
NAMES = ("cow", "mor_logs", "mor_compacted", "cow_clustered")


def _expected(name: str) -> dict[str, Any]:
    """What Hudi's own Spark reader returned for the table (rows sorted by ``id``)."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    return data


def _plain(value: Any) -> Any:
    """A value as the expected JSON spells it (dates as ISO text)."""
    return value.isoformat() if isinstance(value, dt.date) else value


def _rows(records: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    """``columns`` of each record, JSON-spelled, sorted by ``id``."""
    out = [{c: _plain(r[c]) for c in columns} for r in records]
    return sorted(out, key=lambda r: r["id"])


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture unzipped once."""
    out = {}
    for name in NAMES:
        out[name] = unzip_fixture(FIXTURES / f"{name}.zip", tmp_path_factory.mktemp(name))
    return out


def test_the_fixtures_are_what_they_claim(roots: dict[str, Path]) -> None:
    """Written by Hudi's Spark writer at table version 9, metadata table on, with the history each name says."""
    for name, root in roots.items():
        props = (root / ".hoodie" / "hoodie.properties").read_text()
        assert "hoodie.table.version=9" in props, name
        assert "hoodie.table.metadata.partitions=" in props, name
        partitions = next(
            line.split("=", 1)[1]
            for line in props.splitlines()
            if line.startswith("hoodie.table.metadata.partitions=")
        ).split(",")
        assert {"files", "column_stats", "record_index"} <= set(partitions), (name, partitions)
        timeline = [p.name for p in (root / ".hoodie" / "timeline").iterdir() if p.is_file()]
        table = lakesieve.open(root)
        units = table.snapshot().units
        logs = sum(len(u.log_files) for u in units)
        expected = _expected(name)
        assert expected["writer"].startswith("pyspark==3.5"), expected["writer"]
        if name.startswith("mor"):
            assert expected["table_type"] == "MERGE_ON_READ"
            assert logs > 0, f"{name}: no log file in the latest snapshot"
        else:
            assert logs == 0
        compactions = [t for t in timeline if t.endswith(".commit") and name.startswith("mor")]
        replaces = [t for t in timeline if t.endswith(".replacecommit")]
        assert bool(compactions) == (name == "mor_compacted"), (name, timeline)
        assert bool(replaces) == (name == "cow_clustered"), (name, timeline)


@pytest.mark.parametrize("name", NAMES)
def test_arrow_read_equals_hudis_own_read(roots: dict[str, Path], name: str) -> None:
    """The driver-side read returns exactly the rows Hudi's Spark reader returned."""
    expected = _expected(name)
    table = lakesieve.open(roots[name])
    assert table.format == "hudi"
    got = _rows(table.read_arrow().to_pylist(), expected["columns"])
    assert got == expected["rows"]


@pytest.mark.spark
@pytest.mark.parametrize("name", NAMES)
def test_spark_read_equals_hudis_own_read(spark: Any, roots: dict[str, Path], name: str) -> None:
    """lakesieve's Spark read (pyspark 4.x, no Hudi bundle) returns exactly Hudi's own rows."""
    expected = _expected(name)
    table = lakesieve.open(roots[name])
    got = _rows([r.asDict() for r in table.read(spark).collect()], expected["columns"])
    assert got == expected["rows"]


def _predicates(rows: list[dict[str, Any]]) -> list[tuple[str, Callable[[dict[str, Any]], bool]]]:
    """Predicates on ``id`` and ``score`` drawn from the table's values, with their Python meaning."""
    ids = [r["id"] for r in rows]
    scores = sorted({r["score"] for r in rows})
    some = ids[:: max(1, len(ids) // 5)]
    lo, hi = ids[len(ids) // 3], ids[len(ids) // 3] + 25
    out: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
        (f"id = {some[1]}", lambda r: r["id"] == some[1]),
        (f"id = {max(ids) + 1}", lambda r: False),
        (f"id = {ids[-1]}", lambda r: r["id"] == ids[-1]),
        (f"id BETWEEN {lo} AND {hi}", lambda r: lo <= r["id"] <= hi),
        (f"id IN ({', '.join(map(str, some))})", lambda r: r["id"] in some),
        (f"score = {scores[len(scores) // 2]}", lambda r: r["score"] == scores[len(scores) // 2]),
        (f"score >= {scores[-3]}", lambda r: r["score"] >= scores[-3]),
    ]
    return out


@pytest.mark.spark
@pytest.mark.parametrize("name", NAMES)
def test_pruned_reads_equal_the_full_read(spark: Any, roots: dict[str, Path], name: str) -> None:
    """With a Sieve on the record key and a zone map on ``score``, every pruned read returns exactly the matching rows."""
    expected = _expected(name)
    columns = expected["columns"]
    table = lakesieve.open(roots[name])
    table.build_index("id", type="sieve", spark=spark)
    table.build_index("score", type="zonemap", spark=spark)
    pruned_somewhere = False
    for where, matches in _predicates(expected["rows"]):
        want = [r for r in expected["rows"] if matches(r)]
        plan = table.explain(where)
        pruned_somewhere |= plan["locations_selected"] < plan["locations_total"]
        assert _rows(table.read_arrow(where=where).to_pylist(), columns) == want, where
        spark_rows = [r.asDict() for r in table.read(spark, where=where).collect()]
        assert _rows(spark_rows, columns) == want, where
    assert pruned_somewhere, f"{name}: no predicate pruned a location"
