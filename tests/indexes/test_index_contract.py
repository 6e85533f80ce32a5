"""Every built-in index type keeps the index contract (``lakesieve.testing.index_contract``)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from lakesieve.contract import registry
from lakesieve.contract.hookspecs import hookimpl
from lakesieve.contract.loaded import answering
from lakesieve.contract.plugin_base import IndexTypeBase
from lakesieve.contract.protocols import LoadedIndex
from lakesieve.indexes.sieve import plugin as sieve_plugin
from lakesieve.model import BuiltIndex, KeyQuery
from lakesieve.testing import IndexContract
from lakesieve.testing.index_contract import spark_true_locations, true_locations

pytestmark = pytest.mark.spark


#: CI draws, per key type, two random examples per lookup test and one per
#: delta test beside the special-value ones; the long tier (``pytest -m long``,
#: the ``*Long`` classes) draws the kit's defaults (6 and 3).
CI_EXAMPLES, CI_DELTA_EXAMPLES = 2, 1
#: CI checks deltas on the key types with the most awkward values (NaN and
#: -0.0, shared string prefixes, wide decimals, instants in several zones, a
#: plain integer); the long tier on all twelve.
CI_DELTA_KEY_TYPES = ("bigint", "float", "double", "decimal(38,10)", "string", "timestamp")


class TestZoneMapContract(IndexContract):
    index_type = "zonemap"
    complete = True
    examples, delta_examples = CI_EXAMPLES, CI_DELTA_EXAMPLES
    delta_key_types = CI_DELTA_KEY_TYPES


class TestBloomContract(IndexContract):
    index_type = "bloom"
    complete = True
    examples, delta_examples = CI_EXAMPLES, CI_DELTA_EXAMPLES
    delta_key_types = CI_DELTA_KEY_TYPES


class TestExactContract(IndexContract):
    index_type = "exact"
    complete = True
    exact_answers = True
    delta_matches_rebuild = True
    examples, delta_examples = CI_EXAMPLES, CI_DELTA_EXAMPLES
    delta_key_types = CI_DELTA_KEY_TYPES


class TestSieveContract(IndexContract):
    index_type = "sieve"
    complete = True
    examples, delta_examples = CI_EXAMPLES, CI_DELTA_EXAMPLES
    delta_key_types = CI_DELTA_KEY_TYPES


def _with_kit_draws(contract: type[IndexContract]) -> Any:
    """``contract`` with the kit's default draws on every key type, in the long tier (``pytest -m long``)."""
    long_class = type(
        f"{contract.__name__}Long",
        (contract,),
        {
            "examples": IndexContract.examples,
            "delta_examples": IndexContract.delta_examples,
            "delta_key_types": None,
        },
    )
    return pytest.mark.long(long_class)


TestZoneMapContractLong = _with_kit_draws(TestZoneMapContract)
TestBloomContractLong = _with_kit_draws(TestBloomContract)
TestExactContractLong = _with_kit_draws(TestExactContract)
TestSieveContractLong = _with_kit_draws(TestSieveContract)


class _SieveWithoutDeltaType(IndexTypeBase):
    """The sieve index type under another name, without ``apply_delta``."""

    name = "sieve_without_delta"
    sieve = sieve_plugin.SieveIndexType()

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        return self.sieve.validate(options, key_type)

    def build(
        self,
        spark: Any,
        relation: Any,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None,
        rows_hint: int | None,
    ) -> BuiltIndex:
        return self.sieve.build(spark, relation, key_type, params, None, None)

    def load(self, built: BuiltIndex) -> Any:
        return self.sieve.load(built)


class _SieveWithoutDelta:
    """A plugin providing :class:`_SieveWithoutDeltaType`."""

    name = _SieveWithoutDeltaType.name

    @hookimpl
    def lakesieve_index_types(self) -> list[Any]:
        return [_SieveWithoutDeltaType()]


@pytest.fixture
def without_delta() -> Iterator[IndexContract]:
    """A contract kit for an index type lacking ``apply_delta``, registered for one test only."""
    impl = _SieveWithoutDelta()
    pm = registry.get_plugin_manager()
    pm.register(impl)

    class Kit(IndexContract):
        index_type = impl.name

    try:
        yield Kit()
    finally:
        pm.unregister(impl)


def test_types_without_apply_delta_skip_the_delta_checks(
    spark: Any, without_delta: IndexContract
) -> None:
    params = without_delta.validate("bigint")
    with pytest.raises(pytest.skip.Exception, match="does not implement apply_delta"):
        without_delta.require_delta(spark, "bigint", params)
    # an index type that has it passes the probe
    TestSieveContract().require_delta(spark, "bigint", TestSieveContract().validate("bigint"))


def test_complete_index_types_fail_without_apply_delta(
    spark: Any, without_delta: IndexContract
) -> None:
    """For an index type declared ``complete`` (the built-ins), a missing hook fails the test."""
    kit = without_delta
    type(kit).complete = True
    type(kit)._delta_support = {}
    params = kit.validate("bigint")
    with pytest.raises(pytest.fail.Exception, match="does not implement apply_delta"):
        kit.require_delta(spark, "bigint", params)


def test_complete_index_types_fail_on_a_refused_key_type() -> None:
    """A refused key type skips a third-party kit and fails a ``complete`` one."""

    class Lenient(IndexContract):
        index_type = "sieve"

    class Strict(IndexContract):
        index_type = "sieve"
        complete = True

    with pytest.raises(pytest.skip.Exception, match="does not index"):
        Lenient().validate("array<int>")
    with pytest.raises(pytest.fail.Exception, match="refuses key type"):
        Strict().validate("array<int>")


