"""The read units of a Hudi table at one instant: one per visible file group.

hudi-rs picks the file slice of every file group visible at the instant
(replaced file groups excluded, time travel honoured). A slice becomes a
:class:`~lakesieve.sdk.ReadUnit` whose location is
``<partition path>/<file group id>``.

For time travel, hudi-rs may list log files of a slice that were written
after the instant (table version 6 names log files after the base instant,
so their names cannot tell); reading the unit as of the instant would skip
their blocks. As of an instant older than the latest, a log file whose every
block header names a later instant is left out of its unit
(:mod:`lakesieve.plugins.hudi.log_headers`), so that a slice that had no log
at the instant is read as a plain base file; ``size_bytes`` still counts it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from hudi import HudiFileSlice, HudiInstant, HudiTable
from lakesieve.plugins.hudi import instant_touches, log_headers, storage, tables, timeline
from lakesieve.plugins.hudi.partitions import location_of, partition_values
from lakesieve.sdk import ReadUnit, Snapshot, TableRef


def _record_counts(
    table: HudiTable, instants: list[HudiInstant], slices: list[HudiFileSlice]
) -> dict[str, int]:
    """Rows per base file name, from the metadata of the instants that wrote them."""
    by_time = {inst.timestamp: inst for inst in instants}
    counts: dict[str, int] = {}
    for ts in sorted({s.creation_instant_time for s in slices if s.base_file_name}):
        inst = by_time.get(ts)
        if inst is None:  # archived: counts stay unknown
            continue
        try:
            counts.update(
                instant_touches.base_file_record_counts(instant_touches.load_metadata(table, inst))
            )
        except Exception:
            continue
    return counts


def unit_of(
    fs: HudiFileSlice, config: tables.TableConfig, counts: dict[str, int] | None = None
) -> ReadUnit:
    """The read unit for one hudi-rs file slice."""
    base = fs.base_file_relative_path() if fs.base_file_name else None
    return ReadUnit(
        location=location_of(fs.partition_path, fs.file_id),
        base_file=base,
        log_files=tuple(fs.log_files_relative_paths()),
        partition_values=partition_values(
            fs.partition_path, config.partition_fields, config.hive_style, config.url_encoded
        ),
        num_records=(counts or {}).get(fs.base_file_name) if base else 0,
        size_bytes=int(fs.total_size_bytes()),
        extra={
            "partition_path": fs.partition_path,
            "file_id": fs.file_id,
            "base_instant": fs.creation_instant_time,
            **({"base_file_size": str(int(fs.base_file_size))} if base else {}),
        },
    )


#: Threads reading log block headers for a snapshot (remote stores answer slowly, not busily).
HEADER_THREADS = 16


def _without_later_logs(path: str, units: list[ReadUnit], instant: str) -> list[ReadUnit]:
    """``units`` without the log files all of whose blocks were written after ``instant``."""
    fs, root = storage.resolve(path)
    logs = sorted({f for u in units for f in u.log_files})
    if not logs:
        return units

    def later(name: str) -> bool:
        return log_headers.written_after(fs, storage.join(root, name), instant)

    with ThreadPoolExecutor(max_workers=min(HEADER_THREADS, len(logs))) as pool:
        dropped = {f for f, gone in zip(logs, pool.map(later, logs), strict=True) if gone}
    out = []
    for unit in units:
        kept = tuple(f for f in unit.log_files if f not in dropped)
        if kept == unit.log_files or (not kept and unit.base_file is None):
            out.append(unit)  # a slice of logs only keeps them: its reader needs a file
        else:
            out.append(replace(unit, log_files=kept))
    return out


def build_snapshot(table: TableRef, instant: str | None) -> Snapshot:
    """Return the read units of ``table`` as of ``instant`` (latest when ``None``).

    Raises:
        InstantNotFoundError: ``instant`` is not a completed instant.
    """
    ht = tables.open_ref(table)
    instants = timeline.completed_data_instants(ht)
    chosen = timeline.resolve(instants, instant, table.path)
    if chosen is None:
        return Snapshot(instant=None, units=())
    config = tables.table_config(ht)
    slices = list(ht.get_file_slices(tables.as_of(chosen.timestamp)))
    counts = _record_counts(ht, instants, slices)
    units = sorted((unit_of(s, config, counts) for s in slices), key=lambda u: u.location)
    if chosen.timestamp != instants[-1].timestamp:
        units = _without_later_logs(table.path, units, chosen.timestamp)
    return Snapshot(instant=timeline.to_instant(chosen), units=tuple(units))


def snapshot_locations(table: TableRef, instant: str | None, strict: bool = True) -> frozenset[str]:
    """Locations visible as of ``instant`` (any Hudi timestamp; latest when ``None``).

    Args:
        table: the table.
        instant: the as-of time.
        strict: raise when hudi-rs cannot list the table then; otherwise
            return an empty set.
    """
    try:
        ht = tables.open_ref(table)
        slices = ht.get_file_slices(tables.as_of(instant))
    except Exception:
        if strict:
            raise
        return frozenset()
    return frozenset(location_of(s.partition_path, s.file_id) for s in slices)
