"""Checking a write before anything is written: options, table settings, columns, schema.

:func:`validate` turns the caller's :class:`~lakesieve.sdk.WriteOptions`, the
DataFrame's schema and the table's properties and latest schema into a
:class:`WriteJob`, or raises :class:`~lakesieve.sdk.WriteError` with one
line naming the table and the option or column at fault. It reads only
metadata: no Spark job runs and nothing is written. :func:`precheck` runs
the part that needs no DataFrame, before Spark starts.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from lakesieve.plugins.hudi.cdc import BEFORE_AFTER, CDC_ENABLED, CDC_MODE, records_images
from lakesieve.plugins.hudi.keygen import KeySpec
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer.schema import (
    META_COLUMNS,
    SchemaProblem,
    avro_schema,
    schema_mismatch,
    table_column_order,
)
from lakesieve.plugins.hudi.writer.timeline import TimelineState
from lakesieve.sdk import WriteError, WriteOptions
from pyspark.sql import DataFrame
from pyspark.sql import types as T

if TYPE_CHECKING:
    import pyarrow as pa

MODES = ("bulk_insert", "insert", "upsert", "delete")
TABLE_TYPES = {
    "cow": cfg.COPY_ON_WRITE,
    "copy_on_write": cfg.COPY_ON_WRITE,
    "mor": cfg.MERGE_ON_READ,
    "merge_on_read": cfg.MERGE_ON_READ,
}
INTERNAL_PREFIX = "_lakesieve_w_"
_INTEGER_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_KEY_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
    T.StringType,
    T.CharType,
    T.VarcharType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
)


@dataclass(frozen=True)
class WriteJob:
    """A validated write: everything decided before anything is written.

    Attributes:
        mode: ``bulk_insert``, ``insert``, ``upsert`` or ``delete``.
        table_name: the table's name (its Avro record is ``<name>_record``).
        spec: record key and partition path rules.
        precombine: column deciding between duplicates of a key, if any.
        bucket: ``(bucket column, number of buckets)`` of a bucketed table.
        file_groups: ``options.file_groups``.
        columns: the incoming columns to keep, in table order.
        data_schema: the data columns' Spark schema (``None`` for deletes).
        schema_json: the Avro schema recorded in the commit.
        new_properties: ``hoodie.properties`` of a table to create, else ``None``.
        has_partition_columns: whether the data carries every partition column.
        has_bucket_column: whether the data carries the bucket column.
        table_type: ``cow`` or ``mor``.
        cdc: whether the write logs change data (before and after images) for
            the file groups it rewrites (:mod:`lakesieve.plugins.hudi.cdc`).
    """

    mode: str
    table_name: str
    spec: KeySpec
    precombine: str | None
    bucket: tuple[str, int] | None
    file_groups: int | None
    columns: tuple[str, ...]
    data_schema: T.StructType | None
    schema_json: str
    new_properties: dict[str, str] | None
    has_partition_columns: bool
    has_bucket_column: bool
    table_type: str = "cow"
    cdc: bool = False


def fail(path: str, message: str, argument: str | None = None, value: object = None) -> NoReturn:
    """Raise the one-line :class:`WriteError` of a refused write.

    A message about one write option writes ``{argument}`` where it names it
    and passes the option's name and value as data, so each front end spells
    it its own way (``record_key='id'``; the CLI's ``--record-key id``).
    """
    raise WriteError(f"cannot write Hudi table {path}: {message}", argument=argument, value=value)


def _as_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)  # type: ignore[attr-defined]


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def table_type_of(props: dict[str, str] | None) -> str:
    """``cow`` or ``mor`` for a table's properties (``cow`` when there is no table)."""
    kind = (props or {}).get(cfg.TYPE, cfg.COPY_ON_WRITE).upper()
    return "mor" if kind == cfg.MERGE_ON_READ else "cow"


def _check_existing(path: str, props: dict[str, str], table_type: str | None) -> None:
    kind = props.get(cfg.TYPE, cfg.COPY_ON_WRITE).upper()
    if kind not in (cfg.COPY_ON_WRITE, cfg.MERGE_ON_READ):
        fail(path, f"table type {props.get(cfg.TYPE)} is not supported")
    if table_type is not None and table_type != kind:
        fail(path, f"{{argument}} differs from the table's type {kind}", "table_type", "mor")
    if props.get(cfg.VERSION, "6") != "6":
        fail(path, f"table version {props.get(cfg.VERSION)} is not supported (only 6)")
    keygen = props.get(cfg.KEYGEN) or ""
    if keygen and keygen not in cfg.SUPPORTED_KEYGENS:
        fail(path, f"key generator {keygen} is not supported by this writer")
    if props.get(cfg.POPULATE_META, "true").lower() != "true":
        fail(path, "tables without meta fields (hoodie.populate.meta.fields) are not supported")
    if props.get(cfg.BASE_FORMAT, "PARQUET").upper() != "PARQUET":
        fail(path, f"base file format {props.get(cfg.BASE_FORMAT)} is not supported")


@dataclass(frozen=True)
class _Layout:
    record_key: tuple[str, ...]
    partition_by: tuple[str, ...]
    hive_style: bool
    precombine: str | None
    table_name: str
    bucket: tuple[str, int] | None


def _differs(path: str, option: str, given: object, table: object) -> NoReturn:
    fail(path, f"{{argument}} differs from the table's {table}", option, given)


def _new_layout(path: str, options: WriteOptions, hive: bool | None) -> _Layout:
    record_key = _as_tuple(options.record_key)
    if not record_key:
        fail(path, "{argument} is required to create the table", "record_key")
    bucket = None
    if options.bucket_column:
        if options.file_groups is None:
            fail(path, f"option bucket_column={options.bucket_column} needs option file_groups")
        bucket = (options.bucket_column, options.file_groups)
    return _Layout(
        record_key=record_key,
        partition_by=_as_tuple(options.partition_by),
        hive_style=bool(hive),
        precombine=options.precombine,
        table_name=options.table_name or os.path.basename(path.rstrip("/")) or "hudi_table",
        bucket=bucket,
    )


def _existing_layout(
    path: str, options: WriteOptions, hive: bool | None, props: dict[str, str]
) -> _Layout:
    record_key = _as_tuple(options.record_key)
    table_key = _split(props.get(cfg.RECORD_KEY))
    if record_key and record_key != table_key:
        _differs(path, "record_key", ",".join(record_key), f"record key {','.join(table_key)}")
    partition_by = _as_tuple(options.partition_by)
    table_parts = _split(props.get(cfg.PARTITION_FIELDS))
    if partition_by and partition_by != table_parts:
        parts = ",".join(table_parts) or "(none)"
        _differs(path, "partition_by", ",".join(partition_by), f"partition fields {parts}")
    table_hive = props.get(cfg.HIVE_STYLE, "false").lower() == "true"
    if hive is not None and hive != table_hive:
        _differs(path, "hive_style_partitioning", str(hive).lower(), str(table_hive).lower())
    table_pre = props.get(cfg.PRECOMBINE) or None
    if options.precombine and table_pre and options.precombine != table_pre:
        _differs(path, "precombine", options.precombine, f"precombine field {table_pre}")
    name = props.get(cfg.NAME) or os.path.basename(path.rstrip("/"))
    if options.table_name and options.table_name != name:
        _differs(path, "table_name", options.table_name, f"name {name}")
    bucket = None
    if props.get(cfg.BUCKET_FIELD):
        bucket = (props[cfg.BUCKET_FIELD], int(props.get(cfg.BUCKET_COUNT) or 0))
        if options.bucket_column and options.bucket_column != bucket[0]:
            _differs(path, "bucket_column", options.bucket_column, f"bucket column {bucket[0]}")
        if options.file_groups is not None and options.file_groups != bucket[1]:
            _differs(path, "file_groups", options.file_groups, f"{bucket[1]} buckets")
    elif options.bucket_column:
        fail(path, f"option bucket_column={options.bucket_column}: the table is not bucketed")
    return _Layout(
        record_key=table_key,
        partition_by=table_parts,
        hive_style=table_hive,
        precombine=options.precombine or table_pre,
        table_name=name,
        bucket=bucket,
    )


def _resolve_layout(path: str, options: WriteOptions, props: dict[str, str] | None) -> _Layout:
    """Record key, partitioning, precombine, name and buckets of the write."""
    hive_opt = (options.extra or {}).get("hive_style_partitioning")
    if hive_opt is not None and str(hive_opt).lower() not in ("true", "false"):
        fail(path, f"option hive_style_partitioning must be true or false, not {hive_opt!r}")
    hive = None if hive_opt is None else str(hive_opt).lower() == "true"
    if options.bucket_rule not in (None, "mod"):
        fail(
            path,
            f"option bucket_rule={options.bucket_rule}: Hudi file groups are bucketed by "
            "bucket_column mod file_groups only (bucket_rule=mod)",
        )
    groups = options.file_groups
    if groups is not None and (not isinstance(groups, int) or groups < 1):
        fail(path, f"option file_groups must be an integer >= 1, not {groups!r}")
    if props is None:
        return _new_layout(path, options, hive)
    return _existing_layout(path, options, hive, props)


def _check_column(
    path: str,
    fields: dict[str, T.StructField],
    column: str,
    option: str,
    kinds: tuple[type, ...],
    what: str,
) -> None:
    if column not in fields:
        fail(path, f"{what} column {column!r} is not in the data (option {option})")
    dtype = fields[column].dataType
    if not isinstance(dtype, kinds):
        kind = dtype.simpleString()
        fail(path, f"{what} column {column!r} cannot be of type {kind} (option {option})")


def _change_logging(
    path: str, options: WriteOptions, props: dict[str, str] | None, table_type: str
) -> bool:
    """Whether the write logs change data; refuses what this writer cannot log.

    A new table logs change data when ``options.extra`` sets
    ``hoodie.table.cdc.enabled`` to ``true``; an existing table when its
    properties say so. Only copy-on-write tables with before and after images
    are written.
    """
    asked = str((options.extra or {}).get(CDC_ENABLED, "")).strip().lower()
    if asked not in ("", "true", "false"):
        fail(path, f"option {CDC_ENABLED}={asked!r} must be true or false")
    if props is None:
        enabled = asked == "true"
    else:
        enabled = str(props.get(CDC_ENABLED, "")).strip().lower() == "true"
        if asked and (asked == "true") != enabled:
            fail(path, f"option {CDC_ENABLED}={asked} differs from the table's setting")
        if enabled and not records_images(props):
            mode = props.get(CDC_MODE) or "op_key_only"
            fail(
                path, f"the table logs change data in mode {mode}; this writer logs {BEFORE_AFTER}"
            )
    if enabled and table_type != "cow":
        fail(path, f"option {CDC_ENABLED}: change data is logged for copy-on-write tables only")
    return enabled


@dataclass(frozen=True)
class _Settings:
    """What a write decides from its options and the table's properties alone."""

    mode: str
    table_type: str
    cdc: bool
    layout: _Layout


def _check_settings(path: str, options: WriteOptions, props: dict[str, str] | None) -> _Settings:
    """Mode, table type, change logging and layout of a write; refuses what does not fit the table."""
    mode = str(options.mode).lower()
    if mode not in MODES:
        expected = ", ".join(MODES)
        fail(path, f"unknown write mode {options.mode!r} ({{argument}}; one of {expected})", "mode")
    asked = str(options.table_type or "cow").lower()
    if asked not in TABLE_TYPES:
        fail(path, "{argument} is not supported (cow or mor)", "table_type", options.table_type)
    if props is None and mode == "delete":
        fail(path, "delete needs an existing table, but there is no Hudi table at this path")
    # table_type defaults to cow, so only an explicit mor is checked against a table
    wanted = TABLE_TYPES[asked] if TABLE_TYPES[asked] == cfg.MERGE_ON_READ else None
    if props is not None:
        _check_existing(path, props, wanted)
    table_type = (
        table_type_of(props)
        if props is not None
        else ("mor" if TABLE_TYPES[asked] == cfg.MERGE_ON_READ else "cow")
    )
    cdc = _change_logging(path, options, props, table_type)
    if options.max_file_size_bytes <= 0:
        fail(path, f"option max_file_size_bytes must be > 0, not {options.max_file_size_bytes}")
    if options.small_file_limit_bytes < 0:
        limit = options.small_file_limit_bytes
        fail(path, f"option small_file_limit_bytes must be >= 0, not {limit}")
    return _Settings(mode, table_type, cdc, _resolve_layout(path, options, props))


def precheck(
    path: str, schema: T.StructType | None, options: WriteOptions, props: dict[str, str] | None
) -> None:
    """What :func:`validate` refuses from the options, the table's properties and column types.

    Runs before Spark starts (``schema`` is the incoming rows' Spark schema,
    or ``None`` when unknown): the settings and layout checks, and the column
    types the writer cannot store (``timestamp_ntz``). Columns missing from
    the data, and the table's schema, are left to :func:`validate`.

    Raises:
        WriteError: naming the table and the option or column at fault.
    """
    settings = _check_settings(path, options, props)
    if schema is None or settings.mode == "delete":
        return
    fields = [f for f in schema.fields if f.name not in META_COLUMNS]
    try:
        avro_schema(T.StructType(fields), settings.layout.table_name)
    except SchemaProblem as problem:
        fail(path, str(problem))


def check_write(path: str, schema: pa.Schema | None, options: WriteOptions) -> None:
    """:func:`precheck` of a write to the Hudi table at ``path``, from the rows' Arrow schema.

    Reads ``hoodie.properties`` only. A column whose Arrow type pyspark cannot
    map is left out (the write decides about it).

    Raises:
        WriteError: naming the table and the option or column at fault.
    """
    from lakesieve.plugins.hudi.writer.storage import TableStorage

    props = cfg.read_table_properties(TableStorage(path))
    precheck(path, None if schema is None else _spark_schema(schema), options, props)


def _spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of Arrow columns (naive timestamps are ``timestamp_ntz``)."""
    from pyspark.sql.pandas.types import from_arrow_type

    fields = []
    for field in schema:
        try:
            dtype = from_arrow_type(field.type, prefer_timestamp_ntz=True)
        except Exception:  # a type pyspark cannot map: Spark's reader decides
            continue
        fields.append(T.StructField(field.name, dtype, field.nullable))
    return T.StructType(fields)


def validate(
    path: str,
    df: DataFrame,
    options: WriteOptions,
    props: dict[str, str] | None,
    state: TimelineState,
) -> WriteJob:
    """Check a write against the table; nothing is read beyond metadata.

    Args:
        path: the table path (for messages).
        df: the incoming rows (only the schema is used).
        options: the caller's options.
        props: the table's properties, ``None`` when there is no table yet.
        state: the table's timeline (latest schema).

    Raises:
        WriteError: naming the table and the option or column at fault.
    """
    settings = _check_settings(path, options, props)
    mode, table_type, cdc, layout = (
        settings.mode,
        settings.table_type,
        settings.cdc,
        settings.layout,
    )
    record_key, partition_by = layout.record_key, layout.partition_by
    precombine, name, bucket = layout.precombine, layout.table_name, layout.bucket
    keygen = (props or {}).get(cfg.KEYGEN) or cfg.choose_keygen(record_key, partition_by)
    spec = KeySpec(record_key, partition_by, keygen, layout.hive_style)

    schema = df.schema
    for f in schema.fields:
        if f.name.startswith(INTERNAL_PREFIX):
            fail(path, f"column {f.name!r} uses the writer's reserved prefix {INTERNAL_PREFIX}")
    fields = {f.name: f for f in schema.fields if f.name not in META_COLUMNS}
    for column in record_key:
        _check_column(path, fields, column, "record_key", _KEY_TYPES, "record key")
    has_parts = all(c in fields for c in partition_by)
    has_bucket = bucket is not None and bucket[0] in fields
    if mode != "delete" or any(c in fields for c in partition_by):
        for column in partition_by:
            _check_column(path, fields, column, "partition_by", _KEY_TYPES, "partition")
    if bucket and (mode != "delete" or has_bucket):
        _check_column(path, fields, bucket[0], "bucket_column", _INTEGER_TYPES, "bucket")
    if precombine and mode != "delete":
        _check_column(path, fields, precombine, "precombine", _KEY_TYPES, "precombine")

    if mode == "delete":
        if state.schema is None:
            fail(path, "delete needs committed data, but the table has no completed commit")
        needed = list(record_key) + (list(partition_by) if has_parts else [])
        if has_bucket and bucket is not None:
            needed.append(bucket[0])
        columns = tuple(dict.fromkeys(needed))
        return WriteJob(
            mode=mode,
            table_name=name,
            spec=spec,
            precombine=precombine,
            bucket=bucket,
            file_groups=options.file_groups,
            columns=columns,
            data_schema=None,
            schema_json=json.dumps(state.schema, separators=(",", ":")),
            new_properties=None,
            has_partition_columns=has_parts,
            has_bucket_column=has_bucket,
            table_type=table_type,
            cdc=cdc,
        )

    data_schema = T.StructType([fields[n] for n in fields])
    try:
        avro = avro_schema(data_schema, name)
    except SchemaProblem as problem:
        fail(path, str(problem))
    if state.schema is not None:
        mismatch = schema_mismatch(avro, state.schema)
        if mismatch:
            fail(path, f"the data does not match the table schema: {mismatch}")
        order = table_column_order(state.schema)
        data_schema = T.StructType([fields[n] for n in order])
        avro = avro_schema(data_schema, name)
    schema_json = json.dumps(avro, separators=(",", ":"))
    new_props = None
    if props is None:
        new_props = cfg.new_table_properties(
            name,
            record_key,
            partition_by,
            precombine,
            layout.hive_style,
            schema_json,
            bucket,
            merge_on_read=table_type == "mor",
        )
        if cdc:
            new_props[CDC_ENABLED] = "true"
            new_props[CDC_MODE] = BEFORE_AFTER.upper()
    return WriteJob(
        mode=mode,
        table_name=name,
        spec=spec,
        precombine=precombine,
        bucket=bucket,
        file_groups=options.file_groups,
        columns=tuple(data_schema.names),
        data_schema=data_schema,
        schema_json=schema_json,
        new_properties=new_props,
        has_partition_columns=has_parts,
        has_bucket_column=has_bucket,
        table_type=table_type,
        cdc=cdc,
    )
