"""The segmentation walk: sorted (key, location, count) rows in, segments out.

Pure numpy; Spark calls :func:`walk` once per range partition (see
``build.py``) and tests call it directly. Keys are the int64 keys of
:mod:`lakesieve.sdk.keys`; locations are small integer ids.

Vocabulary
----------
* the **set** of a key: the location ids holding at least one row with it;
* a **run**: a maximal stretch of consecutive distinct keys whose sets are
  identical (the thesis' cumulative function steps exactly between runs);
* a **stable run**: a run of at least ``min_run_keys`` keys;
* a **gap**: the keys between two consecutive stable runs (or between a
  partition edge and its first/last stable run); it is made of short runs;
* a **segment**: ``[min_key, max_key]`` cut into blocks of one fixed width
  ``w``; key ``k`` lies in block ``(k - min_key) // w``. A block stores the
  ``(location id, row count)`` pairs of the keys it covers.

Segmentation rule
-----------------
Walking one partition in key order:

1. Every stable run becomes its own segment with a single block (width
   ``max_key - min_key + 1``) holding the run's set: ideal pruning for one
   entry per location of the run.
2. A gap of fewer than ``min_run_keys`` keys is **bridged** when every key's
   set is covered by the sets of the neighbouring stable runs (``S_prev``,
   ``S_next``; at a partition edge only the existing neighbour counts): the
   previous segment is extended up to the last gap key that needs it, the next
   segment back to the first gap key that needs it (a key needs ``prev`` when
   its set is not inside ``S_next``, and ``next`` when not inside ``S_prev``),
   so the two segments may overlap on a few keys and a lookup there returns
   ``S_prev | S_next``. Each row count goes to the segment whose set holds its
   location (``prev`` first). A key whose rows straddle two runs thus costs
   no entry at all.
3. Any other gap becomes one or more **volatile segments**, cut into equal
   pieces of at most ``max_segment_keys`` keys. Each gets a share ``A`` of
   the index's ``budget_entries`` in proportion to its distinct keys ``n``
   (the budget is split evenly over the Spark partitions, then by keys
   within a partition). The candidate block widths are ``w0 * 2**j``
   (``j = 0, 1, ...``) plus the single block spanning the segment, for
   ``w0`` the smallest width giving at most ``n / min_keys_per_block``
   blocks and, when the budget allows more, also for ``w0`` the smallest
   width giving at most ``min(n, A)`` blocks. For each candidate the
   build computes exactly ``P`` (average number of locations a point lookup
   of an indexed key selects) and ``E`` (location entries). A candidate is
   *admissible* when it has at most ``n / min_keys_per_block`` blocks (the
   size floor: 32 keys per block on average by default) or when its ``E``
   fits in ``A`` (the budget lets small tables and cheap layouts go finer).
   With ``P*`` the average set size (ideal pruning), the false-positive
   rate is ``1 - P*/P``; the widest admissible candidate with rate
   ``<= target_fpr`` wins. When none qualifies, the admissible candidate
   minimising ``log2(P) + size_weight * E / n`` wins: one location entry per
   key must buy ``size_weight`` halvings of the locations a point selects
   (default 6, a 64-fold cut). So a large segment whose keys are scattered
   over a few hundred locations (a hash layout) collapses to one block
   instead of costing about an entry per key, while small files in key
   order keep narrow blocks.

Candidates come in chains of power-of-two multiples of a starting width
(one chain from the floor's block count, one from the budget's); along a
chain the blocks of one width are unions of pairs of blocks of the previous
one, so ``P`` never decreases and ``E`` never increases, and computing all
of them costs one ``np.unique`` per candidate.

The index is therefore small by construction: a segment per stable run (at
least ``min_run_keys`` keys each), volatile segments within the size floor
or the fixed ``budget_entries``, and a size-aware choice of width where
pruning fails.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from lakesieve.indexes.sieve.params import SieveParams
from lakesieve.sdk.keys import unique_ints

_U64 = np.uint64

#: Largest grid (keys or blocks, by locations) the walk
#: counts on a dense table instead of sorting codes; larger grids are still
#: dense up to :data:`_DENSE_PER_ROW` cells per input row.
_DENSE_CELLS = 1 << 22
_DENSE_PER_ROW = 8
_TWO64 = 1 << 64


@dataclass
class SegmentSet:
    """Segments, their blocks and the blocks' entries, as flat arrays.

    Blocks of segment ``i`` are ``seg_blocks[i]`` consecutive blocks starting
    after those of segments ``0..i-1``; the entries of a block likewise.

    Attributes:
        seg_min: smallest key a segment covers (int64).
        seg_max: largest key a segment covers (int64).
        seg_width: block width (uint64); 0 means one block spanning the whole
            segment (only when ``max - min + 1`` overflows 64 bits).
        seg_blocks: number of blocks per segment (int64).
        seg_keys: distinct keys attributed to the segment (int64).
        block_entries: number of entries per block (int64).
        entry_loc: location id per entry (int32).
        entry_count: rows per entry (int64).
    """

    seg_min: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    seg_max: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    seg_width: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    seg_blocks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    seg_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    block_entries: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    entry_loc: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    entry_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def num_segments(self) -> int:
        """Number of segments."""
        return len(self.seg_min)

    def seg_entries(self) -> np.ndarray:
        """Entries per segment (int64)."""
        if self.num_segments == 0:
            return np.zeros(0, np.int64)
        starts = np.cumsum(self.seg_blocks) - self.seg_blocks
        return np.add.reduceat(self.block_entries, starts).astype(np.int64)

    @classmethod
    def concat(cls, parts: Sequence[SegmentSet]) -> SegmentSet:
        """Concatenate segment sets (segments keep their order)."""
        if not parts:
            return cls()
        return cls(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in (
                    "seg_min",
                    "seg_max",
                    "seg_width",
                    "seg_blocks",
                    "seg_keys",
                    "block_entries",
                    "entry_loc",
                    "entry_count",
                )
            )
        )


@dataclass
class KeyGroups:
    """Distinct keys with their sorted location sets and row counts.

    Attributes:
        keys: distinct keys, increasing (int64).
        offsets: entries of key ``i`` are ``offsets[i]:offsets[i + 1]``.
        locs: location id per entry, increasing within a key (int32).
        counts: rows per entry (int64).
    """

    keys: np.ndarray
    offsets: np.ndarray
    locs: np.ndarray
    counts: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """Set size per key."""
        return np.diff(self.offsets)


def _in_pair_order(keys: np.ndarray, locs: np.ndarray) -> bool:
    """Whether (key, location id) rows are sorted by key, then location id."""
    if len(keys) < 2:
        return True
    return bool(
        np.all((keys[1:] > keys[:-1]) | ((keys[1:] == keys[:-1]) & (locs[1:] >= locs[:-1])))
    )


def sort_pairs(
    keys: np.ndarray, locs: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, location id, rows) triples sorted by key, then location id.

    Nothing to do for rows already in order. When ``(key span) * locations``
    fits 62 bits, one argsort of ``(key - least key) * locations + location
    id`` (rows of one pair may come in any order; the walk adds their counts).
    Otherwise an argsort of the keys, then, only when some key's locations
    are still out of order, a stable sort of ``key rank * locations +
    location id`` (nearly sorted by then): cheaper than a two-column lexsort.
    """
    if _in_pair_order(keys, locs):
        return keys, locs, counts
    n_locations = int(locs.max()) + 1
    kmin = int(keys.min())
    if (int(keys.max()) - kmin + 1) * n_locations < 2**62:
        # one sort of (key - least key) * locations + location id
        packed = (keys.view(_U64) - _U64(kmin % _TWO64)).astype(np.int64) * n_locations + locs
        order = np.argsort(packed)
        return keys[order], locs[order], counts[order]
    order = np.argsort(keys, kind="stable")
    keys, locs, counts = keys[order], locs[order], counts[order]
    if _in_pair_order(keys, locs):
        return keys, locs, counts
    if len(keys) * n_locations < 2**62:
        rank = np.zeros(len(keys), np.int64)
        np.cumsum(keys[1:] != keys[:-1], out=rank[1:])
        order = np.argsort(rank * n_locations + locs, kind="stable")
    else:  # pragma: no cover - 2**62 / locations pairs in one walk
        order = np.lexsort((locs, keys))
    return keys[order], locs[order], counts[order]


