"""Checking and repair of a table's index store.

- :func:`check_store` verifies every commit, and every data file of every
  live state, base and delta (checksum and Arrow decoding), and reports per
  index (``lakesieve index check``); it changes nothing and needs no Spark.
  What ``lakesieve index list`` shows is :mod:`lakesieve.maintenance.index_health`.
- :func:`repair` (``lakesieve index repair``) makes a damaged store usable
  again. A damaged log is moved aside to ``_log.damaged-<time>`` inside the
  index root (kept for inspection) and replaced by one commit holding every
  state that came from an intact commit, whose data files still verify and
  whose delta chain is whole. States that fail are dropped; an index left
  without a state is dropped, or rebuilt at the table's latest instant with
  ``rebuild=True`` (a Spark job). On an intact log only the failing states are
  removed, with one ordinary commit.

Repair must not race other writers of the same index root: it holds the
root's writers' lock exclusively (:mod:`lakesieve.store.lock`) and refuses to
start while a build, refresh, compact, drop or vacuum holds it. The log swap
is safe against a kill at any step (:mod:`lakesieve.store.log_swap`); a ``_log`` an
interrupted repair left missing is put back first, and the ``_log.repair-*``
folders of interrupted repairs are removed.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakesieve.errors import IndexCorruptError, IndexNotFoundError, LakesieveError
from lakesieve.maintenance.index_build import build_state
from lakesieve.maintenance.index_health import FileVerifier, drop_broken_states, salvage
from lakesieve.maintenance.refresh import RefreshResult
from lakesieve.model import Instant
from lakesieve.spark.session import get_spark
from lakesieve.store import IndexStore
from lakesieve.store.errors import write_error
from lakesieve.store.folders import state_folders
from lakesieve.store.index_log import IndexDefinition, IndexState, LogProblem, add_state_action
from lakesieve.store.log_swap import (
    DAMAGED_PREFIX,
    REPAIR_PREFIX,
    marker_id,
    repair_folders,
    restore,
    write_marker,
)
from lakesieve.store.object_index import ObjectIndexStore

if TYPE_CHECKING:
    from lakesieve.state.table_indexes import IndexedTable, TableIndexes
    from pyspark.sql import SparkSession


def _links_under(root: str) -> list[str]:
    """Symbolic links anywhere below ``root`` (never followed)."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out.append(path)
    return sorted(out)


def _check_index(verifier: FileVerifier, definition: IndexDefinition) -> dict[str, Any]:
    """One index's line of the check report: its live states verified, and those that fail."""
    before = (verifier.files, verifier.bytes)
    bad = []
    for state in definition.by_id.values():
        problem = verifier.chain(definition, state)
        if problem is not None:
            bad.append(
                {
                    "index": definition.name,
                    "state_id": state.state_id,
                    "instant": state.instant,
                    "kind": state.kind,
                    "problem": problem,
                }
            )
    return {
        "name": definition.name,
        "ok": not bad,
        "states": len(definition.by_id),
        "files": verifier.files - before[0],
        "bytes": verifier.bytes - before[1],
        "bad_states": bad,
    }


def check_store(table: IndexedTable, index: str | None = None) -> dict[str, Any]:
    """Verify every commit's checksum and every live state's data files; a report. Changes nothing.

    Every file of every live state (bases and deltas) is read, hashed and
    decoded once. The report's ``ok`` is ``False`` when a commit is missing
    or bad, a state fails, or a symbolic link sits below the index root;
    ``indexes`` holds one entry per index. Unreferenced state folders are
    listed (vacuum removes them) but are no problem.

    Args:
        index: verify only this index's states (the log and links are still checked).

    Raises:
        IndexNotFoundError: no index of that name in the intact commits.
    """
    store = table.store
    indexes, _, skipped = salvage(store)
    if index is not None:
        if index not in indexes and not any(index in p.indexes for p in skipped):
            names = ", ".join(sorted(indexes)) or "none"
            raise IndexNotFoundError(
                f"table {table.path} has no index {index!r} (indexes: {names})"
            )
        skipped = [p for p in skipped if index in p.indexes or not p.indexes]
    verifier = FileVerifier(store, checksum=True, decode=True)
    per_index = [
        _check_index(verifier, d) for d in indexes.values() if index is None or d.name == index
    ]
    for problem in skipped:  # an index only a bad commit mentions
        for name in problem.indexes:
            if (
                name not in indexes
                and (index is None or name == index)
                and not any(r["name"] == name for r in per_index)
            ):
                per_index.append(
                    {
                        "name": name,
                        "ok": False,
                        "states": 0,
                        "files": 0,
                        "bytes": 0,
                        "bad_states": [],
                        "problem": str(problem),
                    }
                )
    for row in per_index:
        named = [p for p in skipped if row["name"] in p.indexes]
        if named and row["ok"]:
            row["ok"], row["problem"] = False, str(named[0])
    bad_states = [b for row in per_index for b in row["bad_states"]]
    links = _links_under(str(store.root)) if not store.remote and store.root.is_dir() else []
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
        "states": sum(row["states"] for row in per_index),
        "files": verifier.files,
        "bytes": verifier.bytes,
        "indexes": per_index,
        "bad_states": bad_states,
        "symlinks": links,
        "unreferenced_folders": unreferenced,
    }


# ------------------------------------------------------------------ repair


@dataclass
class RepairResult:
    """What :func:`repair` did."""

    damaged_log_moved_to: str | None = None
    log_put_back_from: str | None = None
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
            or self.log_put_back_from
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
    verifier = FileVerifier(store, checksum=True, decode=True)
    for definition in indexes.values():
        kept = []
        for state in definition.by_id.values():
            problem = verifier.chain(definition, state)
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


