"""Rendered predicates mean to Spark what they mean to us."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakesieve.predicate import BoundColumn, sql_literal

pytestmark = pytest.mark.spark


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8), min_size=1, max_size=10))
def test_string_literals_round_trip_through_spark(spark: Any, values: list[str]) -> None:
    col = BoundColumn("s", pa.string(), "string")
    sql = "SELECT " + ", ".join(f"{sql_literal(v, col)} AS c{i}" for i, v in enumerate(values))
    row = spark.sql(sql).first()
    assert list(row) == values