def _dense_pairs(
    keys: np.ndarray, locs: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The distinct (key, location) pairs in order with their rows, by a dense table; no sort.

    ``None`` when ``(key span) * locations`` exceeds the dense table's size
    (:data:`_DENSE_CELLS`, or 8 cells per row).
    """
    n_loc = int(locs.max()) + 1
    kmin = int(keys.min())
    cells = (int(keys.max()) - kmin + 1) * n_loc
    if cells > max(_DENSE_CELLS, _DENSE_PER_ROW * len(keys)):
        return None
    packed = (keys.view(_U64) - _U64(kmin % _TWO64)).astype(np.int64) * n_loc + locs
    rows = np.zeros(cells, np.int64)
    np.add.at(rows, packed, counts)
    present = np.zeros(cells, dtype=bool)
    present[packed] = True
    found = np.flatnonzero(present)
    pkeys = ((found // n_loc).astype(_U64) + _U64(kmin % _TWO64)).view(np.int64)
    return pkeys, (found % n_loc).astype(np.int32), rows[found]


def group_keys(keys: np.ndarray, locs: np.ndarray, counts: np.ndarray) -> KeyGroups:
    """Sort rows by (key, location) and merge duplicates.

    Args:
        keys: int64 keys, in any order (mapped keys of distinct column values
            may coincide; they are merged here).
        locs: location id per row.
        counts: rows per row (positive).

    Returns:
        The grouped keys.
    """
    keys = np.asarray(keys, dtype=np.int64)
    locs = np.asarray(locs, dtype=np.int32)
    counts = np.asarray(counts, dtype=np.int64)
    n = len(keys)
    if n == 0:
        return KeyGroups(keys, np.zeros(1, np.int64), locs, counts)
    dense = None if _in_pair_order(keys, locs) else _dense_pairs(keys, locs, counts)
    if dense is not None:
        pkeys, plocs, pcounts = dense
    else:
        keys, locs, counts = sort_pairs(keys, locs, counts)
        new_pair = np.ones(n, dtype=bool)
        new_pair[1:] = (keys[1:] != keys[:-1]) | (locs[1:] != locs[:-1])
        starts = np.flatnonzero(new_pair)
        pkeys, plocs = keys[starts], locs[starts]
        pcounts = np.add.reduceat(counts, starts) if len(starts) < n else counts
    new_key = np.ones(len(pkeys), dtype=bool)
    new_key[1:] = pkeys[1:] != pkeys[:-1]
    kstarts = np.flatnonzero(new_key)
    offsets = np.append(kstarts, len(pkeys)).astype(np.int64)
    return KeyGroups(pkeys[kstarts], offsets, plocs, pcounts.astype(np.int64))


#: Triples a :class:`PairBuffer` holds before it merges them into pairs.
MERGE_ROWS = 2_000_000


class PairBuffer:
    """A partition's (key, location id, rows) triples, merged into pairs as they outgrow a bound.

    Rows handed over uncounted repeat a pair as often as it has rows; merging
    whenever the buffer passes ``bound`` triples (then twice the pairs kept)
    keeps its memory proportional to the partition's distinct pairs plus one
    bound, whatever the skew of its keys.
    """

    def __init__(self, bound: int = MERGE_ROWS) -> None:
        self.bound = bound
        self.held = 0
        self._keys: list[np.ndarray] = []
        self._locs: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []

    def add(self, keys: np.ndarray, locs: np.ndarray, counts: np.ndarray) -> None:
        """Append triples (int64 keys, location ids, positive row counts)."""
        if not len(keys):
            return
        self._keys.append(np.asarray(keys, np.int64))
        self._locs.append(np.asarray(locs, np.int32))
        self._counts.append(np.asarray(counts, np.int64))
        self.held += len(keys)
        if self.held > self.bound:
            self._merge()

    def _merge(self) -> None:
        groups = group_keys(*self.arrays())
        self._keys = [np.repeat(groups.keys, groups.sizes)]
        self._locs, self._counts = [groups.locs], [groups.counts]
        self.held = len(groups.locs)
        self.bound = max(self.bound, 2 * self.held)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every triple held: keys, location ids, row counts."""
        if not self._keys:
            return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64)
        return np.concatenate(self._keys), np.concatenate(self._locs), np.concatenate(self._counts)


