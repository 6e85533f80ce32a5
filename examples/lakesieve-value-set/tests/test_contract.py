"""The example index type passes lakesieve's index contract kit.

Run from this folder after ``pip install -e .`` (the entry point registers
the plugin); ``plugin`` also registers it when it is not installed.
"""

from __future__ import annotations

from typing import ClassVar

from lakesieve.testing.index_contract import IndexContract
from lakesieve_value_set import plugin as valueset_plugin


class TestValueSetContract(IndexContract):
    """Every key type the framework maps, deltas included."""

    complete = True

    index_type = "valueset"
    plugin = valueset_plugin
    options: ClassVar[dict[str, str]] = {"max_values": "4"}
