"""The Sieve index built by Spark: every key type against brute force, and the targets at reduced scale."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import math
import os
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from lakesieve.indexes.sieve import plugin
from lakesieve.keys import location_codes
from lakesieve.model import BuiltIndex, KeyQuery

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def sieve_spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The shared session; a private local[2] one if the shared fixture cannot start."""
    try:
        yield request.getfixturevalue("spark")
        return
    except ImportError:
        pass
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


def _round_trip(built: BuiltIndex) -> BuiltIndex:
    """Through Arrow IPC bytes, as the index store keeps them."""
    files = {}
    for name, table in built.files.items():
        sink = io.BytesIO()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        files[name] = pa.ipc.open_file(pa.py_buffer(sink.getvalue())).read_all()
    return BuiltIndex(files=files, meta=dict(built.meta))


def _build(
    spark: Any,
    rows: list[tuple[Any, Any]],
    key_type: str,
    params: dict[str, str],
    locations: list[str] | None = None,
) -> Any:
    """Build and load; with ``locations`` the build is told them and the row count."""
    df = spark.createDataFrame(rows, f"key {key_type}, location string")
    valid = plugin.SieveIndexType().validate(params, key_type)
    assert valid is not None
    hint = None if locations is None else len(rows)
    built = plugin.SieveIndexType().build(spark, df, key_type, valid, locations, hint)
    assert built is not None
    return plugin.SieveIndexType().load(_round_trip(built))


def _locations(rows: list[tuple[Any, Any]]) -> list[str]:
    return sorted({loc for _, loc in rows if loc is not None})


def _order(v: Any) -> Any:
    if isinstance(v, float):
        return (1, 0.0) if math.isnan(v) else (0, v + 0.0)
    if isinstance(v, str):
        return v.encode()
    return v


def _truth(rows: list[tuple[Any, str]], q: KeyQuery) -> set[str]:
    out = set()
    for v, loc in rows:
        if q.kind == "is_null":
            hit = v is None
        elif v is None:
            hit = False
        elif q.kind == "points":
            hit = any(_order(v) == _order(x) for x in q.values)
        else:
            hit = (
                q.low is None
                or _order(v) > _order(q.low)
                or (q.low_inclusive and _order(v) == _order(q.low))
            ) and (
                q.high is None
                or _order(v) < _order(q.high)
                or (q.high_inclusive and _order(v) == _order(q.high))
            )
        if hit:
            out.add(loc)
    return out


PFX = "samefirst8"
SAMPLES: dict[str, list[Any]] = {
    "bigint": [-(2**63), -7, 0, 3, 5, 99, 2**63 - 1],
    "int": [-3, 0, 1, 2, 40, 41, 1000],
    "boolean": [False, True],
    "date": [dt.date(1970, 1, 1), dt.date(1999, 12, 31), dt.date(2000, 1, 1), dt.date(2024, 2, 29)],
    "timestamp": [dt.datetime(2000, 1, 1, 0, 0, s, us) for s in range(3) for us in (0, 1, 999_999)],
    "timestamp_ntz": [
        dt.datetime(1969, 12, 31, 23, 59, 59),
        dt.datetime(1970, 1, 1),
        dt.datetime(2030, 5, 5),
    ],
    "decimal(10,2)": [
        decimal.Decimal(x) for x in ("-1.50", "0.00", "0.01", "12.34", "99999999.99")
    ],
    "decimal(30,3)": [
        decimal.Decimal(x)
        for x in (
            "-123456789012345678901.123",
            "0.001",
            "0.002",
            "1.000",
            "123456789012345678901.123",
        )
    ],
    "string": ["", "a", "ab", "é", PFX + "1", PFX + "2", PFX + "3", "zz"],
    "binary": [b"", b"\x00", b"\x01\x02", b"\xff" * 9, b"\xff" * 10],
    "double": [-math.inf, -1.5, -0.0, 0.0, 2.25, math.inf, math.nan],
    "float": [-2.5, 0.0, 0.5, 1.25, math.nan],
}


