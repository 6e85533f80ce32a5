"""Folding a delta into a Sieve index, exactly at block granularity.

A delta is a frame of ``(key, location, count)`` rows: ``count`` rows added
(positive) or removed (negative) at ``location`` with ``key``. Blocks store
``(location id, row count)`` pairs, so a delta changes counts in place:

**Where a key's rows are counted.** Every non-null key is mapped
(:func:`lakesieve.sdk.keys.map_key`) and looked up in the segment directory. Its
*candidates* are the blocks of every segment whose ``[min_key, max_key]``
holds it (the block ``(key - min_key) // width`` of each):

* one candidate (almost every key): the key's rows are counted there, so its
  change is summed into that block: ``count(block, location) += count``.
  A location whose count reaches 0 leaves the block; one new to the block
  joins it. Keys that keep their block and location (an update, or rows moved
  between keys of one block) change nothing in the answers.
* several candidates (a *shared* key: bridged segments overlap on a few gap
  keys, and range partitions of the build may both end on one mapped key):
  the build counted each of its rows in one of them, and which one is not
  recorded. An addition goes to the first candidate (directory order) whose
  block already holds the location, else to the first candidate. A removal of
  ``r`` rows is applied only where it is provably right: when exactly one
  candidate holds the location (it must be the one counting them), or when
  the candidates' counts for it sum to at most ``r`` (then none of them
  counts any other row there, and all drop it). Otherwise the counts are left
  as they are — higher than the truth, so answers stay a superset — and the
  rows are reported in ``meta["unresolved_removal_rows"]`` (a rebuild clears
  them). Every count therefore stays at least the rows it stands for, which
  is what makes dropping a location at count 0 safe.
* no candidate (a key beyond the ends or in a gap between segments): the
  key gets a **new segment** inside its gap (the stretch between the two
  segments around it), so new segments never overlap old ones and never make
  a key shared. Per gap, fewer than ``min_run_keys`` new distinct keys become
  one point segment each (a single block of width 1 holding the key's exact
  locations); more are segmented by the build's own walk
  (:func:`lakesieve.indexes.sieve.segments.walk`) with the index's
  parameters, stable runs, bridging and volatile widths alike.

Rows with a null key change the ``nulls`` table. Every location's total row
count (``locations.rows``, written by the build) is kept exact; a location
whose total reaches 0 is removed from every block, even one with unresolved
counts, and from the locations table. Locations new to the index get new
ids. Segments whose blocks all become empty are kept, so later additions in
their range land in them as they would in one combined delta.

**Bookkeeping** (in ``meta``): ``deltas_applied`` and ``delta_segments``
(segments added for new keys) since the build; ``unresolved_removal_rows``
(above) and ``unmatched_removal_rows`` (removals of rows the index never
counted: a delta inconsistent with the index's instant; nothing to do but
report them); ``distinct_keys`` adds the new segments' keys to the build's
count (keys added or emptied inside existing blocks are not tracked).

**Properties.** After ``build(A)`` and the delta ``A -> B``, every lookup
holds every true location at ``B``. An empty delta, or one whose counts net
to zero per block and location, changes no answer. Deltas applied one after
the other give the same answers as their sum applied at once, as long as no
removal is left unresolved and no gap receives ``min_run_keys`` or more new
keys (both are rare for the small per-commit deltas; a compaction rebuilds).

**Where the work runs.** Spark maps the keys and finds each row's candidates
(a ``mapInArrow`` over the delta, with the directory — a few arrays of one
value per segment — shipped in the task closure), then sums per block and
location, per shared mapped key and location, per new mapped key and
location, and per location for null keys, all in one ``groupBy``. The driver
collects only those sums: bounded by the blocks' entries, the few shared
keys, and the new keys. When the new keys' pairs exceed
:data:`LOCAL_NEW_PAIRS` (one million) they are not collected: Spark
range-partitions them and runs the segmentation in each partition, and only
the resulting segments come back, as in the build.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.sieve.build import SEGMENT_ROW_DDL, partition_count
from lakesieve.indexes.sieve.lookup import SieveIndex
from lakesieve.indexes.sieve.params import OPTIONS, SieveParams, parse_options
from lakesieve.indexes.sieve.segments import SegmentSet, group_keys, walk
from lakesieve.indexes.sieve.storage import (
    SEGMENT_ROW_SCHEMA,
    expand_ranges,
    rows_to_segments,
    segments_to_rows,
    to_built,
)
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.keys import map_keys_arrow, parse_key_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_U64 = np.uint64

#: Kinds of summed delta rows.
KIND_NEW = 0  # key outside every segment; ``block`` holds its gap
KIND_BLOCK = 1  # key in exactly one block; ``block`` holds it, ``mkey`` is 0
KIND_SHARED = 2  # key in several blocks; ``mkey`` holds it
KIND_NULL = 3  # null key

#: Spark DDL of the classified rows (and of their sums).
SUMMARY_DDL = "kind int, block bigint, mkey bigint, location string, cnt bigint"
SUMMARY_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.int32()),
        pa.field("block", pa.int64()),
        pa.field("mkey", pa.int64()),
        pa.field("location", pa.string()),
        pa.field("cnt", pa.int64()),
    ]
)

#: New keys' (key, location) pairs collected to the driver at most; above
#: this they are segmented in Spark.
LOCAL_NEW_PAIRS = 1_000_000


# ---------------------------------------------------------------------------
# the directory: which blocks hold a key
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Directory:
    """The segment directory of an index, as the delta's classification needs it.

    Small (five values per segment) and picklable: Spark ships it to the
    tasks in the closure of the classification.
    """

    seg_min: np.ndarray
    seg_max: np.ndarray
    reach: np.ndarray
    seg_width: np.ndarray
    seg_first_block: np.ndarray

    @classmethod
    def of(cls, index: SieveIndex) -> Directory:
        """The directory of a loaded index."""
        reach = (
            np.maximum.accumulate(index.seg_max) if len(index.seg_max) else np.zeros(0, np.int64)
        )
        return cls(index.seg_min, index.seg_max, reach, index.seg_width, index.seg_first_block)

    def candidates(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every block holding each mapped key.

        Returns:
            ``(key position, block)`` pairs, blocks of one key in directory order.
        """
        keys = np.asarray(keys, dtype=np.int64)
        if len(keys) == 0 or len(self.seg_min) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        lo = np.searchsorted(self.reach, keys, side="left")
        hi = np.searchsorted(self.seg_min, keys, side="right")
        n = np.maximum(hi - lo, 0)
        seg = expand_ranges(lo, n)
        owner = np.repeat(np.arange(len(keys), dtype=np.int64), n)
        k = keys[owner]
        inside = (self.seg_min[seg] <= k) & (k <= self.seg_max[seg])
        seg, owner, k = seg[inside], owner[inside], k[inside]
        width = self.seg_width[seg]
        diff = k.view(_U64) - self.seg_min[seg].view(_U64)
        slot = np.where(width == 0, _U64(0), diff // np.maximum(width, _U64(1))).astype(np.int64)
        return owner, self.seg_first_block[seg] + slot

    def classify(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Kind and block (or gap) of each mapped key.

        Returns:
            ``kind`` (:data:`KIND_NEW`, :data:`KIND_BLOCK` or
            :data:`KIND_SHARED`) and ``block``: the block of a key in one
            block, the gap (index of the next segment) of a new key, -1 for
            a shared key.
        """
        keys = np.asarray(keys, dtype=np.int64)
        owner, block = self.candidates(keys)
        n_cand = np.bincount(owner, minlength=len(keys))
        kind = np.where(n_cand == 0, KIND_NEW, np.where(n_cand == 1, KIND_BLOCK, KIND_SHARED))
        out = np.full(len(keys), -1, np.int64)
        single = n_cand[owner] == 1
        out[owner[single]] = block[single]
        gap = np.searchsorted(self.seg_min, keys, side="right").astype(np.int64)
        out = np.where(kind == KIND_NEW, gap, out)
        return kind.astype(np.int32), out


def classify_batches(
    batches: Iterator[pa.RecordBatch], directory: Directory, key_type: str
) -> Iterator[pa.RecordBatch]:
    """Classify ``(key, location, count)`` batches into rows of :data:`SUMMARY_SCHEMA`.

    The ``mapInArrow`` body of :func:`apply_delta`, also used in-process.
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        mapped = map_keys_arrow(batch.column(0), key_type)
        is_null = np.asarray(mapped.is_null(), dtype=bool)
        mkey = np.asarray(mapped.fill_null(0) if mapped.null_count else mapped, dtype=np.int64)
        kind, block = directory.classify(mkey)
        kind[is_null] = KIND_NULL
        block[is_null] = -1
        mkey = np.where((kind == KIND_BLOCK) | is_null, 0, mkey)
        cnt = batch.column(2)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(kind, pa.int32()),
                pa.array(block, pa.int64()),
                pa.array(mkey, pa.int64()),
                batch.column(1).cast(pa.string()),
                pc.fill_null(cnt.cast(pa.int64()), 0),
            ],
            schema=SUMMARY_SCHEMA,
        )


