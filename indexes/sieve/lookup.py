"""Loading a stored Sieve index and answering key queries (driver-side, numpy only).

A point ``k`` (mapped by :func:`lakesieve.sdk.keys.map_key`) is answered by
binary search: the segments that may contain it are those from the first
whose running maximum of ``max_key`` reaches ``k`` to the last whose
``min_key`` is ``<= k`` (one or two in practice; segments may overlap). In
each, block ``(k - min_key) // width`` gives the locations. Many points are
answered at once, vectorised. A range ``[lo, hi]`` maps its bounds the same
way and collects, in every segment it meets, the consecutive blocks from
``lo``'s to ``hi``'s. Exclusive bounds are tightened by one only when the
bound maps exactly (:func:`lakesieve.sdk.keys.map_bound`); otherwise they are
treated as inclusive on the mapped key, which keeps the answer a superset.

A single lookup of a few keys or one range takes the warm path
(``warm.py``): the same answer from Python copies of the directory and one
bit mask of locations per block. Loading (``loading.py``) checks every
offset and id before use, so a corrupt or hostile file raises (the framework
then falls back to a full scan) instead of answering wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lakesieve.indexes.sieve.storage import expand_ranges
from lakesieve.indexes.sieve.warm import MAX_ENTRIES, WarmTables
from lakesieve.sdk import IndexCorruptError, KeyQuery, LookupResult
from lakesieve.sdk.keys import INT64_MAX, INT64_MIN, map_bound, map_key

_U64 = np.uint64


class SieveFormatError(IndexCorruptError, ValueError):
    """A stored Sieve index does not decode or is inconsistent."""


@dataclass
class SieveIndex:
    """A loaded Sieve index.

    Attributes:
        key_type: Spark type string of the indexed column.
        params: build parameters.
        locations: location names by id.
        seg_min: segment lower keys, sorted (int64).
        seg_max: segment upper keys (int64).
        seg_width: block widths (uint64; 0 = single block).
        seg_first_block: first block per segment (int64).
        seg_blocks: blocks per segment (int64).
        block_first_entry: first entry per block, plus a final sentinel (int64).
        entry_loc: location id per entry (int32).
        entry_count: rows per entry (int64).
        null_loc: location ids holding null keys (int32).
        null_count: rows with a null key per such location (int64).
        location_rows: rows per location id, null keys included (int64).
        size_bytes: bytes of the stored Arrow IPC files.
        meta: the stored meta dict.
    """

    key_type: str
    params: dict[str, Any]
    locations: np.ndarray
    seg_min: np.ndarray
    seg_max: np.ndarray
    seg_width: np.ndarray
    seg_first_block: np.ndarray
    seg_blocks: np.ndarray
    block_first_entry: np.ndarray
    entry_loc: np.ndarray
    entry_count: np.ndarray
    null_loc: np.ndarray
    null_count: np.ndarray
    location_rows: np.ndarray
    size_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)
    _reach: np.ndarray = field(init=False, repr=False)
    _warm: WarmTables | None = field(init=False, repr=False, default=None)
    _nulls: frozenset[str] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._reach = (
            np.maximum.accumulate(self.seg_max) if len(self.seg_max) else np.zeros(0, np.int64)
        )

    def warm(self) -> WarmTables | None:
        """The warm-path tables (built on first use), or ``None`` for a very large index."""
        if self._warm is None and len(self.entry_loc) <= MAX_ENTRIES:
            self._warm = WarmTables(
                self.seg_min,
                self.seg_max,
                self._reach,
                self.seg_width,
                self.seg_first_block,
                self.seg_blocks,
                self.block_first_entry,
                self.entry_loc,
                self.locations.tolist(),
            )
        return self._warm

    # ----------------------------------------------------------------- blocks

    def _slot(self, seg: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Block offset inside segment ``seg`` of keys known to lie in it."""
        width = self.seg_width[seg]
        diff = keys.view(_U64) - self.seg_min[seg].view(_U64)
        return np.where(width == 0, _U64(0), diff // np.maximum(width, _U64(1))).astype(np.int64)

    def _locations_of_blocks(self, first: np.ndarray, last: np.ndarray) -> frozenset[str]:
        """Locations in the entries of blocks ``first[i]..last[i]`` (inclusive)."""
        starts = self.block_first_entry[first]
        ends = self.block_first_entry[last + 1]
        idx = expand_ranges(starts, ends - starts)
        ids = np.unique(self.entry_loc[idx])
        return frozenset(self.locations[ids].tolist())

    # ---------------------------------------------------------------- queries

    def points(self, keys: np.ndarray) -> frozenset[str]:
        """Locations that may hold any of the mapped ``keys``."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(keys) == 0 or len(self.seg_min) == 0:
            return frozenset()
        lo = np.searchsorted(self._reach, keys, side="left")
        hi = np.searchsorted(self.seg_min, keys, side="right")
        n = np.maximum(hi - lo, 0)
        seg = expand_ranges(lo, n)
        k = np.repeat(keys, n)
        inside = (self.seg_min[seg] <= k) & (k <= self.seg_max[seg])
        seg, k = seg[inside], k[inside]
        block = self.seg_first_block[seg] + self._slot(seg, k)
        return self._locations_of_blocks(block, block)

    def key_range(self, lo: int, hi: int) -> frozenset[str]:
        """Locations that may hold a mapped key in ``[lo, hi]``."""
        if lo > hi or len(self.seg_min) == 0:
            return frozenset()
        first = int(np.searchsorted(self._reach, lo, side="left"))
        stop = int(np.searchsorted(self.seg_min, hi, side="right"))
        if stop <= first:
            return frozenset()
        seg = np.arange(first, stop)
        seg = seg[self.seg_max[seg] >= lo]
        a = np.maximum(self.seg_min[seg], np.int64(lo))
        b = np.minimum(self.seg_max[seg], np.int64(hi))
        base = self.seg_first_block[seg]
        return self._locations_of_blocks(base + self._slot(seg, a), base + self._slot(seg, b))

    def null_locations(self) -> frozenset[str]:
        """Locations holding rows with a null key."""
        if self._nulls is None:
            self._nulls = frozenset(self.locations[self.null_loc].tolist())
        return self._nulls

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer a key query with a superset of the matching locations.

        A few keys or one range are answered by the warm tables (plain Python,
        see ``warm.py``); many keys at once by the vectorised numpy path. Both
        give the same answer.
        """
        try:
            kind = query.kind
            if kind == "points":
                key_type = self.key_type
                keys = [map_key(v, key_type) for v in query.values if v is not None]
                warm = self.warm() if len(keys) <= 64 else None
                if warm is None:
                    return LookupResult(self.points(np.array(keys, dtype=np.int64)))
                mask = 0
                for k in keys:
                    mask |= warm.point_mask(k)
                return LookupResult(warm.names_of(mask))
            if kind == "range":
                lo, hi = self._bounds(query)
                warm = self.warm()
                if warm is None:
                    return LookupResult(self.key_range(lo, hi))
                return LookupResult(warm.names_of(warm.range_mask(lo, hi)))
            if kind == "is_null":
                return LookupResult(self.null_locations())
        except (TypeError, ValueError, ArithmeticError) as exc:
            return LookupResult.all(f"sieve cannot map the query's values: {exc}")
        return LookupResult.all(f"sieve does not answer {query.kind!r} queries")

    def lookup_vectorised(self, query: KeyQuery) -> LookupResult:
        """The same answer as :meth:`lookup`, always by the numpy path (no warm tables)."""
        try:
            if query.kind == "points":
                values = [v for v in query.values if v is not None]
                keys = np.array([map_key(v, self.key_type) for v in values], dtype=np.int64)
                return LookupResult(self.points(keys))
            if query.kind == "range":
                return LookupResult(self.key_range(*self._bounds(query)))
            if query.kind == "is_null":
                return LookupResult(self.null_locations())
        except (TypeError, ValueError, ArithmeticError) as exc:
            return LookupResult.all(f"sieve cannot map the query's values: {exc}")
        return LookupResult.all(f"sieve does not answer {query.kind!r} queries")

    def _bounds(self, query: KeyQuery) -> tuple[int, int]:
        lo, hi = INT64_MIN, INT64_MAX
        if query.low is not None:
            lo, exact = map_bound(query.low, self.key_type)
            if exact and not query.low_inclusive:
                if lo == INT64_MAX:
                    return 1, 0  # nothing above the largest key
                lo += 1
        if query.high is not None:
            hi, exact = map_bound(query.high, self.key_type)
            if exact and not query.high_inclusive:
                if hi == INT64_MIN:
                    return 1, 0
                hi -= 1
        return lo, hi

    def describe(self) -> dict[str, Any]:
        """Size, entry counts and parameters."""
        seg_keys = self.meta.get("distinct_keys")
        single = int(np.sum(self.seg_blocks == 1))
        return {
            "index_type": "sieve",
            "key_type": self.key_type,
            "size_bytes": self.size_bytes,
            "segments": len(self.seg_min),
            "single_block_segments": single,
            "blocks": len(self.block_first_entry) - 1,
            "entries": len(self.entry_loc),
            "locations": len(self.locations),
            "null_locations": len(self.null_loc),
            "distinct_keys": seg_keys,
            "rows": self.meta.get("rows"),
            "params": dict(self.params),
        }