@pytest.mark.parametrize(
    ("key_type", "rows", "query", "expected"),
    [
        (
            "double",
            [(math.nan, "n"), (1.0, "one"), (-0.0, "z")],
            KeyQuery("range", low=5.0, low_inclusive=False),
            {"n"},
        ),
        (
            "double",
            [(math.nan, "n"), (math.inf, "i"), (1.0, "one")],
            KeyQuery("range", low=math.inf),
            {"n", "i"},
        ),
        ("double", [(math.nan, "n"), (1.0, "one")], KeyQuery("points", (math.nan,)), {"n"}),
        (
            "double",
            [(-0.0, "neg"), (0.0, "pos"), (1.0, "one")],
            KeyQuery("points", (0.0,)),
            {"neg", "pos"},
        ),
        ("float", [(-0.0, "neg"), (1.0, "one")], KeyQuery("points", (-0.0,)), {"neg"}),
        (
            "double",
            [(-0.0, "neg"), (1.0, "one")],
            KeyQuery("range", high=0.0, high_inclusive=False),
            set(),
        ),
        # float32(0.1) = 0.100000001490116...: above the double 0.1, equal to no double 0.1
        (
            "float",
            [(0.10000000149011612, "f"), (0.0, "z")],
            KeyQuery("range", low=0.1, low_inclusive=False),
            {"f"},
        ),
        ("float", [(0.10000000149011612, "f")], KeyQuery("points", (0.1,)), set()),
        ("double", [(1.0, "a"), (2.0, "b")], KeyQuery("range", low=2.0, high=1.0), set()),
        ("double", [(None, "null"), (1.0, "a")], KeyQuery("is_null"), {"null"}),
        ("double", [(None, "null"), (1.0, "a")], KeyQuery("range"), {"a"}),
        (
            "bigint",
            [(-(2**63), "min"), (2**63 - 1, "max")],
            KeyQuery("range", low=-(2**63), low_inclusive=False),
            {"max"},
        ),
        (
            "string",
            [("commonprefix_a", "a"), ("commonprefix_b", "b"), ("", "e")],
            KeyQuery("range", high="commonprefix_a"),
            {"a", "e"},
        ),
        (
            "string",
            [("é", "e"), ("z", "z")],
            KeyQuery("range", low="z", low_inclusive=False),
            {"e"},
        ),
        ("binary", [(b"\xff" * 9, "f"), (b"", "e")], KeyQuery("points", (b"",)), {"e"}),
        (
            "boolean",
            [(True, "t"), (False, "f")],
            KeyQuery("range", low=False, low_inclusive=False),
            {"t"},
        ),
        (
            "timestamp",
            [
                (
                    dt.datetime(
                        2000, 1, 1, 5, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))
                    ),
                    "x",
                )
            ],
            KeyQuery("points", (dt.datetime(2000, 1, 1, tzinfo=dt.UTC),)),
            {"x"},
        ),
        (
            "timestamp_ntz",
            [(dt.datetime(2000, 1, 1, 0, 0, 0, 1), "x")],
            KeyQuery("range", low=dt.datetime(2000, 1, 1), low_inclusive=False),
            {"x"},
        ),
        (
            "decimal(38,10)",
            [(decimal.Decimal("-9999999999999999999999999999.9999999999"), "m")],
            KeyQuery("range", high=decimal.Decimal("-1")),
            {"m"},
        ),
        (
            "date",
            [(dt.date(1900, 1, 1), "old")],
            KeyQuery("range", high=dt.date(1969, 12, 31)),
            {"old"},
        ),
        ("bigint", [(1, "a"), (2, "b")], KeyQuery("range", low=decimal.Decimal("1.5")), {"b"}),
        ("bigint", [(1, "a"), (2, "b")], KeyQuery("points", (decimal.Decimal("1.5"),)), set()),
        ("bigint", [(1, "a"), (2, "b")], KeyQuery("range", high=1.5), {"a"}),
        (
            "decimal(10,2)",
            [(decimal.Decimal("1.00"), "a")],
            KeyQuery("range", high=decimal.Decimal("0.999")),
            set(),
        ),
    ],
)
def test_truth_is_spark_sql(
    spark: Any, key_type: str, rows: list[Any], query: KeyQuery, expected: set[str]
) -> None:
    """The kit's truth is Spark SQL's, and its Python reference agrees, on each awkward case."""
    assert spark_true_locations(spark, key_type, rows, [query]) == [frozenset(expected)]
    assert true_locations(rows, query) == frozenset(expected)


@pytest.mark.parametrize(
    "contract", [TestZoneMapContract, TestBloomContract, TestExactContract, TestSieveContract]
)
def test_built_in_indexes_answer_for_themselves(spark: Any, contract: type[IndexContract]) -> None:
    """Each built-in type's load returns a LoadedIndex, which the planner asks directly."""
    kit = contract()
    rows: list[tuple[Any, str]] = [(1, "a"), (5, "b"), (None, "c"), (9, "d")]
    index = kit.load(kit.build(spark, "bigint", rows, kit.validate("bigint")))
    assert isinstance(index, LoadedIndex), type(index).__name__
    assert answering(kit.index_object(), index) is index
    found = index.lookup(KeyQuery("points", (5,))).locations
    assert found is not None and "b" in found
    assert index.describe()["size_bytes"] > 0
