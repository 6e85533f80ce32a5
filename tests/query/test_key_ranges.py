"""An AND's range comparisons on one column are asked as one range (``lakesieve.query.key_ranges``).

On an interleaved layout ``k >= a`` and ``k <= b`` each select nearly every
location, and so does their intersection; the range ``[a, b]`` selects the
few that hold it. The planner tests use the exact brute-force index of
``test_planner``, so with merging an AND of ranges is answered exactly.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.expressions import And, Between, Compare, InList, IsNull, Not, Or
from lakesieve.model import KeyQuery
from lakesieve.query.key_ranges import merge_ranges
from lakesieve.query.planner import evaluate

from tests.query.test_planner import BruteForce, _loaded
from tests.query.test_planner import setup_module as _register_brute_type


def setup_module() -> None:
    _register_brute_type()


def test_two_sides_become_one_range_and_the_rest_stays() -> None:
    rest_leaf = InList("b", (1, 2))
    ranges, rest = merge_ranges(
        (Compare("a", ">=", 10), rest_leaf, Compare("a", "<", 20), IsNull("a", negated=True))
    )
    assert ranges == {"a": KeyQuery("range", low=10, high=20, high_inclusive=False)}
    assert rest == [rest_leaf, IsNull("a", negated=True)]


def test_the_tighter_bound_wins_and_exclusive_wins_at_equal_values() -> None:
    ranges, rest = merge_ranges(
        (
            Compare("a", ">", 5),
            Compare("a", ">=", 7),
            Between("a", 5, 30),
            Compare("a", "<=", 20),
            Compare("a", "<", 20),
        )
    )
    assert rest == []
    assert ranges == {"a": KeyQuery("range", low=7, high=20, high_inclusive=False)}
    ranges, _ = merge_ranges((Compare("a", ">=", 3), Compare("a", ">", 3)))
    assert ranges == {"a": KeyQuery("range", low=3, low_inclusive=False)}


def test_nested_ands_are_flattened() -> None:
    ranges, rest = merge_ranges(
        (Compare("a", ">", 1), And((Compare("b", "=", 0), Compare("a", "<", 9))))
    )
    assert ranges == {
        "a": KeyQuery("range", low=1, low_inclusive=False, high=9, high_inclusive=False)
    }
    assert rest == [Compare("b", "=", 0)]


@pytest.mark.parametrize(
    "children",
    [
        (Compare("a", ">", 1),),  # one comparison: asked as before
        (Compare("a", ">", 1), Compare("b", "<", 9)),  # one per column
        (Compare("x", ">", float("nan")), Compare("x", "<", 9.0)),  # NaN: Python misorders it
        (Compare("x", ">", decimal.Decimal("NaN")), Compare("x", "<", decimal.Decimal(9))),
        (Compare("a", ">", "m"), Compare("a", "<", 9)),  # values Python cannot order
        (Compare("a", ">", 9), Compare("a", "<", 1)),  # empty: left to the indexes
        (Compare("a", ">=", 4), Compare("a", "<", 4)),
        (Between("a", 1, 5, negated=True), Compare("a", "<", 9)),  # NOT BETWEEN is two ranges
        (Compare("a", "!=", 1), Compare("a", "<", 9)),
    ],
)
def test_what_is_left_alone(children: tuple) -> None:
    ranges, rest = merge_ranges(children)
    assert ranges == {} and rest == list(children)


def test_other_ordered_types_merge() -> None:
    d1, d2 = dt.date(2024, 1, 1), dt.date(2024, 2, 1)
    ranges, _ = merge_ranges((Compare("d", ">=", d1), Compare("d", "<=", d2)))
    assert ranges == {"d": KeyQuery("range", low=d1, high=d2)}
    ranges, _ = merge_ranges((Compare("s", ">", "apple"), Compare("s", "<", "apricot")))
    assert ranges["s"].low == "apple" and ranges["s"].high == "apricot"
    ranges, _ = merge_ranges((Compare("x", ">=", -0.0), Compare("x", "<=", 0.0)))
    assert ranges == {"x": KeyQuery("range", low=-0.0, high=0.0)}


def _interleaved(keys: int = 100, run: int = 5, locations: int = 4) -> list[tuple[int | None, str]]:
    """Key runs of ``run`` keys dealt over ``locations`` in turn: every location spans the domain."""
    return [(k, f"L{(k // run) % locations}") for k in range(keys)]


def test_interleaved_range_selects_its_run_not_every_location() -> None:
    by_column = {"a": [_loaded(BruteForce(_interleaved()))]}
    assert evaluate(Compare("a", ">=", 50), by_column) == {"L0", "L1", "L2", "L3"}
    assert evaluate(Compare("a", "<=", 54), by_column) == {"L0", "L1", "L2", "L3"}
    both = And((Compare("a", ">=", 50), Compare("a", "<=", 54), IsNull("a", negated=True)))
    assert evaluate(both, by_column) == {"L2"}
    assert evaluate(Between("a", 50, 54), by_column) == {"L2"}
    # the negation of an OR is the AND of its negated children, merged the same way
    assert evaluate(Not(Or((Compare("a", "<", 50), Compare("a", ">", 54)))), by_column) == {"L2"}


sides = st.tuples(st.sampled_from([">", ">=", "<", "<=", "between"]), st.integers(-5, 105))


@settings(max_examples=300, deadline=None)
@given(st.lists(sides, min_size=1, max_size=5), st.lists(st.integers(-5, 105), max_size=3))
def test_an_and_of_ranges_is_answered_exactly(
    parts: list[tuple[str, int]], extra: list[int]
) -> None:
    """With an exact index, the AND's answer is exactly the locations holding a matching key."""
    pairs = [*_interleaved(), (None, "L9")]
    children = tuple(
        Between("a", v, v + 7) if op == "between" else Compare("a", op, v) for op, v in parts
    ) + tuple(Compare("a", "!=", v) for v in extra)
    tree = And(children) if len(children) > 1 else children[0]

    def holds(key: int | None) -> bool:
        if key is None:
            return False
        for op, v in parts:
            if op == "between" and not v <= key <= v + 7:
                return False
            if (
                op != "between"
                and not {">": key > v, ">=": key >= v, "<": key < v, "<=": key <= v}[op]
            ):
                return False
        return True

    by_column = {"a": [_loaded(BruteForce(pairs))]}
    answer = evaluate(tree, by_column)
    truth = {loc for key, loc in pairs if holds(key) and key not in extra}
    in_range = {loc for key, loc in pairs if holds(key)}
    assert answer is not None and truth <= answer
    # "!=" prunes nothing and the exact index answers the one range exactly: where some key
    # lies in the intersection, the answer is the locations holding such a key
    if in_range:
        assert answer == in_range, (tree, answer, in_range)
