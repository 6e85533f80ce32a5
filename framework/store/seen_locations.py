"""Which locations an index state has seen, recorded with the state.

A query trusts an index only for locations the index has read. Each state
records, in its metadata, the locations it accounts for:

- a **base** state (a build, a rebuild, a fold, a compaction): every
  location it covers, under ``seen_locations``;
- a **delta** state: the locations it adds to its parent's and those it
  drops, under ``seen_added`` and ``seen_dropped`` (a refresh touches few).

Locations are kept as 64-bit BLAKE2b hashes of their names (sorted,
little-endian, base64): eight bytes a location, whatever the name's length.
Two names sharing a hash would make the guard treat an unseen location as
seen; at a million locations the chance is about 3 in 100 million, and
the format's change record still answers for it.

At query time any location of the queried snapshot that the chosen state
has not seen is read (:func:`unseen`), whatever the format's change hook
says: a change record that says less than what happened costs a wider
read, never a lost row. A state written before this record existed has
none (:func:`seen_of` answers ``None``) and relies on the change record.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: Meta key of a base state's hashes.
SEEN = "seen_locations"
#: Meta key of the hashes a delta state adds to its parent's.
SEEN_ADDED = "seen_added"
#: Meta key of the hashes a delta state drops from its parent's.
SEEN_DROPPED = "seen_dropped"


def location_hash(location: str) -> int:
    """The 64-bit hash a state records for ``location``."""
    return int.from_bytes(
        hashlib.blake2b(location.encode("utf-8"), digest_size=8).digest(), "little"
    )


def hashes(locations: Iterable[str]) -> frozenset[int]:
    """The hashes of ``locations``."""
    return frozenset(location_hash(loc) for loc in locations)


def encode(values: Iterable[int]) -> str:
    """``values`` as base64 of their sorted little-endian ``uint64`` bytes."""
    array = np.array(sorted(values), dtype="<u8")
    return base64.b64encode(array.tobytes()).decode("ascii")


def decode(text: str) -> frozenset[int]:
    """The hashes :func:`encode` wrote.

    Raises:
        ValueError: ``text`` is not base64 of a whole number of ``uint64`` values.
    """
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) % 8:
        raise ValueError(f"seen-locations record of {len(raw)} bytes is not a list of uint64")
    return frozenset(int(v) for v in np.frombuffer(raw, dtype="<u8"))


def base_meta(seen: frozenset[int]) -> dict[str, str]:
    """The metadata entry of a base state that has seen ``seen``."""
    return {SEEN: encode(seen)}


def delta_meta(parent: frozenset[int], seen: frozenset[int]) -> dict[str, str]:
    """The metadata entries of a delta state that has seen ``seen`` on top of ``parent``."""
    return {SEEN_ADDED: encode(seen - parent), SEEN_DROPPED: encode(parent - seen)}


def seen_of(chain: list[Any], cache: dict[str, Any] | None = None) -> frozenset[int] | None:
    """The hashes the newest state of ``chain`` (base first) has seen; ``None``: not recorded.

    ``chain`` holds :class:`~lakesieve.store.index_log.IndexState` objects;
    answers are remembered in ``cache`` per state id. A record that does not
    decode counts as not recorded.
    """
    if not chain:
        return None
    key = "seen:" + chain[-1].state_id
    if cache is not None and key in cache:
        return cache[key]  # type: ignore[no-any-return]
    found = _replay(chain)
    if cache is not None:
        cache[key] = found
    return found


def _replay(chain: list[Any]) -> frozenset[int] | None:
    meta: Mapping[str, Any] = chain[0].meta
    try:
        if not isinstance(meta.get(SEEN), str):
            return None
        seen = set(decode(meta[SEEN]))
        for state in chain[1:]:
            added, dropped = state.meta.get(SEEN_ADDED), state.meta.get(SEEN_DROPPED)
            if not isinstance(added, str) or not isinstance(dropped, str):
                return None
            seen -= decode(dropped)
            seen |= decode(added)
    except ValueError:
        return None
    return frozenset(seen)


def unseen(locations: Iterable[str], seen: frozenset[int]) -> frozenset[str]:
    """Those of ``locations`` whose hash ``seen`` does not hold."""
    return frozenset(loc for loc in locations if location_hash(loc) not in seen)


def after_change(
    parent: frozenset[int] | None,
    removed: Iterable[str],
    touched_live: Iterable[str],
    live_at_end: Iterable[str],
) -> frozenset[int]:
    """What a state seen as ``parent`` has seen once a refresh has read a change.

    ``removed`` leave it; ``touched_live`` (the locations the refresh read or
    ruled unchanged at the new instant) join it. A parent without a record
    counts as having seen the whole new snapshot but what the change touched,
    which is what the change record claims.
    """
    if parent is None:
        return hashes(live_at_end)
    return (parent - hashes(removed)) | hashes(touched_live)


def stamp(
    meta: dict[str, Any],
    kind: str,
    seen: frozenset[int] | None,
    parent: frozenset[int] | None = None,
) -> None:
    """Record in a new state's ``meta`` (changed in place) the locations it has seen.

    Any record ``meta`` carries already (an index type's fold copies its
    base's metadata) is dropped first. ``seen`` ``None``, or a delta whose
    parent has no record, records nothing: the state then relies on the
    format's change record, as states written before this record did.
    """
    for key in (SEEN, SEEN_ADDED, SEEN_DROPPED):
        meta.pop(key, None)
    if seen is None:
        return
    if kind == "base":
        meta.update(base_meta(seen))
    elif parent is not None:
        meta.update(delta_meta(parent, seen))
