"""Locations as hash codes in build shuffles (:mod:`lakesieve.keys.location_codes`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lakesieve.keys.location_codes import LocationCodes, code_column


def test_codes_map_back_to_ids_and_report_strangers() -> None:
    codes = LocationCodes.from_codes({"b": 10, "a": 99, "c": -5}, ["a", "b", "c"])
    assert codes is not None
    assert codes.codes.tolist() == [-5, 10, 99]
    ids, known = codes.ids_of(np.array([99, -5, 10, 11, 1000, -6], np.int64))
    assert known.tolist() == [True, True, True, False, False, False]
    assert ids[:3].tolist() == [0, 2, 1]


def test_names_sharing_a_code_are_refused() -> None:
    assert LocationCodes.from_codes({"a": 1, "b": 1}, ["a", "b"]) is None


def test_a_name_no_utf8_spells_sends_the_build_to_the_join() -> None:
    """A lone surrogate (an undecodable byte of a file name) has no UTF-8 bytes to hash."""
    assert LocationCodes.of(["part=0/fg-1", "bad-\udcff.parquet"]) is None
    assert LocationCodes.of(["part=0/fg-1"]) is not None


@pytest.mark.spark
def test_spark_codes_of_names_are_the_codes_of_rows(spark: Any) -> None:
    """The driver's codes equal the per-row expression's, and a null location is no name's code."""
    names = ["part=0/fg-1", "part=1/fg-2", "é/ü-3"]
    codes = LocationCodes.of([*names, names[0]])
    assert codes is not None and codes.names == tuple(sorted(names))
    frame = spark.createDataFrame([(n,) for n in [*names, None]], "location string")
    got = [int(r["c"]) for r in frame.select(code_column().alias("c")).collect()]
    ids, known = codes.ids_of(np.array(got, np.int64))
    assert known.tolist() == [True, True, True, False]
    assert [codes.names[i] for i in ids[:3]] == names
    assert LocationCodes.of([]) is None


def _names_of_every_length() -> list[str]:
    """Names whose UTF-8 lengths cross each of XXH64's 1-, 4-, 8- and 32-byte steps."""
    names = ["", "a", "é", "日本", "\U0001f600", "s3://bucket/part=0/fg-1_0-1-0_20260101.parquet"]
    names += ["x" * n for n in range(1, 80)]
    names += [f"part=ü/{'ab' * n}-{n}.parquet" for n in range(0, 40, 3)]
    return names


def test_python_codes_are_deterministic_and_signed() -> None:
    from lakesieve.keys.xxhash64 import spark_xxhash64

    codes = [spark_xxhash64(n) for n in _names_of_every_length()]
    assert all(-(1 << 63) <= c < 1 << 63 for c in codes)
    assert any(c < 0 for c in codes) and any(c > 0 for c in codes)
    assert codes == [spark_xxhash64(n) for n in _names_of_every_length()]


@pytest.mark.spark
def test_python_codes_equal_spark_sqls_xxhash64(spark: Any) -> None:
    """The driver's codes (no Spark job) are what Spark SQL's ``xxhash64`` gives each name."""
    from lakesieve.keys.xxhash64 import spark_xxhash64

    names = _names_of_every_length()
    frame = spark.createDataFrame([(i, n) for i, n in enumerate(names)], "i int, location string")
    got = {int(r["i"]): int(r["c"]) for r in frame.select("i", code_column().alias("c")).collect()}
    mine = {i: spark_xxhash64(n) for i, n in enumerate(names)}
    assert mine == got
