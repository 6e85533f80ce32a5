"""Build parameters of the Bloom filter index.

``fpp`` is the false-positive probability each location's filter is sized
for; ``expected_keys`` the number of distinct keys a filter is sized for
(``auto``: the location's own distinct non-null keys at build time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakesieve.sdk import OptionSpec, parse_options

INDEX_TYPE = "bloom"

#: Every option of the Bloom index.
OPTIONS: dict[str, OptionSpec] = {
    "fpp": OptionSpec(
        "number",
        0.01,
        "false-positive probability a location's filter is sized for: the chance that a "
        "point lookup of a key the location does not hold still selects it",
        low=0.0,
        low_inclusive=False,
        high=0.5,
    ),
    "expected_keys": OptionSpec(
        "integer",
        None,
        "distinct keys each location's filter is sized for; 'auto' sizes each filter for "
        "the distinct non-null keys its location holds at build time",
        low=1,
        optional=True,
    ),
}


def parse_bloom_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full, typed parameter dict, defaults filled in.

    Raises:
        OptionError: an unknown option or a value of the wrong kind.
    """
    return parse_options(INDEX_TYPE, OPTIONS, options)
