"""The records of the index log, and how its actions replay.

The log (:mod:`lakesieve.store`) is a list of commits, each a list of
actions; replaying them from the first commit gives every index's
:class:`IndexDefinition` with its :class:`IndexState` s (base and delta
states, each naming its :class:`StoredFile` s). This module holds those
records, the names the log accepts, the checksum of a commit, and
:func:`apply_action`, which replays one action and refuses anything
malformed (a tampered or damaged commit is then counted as unreadable).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakesieve.errors import IndexCorruptError, IndexNotFoundError

#: The folder under the index root that holds the index data files.
DATA_DIR = "data"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class StoredFile:
    """One data file of an index state, as recorded in the log."""

    name: str
    path: str
    sha256: str
    size_bytes: int
    rows: int


@dataclass(frozen=True)
class IndexState:
    """One built state of an index, tied to one table instant.

    Attributes:
        index: the index name.
        state_id: unique id of this state.
        instant: the table instant id the state reflects.
        instant_sort_key: that instant's timeline sort key.
        files: the stored data files.
        meta: the index type's metadata.
        created_ms: when the state was committed.
        kind: ``"base"`` (a whole index built or compacted by the index type) or
            ``"delta"`` (the net ``(key, location, count)`` changes since ``parent``).
        parent: for a delta, the state it applies on top of.
        base: for a delta, the base state its chain starts from.
    """

    index: str
    state_id: str
    instant: str
    instant_sort_key: str
    files: tuple[StoredFile, ...]
    meta: dict[str, Any]
    created_ms: int
    kind: str = "base"
    parent: str | None = None
    base: str | None = None

    @property
    def is_delta(self) -> bool:
        """Whether this state is a delta on top of an earlier state."""
        return self.kind == "delta"

    @property
    def size_bytes(self) -> int:
        """Bytes of all data files of this state."""
        return sum(f.size_bytes for f in self.files)


@dataclass
class IndexDefinition:
    """An index declared on a table, with its states, oldest instant first.

    ``states`` holds one state per table instant (the newest committed for
    that instant wins); ``by_id`` holds every state not yet removed, including
    states a later one replaced at the same instant: delta states still point
    at them through ``parent``/``base``.
    """

    name: str
    type: str
    column: str
    key_type: str
    params: dict[str, Any]
    states: list[IndexState] = field(default_factory=list)
    by_id: dict[str, IndexState] = field(default_factory=dict)

    def chain(self, state: IndexState) -> list[IndexState]:
        """The base state and every delta up to ``state``, oldest first.

        Raises:
            IndexCorruptError: a state of the chain was removed or is not a delta chain.
        """
        out = [state]
        seen = {state.state_id}
        current = state
        while current.is_delta:
            parent = self.by_id.get(current.parent or "")
            if parent is None or parent.state_id in seen:
                raise IndexCorruptError(
                    f"index {self.name!r}: delta state {current.state_id} lost its parent {current.parent}"
                )
            seen.add(parent.state_id)
            out.append(parent)
            current = parent
        out.reverse()
        return out

    def latest(self) -> IndexState | None:
        """The state of the newest instant, if any."""
        return self.states[-1] if self.states else None

    def state_for(self, sort_key: str) -> IndexState | None:
        """The newest state at or before ``sort_key``; else the oldest state after it."""
        best: IndexState | None = None
        for state in self.states:
            if state.instant_sort_key <= sort_key:
                best = state
        if best is None and self.states:
            best = self.states[0]
        return best


@dataclass(frozen=True)
class LogProblem:
    """A commit of the log that could not be used.

    Attributes:
        version: the commit's number.
        reason: why (missing, not JSON, checksum mismatch, bad action...).
        indexes: the index names its actions mention, when they could be read.
    """

    version: int
    reason: str
    indexes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"index log commit {self.version} {self.reason}"


@dataclass
class LogSnapshot:
    """The replayed log: every index by name, and the version it was read at.

    ``problems`` is empty for a strict read; a lenient read stops at the first
    bad commit and lists it (and a missing newest commit) there.
    """

    version: int
    indexes: dict[str, IndexDefinition]
    table_fingerprint: str | None = None
    problems: list[LogProblem] = field(default_factory=list)


#: what marks a table fingerprint as the format's lifelong table identity
#: (``<format>:id:<id>``); older fingerprints (``<format>:<first instant>``)
#: change as a timeline is archived, so only identities are compared
TABLE_ID_MARK = ":id:"


def table_id_fingerprint(fmt: str, table_id: str) -> str:
    """The fingerprint a log records for a table whose format gives it an identity."""
    return f"{fmt}{TABLE_ID_MARK}{table_id}"


def is_table_id(fingerprint: str | None) -> bool:
    """Whether ``fingerprint`` is a table identity (comparable across the table's life)."""
    return fingerprint is not None and TABLE_ID_MARK in fingerprint


def check_name(name: str, what: str = "index name") -> str:
    """Return ``name`` if it is a plain name (no path separator, no leading dot).

    Raises:
        IndexNotFoundError: it is not.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name or ""):
        raise IndexNotFoundError(
            f"invalid {what} {name!r}: use letters, digits, '_', '-' or '.' (at most 128)"
        )
    return name


_check_name = check_name


def default_index_name(column: str, index_type: str) -> str:
    """``<column>_<type>`` with every character an index name cannot hold replaced by ``_``.

    Columns may be named anything (``Super Name``); index names are file names.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{column}_{index_type}")
    if not re.match(r"[A-Za-z0-9_]", name):
        name = "_" + name
    return name[:128]


def commit_checksum(body: dict[str, Any]) -> str:
    """SHA-256 of a commit's canonical JSON without its ``checksum`` field."""
    content = {k: v for k, v in body.items() if k != "checksum"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def clone_indexes(indexes: dict[str, IndexDefinition]) -> dict[str, IndexDefinition]:
    """A copy that applying actions may change without touching ``indexes``."""
    return {
        n: dataclasses.replace(d, states=list(d.states), by_id=dict(d.by_id))
        for n, d in indexes.items()
    }


def mentioned_indexes(body: Any) -> tuple[str, ...]:
    """The index names a parsed commit's actions mention (best effort)."""
    names: set[str] = set()
    actions = body.get("actions") if isinstance(body, dict) else None
    for action in actions if isinstance(actions, list) else []:
        if isinstance(action, dict) and isinstance(action.get("index"), str):
            names.add(action["index"])
    return tuple(sorted(names))


def add_state_action(
    index: str,
    state_id: str,
    instant_id: str,
    instant_sort_key: str,
    files: list[dict[str, Any]],
    meta: dict[str, Any],
    kind: str = "base",
    parent: str | None = None,
    base: str | None = None,
) -> dict[str, Any]:
    """The log action that records one new index state."""
    action: dict[str, Any] = {
        "op": "add_state",
        "index": index,
        "state_id": state_id,
        "instant": instant_id,
        "instant_sort_key": instant_sort_key,
        "files": files,
        "meta": meta,
        "created_ms": int(time.time() * 1000),
        "kind": kind,
    }
    if parent is not None:
        action["parent"] = parent
    if base is not None:
        action["base"] = base
    return action


def safe_data_path(rel: str) -> str:
    """``rel`` if it names a file under ``data/`` of the index root; raises otherwise."""
    parts = Path(rel).parts
    if (
        Path(rel).is_absolute()
        or ".." in parts
        or not parts
        or parts[0] != DATA_DIR
        or "\x00" in rel
    ):
        raise ValueError(f"file path {rel!r} escapes the index root")
    return rel


def apply_action(
    indexes: dict[str, IndexDefinition], action: dict[str, Any], fingerprint: str | None
) -> str | None:
    """Replay one log action onto ``indexes`` (changed in place); return the table fingerprint.

    Raises on anything malformed: the caller counts the commit as unreadable.
    """
    if not isinstance(action, dict):
        raise TypeError("an action is not an object")
    op = action["op"]
    if op == "reset":  # a repair on object storage: the state starts again here
        indexes.clear()
        return None
    if op == "table":
        recorded = str(action["fingerprint"])
        if is_table_id(recorded) and is_table_id(fingerprint) and recorded != fingerprint:
            indexes.clear()  # the store starts over for another table at the same path
        return recorded
    if op == "define":
        name = check_name(action["index"], "index name")
        indexes[name] = IndexDefinition(
            name=name,
            type=str(action["type"]),
            column=str(action["column"]),
            key_type=str(action["key_type"]),
            params=dict(action["params"]),
        )
    elif op == "add_state":
        name = check_name(action["index"], "index name")
        if name not in indexes:
            raise KeyError(f"state for undefined index {name!r}")
        files = tuple(
            StoredFile(
                name=check_name(f["name"], "index file name"),
                path=safe_data_path(str(f["path"])),
                sha256=str(f["sha256"]),
                size_bytes=int(f["size_bytes"]),
                rows=int(f["rows"]),
            )
            for f in action["files"]
        )
        state = IndexState(
            index=name,
            state_id=check_name(action["state_id"], "state id"),
            instant=str(action["instant"]),
            instant_sort_key=str(action["instant_sort_key"]),
            files=files,
            meta=dict(action["meta"]),
            created_ms=int(action["created_ms"]),
            kind=str(action.get("kind") or "base"),
            parent=(
                check_name(action["parent"], "parent state id") if action.get("parent") else None
            ),
            base=(check_name(action["base"], "base state id") if action.get("base") else None),
        )
        if state.kind not in ("base", "delta") or (state.kind == "delta" and not state.parent):
            raise ValueError(f"state {state.state_id} has kind {state.kind!r} without a parent")
        indexes[name].by_id[state.state_id] = state
        states = [s for s in indexes[name].states if s.instant_sort_key != state.instant_sort_key]
        states.append(state)
        states.sort(key=lambda s: s.instant_sort_key)
        indexes[name].states = states
    elif op == "remove_state":
        name = check_name(action["index"], "index name")
        state_id = check_name(action["state_id"], "state id")
        if name in indexes:
            indexes[name].states = [s for s in indexes[name].states if s.state_id != state_id]
            indexes[name].by_id.pop(state_id, None)
    elif op == "drop":
        indexes.pop(check_name(action["index"], "index name"), None)
    else:
        raise ValueError(f"unknown log action {op!r}")
    return fingerprint


def commit_bytes(actions: list[dict[str, Any]], version: int) -> bytes:
    """Commit ``version`` of ``actions`` as the log stores it, with its checksum."""
    body: dict[str, Any] = {
        "version": version,
        "timestamp_ms": int(time.time() * 1000),
        "actions": actions,
    }
    # the checksum covers what a reader will parse back, so compute it on the round trip
    body = json.loads(json.dumps(body, sort_keys=True))
    body["checksum"] = commit_checksum(body)
    return json.dumps(body, indent=1, sort_keys=True).encode("utf-8")
