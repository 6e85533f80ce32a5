"""The completed instants of a Hudi table.

hudi-rs lists the completed data instants of the active timeline (commit,
deltacommit, replacecommit; requested, inflight and rolled-back ones never
appear) for table versions 6, 8 and 9. The plugin reads two things hudi-rs
does not expose straight from the timeline folder:

- completion times, which table version 8+ (timeline layout 2) writes into
  completed instant file names (``<requested>_<completed>.<action>`` under
  ``.hoodie/timeline/``); layout 1 (``.hoodie/<requested>.<action>``) has none;
- completed ``rollback`` and ``restore`` instants, whose Avro metadata names the
  files they deleted or appended to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hudi import HudiInstant, HudiTable
from lakesieve.plugins.hudi import storage
from lakesieve.plugins.hudi.tables import TableConfig
from lakesieve.sdk import Instant, InstantNotFoundError

#: Actions of completed instants that undo other instants.
UNDO_ACTIONS = ("rollback", "restore")

_COMPLETED_V2 = re.compile(r"^(\d+)_(\d+)\.([a-z_]+)$")
_COMPLETED_V1 = re.compile(r"^(\d+)\.([a-z_]+)$")


def completed_data_instants(table: HudiTable) -> list[HudiInstant]:
    """Completed commit, deltacommit and replacecommit instants, oldest first.

    Clustering commits (a replacecommit under another name in table version
    8+) are included. Duplicates (one instant reported by two listings) are
    dropped.
    """
    timeline = table.get_timeline()
    found: dict[str, HudiInstant] = {}
    for listing in (
        timeline.get_completed_commits(),
        timeline.get_completed_deltacommits(),
        timeline.get_completed_replacecommits(),
        timeline.get_completed_clustering_commits(),
    ):
        for inst in listing:
            found.setdefault(inst.timestamp, inst)
    return [found[ts] for ts in sorted(found)]


def to_instant(inst: HudiInstant) -> Instant:
    """The framework's :class:`~lakesieve.sdk.Instant` for a hudi-rs instant."""
    action = "replacecommit" if inst.action == "clustering" else inst.action
    return Instant(sort_key=inst.timestamp, id=inst.timestamp, action=action)


def resolve(
    instants: Sequence[HudiInstant], wanted: str | None, table_path: str
) -> HudiInstant | None:
    """Find the completed instant ``wanted`` (the latest when ``None``).

    Returns ``None`` only for ``wanted is None`` on a table without commits.

    Raises:
        InstantNotFoundError: ``wanted`` is not a completed instant of the
            table's active timeline.
    """
    if wanted is None:
        return instants[-1] if instants else None
    for inst in instants:
        if inst.timestamp == wanted:
            return inst
    known = ", ".join(i.timestamp for i in instants[-5:]) or "none"
    raise InstantNotFoundError(
        f"{wanted!r} is not a completed instant of Hudi table {table_path!r} "
        f"(latest completed: {known})"
    )


@dataclass(frozen=True)
class TimelineFiles:
    """What the plugin learns from listing the timeline folder itself.

    Attributes:
        completion_times: requested time -> completion time (layout 2 only).
        undo_files: ``(requested time, action, file path)`` of completed
            rollback and restore instants, oldest first.
        has_history: whether archived instants exist (``.hoodie/archived`` in
            layout 1, ``.hoodie/timeline/history`` in layout 2).
    """

    completion_times: dict[str, str] = field(default_factory=dict)
    undo_files: tuple[tuple[str, str, str], ...] = ()
    has_history: bool = False


def list_timeline_files(table_path: str, config: TableConfig) -> TimelineFiles:
    """List the timeline folder for completion times, undo instants and archives."""
    fs, root = storage.resolve(table_path)
    directory = storage.join(root, config.timeline_dir)
    completion: dict[str, str] = {}
    undo: list[tuple[str, str, str]] = []
    for name in storage.list_names(fs, directory):
        match2 = _COMPLETED_V2.match(name)
        if match2:
            requested, completed, action = match2.groups()
            completion[requested] = completed
        else:
            match1 = _COMPLETED_V1.match(name)
            if not match1:
                continue
            requested, action = match1.groups()
        if action in UNDO_ACTIONS:
            undo.append((requested, action, storage.join(directory, name)))
    history = storage.list_names(fs, storage.join(root, config.history_dir))
    return TimelineFiles(
        completion_times=completion if config.layout_version >= 2 else {},
        undo_files=tuple(sorted(undo)),
        has_history=bool(history),
    )
