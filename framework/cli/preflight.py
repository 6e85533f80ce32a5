"""Checks of the names a command line gives, made before Spark starts.

:func:`lakesieve.cli.checks.validate_args` checks option values alone; this
module checks them against what exists: the table path and its format, the
columns of the table or of the Parquet source, what the table's format would
refuse to write, the index types installed, the indexes a table has and the
``--where`` predicate. All of it reads table
metadata only (a log listing, a schema, Parquet footers), so a command that
cannot succeed fails in one line without paying for a Spark start-up.

Every error names the command-line flag at fault.

What the checks opened is handed on: ``explain`` and ``query`` find the
table and its plan (the bound predicate, the indexes' selection) in
``args.opened`` (:class:`Opened`), so the command opens the format and binds
the predicate once.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakesieve.contract import registry
from lakesieve.errors import (
    AmbiguousFormatError,
    ColumnNotFoundError,
    LakesieveError,
    OptionError,
    TableNotFoundError,
    WriteError,
)
from lakesieve.files import paths
from lakesieve.model import WriteOptions

if TYPE_CHECKING:
    import pyarrow as pa

#: write modes that match incoming rows to stored ones by record key
KEYED_MODES = frozenset({"upsert", "delete"})

#: index commands whose ``--name`` / NAME must be an existing index
_EXISTING_INDEX = frozenset({"describe", "drop", "refresh", "compact"})


@dataclass
class Opened:
    """What the checks opened for the command: the table, and the query's plan where one was made."""

    table: Any
    plan: Any = None


def detected_format(path: str) -> str | None:
    """The format of the table at ``path``, ``None`` when no plugin claims one.

    Several claimants count as unknown (``None``): the caller's ``--format`` then decides.
    """
    if paths.local_path(path) is not None and not os.path.exists(path):
        return None  # an object store is asked: a URL has no cheaper check
    try:
        return registry.open_format(path).name
    except (TableNotFoundError, AmbiguousFormatError):
        return None


def check_format_clash(path: str, given: str | None, writing: bool = False) -> str | None:
    """Refuse a ``--format`` that differs from the format of the table already at ``path``.

    Returns the detected format (``None`` when there is no table yet).

    Raises:
        UnknownPluginError: ``given`` names no installed format.
        OptionError: the table at ``path`` is of another format (both named).
    """
    if given is not None:
        registry.require_format(given)
    found = detected_format(path)
    if given is not None and found is not None and found != given:
        advice = "drop --format (it is detected)" + (" or write to another path" if writing else "")
        raise OptionError(
            f"formats clash: --format {given} was given, but {path} holds a {found} table; {advice}"
        )
    return found


def source_schema(source: str) -> pa.Schema | None:
    """The Arrow schema of a Parquet file or folder as Spark reads it; ``None`` if unreadable here.

    A naive Arrow timestamp stands for Spark's ``TIMESTAMP_NTZ`` and one with a
    zone for its ``TIMESTAMP``. pyarrow reads legacy ``INT96`` timestamps as
    naive, but Spark reads them as ``TIMESTAMP``: the naive timestamps of a
    column holding one (nested ones included) get the UTC zone.
    """
    import pyarrow.dataset as ds

    try:
        dataset = ds.dataset(source, format="parquet", partitioning="hive")
        first = next(iter(dataset.get_fragments()), None)
        int96 = _int96_columns(first.metadata.schema) if first is not None else set()
    except Exception:  # the Spark reader decides then; never refuse what it could read
        return None
    schema = dataset.schema
    for name in int96 & set(schema.names):
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(i).with_type(_as_instants(schema.field(i).type)))
    return schema


def _int96_columns(parquet_schema: Any) -> set[str]:
    """Top-level columns of a Parquet file holding legacy ``INT96`` timestamps (at any depth)."""
    return {
        parquet_schema.column(i).path.split(".")[0]
        for i in range(len(parquet_schema))
        if parquet_schema.column(i).physical_type == "INT96"
    }


