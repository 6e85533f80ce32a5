"""Every built-in index type keeps the index contract (``lakesieve.testing.index_contract``)."""

from __future__ import annotations

import pytest
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
