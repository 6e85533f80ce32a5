"""Loading a stored exact index and answering key queries (driver-side, numpy only).

Points and range bounds become comparison forms (:mod:`lakesieve.keys.key_order`) and are
binary-searched in the sorted distinct keys (``numpy.searchsorted``); the
entries of the keys found give the locations. Every answer is exactly the set
of locations holding a matching row. A query value that is not a value of
the column (``1.5`` on an integer column) is widened to its neighbouring
column values (:class:`~lakesieve.keys.key_order.QueryForms`),
which may add locations: a superset.

Loading checks offsets, ids and key order before use, so a corrupt or
hostile file raises (the framework then falls back to a full scan) instead
of answering wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.files.ipc_files import stored_size
from lakesieve.indexes.exact.params import INDEX_TYPE
from lakesieve.indexes.exact.storage import ENTRIES_SCHEMA, FORMAT_VERSION, LOCATIONS_SCHEMA
from lakesieve.keys.key_order import KeyOrder
from lakesieve.keys.unique import unique_ints
from lakesieve.model import BuiltIndex, KeyQuery, LookupResult


class ExactFormatError(ValueError):
    """A stored exact index does not decode or is inconsistent."""


@dataclass
class ExactIndex:
    """A loaded exact index.

    Attributes:
        order: comparison forms of the key type.
        params: build parameters.
        locations: location names by id (object array).
        keys: the distinct keys, sorted, in the column's Arrow type.
        forms: comparison forms of ``keys`` (strictly increasing).
        first_entry: first entry per key plus a final sentinel (int64, CSR offsets).
        entry_loc: location id per entry (int32).
        entry_count: rows per entry (int64).
        null_loc: location ids holding null keys (int32).
        null_count: rows with a null key per such location (int64).
        size_bytes: bytes of the stored Arrow IPC files.
        meta: the stored meta dict.
    """

    order: KeyOrder
    params: dict[str, Any]
    locations: np.ndarray
    keys: pa.Array
    forms: np.ndarray
    first_entry: np.ndarray
    entry_loc: np.ndarray
    entry_count: np.ndarray
    null_loc: np.ndarray
    null_count: np.ndarray
    size_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key_type(self) -> str:
        """Spark type string of the indexed column."""
        return self.order.key_type

    # --------------------------------------------------------------- queries

    def _names(self, loc_ids: np.ndarray) -> frozenset[str]:
        return frozenset(self.locations[unique_ints(loc_ids)].tolist())

    def _search(self, form: Any, side: str) -> int:
        probe = np.array([form], dtype=self.forms.dtype)
        return int(np.searchsorted(self.forms, probe, side=side)[0])  # type: ignore[call-overload]

    def points(self, forms: list[Any]) -> frozenset[str]:
        """Locations holding any of the keys with comparison forms ``forms``."""
        if not forms or len(self.forms) == 0:
            return frozenset()
        wanted = self.order.sorted_unique(forms)
        at = np.searchsorted(self.forms, wanted, side="left")
        inside = at < len(self.forms)
        at = at[inside]
        found = at[np.asarray(self.forms[at] == wanted[inside], dtype=bool)]
        if len(found) == 0:
            return frozenset()
        starts, ends = self.first_entry[found], self.first_entry[found + 1]
        lengths = ends - starts
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        rows = np.arange(int(lengths.sum()), dtype=np.int64) + offsets
        return self._names(self.entry_loc[rows])

    def key_range(self, query: KeyQuery) -> frozenset[str]:
        """Locations holding a key inside the range of ``query``."""
        first, stop = 0, len(self.forms)
        if query.low is not None:
            low = self.order.query(query.low)
            strict = low.lower_bound_strict(query.low_inclusive)
            first = self._search(low.lower_bound(), "right" if strict else "left")
        if query.high is not None:
            high = self.order.query(query.high)
            strict = high.upper_bound_strict(query.high_inclusive)
            stop = self._search(high.upper_bound(), "left" if strict else "right")
        if stop <= first:
            return frozenset()
        a, b = int(self.first_entry[first]), int(self.first_entry[stop])
        present = np.bincount(self.entry_loc[a:b], minlength=len(self.locations)) > 0
        return frozenset(self.locations[present].tolist())

    def null_locations(self) -> frozenset[str]:
        """Locations holding rows with a null key."""
        return frozenset(self.locations[self.null_loc].tolist())

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer a key query with exactly the matching locations (a superset, see module docs)."""
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
            return LookupResult.all(f"exact index cannot compare the query's values: {exc}")
        return LookupResult.all(f"exact index does not answer {query.kind!r} queries")

    def pairs(self) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """Every ``(key, location, count)`` row of the index (null keys last), as arrays."""
        per_key = np.diff(self.first_entry)
        keys = self.keys.take(pa.array(np.repeat(np.arange(len(per_key)), per_key), pa.int64()))
        keys = pa.concat_arrays([keys, pa.nulls(len(self.null_loc), self.keys.type)])
        ids = np.concatenate([self.entry_loc, self.null_loc]).astype(np.int32)
        names = pa.array(self.locations.tolist(), pa.string())
        locations = pa.DictionaryArray.from_arrays(pa.array(ids, pa.int32()), names)
        counts = np.concatenate([self.entry_count, self.null_count]).astype(np.int64)
        return keys, locations.dictionary_decode(), counts

    # ------------------------------------------------------------- describe

    def describe(self) -> dict[str, Any]:
        """Size, entry counts and parameters."""
        return {
            "index_type": INDEX_TYPE,
            "key_type": self.key_type,
            "size_bytes": self.size_bytes,
            "distinct_keys": len(self.forms),
            "entries": len(self.entry_loc),
            "locations": len(self.locations),
            "null_locations": len(self.null_loc),
            "rows": int(self.entry_count.sum() + self.null_count.sum()),
            "null_rows": int(self.null_count.sum()),
            "params": dict(self.params),
        }


