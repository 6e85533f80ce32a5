"""Keys and locations, for index types: what an index stores and how it compares keys.

- **Key order.** :class:`KeyOrder` gives every value of a key column an exact,
  order-preserving form that numpy compares in Spark SQL's order (strings by
  their UTF-8 bytes, wide decimals digit for digit), and a query value's
  nearest forms (``KeyOrder.query``). An index that must never lose a key (an
  exact index, a zone map's bounds, a Bloom filter's hashes) compares in these
  forms.
- **Key mapping.** :func:`map_key`, :func:`map_bound` and :func:`map_keys_arrow`
  map values to ``int64`` in the same order, one value at a time or whole
  Arrow arrays; lossy for strings and wide decimals (a prefix, a rounding),
  so what they map answers "may hold", never "does not hold", on its own.
- **Distinct values** of integer arrays: :func:`unique_ints`, as
  ``np.unique`` gives them, faster on the arrays a build sees.
- **Locations in a build's shuffles.** A location's name is a string; a
  Spark build carries known locations as 64-bit codes
  (:class:`LocationCodes`, :func:`code_column`, :data:`CODE_COLUMN`) or
  small ids (:func:`with_location_ids`, :func:`location_names`), so that
  shuffles move integers rather than paths.
- **Renamed locations.** A copy-on-write rewrite moves rows to a new file;
  :func:`renamed_locations` and :func:`renamed_rows` move an index's entries
  to the new names (for :class:`~lakesieve.sdk.RenamesLocations`).
"""

from __future__ import annotations

from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.key_order import KeyOrder, QueryForms
from lakesieve.keys.location_codes import CODE_COLUMN, LocationCodes, code_column
from lakesieve.keys.location_ids import location_names, with_location_ids
from lakesieve.keys.location_renames import renamed_locations, renamed_rows
from lakesieve.keys.mapping import (
    INT64_MAX,
    INT64_MIN,
    KeyKind,
    map_bound,
    map_key,
    parse_key_type,
)
from lakesieve.keys.mapping import supported as key_type_supported
from lakesieve.keys.unique import unique_ints

__all__ = [
    "CODE_COLUMN",
    "INT64_MAX",
    "INT64_MIN",
    "KeyKind",
    "KeyOrder",
    "LocationCodes",
    "QueryForms",
    "code_column",
    "key_type_supported",
    "location_names",
    "map_bound",
    "map_key",
    "map_keys_arrow",
    "parse_key_type",
    "renamed_locations",
    "renamed_rows",
    "unique_ints",
    "with_location_ids",
]
