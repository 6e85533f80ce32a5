"""Following a rewritten file to the file that replaced it, so a refresh's delta stays small.

Delta Lake and Iceberg change rows copy-on-write: a commit that updates a
few rows of a file removes the whole file and adds a new one holding the
same rows but those. Their locations are files, so each such file is one
location leaving the snapshot and another entering it, and a delta by
location holds every row of both: an upsert of 1.5% of the rows that
touches every bucket of a table gives a delta of twice the table's rows.

Refresh pairs each removed location with the added location that holds
most of its keys (:func:`pair_rewrites` on the driver;
:mod:`~lakesieve.maintenance.refresh.pairs_spark` with Spark jobs), and
sums the two files' rows into one delta under the new name: ``+1`` for the
new file's rows, ``-1`` for the old one's. Only the keys the commit truly
changed are left. The delta state keeps the pairs beside its rows; lookups
answer the base's entry of the old name under the new one
(:mod:`lakesieve.state.overlay`), and a fold moves that entry to the new
name (:class:`~lakesieve.contract.protocols.RenamesLocations`).

That is exact for any pairing: the entry the index kept for the old file
covers the old file's keys, and the delta adds what the new file has beyond
them and removes what it lost, so the moved entry plus the delta covers the
new file's keys, as a refresh by location would. The pairing only decides
how small the delta is; so it may look at a sample of each removed file's
keys, and it gives up (pairs nothing) where keys cannot be compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.model import ReadUnit

__all__ = ["SAMPLE_KEYS", "chosen_pairs", "pair_rewrites", "rewrite_sides"]

#: Distinct keys of a removed location looked up among the added locations' keys.
SAMPLE_KEYS = 1024


def rewrite_sides(
    old_units: Sequence[ReadUnit], new_units: Sequence[ReadUnit]
) -> tuple[list[ReadUnit], list[ReadUnit]]:
    """The units of locations that only left the snapshot, and of those that only entered it."""
    old_locs = {u.location for u in old_units}
    new_locs = {u.location for u in new_units}
    return (
        [u for u in old_units if u.location not in new_locs],
        [u for u in new_units if u.location not in old_locs],
    )


def _distinct(parts: Sequence[pa.Array]) -> pa.Array:
    """The distinct non-null keys of one location's arrays."""
    if not parts:
        return pa.array([], pa.null())
    joined = pa.chunked_array(parts).combine_chunks() if len(parts) > 1 else parts[0]
    return pc.unique(joined.drop_null())


def _sample(keys: pa.Array, size: int) -> pa.Array:
    """At most ``size`` of ``keys``, evenly spaced (deterministic)."""
    if len(keys) <= size:
        return keys
    return keys.take(pa.array(np.linspace(0, len(keys) - 1, size).astype(np.int64)))


def pair_rewrites(
    removed: Mapping[str, Sequence[pa.Array]],
    added: Mapping[str, Sequence[pa.Array]],
    sample: int = SAMPLE_KEYS,
) -> dict[str, str]:
    """``old -> new`` for removed locations whose keys mostly reappear in one added location.

    Each removed location's distinct non-null keys (at most ``sample`` of
    them) are looked up among every added location's; pairs are taken by
    most keys in common first, each location at most once, and only where
    the added location holds at least half of the keys looked up. Keys are
    compared by value in their Arrow type (a float's ``-0.0`` and ``0.0``,
    or two NaNs, may not meet: a worse pairing, never a wrong delta).

    Args:
        removed: the key arrays of each location that left the snapshot.
        added: the key arrays of each location that entered it.
        sample: most keys of a removed location looked up.

    Returns:
        The pairs; empty when there is nothing to pair or the keys' type
        cannot be joined on.
    """
    if not removed or not added:
        return {}
    old_names, new_names = sorted(removed), sorted(added)
    try:
        probes, looked_up = [], np.zeros(len(old_names), np.int64)
        for i, name in enumerate(old_names):
            keys = _sample(_distinct(removed[name]), sample)
            looked_up[i] = len(keys)
            if len(keys):
                probes.append(pa.table({"key": keys, "old": pa.array(np.full(len(keys), i))}))
        targets = []
        for j, name in enumerate(new_names):
            keys = _distinct(added[name])
            if len(keys):
                targets.append(pa.table({"key": keys, "new": pa.array(np.full(len(keys), j))}))
        if not probes or not targets:
            return {}
        left = pa.concat_tables(probes, promote_options="permissive")
        right = pa.concat_tables(targets, promote_options="permissive")
        if left.schema.field("key").type != right.schema.field("key").type:
            right = right.set_column(
                0, "key", right.column("key").cast(left.schema.field("key").type)
            )
        # the sampled side is the small one: it builds the join's hash table
        met = right.join(left, keys="key", join_type="inner", use_threads=False)
        counts = met.group_by(["old", "new"], use_threads=False).aggregate([("key", "count")])
    except (pa.ArrowException, TypeError, ValueError):
        return {}
    return chosen_pairs(
        [
            (old_names[int(i)], new_names[int(j)], int(c))
            for i, j, c in zip(
                counts.column("old").to_pylist(),
                counts.column("new").to_pylist(),
                counts.column("key_count").to_pylist(),
                strict=True,
            )
        ],
        {name: int(looked_up[i]) for i, name in enumerate(old_names)},
    )


def chosen_pairs(
    common: Sequence[tuple[str, str, int]], looked_up: Mapping[str, int]
) -> dict[str, str]:
    """Pairs by most keys in common first, each location once, each with at least half its keys.

    Args:
        common: ``(old, new, keys in common)`` for each pair of locations that share keys.
        looked_up: the keys looked up of each old location.
    """
    pairs: dict[str, str] = {}
    taken: set[str] = set()
    for old, new, count in sorted(common, key=lambda t: (-t[2], t[0], t[1])):
        if old in pairs or new in taken or 2 * count < looked_up.get(old, 0) or count <= 0:
            continue
        pairs[old] = new
        taken.add(new)
    return pairs
