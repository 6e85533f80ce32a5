"""Loading a stored zone map and answering key queries (driver-side, numpy only).

Each location's bounds become comparison forms (:class:`~lakesieve.sdk.keys.KeyOrder`), so every
test below is a vectorised comparison over all locations at once:

- range ``[lo, hi]``: ``max >= lo`` and ``min <= hi`` (strict for exclusive
  bounds; a bound that is not a column value is replaced by its neighbouring
  column values, see :class:`~lakesieve.sdk.keys.QueryForms`);
- points: some point ``p`` with ``min <= p <= max``, found by binary-searching
  the sorted points for each location's ``min`` and ``max``;
- IS NULL: ``null_count > 0``.

A location without non-null keys never matches a range or a point. Bounds
need not be attained (shortened strings, or minimums and maximums kept
across removed rows), only to be bounds, so every answer is a superset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.zonemap.params import INDEX_TYPE
from lakesieve.indexes.zonemap.storage import FORMAT_VERSION, SOURCE_DATA
from lakesieve.sdk import BuiltIndex, KeyQuery, LookupResult
from lakesieve.sdk.index_files import stored_size
from lakesieve.sdk.keys import KeyOrder


class ZoneMapFormatError(ValueError):
    """A stored zone map does not decode or is inconsistent."""


@dataclass
class ZoneMapIndex:
    """A loaded zone map.

    Attributes:
        order: comparison forms of the key type.
        params: build parameters.
        zones: the stored table (sorted by location).
        locations: location names (object array).
        has_keys: whether each location holds a non-null key.
        min_forms: comparison forms of the minimums (filler where no key).
        max_forms: comparison forms of the maximums.
        rows: rows per location.
        null_count: rows with a null key per location.
        size_bytes: bytes of the stored Arrow IPC file.
        meta: the stored meta dict.
    """

    order: KeyOrder
    params: dict[str, Any]
    zones: pa.Table
    locations: np.ndarray
    has_keys: np.ndarray
    min_forms: np.ndarray
    max_forms: np.ndarray
    rows: np.ndarray
    null_count: np.ndarray
    size_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key_type(self) -> str:
        """Spark type string of the indexed column."""
        return self.order.key_type

    def _names(self, mask: np.ndarray) -> frozenset[str]:
        return frozenset(self.locations[mask].tolist())

    def points(self, forms: list[Any]) -> frozenset[str]:
        """Locations whose ``[min, max]`` holds one of the points ``forms``."""
        if not forms:
            return frozenset()
        wanted = self.order.sorted_unique(forms)
        first = np.searchsorted(wanted, self.min_forms, side="left")
        past = np.searchsorted(wanted, self.max_forms, side="right")
        return self._names(self.has_keys & (past > first))

    def _scalar(self, form: Any) -> np.ndarray:
        """A one-element array of ``form`` that compares with the bound arrays.

        A bare ``bytes`` scalar would become a numpy ``bytes_``, which drops
        trailing NUL bytes; an object array keeps the value whole.
        """
        return np.array([form], dtype=self.min_forms.dtype)

    def key_range(self, query: KeyQuery) -> frozenset[str]:
        """Locations whose ``[min, max]`` meets the range of ``query``."""
        hit = self.has_keys.copy()
        if query.low is not None:
            low = self.order.query(query.low)
            bound = self._scalar(low.lower_bound())
            if low.lower_bound_strict(query.low_inclusive):
                hit &= np.asarray(self.max_forms > bound, dtype=bool)
            else:
                hit &= np.asarray(self.max_forms >= bound, dtype=bool)
        if query.high is not None:
            high = self.order.query(query.high)
            bound = self._scalar(high.upper_bound())
            if high.upper_bound_strict(query.high_inclusive):
                hit &= np.asarray(self.min_forms < bound, dtype=bool)
            else:
                hit &= np.asarray(self.min_forms <= bound, dtype=bool)
        return self._names(hit)

    def null_locations(self) -> frozenset[str]:
        """Locations holding rows with a null key."""
        return self._names(self.null_count > 0)

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer a key query with a superset of the matching locations."""
        try:
            if query.kind == "is_null":
                return LookupResult(self.null_locations())
            if query.kind == "points":
                forms = [
                    f for v in query.values if v is not None for f in self.order.query(v).points()
                ]
                return LookupResult(self.points(forms))
            if query.kind == "range":
                return LookupResult(self.key_range(query))
        except (TypeError, ValueError, ArithmeticError) as exc:
            return LookupResult.all(f"zone map cannot compare the query's values: {exc}")
        return LookupResult.all(f"zone map does not answer {query.kind!r} queries")

    def describe(self) -> dict[str, Any]:
        """Size, counts, parameters and where the bounds came from."""
        return {
            "index_type": INDEX_TYPE,
            "key_type": self.key_type,
            "source": self.meta.get("source", SOURCE_DATA),
            "size_bytes": self.size_bytes,
            "entries": len(self.locations),
            "locations": len(self.locations),
            "locations_with_keys": int(self.has_keys.sum()),
            "null_locations": int((self.null_count > 0).sum()),
            "rows": int(self.rows.sum()),
            "null_rows": int(self.null_count.sum()),
            "shortened_bounds": int(self.meta.get("shortened_bounds", 0)),
            "params": dict(self.params),
        }


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise ZoneMapFormatError(f"zone map is inconsistent: {what}")


