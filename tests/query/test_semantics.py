"""The predicate core against Spark SQL itself.

One small in-memory table holds the values Spark SQL treats specially (NULL,
NaN, -0.0, +-inf, integer and decimal extremes, strings sharing long
prefixes, timestamps around midnight). For every predicate, Spark SQL
evaluates the predicate *text* over that table (no Parquet, no pushdown): it
is the truth. lakesieve must then either refuse the predicate with a
:class:`PredicateError`, or keep exactly Spark's rows both through its Arrow
rendering and through the SQL it sends to Spark. Where Spark itself rejects
the text, lakesieve must refuse it too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import PredicateError
from lakesieve.expressions import bind, to_arrow, to_sql

pytestmark = pytest.mark.spark

D = decimal.Decimal
NAN = float("nan")
INF = float("inf")

TABLE = pa.table(
    {
        "id": pa.array(range(10), pa.int64()),
        "k": pa.array([1, 5, None, 9007199254740993, -(2**63), 2**63 - 1, 0, -1, 16777217, 2], pa.int64()),
        "i": pa.array([1, 5, None, 16777217, 0, -(2**31), 2**31 - 1, 3, 2, -5], pa.int32()),
        "t": pa.array([1, -128, None, 127, 0, 5, -1, 3, 2, 100], pa.int8()),
        "f": pa.array([-0.0, NAN, None, 16777216.0, 0.1, INF, -INF, 0.0, 0.5, NAN], pa.float32()),
        "d": pa.array([-0.0, NAN, None, 1.0, 0.1, INF, -INF, 0.0, 1e300, -1e-300], pa.float64()),
        "s": pa.array(["5", "abc", None, "", "abcdefghijX", "abcdefghijY", "é", "a", "Z", "abcdefgh"]),
        "dec": pa.array(
            [None, D(1), D("2.0001"), D(3), D("-99999999999999.9999"), D("99999999999999.9999"),
             D(0), D("852.5807"), D("-0.0001"), D("2")],
            pa.decimal128(18, 4),
        ),
        "b": pa.array([True, False, None, True, False, None, True, False, True, True]),
        "dt": pa.array(
            [dt.date(2024, 1, 1), None, dt.date(1970, 1, 1), dt.date(2024, 1, 2), dt.date(1, 1, 1),
             dt.date(9999, 12, 31), dt.date(2024, 1, 1), dt.date(2023, 12, 31), dt.date(2024, 2, 29),
             dt.date(2000, 1, 1)]
        ),
        "ts": pa.array(
            [dt.datetime(2024, 1, 1), None, dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 0, 0, 0, 1),
             dt.datetime(1970, 1, 1), dt.datetime(2024, 1, 2), dt.datetime(2023, 12, 31, 23, 59, 59, 999999),
             dt.datetime(2024, 1, 1), dt.datetime(2000, 1, 1), dt.datetime(2024, 1, 1, 8)],
            pa.timestamp("us", tz="UTC"),
        ),
        "bn": pa.array([b"a", b"ab", None, b"", b"\xff", b"abcdefghij", b"abcdefghik", b"\x00", b"z", b"ab"]),
    }
)  # fmt: skip

LITERALS: dict[str, list[str]] = {
    "k": ["0", "1", "5", "-1", "1.5", "-1.5", "1e0", "2.5e1", "9007199254740992", "9223372036854775807",
          "9223372036854775808", "-9223372036854775808", "NULL", "'5'", "' 5 '", "'abc'", "1e400",
          "CAST('NaN' AS DOUBLE)", "CAST(5 AS INT)", "99999999999999999999.5", "9007199254740993e0"],
    "i": ["0", "1", "2147483647", "2147483648", "-2147483649", "2.5", "16777217", "1e0", "'3'", "NULL",
          "CAST(16777217 AS FLOAT)", "'3.0'"],
    "t": ["0", "127", "128", "-129", "-128", "2.5", "300", "NULL", "1e0"],
    "f": ["0", "-0.0", "0.0", "0.1", "0.5", "CAST(0.1 AS FLOAT)", "16777217", "1e300", "1e400",
          "CAST('NaN' AS DOUBLE)", "'NaN'", "'inf'", "'-Infinity'", "NULL", "-1", "CAST('-0.0' AS FLOAT)",
          "'0.1'", "1e-400", "CAST('Infinity' AS FLOAT)"],
    "d": ["0", "-0.0", "0.1", "1e300", "CAST('NaN' AS DOUBLE)", "'Infinity'", "NULL", "1",
          "CAST(0.1 AS FLOAT)", "-1e-300", "'-0'"],
    "s": ["'5'", "'abc'", "''", "'abcdefghij'", "'abcdefghijX'", "'é'", "5", "NULL", "'a'", "'abcdefgh'"],
    "dec": ["2", "2.0001", "852.5807", "2.00005", "1e0", "'2.0001'", "99999999999999.99999",
            "100000000000000", "-0.0001", "NULL", "CAST(1 AS DECIMAL(3,1))", "0.00000000000000000000001"],
    "b": ["TRUE", "FALSE", "'true'", "1", "NULL"],
    "dt": ["DATE '2024-01-01'", "'2024-01-01'", "'2024-1-1'", "TIMESTAMP '2024-01-01 00:00:00'", "NULL",
           "'0001-01-01'", "'2024-02-30'"],
    "ts": ["TIMESTAMP '2024-01-01 00:00:00'", "'2024-01-01'", "DATE '2024-01-01'",
           "'2024-01-01 10:00:00+02:00'", "TIMESTAMP '2024-01-01 02:00:00+02:00'", "NULL",
           "'2024-01-01 00:00:00.000001'", "TIMESTAMP_NTZ '2024-01-01 08:00:00'"],
    "bn": ["'a'", "'ab'", "X'FF'", "''", "NULL", "X'00'"],
}  # fmt: skip

# one regression case per class of issue 15, plus literal rules found on the way
REGRESSIONS = [
    "f > 0.5",  # NaN lies above every number
    "NOT (f >= 0.5)",
    "d > 1e300",
    "NOT (k = NULL)",  # NULL stays NULL under NOT
    "NOT (k BETWEEN NULL AND 5)",
    "NOT (k IN (1, NULL))",
    "NOT (k IN (5))",
    "k NOT IN (5)",
    "f IN (0)",  # -0.0 equals 0.0
    "f = 0",
    "d IN (-0.0, 1)",
    "dec IN (2, 852.5807)",  # a decimal list typed by the column
    "f > 1e400",  # Spark rejects the literal
    "f = 0.1",  # float compared in double
    "f = CAST(0.1 AS FLOAT)",
    "f IN (0.1, 0.5)",
    "NOT (k >= 9223372036854775808)",  # Spark drops NULL semantics here: refused
    "NOT (i = 2.5)",
    "NOT (t < 300)",
    "k BETWEEN 5 AND 1",
    "NOT (k BETWEEN 5 AND 1)",
    "d = CAST('NaN' AS DOUBLE)",
    "d IN (CAST('NaN' AS DOUBLE), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)",
    "NOT (d < CAST('NaN' AS DOUBLE))",
    "s > 'abcdefgh'",
    "ts > '2024-01-01 00:00:00.000001'",
    "bn IN (X'FF', 'ab')",
    "s = 5",  # Spark casts every string to a number and fails on 'abc': refused
    "k IN (CAST(NULL AS INT), 5)",  # a typed NULL is still NULL
    "NOT (k IN (CAST(NULL AS INT), 5))",
    "NOT (k NOT IN (9223372036854775808, ' 5 ', -1, 1))",  # Spark compares this list in double
    "NOT (dec IN (100000000000000, 0.00000000000000000000001))",  # Spark would round: refused
]


def _ids(rows: list[Any]) -> list[int]:
    return sorted(r.id for r in rows)


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    return spark.createDataFrame(TABLE)


def _kept(frame: Any, texts: list[str]) -> list[list[int] | None]:
    """Spark SQL's kept row ids for each predicate text (``None``: Spark rejects it).

    All predicates go into one query as boolean columns; a batch Spark
    rejects is split until the rejected predicates are alone.
    """
    if not texts:
        return []
    try:
        rows = frame.selectExpr("id", *[f"({t}) AS p{n}" for n, t in enumerate(texts)]).collect()
    except Exception:
        if len(texts) == 1:
            return [None]
        half = len(texts) // 2
        return _kept(frame, texts[:half]) + _kept(frame, texts[half:])
    return [sorted(r.id for r in rows if r[f"p{n}"] is True) for n in range(len(texts))]


def check_many(frame: Any, texts: list[str]) -> dict[str, int]:
    """Compare lakesieve with Spark SQL on every text; count the outcomes.

    A refusal (one-line :class:`PredicateError`) is always allowed. What
    lakesieve accepts, Spark must accept too, and lakesieve must keep exactly
    Spark's rows through its Arrow rendering and through its rendered SQL.
    """
    accepted: list[tuple[str, Any]] = []
    outcomes = {"same": 0, "refused": 0}
    for text in texts:
        try:
            accepted.append((text, bind(text, TABLE.schema)))
        except PredicateError as exc:
            assert "\n" not in str(exc), f"{text}: multi-line error"
            outcomes["refused"] += 1
    truths = _kept(frame, [text for text, _ in accepted])
    rendered = _kept(frame, [to_sql(bound) for _, bound in accepted])
    for (text, bound), truth, sql_rows in zip(accepted, truths, rendered, strict=True):
        assert truth is not None, (
            f"{text}: Spark rejects it, lakesieve accepted it as {to_sql(bound)}"
        )
        arrow_rows = sorted(TABLE.filter(to_arrow(bound)).column("id").to_pylist())
        assert arrow_rows == truth, f"{text}: Arrow path kept {arrow_rows}, Spark SQL {truth}"
        assert sql_rows == truth, (
            f"{text}: rendered {to_sql(bound)} kept {sql_rows}, Spark SQL {truth}"
        )
        outcomes["same"] += 1
    return outcomes


@pytest.mark.parametrize("text", REGRESSIONS)
def test_regressions_match_spark(frame: Any, text: str) -> None:
    check_many(frame, [text])


def test_what_spark_rejects_is_refused(frame: Any) -> None:
    for text in (
        "f > 1e400",
        "k = 'abc'",
        "k = 1.00000000000000000000000000000000000000001",
        "b = 1",
    ):
        assert _kept(frame, [text]) == [None], text
        with pytest.raises(PredicateError):
            bind(text, TABLE.schema)


def test_refusals_are_the_expected_ones() -> None:
    for text in ("f > 1e400", "NOT (k >= 9223372036854775808)", "s = 5", "k = 'abc'", "dec = 1e0"):
        with pytest.raises(PredicateError):
            bind(text, TABLE.schema)


def test_every_literal_against_every_operator(frame: Any) -> None:
    texts = [
        f"{column} {op} ({lit})" if "IN" in op else f"{column} {op} {lit}"
        for column, literals in LITERALS.items()
        for lit in literals
        for op in ("=", "!=", "<", ">=", "IN", "NOT IN")
    ]
    texts += [f"NOT ({t})" for t in texts]
    outcomes = check_many(frame, texts)
    # most of these are answered, not refused
    assert outcomes.get("same", 0) > 2 * outcomes.get("refused", 0), outcomes


def _predicate(rnd: random.Random, depth: int = 0) -> str:
    r = rnd.random()
    if depth > 2 or r < 0.4:
        column = rnd.choice(list(LITERALS))
        lits = LITERALS[column]
        kind = rnd.random()
        if kind < 0.5:
            return f"{column} {rnd.choice(['=', '!=', '<', '<=', '>', '>=', '<>', '=='])} {rnd.choice(lits)}"
        if kind < 0.7:
            chosen = rnd.sample(lits, rnd.randint(1, min(4, len(lits))))
            return f"{column} {rnd.choice(['', 'NOT '])}IN ({', '.join(chosen)})"
        if kind < 0.9:
            return f"{column} {rnd.choice(['', 'NOT '])}BETWEEN {rnd.choice(lits)} AND {rnd.choice(lits)}"
        return f"{column} IS {rnd.choice(['', 'NOT '])}NULL"
    if r < 0.6:
        return f"NOT ({_predicate(rnd, depth + 1)})"
    joiner = " AND " if r < 0.8 else " OR "
    return joiner.join(f"({_predicate(rnd, depth + 1)})" for _ in range(rnd.randint(2, 3)))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_predicates_match_spark(frame: Any, seed: int) -> None:
    rnd = random.Random(seed)
    check_many(frame, [_predicate(rnd) for _ in range(40)])


def test_deep_predicates_are_refused_in_one_line() -> None:
    for text in (
        "(" * 400 + "k = 1" + ")" * 400,
        "NOT " * 1000 + "k = 1",
        "k = 1 AND (" * 1000 + "k = 1" + ")" * 1000,
    ):
        with pytest.raises(PredicateError) as info:
            bind(text, TABLE.schema)
        assert "\n" not in str(info.value)
    # wide is fine: a long flat OR chain and a long IN list
    wide = " OR ".join(f"k = {n}" for n in range(5000))
    assert len(bind(wide, TABLE.schema).node.children) == 5000  # type: ignore[union-attr]
    assert (
        len(
            bind("k IN (" + ", ".join(str(n) for n in range(10000)) + ")", TABLE.schema).node.values
        )
        == 10000
    )  # type: ignore[union-attr]
