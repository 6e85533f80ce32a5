"""The health of a table's indexes: what ``lakesieve index list`` shows, and what build and refresh repair.

Each index gets one health value:

* ``ok``: its newest state and every delta under it verify, and it is at
  the table's latest instant;
* ``stale``: it verifies but is behind the table (``lakesieve index refresh``
  catches it up; queries stay exact meanwhile and read the changed
  locations);
* ``corrupt data file``: a file of its newest state, or of a state that
  state builds on (base and deltas), is missing, truncated, fails its
  SHA-256 or does not decode;
* ``not on timeline``: its newest state's instant is not on the table's
  timeline (archived, or the index was copied from another table);
* ``unreadable log entry``: a commit of the index log is missing or damaged
  (``lakesieve index repair``);
* ``never built``.

Queries decide the same way (:mod:`lakesieve.state.table_indexes`): an index listed
as corrupt or not on the timeline is one a query reads without, with a
warning. The size shown is what a query loads: the base plus every live
delta of the newest state.

Listing stays cheap: it never starts Spark, checks every file's size with
``stat`` and hashes the files only while the table's total stays within
:data:`LIST_CHECKSUM_BYTES`; beyond that a row says its checksums were not
verified and ``lakesieve index check`` verifies them. Build and refresh
verify every checksum of the newest state's chain and rebuild a broken index
(:func:`broken_head`, :func:`drop_broken_states`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from lakesieve.errors import IndexCorruptError, LakesieveError
from lakesieve.state.table_indexes import off_timeline
from lakesieve.store import IndexStore
from lakesieve.store.index_log import IndexDefinition, IndexState, LogProblem, StoredFile

if TYPE_CHECKING:
    from lakesieve.state.table_indexes import IndexedTable, TableIndexes

OK = "ok"
STALE = "stale"
CORRUPT_FILE = "corrupt data file"
OFF_TIMELINE = "not on timeline"
BAD_LOG = "unreadable log entry"
NEVER_BUILT = "never built"

#: How many bytes of index files ``lakesieve index list`` hashes per table;
#: larger indexes get the cheap size check only. Hashing ran at about
#: 180 MiB/s on one core of a loaded machine (BENCHMARKS.md, "Index health"),
#: so the budget keeps a listing near a third of a second. SHA-256 runs at roughly
#: 0.2-1 GB/s on one core, so this keeps a listing well under a second.
LIST_CHECKSUM_BYTES = 64 * 1024 * 1024

CHECKSUMS = "checksums"
SIZES = "sizes only"


class FileVerifier:
    """Verifies index data files, each file once however many chains share it.

    Args:
        store: the index store the files belong to.
        checksum: hash every file (else only its size and kind are checked).
        decode: also open every file as Arrow IPC.
    """

    def __init__(self, store: IndexStore, checksum: bool = True, decode: bool = False) -> None:
        self.store = store
        self.checksum = checksum
        self.decode = decode
        self.files = 0
        self.bytes = 0
        self._seen: dict[tuple[str, str, int], str | None] = {}

    def file(self, f: StoredFile) -> str | None:
        """Why ``f`` cannot be used, or ``None``."""
        key = (f.path, f.sha256, f.size_bytes)
        if key not in self._seen:
            self._seen[key] = self.store.file_problem(f, self.checksum, self.decode)
            self.files += 1
            self.bytes += f.size_bytes
        return self._seen[key]

    def chain(self, definition: IndexDefinition, state: IndexState) -> str | None:
        """Why ``state`` cannot be used (its chain broken, or one of its files failing), or ``None``."""
        try:
            links = definition.chain(state)
        except LakesieveError as exc:
            return str(exc)
        for link in links:
            for f in link.files:
                problem = self.file(f)
                if problem is not None:
                    return problem
        return None


def chain_bytes(definition: IndexDefinition, state: IndexState) -> tuple[int, int, int]:
    """Bytes of the base under ``state``, bytes of its deltas, and how many deltas (what a query loads)."""
    try:
        links = definition.chain(state)
    except IndexCorruptError:
        return state.size_bytes, 0, 0
    return links[0].size_bytes, sum(s.size_bytes for s in links[1:]), len(links) - 1


@dataclass
class IndexHealth:
    """One row of ``lakesieve index list``.

    ``size_bytes`` is ``base_bytes + delta_bytes``: the newest state's base
    and every delta stacked on it. ``states`` counts the instants the index
    has a state for. ``verified`` says how far the files were checked
    (``checksums`` or ``sizes only``; empty when there was nothing to check).
    """

    name: str
    type: str | None
    column: str | None
    instant: str | None
    states: int
    size_bytes: int
    health: str
    detail: str = ""
    base_bytes: int = 0
    delta_bytes: int = 0
    deltas: int = 0
    verified: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def salvage(store: IndexStore) -> tuple[dict[str, IndexDefinition], str | None, list[LogProblem]]:
    """Replay every intact commit, skipping the bad ones; the indexes, fingerprint and what was skipped."""
    indexes: dict[str, IndexDefinition] = {}
    fingerprint: str | None = None
    skipped: list[LogProblem] = []
    head = store.head_hint()  # before the listing: a commit landing meanwhile is not "missing"
    listed = store.versions()
    expected = store.replay_start()  # a reset commit starts the log there (0 on a disk)
    versions = [v for v in listed if v >= expected]
    for v in versions:
        skipped.extend(LogProblem(m, "is missing") for m in range(expected, v))
        expected = v + 1
        try:
            indexes, fingerprint = store.apply_commit(indexes, store.load_commit(v), fingerprint)
        except IndexCorruptError as exc:
            skipped.append(store.problem(v, exc))
    last = versions[-1] if versions else -1
    if head > last:
        skipped.append(
            LogProblem(last + 1, f"is missing (commit {head} was written; the log ends at {last})")
        )
    return indexes, fingerprint, skipped


def _timeline_ids(table: IndexedTable) -> tuple[set[str] | None, str | None]:
    """The table's instant ids and its latest sort key (``None`` when the timeline cannot be read)."""
    try:
        line = table.timeline()
    except LakesieveError:
        return None, None
    return {i.id for i in line}, (line[-1].sort_key if line else None)


