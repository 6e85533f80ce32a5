"""The read units of an Iceberg table at one snapshot: one per live data file.

Manifests are read with pyiceberg; delete files are matched to data files by
the Iceberg rules:

- a **position delete** file (or deletion vector) applies to a data file of
  the same partition spec and partition whose data sequence number is not
  greater than its own; when its ``file_path`` bounds name one data file, to
  that file only;
- an **equality delete** file applies to data files with a strictly smaller
  data sequence number, in the same partition, or everywhere when its spec
  is unpartitioned.

A unit's ``location`` and ``base_file`` are the data file's path relative to
the table location (the full path when the file lies elsewhere);
``extra["file_path"]`` is the path exactly as the metadata writes it (what
position delete files name), ``extra["read_path"]`` the path to open (a
relative path is taken from the current directory, as pyiceberg does), and
``extra["identity_values"]`` the file's identity partition values
(:mod:`.columns`): a field a file does not carry takes that value. A file
the metadata names that does not exist here -- a path of another machine --
refuses the table in one line naming the path. ``delete_files`` entries are
``"<kind>-<format>|<path>"``, kind ``position`` or ``equality``, format
``parquet``, ``avro``, ``orc`` or ``puffin``; readers refuse kinds they
cannot apply.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakesieve.plugins.iceberg import catalog, columns, timeline
from lakesieve.plugins.iceberg.errors import IcebergFeatureError
from lakesieve.sdk import ReadUnit, Snapshot, TableRef, paths

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile, ManifestEntry
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot

#: Field id of ``file_path`` in position delete files (Iceberg spec).
DELETE_FILE_PATH_ID = 2147483546
#: Field id of ``pos`` in position delete files (Iceberg spec).
DELETE_POS_ID = 2147483545

POSITION = "position"
EQUALITY = "equality"


@dataclass(frozen=True)
class LiveFiles:
    """The live files of one snapshot.

    Attributes:
        data: data file entries.
        deletes: delete file entries (position and equality).
    """

    data: list[ManifestEntry]
    deletes: list[ManifestEntry]


def live_files(table: Table, snap: IcebergSnapshot) -> LiveFiles:
    """Every live (added or existing) entry of a snapshot's manifests.

    Raises:
        IcebergFeatureError: the manifest list or a manifest does not exist here.
    """
    from pyiceberg.manifest import DataFileContent

    data: list[ManifestEntry] = []
    deletes: list[ManifestEntry] = []
    try:
        for manifest in snap.manifests(table.io):
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if entry.data_file.content == DataFileContent.DATA:
                    data.append(entry)
                else:
                    deletes.append(entry)
    except FileNotFoundError as exc:
        missing = exc.filename or str(exc).splitlines()[0]
        raise IcebergFeatureError(
            f"Iceberg table {table.metadata.location}: its metadata names {missing}, which does "
            "not exist here (a path of another machine?); refusing to read it"
        ) from None
    return LiveFiles(data, deletes)


def resolve_path(table: Table, table_path: str, path: str) -> str:
    """The path to open for a file the metadata names; refuses a local file that is not there.

    A relative path is taken from the folder the table's relative location is
    relative to (:func:`.catalog.absolute`), else from the current directory.

    Raises:
        IcebergFeatureError: naming the table and the missing path.
    """
    local = paths.local_path(catalog.absolute(table, path))
    if local is None:
        return path
    full = os.path.abspath(local)
    if not os.path.exists(full):
        raise IcebergFeatureError(
            f"Iceberg table {table_path}: its metadata names {path}, which does not exist here "
            "(a path of another machine?); refusing to read it"
        )
    return full


def delete_kind(delete_file: DataFile) -> str:
    """``"<kind>-<format>"`` of a delete file (``position-parquet``, ``equality-avro``...)."""
    from pyiceberg.manifest import DataFileContent

    kind = POSITION if delete_file.content == DataFileContent.POSITION_DELETES else EQUALITY
    return f"{kind}-{str(delete_file.file_format.value).lower()}"


def referenced_path(delete_file: DataFile) -> str | None:
    """The one data file a position delete file names through its path bounds, if any."""
    lower = (delete_file.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    upper = (delete_file.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lower is not None and lower == upper:
        try:
            return bytes(lower).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def partition_key(data_file: DataFile) -> tuple[int, tuple[Any, ...]]:
    record = data_file.partition
    values = tuple(record[i] for i in range(len(record))) if record is not None else ()
    return int(data_file.spec_id or 0), values


def match_deletes(table: Table, files: LiveFiles) -> dict[str, list[DataFile]]:
    """Delete files applying to each data file, keyed by the data file's path."""
    from pyiceberg.manifest import DataFileContent

    specs = table.metadata.specs()
    by_path: dict[str, list[tuple[int, DataFile]]] = defaultdict(list)
    by_partition: dict[tuple[int, tuple[Any, ...]], list[tuple[int, DataFile]]] = defaultdict(list)
    global_eq: list[tuple[int, DataFile]] = []
    for entry in files.deletes:
        delete_file = entry.data_file
        seq = int(entry.sequence_number or 0)
        if delete_file.content == DataFileContent.POSITION_DELETES:
            target = referenced_path(delete_file)
            if target is not None:
                by_path[target].append((seq, delete_file))
            else:
                by_partition[partition_key(delete_file)].append((seq, delete_file))
            continue
        spec = specs.get(int(delete_file.spec_id or 0))
        if spec is None or spec.is_unpartitioned():
            global_eq.append((seq, delete_file))
        else:
            by_partition[partition_key(delete_file)].append((seq, delete_file))

    def applies(seq: int, delete_seq: int, delete_file: DataFile) -> bool:
        if delete_file.content == DataFileContent.POSITION_DELETES:
            return delete_seq >= seq
        return delete_seq > seq

    out: dict[str, list[DataFile]] = {}
    for entry in files.data:
        data_file = entry.data_file
        seq = int(entry.sequence_number or 0)
        found = [
            d
            for s, d in (
                by_path.get(data_file.file_path, [])
                + by_partition.get(partition_key(data_file), [])
                + global_eq
            )
            if applies(seq, s, d)
        ]
        if found:
            out[data_file.file_path] = found
    return out


