"""Timestamp literals without a zone are read in the Spark session's time zone, as Spark reads them.

The oracle is Spark SQL evaluating the predicate text, in the same session
and time zone, over delta-rs's full read of the table held in memory. The
table's timestamps sit on both sides of local midnights and in a
daylight-saving gap (2024-03-10 02:30 does not exist in New York) and
overlap (2024-11-03 01:30 happens twice there).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.errors import OptionError, PredicateError
from lakesieve.expressions import bind
from lakesieve.expressions.time_zone import session_time_zone, wall_to_utc
from lakesieve.python_source import register_data_source
from lakesieve.table import open as open_table

from tests.differential.formats import data_files
from tests.tables import native_rows, spark_where

UTC = dt.UTC

# instants (UTC) around New York's and Kolkata's local midnights, the 2024 DST gap and overlap
INSTANTS = [
    dt.datetime(2024, 3, 9, 23, 30),
    dt.datetime(2024, 3, 10, 4, 59, 59),
    dt.datetime(2024, 3, 10, 5, 0),
    dt.datetime(2024, 3, 10, 6, 59),
    dt.datetime(2024, 3, 10, 7, 0),
    dt.datetime(2024, 3, 10, 7, 30),
    dt.datetime(2024, 3, 10, 8, 0),
    dt.datetime(2024, 3, 10, 18, 30),
    dt.datetime(2024, 11, 3, 4, 0),
    dt.datetime(2024, 11, 3, 5, 30),
    dt.datetime(2024, 11, 3, 6, 0),
    dt.datetime(2024, 11, 3, 6, 30),
    dt.datetime(2024, 11, 3, 7, 0),
]

WHERES = [
    "ts < '2024-03-10 02:30:00'",
    "ts >= '2024-03-10 02:30:00'",
    "ts = '2024-03-10 00:00:00'",
    "ts <= TIMESTAMP '2024-03-10 01:59:59'",
    "ts > TIMESTAMP '2024-11-03 01:30:00'",
    "ts = TIMESTAMP '2024-11-03 01:30:00'",
    "ts >= DATE '2024-03-10'",
    "ts < DATE '2024-11-03'",
    "ts BETWEEN '2024-03-10 00:00' AND '2024-03-10 03:00'",
    "ts IN ('2024-03-10 00:00:00', '2024-11-03 01:00:00')",
    "ts < TIMESTAMP_NTZ '2024-03-10 03:00:00'",
    "ts > '2024-03-10 02:00:00+00:00'",
    "NOT (ts > '2024-03-10 01:00:00')",
    "ntz < '2024-03-10 02:30:00'",
    "ntz >= DATE '2024-03-10'",
    "ntz = TIMESTAMP_NTZ '2024-11-03 06:00:00'",
]

#: the session zones of the read test; UTC (every other test's zone) in the long tier
ZONES = ["America/New_York", "+05:30", pytest.param("UTC", marks=pytest.mark.long)]


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Delta table (written by delta-rs) with the instants spread over four files."""
    from deltalake import write_deltalake

    path = tmp_path_factory.mktemp("tz") / "t"
    for part in range(4):
        chosen = INSTANTS[part::4]
        rows = pa.table(
            {
                "id": pa.array([INSTANTS.index(t) for t in chosen], pa.int64()),
                "ts": pa.array([t.replace(tzinfo=UTC) for t in chosen], pa.timestamp("us", "UTC")),
                "ntz": pa.array(chosen, pa.timestamp("us")),
            }
        )
        write_deltalake(str(path), rows, mode="append")
    return path