# ---------------------------------------------------------------------------
# new keys: segments inside the gaps
# ---------------------------------------------------------------------------


def segment_new_keys(
    gaps: np.ndarray,
    keys: np.ndarray,
    locs: np.ndarray,
    counts: np.ndarray,
    params: SieveParams,
    budget_per_key: float,
) -> SegmentSet:
    """Segments for keys outside every segment, never spanning two gaps.

    Args:
        gaps: gap of each row (keys of one gap lie between the same two
            existing segments).
        keys: mapped key of each row.
        locs: location id of each row.
        counts: rows added (only positive counts are segmented).
        params: the index's build parameters.
        budget_per_key: share of ``budget_entries`` per new distinct key.

    Returns:
        Point segments for gaps with fewer than ``min_run_keys`` new distinct
        keys, the build's walk for the others.
    """
    keep = np.asarray(counts) > 0
    gaps = np.asarray(gaps, np.int64)[keep]
    keys = np.asarray(keys, np.int64)[keep]
    locs = np.asarray(locs, np.int32)[keep]
    counts = np.asarray(counts, np.int64)[keep]
    if len(keys) == 0:
        return SegmentSet()
    order = np.lexsort((locs, keys))
    gaps, keys, locs, counts = gaps[order], keys[order], locs[order], counts[order]
    groups = group_keys(keys, locs, counts)
    first_row = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    key_gap = gaps[first_row]
    gap_ids, key_gap_idx = np.unique(key_gap, return_inverse=True)
    keys_per_gap = np.bincount(key_gap_idx)
    small = keys_per_gap[key_gap_idx] < params.min_run_keys
    parts: list[SegmentSet] = []
    if small.any():
        sizes = groups.sizes[small]
        entry_small = np.repeat(small, groups.sizes)
        n = int(small.sum())
        parts.append(
            SegmentSet(
                groups.keys[small],
                groups.keys[small],
                np.ones(n, np.uint64),
                np.ones(n, np.int64),
                np.ones(n, np.int64),
                sizes.astype(np.int64),
                groups.locs[entry_small],
                groups.counts[entry_small],
            )
        )
    p = params
    for g in np.flatnonzero(keys_per_gap >= params.min_run_keys):
        rows = gaps == gap_ids[g]
        parts.append(
            walk(keys[rows], locs[rows], counts[rows], p, budget_per_key * int(keys_per_gap[g]))
        )
    return SegmentSet.concat(parts)


