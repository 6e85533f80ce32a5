"""Health, checking and repair of a table's index store.

- :func:`index_health` is what ``lakesieve index list`` shows per index:
  ``ok``, ``stale`` (older than the table's latest instant), ``corrupt data
  file`` (a file of its newest state is missing or fails its checksum),
  ``unreadable log entry`` (a commit naming it, or one that names nothing
  readable, is missing, damaged or edited) or ``never built``.
- :func:`check_store` verifies every commit and every data file of every
  state (``lakesieve index check``).
- :func:`repair` (``lakesieve index repair``) makes a damaged store usable
  again. A damaged log is moved aside to ``_log.damaged-<time>`` inside the
  index root (kept for inspection) and replaced by one commit holding every
  state that came from an intact commit, whose data files still verify and
  whose delta chain is whole. States that fail are dropped; an index left
  without a state is dropped, or rebuilt at the table's latest instant with
  ``rebuild=True`` (a Spark job). On an intact log only the failing states are
  removed, with one ordinary commit.

Repair must not race other writers of the same index root: run it while no
build, refresh or vacuum runs on the table.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakesieve.errors import IndexCorruptError, LakesieveError
from lakesieve.index_build import build_state
from lakesieve.index_log import IndexDefinition, IndexState, LogProblem, add_state_action
from lakesieve.session import get_spark
from lakesieve.store import DAMAGED_PREFIX, IndexStore, state_folders

if TYPE_CHECKING:
    from lakesieve.table import Table
    from pyspark.sql import SparkSession

OK = "ok"
STALE = "stale"
CORRUPT_FILE = "corrupt data file"
BAD_LOG = "unreadable log entry"
NEVER_BUILT = "never built"


@dataclass
class IndexHealth:
    """One row of ``lakesieve index list``."""

    name: str
    type: str | None
    column: str | None
    instant: str | None
    states: int
    size_bytes: int
    health: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def _state_problem(store: IndexStore, definition: IndexDefinition, state: IndexState) -> str | None:
    """Why ``state`` cannot be used (its chain broken or a file failing), or ``None``."""
    try:
        chain = definition.chain(state)
    except LakesieveError as exc:
        return str(exc)
    for link in chain:
        for f in link.files:
            try:
                store.read_bytes(f)
            except IndexCorruptError as exc:
                return str(exc)
    return None


def _latest_sort_key(table: Table) -> str | None:
    try:
        line = table.timeline()
    except LakesieveError:
        return None
    return line[-1].sort_key if line else None


def index_health(table: Table) -> tuple[list[IndexHealth], list[LogProblem]]:
    """The health of every index of ``table``, and the problems of its log."""
    store = table.store
    snap = store.read_log(strict=False)
    indexes = _salvage(store)[0] if snap.problems else snap.indexes  # what intact commits still say
    latest_key = _latest_sort_key(table)
    rows: list[IndexHealth] = []
    for definition in indexes.values():
        head = definition.latest()
        row = IndexHealth(
            definition.name,
            definition.type,
            definition.column,
            head.instant if head else None,
            len(definition.states),
            head.size_bytes if head else 0,
            OK,
        )
        rows.append(row)
        if snap.problems:  # queries use only the commits before the first bad one
            row.health, row.detail = (
                BAD_LOG,
                f"{snap.problems[0]}; queries use the states committed before it",
            )
        elif head is None:
            row.health = NEVER_BUILT
        elif (problem := _state_problem(store, definition, head)) is not None:
            row.health, row.detail = CORRUPT_FILE, problem
        elif latest_key is not None and head.instant_sort_key < latest_key:
            row.health, row.detail = (
                STALE,
                "older than the table's latest instant; `lakesieve index refresh`",
            )
    known = {r.name for r in rows}
    for log_problem in snap.problems:
        for name in log_problem.indexes:
            if name not in known:
                known.add(name)
                rows.append(IndexHealth(name, None, None, None, 0, 0, BAD_LOG, str(log_problem)))
    return rows, snap.problems


# ------------------------------------------------------------------ check


def _salvage(store: IndexStore) -> tuple[dict[str, IndexDefinition], str | None, list[LogProblem]]:
    """Replay every intact commit, skipping the bad ones; the indexes, fingerprint and what was skipped."""
    indexes: dict[str, IndexDefinition] = {}
    fingerprint: str | None = None
    skipped: list[LogProblem] = []
    versions = store.versions()
    expected = 0
    for v in versions:
        skipped.extend(LogProblem(m, "is missing") for m in range(expected, v))
        expected = v + 1
        try:
            indexes, fingerprint = store.apply_commit(indexes, store.load_commit(v), fingerprint)
        except IndexCorruptError as exc:
            skipped.append(store.problem(v, exc))
    last = versions[-1] if versions else -1
    head = store.head_hint()
    if head > last:
        skipped.append(
            LogProblem(last + 1, f"is missing (commit {head} was written; the log ends at {last})")
        )
    return indexes, fingerprint, skipped


def _links_under(root: str) -> list[str]:
    """Symbolic links anywhere below ``root`` (never followed)."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out.append(path)
    return sorted(out)


