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


@pytest.mark.spark
def test_spark_codes_of_names_are_the_codes_of_rows(spark: Any) -> None:
    """The driver's codes equal the per-row expression's, and a null location is no name's code."""
    names = ["part=0/fg-1", "part=1/fg-2", "é/ü-3"]
    codes = LocationCodes.of(spark, [*names, names[0]])
    assert codes is not None and codes.names == tuple(sorted(names))
    frame = spark.createDataFrame([(n,) for n in [*names, None]], "location string")
    got = [int(r["c"]) for r in frame.select(code_column().alias("c")).collect()]
    ids, known = codes.ids_of(np.array(got, np.int64))
    assert known.tolist() == [True, True, True, False]
    assert [codes.names[i] for i in ids[:3]] == names
    assert LocationCodes.of(spark, []) is None
