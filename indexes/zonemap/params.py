"""Build parameters of the zone map index.

``string_prefix_bytes`` (default 64) bounds the stored minimum and maximum of
string and binary keys: longer values are cut to a prefix of about that many
bytes, the maximum then rounded up (last kept character incremented) so it
stays an upper bound. Parquet, Delta and Iceberg truncate their statistics the
same way. ``0`` keeps whole values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakesieve.sdk import OptionSpec, parse_options

INDEX_TYPE = "zonemap"

#: Every option of the zone map.
OPTIONS: dict[str, OptionSpec] = {
    "string_prefix_bytes": OptionSpec(
        "integer",
        64,
        "string and binary keys: keep at most about this many bytes of each location's "
        "minimum and maximum (the maximum rounded up so it stays an upper bound); 0 keeps "
        "whole values",
        low=0,
    ),
}


def parse_zonemap_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full, typed parameter dict, defaults filled in.

    Raises:
        OptionError: an unknown option or a value of the wrong kind.
    """
    return parse_options(INDEX_TYPE, OPTIONS, options)