def check_store(table: Table) -> dict[str, Any]:
    """Verify every commit's checksum and every state's data files; a report.

    The report's ``ok`` is ``False`` when a commit is missing or bad, a state
    of the log fails, or a symbolic link sits below the index root.
    Unreferenced state folders are listed (vacuum removes them) but are no
    problem.
    """
    store = table.store
    indexes, _, skipped = _salvage(store)
    bad_states = []
    states = 0
    for definition in indexes.values():
        for state in definition.by_id.values():
            states += 1
            problem = _state_problem(store, definition, state)
            if problem is not None:
                bad_states.append(
                    {
                        "index": definition.name,
                        "state_id": state.state_id,
                        "instant": state.instant,
                        "problem": problem,
                    }
                )
    links = _links_under(str(store.root)) if store.root.is_dir() else []
    referenced = {(d.name, s) for d in indexes.values() for s in d.by_id}
    try:
        unreferenced = [f"{i}/{s}" for i, s, _ in state_folders(store) if (i, s) not in referenced]
    except IndexCorruptError:
        unreferenced = []
    return {
        "root": str(store.root),
        "ok": not skipped and not bad_states and not links,
        "commits": len(store.versions()),
        "bad_commits": [{"version": p.version, "problem": p.reason} for p in skipped],
        "states": states,
        "bad_states": bad_states,
        "symlinks": links,
        "unreferenced_folders": unreferenced,
    }


# ------------------------------------------------------------------ repair


