"""Locations touched between two instants of a Hudi table, from timeline metadata.

The answer must be a superset of the truth, so every doubt widens it:

- commit, deltacommit and replacecommit instants in the range contribute the
  file groups of their write stats and replaced file ids;
- completed rollback and restore instants in the range contribute every file
  group whose files they deleted or appended a rollback block to;
- in timeline layout 2 (table version 8+), instants requested before the
  range but completed after its lower bound completed are included too
  (concurrent writers finish out of order);
- when some metadata cannot be read, or the range starts before the active
  timeline while archived instants exist, every location of both snapshots
  is reported as rewritten (the call raises if the snapshot at ``end``
  cannot be listed, rather than answer with less).

**Stamped locations** (``Changes.stamped``): every Hudi writer stamps the
rows it writes with its instant in ``_hoodie_commit_time``, copies untouched
rows of a rewritten file group with their old stamp, and compaction keeps
stamps. So a location is stamped when, in a forward range read from complete
metadata, no rollback, restore or late completion falls in the range, no
instant in it moves rows between file groups (clustering, insert overwrite:
moved rows keep an old stamp at a new location), every write stat of the
location records ``numDeletes`` as 0, the table populates meta fields and the
range's instant ids have one length (so they compare as strings). Refresh
then reads only the rows stamped after ``start`` and the previous versions of
exactly those record keys.

**Written in logs** (``Changes.written_in_logs``): on a merge-on-read table
whose log records always replace the base file's version of their record
(commit-time ordering, the overwrite-with-latest payload), a stamped location
that every instant of the range touched by appending a log file still has the
base file it had at ``start``; every row stamped after ``start`` is then the
merged version of a record in its log files (log records merge among
themselves the same way with or without the base file), which can be read
without the base file.

**Change images** (``Changes.change_images``): on a copy-on-write table
whose properties say writers log change data with before and after images
(:mod:`lakesieve.plugins.hudi.cdc`), a rewritten location whose every write
stat in a forward range names change data files is read from those files
alone: minus each before image, plus each after image. The same conditions
as for stamped locations hold (readable metadata, no rollback, restore, late
completion or instant moving rows in the range), and every instant in the
range must be a plain write (insert, upsert, delete): a merge-on-read table's
compaction, say, logs again changes its delta commits already made.

Direction: instants *strictly after the smaller* bound and *up to and including
the larger* are considered, whatever the order of ``start`` and ``end``. When
``end`` is older than ``start`` (time travel backwards) the classification is
seen from ``start`` moving to ``end``: a file group created in between is
``removed`` and one replaced in between is ``added``; ``touched`` is the same
either way.
"""

from __future__ import annotations

from hudi import HudiInstant
from lakesieve.plugins.hudi import instant_touches, storage, tables, timeline
from lakesieve.plugins.hudi.avro_container import read_container
from lakesieve.plugins.hudi.snapshot import snapshot_locations
from lakesieve.sdk import ChangeImageFiles, Changes, TableRef

#: The meta columns a stamped refresh reads.
RECORD_KEY_COLUMN = "_hoodie_record_key"
COMMIT_TIME_COLUMN = "_hoodie_commit_time"
#: Operations whose change data files record every change of their file groups.
PLAIN_WRITES = frozenset(
    {"INSERT", "UPSERT", "DELETE", "INSERT_PREPPED", "UPSERT_PREPPED", "DELETE_PREPPED"}
)


def _in_range(ts: str, low: str | None, high: str) -> bool:
    return (low is None or ts > low) and ts <= high


def _late_completions(
    instants: list[HudiInstant], completion: dict[str, str], low: str | None, high: str
) -> list[HudiInstant]:
    """Instants requested at or before ``low`` that completed after ``low`` did."""
    if low is None or not completion:
        return []
    low_done = completion.get(low, low)
    return [
        inst
        for inst in instants
        if inst.timestamp <= low
        and inst.timestamp <= high
        and completion.get(inst.timestamp, "") > low_done
    ]


def _merge(
    state: dict[str, str], in_place: dict[str, bool], touches: instant_touches.Touches
) -> None:
    """Fold one instant's touches into the per-location state, oldest instant first.

    ``in_place`` tracks, per location, whether every touch so far only updated
    records (see :class:`~lakesieve.plugins.hudi.instant_touches.Touches`).
    """
    for loc in touches.added | touches.rewritten | touches.removed:
        in_place[loc] = in_place.get(loc, True) and loc in touches.in_place
    for loc in touches.added:
        state[loc] = "added" if state.get(loc, "added") == "added" else "rewritten"
    for loc in touches.rewritten:
        state[loc] = "added" if state.get(loc) == "added" else "rewritten"
    for loc in touches.removed:
        state[loc] = "removed"