# ---------------------------------------------------------------------------
# loading and checking
# ---------------------------------------------------------------------------


def check(cond: bool, what: str) -> None:
    """Raise :class:`ExactFormatError` saying ``what`` is wrong unless ``cond`` holds."""
    if not cond:
        raise ExactFormatError(f"exact index is inconsistent: {what}")


def _table(built: BuiltIndex, name: str) -> pa.Table:
    table = built.files.get(name)
    if not isinstance(table, pa.Table):
        raise ExactFormatError(f"exact index file {name!r} is missing")
    return table


def _typed(table: pa.Table, name: str, schema: pa.Schema) -> pa.Table:
    try:
        return table.select(schema.names).cast(schema)
    except (KeyError, pa.ArrowException) as exc:
        raise ExactFormatError(f"exact index file {name!r} has the wrong columns: {exc}") from exc


def _column(table: pa.Table, name: str, dtype: Any) -> np.ndarray:
    col = table.column(name)
    check(col.null_count == 0, f"column {name!r} has nulls")
    return np.asarray(col.combine_chunks() if col.num_chunks != 1 else col.chunk(0), dtype=dtype)


def load_format1(built: BuiltIndex) -> ExactIndex:
    """Decode and check a stored exact index of format 1 (every pair in four driver files).

    Raises:
        ExactFormatError: a file is missing or malformed, keys are out of
            order, or offsets and ids do not fit together.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    check(meta.get("format_version") == FORMAT_VERSION, f"format {meta.get('format_version')!r}")
    key_type = meta.get("key_type")
    check(isinstance(key_type, str), "no key type")
    order = KeyOrder.of(str(key_type), INDEX_TYPE)
    params = meta.get("params") or {}
    check(isinstance(params, dict), "params is not a dict")

    loc_t = _typed(_table(built, "locations"), "locations", LOCATIONS_SCHEMA)
    keys_t = _table(built, "keys")
    ent_t = _typed(_table(built, "entries"), "entries", ENTRIES_SCHEMA)
    nul_t = _typed(_table(built, "nulls"), "nulls", ENTRIES_SCHEMA)
    check(set(keys_t.column_names) >= {"key", "first_entry"}, "keys table lacks its columns")

    loc_col = loc_t.column("location")
    check(loc_col.null_count == 0, "null location")
    locations = np.array(loc_col.to_pylist(), dtype=object)
    n_loc = len(locations)
    key_col = keys_t.column("key")
    key_col = key_col.combine_chunks() if key_col.num_chunks != 1 else key_col.chunk(0)
    check(key_col.null_count == 0, "a null key in the keys table")
    try:
        forms = order.array(key_col)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        raise ExactFormatError(f"exact index keys do not fit type {key_type!r}: {exc}") from exc
    check(KeyOrder.strictly_increasing(forms), "keys are not sorted and distinct")
    check(pa.types.is_integer(keys_t.schema.field("first_entry").type), "first_entry type")
    first = _column(keys_t, "first_entry", np.int64)
    entry_loc = _column(ent_t, "location_id", np.int32)
    entry_count = _column(ent_t, "count", np.int64)
    null_loc = _column(nul_t, "location_id", np.int32)
    null_count = _column(nul_t, "count", np.int64)
    n_entries = len(entry_loc)
    check(len(first) == 0 or int(first[0]) == 0, "keys do not start at entry 0")
    check(bool(np.all(np.diff(first) > 0)), "a key has no entries or offsets decrease")
    check(len(first) == 0 or int(first[-1]) < n_entries, "key entries lie outside the entries")
    check(len(first) > 0 or n_entries == 0, "entries without keys")
    check(
        bool(np.all((entry_loc >= 0) & (entry_loc < n_loc))), "an entry names an unknown location"
    )
    check(
        bool(np.all((null_loc >= 0) & (null_loc < n_loc))), "a null entry names an unknown location"
    )
    check(bool(np.all(entry_count > 0)) and bool(np.all(null_count > 0)), "a count is not positive")
    return ExactIndex(
        order=order,
        params=dict(params),
        locations=locations,
        keys=key_col,
        forms=forms,
        first_entry=np.append(first, n_entries).astype(np.int64),
        entry_loc=entry_loc,
        entry_count=entry_count,
        null_loc=null_loc,
        null_count=null_count,
        size_bytes=stored_size(built.files),
        meta=meta,
    )