@dataclass
class RepairResult:
    """What :func:`repair` did."""

    damaged_log_moved_to: str | None = None
    commits_skipped: list[str] = field(default_factory=list)
    states_kept: int = 0
    states_dropped: list[str] = field(default_factory=list)
    indexes_dropped: list[str] = field(default_factory=list)
    indexes_rebuilt: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the store was changed at all."""
        return bool(
            self.damaged_log_moved_to
            or self.states_dropped
            or self.indexes_dropped
            or self.indexes_rebuilt
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def _state_action(state: IndexState) -> dict[str, Any]:
    """The ``add_state`` action that re-creates ``state`` as it was."""
    action = add_state_action(
        state.index,
        state.state_id,
        state.instant,
        state.instant_sort_key,
        [asdict(f) for f in state.files],
        dict(state.meta),
        kind=state.kind,
        parent=state.parent,
        base=state.base,
    )
    action["created_ms"] = state.created_ms
    return action


def _sort_good_states(
    store: IndexStore, indexes: dict[str, IndexDefinition], result: RepairResult
) -> dict[str, list[IndexState]]:
    """Per index, the states that verify (commit order); the others go to ``result``."""
    good: dict[str, list[IndexState]] = {}
    for definition in indexes.values():
        kept = []
        for state in definition.by_id.values():
            problem = _state_problem(store, definition, state)
            if problem is None:
                kept.append(state)
            else:
                result.states_dropped.append(
                    f"{definition.name}/{state.state_id} @ {state.instant}: {problem}"
                )
        good[definition.name] = kept
        result.states_kept += len(kept)
    return good


def _define_action(definition: IndexDefinition) -> dict[str, Any]:
    return {
        "op": "define",
        "index": definition.name,
        "type": definition.type,
        "column": definition.column,
        "key_type": definition.key_type,
        "params": definition.params,
    }


def repair(table: Table, rebuild: bool = False, spark: SparkSession | None = None) -> RepairResult:
    """Make the index store of ``table`` usable again; see the module docstring.

    Args:
        rebuild: rebuild (a Spark job) every index that lost its newest state,
            instead of keeping its older states only or dropping it.
        spark: the session for rebuilds (the shared one by default).

    Raises:
        IndexCorruptError: the root's ``_log`` or ``data`` folder is a symbolic link.
    """
    store = table.store
    store.check_layout()
    result = RepairResult()
    strict_ok = True
    skipped: list[LogProblem] = []
    try:
        snap = store.read_log()
        indexes, fingerprint = snap.indexes, snap.table_fingerprint
    except IndexCorruptError:
        strict_ok = False
        indexes, fingerprint, skipped = _salvage(store)
        result.commits_skipped = [str(p) for p in skipped]
    good = _sort_good_states(store, indexes, result)
    lost_head = {
        d.name
        for d in indexes.values()
        if (head := d.latest()) is not None
        and head.state_id not in {s.state_id for s in good[d.name]}
    }
    to_rebuild = sorted(lost_head) if rebuild else []
    empty = sorted(n for n, states in good.items() if not states and n not in to_rebuild)
    if strict_ok:
        acts: list[dict[str, Any]] = []
        for definition in indexes.values():
            kept = {s.state_id for s in good[definition.name]}
            acts.extend(
                {"op": "remove_state", "index": definition.name, "state_id": s}
                for s in definition.by_id
                if s not in kept
            )
        acts.extend({"op": "drop", "index": n} for n in empty)
        if acts:
            store.commit(acts, snap.version)
    else:
        acts = [{"op": "table", "fingerprint": fingerprint}] if fingerprint else []
        for definition in indexes.values():
            if definition.name in empty:
                continue
            acts.append(_define_action(definition))
            acts.extend(_state_action(s) for s in good[definition.name])
        result.damaged_log_moved_to = _replace_log(store, acts)
    lost = {n for p in skipped for n in p.indexes if n not in indexes} if not strict_ok else set()
    result.indexes_dropped = sorted(set(empty) | lost)
    for name in to_rebuild:
        _rebuild(table, indexes[name], spark)
        result.indexes_rebuilt.append(name)
    return result


def _replace_log(store: IndexStore, actions: list[dict[str, Any]]) -> str:
    """Write ``actions`` as commit 0 of a fresh log and move the old log aside; the old log's new path."""
    fresh = IndexStore(store.root)
    fresh.log_dir = store.root / f"_log.repair-{uuid.uuid4().hex[:12]}"
    fresh.commit(actions, -1)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = store.root / f"{DAMAGED_PREFIX}{stamp}-{uuid.uuid4().hex[:6]}"
    if store.log_dir.exists():
        os.rename(store.log_dir, aside)
    os.rename(fresh.log_dir, store.log_dir)
    return str(aside)


def _rebuild(table: Table, definition: IndexDefinition, spark: SparkSession | None) -> None:
    """Build ``definition`` afresh at the table's latest instant and commit it as its newest state."""
    line = table.timeline()
    if not line:
        raise LakesieveError(
            f"table {table.path} has no completed instant to rebuild index {definition.name!r} at"
        )
    target = line[-1]
    built = build_state(table.states, definition, target, spark or get_spark())
    state_id, records = table.store.write_files(definition.name, built)

    def actions(snap: Any) -> list[dict[str, Any]]:
        out = [] if definition.name in snap.indexes else [_define_action(definition)]
        out.append(
            add_state_action(
                definition.name, state_id, target.id, target.sort_key, records, built.meta
            )
        )
        return out

    table.store.commit_with_retry(actions)