def run_starts(groups: KeyGroups) -> np.ndarray:
    """Indices of the keys that start a run (their set differs from the previous key's)."""
    n = len(groups.keys)
    if n == 0:
        return np.zeros(0, np.int64)
    sizes = groups.sizes
    same = np.zeros(n, dtype=bool)
    same[1:] = sizes[1:] == sizes[:-1]
    key_of_entry = np.repeat(np.arange(n), sizes)
    check = same[key_of_entry]  # entries of keys whose size equals the previous key's
    idx = np.flatnonzero(check)
    partner = idx - sizes[key_of_entry[idx]]
    differs = groups.locs[idx] != groups.locs[partner]
    bad = np.bincount(key_of_entry[idx[differs]], minlength=n)
    same &= bad == 0
    same[0] = False
    return np.flatnonzero(~same)


# ---------------------------------------------------------------------------
# segment construction
# ---------------------------------------------------------------------------


def _single_width(span: int) -> int:
    return span + 1 if span + 1 < _TWO64 else 0


@dataclass
class _Stable:
    """A stable-run segment under construction (key indices inclusive)."""

    first: int
    last: int
    locs: np.ndarray
    counts: np.ndarray
    keys: int


class _Collector:
    """Accumulates finished segments in walk order."""

    def __init__(self, groups: KeyGroups) -> None:
        self.g = groups
        self.seg_min: list[int] = []
        self.seg_max: list[int] = []
        self.seg_width: list[int] = []
        self.seg_blocks: list[int] = []
        self.seg_keys: list[int] = []
        self.block_entries: list[np.ndarray] = []
        self.entry_loc: list[np.ndarray] = []
        self.entry_count: list[np.ndarray] = []

    def add(
        self,
        lo: int,
        hi: int,
        width: int,
        n_keys: int,
        block_entries: np.ndarray,
        locs: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        self.seg_min.append(lo)
        self.seg_max.append(hi)
        self.seg_width.append(width)
        self.seg_blocks.append(len(block_entries))
        self.seg_keys.append(n_keys)
        self.block_entries.append(np.asarray(block_entries, np.int64))
        self.entry_loc.append(np.asarray(locs, np.int32))
        self.entry_count.append(np.asarray(counts, np.int64))

    def add_stable(self, seg: _Stable) -> None:
        lo, hi = int(self.g.keys[seg.first]), int(self.g.keys[seg.last])
        keep = seg.counts > 0
        self.add(
            lo,
            hi,
            _single_width(hi - lo),
            seg.keys,
            np.array([int(keep.sum())]),
            seg.locs[keep],
            seg.counts[keep],
        )

    def result(self) -> SegmentSet:
        if not self.seg_min:
            return SegmentSet()
        return SegmentSet(
            np.array(self.seg_min, np.int64),
            np.array(self.seg_max, np.int64),
            np.array(self.seg_width, np.uint64),
            np.array(self.seg_blocks, np.int64),
            np.array(self.seg_keys, np.int64),
            np.concatenate(self.block_entries),
            np.concatenate(self.entry_loc),
            np.concatenate(self.entry_count),
        )


def _stable(groups: KeyGroups, first: int, stop: int) -> _Stable:
    """A stable run's segment: keys ``first..stop-1`` all share one set."""
    e0, e1 = int(groups.offsets[first]), int(groups.offsets[first + 1])
    width = e1 - e0
    locs = groups.locs[e0:e1].copy()
    block = groups.counts[e0 : int(groups.offsets[stop])]
    counts = block.reshape(stop - first, width).sum(axis=0)
    return _Stable(first, stop - 1, locs, counts.astype(np.int64), stop - first)


def _bridge(
    groups: KeyGroups, start: int, stop: int, prev: _Stable | None, nxt: _Stable | None
) -> bool:
    """Try to cover gap keys ``start..stop-1`` by extending ``prev`` and/or ``nxt``.

    Returns whether the gap was bridged (then ``prev``/``nxt`` are updated).
    """
    if prev is None and nxt is None:
        return False
    m = stop - start
    e0, e1 = int(groups.offsets[start]), int(groups.offsets[stop])
    locs, counts = groups.locs[e0:e1], groups.counts[e0:e1]
    key_of_entry = np.repeat(np.arange(m), groups.sizes[start:stop])
    in_prev = np.isin(locs, prev.locs) if prev is not None else np.zeros(len(locs), bool)
    in_next = np.isin(locs, nxt.locs) if nxt is not None else np.zeros(len(locs), bool)
    if not np.all(in_prev | in_next):
        return False
    key_outside_prev = np.bincount(key_of_entry[~in_prev], minlength=m) > 0
    key_outside_next = np.bincount(key_of_entry[~in_next], minlength=m) > 0
    if prev is None:
        if key_outside_next.any():
            return False
        next_start, prev_end = 0, -1
    elif nxt is None:
        if key_outside_prev.any():
            return False
        next_start, prev_end = m, m - 1
    else:
        outside_prev = np.flatnonzero(key_outside_prev)
        next_start = int(outside_prev[0]) if len(outside_prev) else m
        outside_next = np.flatnonzero(key_outside_next)
        prev_end = max(int(outside_next[-1]) if len(outside_next) else -1, next_start - 1)
    to_prev = (key_of_entry <= prev_end) & in_prev
    if prev is not None and prev_end >= 0:
        pos = np.searchsorted(prev.locs, locs[to_prev])
        np.add.at(prev.counts, pos, counts[to_prev])
        prev.last = start + prev_end
        prev.keys += prev_end + 1
    if nxt is not None and next_start < m:
        pos = np.searchsorted(nxt.locs, locs[~to_prev])
        np.add.at(nxt.counts, pos, counts[~to_prev])
        nxt.first = start + next_start
        nxt.keys += m - 1 - prev_end
    return True


def _level_stats(
    slots: np.ndarray, pair_codes: np.ndarray, n_loc: int, n_slots: int
) -> tuple[float, int]:
    """(sum over keys of the key's block set size, number of entries) for one width."""
    keys_per_slot = np.bincount(slots.astype(np.int64), minlength=n_slots)
    locs_per_slot = np.bincount((pair_codes // _U64(n_loc)).astype(np.int64), minlength=n_slots)
    return float(np.dot(keys_per_slot, locs_per_slot)), len(pair_codes)


def _chain(
    diffs: np.ndarray,
    key_of_entry: np.ndarray,
    locs: np.ndarray,
    n_loc: int,
    span: int,
    first_width: int,
) -> list[tuple[int, int, float, int]]:
    """``(width, blocks, point sum, entries)`` for widths ``first_width * 2**j`` up to ``span``."""
    slots = diffs // _U64(first_width)
    if (span // first_width + 1) * n_loc <= max(_DENSE_CELLS, _DENSE_PER_ROW * len(locs)):
        return _chain_dense(slots, key_of_entry, locs, n_loc, span, first_width)
    out: list[tuple[int, int, float, int]] = []
    codes = unique_ints(slots[key_of_entry] * _U64(n_loc) + locs.astype(_U64))
    width = first_width
    while width <= span:
        n_slots = span // width + 1
        psum, entries = _level_stats(slots, codes, n_loc, n_slots)
        out.append((width, n_slots, psum, entries))
        width <<= 1
        slots = slots >> _U64(1)
        codes = unique_ints((codes // _U64(n_loc) >> _U64(1)) * _U64(n_loc) + codes % _U64(n_loc))
    return out


def _halve(table: np.ndarray, combine: str) -> np.ndarray:
    """Rows ``2i`` and ``2i + 1`` of ``table`` combined (``any`` or ``sum``); an odd last row alone."""
    if len(table) % 2:
        table = np.concatenate([table, np.zeros((1, *table.shape[1:]), table.dtype)])
    pairs = table.reshape(len(table) // 2, 2, *table.shape[1:])
    if combine == "any":
        return np.logical_or(pairs[:, 0], pairs[:, 1])
    return np.add(pairs[:, 0], pairs[:, 1])


def _chain_dense(
    slots: np.ndarray,
    key_of_entry: np.ndarray,
    locs: np.ndarray,
    n_loc: int,
    span: int,
    first_width: int,
) -> list[tuple[int, int, float, int]]:
    """:func:`_chain` on a dense (block, location) presence table, halved width by width."""
    out: list[tuple[int, int, float, int]] = []
    n_slots = span // first_width + 1
    slot_of_key = slots.astype(np.intp)
    present = np.zeros((n_slots, n_loc), dtype=bool)
    present[slot_of_key[key_of_entry], locs] = True
    keys_per_slot = np.bincount(slot_of_key, minlength=n_slots).astype(np.int64)
    width = first_width
    while width <= span:
        locs_per_slot = np.count_nonzero(present, axis=1).astype(np.int64)
        psum = float(np.dot(keys_per_slot, locs_per_slot))
        out.append((width, len(present), psum, int(locs_per_slot.sum())))
        width <<= 1
        present = _halve(present, "any")
        keys_per_slot = _halve(keys_per_slot, "sum")
    return out


def choose_width(
    keys: np.ndarray,
    sizes: np.ndarray,
    locs: np.ndarray,
    params: SieveParams,
    budget: float = 0.0,
) -> tuple[int, int]:
    """Choose the block width of a volatile segment (see the module docstring).

    Args:
        keys: the segment's distinct keys, increasing (int64).
        sizes: set size per key.
        locs: location ids of the keys' entries, key by key.
        params: build parameters.
        budget: location entries this segment may spend on blocks finer than
            the ``min_keys_per_block`` floor.

    Returns:
        ``(width, n_blocks)``; width 0 stands for one block spanning the
        segment when that width does not fit 64 bits.
    """
    n = len(keys)
    kmin, kmax = int(keys[0]), int(keys[-1])
    span = kmax - kmin
    single = (_single_width(span), 1)
    if n == 1 or span == 0:
        return single
    floor_slots = max(1, n // params.min_keys_per_block)
    budget_slots = min(n, int(budget))
    diffs = keys.view(_U64) - _U64(kmin % _TWO64)
    key_of_entry = np.repeat(np.arange(n), sizes)
    n_loc = int(locs.max()) + 1
    seg_locs = int(np.count_nonzero(np.bincount(locs)))
    by_width: dict[int, tuple[int, int, float, int]] = {}
    for slots in sorted({floor_slots, budget_slots} - {0, 1}):
        for cand in _chain(diffs, key_of_entry, locs, n_loc, span, span // slots + 1):
            by_width[cand[0]] = cand
    candidates = sorted(by_width.values(), key=lambda c: -c[1])  # fine to coarse
    candidates.append((single[0], 1, float(n * seg_locs), seg_locs))
    admissible = [c for c in candidates if c[1] <= floor_slots or c[3] <= budget]
    bound = float(sizes.sum()) / (1.0 - params.target_fpr) * (1 + 1e-12)
    meeting = [c for c in admissible if c[2] <= bound]
    if meeting:
        best = meeting[-1]
    else:
        costs = [math.log2(c[2] / n) + params.size_weight * c[3] / n for c in admissible]
        best_cost = min(costs)
        best = admissible[max(i for i, c in enumerate(costs) if c <= best_cost * (1 + 1e-12))]
    return best[0], best[1]


def _add_volatile(
    out: _Collector,
    groups: KeyGroups,
    start: int,
    stop: int,
    params: SieveParams,
    budget_per_key: float,
) -> None:
    """Cut keys ``start..stop-1`` into volatile segments and add them."""
    total = stop - start
    pieces = -(-total // params.max_segment_keys)
    bounds = [start + (total * i) // pieces for i in range(pieces + 1)]
    for a, b in itertools.pairwise(bounds):
        keys = groups.keys[a:b]
        e0, e1 = int(groups.offsets[a]), int(groups.offsets[b])
        locs, counts = groups.locs[e0:e1], groups.counts[e0:e1]
        sizes = groups.sizes[a:b]
        width, n_blocks = choose_width(keys, sizes, locs, params, budget_per_key * (b - a))
        kmin = int(keys[0])
        if n_blocks == 1:
            slots = np.zeros(b - a, np.int64)
        else:
            slots = ((keys.view(_U64) - _U64(kmin % _TWO64)) // _U64(width)).astype(np.int64)
        blocks, entry_locs, entry_counts = _block_entries(
            np.repeat(slots, sizes), locs, counts, n_blocks
        )
        block_entries = np.bincount(blocks, minlength=n_blocks)
        out.add(kmin, int(keys[-1]), width, b - a, block_entries, entry_locs, entry_counts)


def _block_entries(
    slot_of_entry: np.ndarray, locs: np.ndarray, counts: np.ndarray, n_blocks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (block, location) pairs in that order, as block and location arrays, and their rows."""
    n_loc = int(locs.max()) + 1
    codes = slot_of_entry.astype(np.int64) * n_loc + locs
    if n_blocks * n_loc <= max(_DENSE_CELLS, _DENSE_PER_ROW * len(locs)):
        rows = np.zeros(n_blocks * n_loc, np.int64)
        np.add.at(rows, codes, counts)
        present = np.zeros(n_blocks * n_loc, dtype=bool)
        present[codes] = True
        found = np.flatnonzero(present)
        entry_counts = rows[found]
    else:
        order = np.argsort(codes)
        codes = codes[order]
        starts = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
        found, entry_counts = codes[starts], np.add.reduceat(counts[order], starts)
    return found // n_loc, (found % n_loc).astype(np.int32), entry_counts.astype(np.int64)


def walk(
    keys: np.ndarray,
    locs: np.ndarray,
    counts: np.ndarray,
    params: SieveParams,
    budget: float | None = None,
) -> SegmentSet:
    """Segment one partition of (key, location id, rows) triples.

    Args:
        keys: int64 keys (mapped), any order, repeats allowed.
        locs: location id of each triple.
        counts: rows of each triple (positive).
        params: build parameters.
        budget: this partition's share of ``budget_entries`` (all of it when
            ``None``: a single partition).

    Returns:
        The partition's segments in key order (see the module docstring for
        the rule).
    """
    groups = group_keys(keys, locs, counts)
    out = _Collector(groups)
    n = len(groups.keys)
    if n == 0:
        return out.result()
    per_key = (params.budget_entries if budget is None else budget) / n
    starts = run_starts(groups)
    stops = np.append(starts[1:], n)
    stable = np.flatnonzero(stops - starts >= params.min_run_keys)
    pending: _Stable | None = None
    cursor = 0
    for r in stable:
        a, b = int(starts[r]), int(stops[r])
        current = _stable(groups, a, b)
        if a > cursor:
            bridged = a - cursor < params.min_run_keys and _bridge(
                groups, cursor, a, pending, current
            )
            if pending is not None:
                out.add_stable(pending)
            if not bridged:
                _add_volatile(out, groups, cursor, a, params, per_key)
        elif pending is not None:
            out.add_stable(pending)
        pending, cursor = current, b
    if cursor < n:
        bridged = n - cursor < params.min_run_keys and _bridge(groups, cursor, n, pending, None)
        if pending is not None:
            out.add_stable(pending)
        if not bridged:
            _add_volatile(out, groups, cursor, n, params, per_key)
    elif pending is not None:
        out.add_stable(pending)
    return out.result()
