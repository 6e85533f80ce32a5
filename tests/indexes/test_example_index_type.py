"""The example index type of ``docs/writing-an-index-type.md`` passes the index contract kit."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lakesieve.testing.index_contract import IndexContract

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lakesieve-value-set"


def _example_plugin() -> Any:
    """Import the example plugin from its source folder (it is not installed here)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        return importlib.import_module("lakesieve_value_set.plugin")
    finally:
        sys.path.remove(str(EXAMPLE))


class TestValueSetExampleContract(IndexContract):
    """Every key type the framework maps, deltas included; ``max_values`` small so locations overflow."""

    complete = True

    index_type = "valueset"
    plugin = _example_plugin()
    options: ClassVar[dict[str, str]] = {"max_values": "4"}
    # CI's draws, as for the built-in types (tests/indexes/test_index_contract.py)
    examples, delta_examples = 2, 1


@pytest.mark.long
class TestValueSetExampleContractLong(TestValueSetExampleContract):
    """The same with the kit's default draws (the long tier)."""

    examples, delta_examples = IndexContract.examples, IndexContract.delta_examples
