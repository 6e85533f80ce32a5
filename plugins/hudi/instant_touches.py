"""What one completed instant did to a table's file groups, from its metadata.

Commit, deltacommit and replacecommit metadata (JSON in table version 6,
Avro in 8+; hudi-rs decodes both) lists per partition the files written
(``partitionToWriteStats``: ``fileId``, ``path``, ``prevCommit``,
``numWrites``...) and, for a replacecommit, the file groups replaced
(``partitionToReplaceFileIds``). Rollback and restore metadata (Avro, decoded
by :mod:`lakesieve.plugins.hudi.avro_container`) names the files a rollback
deleted or appended a rollback block to.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi import HudiInstant, HudiTable
from lakesieve.plugins.hudi.partitions import location_of
from lakesieve.plugins.hudi.writer.log_block import is_log_file

_CACHE_SIZE = 512
_cache: OrderedDict[tuple[str, str, str], dict[str, Any]] = OrderedDict()
_cache_lock = threading.Lock()

#: ``prevCommit`` values that mean "this write created the file group".
_NO_PREVIOUS = {"", "null", "none"}

#: Operations that carry rows into other file groups, keeping their commit time.
_MOVING_OPERATIONS = {"CLUSTER", "INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "DELETE_PARTITION"}


def load_metadata(table: HudiTable, inst: HudiInstant) -> dict[str, Any]:
    """The decoded metadata of a completed instant (cached: it never changes).

    Raises:
        Exception: whatever hudi-rs or the JSON decoder raise for unreadable metadata.
    """
    key = (table.base_url, inst.timestamp, inst.action)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    raw = table.get_timeline().get_instant_metadata_in_json(inst)
    meta = json.loads(raw)
    if not isinstance(meta, dict):
        raise ValueError(f"metadata of instant {inst.timestamp} is not an object")
    with _cache_lock:
        _cache[key] = meta
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return meta


@dataclass
class Touches:
    """Locations one instant added, rewrote or removed.

    ``in_place`` holds the rewritten locations whose every write stat says
    records were only updated: ``numInserts`` and ``numDeletes`` both
    recorded as 0, so the set of record keys there did not change.
    ``kept_keys`` holds the added and rewritten locations whose every write
    stat records ``numDeletes`` as 0: no record key left them. ``moves_rows``
    is set for an instant that replaces file groups (clustering, insert
    overwrite), which carries rows to new locations with their old
    ``_hoodie_commit_time``.

    ``images`` maps each added or rewritten location whose every write stat
    names change data files (``cdcStats``) to those files (relative to the
    table root) and the change records they must hold (``numUpdateWrites +
    numInserts + numDeletes``); ``operation`` is the instant's
    ``operationType``, upper case. ``logged`` holds the added and rewritten
    locations whose every write stat wrote a log file (a delta commit's
    append): their base file, if any, is older than the instant.
    ``written`` maps each added or rewritten location whose every write stat
    records ``numUpdateWrites`` and ``numInserts`` to their sum: the rows
    the instant wrote there.
    """

    added: set[str] = field(default_factory=set)
    rewritten: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    in_place: set[str] = field(default_factory=set)
    kept_keys: set[str] = field(default_factory=set)
    moves_rows: bool = False
    images: dict[str, tuple[tuple[str, ...], int]] = field(default_factory=dict)
    operation: str = ""
    logged: set[str] = field(default_factory=set)
    written: dict[str, int] = field(default_factory=dict)


def _count(stat: Mapping[str, Any], name: str) -> int | None:
    value = stat.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _change_files(stat: Mapping[str, Any]) -> tuple[tuple[str, ...], int] | None:
    """The change data files one write stat names and the records they hold, if complete."""
    cdc = stat.get("cdcStats")
    if not isinstance(cdc, Mapping) or not cdc:
        return None
    counts = [_count(stat, n) for n in ("numUpdateWrites", "numInserts", "numDeletes")]
    if any(c is None for c in counts):
        return None
    files = tuple(sorted(str(p).lstrip("/") for p in cdc))
    if any(not f for f in files):
        return None
    return files, sum(c or 0 for c in counts)


def _zero(value: Any) -> bool:
    """Whether a write stat field is recorded as the integer 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _keys_unchanged(stat: Mapping[str, Any]) -> bool:
    """Whether a write stat records updates only (no insert, no delete)."""
    inserts, deletes = stat.get("numInserts"), stat.get("numDeletes")
    return (
        isinstance(inserts, int)
        and isinstance(deletes, int)
        and not isinstance(inserts, bool)
        and inserts == 0
        and deletes == 0
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _write_stats(meta: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for partition, stats in _mapping(meta.get("partitionToWriteStats")).items():
        for stat in stats or []:
            if isinstance(stat, Mapping):
                yield str(partition or ""), stat


def touches_of_commit(meta: Mapping[str, Any]) -> Touches:
    """Classify the file groups a commit, deltacommit or replacecommit touched.

    A write stat whose ``prevCommit`` is empty or ``"null"`` created its file
    group (added); any other write (a new base file version, a log append, a
    compaction) rewrote it. Table version 8 records a log append to an
    existing file group with ``prevCommit`` equal to the instant itself, so a
    new log-only file group there counts as rewritten: still touched, which
    is what correctness needs. Replaced file groups are removed.

    Raises:
        ValueError: a write stat names no file group.
    """
    out = Touches()
    changed_keys: set[str] = set()
    lost_keys: set[str] = set()
    imaged: dict[str, tuple[tuple[str, ...], int]] = {}
    unimaged: set[str] = set()
    unlogged: set[str] = set()
    written: dict[str, int] = {}
    unwritten: set[str] = set()
    for partition, stat in _write_stats(meta):
        file_id = stat.get("fileId")
        if not file_id:
            raise ValueError("write stat without fileId")
        part = str(stat.get("partitionPath") or partition)
        loc = location_of(part, str(file_id))
        prev = str(stat.get("prevCommit") or "").strip().lower()
        (out.added if prev in _NO_PREVIOUS else out.rewritten).add(loc)
        if not _keys_unchanged(stat):
            changed_keys.add(loc)
        if not _zero(stat.get("numDeletes")):
            lost_keys.add(loc)
        if not is_log_file(str(stat.get("path") or "")):
            unlogged.add(loc)
        updates, inserts = _count(stat, "numUpdateWrites"), _count(stat, "numInserts")
        if updates is None or inserts is None:
            unwritten.add(loc)
        else:
            written[loc] = written.get(loc, 0) + updates + inserts
        change = _change_files(stat)
        if change is None:
            unimaged.add(loc)
        else:
            files, records = imaged.get(loc, ((), 0))
            imaged[loc] = (files + change[0], records + change[1])
    for partition, file_ids in _mapping(meta.get("partitionToReplaceFileIds")).items():
        for file_id in file_ids or []:
            out.removed.add(location_of(str(partition or ""), str(file_id)))
    out.rewritten -= out.added
    out.in_place = out.rewritten - changed_keys - out.removed
    out.kept_keys = (out.added | out.rewritten) - lost_keys - out.removed
    operation = str(meta.get("operationType") or "").upper()
    out.moves_rows = bool(out.removed) or operation in _MOVING_OPERATIONS
    out.operation = operation
    out.logged = (out.added | out.rewritten) - unlogged - out.removed
    out.images = {
        loc: change
        for loc, change in imaged.items()
        if loc not in unimaged and loc not in out.removed
    }
    out.written = {
        loc: n for loc, n in written.items() if loc not in unwritten and loc not in out.removed
    }
    return out


def base_file_record_counts(meta: Mapping[str, Any]) -> dict[str, int]:
    """Rows written per base file name (``numWrites`` of its write stat)."""
    counts: dict[str, int] = {}
    for _, stat in _write_stats(meta):
        name = str(stat.get("path") or "").rsplit("/", 1)[-1]
        writes = stat.get("numWrites")
        if name and not name.startswith(".") and isinstance(writes, int):
            counts[name] = writes
    return counts


def file_id_of(file_name: str) -> str:
    """The file group id in a base or log file name.

    Base files are named ``<id>_<write token>_<instant>.<ext>``, log files
    ``.<id>_<instant>.log.<version>_<write token>``.
    """
    return file_name.lstrip(".").split("_", 1)[0]


def _undo_sections(node: Any) -> Iterable[Mapping[str, Any]]:
    """Every rollback ``partitionMetadata`` map, however deeply nested (restores nest them)."""
    if isinstance(node, Mapping):
        if isinstance(node.get("partitionMetadata"), Mapping):
            yield node["partitionMetadata"]
        for value in node.values():
            yield from _undo_sections(value)
    elif isinstance(node, list):
        for item in node:
            yield from _undo_sections(item)


def touches_of_undo(decoded: Any) -> set[str]:
    """Locations whose files a rollback or restore deleted or appended to."""
    out: set[str] = set()
    for section in _undo_sections(decoded):
        for partition, pmeta in section.items():
            if not isinstance(pmeta, Mapping):
                continue
            part = str(pmeta.get("partitionPath") or partition or "")
            names: list[str] = []
            for key in ("successDeleteFiles", "failedDeleteFiles"):
                names.extend(str(n) for n in pmeta.get(key) or [])
            for key in ("rollbackLogFiles", "logFilesFromFailedCommit", "writtenLogFiles"):
                names.extend(str(n) for n in _mapping(pmeta.get(key)))
            for name in names:
                base = name.rstrip("/").rsplit("/", 1)[-1]
                if base:
                    out.add(location_of(part, file_id_of(base)))
    return out
