"""Writing a Spark DataFrame to an Iceberg table as one snapshot.

Data files are written by Spark tasks (:func:`~lakesieve.sdk.writing.write_files`)
under ``<table>/data/``, in the table's Arrow schema with Iceberg field ids;
the driver turns each file's footer into a pyiceberg ``DataFile`` (metrics and
identity-partition values) and commits through the table's catalog
(:mod:`.catalog`, :mod:`.commit`). Modes:

- ``append`` (also ``insert`` and ``bulk_insert``): add the frame's files;
- ``overwrite``: the frame's files replace every data file of the table;
- ``delete``: rows whose record key matches a row of the frame are removed;
- ``upsert``: like delete, then the frame's rows are added (one per key).

Deletes and upserts follow the table's ``write.delete.mode`` and
``write.update.mode`` properties: ``copy-on-write`` (the default) rewrites
every data file holding a matching row; ``merge-on-read`` (format version 2
or later) writes position delete files, one per touched data file, naming the
matching rows. A new table is created with format version 2, identity
partitions on ``partition_by``, and the ``WriteOptions.extra`` keys that are
neither ``catalog.*`` nor ``table`` as table properties.

With ``bucket_column`` and ``file_groups = N`` every (partition, bucket) group
is written as exactly one file, by the rule ``bucket_rule`` names
(:class:`~lakesieve.sdk.writing.BucketLayout`). The layout is remembered in the table
property ``lakesieve.bucket-layout`` (set with the snapshot of the write that
first names it): later writes that do not name one keep it (a copy-on-write
upsert rewrites only the files of the buckets it touches, so the table keeps
its N files), a different one is refused (an overwrite may lay the table out
anew).

The record key is remembered in the table property ``lakesieve.record-key``:
set when the table is created with one, or with the snapshot of the first
write that names one (in the same metadata commit, so no extra snapshot).
Later upserts and deletes use it when no key is given and refuse a different
one.

Limits: identity partitioning only when lakesieve creates the table (other
transforms of existing tables are written if pyiceberg can derive the
partition from a file's bounds); the frame must have exactly the table's
columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.plugins.iceberg import catalog, commit, schema, snapshot, timeline
from lakesieve.plugins.iceberg.spark_read import FILE_PATH_COLUMN, POSITION_COLUMN, read_units
from lakesieve.sdk import Instant, TableRef, WriteError, WriteOptions, paths
from lakesieve.sdk.arrow import plain_schema
from lakesieve.sdk.writing import (
    BucketLayout,
    FileLayout,
    WrittenFile,
    check_keys,
    conform_frame,
    dedupe,
    normalise_mode,
    plan_rewrite,
    resolve_layout,
    write_files,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

DATA_DIR = "data"
MERGE_ON_READ = "merge-on-read"
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
#: table property holding the record key columns, comma-separated
RECORD_KEY_PROPERTY = "lakesieve.record-key"
#: table property holding the file layout of a bucketed table (JSON)
LAYOUT_PROPERTY = "lakesieve.bucket-layout"


def stored_record_key(table: Table | None) -> tuple[str, ...]:
    """The record key columns the table keeps in ``lakesieve.record-key`` (may be empty)."""
    if table is None:
        return ()
    raw = table.metadata.properties.get(RECORD_KEY_PROPERTY) or ""
    return tuple(c.strip() for c in raw.split(",") if c.strip())


def record_key_of(options: WriteOptions, stored: tuple[str, ...], path: str) -> tuple[str, ...]:
    """The record key of this write: the one given, else the one the table keeps.

    Raises:
        WriteError: the key given differs from the one the table keeps.
    """
    given = tuple(options.record_key)
    if given and stored and given != stored:
        raise WriteError(
            f"cannot write Iceberg table {path}: record key {','.join(given)} (--record-key) "
            f"differs from the table's record key {','.join(stored)} "
            f"(table property {RECORD_KEY_PROPERTY})"
        )
    return given or stored


def _table_properties(options: WriteOptions, layout_text: str | None) -> dict[str, str]:
    props = {
        k: str(v)
        for k, v in options.extra.items()
        if not k.startswith(catalog.CATALOG_PREFIX) and k != catalog.TABLE_OPTION
    }
    props.setdefault("format-version", "2")
    if options.record_key:
        props[RECORD_KEY_PROPERTY] = ",".join(options.record_key)
    if layout_text is not None:
        props[LAYOUT_PROPERTY] = layout_text
    return props


def _create(
    cat: Catalog,
    ident: str | tuple[str, ...],
    table: TableRef,
    df: DataFrame,
    options: WriteOptions,
    layout_text: str | None,
) -> Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    unknown = [c for c in options.partition_by if c not in df.columns]
    if unknown:
        raise WriteError(
            f"cannot create Iceberg table {table.path}: partition column(s) {', '.join(unknown)} "
            "are not in the frame"
        )
    arrow = plain_schema(to_arrow_schema(df.schema, timezone="UTC"))
    created = cat.create_table(
        ident, schema=arrow, location=table.path, properties=_table_properties(options, layout_text)
    )
    if options.partition_by:
        with created.update_spec() as update:
            for column in options.partition_by:
                update.add_identity(column)
    return created


def _layout(table: Table, root: str) -> FileLayout:
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.transforms import IdentityTransform

    iceberg_schema = table.schema()
    spec = table.spec()
    part_cols = tuple(
        iceberg_schema.find_column_name(f.source_id) or ""
        for f in spec.fields
        if isinstance(f.transform, IdentityTransform)
    )
    return FileLayout(
        root=root,
        directory=DATA_DIR,
        partition_columns=part_cols,
        file_schema=schema_to_pyarrow(iceberg_schema),
    )


def _data_files(table: Table, root: str, files: Sequence[WrittenFile]) -> list[DataFile]:
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    base = table.metadata.location
    return [
        parquet_file_to_data_file(table.io, table.metadata, paths.join(base, f.path)) for f in files
    ]


def _position_delete_files(
    table: Table, files: Sequence[WrittenFile], targets: dict[str, DataFile]
) -> list[DataFile]:
    """pyiceberg ``DataFile`` entries for written position delete files (one data file each)."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    out = []
    base = table.metadata.location
    for f in files:
        target_path = f.group_values[0] or ""
        target = targets[target_path]
        bound = target_path.encode("utf-8")
        delete_file = DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=paths.join(base, f.path),
            file_format=FileFormat.PARQUET,
            partition=target.partition,
            record_count=f.num_records,
            file_size_in_bytes=f.size_bytes,
            lower_bounds={snapshot.DELETE_FILE_PATH_ID: bound},
            upper_bounds={snapshot.DELETE_FILE_PATH_ID: bound},
            sort_order_id=None,
            equality_ids=None,
            key_metadata=None,
        )
        delete_file.spec_id = target.spec_id  # not a manifest field: set apart
        out.append(delete_file)
    return out


