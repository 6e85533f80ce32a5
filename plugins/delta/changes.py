"""Locations touched between two versions of a Delta table, from the log's add and remove actions.

Versions *strictly after the smaller* bound and *up to and including the
larger* are read, whatever the order of ``start`` and ``end``. Each commit
file ``_delta_log/<version>.json`` lists ``add`` and ``remove`` actions; every
path in them (with ``dataChange`` true or false: a compaction moves rows too)
is touched. Folded oldest first:

- a path only added is ``added``; only removed is ``removed``;
- a path removed and added again (a new deletion vector on the same file) is
  ``rewritten``; added then removed inside the range is ``removed``.

When ``end`` is older than ``start`` the view is from ``start`` moving back to
``end``: ``added`` and ``removed`` swap; ``touched`` is the same either way.

The answer must be a superset of the truth: when a commit file in the range
cannot be read (cleaned up after a checkpoint), every location visible at
either bound is reported as ``rewritten`` on top of what could be read.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from lakesieve.plugins.delta import snapshot, timeline
from lakesieve.sdk import Changes, LakesieveError, TableRef, paths
from lakesieve.sdk.paths import storage_of

LOG_DIR = "_delta_log"


def _commit_actions(table: TableRef, version: int) -> Iterator[tuple[str, str]]:
    """``(kind, log path)`` for each add/remove action of one commit file.

    Raises:
        OSError: the commit file cannot be read.
    """
    fs, path = paths.filesystem_and_path(
        paths.join(table.path, f"{LOG_DIR}/{version:020d}.json"), storage_of(table.options)
    )
    with fs.open_input_stream(path) as handle:
        text = handle.read().decode("utf-8")
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        action = json.loads(line)
        for kind in ("add", "remove"):
            body = action.get(kind)
            if isinstance(body, dict) and isinstance(body.get("path"), str):
                yield kind, body["path"]


def _fold(state: dict[str, str], kind: str, location: str) -> None:
    if kind == "add":
        state[location] = "added" if state.get(location, "added") == "added" else "rewritten"
    else:
        state[location] = "removed"


def compute_changes(table: TableRef, start: str | None, end: str) -> Changes:
    """The locations touched by versions between ``start`` and ``end``; see the module docstring.

    Raises:
        InstantNotFoundError: a bound is not a version of the table.
    """
    end_v = timeline.resolve(table, end)
    start_v = timeline.resolve(table, start) if start is not None else None
    assert end_v is not None
    forward = start_v is None or start_v <= end_v
    low = start_v if forward else end_v
    high = end_v if forward or start_v is None else start_v

    state: dict[str, str] = {}
    complete = True
    first = 0 if low is None else low + 1
    for version in range(first, high + 1):
        try:
            actions = list(_commit_actions(table, version))
        except (OSError, ValueError):
            complete = False
            continue
        for kind, path in actions:
            _fold(state, kind, snapshot.location_of(table.path, path))
    if not complete:
        # The ``end`` side must be listed (a reader needs it); the ``start`` side
        # may be gone with the log, and then only an index's stale entries remain.
        seen = set(snapshot.build_snapshot(table, end).locations)
        if start is not None:
            with contextlib.suppress(LakesieveError):
                seen |= snapshot.build_snapshot(table, start).locations
        for loc in seen:
            if state.get(loc) not in ("added", "removed"):
                state[loc] = "rewritten"

    added = frozenset(loc for loc, kind in state.items() if kind == "added")
    removed = frozenset(loc for loc, kind in state.items() if kind == "removed")
    rewritten = frozenset(loc for loc, kind in state.items() if kind == "rewritten")
    if not forward:
        added, removed = removed, added
    return Changes(start=start, end=end, added=added, rewritten=rewritten, removed=removed)
