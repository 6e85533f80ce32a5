"""Build parameters of the exact index: it has none.

The exact index keeps every distinct key with the locations holding it, so
there is nothing to tune; any option is refused with the list of valid
options (none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakesieve.sdk import OptionSpec, parse_options

INDEX_TYPE = "exact"

#: Every option of the exact index (none).
OPTIONS: dict[str, OptionSpec] = {}


def parse_exact_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full parameter dict (empty); refuses every option with :class:`OptionError`."""
    return parse_options(INDEX_TYPE, OPTIONS, options)
