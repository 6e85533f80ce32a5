"""Loading a stored Sieve index and answering key queries (driver-side, numpy only).

A point ``k`` (mapped by :func:`lakesieve.keys.map_key`) is answered by
binary search: the segments that may contain it are those from the first
whose running maximum of ``max_key`` reaches ``k`` to the last whose
``min_key`` is ``<= k`` (one or two in practice; segments may overlap). In
each, block ``(k - min_key) // width`` gives the locations. Many points are
answered at once, vectorised. A range ``[lo, hi]`` maps its bounds the same
way and collects, in every segment it meets, the consecutive blocks from
``lo``'s to ``hi``'s. Exclusive bounds are tightened by one only when the
bound maps exactly (:func:`lakesieve.keys.map_bound`); otherwise they are
treated as inclusive on the mapped key, which keeps the answer a superset.

Loading checks every offset and id before use, so a corrupt or hostile file
raises (the framework then falls back to a full scan) instead of answering
wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.errors import IndexCorruptError
from lakesieve.indexes.sieve.storage import FILE_SCHEMAS, FORMAT_VERSION, expand_ranges
from lakesieve.ipc_files import ipc_size
from lakesieve.keys import INT64_MAX, INT64_MIN, map_bound, map_key, parse_key_type
from lakesieve.model import BuiltIndex, KeyQuery, LookupResult

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

    def __post_init__(self) -> None:
        self._reach = (
            np.maximum.accumulate(self.seg_max) if len(self.seg_max) else np.zeros(0, np.int64)
        )

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
        return frozenset(self.locations[self.null_loc].tolist())

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer a key query with a superset of the matching locations."""
        try:
            if query.kind == "is_null":
                return LookupResult(self.null_locations())
            if query.kind == "points":
                values = [v for v in query.values if v is not None]
                keys = np.array([map_key(v, self.key_type) for v in values], dtype=np.int64)
                return LookupResult(self.points(keys))
            if query.kind == "range":
                return LookupResult(self.key_range(*self._bounds(query)))
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


# ---------------------------------------------------------------------------
# loading and checking
# ---------------------------------------------------------------------------


def _table(built: BuiltIndex, name: str) -> pa.Table:
    table = built.files.get(name)
    if not isinstance(table, pa.Table):
        raise SieveFormatError(f"sieve index file {name!r} is missing")
    want = FILE_SCHEMAS[name]
    if name == "locations" and "rows" not in table.column_names:
        want = pa.schema([want.field("location")])  # written before per-location rows existed
    try:
        return table.select(want.names).cast(want)
    except (KeyError, pa.ArrowException) as exc:
        raise SieveFormatError(f"sieve index file {name!r} has the wrong columns: {exc}") from exc


def _col(table: pa.Table, name: str, dtype: Any) -> np.ndarray:
    column = table.column(name)
    if column.null_count:
        raise SieveFormatError(f"column {name!r} has nulls")
    return np.asarray(
        column.combine_chunks() if column.num_chunks != 1 else column.chunk(0), dtype=dtype
    )


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise SieveFormatError(f"sieve index is inconsistent: {what}")


def load_index(built: BuiltIndex) -> SieveIndex:
    """Decode and check a stored index.

    Raises:
        SieveFormatError: a file is missing or malformed, or offsets and ids
            do not fit together.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    _check(
        meta.get("format_version") == FORMAT_VERSION,
        f"format version {meta.get('format_version')!r}",
    )
    key_type = meta.get("key_type")
    _check(isinstance(key_type, str), "no key type")
    assert isinstance(key_type, str)
    parse_key_type(key_type)
    params = meta.get("params") or {}
    _check(isinstance(params, dict), "params is not a dict")

    loc_t = _table(built, "locations")
    dir_t = _table(built, "directory")
    blk_t = _table(built, "blocks")
    ent_t = _table(built, "entries")
    nul_t = _table(built, "nulls")

    loc_col = loc_t.column("location")
    _check(loc_col.null_count == 0, "null location")
    locations = np.array(loc_col.to_pylist(), dtype=object)
    n_loc = len(locations)

    seg_min = _col(dir_t, "min_key", np.int64)
    seg_max = _col(dir_t, "max_key", np.int64)
    seg_width = _col(dir_t, "width", np.uint64)
    seg_first = _col(dir_t, "first_block", np.int64)
    first_entry = _col(blk_t, "first_entry", np.int64)
    entry_loc = _col(ent_t, "location_id", np.int32)
    entry_count = _col(ent_t, "count", np.int64)
    null_loc = _col(nul_t, "location_id", np.int32)
    null_count = _col(nul_t, "count", np.int64)
    n_blocks, n_entries = len(first_entry), len(entry_loc)
    if "rows" in loc_t.column_names:
        location_rows = _col(loc_t, "rows", np.int64)
        _check(bool(np.all(location_rows >= 0)), "a location has a negative row count")
    else:
        location_rows = None

    _check(bool(np.all(seg_min <= seg_max)), "a segment's min key exceeds its max key")
    span = seg_max.view(_U64) - seg_min.view(_U64)
    blocks = np.where(seg_width == 0, _U64(0), span // np.maximum(seg_width, _U64(1)))
    _check(bool(np.all(blocks < _U64(n_blocks + 1))), "a segment has more blocks than stored")
    seg_blocks = blocks.astype(np.int64) + 1
    _check(
        bool(np.all((seg_first >= 0) & (seg_first + seg_blocks <= n_blocks))),
        "a segment's blocks lie outside the blocks table",
    )
    _check(n_blocks == 0 or int(first_entry[0]) == 0, "blocks do not start at entry 0")
    _check(bool(np.all(np.diff(first_entry) >= 0)), "block entry offsets decrease")
    _check(
        n_blocks == 0 or int(first_entry[-1]) <= n_entries, "block entries lie outside the entries"
    )
    _check(
        bool(np.all((entry_loc >= 0) & (entry_loc < n_loc))), "an entry names an unknown location"
    )
    _check(
        bool(np.all((null_loc >= 0) & (null_loc < n_loc))), "a null entry names an unknown location"
    )

    if location_rows is None:
        location_rows = np.zeros(n_loc, np.int64)
        np.add.at(location_rows, entry_loc.astype(np.int64), entry_count)
        np.add.at(location_rows, null_loc.astype(np.int64), null_count)

    order = np.lexsort((seg_max, seg_min))
    if not np.array_equal(order, np.arange(len(order))):
        seg_min, seg_max, seg_width = seg_min[order], seg_max[order], seg_width[order]
        seg_first, seg_blocks = seg_first[order], seg_blocks[order]
    size = sum(ipc_size(t) for t in built.files.values() if isinstance(t, pa.Table))
    return SieveIndex(
        key_type=key_type,
        params=dict(params),
        locations=locations,
        seg_min=seg_min,
        seg_max=seg_max,
        seg_width=seg_width,
        seg_first_block=seg_first,
        seg_blocks=seg_blocks,
        block_first_entry=np.append(first_entry, n_entries).astype(np.int64),
        entry_loc=entry_loc,
        entry_count=entry_count,
        null_loc=null_loc,
        null_count=null_count,
        location_rows=location_rows,
        size_bytes=int(size),
        meta=meta,
    )
