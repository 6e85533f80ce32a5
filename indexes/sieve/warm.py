"""Warm-path answers of a loaded Sieve: a few keys or one range in microseconds, in plain Python.

The numpy answers of :class:`~lakesieve.indexes.sieve.lookup.SieveIndex` pay
a fixed cost per call (a dozen small array operations). Once an index is
loaded, :class:`WarmTables` keeps Python copies of the directory and one
integer bit mask per block (bit ``i`` set when location id ``i`` has an entry
in the block), so:

* a point is two ``bisect`` calls on the directory, one division and one
  list read (one or two segments in practice);
* a range ``[lo, hi]`` is two ``bisect`` calls and the OR of the masks of
  the blocks it meets. When the segments it meets are laid out one after
  the other and only the two end segments are cut by the range (the usual
  case), those blocks are one contiguous run of block numbers and their OR
  comes from a sparse table over chunks of :data:`CHUNK` blocks plus at most
  ``2 * CHUNK`` single masks; otherwise every segment contributes its own
  run of blocks;
* a mask becomes a frozenset of location names once; the last
  :data:`CACHED_SETS` distinct masks keep theirs.

The answers are exactly the numpy answers (tests compare the two on drawn
indexes and queries): the same segments, the same blocks, the same entries.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from functools import reduce

import numpy as np

#: Blocks per chunk of the sparse table.
CHUNK = 16
#: Distinct masks whose frozensets are kept.
CACHED_SETS = 4096
#: Indexes with more entries than this are answered by the numpy path only.
MAX_ENTRIES = 1 << 21


def block_masks(block_first_entry: np.ndarray, entry_loc: np.ndarray, n_loc: int) -> list[int]:
    """One int per block: bit ``i`` set when location id ``i`` has an entry in the block."""
    n_blocks = len(block_first_entry) - 1
    counts = np.diff(block_first_entry)
    if n_blocks <= 0:
        return []
    if n_loc <= 64:
        bits = np.left_shift(np.uint64(1), entry_loc.astype(np.uint64))
        out = np.zeros(n_blocks, np.uint64)
        nonempty = counts > 0
        starts = block_first_entry[:-1][nonempty]
        if len(starts):
            out[nonempty] = np.bitwise_or.reduceat(bits, starts)
        return [int(v) for v in out.tolist()]
    masks = [0] * n_blocks
    owner = np.repeat(np.arange(n_blocks, dtype=np.int64), counts).tolist()
    for block, loc in zip(owner, entry_loc.tolist(), strict=True):
        masks[block] |= 1 << loc
    return masks


class WarmTables:
    """Python copies of a loaded index's directory, block masks and a chunk sparse table.

    Args:
        seg_min, seg_max, reach, seg_width, seg_first_block, seg_blocks: the
            loaded directory (``reach`` is the running maximum of ``seg_max``).
        block_first_entry: first entry per block plus a final sentinel.
        entry_loc: location id per entry.
        names: location names by id.
    """

    def __init__(
        self,
        seg_min: np.ndarray,
        seg_max: np.ndarray,
        reach: np.ndarray,
        seg_width: np.ndarray,
        seg_first_block: np.ndarray,
        seg_blocks: np.ndarray,
        block_first_entry: np.ndarray,
        entry_loc: np.ndarray,
        names: list[str],
    ) -> None:
        self.mins: list[int] = seg_min.tolist()
        self.maxs: list[int] = seg_max.tolist()
        self.reach: list[int] = reach.tolist()
        self.width: list[int] = [int(w) for w in seg_width.tolist()]
        self.first: list[int] = seg_first_block.tolist()
        self.last: list[int] = (seg_first_block + seg_blocks - 1).tolist()
        self.contiguous = bool(
            len(seg_first_block) < 2
            or np.array_equal(seg_first_block[1:], seg_first_block[:-1] + seg_blocks[:-1])
        )
        self.names = names
        self.masks = block_masks(block_first_entry, entry_loc, len(names))
        chunks = [
            reduce(operator.or_, self.masks[i : i + CHUNK], 0)
            for i in range(0, len(self.masks), CHUNK)
        ]
        self.table: list[list[int]] = [chunks]
        span = 2
        while span <= len(chunks):
            prev, half = self.table[-1], span // 2
            self.table.append([prev[i] | prev[i + half] for i in range(len(chunks) - span + 1)])
            span *= 2
        self.sets: dict[int, frozenset[str]] = {}

    # ---------------------------------------------------------------- masks

    def blocks_mask(self, a: int, b: int) -> int:
        """OR of the masks of blocks ``a..b`` (inclusive)."""
        ca, cb = a // CHUNK + 1, b // CHUNK
        masks = self.masks
        if cb <= ca:
            return reduce(operator.or_, masks[a : b + 1], 0)
        out = reduce(operator.or_, masks[a : ca * CHUNK], 0)
        out |= reduce(operator.or_, masks[cb * CHUNK : b + 1], 0)
        n = cb - ca
        level = n.bit_length() - 1
        row = self.table[level]
        return out | row[ca] | row[cb - (1 << level)]

    def _slot(self, s: int, key: int) -> int:
        w = self.width[s]
        return (key - self.mins[s]) // w if w else 0

    def point_mask(self, key: int) -> int:
        """Mask of the locations that may hold mapped ``key``."""
        out = 0
        maxs, first = self.maxs, self.first
        for s in range(bisect_left(self.reach, key), bisect_right(self.mins, key)):
            if maxs[s] >= key:
                out |= self.masks[first[s] + self._slot(s, key)]
        return out

    def range_mask(self, lo: int, hi: int) -> int:
        """Mask of the locations that may hold a mapped key in ``[lo, hi]``."""
        if lo > hi:
            return 0
        start = bisect_left(self.reach, lo)
        stop = bisect_right(self.mins, hi)
        if stop <= start:
            return 0
        mins, maxs, first = self.mins, self.maxs, self.first
        end = stop - 1
        if start == end:
            a = first[start] + self._slot(start, max(mins[start], lo))
            return self.blocks_mask(a, first[start] + self._slot(start, min(maxs[start], hi)))
        if (
            self.contiguous
            and mins[start + 1] >= lo
            and (end - start == 1 or self.reach[end - 1] <= hi)
            and maxs[start] <= hi
        ):
            a = first[start] + self._slot(start, max(mins[start], lo))
            return self.blocks_mask(a, first[end] + self._slot(end, min(maxs[end], hi)))
        out = 0
        for s in range(start, stop):
            if maxs[s] >= lo:
                a = first[s] + self._slot(s, max(mins[s], lo))
                out |= self.blocks_mask(a, first[s] + self._slot(s, min(maxs[s], hi)))
        return out

    # ---------------------------------------------------------------- names

    def names_of(self, mask: int) -> frozenset[str]:
        """The location names of ``mask`` (cached per distinct mask)."""
        got = self.sets.get(mask)
        if got is None:
            found = []
            names, rest = self.names, mask
            while rest:
                low = rest & -rest
                found.append(names[low.bit_length() - 1])
                rest ^= low
            got = frozenset(found)
            if len(self.sets) >= CACHED_SETS:
                self.sets.clear()
            self.sets[mask] = got
        return got
