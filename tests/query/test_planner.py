"""The planner walks AND/OR/NOT and never returns fewer locations than the truth.

A brute-force index type registered here answers each key query exactly, so
the planner's combination logic is tested on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.contract.loaded import answering
from lakesieve.contract.plugin_base import IndexTypeBase
from lakesieve.contract.protocols import LoadedIndex
from lakesieve.expressions import And, Between, Compare, Const, InList, IsNull, Not, Or, Predicate
from lakesieve.model import BuiltIndex, KeyQuery, LookupResult
from lakesieve.query.planner import evaluate, leaf_queries
from lakesieve.state.in_use import IndexInUse
from lakesieve.store.index_log import IndexDefinition, IndexState

from tests.query.test_predicate import _eval, trees


def _matches(q: KeyQuery, key: int | None) -> bool:
    if q.kind == "is_null":
        return key is None
    if key is None:
        return False
    if q.kind == "points":
        return key in q.values
    if q.low is not None and (key < q.low or (key == q.low and not q.low_inclusive)):
        return False
    return not (q.high is not None and (key > q.high or (key == q.high and not q.high_inclusive)))


class BruteForce:
    """An exact in-memory index over (key, location) pairs, for tests."""

    def __init__(self, pairs: list[tuple[int | None, str]]) -> None:
        self.pairs = pairs

    def lookup(self, q: KeyQuery) -> LookupResult:
        return LookupResult(frozenset(loc for k, loc in self.pairs if _matches(q, k)))


class BrokenIndex:
    def lookup(self, q: KeyQuery) -> LookupResult:
        raise RuntimeError("boom")


class _BruteType(IndexTypeBase):
    """An index type whose loaded objects answer lookups themselves; nothing else is used."""

    name = "brute"

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        raise NotImplementedError

    def build(self, *args: Any) -> BuiltIndex:
        raise NotImplementedError

    def load(self, built: BuiltIndex) -> Any:
        raise NotImplementedError


class _Plugin:
    from lakesieve.contract.hookspecs import hookimpl

    @hookimpl
    def lakesieve_index_types(self) -> list[Any]:
        return [_BruteType()]


def _loaded(obj: Any) -> IndexInUse:
    d = IndexDefinition("a_brute", "brute", "a", "bigint", {})
    s = IndexState("a_brute", "s", "1", "1", (), {}, 0)
    return IndexInUse(d, s, obj=obj)


def setup_module() -> None:
    from lakesieve.contract.registry import get_plugin_manager

    pm = get_plugin_manager()
    if not pm.has_plugin("test-brute"):
        pm.register(_Plugin(), name="test-brute")


relations = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-4, 10)), st.sampled_from([f"L{i}" for i in range(6)])
    ),
    min_size=0,
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(relations, trees)
def test_answer_covers_every_true_location(
    pairs: list[tuple[int | None, str]], tree: Predicate
) -> None:
    by_column = {"a": [_loaded(BruteForce(pairs))]}
    answer = evaluate(tree, by_column)
    truth = {loc for key, loc in pairs if _eval(tree, {"a": key}) is True}
    if answer is not None:
        assert truth <= answer, (tree, truth, answer)


def test_and_intersects_or_unites() -> None:
    pairs = [(1, "A"), (2, "B"), (3, "C")]
    by_column = {"a": [_loaded(BruteForce(pairs))]}
    assert evaluate(And((Compare("a", ">=", 2), Compare("a", "<=", 2))), by_column) == {"B"}
    assert evaluate(Or((Compare("a", "=", 1), Compare("a", "=", 3))), by_column) == {"A", "C"}
    assert evaluate(Not(Compare("a", "<", 3)), by_column) == {"C"}
    assert evaluate(Or((Compare("a", "=", 1), Compare("a", "!=", 3))), by_column) is None
    assert evaluate(Const(False), by_column) == frozenset()
    assert evaluate(Compare("b", "=", 1), by_column) is None  # no index on b


def test_failing_index_degrades_to_all_with_a_warning() -> None:
    import pytest
    from lakesieve.errors import LakesieveWarning

    by_column = {"a": [_loaded(BrokenIndex())]}
    with pytest.warns(LakesieveWarning, match="failed"):
        assert evaluate(Compare("a", "=", 1), by_column) is None


def test_leaf_queries_shapes() -> None:
    assert leaf_queries(Compare("a", "!=", 1)) is None
    assert leaf_queries(InList("a", (1, 2), negated=True)) is None
    assert leaf_queries(IsNull("a", negated=True)) is None
    nb = leaf_queries(Between("a", 1, 5, negated=True))
    assert nb is not None and len(nb) == 2


def test_explain_counts_only_locations_the_snapshot_has() -> None:
    """An index naming files a later commit rewrote reports only locations the query can read."""
    from lakesieve.model import Instant, ReadUnit, Snapshot
    from lakesieve.query.query_plan import Plan, explain_plan

    # the index was built when files A, B, C existed; a rewrite replaced B and C by D
    by_column = {"a": [_loaded(BruteForce([(1, "A"), (1, "B"), (1, "C"), (1, "D"), (2, "D")]))]}
    answer = evaluate(Compare("a", "=", 1), by_column)
    assert answer == {"A", "B", "C", "D"}
    instant = Instant("2", "2")
    snapshot = Snapshot(instant, (ReadUnit("A", "a.parquet"), ReadUnit("D", "d.parquet")))
    units = tuple(u for u in snapshot.units if u.location in answer)
    plan = Plan(instant, snapshot, units, None, indexes=by_column["a"])
    explained = explain_plan(plan, "/t", "delta", "a = 1", None)
    assert explained["locations_total"] == 2 and explained["locations_selected"] == 2
    assert explained["indexes"][0]["locations_selected"] == 2  # B and C are gone


class _Answering:
    """A loaded object that answers for itself: lookup and describe."""

    def lookup(self, q: KeyQuery) -> LookupResult:
        return LookupResult(frozenset({"self"}))

    def describe(self) -> dict[str, Any]:
        return {"size_bytes": 1}


class _OlderType(_BruteType):
    """An index type that answers on the type, as plugins did before LoadedIndex."""

    def lookup(self, index: Any, query: KeyQuery) -> LookupResult:
        return LookupResult(frozenset({"type"}))

    def describe(self, index: Any) -> dict[str, Any]:
        return {"size_bytes": 2}


def test_the_planner_asks_a_loaded_index_that_answers_for_itself() -> None:
    obj = _Answering()
    assert isinstance(obj, LoadedIndex)
    assert answering(_BruteType(), obj) is obj
    query = KeyQuery("range", high=5)
    assert evaluate(Compare("a", "<=", 5), {"a": [_loaded(obj)]}) == {"self"}
    # a type that answers itself is still asked, whatever its object could say
    older = answering(_OlderType(), obj)
    assert older is not obj
    assert (older.lookup(query).locations, older.describe()) == (
        frozenset({"type"}),
        {"size_bytes": 2},
    )
    # an object without describe is asked through its type (IndexTypeBase asks the object)
    partial = answering(_BruteType(), BruteForce([(1, "L1")]))
    assert partial.lookup(KeyQuery("points", (1,))).locations == frozenset({"L1"})
