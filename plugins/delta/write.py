"""Writing a Spark DataFrame to a Delta table as one commit.

Data files are written by Spark tasks (:func:`~lakesieve.sdk.writing.write_files`,
statistics from each file's footer) and committed on the driver through
delta-rs: a new table with ``create_table_with_add_actions``, later commits
with ``DeltaTable.create_write_transaction``, so delta-rs keeps the log,
protocol and conflict checks. Modes:

- ``append`` (also ``insert`` and ``bulk_insert``): add the frame's files;
- ``overwrite``: the frame's files replace every file of the table;
- ``delete``: rows whose record key matches a row of the frame are removed,
  copy-on-write (every file holding such a row is rewritten without it);
- ``upsert``: like delete, then the frame's rows are added (one per key).

With ``bucket_column`` and ``file_groups = N`` every (partition, bucket)
group is written as exactly one file, by the rule ``bucket_rule`` names
(:class:`~lakesieve.sdk.writing.BucketLayout`). The layout is remembered in the table
property ``lakesieve.bucketLayout``: later writes that do not name one keep
it (an upsert rewrites only the files of the buckets it touches, so the
table keeps its N files), a different one is refused (an overwrite may lay
the table out anew). ``WriteOptions.extra`` keys starting with ``delta.``
become table properties when the table is created
(``delta.enableDeletionVectors``, ``delta.appendOnly``...).

The record key is remembered: a table created with one keeps it in the table
property ``lakesieve.recordKey`` (delta-rs accepts a property it does not
know only on an empty table, so a table created with a record key or a
layout is created empty as version 0 and the rows are version 1). A table
created without one learns the key (or layout) of the first later write that
names one (``--record-key``): a metadata-only commit (``SET TBLPROPERTIES``)
follows that write's data commit. Later
upserts and deletes use it when no key is given and refuse a different one.

Limits: the frame must have exactly the table's columns (no schema
evolution); tables with column mapping are not written; files that carry a deletion vector cannot be rewritten (delta-rs
cannot name the vector in a remove action), so a delete or upsert touching
one is refused before anything is written.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from deltalake import DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions
from lakesieve.plugins.delta import schema, snapshot, tables, timeline
from lakesieve.plugins.delta.stats import delta_stats
from lakesieve.sdk import Instant, TableRef, WriteError, WriteOptions
from lakesieve.sdk.arrow import plain_schema
from lakesieve.sdk.writing import (
    BucketLayout,
    FileLayout,
    WrittenFile,
    check_keys,
    conform_frame,
    normalise_mode,
    plan_rewrite,
    resolve_layout,
    write_files,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

CONFIG_PREFIX = "delta."


def _add_action(file: WrittenFile, part_cols: list[str], now_ms: int) -> AddAction:
    return AddAction(
        path=file.path,  # delta-rs URL-encodes paths as it writes the log
        size=file.size_bytes,
        partition_values=dict(zip(part_cols, file.partition_values, strict=True)),
        modification_time=now_ms,
        data_change=True,
        stats=file.info,
    )


def _layout(root: str, arrow: pa.Schema, part_cols: list[str]) -> FileLayout:
    import pyarrow as pa

    file_schema = pa.schema([f for f in arrow if f.name not in set(part_cols)])
    return FileLayout(
        root=root,
        directory="",
        partition_columns=tuple(part_cols),
        file_schema=file_schema,
        describe=delta_stats,
    )


def _create(
    table: TableRef,
    df: DataFrame,
    options: WriteOptions,
    bucket: BucketLayout | None,
    layout_text: str | None,
) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    part_cols = list(options.partition_by)
    unknown = [c for c in part_cols if c not in df.columns]
    if unknown:
        raise WriteError(
            f"cannot create Delta table {table.path}: partition column(s) {', '.join(unknown)} "
            "are not in the frame"
        )
    missing = [c for c in options.record_key if c not in df.columns]
    if missing:
        raise WriteError(
            f"cannot create Delta table {table.path}: record key column(s) {', '.join(missing)} "
            "(--record-key) are not in the frame"
        )
    arrow = plain_schema(to_arrow_schema(df.schema, timezone="UTC"))
    files = write_files(df, _layout(table.path, arrow, part_cols), bucket)
    now = int(time.time() * 1000)
    config = {k: str(v) for k, v in options.extra.items() if k.startswith(CONFIG_PREFIX)}
    adds = [_add_action(f, part_cols, now) for f in files]
    store = tables.storage_options(table.options)
    if not options.record_key and layout_text is None:
        create_table_with_add_actions(
            table.path,
            DeltaSchema.from_arrow(arrow),
            adds,
            mode="error",
            partition_by=part_cols or None,
            name=options.table_name,
            configuration=config or None,
            storage_options=store,
        )
        return
    # delta-rs takes a property it does not know only when a table is created
    # empty: the table (version 0) keeps the record key and layout, the data is version 1
    if options.record_key:
        config[tables.RECORD_KEY_PROPERTY] = ",".join(options.record_key)
    if layout_text is not None:
        config[tables.LAYOUT_PROPERTY] = layout_text
    created = DeltaTable.create(
        table.path,
        DeltaSchema.from_arrow(arrow),
        mode="error",
        partition_by=part_cols or None,
        name=options.table_name,
        configuration=config,
        storage_options=store,
        raise_if_key_not_exists=False,
    )
    created.create_write_transaction(
        list(adds), "append", created.schema(), partition_by=part_cols or None
    )


def _remember(dt: DeltaTable, properties: dict[str, str]) -> None:
    """Keep a learnt record key or layout in the table properties of ``dt`` (its latest version).

    delta-rs takes a property it does not know on a table with data only
    through ``ALTER`` (one metadata-only commit, no data change).
    """
    dt.alter.set_table_properties(properties, raise_if_not_exists=False)


def record_key_of(options: WriteOptions, dt: DeltaTable | None, path: str) -> tuple[str, ...]:
    """The record key of this write: the one given, else the one the table keeps.

    Raises:
        WriteError: the key given differs from the one the table keeps.
    """
    given = tuple(options.record_key)
    stored = tables.stored_record_key(dt) if dt is not None else ()
    if given and stored and given != stored:
        raise WriteError(
            f"cannot write Delta table {path}: record key {','.join(given)} (--record-key) "
            f"differs from the table's record key {','.join(stored)} "
            f"(table property {tables.RECORD_KEY_PROPERTY})"
        )
    return given or stored


def _rewrite(
    spark: SparkSession,
    table: TableRef,
    dt: DeltaTable,
    frame: DataFrame,
    options: WriteOptions,
    mode: str,
    bucket: BucketLayout | None,
) -> list[AddAction | RemoveAction]:
    from lakesieve.plugins.delta.spark_read import read_units

    tables.check_readable(dt, table.path)
    version = str(dt.version())
    current = snapshot.build_snapshot(table, version)
    rows = read_units(spark, table, current.units, version, with_location=True)
    plan = plan_rewrite(rows, frame, options.record_key, mode, bucket, options.precombine)
    by_location = {u.location: u for u in current.units}
    with_dv = [loc for loc in plan.touched if by_location[loc].delete_files]
    if with_dv:
        raise WriteError(
            f"cannot {mode} in Delta table {table.path}: {len(with_dv)} file(s) to rewrite carry a "
            f"deletion vector (e.g. {with_dv[0]}), which delta-rs cannot remove; nothing was written"
        )
    part_cols = schema.partition_columns(dt)
    files = write_files(plan.rows, _layout(table.path, schema.arrow_schema(dt), part_cols), bucket)
    now = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = []
    for loc in plan.touched:
        unit = by_location[loc]
        actions.append(
            RemoveAction(
                path=loc,  # plain, as for adds
                data_change=True,
                deletion_timestamp=now,
                size=unit.size_bytes,
                partition_values={c: unit.partition_values.get(c) for c in part_cols},
            )
        )
    actions.extend(_add_action(f, part_cols, now) for f in files)
    return actions


def _check_existing(dt: DeltaTable, path: str, options: WriteOptions) -> None:
    """Refuse a write to an existing table lakesieve's writer cannot change as asked.

    Raises:
        WriteError: the table uses column mapping, or other partition columns are named.
    """
    if tables.column_mapping_mode(dt) != "none":
        raise WriteError(
            f"cannot write Delta table {path}: it uses column mapping "
            f"(mode {tables.column_mapping_mode(dt)!r}), which lakesieve's writer does not produce"
        )
    part_cols = schema.partition_columns(dt)
    if options.partition_by and list(options.partition_by) != part_cols:
        raise WriteError(
            f"cannot write Delta table {path}: partition columns "
            f"{list(options.partition_by)} (--partition-by) "
            f"differ from the table's partition columns {part_cols}"
        )


def write_table(
    spark: SparkSession, table: TableRef, df: DataFrame, options: WriteOptions
) -> Instant:
    """Write ``df`` to the Delta table at ``table.path`` as one commit; create it if needed.

    Raises:
        WriteError: bad mode, options or columns; nothing is written then.
    """
    mode = normalise_mode(options.mode, table.path, "Delta")
    opts = tables.storage_options(table.options)
    exists = DeltaTable.is_deltatable(table.path, storage_options=opts)
    dt = DeltaTable(table.path, storage_options=opts) if exists else None
    options = replace(options, record_key=record_key_of(options, dt, table.path))
    if mode in ("delete", "upsert"):
        if not options.record_key:
            raise WriteError(
                f"cannot {mode} Delta table {table.path}: no record key given (--record-key) "
                f"and the table keeps none (table property {tables.RECORD_KEY_PROPERTY})"
            )
        check_keys(df, options.record_key, table.path)
    if dt is None and mode == "delete":
        raise WriteError(f"cannot delete from {table.path}: there is no Delta table there")
    if dt is not None:
        _check_existing(dt, table.path, options)
    resolved = resolve_layout(
        options,
        df,
        table_path=table.path,
        format_name="Delta",
        mode=mode,
        stored=tables.stored_layout(dt) if dt is not None else None,
        has_data=dt is not None,
        property_name=tables.LAYOUT_PROPERTY,
    )
    bucket = resolved.layout
    if dt is None:
        _create(table, df, options, bucket, resolved.remember)
    else:
        part_cols = schema.partition_columns(dt)
        frame = conform_frame(df, schema.spark_schema(dt), table.path)
        if mode in ("append", "overwrite"):
            layout = _layout(table.path, schema.arrow_schema(dt), part_cols)
            now = int(time.time() * 1000)
            adds = [_add_action(f, part_cols, now) for f in write_files(frame, layout, bucket)]
            dt.create_write_transaction(
                list(adds), mode, dt.schema(), partition_by=part_cols or None
            )
        else:
            actions = _rewrite(spark, table, dt, frame, options, mode, bucket)
            dt.create_write_transaction(
                actions, "append", dt.schema(), partition_by=part_cols or None
            )
    latest = tables.open_table(table)
    written = latest.version()  # the data commit: the instant this write returns
    learnt: dict[str, str] = {}
    if dt is not None and options.record_key and not tables.stored_record_key(dt):
        learnt[tables.RECORD_KEY_PROPERTY] = ",".join(options.record_key)
    if dt is not None and resolved.remember is not None:
        learnt[tables.LAYOUT_PROPERTY] = resolved.remember
    if learnt:
        _remember(latest, learnt)
    line = {i.id: i for i in timeline.list_instants(table)}
    return line.get(str(written), timeline.instant_of(written))