def _merge_on_read(table: Table, mode: str) -> bool:
    key = DELETE_MODE if mode == "delete" else UPDATE_MODE
    wanted = table.metadata.properties.get(key, "copy-on-write") == MERGE_ON_READ
    return wanted and table.metadata.format_version >= 2


def _write_merge_on_read(
    spark: SparkSession,
    table: Table,
    ref: TableRef,
    frame: DataFrame,
    options: WriteOptions,
    mode: str,
    bucket: BucketLayout | None,
    remember: dict[str, str] | None = None,
) -> None:
    from lakesieve.plugins.iceberg.deletes import FILE_PATH, POS

    snap_id = str(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    current = snapshot.build_snapshot(ref, snap_id)
    rows = read_units(spark, ref, current.units, snap_id, with_location=True, with_position=True)
    keys = [k for k in options.record_key]
    key_frame = frame.select(*[f"`{k}`" for k in keys]).dropna().distinct()
    matched = rows.join(key_frame, on=keys, how="left_semi").select(
        rows[FILE_PATH_COLUMN].alias(FILE_PATH), rows[POSITION_COLUMN].alias(POS)
    )
    delete_layout = FileLayout(
        root=table.metadata.location,
        directory=DATA_DIR,
        partition_columns=(),
        file_schema=pa.schema(
            [
                pa.field(
                    FILE_PATH,
                    pa.string(),
                    False,
                    metadata={b"PARQUET:field_id": str(snapshot.DELETE_FILE_PATH_ID).encode()},
                ),
                pa.field(
                    POS,
                    pa.int64(),
                    False,
                    metadata={b"PARQUET:field_id": str(snapshot.DELETE_POS_ID).encode()},
                ),
            ]
        ),
    )
    written = write_files(matched, delete_layout, group_by=(FILE_PATH,), order_by=(POS,))
    live = snapshot.live_files(table, table.current_snapshot())  # type: ignore[arg-type]
    targets = {e.data_file.file_path: e.data_file for e in live.data}
    delete_files = _position_delete_files(table, written, targets)
    added: list[DataFile] = []
    if mode == "upsert":
        incoming = dedupe(frame, keys, options.precombine)
        added = _data_files(
            table, ref.path, write_files(incoming, _layout(table, table.metadata.location), bucket)
        )
    commit.row_delta(table, delete_files, added, remember)


def write_table(
    spark: SparkSession, ref: TableRef, df: DataFrame, options: WriteOptions
) -> Instant:
    """Write ``df`` to the Iceberg table at ``ref.path`` as one snapshot; create it if needed.

    Raises:
        WriteError: bad mode, options or columns; nothing is committed then.
    """
    mode = normalise_mode(options.mode, ref.path, "Iceberg")
    cat, ident, table = catalog.load_for_write(ref.path, ref.options, options.extra)
    stored = stored_record_key(table)
    options = replace(options, record_key=record_key_of(options, stored, ref.path))
    missing = [c for c in options.record_key if c not in df.columns]
    if mode in ("delete", "upsert") and not options.record_key:
        raise WriteError(
            f"cannot {mode} Iceberg table {ref.path}: no record key given (--record-key) "
            f"and the table keeps none (table property {RECORD_KEY_PROPERTY})"
        )
    if missing:
        raise WriteError(
            f"cannot write Iceberg table {ref.path}: record key column(s) {', '.join(missing)} "
            "(--record-key) are not in the frame"
        )
    if mode in ("delete", "upsert"):
        check_keys(df, options.record_key, ref.path)
    if table is None and mode == "delete":
        raise WriteError(f"cannot delete from {ref.path}: there is no Iceberg table there")
    resolved = resolve_layout(
        options,
        df,
        table_path=ref.path,
        format_name="Iceberg",
        mode=mode,
        stored=None if table is None else table.metadata.properties.get(LAYOUT_PROPERTY),
        has_data=table is not None and table.current_snapshot() is not None,
        property_name=LAYOUT_PROPERTY,
    )
    bucket = resolved.layout
    # a key given to a table that keeps none is recorded with this write's snapshot
    learnt: dict[str, str] = {}
    if table is not None and options.record_key and not stored:
        learnt[RECORD_KEY_PROPERTY] = ",".join(options.record_key)
    if table is not None and resolved.remember is not None:
        learnt[LAYOUT_PROPERTY] = resolved.remember
    remember = learnt or None
    if table is None:
        table = _create(cat, ident, ref, df, options, resolved.remember)
        mode = "append"
    schema.check_no_renames(table.metadata, ref.path)
    arrow = schema.arrow_schema(table.schema(), ref.path)
    frame = conform_frame(df, schema.spark_schema(arrow), ref.path)
    layout = _layout(table, table.metadata.location)
    has_data = table.current_snapshot() is not None
    if mode == "append" or (mode == "upsert" and not has_data):
        commit.append(
            table, _data_files(table, ref.path, write_files(frame, layout, bucket)), remember
        )
    elif mode == "overwrite":
        removed = (
            [e.data_file for e in snapshot.live_files(table, table.current_snapshot()).data]  # type: ignore[arg-type]
            if has_data
            else []
        )
        added = _data_files(table, ref.path, write_files(frame, layout, bucket))
        commit.replace(table, removed, added, remember)
    elif mode == "delete" and not has_data:
        commit.append(table, [], remember)
    elif _merge_on_read(table, mode):
        _write_merge_on_read(spark, table, ref, frame, options, mode, bucket, remember)
    else:
        snap_id = str(table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
        current = snapshot.build_snapshot(ref, snap_id)
        rows = read_units(spark, ref, current.units, snap_id, with_location=True)
        plan = plan_rewrite(rows, frame, options.record_key, mode, bucket, options.precombine)
        by_location = {u.location: u for u in current.units}
        live = snapshot.live_files(table, table.current_snapshot())  # type: ignore[arg-type]
        by_path = {e.data_file.file_path: e.data_file for e in live.data}
        removed = [by_path[by_location[loc].extra["file_path"]] for loc in plan.touched]
        added = _data_files(table, ref.path, write_files(plan.rows, layout, bucket))
        commit.replace(table, removed, added, remember)
    fresh = cat.load_table(ident)
    snap = timeline.resolve(fresh, ref.path, None)
    if snap is None:
        raise WriteError(f"Iceberg table {ref.path}: the write left no snapshot")
    return timeline.instant_of(fresh, snap)