@pytest.mark.parametrize("hinted", [False, True], ids=["pass", "known-locations"])
@pytest.mark.parametrize("key_type", sorted(SAMPLES))
def test_spark_build_matches_brute_force(sieve_spark: Any, key_type: str, hinted: bool) -> None:
    rng = random.Random(key_type)
    values = SAMPLES[key_type]
    locs = [f"part={i % 3}/fg-{i}" for i in range(6)]
    rows: list[tuple[Any, str]] = []
    for i in range(300):
        v = values[min(i * len(values) // 300, len(values) - 1)] if i % 4 else rng.choice(values)
        rows.append((v, locs[(i // 37) % len(locs)] if i % 5 else rng.choice(locs)))
    rows += [(None, locs[0]), (None, locs[4])]
    params = {"min_run_keys": "2", "min_keys_per_block": "2"}
    index = _build(sieve_spark, rows, key_type, params, _locations(rows) if hinted else None)
    queries = [KeyQuery("is_null"), KeyQuery("range")]
    for v in values:
        queries.append(KeyQuery("points", values=(v,)))
        for inc in (True, False):
            queries.append(KeyQuery("range", low=v, low_inclusive=inc))
            queries.append(KeyQuery("range", high=v, high_inclusive=inc))
            queries.append(KeyQuery("range", low=values[0], high=v, high_inclusive=inc))
    for q in queries:
        got = index.lookup(q).locations
        assert got is not None
        truth = _truth(rows, q)
        assert truth <= got, (q, truth - got)
    assert index.lookup(KeyQuery("is_null")).locations == {locs[0], locs[4]}
    d = plugin.SieveIndexType().describe(index)
    assert d is not None and d["rows"] == len(rows) and d["null_locations"] == 2


def test_spark_build_interleaved_targets(sieve_spark: Any) -> None:
    """100k distinct keys, ~400k rows, 1024 runs over 64 locations (lineitem-like at reduced scale)."""
    from pyspark.sql import functions as F

    n_keys, runs, groups = 100_000, 1024, 64
    keys = (
        sieve_spark.range(n_keys)
        .select(
            (F.col("id") * 4 + (F.hash("id") % 4 + 4) % 4).alias("key"),  # sparse, increasing
            F.floor(F.col("id") * runs / n_keys).cast("int").alias("run"),
            ((F.hash("id") % 7 + 7) % 7 + 1).alias("lines"),
        )
        .select("key", "run", F.explode(F.sequence(F.lit(1), F.col("lines"))).alias("line"))
    )
    df = keys.select(
        "key",
        F.concat(F.lit("fg-"), F.lpad((F.col("run") % groups).cast("string"), 2, "0")).alias(
            "location"
        ),
    )
    t0 = time.perf_counter()
    names = [f"fg-{g:02d}" for g in range(groups)]
    built = plugin.SieveIndexType().build(sieve_spark, df, "bigint", {}, names, 7 * n_keys)
    elapsed = time.perf_counter() - t0
    assert built is not None
    index = plugin.SieveIndexType().load(_round_trip(built))
    d = index.describe()
    assert d["distinct_keys"] >= n_keys and d["locations"] == groups
    assert d["size_bytes"] <= 1_000_000
    assert runs <= d["entries"] <= runs + 16

    rng = np.random.default_rng(0)
    ids = rng.integers(0, n_keys, 200)
    got = [index.lookup(KeyQuery("points", values=(int(i * 4 + 3),))).locations for i in ids]
    # key i*4+3 may not exist; its run's location is still the only candidate
    for i, g in zip(ids, got, strict=True):
        assert g is not None and g <= {f"fg-{(i * runs // n_keys) % groups:02d}"}
    exact_keys = [
        r["key"] for r in df.select("key").distinct().orderBy(F.rand(1)).limit(200).collect()
    ]
    sizes = [len(index.lookup(KeyQuery("points", values=(k,))).locations or ()) for k in exact_keys]
    assert np.mean(sizes) <= 1.5
    width = n_keys // 1000 * 4
    ranges = []
    for lo in rng.integers(0, n_keys * 4 - width, 100):
        r = index.lookup(KeyQuery("range", low=int(lo), high=int(lo + width))).locations
        assert r is not None
        ranges.append(len(r))
    assert np.mean(ranges) <= 3.0
    print(f"\nspark build of {d['rows']} rows: {elapsed:.1f}s; {d}")


def test_spark_build_of_nulls_only_and_empty(sieve_spark: Any) -> None:
    index = _build(sieve_spark, [(None, "a"), (None, "b")], "string", {})
    assert index.lookup(KeyQuery("is_null")).locations == {"a", "b"}
    assert index.lookup(KeyQuery("range")).locations == frozenset()
    empty = _build(sieve_spark, [], "bigint", {})
    assert empty.lookup(KeyQuery("points", values=(1,))).locations == frozenset()
    assert empty.describe()["segments"] == 0


def test_spark_build_refuses_null_locations(sieve_spark: Any) -> None:
    with pytest.raises(ValueError, match="null location"):
        _build(sieve_spark, [(1, None), (2, "a")], "bigint", {})


def test_spark_build_without_hash_codes_is_the_same_index(
    sieve_spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When location names share an xxhash64, ids come from a broadcast join: same index."""

    rng = random.Random(7)
    locs = [f"fg-{i}" for i in range(9)]
    rows: list[tuple[Any, Any]] = [
        (k, locs[(k // 40) % 9] if k % 7 else rng.choice(locs)) for k in range(2000)
    ]
    rows += [(rng.randrange(2000), rng.choice(locs)) for _ in range(300)] + [(None, locs[3])]
    params = {"min_run_keys": "2", "min_keys_per_block": "2"}
    hashed = _build(sieve_spark, rows, "bigint", params)
    monkeypatch.setattr(location_codes, "distinct_codes", lambda codes: False)
    joined = _build(sieve_spark, rows, "bigint", params)
    assert hashed.describe() == joined.describe()
    for k in range(-1, 2001, 13):
        q = KeyQuery("points", values=(k,))
        got = joined.lookup(q).locations
        assert got == hashed.lookup(q).locations
        assert got is not None and _truth(rows, q) <= got
    assert joined.lookup(KeyQuery("is_null")).locations == {locs[3]}


def test_location_hash_codes_must_be_distinct() -> None:
    assert location_codes.distinct_codes([3, -5, 7])
    assert not location_codes.distinct_codes([3, -5, 3])


def _same_index(a: Any, b: Any, rows: list[tuple[Any, Any]], keys: range) -> None:
    assert a.describe() == b.describe()
    for k in keys:
        q = KeyQuery("points", values=(k,))
        got = a.lookup(q).locations
        assert got == b.lookup(q).locations
        assert got is not None and _truth(rows, q) <= got
    assert a.lookup(KeyQuery("is_null")).locations == b.lookup(KeyQuery("is_null")).locations


def _mixed_rows() -> tuple[list[str], list[tuple[Any, Any]]]:
    rng = random.Random(11)
    locs = [f"fg-{i}" for i in range(9)]
    rows: list[tuple[Any, Any]] = [
        (k, locs[(k // 40) % 9] if k % 7 else rng.choice(locs)) for k in range(2000)
    ]
    rows += [(rng.randrange(2000), rng.choice(locs)) for _ in range(300)]
    rows += [(None, locs[3]), (None, locs[3]), (None, locs[8])]
    return locs, rows


def test_known_locations_build_the_same_index(
    sieve_spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told the locations (some without rows), the one-job build gives the pass's index."""
    from lakesieve.indexes.sieve import build as sieve_build

    answers: list[Any] = []
    one_job = sieve_build._build_known

    def spy(*args: Any) -> Any:
        answers.append(one_job(*args))
        return answers[-1]

    monkeypatch.setattr(sieve_build, "_build_known", spy)
    locs, rows = _mixed_rows()
    params = {"min_run_keys": "2", "min_keys_per_block": "2"}
    passed = _build(sieve_spark, rows, "bigint", params)
    assert answers == []
    known = _build(sieve_spark, rows, "bigint", params, [*locs, "fg-empty", "a-empty"])
    assert len(answers) == 1 and answers[0] is not None
    _same_index(known, passed, rows, range(-1, 2001, 7))
    assert known.lookup(KeyQuery("is_null")).locations == {locs[3], locs[8]}
    assert sorted(known.locations) == locs


def test_known_locations_missing_one_fall_back_to_a_pass(
    sieve_spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A row whose location was not given: the build notices and makes the pass."""
    locs, rows = _mixed_rows()
    params = {"min_run_keys": "2", "min_keys_per_block": "2"}
    passed = _build(sieve_spark, rows, "bigint", params)
    with caplog.at_level("INFO", logger="lakesieve.indexes.sieve.build"):
        short = _build(sieve_spark, rows, "bigint", params, locs[:-1])
    assert "not among the 8 given" in caplog.text
    _same_index(short, passed, rows, range(-1, 2001, 7))


def test_known_locations_with_hash_clash_or_null_location(
    sieve_spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names sharing a hash take the pass (same index); a null location is still refused."""

    locs, rows = _mixed_rows()
    params = {"min_run_keys": "2", "min_keys_per_block": "2"}
    passed = _build(sieve_spark, rows, "bigint", params)
    monkeypatch.setattr(location_codes, "distinct_codes", lambda codes: False)
    clashed = _build(sieve_spark, rows, "bigint", params, locs)
    _same_index(clashed, passed, rows, range(-1, 2001, 7))
    monkeypatch.undo()
    with pytest.raises(ValueError, match="null location"):
        _build(sieve_spark, [(1, None), (2, "a")], "bigint", {}, ["a"])


def test_known_locations_nulls_only_and_empty(sieve_spark: Any) -> None:
    index = _build(sieve_spark, [(None, "a"), (None, "b")], "string", {}, ["a", "b", "c"])
    assert index.lookup(KeyQuery("is_null")).locations == {"a", "b"}
    assert index.lookup(KeyQuery("range")).locations == frozenset()
    assert index.describe()["rows"] == 2 and index.describe()["locations"] == 2
    empty = _build(sieve_spark, [], "bigint", {}, ["a"])
    assert empty.lookup(KeyQuery("points", values=(1,))).locations == frozenset()
    assert empty.describe()["segments"] == 0 and empty.describe()["locations"] == 0
