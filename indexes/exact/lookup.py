"""One key-range partition of an exact index, answering key queries (driver-side, numpy only).

A loaded partition (:func:`~lakesieve.indexes.exact.partitioned.partition_index`
decodes and checks its file) holds its pairs in CSR form: the distinct
non-null keys, sorted in the column's order and kept whole in their own type
(strings with every byte, decimals with every digit), each with the offset
of its first entry; the ``(location id, rows)`` entries, sorted by location
id within a key; and the rows with a null key per location.

Points and range bounds become comparison forms (:class:`~lakesieve.sdk.keys.KeyOrder`) and are
binary-searched in the sorted distinct keys (``numpy.searchsorted``); the
entries of the keys found give the locations. Every answer is exactly the set
of locations holding a matching row. A query value that is not a value of
the column (``1.5`` on an integer column) is widened to its neighbouring
column values (:class:`~lakesieve.sdk.keys.QueryForms`),
which may add locations: a superset.

Decoding checks key order, ids and counts before use, so a corrupt or
hostile file raises (the framework then falls back to a full scan) instead
of answering wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.sdk import KeyQuery
from lakesieve.sdk.keys import KeyOrder, unique_ints


class ExactFormatError(ValueError):
    """A stored exact index does not decode or is inconsistent."""


@dataclass
class ExactIndex:
    """The pairs of one loaded partition of an exact index.

    Attributes:
        order: comparison forms of the key type.
        locations: location names by id (object array).
        keys: the distinct keys, sorted, in the column's Arrow type.
        forms: comparison forms of ``keys`` (strictly increasing).
        first_entry: first entry per key plus a final sentinel (int64, CSR offsets).
        entry_loc: location id per entry (int32).
        entry_count: rows per entry (int64).
        null_loc: location ids holding null keys (int32).
        null_count: rows with a null key per such location (int64).
    """

    order: KeyOrder
    locations: np.ndarray
    keys: pa.Array
    forms: np.ndarray
    first_entry: np.ndarray
    entry_loc: np.ndarray
    entry_count: np.ndarray
    null_loc: np.ndarray
    null_count: np.ndarray

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


# ---------------------------------------------------------------------------
# checking
# ---------------------------------------------------------------------------


def check(cond: bool, what: str) -> None:
    """Raise :class:`ExactFormatError` saying ``what`` is wrong unless ``cond`` holds."""
    if not cond:
        raise ExactFormatError(f"exact index is inconsistent: {what}")
