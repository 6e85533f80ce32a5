"""What a refresh reads to compute an index's delta between two instants.

An index maps each key to the locations holding it, with a row count per
``(key, location)``. The delta from instant ``start`` to ``end`` is, per
``(key, location)``, the rows there at ``end`` minus the rows there at
``start`` (:mod:`lakesieve.state.overlay`, ``IndexType.apply_delta``). Counts make
removals safe: a pair leaves an index only when its summed count reaches 0,
that is when no remaining row of the location holds the key, so handing
over an exact count difference is all refresh must do. The format plugin's
``changes`` sorts the touched locations into three groups, each read its
own way:

**Updated in place, indexed column in the record key** (``updated_in_place``
and ``key_columns``): records were only replaced by new versions of
themselves, which cannot change the key: nothing is read.

**Stamped** (``Changes.stamped``, with ``record_id_column`` R and
``write_time_column`` W): every row written in ``(start, end]`` carries
``W > start``, every other row is unchanged and stays at its location, and
no record left the location. For such a location L, let N be its rows at
``end`` with ``W > start`` (new or new versions) and U the rest (unchanged).
Rows at ``start`` = U + the previous versions of the records of N that
existed then (R is unique within L, and no record of ``start`` disappeared,
so every row at ``start`` outside U has its R in N). Hence, exactly::

    delta(L) = +N  -  { rows of L at start whose R is among N's R at L }

One Python task per few locations reads both sides of each through the
format's ``read_unit``: at ``end`` only R, W and the column, keeping rows with
``W > start`` (``+1``) and their R; at ``start`` only R and the column,
streamed against that small set of R (``-1``)
(:mod:`lakesieve.maintenance.refresh.stamped`). Where both sides are whole base files
and the key is not a floating-point number, the task reads only the column
of both and compares them row by row instead (exact for any two files, and
reading out only the changed rows when unchanged records kept their
places). Only the changed records leave the task, instead of every row of
every touched location twice, summed per ``(key, location)`` there (the
task owns its locations whole) unless the key is a floating-point number; a
delta of stamped locations alone then needs no ``groupBy``. Where the
plugin names integer columns identifying records as R does
(``Changes.record_id_fields``), those are read and matched instead of R.
Where the plugin says the rows written since ``start`` all lie in a unit's
log files (``Changes.written_in_logs``), the ``end`` side reads the unit
without its base file (:func:`logs_only`): N is the same, the base file is
not read.

**Change images** (``Changes.change_images``, read by the format plugin's
``read_change_images``): locations whose every change in the range is
recorded in change data files as a row before and a row after. Their delta is
``-1`` per before image and ``+1`` per after image, read from those files
alone; the locations themselves are not read. The plugin returns them
summed per ``(key, location)`` by value, without pairs summing to 0; when
they are the whole delta and the key is not a floating-point number (whose
values Spark sums by its own equality, ``-0.0`` with ``0.0``) no further
``groupBy`` runs. The frame is computed (and cached) before anything else,
so that a file the plugin cannot read sends those locations to the stamped
or general path with a warning instead of failing the refresh; a plugin
answering ``None`` (a column it does not read from change data) sends them
there silently.

**Everything else** (deletes recorded, rollbacks, clustering, compaction
the plugin cannot vouch for, missing metadata, a format that does not stamp
rows): the exact general path reads the column of the touched locations at
both instants, ``-1`` per row at ``start`` and ``+1`` per row at ``end``,
and sums per ``(key, location)``.

The three parts are unioned and summed, so the delta is exact whichever mix
of paths a refresh takes; the general path is always a correct fallback.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lakesieve.contract.format_read import read_columns
from lakesieve.contract.protocols import ReadsChangeImages
from lakesieve.errors import LakesieveWarning
from lakesieve.files.arrow_frame import frame_of
from lakesieve.maintenance.refresh.stamped import COLLECT_ROWS, stamped_delta, sums_by_equality
from lakesieve.model import LOCATION_COLUMN, ChangeImageFiles, Changes, Instant, ReadUnit, Snapshot
from lakesieve.state.table_indexes import TableIndexes
from lakesieve.store.seen_locations import after_change, hashes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class DeltaPlan:
    """The locations a delta must read, and how.

    Attributes:
        old_units: read units at ``start`` read whole (the general path).
        new_units: read units at ``end`` read whole (the general path).
        skipped_in_place: locations not read at all (keys cannot have changed).
        stamped_old_units: read units at ``start`` of stamped locations.
        stamped_new_units: read units at ``end`` of stamped locations.
        record_id_column: the record identifier column of stamped reads.
        write_time_column: the write instant column of stamped reads.
        images: change data files per location read from them alone.
        imaged_old_units: read units at ``start`` of those locations (a fallback).
        imaged_new_units: read units at ``end`` of those locations.
        image_stamped: those of them the stamped path can read instead.
        held: cached frames of the delta's computation, released by the caller.
        stamped_rows: rows written at the stamped locations in the range, as
            the format's metadata records them (``None``: not known for all).
        record_id_fields: integer columns matching records as the record id
            does (``Changes.record_id_fields``), read instead of it.
        changes: the change between the two instants the plan was made from.
    """

    old_units: tuple[Any, ...]
    new_units: tuple[Any, ...]
    skipped_in_place: int
    stamped_old_units: tuple[Any, ...] = ()
    stamped_new_units: tuple[Any, ...] = ()
    record_id_column: str | None = None
    write_time_column: str | None = None
    images: dict[str, ChangeImageFiles] = field(default_factory=dict)
    imaged_old_units: tuple[Any, ...] = ()
    imaged_new_units: tuple[Any, ...] = ()
    image_stamped: frozenset[str] = frozenset()
    held: list[Any] = field(default_factory=list)
    stamped_rows: int | None = None
    record_id_fields: tuple[str, ...] = ()
    changes: Changes | None = None

    @property
    def locations_read(self) -> int:
        """Distinct locations the delta reads, on either path."""
        units = self.old_units + self.new_units + self.stamped_old_units + self.stamped_new_units
        return len({u.location for u in units})

    @property
    def locations_imaged(self) -> int:
        """Locations whose delta is read from change data files (none of their rows read)."""
        return len(self.images)

    @property
    def locations_from_logs(self) -> int:
        """Stamped locations whose rows written since ``start`` are read from log files alone."""
        return sum(1 for u in self.stamped_new_units if u.base_file is None and u.log_files)

    @property
    def locations_stamped(self) -> int:
        """Distinct locations read on the stamped path."""
        return len({u.location for u in self.stamped_old_units + self.stamped_new_units})


def plan_delta(table: TableIndexes, column: str, start: Instant, end: Instant) -> DeltaPlan:
    """The read units, at ``start`` and at ``end``, whose keys may differ, and how to read them."""
    changes = table.view.changes(start, end)
    touched = set(changes.touched)
    skipped = 0
    if column in changes.key_columns:
        in_place = touched & set(changes.updated_in_place)
        skipped = len(in_place)
        touched -= in_place
    imaged: set[str] = set()
    if changes.change_images and isinstance(table.view.fmt, ReadsChangeImages):
        imaged = touched & set(changes.change_images)
        touched -= imaged
    stamped: set[str] = set()
    image_stamped: frozenset[str] = frozenset()
    rid, wtime = changes.record_id_column, changes.write_time_column
    if rid and wtime and column not in (rid, wtime):
        stamped = touched & set(changes.stamped)
        touched -= stamped
        image_stamped = frozenset(imaged & set(changes.stamped))
    if not touched and not stamped and not imaged:
        return DeltaPlan((), (), skipped, changes=changes)
    old: Snapshot = table.view.snapshot_at(start)
    new: Snapshot = table.view.snapshot_at(end)
    stamped_old = old.units_for(stamped)
    plan = DeltaPlan(
        old.units_for(touched),
        new.units_for(touched),
        skipped,
        stamped_old,
        logs_only(stamped_old, new.units_for(stamped), changes.written_in_logs),
        rid if stamped or image_stamped else None,
        wtime if stamped or image_stamped else None,
        changes=changes,
    )
    if stamped or image_stamped:
        plan.record_id_fields = tuple(changes.record_id_fields)
    if stamped and all(loc in changes.rows_written for loc in stamped):
        plan.stamped_rows = sum(changes.rows_written[loc] for loc in stamped)
    if imaged:
        plan.images = {loc: changes.change_images[loc] for loc in sorted(imaged)}
        plan.imaged_old_units = old.units_for(imaged)
        plan.imaged_new_units = new.units_for(imaged)
        plan.image_stamped = image_stamped
    return plan


def logs_only(
    old_units: tuple[ReadUnit, ...], new_units: tuple[ReadUnit, ...], in_logs: frozenset[str]
) -> tuple[ReadUnit, ...]:
    """``new_units``, those of ``in_logs`` narrowed to their log files.

    For a location whose rows written since ``start`` all lie in its log
    files (``Changes.written_in_logs``), the stamped read at ``end`` needs
    only those; the base file, unchanged since ``start`` (checked here too),
    is not read. Other units are returned as they are.
    """
    if not in_logs:
        return new_units
    base_at_start = {u.location: u.base_file for u in old_units}
    return tuple(
        replace(u, base_file=None)
        if u.location in in_logs
        and u.log_files
        and u.base_file is not None
        and base_at_start.get(u.location) == u.base_file
        else u
        for u in new_units
    )


def unimage(plan: DeltaPlan) -> None:
    """Send the imaged locations to the stamped path where they qualify, else to the general one."""
    stamped = plan.image_stamped
    if any(u.location in stamped for u in plan.imaged_new_units):
        plan.stamped_rows = None  # the metadata's figure covers the first stamped locations only
    plan.stamped_old_units += tuple(u for u in plan.imaged_old_units if u.location in stamped)
    plan.stamped_new_units += tuple(u for u in plan.imaged_new_units if u.location in stamped)
    plan.old_units += tuple(u for u in plan.imaged_old_units if u.location not in stamped)
    plan.new_units += tuple(u for u in plan.imaged_new_units if u.location not in stamped)
    plan.images, plan.imaged_old_units, plan.imaged_new_units = {}, (), ()


def image_changes(
    table: TableIndexes, spark: SparkSession, column: str, end: Instant, plan: DeltaPlan
) -> tuple[list[DataFrame], DataFrame | None, pa.Table | None]:
    """``(key, location, count)`` frames read from change data files and the frame to unpersist, or a table.

    Computed here. When the format's metadata bounds the change records (at
    most two rows each: before and after) within
    :data:`~lakesieve.maintenance.refresh.stamped.COLLECT_ROWS` and the plugin's sums
    are Spark's (:func:`_summed_by_equality`), the rows come to the driver as
    a table in the job that reads them; otherwise the frame is cached. When
    the plugin does not read this column from change data (it answers
    ``None``), the locations go to the stamped or general path; when it
    cannot read the files, likewise, with a warning.
    """
    if not plan.images:
        return [], None, None
    if not plan.imaged_new_units:  # nothing left at ``end`` to learn the column's type from
        unimage(plan)
        return [], None, None
    fmt = table.view.fmt
    frame: DataFrame | None = None
    try:
        if not isinstance(fmt, ReadsChangeImages):  # plan_delta images only for such formats
            raise TypeError(f"format {fmt.name} reads no change images")
        key_type = fmt.read(spark, plan.imaged_new_units[:1], end.id, False).schema[column].dataType
        frame = fmt.read_change_images(spark, plan.images, column, key_type)
        if frame is None:
            unimage(plan)
            return [], None, None
        records = [img.records for img in plan.images.values()]
        known = [r for r in records if r is not None]
        bounded = len(known) == len(records) and 2 * sum(known) <= COLLECT_ROWS
        if bounded and _summed_by_equality(frame):
            return [], None, frame.toArrow()
        frame = frame.persist()
        frame.count()
        return [frame], frame, None
    except Exception as exc:  # the other paths read the same locations exactly
        if frame is not None:
            frame.unpersist()
        warnings.warn(
            f"table {table.path}: change data of {len(plan.images)} locations cannot be read "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); reading the "
            "locations instead",
            LakesieveWarning,
            stacklevel=2,
        )
        unimage(plan)
        return [], None, None


def _summed_by_equality(frame: DataFrame) -> bool:
    """Whether a change-image or stamped frame is summed as Spark would sum it.

    Both are summed per ``(key, location)`` by value (``read_change_images``
    in the plugin, the stamped read in its tasks); for keys other than
    floating-point numbers that is Spark's equality.
    """
    return sums_by_equality(frame.schema["key"].dataType)


def _general_part(
    table: TableIndexes,
    spark: SparkSession,
    column: str,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
    renames: Mapping[str, str] | None = None,
) -> list[DataFrame]:
    """``(key, location, count)`` frames of the whole-slice reads at both instants.

    The rows of a location ``renames`` moves are read at ``start`` under its new name.
    """
    from pyspark.sql import functions as F

    frames = []
    for units, inst, sign in ((plan.old_units, start, -1), (plan.new_units, end, 1)):
        if not units:
            continue
        frame = read_columns(table.view.fmt, spark, units, inst.id, [column])
        location = F.col(LOCATION_COLUMN)
        if sign < 0 and renames:
            moved = spark.createDataFrame(
                sorted(renames.items()), "moved_from string, moved_to string"
            )
            frame = frame.join(
                F.broadcast(moved), frame[LOCATION_COLUMN] == moved["moved_from"], "left"
            )
            location = F.coalesce(F.col("moved_to"), F.col(LOCATION_COLUMN))
        frames.append(
            frame.select(
                F.col(column).alias("key"),
                location.alias("location"),
                F.lit(sign).cast("long").alias("count"),
            )
        )
    return frames


def stamped_changes(
    table: TableIndexes,
    spark: SparkSession,
    column: str,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
) -> tuple[list[DataFrame], DataFrame | None, pa.Table | None]:
    """``(key, location, count)`` frames of the stamped locations and the frame to unpersist, or a table.

    The table, when there is one, is their whole delta summed per ``(key,
    location)`` (:func:`~lakesieve.maintenance.refresh.stamped.stamped_delta`).

    See the module docstring: ``+1`` per row stamped after ``start`` at
    ``end``, ``-1`` per row at ``start`` whose record has such a row at the
    same location.
    """
    rid, wtime = plan.record_id_column, plan.write_time_column
    if not plan.stamped_new_units or rid is None or wtime is None:
        return [], None, None  # nothing at ``end``: no record written, none removed
    fmt = table.view.fmt
    key_type = fmt.read(spark, plan.stamped_new_units[:1], end.id, False).schema[column].dataType
    return stamped_delta(
        spark,
        fmt,
        plan.stamped_old_units,
        plan.stamped_new_units,
        start.id,
        end.id,
        rid,
        wtime,
        column,
        key_type,
        plan.stamped_rows,
        id_fields=plan.record_id_fields,
    )


@dataclass
class DeltaRows:
    """A delta's summed ``(key, location, count)`` rows: a Spark frame, or a table on the driver.

    ``renames`` maps locations that left the snapshot to the ones that
    replaced them, when the delta was summed by those pairs
    (:mod:`~lakesieve.maintenance.refresh.pairs`): it is then right only
    for an index whose entries were moved to the new names first.

    ``table`` is set when the delta was brought to the driver by the job that
    computed it (a stamped delta alone, summed in its tasks, within
    :data:`~lakesieve.maintenance.refresh.stamped.COLLECT_ROWS`); ``frame`` otherwise.
    """

    frame: DataFrame | None = None
    table: pa.Table | None = None
    renames: dict[str, str] = field(default_factory=dict)


def summed_frame(
    table: TableIndexes,
    spark: SparkSession,
    column: str,
    start: Instant,
    end: Instant,
    plan: DeltaPlan,
    renames: Mapping[str, str] | None = None,
) -> tuple[DeltaRows | None, DataFrame | None]:
    """The summed ``(key, location, count)`` delta (``None`` when nothing to read), and a frame to unpersist.

    With ``renames`` (:mod:`~lakesieve.maintenance.refresh.pairs_spark`), a
    rewritten file's old rows are summed with its new file's under the new
    name, and the result carries the renames.
    """
    from pyspark.sql import functions as F

    imaged, image_held, image_table = image_changes(table, spark, column, end, plan)
    if image_held is not None:
        plan.held.append(image_held)
    try:
        stamped, held, collected = stamped_changes(table, spark, column, start, end, plan)
    except Exception as exc:  # the general path reads the same locations exactly
        warnings.warn(
            f"table {table.path}: rows written since {start.id} cannot be read by their write "
            f"time ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); reading "
            f"{plan.locations_stamped} locations whole instead",
            LakesieveWarning,
            stacklevel=2,
        )
        plan.old_units += plan.stamped_old_units
        plan.new_units += plan.stamped_new_units
        plan.stamped_old_units, plan.stamped_new_units = (), ()
        stamped, held, collected = [], None, None
    moved = dict(renames or {})
    frames = _general_part(table, spark, column, start, end, plan, moved) + stamped + imaged
    tables = [t for t in (collected, image_table) if t is not None]
    if len(tables) == 1 and not frames:
        return DeltaRows(table=tables[0]), held  # summed by the tasks, on the driver
    from_tables = [frame_of(spark, t) for t in tables]
    frames += from_tables
    summed_parts = [*stamped, *imaged, *from_tables]
    if not frames:
        return None, held
    alone = len(frames) == 1 and any(frames[0] is f for f in summed_parts)
    if alone and _summed_by_equality(frames[0]):
        # one row per (key, location), none 0
        return DeltaRows(frame=frames[0], renames=moved), held
    union = frames[0]
    for part in frames[1:]:
        union = union.unionByName(part)
    summed = union.groupBy("key", "location").agg(F.sum("count").cast("long").alias("count"))
    return DeltaRows(frame=summed.where(F.col("count") != 0), renames=moved), held


def seen_after(live: Snapshot, parent: frozenset[int] | None, plan: DeltaPlan) -> frozenset[int]:
    """What the state a refresh commits has seen (:mod:`lakesieve.store.seen_locations`).

    ``live`` is the snapshot the refresh brings the index to. The parent's
    locations, less those the change removed, plus those it touched that are
    live: a location the change record (checked against both snapshots) never
    named stays unseen.
    """
    changes = plan.changes
    if changes is None:
        return parent if parent is not None else hashes(live.locations)
    return after_change(parent, changes.removed, changes.touched & live.locations, live.locations)
