"""Opening a Hudi table through hudi-rs, and the table settings the plugin needs.

A fresh :class:`hudi.HudiTable` is built for every driver-side hook call: it
loads ``hoodie.properties`` and the active timeline, which takes well under a
millisecond on local storage, and a cached one would miss new commits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from hudi import HudiReadOptions, HudiTable, HudiTableBuilder
from lakesieve.plugins.hudi.cdc import records_images
from lakesieve.plugins.hudi.partitions import partition_fields
from lakesieve.plugins.hudi.writer.table_config import (
    COMPLEX_KEYGEN,
    LATEST_PAYLOAD,
    NONPARTITIONED_KEYGEN,
    SIMPLE_KEYGEN,
    SUPPORTED_KEYGENS,
)
from lakesieve.sdk import LakesieveError, TableNotFoundError, TableRef, paths
from lakesieve.sdk.paths import STORAGE_PREFIX


def hudi_rs_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """The options handed to hudi-rs: a ``storage.`` key loses its prefix (``AWS_REGION``).

    hudi-rs itself reads the standard ``AWS_*`` variables of the environment
    (endpoint, plain HTTP, region, keys); a table's storage options win over them.
    """
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        name = key[len(STORAGE_PREFIX) :] if key.startswith(STORAGE_PREFIX) else key
        out[name] = str(value)
    return out


#: The standard ``AWS_*`` variables handed on to Spark's Python workers (see :func:`worker_options`).
WORKER_AWS_VARIABLES = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT",
    "AWS_ALLOW_HTTP",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
)


def worker_options(
    path: str, options: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A table's options for hudi-rs in Spark's Python workers.

    Workers do not see the driver's environment as it is now (they inherit
    the JVM's, fixed when the session started), so for a table on object
    storage the driver's standard ``AWS_*`` settings travel with the options
    as ``storage.`` keys; the table's own ``storage.`` options win.
    """
    out = {k: str(v) for k, v in (options or {}).items()}
    if paths.local_path(path) is not None:
        return out
    env = os.environ if environ is None else environ
    for name in WORKER_AWS_VARIABLES:
        value = env.get(name)
        if value:
            out.setdefault(STORAGE_PREFIX + name, value)
    return out


def open_table(path: str, options: Mapping[str, str] | None = None) -> HudiTable:
    """Open the Hudi table at ``path`` with hudi-rs.

    Args:
        path: table root (local path or URI).
        options: Hudi (``hoodie.*``) or storage (``storage.AWS_*``) options handed to hudi-rs.

    Raises:
        TableNotFoundError: hudi-rs cannot open a table there.
    """
    builder = HudiTableBuilder.from_base_uri(path)
    if options:
        builder = builder.with_options(hudi_rs_options(options))
    try:
        return builder.build()
    except Exception as exc:
        raise TableNotFoundError(f"cannot open Hudi table {path!r}: {exc}") from exc


def open_ref(table: TableRef) -> HudiTable:
    """Open the table a :class:`~lakesieve.sdk.TableRef` names."""
    return open_table(table.path, table.options)


def as_of(instant: str | None) -> HudiReadOptions:
    """Snapshot read options as of ``instant`` (the latest commit when ``None``)."""
    options = HudiReadOptions()
    return options.with_as_of_timestamp(instant) if instant else options


def _flag(value: str | None, default: bool | None) -> bool | None:
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() == "true"


@dataclass(frozen=True)
class TableConfig:
    """The ``hoodie.properties`` settings the plugin reads.

    Attributes:
        version: ``hoodie.table.version`` (6, 8, 9...).
        table_type: ``COPY_ON_WRITE`` or ``MERGE_ON_READ``.
        layout_version: ``hoodie.timeline.layout.version`` (1 up to table
            version 6, 2 from version 8 on: completion times in file names).
        timeline_dir: timeline folder relative to the table root.
        history_dir: archived-timeline folder relative to the table root.
        partition_fields: partition field names, in order.
        hive_style: whether partition paths are ``field=value`` (``None`` if unset).
        url_encoded: whether partition values are URL-encoded.
        populates_meta_fields: whether data files carry ``_hoodie_*`` values.
        record_key_fields: ``hoodie.table.recordkey.fields``, in order.
        change_images: whether writers log change data with before and after
            images (``hoodie.table.cdc.*``, :mod:`lakesieve.plugins.hudi.cdc`).
        merges_by_commit_time: whether a log record always replaces the base
            file's version of its record (:func:`merges_by_commit_time`).
        keygen: the key generator's class name (``hoodie.table.keygenerator.class``,
            or the class of ``hoodie.table.keygenerator.type``), ``""`` if unset.
    """

    version: int
    table_type: str
    layout_version: int
    timeline_dir: str
    history_dir: str
    partition_fields: tuple[str, ...]
    hive_style: bool | None
    url_encoded: bool
    populates_meta_fields: bool
    record_key_fields: tuple[str, ...] = ()
    change_images: bool = False
    merges_by_commit_time: bool = False
    keygen: str = ""


