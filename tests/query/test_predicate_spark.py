"""Rendered predicates mean to Spark what they mean to us."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.expressions import BoundColumn, sql_literal

pytestmark = pytest.mark.spark


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8),
        min_size=1,
        max_size=10,
    )
)
def test_string_literals_round_trip_through_spark(spark: Any, values: list[str]) -> None:
    col = BoundColumn("s", pa.string(), "string")
    sql = "SELECT " + ", ".join(f"{sql_literal(v, col)} AS c{i}" for i, v in enumerate(values))
    row = spark.sql(sql).first()
    assert list(row) == values


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.decimals(min_value=-50, max_value=50, places=2), min_size=1, max_size=20),
    st.decimals(min_value=-60, max_value=60, places=4),
    st.sampled_from(["<", "<=", ">", ">=", "="]),
)
def test_decimal_literals_are_not_rounded(spark: Any, values: list, literal: Any, op: str) -> None:
    """``x <= 1.505`` on decimal(10,2) keeps exactly the values <= 1.505, as an index assumes."""
    import decimal

    from lakesieve.expressions import bind, to_sql

    schema = pa.schema([("x", pa.decimal128(10, 2))])
    df = spark.createDataFrame([(v,) for v in values], "x decimal(10,2)")
    sql = to_sql(bind(f"x {op} {literal}", schema))
    got = sorted(r[0] for r in df.where(sql).collect())
    ops = {
        "<": decimal.Decimal.__lt__,
        "<=": decimal.Decimal.__le__,
        ">": decimal.Decimal.__gt__,
        ">=": decimal.Decimal.__ge__,
        "=": decimal.Decimal.__eq__,
    }
    want = sorted(v for v in values if ops[op](v, literal))
    assert got == want, sql
