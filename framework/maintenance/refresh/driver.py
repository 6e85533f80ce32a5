"""A small refresh computed on the driver with Arrow: no Spark session, no Spark job.

A refresh after a small commit spends most of its time starting Spark and
scheduling a handful of tiny jobs. When the locations a delta must read hold
at most ``RefreshPolicy.driver_max_mb``, :func:`local_delta` reads them here,
through the format plugin's ``read_unit`` (the same calls the stamped tasks
of :mod:`lakesieve.maintenance.refresh.stamped` make in Spark's workers), and
sums the signed keys per ``(key, location)`` itself:

* the general path's locations: every row at ``start`` (``-1``) and at
  ``end`` (``+1``);
* the stamped locations: the rows written since ``start`` and the previous
  versions of their records, or the two base files compared row by row,
  exactly as a stamped task reads them;
* locations with change data files go to one of those two paths (the
  plugin reads change data through Spark).

The sums follow Spark's equality for keys (:func:`spark_sums`): every NaN is
one key and ``-0.0`` is ``0.0`` (Spark's ``groupBy`` normalizes floating
point keys the same way); nulls are one key. So the delta is the one the
Spark path computes, row for row, and it is stored or folded the same way
(an index type folds it on the driver when it implements
:class:`~lakesieve.contract.protocols.FoldsOnDriver`).

Each location is summed on its own, so the memory held is one location's
distinct changed keys (plus the record ids of its changed rows), whatever
the number of locations. A refresh that pairs rewritten files
(:mod:`lakesieve.maintenance.refresh.pairs`) holds the key column of the
locations that left and entered the snapshot while it pairs them: at most
the bytes the policy lets the driver read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.maintenance.refresh.pairs import pair_rewrites as pairs_of
from lakesieve.maintenance.refresh.pairs import rewrite_sides
from lakesieve.maintenance.refresh.plan import DeltaPlan, unimage
from lakesieve.maintenance.refresh.stamped import (
    PAIR_IDS,
    LocationSums,
    location_column,
    location_rows,
    positional_rows,
    whole_files,
)
from lakesieve.model import Instant, ReadUnit
from lakesieve.state.overlay import DELTA_COLUMNS
from lakesieve.state.table_indexes import TableIndexes

__all__ = [
    "column_bytes",
    "delta_schema",
    "driver_bytes",
    "local_delta",
    "local_rows",
    "spark_keys",
    "spark_sums",
]


def delta_schema(key_type: pa.DataType) -> pa.Schema:
    """The schema of a stored delta: ``key``, ``location`` (string), ``count`` (int64)."""
    return pa.schema([("key", key_type), ("location", pa.string()), ("count", pa.int64())])


def driver_bytes(plan: DeltaPlan, width: int) -> int:
    """About the bytes a driver read of ``plan`` decodes: the units' bytes, scaled to the columns read.

    A unit's ``size_bytes`` counts every column of its files; a delta reads
    one column of the general path's units and at most three (record id,
    write time, the column) of the stamped ones, out of the table's
    ``width`` columns (Parquet reads columns apart). Change data locations
    count as stamped ones, which they become on the driver.
    """
    whole = plan.old_units + plan.new_units
    stamped = (
        plan.stamped_old_units
        + plan.stamped_new_units
        + plan.imaged_old_units
        + plan.imaged_new_units
    )
    return column_bytes(whole, width) + column_bytes(stamped, width, columns=3)


def column_bytes(units: Sequence[ReadUnit], width: int, columns: int = 1) -> int:
    """About the bytes of ``columns`` of the table's ``width`` read from ``units`` (whole files' bytes, scaled)."""
    share = min(1.0, columns / max(1, width))
    return int(sum(max(0, int(u.size_bytes or 0)) * share for u in units))


def spark_keys(keys: pa.Array) -> pa.Array:
    """``keys`` with the floating-point values Spark groups together made one value.

    Every NaN becomes the one canonical NaN and ``-0.0`` becomes ``0.0``,
    as Spark normalizes grouping keys; other types are returned as they are.
    """
    if not pa.types.is_floating(keys.type):
        return keys
    nan = pa.scalar(math.nan, keys.type)
    zero = pa.scalar(0.0, keys.type)
    out = pc.if_else(pc.is_nan(keys), nan, keys)
    return pc.if_else(pc.equal(out, zero), zero, out)


def spark_sums(parts: Iterable[pa.Table], key_type: pa.DataType) -> pa.Table:
    """Signed ``(key, location, count)`` rows summed per ``(key, location)`` by Spark's equality.

    Pairs summing to 0 are left out. Every part's keys are cast to
    ``key_type`` first.
    """
    schema = delta_schema(key_type)
    tables = [
        pa.table(
            [
                spark_keys(t.column("key").combine_chunks().cast(key_type)),
                t.column("location").combine_chunks().cast(pa.string()),
                t.column("count").combine_chunks().cast(pa.int64()),
            ],
            schema=schema,
        )
        for t in parts
        if t.num_rows
    ]
    if not tables:
        return schema.empty_table()
    rows = pa.concat_tables(tables)
    summed = rows.group_by(["key", "location"], use_threads=False).aggregate([("count", "sum")])
    summed = summed.filter(pc.not_equal(summed.column("count_sum"), 0))
    return pa.table(
        [summed.column("key"), summed.column("location"), summed.column("count_sum")],
        schema=schema,
    )


def _signed(
    reads: Iterator[tuple[pa.Array, int]], location: str, key_type: pa.DataType
) -> pa.Table:
    """One location's signed keys summed per key (Spark's equality), zeros left out."""
    sums = LocationSums(key_type, PAIR_IDS)
    for keys, sign in reads:
        sums.add(spark_keys(keys.cast(key_type)), sign)
    keys, counts = sums.result()
    return pa.table(
        [keys, location_column(location, len(keys)), counts], schema=delta_schema(key_type)
    )


def _whole_reads(
    table: TableIndexes, column: str, reads: Sequence[tuple[ReadUnit, str, int]]
) -> Iterator[tuple[pa.Array, int]]:
    """Every row's key of each unit, with the unit's sign."""
    fmt = table.view.fmt
    for unit, instant, sign in reads:
        for batch in fmt.read_unit(unit, instant, [column]):
            if batch.num_rows:
                yield batch.column(batch.schema.get_field_index(column)), sign


def local_delta(
    table: TableIndexes,
    column: str,
    key_type: pa.DataType,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
) -> tuple[pa.Table | None, dict[str, str]]:
    """The summed ``(key, location, count)`` delta read on the driver (``None``: nothing to read), and its renames.

    A location that left the snapshot and one that entered it holding most
    of its keys (a file rewritten copy-on-write,
    :func:`~lakesieve.maintenance.refresh.pairs.pair_rewrites`) are summed
    together under the new name, and the second value maps each such old
    name to its new one: the delta is then right only for an index whose
    entries of the old names answer under the new ones. With nothing to
    pair the renames are empty and the delta is by location.

    Args:
        table: the table's indexes (its view reads the units).
        column: the indexed column.
        key_type: the Arrow type Spark hands the column over in (the delta's key type).
        start: the index's instant.
        end: the instant refresh brings it to.
        plan: what to read (:func:`~lakesieve.maintenance.refresh.plan.plan_delta`);
            its change data locations are moved to the other paths.
    """
    unimage(plan)
    general: dict[str, list[tuple[ReadUnit, str, int]]] = {}
    for units, instant, sign in ((plan.old_units, start, -1), (plan.new_units, end, 1)):
        for unit in units:
            general.setdefault(unit.location, []).append((unit, instant.id, sign))
    stamped = plan.stamped_new_units
    if not general and not stamped:
        return None, {}
    held: dict[str, list[tuple[pa.Array, int]]] = {}
    renames: dict[str, str] = {}
    gone_units, came_units = rewrite_sides(plan.old_units, plan.new_units)
    gone = sorted({u.location for u in gone_units})
    came = sorted({u.location for u in came_units})
    if gone and came:
        for loc in gone + came:
            held[loc] = [
                (spark_keys(keys.cast(key_type)), sign)
                for keys, sign in _whole_reads(table, column, general[loc])
            ]
        renames = pairs_of(
            {loc: [k for k, _ in held[loc]] for loc in gone},
            {loc: [k for k, _ in held[loc]] for loc in came},
        )
    old_of_new = {new: old for old, new in renames.items()}
    parts = []
    for location, whole in sorted(general.items()):
        if location in renames:  # summed with the location that replaced it
            continue
        if location in old_of_new:
            both = held[old_of_new[location]] + held[location]
            parts.append(_signed(iter(both), location, key_type))
        elif location in held:
            parts.append(_signed(iter(held[location]), location, key_type))
        else:
            parts.append(_signed(_whole_reads(table, column, whole), location, key_type))
    rid, wtime = plan.record_id_column, plan.write_time_column
    if stamped and (rid is None or wtime is None):
        raise ValueError("stamped locations without a record id and a write time column")
    fmt = table.view.fmt
    old_of = {u.location: u for u in plan.stamped_old_units}
    for new in sorted(stamped, key=lambda u: u.location):
        old = old_of.get(new.location)
        if old is not None and whole_files(old) and whole_files(new):
            reads = positional_rows(fmt, old, new, start.id, end.id, column, key_type)
        else:
            reads = location_rows(
                fmt,
                old,
                new,
                start.id,
                end.id,
                (str(rid), str(wtime), column),
                key_type,
                PAIR_IDS,
                plan.record_id_fields,
            )
        parts.append(_signed(reads, new.location, key_type))
    # each location is summed on its own and the locations are distinct: no further sum
    schema = delta_schema(key_type)
    return pa.concat_tables([schema.empty_table(), *parts]).select(list(DELTA_COLUMNS)), renames


def local_rows(
    table: TableIndexes,
    column: str,
    key_type: pa.DataType,
    units: Sequence[ReadUnit],
    instant: Instant,
) -> pa.Table:
    """Every row of ``units`` at ``instant`` as ``(key, location, count)``, summed per key (Spark's equality).

    The rows a build of those locations reads, each counted ``+1``: a delta
    that brings the locations into an index as a build would (compaction's
    :func:`~lakesieve.maintenance.refresh.fold.rebuild_inexact`).
    """
    by_location: dict[str, list[tuple[ReadUnit, str, int]]] = {}
    for unit in units:
        by_location.setdefault(unit.location, []).append((unit, instant.id, 1))
    parts = [
        _signed(_whole_reads(table, column, reads), location, key_type)
        for location, reads in sorted(by_location.items())
    ]
    schema = delta_schema(key_type)
    return pa.concat_tables([schema.empty_table(), *parts]).select(list(DELTA_COLUMNS))
