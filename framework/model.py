"""Plain value types shared by the framework, format plugins and index types.

These are the nouns of ``DESIGN.md``: instants, locations, read units,
snapshots, changes, key queries and built indexes. They hold data only; the
behaviour lives in the plugins' objects (``lakesieve.contract.protocols``).

A **location** is an opaque string chosen by the format plugin. It is the unit
of skipping: for Hudi ``"<partition path>/<file group id>"`` (or just the file
group id for a non-partitioned table), for Delta and Iceberg the data file's
path relative to the table root. Index types store and return locations
without interpreting them.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import pyarrow as pa

#: Name of the column that carries a row's location when a format plugin reads
#: with ``with_location=True``.
LOCATION_COLUMN = "_lakesieve_location"

#: Values a key query may carry after binding to the column's type.
KeyValue = int | float | str | bytes | _dt.date | _dt.datetime | _dec.Decimal


@dataclass(frozen=True)
class TableRef:
    """A table as the plugins see it.

    Attributes:
        path: absolute path (or URI) of the table root.
        format: the format plugin's name (``"hudi"``, ``"delta"``, ...).
        options: format-specific options (catalog settings, storage options).
    """

    path: str
    format: str
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class Instant:
    """One completed point on a table's timeline.

    ``id`` sorts in timeline order when compared as ``sort_key`` (Hudi instant
    times are fixed-width digit strings; Delta versions and Iceberg snapshot
    sequence numbers are zero-padded by their plugins).

    Attributes:
        sort_key: a string that orders instants along the timeline.
        id: the instant as the user writes it (Hudi instant time, Delta
            version, Iceberg snapshot id).
        action: what produced it (``commit``, ``deltacommit``, ``replacecommit``,
            ``append``, ...).
    """

    sort_key: str
    id: str
    action: str = ""


@dataclass(frozen=True)
class ReadUnit:
    """What a query must read for one location at one instant.

    Attributes:
        location: the location this unit belongs to.
        base_file: path of the base/data file relative to the table root, or
            ``None`` for a Hudi file slice made of log files only.
        log_files: log files (Hudi) relative to the table root, oldest first.
        delete_files: delete files or deletion vectors (Iceberg/Delta), format-specific strings.
        partition_values: partition column values as strings, if any.
        num_records: rows in the base file if known (before merging logs).
        size_bytes: bytes that reading this unit touches.
        extra: anything else the format plugin needs to read the unit.
    """

    location: str
    base_file: str | None
    log_files: tuple[str, ...] = ()
    delete_files: tuple[str, ...] = ()
    partition_values: Mapping[str, str] = field(default_factory=dict)
    num_records: int | None = None
    size_bytes: int = 0
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """The read units visible at one instant (``instant`` is ``None`` for an empty table)."""

    instant: Instant | None
    units: tuple[ReadUnit, ...]

    @cached_property
    def locations(self) -> frozenset[str]:
        """Every location visible in this snapshot (computed once: a snapshot never changes)."""
        return frozenset(u.location for u in self.units)

    @cached_property
    def size_bytes(self) -> int:
        """Bytes that reading every unit touches (computed once)."""
        return sum(u.size_bytes for u in self.units)

    @property
    def rows_upper_bound(self) -> int | None:
        """Rows in the units' base files: at least the rows a read returns.

        ``None`` when a unit's count is unknown or it has log files (whose
        inserts the count would miss). Delete files only lower the rows read.
        """
        total = 0
        for unit in self.units:
            if unit.num_records is None or unit.log_files:
                return None
            total += unit.num_records
        return total

    def units_for(self, locations: frozenset[str] | set[str]) -> tuple[ReadUnit, ...]:
        """The read units whose location is in ``locations`` (``units`` itself when that is all)."""
        found = tuple(u for u in self.units if u.location in locations)
        return self.units if len(found) == len(self.units) else found


@dataclass(frozen=True)
class ChangeImageFiles:
    """Files recording, for one location, the before and after image of every change in a range.

    Attributes:
        files: the files (relative to the table root, format-specific content).
        records: the number of change records they must hold together, when
            the format's metadata says (a reader refuses files that differ).
    """

    files: tuple[str, ...]
    records: int | None = None


@dataclass(frozen=True)
class Changes:
    """Locations touched between two instants ``(start, end]``.

    Attributes:
        start: exclusive lower instant id (``None`` means from the beginning).
        end: inclusive upper instant id.
        added: locations that appeared.
        rewritten: locations whose content changed (new file slice, log file, ...).
        removed: locations that disappeared.
        updated_in_place: rewritten locations whose records were only replaced
            by new versions of themselves (no record inserted or deleted), so
            the values of ``key_columns`` they hold are unchanged. Optional:
            a format that cannot tell leaves it empty.
        key_columns: the columns identifying a record (Hudi's record key
            fields), whose values ``updated_in_place`` locations keep.
        record_id_column: a column holding a record identifier that is
            unique within a location (Hudi's ``_hoodie_record_key``), or
            ``None``.
        record_id_fields: integer columns that identify a record within a
            location exactly as ``record_id_column`` does (two rows hold the
            same record id if and only if they agree on all of them, nulls
            alike), cheaper to read than the id itself; the stamped read
            matches records on them. Optional: empty, the id is read.
        write_time_column: a string column holding, per row, the instant id
            that last wrote the row (Hudi's ``_hoodie_commit_time``), or
            ``None``.
        stamped: touched locations where, between ``start`` and ``end``,
            every row written carries a ``write_time_column`` value above
            ``start``, every other row is exactly as it was at ``start`` (at
            the same location), and no record identifier left the location.
            Their changes can be read as the rows stamped after ``start``
            plus the versions at ``start`` of those records. Optional: a
            format that cannot tell leaves it empty.
        change_images: rewritten locations whose every change in the range
            is recorded, as a row before and a row after (inserts: after
            only; deletes: before only), in change data files the format
            plugin reads with ``read_change_images``. Optional.
        written_in_logs: stamped locations whose rows written in the range
            all lie in log files appended after their base file (Hudi delta
            commits), on a table where a log record always replaces older
            versions of its record: reading the unit at ``end`` without its
            base file yields every row stamped after ``start`` there (and
            rows of older logs, which the stamped read's write-time filter
            drops). Optional.
        rows_written: for stamped locations, the rows written there in the
            range (inserted or updated) as the format's metadata records
            them: at least the rows a stamped read finds. A location left
            out has no such figure. Optional.
    """

    start: str | None
    end: str
    added: frozenset[str] = frozenset()
    rewritten: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    updated_in_place: frozenset[str] = frozenset()
    key_columns: tuple[str, ...] = ()
    record_id_column: str | None = None
    record_id_fields: tuple[str, ...] = ()
    write_time_column: str | None = None
    stamped: frozenset[str] = frozenset()
    change_images: Mapping[str, ChangeImageFiles] = field(default_factory=dict)
    written_in_logs: frozenset[str] = frozenset()
    rows_written: Mapping[str, int] = field(default_factory=dict)

    @property
    def touched(self) -> frozenset[str]:
        """Every location added, rewritten or removed."""
        return self.added | self.rewritten | self.removed


@dataclass(frozen=True)
class KeyQuery:
    """One predicate on one indexed column, in the shape an index type answers.

    The planner turns ``=``, ``IN``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``
    and ``IS NULL`` into one of three kinds. Values are already bound to the
    column's Python type (int, float, str, bytes, date, datetime, Decimal).

    Attributes:
        kind: ``"points"`` (equality or IN list), ``"range"`` or ``"is_null"``.
        values: the points, for ``kind == "points"``.
        low: lower bound of a range, ``None`` when unbounded.
        low_inclusive: whether ``low`` itself matches.
        high: upper bound of a range, ``None`` when unbounded.
        high_inclusive: whether ``high`` itself matches.
    """

    kind: Literal["points", "range", "is_null"]
    values: tuple[Any, ...] = ()
    low: Any = None
    low_inclusive: bool = True
    high: Any = None
    high_inclusive: bool = True


@dataclass(frozen=True)
class LookupResult:
    """An index type's answer to a :class:`KeyQuery`.

    ``locations is None`` means "cannot help: every location may match".
    Otherwise it is a superset of the locations holding a matching row at
    the index's instant.
    """

    locations: frozenset[str] | None
    note: str = ""

    @classmethod
    def all(cls, note: str = "") -> LookupResult:
        """The answer that prunes nothing."""
        return cls(None, note)


@dataclass
class BuiltIndex:
    """The files and metadata of one index state, as an index type produces them.

    The framework's index store writes every table in ``files`` as an Arrow IPC
    file with a checksum, and hands the same structure back (read and verified)
    to ``IndexType.load``. ``meta`` must be JSON-serialisable; it is
    stored in the index log. Index files are data, never code.

    Attributes:
        files: named Arrow tables (``"directory"``, ``"blocks"``, ...).
        meta: small JSON-serialisable metadata (parameters, counts, key type).
        written: files Spark tasks already wrote into the state's folder
            (:mod:`lakesieve.store.task_files`), one record each (``name``,
            ``path``, ``sha256``, ``size_bytes``, ``rows``); the store adds
            them to the state's records instead of writing them.
        state_id: the state folder those files lie in (``None`` when none).
        fetch: at load, reads one of the state's on-demand files by name
            (checked against its checksum); ``None`` when every file is in
            ``files``.
    """

    files: dict[str, pa.Table]
    meta: dict[str, Any]
    written: list[dict[str, Any]] = field(default_factory=list)
    state_id: str | None = None
    fetch: Callable[[str], pa.Table] | None = None


@dataclass(frozen=True)
class WriteOptions:
    """How ``lakesieve write`` changes a table.

    Attributes:
        mode: ``bulk_insert``, ``insert``, ``upsert`` or ``delete`` (Hudi);
            ``append``/``overwrite``/``upsert``/``delete`` for other formats.
        record_key: record key columns (composite keys have several).
        partition_by: partition columns (empty: not partitioned).
        table_type: ``cow`` or ``mor`` (Hudi).
        file_groups: number of file groups for bulk inserts and bucketed writes.
        bucket_column: integer column whose value picks the file group of each
            row (``value mod file_groups`` unless ``bucket_rule`` says ``range``).
        bucket_rule: ``"mod"`` or ``"range"`` (contiguous key ranges per file;
            Delta and Iceberg); ``None``: the table's rule, ``mod`` for a new one.
        precombine: column that decides which of two rows with one key wins.
        small_file_limit_bytes: file groups smaller than this take new inserts
            before new groups are opened.
        max_file_size_bytes: target upper size of a base file.
        table_name: name recorded in the table's properties.
        extra: further format-specific options.
    """

    mode: str = "upsert"
    record_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    table_type: str = "cow"
    file_groups: int | None = None
    bucket_column: str | None = None
    bucket_rule: str | None = None
    precombine: str | None = None
    small_file_limit_bytes: int = 100 * 1024 * 1024
    max_file_size_bytes: int = 120 * 1024 * 1024
    table_name: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