def compute_changes(table: TableRef, start: str | None, end: str) -> Changes:
    """Return the locations touched by instants between ``start`` and ``end``.

    See the module docstring for the range and the direction.
    """
    forward = start is None or start <= end
    low: str | None = start if forward else end
    high: str = end if forward or start is None else start

    ht = tables.open_ref(table)
    config = tables.table_config(ht)
    instants = timeline.completed_data_instants(ht)
    files = timeline.list_timeline_files(table.path, config)

    conservative = files.has_history and (
        not instants or low is None or low < instants[0].timestamp
    )
    chosen = {i.timestamp: i for i in instants if _in_range(i.timestamp, low, high)}
    late = _late_completions(instants, files.completion_times, low, high)
    for inst in late:
        chosen.setdefault(inst.timestamp, inst)

    per_instant: list[tuple[str, instant_touches.Touches]] = []
    for ts in sorted(chosen):
        try:
            per_instant.append(
                (
                    ts,
                    instant_touches.touches_of_commit(
                        instant_touches.load_metadata(ht, chosen[ts])
                    ),
                )
            )
        except Exception:
            conservative = True
    fs, _ = storage.resolve(table.path)
    undone_in_range = False
    for ts, _action, path in files.undo_files:
        if not _in_range(ts, low, high):
            continue
        undone_in_range = True
        try:
            undone = instant_touches.touches_of_undo(read_container(storage.read_bytes(fs, path)))
        except Exception:
            conservative = True
            continue
        per_instant.append((ts, instant_touches.Touches(rewritten=undone)))

    state: dict[str, str] = {}
    in_place: dict[str, bool] = {}
    for _, touches in sorted(per_instant, key=lambda item: item[0]):
        _merge(state, in_place, touches)
    if conservative:
        # The ``end`` side must be listed: its locations are what a reader
        # needs. Locations only ``start`` had at worst stay stale in an index.
        origin = snapshot_locations(table, start, strict=False) if start else frozenset()
        for loc in origin | snapshot_locations(table, end):
            if state.get(loc) not in ("added", "removed"):
                state[loc] = "rewritten"

    added = frozenset(loc for loc, kind in state.items() if kind == "added")
    removed = frozenset(loc for loc, kind in state.items() if kind == "removed")
    rewritten = frozenset(loc for loc, kind in state.items() if kind == "rewritten")
    updated = (
        frozenset() if conservative else frozenset(loc for loc in rewritten if in_place.get(loc))
    )
    # a forward range read from complete metadata, with no undo or late completion in it
    plain_range = (
        forward and start is not None and not conservative and not undone_in_range and not late
    )
    stamped: frozenset[str] = frozenset()
    if plain_range and start is not None and config.populates_meta_fields:
        stamped = _stamped(start, end, [t for _, t in per_instant], [*chosen])
    in_logs: frozenset[str] = frozenset()
    if stamped and config.table_type.upper() == "MERGE_ON_READ" and config.merges_by_commit_time:
        in_logs = _written_in_logs(stamped, [t for _, t in per_instant])
    rows_written = _rows_written(stamped, [t for _, t in per_instant])
    images: dict[str, ChangeImageFiles] = {}
    if plain_range and config.change_images and config.table_type.upper() == "COPY_ON_WRITE":
        images = _imaged(rewritten, [t for _, t in per_instant])
    if not forward:
        added, removed = removed, added
    return Changes(
        start=start,
        end=end,
        added=added,
        rewritten=rewritten,
        removed=removed,
        updated_in_place=updated,
        key_columns=config.record_key_fields,
        record_id_column=RECORD_KEY_COLUMN if stamped else None,
        record_id_fields=tables.record_id_fields(tables.read_schema(ht), config) if stamped else (),
        write_time_column=COMMIT_TIME_COLUMN if stamped else None,
        stamped=stamped,
        change_images=images,
        written_in_logs=in_logs,
        rows_written=rows_written,
    )


def _rows_written(
    stamped: frozenset[str], touches: list[instant_touches.Touches]
) -> dict[str, int]:
    """Rows written per stamped location over the range, where every instant touching it says."""
    out: dict[str, int] = {}
    for loc in stamped:
        total = 0
        for t in touches:
            if loc in t.added or loc in t.rewritten or loc in t.removed:
                if loc not in t.written:
                    break
                total += t.written[loc]
        else:
            out[loc] = total
    return out


def _imaged(
    rewritten: frozenset[str], touches: list[instant_touches.Touches]
) -> dict[str, ChangeImageFiles]:
    """Rewritten locations whose every change in the range is in change data files.

    Only called for a forward range of a copy-on-write table with readable
    metadata and no rollback, restore or late completion in it; see the
    module docstring.
    """
    if any(t.moves_rows or t.operation not in PLAIN_WRITES for t in touches):
        return {}
    files: dict[str, tuple[str, ...]] = {}
    records: dict[str, int] = {}
    lost: set[str] = set()
    for t in touches:
        for loc in t.added | t.rewritten | t.removed:
            change = t.images.get(loc)
            if change is None:
                lost.add(loc)
                continue
            files[loc] = files.get(loc, ()) + change[0]
            records[loc] = records.get(loc, 0) + change[1]
    return {
        loc: ChangeImageFiles(files[loc], records[loc])
        for loc in sorted(files)
        if loc in rewritten and loc not in lost
    }


def _written_in_logs(
    stamped: frozenset[str], touches: list[instant_touches.Touches]
) -> frozenset[str]:
    """Stamped locations that every instant of the range touched by appending a log file."""
    out = set(stamped)
    for t in touches:
        out -= (t.added | t.rewritten | t.removed) - t.logged
    return frozenset(out)


def _stamped(
    start: str, end: str, touches: list[instant_touches.Touches], instant_ids: list[str]
) -> frozenset[str]:
    """Locations whose changes in ``(start, end]`` are exactly the rows stamped after ``start``.

    Only called for a forward range with readable metadata and no rollback,
    restore or late completion in it; see the module docstring.
    """
    if any(len(ts) != len(start) for ts in [end, *instant_ids]):
        return frozenset()
    if any(t.moves_rows for t in touches):
        return frozenset()
    kept: set[str] = set()
    lost: set[str] = set()
    for t in touches:
        kept |= t.kept_keys
        lost |= (t.added | t.rewritten | t.removed) - t.kept_keys
    return frozenset(kept - lost)
