"""Every built-in index type keeps the index contract (``lakesieve.testing.index_contract``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lakesieve import registry
from lakesieve.hookspecs import hookimpl
from lakesieve.indexes.sieve import plugin as sieve_plugin
from lakesieve.model import BuiltIndex
from lakesieve.testing import IndexContract

pytestmark = pytest.mark.spark


class TestZoneMapContract(IndexContract):
    index_type = "zonemap"


class TestBloomContract(IndexContract):
    index_type = "bloom"


class TestExactContract(IndexContract):
    index_type = "exact"
    exact_answers = True
    delta_matches_rebuild = True


class TestSieveContract(IndexContract):
    index_type = "sieve"


class _SieveWithoutDelta:
    """The sieve hooks under another index type name, without ``apply_delta``."""

    name = "sieve_without_delta"

    @hookimpl
    def lakesieve_index_types(self) -> list[str]:
        return [self.name]

    @hookimpl
    def lakesieve_index_validate(
        self, index_type: str, options: dict[str, str], key_type: str
    ) -> dict[str, Any] | None:
        if index_type != self.name:
            return None
        return sieve_plugin.lakesieve_index_validate("sieve", options, key_type)

    @hookimpl
    def lakesieve_index_build(
        self, index_type: str, spark: Any, relation: Any, key_type: str, params: dict[str, Any]
    ) -> BuiltIndex | None:
        if index_type != self.name:
            return None
        return sieve_plugin.lakesieve_index_build("sieve", spark, relation, key_type, params, None, None)

    @hookimpl
    def lakesieve_index_load(self, index_type: str, built: BuiltIndex) -> Any | None:
        if index_type != self.name:
            return None
        return sieve_plugin.lakesieve_index_load("sieve", built)


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
    with pytest.raises(pytest.skip.Exception, match="does not implement lakesieve_index_apply_delta"):
        without_delta.require_delta(spark, "bigint", params)
    # an index type that has it passes the probe
    TestSieveContract().require_delta(spark, "bigint", TestSieveContract().validate("bigint"))