def _as_instants(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with every naive timestamp in it (nested ones too) given the UTC zone."""
    import pyarrow as pa

    if pa.types.is_timestamp(dtype):
        return dtype if dtype.tz is not None else pa.timestamp(dtype.unit, tz="UTC")
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_as_instants(f.type)) for f in dtype])
    if pa.types.is_map(dtype):
        return pa.map_(
            dtype.key_field.with_type(_as_instants(dtype.key_type)),
            dtype.item_field.with_type(_as_instants(dtype.item_type)),
        )
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        make = pa.list_ if pa.types.is_list(dtype) else pa.large_list
        return make(dtype.value_field.with_type(_as_instants(dtype.value_type)))
    return dtype


def write_options(args: argparse.Namespace) -> WriteOptions:
    """The :class:`~lakesieve.model.WriteOptions` of a ``lakesieve write`` command line."""
    from lakesieve.cli.support import parse_csv, parse_kv

    return WriteOptions(
        mode=args.mode,
        record_key=parse_csv(args.record_key),
        partition_by=parse_csv(args.partition_by),
        table_type=args.table_type,
        file_groups=args.file_groups,
        bucket_column=args.bucket_column,
        bucket_rule=getattr(args, "bucket_rule", None),
        precombine=args.precombine,
        table_name=args.table_name,
        extra=parse_kv(args.write_option),
    )


def source_rows(source: str) -> int | None:
    """Rows in a Parquet file or folder, counted from the footers; ``None`` if unreadable here."""
    import pyarrow.dataset as ds

    try:
        return int(ds.dataset(source, format="parquet", partitioning="hive").count_rows())
    except Exception:  # only used for a progress line
        return None


def _require_columns(flag: str, names: Iterable[str], have: list[str], where: str) -> None:
    missing = [n for n in names if n not in have]
    if missing:
        raise ColumnNotFoundError(
            f"{flag}: column {missing[0]!r} is not in {where}; columns: {', '.join(have)}"
        )


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def check_write(args: argparse.Namespace) -> None:
    """Everything ``lakesieve write`` can check before Spark starts.

    Last, the table's format is asked what its write would refuse from the
    source's schema and the options alone (:class:`~lakesieve.contract.protocols.ChecksWrites`:
    a column type it cannot store, a record key other than the table's,
    ``--file-groups`` without ``--bucket-column`` where the format needs one).

    Raises:
        LakesieveError: a missing source, an unknown or clashing format, a new
            table without ``--format``, a column the source lacks, a keyed
            mode on a new table without ``--record-key``, or a write the
            format refuses.
    """
    if not os.path.exists(args.source):
        raise LakesieveError(f"--from {args.source!r} does not exist")
    from lakesieve.table import table_root

    root = table_root(args.table)  # an object-store URL is kept as given
    found = check_format_clash(root, args.format, writing=True)
    if found is None and args.format is None:
        why = "no table format found"
        if paths.local_path(root) is not None and not os.path.exists(root):
            why = "the path does not exist"
        raise TableNotFoundError(
            f"no table at {root} ({why}); give --format hudi|delta|iceberg to create one"
        )
    if found is None and args.mode == "delete":
        raise WriteError(f"--mode delete: there is no table at {root} to delete from")
    if found is None and args.mode in KEYED_MODES and not _split(args.record_key):
        raise WriteError(
            f"--mode {args.mode} creates {root} and needs --record-key (the columns that "
            "identify a row); give it, or --mode insert"
        )
    schema = source_schema(args.source)
    if schema is not None:
        have = list(schema.names)
        where = f"the source {args.source}"
        _require_columns("--record-key", _split(args.record_key), have, where)
        _require_columns("--partition-by", _split(args.partition_by), have, where)
        for flag, value in (
            ("--bucket-column", args.bucket_column),
            ("--precombine", args.precombine),
        ):
            if value:
                _require_columns(flag, [value], have, where)
    _check_with_format(root, found or args.format, schema, args)


def _check_with_format(
    root: str, format_name: str, schema: pa.Schema | None, args: argparse.Namespace
) -> None:
    """Ask the table's format what its write would refuse (:class:`ChecksWrites`); no Spark."""
    from lakesieve.contract.protocols import ChecksWrites

    fmt = registry.open_format(root, {"format": format_name})
    if isinstance(fmt, ChecksWrites):
        fmt.check_write(schema, write_options(args))


def _open(args: argparse.Namespace) -> Any:
    from lakesieve.cli.support import open_args
    from lakesieve.table import table_root

    root = table_root(args.table)
    local = paths.local_path(root) is not None
    if local and not os.path.exists(root):
        raise TableNotFoundError(f"no table at {root}: the path does not exist")
    given = getattr(args, "format", None)
    if given is not None and local:  # detected once to name a clash, then opened as told
        check_format_clash(root, given)
    return open_args(args, root)  # without --format: detected here, once


def _check_column(table: Any, column: str) -> None:
    from lakesieve.expressions import resolve_column

    try:
        resolve_column(table.schema(), column, table.path)
    except ColumnNotFoundError as exc:
        raise ColumnNotFoundError(f"--column: {exc}") from None


def _check_where(table: Any, where: str, as_of: str | None) -> None:
    from lakesieve.expressions import bind

    bind(where, table.schema(as_of), table.path)


def check_table_command(args: argparse.Namespace) -> None:
    """Table, format, column, index type, index name and ``--where`` checks of the other commands.

    Raises:
        LakesieveError: naming the flag or argument at fault.
    """
    command = args.command
    if command == "index":
        sub = args.index_cmd
        if sub == "build" and getattr(args, "config", None):
            return  # the config is checked when it is loaded, before any build
        if sub == "build" and args.type:
            registry.require_index_type(args.type)
        if args.table is None:
            return  # reported by the command itself
        table = _open(args)
        if sub == "build" and args.column is not None:
            _check_column(table, args.column)
        if sub in _EXISTING_INDEX and getattr(args, "name", None):
            table.index(args.name)
        return
    if command in ("explain", "query"):
        table = _open(args)
        if command == "query" and args.refresh:  # planned after the refresh, by the command
            _check_where(table, args.where, args.as_of)
            args.opened = Opened(table)
        else:
            args.opened = Opened(table, table.plan(args.where, as_of=args.as_of))
        return
    if command in ("compare", "advise"):
        if command == "compare" and getattr(args, "html", None):
            from lakesieve.demo import require_extra  # the report's charts need the extra

            require_extra("lakesieve compare --html", modules=("matplotlib",), program=False)
        if command == "advise" and args.from_json:
            return
        if args.table is None or args.column is None:
            return  # reported by the command itself
        if args.types:
            unknown = [t for t in _split(args.types) if t not in registry.index_type_names()]
            if unknown:
                installed = ", ".join(sorted(registry.index_type_names()))
                raise OptionError(
                    f"--types: unknown index type {unknown[0]!r}; installed: {installed}"
                )
        _check_column(_open(args), args.column)


def preflight(args: argparse.Namespace) -> None:
    """Check a parsed command line against the tables and plugins it names; no Spark.

    Raises:
        LakesieveError: the first problem found, in one line.
    """
    if args.command == "write":
        check_write(args)
    elif args.command in ("index", "explain", "query", "compare", "advise"):
        check_table_command(args)