def location_of(table: Table, file_path: str) -> str:
    """The location of a data file: its path relative to the table location."""
    return paths.relative_to(table.metadata.location, file_path)


def partition_text(table: Table, data_file: DataFile) -> dict[str, str]:
    """The partition values of a data file in Iceberg's human form, by partition field name.

    Null values are left out (``{"day": "2024-01-31", "bucket": "3"}``).
    """
    spec = table.metadata.specs().get(int(data_file.spec_id or 0))
    record = data_file.partition
    if spec is None or record is None or not spec.fields:
        return {}
    try:
        types = [f.field_type for f in spec.partition_type(table.schema()).fields]
    except Exception:  # a source column left the schema: fall back to plain text
        types = []
    out = {}
    for i, field in enumerate(spec.fields):
        value = record[i] if i < len(record) else None
        if value is None:
            continue
        out[field.name] = (
            field.transform.to_human_string(types[i], value) if i < len(types) else str(value)
        )
    return out


def unit_of(
    table: Table, entry: ManifestEntry, deletes: list[DataFile], table_path: str = ""
) -> ReadUnit:
    """The read unit of one live data file entry.

    Raises:
        IcebergFeatureError: the data file or a delete file does not exist here.
    """
    data_file = entry.data_file
    location = location_of(table, data_file.file_path)
    where = table_path or table.metadata.location
    identity = columns.identity_values(data_file, table.metadata)
    return ReadUnit(
        location=location,
        base_file=location,
        delete_files=tuple(
            f"{delete_kind(d)}|{resolve_path(table, where, d.file_path)}" for d in deletes
        ),
        partition_values=partition_text(table, data_file),
        num_records=int(data_file.record_count),
        size_bytes=int(data_file.file_size_in_bytes)
        + sum(int(d.file_size_in_bytes) for d in deletes),
        extra={
            "file_path": data_file.file_path,
            "read_path": resolve_path(table, where, data_file.file_path),
            columns.IDENTITY_KEY: columns.encode_identity(identity),
            "file_format": str(data_file.file_format.value).lower(),
            "spec_id": str(data_file.spec_id or 0),
            "data_sequence_number": str(entry.sequence_number or 0),
        },
    )


def build_snapshot(ref: TableRef, instant: str | None) -> Snapshot:
    """The read units of the table at ``instant`` (the current snapshot when ``None``).

    Raises:
        InstantNotFoundError: ``instant`` is not a snapshot on the timeline.
    """
    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    if snap is None:
        return Snapshot(instant=None, units=())
    files = live_files(table, snap)
    matched = match_deletes(table, files)
    units = sorted(
        (unit_of(table, e, matched.get(e.data_file.file_path, []), ref.path) for e in files.data),
        key=lambda u: u.location,
    )
    return Snapshot(instant=timeline.instant_of(table, snap), units=tuple(units))


def parse_delete_entry(text: str) -> tuple[str, str, str]:
    """``(kind, format, path)`` of one ``delete_files`` entry."""
    head, _, path = text.partition("|")
    kind, _, fmt = head.partition("-")
    return kind, fmt, path


def data_path(unit: ReadUnit) -> str:
    """The data file path of a unit as the metadata writes it."""
    return unit.extra.get("file_path") or unit.base_file or unit.location


def read_path(unit: ReadUnit) -> str:
    """The path to open for a unit's data file."""
    return unit.extra.get("read_path") or data_path(unit)
