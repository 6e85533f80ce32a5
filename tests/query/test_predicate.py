"""Parsing, binding, NOT push-down and SQL rendering of predicates (no Spark)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.errors import ColumnNotFoundError, PredicateError
from lakesieve.expressions import (
    And,
    Between,
    ColumnTruth,
    Compare,
    Const,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    bind,
    parse,
    push_not,
    to_sql,
)

SCHEMA = pa.schema(
    [
        ("a", pa.int64()),
        ("d", pa.date32()),
        ("s", pa.string()),
        ("x", pa.decimal128(12, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("f", pa.float64()),
    ]
)


def test_parse_every_form() -> None:
    node = parse("a = 1 AND (b IN (1, 2) OR NOT c BETWEEN 1 AND 3) AND d IS NOT NULL")
    assert isinstance(node, And)
    assert len(node.children) == 3
    assert isinstance(node.children[2], IsNull) and node.children[2].negated


def test_literal_on_left_flips_operator() -> None:
    bound = bind("5 < a", SCHEMA)
    assert bound.node == Compare("a", ">", 5)


def test_binding_types_literals() -> None:
    b = bind(
        "d >= '2024-01-31' AND x < 1.25 AND ts = TIMESTAMP '2024-01-01 10:00:00' AND s = 'it\\'s'",
        SCHEMA,
    )
    leaves = b.node.children  # type: ignore[union-attr]
    assert leaves[0] == Compare("d", ">=", dt.date(2024, 1, 31))
    assert leaves[1] == Compare("x", "<", decimal.Decimal("1.25"))
    assert leaves[2] == Compare("ts", "=", dt.datetime(2024, 1, 1, 10))
    assert leaves[3] == Compare("s", "=", "it's")


def test_fractional_bounds_on_integer_columns_are_tightened() -> None:
    # a < 3.5 keeps exactly the rows a <= 3 keeps; a = 3.5 keeps none
    assert bind("a < 3.5", SCHEMA).node == Compare("a", "<=", 3)
    assert bind("a > 3.5", SCHEMA).node == Compare("a", ">=", 4)
    # a = 3.5 is FALSE for every non-NULL a, NULL for the others (so NOT keeps no NULL row)
    assert bind("a = 3.5", SCHEMA).node == ColumnTruth("a", False)
    assert bind("a != 3.5", SCHEMA).node == ColumnTruth("a", True)


def test_null_comparisons_stay_null() -> None:
    # three-valued logic: a comparison with NULL is NULL, and so is its negation
    assert bind("a = NULL", SCHEMA).node == Const(None)
    assert bind("NOT (a = NULL)", SCHEMA).node == Not(Const(None))
    assert push_not(bind("NOT (a = NULL)", SCHEMA).node) == Const(None)
    assert bind("a NOT IN (1, NULL)", SCHEMA).node == InList("a", (1,), negated=True, has_null=True)


def test_case_insensitive_columns_like_spark() -> None:
    assert bind("A = 1", SCHEMA).node == Compare("a", "=", 1)


@pytest.mark.parametrize(
    ("text", "error", "names"),
    [
        ("a = ", PredicateError, "a = "),
        ("a = b", PredicateError, "comparing two columns"),
        ("zz = 1", ColumnNotFoundError, "'zz'"),
        ("d = 'yesterday'", PredicateError, "'d'"),
        ("a = 'abc'", PredicateError, "'a'"),
        ("(a = 1", PredicateError, "')'"),
        ("a > 99999999999999999999", PredicateError, "bigint"),
        ("a LIKE 'x'", PredicateError, "a LIKE"),
        ("", PredicateError, "empty"),
    ],
)
def test_bad_predicates_name_the_problem(text: str, error: type[Exception], names: str) -> None:
    with pytest.raises(error) as info:
        bind(text, SCHEMA)
    msg = str(info.value)
    assert "\n" not in msg
    assert names in msg


def test_sql_rendering_is_typed() -> None:
    sql = to_sql(bind("x <= 1.255 AND d = '2024-02-03' AND a IN (1, 2)", SCHEMA))
    assert "DATE '2024-02-03'" in sql
    assert "CAST(1 AS BIGINT)" in sql


# ---------------------------------------------------------------- NOT push-down

ROWS = [{"a": a} for a in [None, -3, 0, 1, 2, 5, 9]]


def _eval(node: Predicate, row: dict[str, int | None]) -> bool | None:
    """SQL three-valued evaluation of a bound tree over one row."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, And):
        vals = [_eval(c, row) for c in node.children]
        if any(v is False for v in vals):
            return False
        return None if any(v is None for v in vals) else True
    if isinstance(node, Or):
        vals = [_eval(c, row) for c in node.children]
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    if isinstance(node, Not):
        v = _eval(node.child, row)
        return None if v is None else not v
    x = row[node.column]
    if isinstance(node, IsNull):
        return (x is not None) if node.negated else (x is None)
    if x is None:
        return None
    if isinstance(node, Compare):
        ops = {
            "=": x == node.value,
            "!=": x != node.value,
            "<": x < node.value,
            "<=": x <= node.value,
            ">": x > node.value,
            ">=": x >= node.value,
        }
        return ops[node.op]
    if isinstance(node, InList):
        inside = x in node.values
        return not inside if node.negated else inside
    if isinstance(node, Between):
        inside = node.low <= x <= node.high
        return not inside if node.negated else inside
    raise AssertionError(node)


leaf = st.one_of(
    st.builds(
        lambda op, v: Compare("a", op, v),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        st.integers(-4, 10),
    ),
    st.builds(
        lambda vs, n: InList("a", tuple(vs), n),
        st.lists(st.integers(-4, 10), min_size=1, max_size=3),
        st.booleans(),
    ),
    st.builds(
        lambda lo, w, n: Between("a", lo, lo + w, n),
        st.integers(-4, 10),
        st.integers(0, 5),
        st.booleans(),
    ),
    st.builds(lambda n: IsNull("a", n), st.booleans()),
    st.builds(Const, st.booleans()),
)
trees = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.builds(lambda xs: And(tuple(xs)), st.lists(kids, min_size=2, max_size=3)),
        st.builds(lambda xs: Or(tuple(xs)), st.lists(kids, min_size=2, max_size=3)),
        st.builds(Not, kids),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_push_not_keeps_the_same_rows(tree: Predicate) -> None:
    pushed = push_not(tree)
    for row in ROWS:
        assert (_eval(tree, row) is True) == (_eval(pushed, row) is True), (tree, pushed, row)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_string_literals_round_trip_through_our_parser(value: str) -> None:
    from lakesieve.expressions import BoundColumn, sql_literal

    col = BoundColumn("s", pa.string(), "string")
    bound = bind(f"s = {sql_literal(value, col)}", SCHEMA)
    assert bound.node == Compare("s", "=", value)