def _ints(table: pa.Table, name: str) -> np.ndarray:
    col = table.column(name)
    _check(pa.types.is_integer(col.type), f"column {name!r} is not an integer column")
    _check(col.null_count == 0, f"column {name!r} has nulls")
    return np.asarray(col.combine_chunks(), dtype=np.int64)


def load_index(built: BuiltIndex) -> ZoneMapIndex:
    """Decode and check a stored zone map.

    Raises:
        ZoneMapFormatError: the file is missing or malformed, or a location's
            bounds or counts do not fit together.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    _check(meta.get("format_version") == FORMAT_VERSION, f"format {meta.get('format_version')!r}")
    key_type = meta.get("key_type")
    _check(isinstance(key_type, str), "no key type")
    order = KeyOrder.of(str(key_type), INDEX_TYPE)
    params = meta.get("params") or {}
    _check(isinstance(params, dict), "params is not a dict")
    zones = built.files.get("zones")
    if not isinstance(zones, pa.Table):
        raise ZoneMapFormatError("zone map file 'zones' is missing")
    names = {"location", "min", "max", "rows", "null_count"}
    _check(names <= set(zones.column_names), f"columns {sorted(names)} expected")
    loc = zones.column("location")
    _check(pa.types.is_string(loc.type) and loc.null_count == 0, "bad location column")
    locations = np.array(loc.to_pylist(), dtype=object)
    _check(len(set(locations.tolist())) == len(locations), "a location appears twice")
    rows, nulls = _ints(zones, "rows"), _ints(zones, "null_count")
    mins, maxs = zones.column("min").combine_chunks(), zones.column("max").combine_chunks()
    has_keys = np.asarray(mins.is_valid(), dtype=bool)
    _check(
        bool(np.all(has_keys == np.asarray(maxs.is_valid(), dtype=bool))), "min/max nulls differ"
    )
    _check(bool(np.all((nulls >= 0) & (nulls <= rows))), "null counts exceed rows")
    _check(bool(np.all(has_keys == (rows > nulls))), "bounds disagree with the counts")
    try:
        min_forms, max_forms = order.array(mins), order.array(maxs)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        raise ZoneMapFormatError(f"zone bounds do not fit type {key_type!r}: {exc}") from exc
    _check(
        bool(np.all(np.asarray(min_forms[has_keys] <= max_forms[has_keys], dtype=bool))),
        "a minimum exceeds its maximum",
    )
    return ZoneMapIndex(
        order=order,
        params=dict(params),
        zones=zones,
        locations=locations,
        has_keys=has_keys,
        min_forms=min_forms,
        max_forms=max_forms,
        rows=rows,
        null_count=nulls,
        size_bytes=stored_size(built.files),
        meta=meta,
    )