#: ``hoodie.table.keygenerator.type`` values and the classes they stand for.
_KEYGEN_TYPES = {
    "SIMPLE": SIMPLE_KEYGEN,
    "COMPLEX": COMPLEX_KEYGEN,
    "NON_PARTITION": NONPARTITIONED_KEYGEN,
}


def merges_by_commit_time(opts: Mapping[str, str], version: int) -> bool:
    """Whether a log record always replaces the base file's version of its record.

    That is Hudi's commit-time ordering: merge mode ``COMMIT_TIME_ORDERING``,
    or, with no merge mode, the overwrite-with-latest payload, which is also
    the default payload before table version 8 (from 8 on, the default mode
    is commit-time ordering only without an ordering field). Event-time
    ordering, custom mergers and other payloads answer ``False``, which only
    costs speed.
    """
    mode = (opts.get("hoodie.record.merge.mode") or "").strip().upper()
    if mode:
        return mode == "COMMIT_TIME_ORDERING"
    payload = (
        opts.get("hoodie.compaction.payload.class")
        or opts.get("hoodie.table.payload.class")
        or opts.get("hoodie.datasource.write.payload.class")
        or ""
    ).strip()
    if payload:
        return payload == LATEST_PAYLOAD
    if version < 8:
        return True
    ordering = opts.get("hoodie.table.precombine.field") or opts.get("hoodie.table.ordering.fields")
    return not (ordering or "").strip()


def table_config(table: HudiTable) -> TableConfig:
    """Read the plugin's view of a table's configuration from hudi-rs."""
    opts = table.hudi_options()
    version = int(opts.get("hoodie.table.version", "6") or 6)
    layout = int(opts.get("hoodie.timeline.layout.version", "2" if version >= 8 else "1") or 1)
    if layout >= 2:
        timeline_dir = ".hoodie/" + (opts.get("hoodie.timeline.path") or "timeline").strip("/")
        history_dir = timeline_dir + "/" + (opts.get("hoodie.timeline.history.path") or "history")
    else:
        timeline_dir = ".hoodie"
        history_dir = ".hoodie/" + (opts.get("hoodie.archivelog.folder") or "archived").strip("/")
    return TableConfig(
        version=version,
        table_type=opts.get("hoodie.table.type", "COPY_ON_WRITE"),
        layout_version=layout,
        timeline_dir=timeline_dir,
        history_dir=history_dir,
        partition_fields=partition_fields(opts.get("hoodie.table.partition.fields")),
        hive_style=_flag(opts.get("hoodie.datasource.write.hive_style_partitioning"), None),
        url_encoded=bool(_flag(opts.get("hoodie.datasource.write.partitionpath.urlencode"), False)),
        populates_meta_fields=bool(_flag(opts.get("hoodie.populate.meta.fields"), True)),
        record_key_fields=partition_fields(opts.get("hoodie.table.recordkey.fields")),
        change_images=records_images(opts),
        merges_by_commit_time=merges_by_commit_time(opts, version),
        keygen=(opts.get("hoodie.table.keygenerator.class") or "").strip()
        or _KEYGEN_TYPES.get(
            (opts.get("hoodie.table.keygenerator.type") or "").strip().upper(), ""
        ),
    )


def record_id_fields(schema: pa.Schema, config: TableConfig) -> tuple[str, ...]:
    """The record key fields, when they identify a record as ``_hoodie_record_key`` does.

    ``schema`` is the table's (:func:`read_schema`).

    Hudi's simple, complex and non-partitioned key generators write the
    record key as the fields' values in decimal (``field:value`` pairs in a
    complex key, ``__null__`` for a null), a one-to-one function of the
    values when every field is an integer column: two rows hold the same
    record key exactly when they agree on the fields. Other key generators
    or field types answer ``()`` (the record key itself is read).
    """
    fields = config.record_key_fields
    if not fields or config.keygen not in SUPPORTED_KEYGENS:
        return ()
    for name in fields:
        if name not in schema.names or not pa.types.is_integer(schema.field(name).type):
            return ()
    return fields


def read_schema(table: HudiTable) -> pa.Schema:
    """The Arrow schema of the rows a snapshot read returns.

    That is the table schema with the five ``_hoodie_*`` meta columns first,
    unless the table does not populate meta fields: then hudi-rs leaves them
    out even where the data files carry (empty) meta columns, and so do we.
    """
    try:
        if table_config(table).populates_meta_fields:
            return table.get_schema_with_meta_fields()
        return table.get_schema()
    except BaseException as exc:  # hudi-rs panics (a BaseException) on Avro types it lacks
        if isinstance(exc, KeyboardInterrupt | SystemExit | LakesieveError):
            raise
        raise LakesieveError(
            f"Hudi table {table.base_url}: hudi-rs cannot read its schema "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'}); "
            "TIMESTAMP_NTZ (local-timestamp-micros) columns are one cause"
        ) from None