def segment_partition(
    batches: Iterator[pa.RecordBatch], params: Mapping[str, Any], budget_per_key: float
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body segmenting new keys: ``(gap, mkey, loc_id, cnt)`` in, segment rows out."""
    p = SieveParams.from_dict(params)
    cols: list[list[np.ndarray]] = [[], [], [], []]
    for batch in batches:
        if batch.num_rows == 0:
            continue
        for i, dtype in enumerate((np.int64, np.int64, np.int32, np.int64)):
            cols[i].append(np.asarray(batch.column(i), dtype=dtype))
    if not cols[0]:
        return
    gaps, keys, locs, counts = (np.concatenate(c) for c in cols)
    segs = segment_new_keys(gaps, keys, locs, counts, p, budget_per_key)
    if segs.num_segments:
        yield segments_to_rows(segs)


# ---------------------------------------------------------------------------
# the driver's merge
# ---------------------------------------------------------------------------


@dataclass
class _Tally:
    """Removal rows that could not be applied exactly."""

    unresolved: int = 0
    unmatched: int = 0


def _location_ids(index: SieveIndex, seen: list[str]) -> list[str]:
    """The index's location names, followed by the new ones in ``seen`` (sorted)."""
    old = [str(x) for x in index.locations.tolist()]
    known = set(old)
    return old + sorted({s for s in seen if s not in known})


def _ids_of(names: list[str], values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    ids = pc.index_in(values, value_set=pa.array(names, pa.string()))
    return np.asarray(ids.fill_null(-1), dtype=np.int64)


def _block_order(index: SieveIndex) -> tuple[np.ndarray, np.ndarray]:
    """Blocks in segment (directory) order, and each old block's new position (-1: orphan)."""
    order = expand_ranges(index.seg_first_block, index.seg_blocks)
    n_blocks = len(index.block_first_entry) - 1
    pos = np.full(n_blocks, -1, np.int64)
    pos[order] = np.arange(len(order), dtype=np.int64)
    return order, pos


def _shared_changes(
    directory: Directory,
    pos: np.ndarray,
    codes: np.ndarray,
    counts: np.ndarray,
    n_loc: int,
    mkeys: np.ndarray,
    locs: np.ndarray,
    deltas: np.ndarray,
    tally: _Tally,
) -> dict[int, int]:
    """New counts of the (block, location) codes that shared keys change.

    Additions first, then removals, by the rules of the module docstring.
    ``codes`` (sorted, unique) and ``counts`` are the counts after the
    one-block keys' sums.
    """
    current: dict[int, int] = {}

    def get(code: int) -> int:
        if code not in current:
            at = int(np.searchsorted(codes, code))
            current[code] = int(counts[at]) if at < len(codes) and codes[at] == code else 0
        return current[code]

    owner, block = directory.candidates(mkeys)
    cands: list[list[int]] = [[] for _ in range(len(mkeys))]
    for o, b in zip(owner.tolist(), pos[block].tolist(), strict=True):
        if b >= 0:
            cands[o].append(b * n_loc)
    for sign in (1, -1):
        for i in np.flatnonzero(np.sign(deltas) == sign).tolist():
            loc, change = int(locs[i]), int(deltas[i])
            blocks = [b + loc for b in cands[i]]
            if not blocks:
                tally.unmatched += max(-change, 0)
                continue
            held = [c for c in blocks if get(c) > 0]
            if change > 0:
                target = held[0] if held else blocks[0]
                current[target] = get(target) + change
                continue
            removed = -change
            if not held:
                tally.unmatched += removed
            elif len(held) == 1:
                tally.unmatched += max(removed - get(held[0]), 0)
                current[held[0]] = max(get(held[0]) - removed, 0)
            elif sum(get(c) for c in held) <= removed:
                tally.unmatched += removed - sum(get(c) for c in held)
                for c in held:
                    current[c] = 0
            else:
                tally.unresolved += removed
    return current


def fold_summary(
    index: SieveIndex,
    summary: pa.Table,
    names: list[str],
    new_segments: SegmentSet,
    params: Mapping[str, Any],
) -> BuiltIndex:
    """The index with a summed, classified delta folded in (the driver half of :func:`apply_delta`).

    Args:
        index: the loaded index.
        summary: rows of :data:`SUMMARY_SCHEMA`, summed per
            ``(kind, block, mkey, location)``; rows of new keys may be left
            out when ``new_segments`` was made in Spark, but their per-location
            sums must then be in it as rows of kind :data:`KIND_NEW` with
            ``block`` -1.
        names: every location name: the index's, then the new ones
            (:func:`_location_ids`).
        new_segments: segments of the new keys, location ids as in ``names``.
        params: the full build parameters.
    """
    full = dict(params)
    n_loc = len(names)
    kind = np.asarray(summary.column("kind"), dtype=np.int32)
    block = np.asarray(summary.column("block"), dtype=np.int64)
    mkey = np.asarray(summary.column("mkey"), dtype=np.int64)
    cnt = np.asarray(summary.column("cnt"), dtype=np.int64)
    loc = _ids_of(names, summary.column("location"))
    if (loc < 0).any():
        raise ValueError("the delta names a location missing from the location list")
    tally = _Tally()

    # per-location totals are exact: every row of the delta counts
    location_rows = np.zeros(n_loc, np.int64)
    location_rows[: len(index.location_rows)] = index.location_rows
    np.add.at(location_rows, loc, cnt)
    tally.unmatched += int(-location_rows[location_rows < 0].sum())
    location_rows = np.maximum(location_rows, 0)

    # one-block keys: sum into the blocks, in segment order
    _, pos = _block_order(index)
    n_old_blocks = len(index.block_first_entry) - 1
    old_block = np.repeat(np.arange(n_old_blocks, dtype=np.int64), np.diff(index.block_first_entry))
    one = kind == KIND_BLOCK
    all_block = pos[np.concatenate([old_block, block[one]])]
    all_loc = np.concatenate([index.entry_loc.astype(np.int64), loc[one]])
    all_cnt = np.concatenate([index.entry_count, cnt[one]])
    live = all_block >= 0
    codes, inverse = np.unique(all_block[live] * n_loc + all_loc[live], return_inverse=True)
    sums = np.zeros(len(codes), np.int64)
    np.add.at(sums, inverse, all_cnt[live])
    tally.unmatched += int(-sums[sums < 0].sum())

    # shared keys: additions, then provable removals
    shared = kind == KIND_SHARED
    if shared.any():
        changed = _shared_changes(
            Directory.of(index),
            pos,
            codes,
            sums,
            n_loc,
            mkey[shared],
            loc[shared],
            cnt[shared],
            tally,
        )
        if changed:
            extra_codes = np.array(list(changed), dtype=np.int64)
            extra_vals = np.array(list(changed.values()), dtype=np.int64)
            if len(codes):
                at = np.minimum(np.searchsorted(codes, extra_codes), len(codes) - 1)
                found = codes[at] == extra_codes
            else:
                at, found = np.zeros(len(extra_codes), np.int64), np.zeros(len(extra_codes), bool)
            sums[at[found]] = extra_vals[found]
            codes = np.concatenate([codes, extra_codes[~found]])
            sums = np.concatenate([sums, extra_vals[~found]])
            order = np.argsort(codes, kind="stable")
            codes, sums = codes[order], sums[order]
    new_kind = kind == KIND_NEW
    tally.unmatched += int(-cnt[new_kind & (cnt < 0)].sum())

    # locations without rows leave every block
    alive = location_rows > 0
    keep = (sums > 0) & alive[codes % n_loc]
    codes, sums = codes[keep], sums[keep]
    n_blocks = int(index.seg_blocks.sum())
    entry_block = codes // n_loc
    old_segs = SegmentSet(
        index.seg_min,
        index.seg_max,
        index.seg_width,
        index.seg_blocks,
        np.zeros(len(index.seg_min), np.int64),
        np.bincount(entry_block, minlength=n_blocks).astype(np.int64),
        (codes % n_loc).astype(np.int32),
        sums,
    )
    new_keep = alive[new_segments.entry_loc] if len(new_segments.entry_loc) else np.zeros(0, bool)
    if not new_keep.all():  # a new key's location emptied again by the same delta's removals
        entry_seg_block = np.repeat(
            np.arange(len(new_segments.block_entries)), new_segments.block_entries
        )
        new_segments = SegmentSet(
            new_segments.seg_min,
            new_segments.seg_max,
            new_segments.seg_width,
            new_segments.seg_blocks,
            new_segments.seg_keys,
            np.bincount(entry_seg_block[new_keep], minlength=len(new_segments.block_entries)),
            new_segments.entry_loc[new_keep],
            new_segments.entry_count[new_keep],
        )

    # nulls
    null_rows = np.zeros(n_loc, np.int64)
    null_rows[index.null_loc.astype(np.int64)] = index.null_count
    is_null = kind == KIND_NULL
    np.add.at(null_rows, loc[is_null], cnt[is_null])
    null_rows = np.where(alive, np.maximum(null_rows, 0), 0)

    # drop locations without rows; ids of the others close up
    new_id = np.cumsum(alive) - 1
    segs = SegmentSet.concat([old_segs, new_segments])
    segs.entry_loc = new_id[segs.entry_loc].astype(np.int32)
    kept_names = [n for n, a in zip(names, alive.tolist(), strict=True) if a]
    nulls = {int(new_id[i]): int(null_rows[i]) for i in np.flatnonzero(null_rows > 0)}
    meta = index.meta
    extra = {
        "distinct_keys": int(meta.get("distinct_keys") or 0) + int(new_segments.seg_keys.sum()),
        "deltas_applied": int(meta.get("deltas_applied") or 0) + 1,
        "delta_segments": int(meta.get("delta_segments") or 0) + new_segments.num_segments,
        "unresolved_removal_rows": int(meta.get("unresolved_removal_rows") or 0) + tally.unresolved,
        "unmatched_removal_rows": int(meta.get("unmatched_removal_rows") or 0) + tally.unmatched,
    }
    return to_built(
        segs,
        kept_names,
        nulls,
        index.key_type,
        full,
        int(location_rows.sum()),
        location_rows[alive],
        extra,
    )


def _full_params(index: SieveIndex, params: Mapping[str, Any] | None) -> dict[str, Any]:
    chosen = params or index.params
    return parse_options({k: v for k, v in chosen.items() if k in OPTIONS})


def _budget_per_key(index: SieveIndex, p: SieveParams, new_pairs: int) -> float:
    keys = int(index.meta.get("distinct_keys") or 0) + max(new_pairs, 0)
    return p.budget_entries / max(keys, 1)


def _new_rows(
    summary: pa.Table, names: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(gap, mkey, loc id, cnt)`` of the new keys' rows of a collected summary."""
    new = summary.filter(pc.equal(summary.column("kind"), KIND_NEW))
    return (
        np.asarray(new.column("block"), dtype=np.int64),
        np.asarray(new.column("mkey"), dtype=np.int64),
        _ids_of(names, new.column("location")).astype(np.int32),
        np.asarray(new.column("cnt"), dtype=np.int64),
    )


def _check_locations(summary: pa.Table) -> None:
    if summary.column("location").null_count:
        raise ValueError("the delta has rows with a null location")


# ---------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------


def apply_delta_local(
    index: SieveIndex,
    keys: pa.Array | pa.ChunkedArray,
    locations: pa.Array | list[str],
    counts: np.ndarray | list[int],
    params: Mapping[str, Any] | None = None,
) -> BuiltIndex:
    """Fold a delta given as arrays into ``index``, in-process (tests, small deltas).

    Same classification, sums and merge as :func:`apply_delta`.

    Args:
        index: the loaded index.
        keys: key per delta row (the column's Arrow type; nulls allowed).
        locations: location per row.
        counts: rows added (> 0) or removed (< 0) per row.
        params: build parameters (the index's own when empty).

    Raises:
        ValueError: a row has a null location, or the arrays differ in length.
    """
    full = _full_params(index, params)
    p = SieveParams.from_dict(full)
    loc_arr = pa.array(locations, pa.string()) if isinstance(locations, list) else locations
    cnt_arr = pa.array(np.asarray(counts, dtype=np.int64), pa.int64())
    if not len(keys) == len(loc_arr) == len(cnt_arr):
        raise ValueError("keys, locations and counts differ in length")
    if loc_arr.null_count:
        raise ValueError("the delta has rows with a null location")
    key_arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    batch = pa.RecordBatch.from_arrays(
        [key_arr, loc_arr, cnt_arr], names=["key", "location", "count"]
    )
    parts = list(classify_batches(iter([batch]), Directory.of(index), index.key_type))
    table = pa.Table.from_batches(parts, schema=SUMMARY_SCHEMA)
    summary = _sum_summary(table)
    names = _location_ids(index, summary.column("location").to_pylist())
    gaps, keys_new, locs, cnts = _new_rows(summary, names)
    segs = segment_new_keys(gaps, keys_new, locs, cnts, p, _budget_per_key(index, p, len(gaps)))
    return fold_summary(index, summary, names, segs, full)


def _sum_summary(table: pa.Table) -> pa.Table:
    """Sum classified rows per ``(kind, block, mkey, location)``, dropping zeros."""
    summed = table.group_by(["kind", "block", "mkey", "location"]).aggregate([("cnt", "sum")])
    summed = summed.rename_columns(["kind", "block", "mkey", "location", "cnt"])
    summed = summed.filter(pc.not_equal(summed.column("cnt"), 0))
    return summed.select(SUMMARY_SCHEMA.names).cast(SUMMARY_SCHEMA)


def apply_delta(
    spark: SparkSession,
    index: SieveIndex,
    delta: DataFrame,
    params: Mapping[str, Any] | None = None,
    local_new_pairs: int = LOCAL_NEW_PAIRS,
) -> BuiltIndex:
    """The index after folding in ``delta`` (see the module docstring).

    Args:
        spark: the session.
        index: the loaded index.
        delta: rows ``(key, location, count)``; ``count > 0`` rows added at the
            location, ``< 0`` rows removed; summed or not.
        params: build parameters (the index's own when empty).
        local_new_pairs: most new-key pairs segmented on the driver; above,
            Spark segments them.

    Raises:
        ValueError: a delta row has a null location.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    parse_key_type(index.key_type)
    full = _full_params(index, params)
    p = SieveParams.from_dict(full)
    directory, key_type = Directory.of(index), index.key_type
    rel = delta.select(
        F.col("key").cast(key_type).alias("key"),
        F.col("location").cast("string").alias("location"),
        F.col("count").cast("bigint").alias("count"),
    )

    def classify(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return classify_batches(batches, directory, key_type)

    summary = (
        rel.mapInArrow(classify, SUMMARY_DDL)
        .groupBy("kind", "block", "mkey", "location")
        .agg(F.sum("cnt").alias("cnt"))
        .where(F.col("cnt") != 0)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        is_new = F.col("kind") == KIND_NEW
        new_pairs = summary.where(is_new & (F.col("cnt") > 0)).count()
        if new_pairs <= local_new_pairs:
            collected = summary.toArrow().cast(SUMMARY_SCHEMA)
            _check_locations(collected)
            names = _location_ids(index, collected.column("location").to_pylist())
            gaps, keys, locs, cnts = _new_rows(collected, names)
            segs = segment_new_keys(gaps, keys, locs, cnts, p, _budget_per_key(index, p, new_pairs))
            return fold_summary(index, collected, names, segs, full)
        # many new keys: segment them in Spark, collect their per-location sums only
        rest = summary.where(~is_new).toArrow().cast(SUMMARY_SCHEMA)
        per_loc = (
            summary.where(is_new)
            .groupBy("location")
            .agg(F.sum("cnt").alias("cnt"))
            .select(
                F.lit(KIND_NEW).alias("kind"),
                F.lit(-1).cast("bigint").alias("block"),
                F.lit(0).cast("bigint").alias("mkey"),
                "location",
                "cnt",
            )
            .toArrow()
            .cast(SUMMARY_SCHEMA)
        )
        collected = pa.concat_tables([rest, per_loc])
        _check_locations(collected)
        names = _location_ids(index, collected.column("location").to_pylist())
        loc_df = spark.createDataFrame(
            [(n, i) for i, n in enumerate(names)], "location string, loc_id int"
        )
        pairs = (
            summary.where(is_new & (F.col("cnt") > 0))
            .join(F.broadcast(loc_df), on="location")
            .select(F.col("block").alias("gap"), "mkey", "loc_id", "cnt")
        )
        n_parts = partition_count(spark, new_pairs, p)
        ranged = pairs.repartitionByRange(n_parts, "mkey").sortWithinPartitions("mkey", "loc_id")
        pd, share = p.to_dict(), _budget_per_key(index, p, new_pairs)

        def body(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return segment_partition(batches, pd, share)

        table = ranged.mapInArrow(body, SEGMENT_ROW_DDL).toArrow()
        segs = rows_to_segments(table.cast(SEGMENT_ROW_SCHEMA) if table.num_rows else table)
        return fold_summary(index, collected, names, segs, full)
    finally:
        summary.unpersist()