@pytest.fixture
def zone(spark: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """The shared session switched to a time zone for one test, then back."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, request.param)
    yield str(request.param)
    spark.conf.set(key, before)


def _ids(frame: Any) -> list[int]:
    return sorted(int(r["id"]) for r in frame.select("id").collect())


@pytest.mark.spark
@pytest.mark.parametrize("zone", ZONES, indirect=True)
def test_reads_match_spark_sql_in_the_session_zone(
    spark: Any, table_path: Path, zone: str, tmp_path: Path
) -> None:
    import shutil

    path = tmp_path / "t"
    shutil.copytree(table_path, path)
    register_data_source(spark)
    table = open_table(str(path))
    for kind in ("zonemap", "exact", "sieve"):
        table.build_index("ts", kind, name=f"ts_{kind}", spark=spark)
    table.build_index("ntz", "zonemap", name="ntz_zonemap", spark=spark)
    native = native_rows("delta", path)
    files = data_files("delta", path)  # (location, rows) per live file, read by pyarrow
    matched = 0
    for where in WHERES:
        want = _ids(spark_where(spark, native, where))
        matched += len(want)
        assert _ids(table.read(spark, where=where)) == want, (zone, where)
        source = spark.read.format("lakesieve").load(str(path))
        assert _ids(source.where(where)) == want, (zone, where, "data source")
        arrow = table.read_arrow(where, spark=spark)
        assert sorted(arrow.column("id").to_pylist()) == want, (zone, where)
        selected = set(table.explain(where)["selected"])  # the default zone: the shared session's
        holding = {loc for loc, rows in files if set(rows.column("id").to_pylist()) & set(want)}
        assert holding <= selected, (zone, where)
    assert matched > 0


def test_wall_times_map_as_java_maps_them() -> None:
    with session_time_zone("America/New_York"):
        # an ordinary winter time: UTC-5
        assert wall_to_utc(dt.datetime(2024, 1, 5, 10, 0)) == dt.datetime(2024, 1, 5, 15, 0)
        # the gap: 02:30 does not exist and moves forward by the hour (03:30 EDT)
        assert wall_to_utc(dt.datetime(2024, 3, 10, 2, 30)) == dt.datetime(2024, 3, 10, 7, 30)
        # the overlap: 01:30 happens twice and takes the earlier offset (EDT, UTC-4)
        assert wall_to_utc(dt.datetime(2024, 11, 3, 1, 30)) == dt.datetime(2024, 11, 3, 5, 30)
    with session_time_zone("+05:30"):
        assert wall_to_utc(dt.datetime(2024, 1, 5, 0, 0)) == dt.datetime(2024, 1, 4, 18, 30)
    with session_time_zone("GMT-08:00"):
        assert wall_to_utc(dt.datetime(2024, 1, 5, 0, 0)) == dt.datetime(2024, 1, 5, 8, 0)
    assert wall_to_utc(dt.datetime(2024, 1, 5, 0, 0)) == dt.datetime(2024, 1, 5, 0, 0)  # UTC


def test_binding_reads_literals_in_the_zone() -> None:
    schema = pa.schema([("ts", pa.timestamp("us", "UTC")), ("ntz", pa.timestamp("us"))])
    with session_time_zone("Europe/Berlin"):
        assert bind("ts = '2024-07-01 12:00:00'", schema).node.value == dt.datetime(2024, 7, 1, 10)
        # a zone written in the literal wins over the session's
        node = bind("ts = '2024-07-01 12:00:00+00:00'", schema).node
        assert node.value == dt.datetime(2024, 7, 1, 12)
        # TIMESTAMP_NTZ columns hold wall times: no zone applies
        assert bind("ntz = '2024-07-01 12:00:00'", schema).node.value == dt.datetime(2024, 7, 1, 12)
        with pytest.raises(PredicateError, match="TIMESTAMP_NTZ column"):
            bind("ntz = TIMESTAMP '2024-07-01 12:00:00'", schema)


def test_a_bad_zone_name_names_the_setting() -> None:
    with (
        pytest.raises(OptionError, match=r"spark\.sql\.session\.timeZone = 'Mars/Olympus'"),
        session_time_zone("Mars/Olympus"),
    ):
        pass


def test_the_default_zone_follows_the_session_a_read_would_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lakesieve's own session, else the caller's active one, else LAKESIEVE_SPARK_CONF, else UTC."""
    import lakesieve.spark.session as session
    from pyspark.sql import SparkSession

    class FakeConf:
        def get(self, key: str) -> str:
            assert key == "spark.sql.session.timeZone"
            return "Asia/Tokyo"

    class FakeSession:
        conf = FakeConf()

    monkeypatch.setattr(session, "_session", None)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: FakeSession()))
    assert session.time_zone_of() == "Asia/Tokyo"
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setenv("LAKESIEVE_SPARK_CONF", "spark.sql.session.timeZone=Europe/Paris")
    assert session.time_zone_of() == "Europe/Paris"
    monkeypatch.delenv("LAKESIEVE_SPARK_CONF")
    assert session.time_zone_of() == "UTC"