def repair(
    table: IndexedTable, rebuild: bool = False, spark: SparkSession | None = None
) -> RepairResult:
    """Make the index store of ``table`` usable again; see the module docstring.

    Args:
        rebuild: rebuild (a Spark job) every index that lost its newest state,
            instead of keeping its older states only or dropping it.
        spark: the session for rebuilds (the shared one by default).

    Raises:
        IndexCorruptError: the root's ``_log`` or ``data`` folder is a symbolic link.
        StoreBusyError: another process is writing to the store.
        StoreWriteError: the index root cannot be written.
    """
    store = table.store
    store.check_layout()
    with store.writing(exclusive=True):
        if store.remote:  # nothing to put back or clear: an object store renames nothing
            return _repair_locked(table, store, rebuild, spark)
        put_back = restore(store.root, store.log_dir)
        result = _repair_locked(table, store, rebuild, spark)
        result.log_put_back_from = put_back
        for folder in repair_folders(store.root):
            store.remove_tree(folder)
    return result


def _repair_locked(
    table: IndexedTable, store: IndexStore, rebuild: bool, spark: SparkSession | None
) -> RepairResult:
    """:func:`repair` once the store is locked and its log folder in place."""
    result = RepairResult()
    strict_ok = True
    skipped: list[LogProblem] = []
    try:
        snap = store.read_log()
        indexes, fingerprint = snap.indexes, snap.table_fingerprint
    except IndexCorruptError:
        strict_ok = False
        indexes, fingerprint, skipped = salvage(store)
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
        if isinstance(store, ObjectIndexStore):
            version = store.reset_log(acts)
            result.damaged_log_moved_to = f"{store.log_dir} (commits before {version}, unread)"
        else:
            result.damaged_log_moved_to = _replace_log(store, acts)
    lost = {n for p in skipped for n in p.indexes if n not in indexes} if not strict_ok else set()
    result.indexes_dropped = sorted(set(empty) | lost)
    for name in to_rebuild:
        _rebuild(table, indexes[name], spark)
        result.indexes_rebuilt.append(name)
    return result


def _replace_log(store: IndexStore, actions: list[dict[str, Any]]) -> str:
    """Write ``actions`` as commit 0 of a fresh log and swap it for the old log; the old log's new path.

    The steps are those of :mod:`lakesieve.store.log_swap`: a kill between any two
    leaves a store that the next opening of the log (or the next repair) settles.

    Raises:
        StoreWriteError: the index root cannot be written.
    """
    repair_id = uuid.uuid4().hex[:12]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = store.root / f"{DAMAGED_PREFIX}{stamp}-{repair_id[:6]}"
    fresh = IndexStore(store.root)
    fresh.log_dir = store.root / f"{REPAIR_PREFIX}{repair_id}"
    try:
        fresh.commit(actions, -1)
        write_marker(fresh.log_dir, repair_id, aside.name)
        if store.log_dir.exists():
            os.rename(store.log_dir, aside)
    except LakesieveError:
        store.remove_tree(fresh.log_dir)  # the old log is still in place
        raise
    except OSError as exc:
        store.remove_tree(fresh.log_dir)
        raise write_error(exc, store.root) from None
    try:
        os.rename(fresh.log_dir, store.log_dir)
    except OSError as exc:
        if marker_id(store.log_dir) != repair_id:  # a reader may have finished the swap
            raise write_error(exc, store.log_dir) from None
    return str(aside)


def _rebuild(table: IndexedTable, definition: IndexDefinition, spark: SparkSession | None) -> None:
    """Build ``definition`` afresh at the table's latest instant and commit it as its newest state."""
    line = table.timeline()
    if not line:
        raise LakesieveError(
            f"table {table.path} has no completed instant to rebuild index {definition.name!r} at"
        )
    rebuild_at(table.states, definition, line[-1], spark or get_spark())


def rebuild_at(
    indexes: TableIndexes, definition: IndexDefinition, target: Instant, spark: SparkSession
) -> list[str]:
    """Build ``definition`` afresh at ``target`` (a Spark job), commit it, then drop its broken states.

    Returns what :func:`~lakesieve.maintenance.index_health.drop_broken_states` removed.
    """
    built = build_state(indexes, definition, target, spark)
    state_id, records = indexes.store.write_files(definition.name, built)

    def actions(snap: Any) -> list[dict[str, Any]]:
        out = [] if definition.name in snap.indexes else [_define_action(definition)]
        out.append(
            add_state_action(
                definition.name, state_id, target.id, target.sort_key, records, built.meta
            )
        )
        return out

    indexes.store.commit_with_retry(actions)
    return drop_broken_states(indexes, definition.name)


def refresh_broken(
    indexes: TableIndexes,
    definition: IndexDefinition,
    target: Instant,
    spark: SparkSession,
    problem: str,
) -> RefreshResult:
    """What ``refresh`` does to an index whose newest state fails to verify: rebuild it at ``target``.

    A delta cannot be stacked on a state that does not read back, so the
    index is built afresh (like a Hudi metadata table that cannot be synced
    is bootstrapped again), its failing states are removed, and the result
    says so (action ``rebuilt``, the problem in ``note``).
    """
    started = time.perf_counter()
    head = definition.latest()
    removed = rebuild_at(indexes, definition, target, spark)
    return RefreshResult(
        definition.name,
        "rebuilt",
        head.instant if head else None,
        target.id,
        seconds=time.perf_counter() - started,
        note=f"was broken ({problem}); {len(removed)} broken state(s) removed",
        engine="spark",
    )