def _row(definition: IndexDefinition) -> IndexHealth:
    head = definition.latest()
    row = IndexHealth(
        definition.name,
        definition.type,
        definition.column,
        head.instant if head else None,
        len(definition.states),
        0,
        OK,
    )
    if head is not None:
        row.base_bytes, row.delta_bytes, row.deltas = chain_bytes(definition, head)
        row.size_bytes = row.base_bytes + row.delta_bytes
    return row


def index_health(
    table: IndexedTable, checksum_budget: int = LIST_CHECKSUM_BYTES
) -> tuple[list[IndexHealth], list[LogProblem]]:
    """The health of every index of ``table``, and the problems of its log; never starts Spark.

    Args:
        checksum_budget: hash the files of indexes while the bytes hashed stay
            within this; the files of the others get the size check only.
    """
    store = table.store
    snap = store.read_log(strict=False)
    indexes = salvage(store)[0] if snap.problems else snap.indexes  # what intact commits still say
    timeline, latest_key = _timeline_ids(table)
    hashing = FileVerifier(store, checksum=True)
    sizing = FileVerifier(store, checksum=False)
    rows: list[IndexHealth] = []
    for definition in indexes.values():
        row = _row(definition)
        rows.append(row)
        head = definition.latest()
        if snap.problems:  # queries use only the commits before the first bad one
            row.health = BAD_LOG
            row.detail = f"{snap.problems[0]}; queries use the states committed before it"
            continue
        if head is None:
            row.health = NEVER_BUILT
            continue
        verifier = hashing if hashing.bytes + row.size_bytes <= checksum_budget else sizing
        row.verified = CHECKSUMS if verifier is hashing else SIZES
        problem = verifier.chain(definition, head)
        off = off_timeline(head, timeline, table.path) if timeline is not None else None
        if problem is not None:
            row.health = CORRUPT_FILE
            row.detail = f"{problem}; `lakesieve index build` rebuilds it"
        elif off is not None:
            row.health, row.detail = OFF_TIMELINE, f"{off}; `lakesieve index build` rebuilds it"
        elif latest_key is not None and head.instant_sort_key < latest_key:
            row.health = STALE
            row.detail = "older than the table's latest instant; `lakesieve index refresh`"
    known = {r.name for r in rows}
    for log_problem in snap.problems:
        for name in log_problem.indexes:
            if name not in known:
                known.add(name)
                rows.append(IndexHealth(name, None, None, None, 0, 0, BAD_LOG, str(log_problem)))
    return rows, snap.problems


def broken_head(store: IndexStore, definition: IndexDefinition) -> str | None:
    """Why the newest state of ``definition`` cannot be used (every checksum of its chain checked)."""
    head = definition.latest()
    if head is None:
        return None
    return FileVerifier(store, checksum=True, decode=True).chain(definition, head)


def drop_broken_states(indexes: TableIndexes, name: str) -> list[str]:
    """Remove every state of index ``name`` whose chain fails to verify, in one commit; what was removed.

    Each entry reads ``<state id> @ <instant>: <problem>``. The removed states'
    files are deleted after the commit. Nothing is committed when every state
    verifies.
    """
    store = indexes.store
    verifier = FileVerifier(store, checksum=True, decode=True)

    def failing(definition: IndexDefinition | None) -> list[tuple[IndexState, str]]:
        if definition is None:
            return []
        out = []
        for state in definition.by_id.values():
            problem = verifier.chain(definition, state)
            if problem is not None:
                out.append((state, problem))
        return out

    if not failing(store.read_log().indexes.get(name)):
        return []
    removed: list[tuple[IndexState, str]] = []

    def actions(snap: Any) -> list[dict[str, Any]]:
        removed[:] = failing(snap.indexes.get(name))
        return [{"op": "remove_state", "index": name, "state_id": s.state_id} for s, _ in removed]

    store.commit_with_retry(actions)
    store.delete_state_files(s for s, _ in removed)
    return [f"{s.state_id} @ {s.instant}: {problem}" for s, problem in removed]
