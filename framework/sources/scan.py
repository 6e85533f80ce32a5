"""What one scan of ``format("lakesieve")`` reads: the table, the plan and the frame.

Shared by the JVM data source's planner (:mod:`lakesieve.spark_source.planner`)
and the Python data source (:mod:`lakesieve.python_source`): opening a table
from data source options, and the one line describing a scan.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.contract.format_read import read_columns
from lakesieve.errors import OptionError
from lakesieve.expressions import to_sql
from lakesieve.files import paths
from lakesieve.query.query_plan import Plan, explain_indexes
from lakesieve.table import Table
from lakesieve.table import open as open_table

if TYPE_CHECKING:
    from lakesieve.store.index_log import LogSnapshot
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger("lakesieve.python_source")
if log.level == logging.NOTSET:
    log.setLevel(logging.INFO)  # the scan line is INFO; handlers decide whether it is shown

#: Options the sources read themselves, as documented; every other option goes to the format plugin.
SOURCE_OPTION_NAMES = ("path", "format", "asOf", "indexRoot", "columns", "prune")
SOURCE_OPTIONS = frozenset(n.lower() for n in SOURCE_OPTION_NAMES)
#: Options of the Python data source that the JVM source has no use for.
RETIRED_OPTIONS = frozenset({"columns", "prune"})


def option(options: Mapping[str, str], name: str) -> str | None:
    """An option's value, its name matched without regard to case (as Spark matches them)."""
    wanted = name.lower()
    return next((v for k, v in options.items() if k.lower() == wanted), None)


def _folded(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def nearest_option(key: str, known: Sequence[str]) -> str | None:
    """The known option name ``key`` most likely misspells (``as_of`` -> ``asOf``), if any.

    A name ending in ``.`` is a prefix: ``Storage.AWS_REGION`` is near ``storage.AWS_REGION``.
    """
    head, dot, tail = key.partition(".")
    candidates: dict[str, str] = {}
    for name in known:
        if name.endswith("."):
            if dot:
                candidates[_folded(name)] = name + tail
        else:
            candidates[_folded(name)] = name
    wanted = _folded(head + dot if dot and any(n.endswith(".") for n in known) else key)
    if wanted in candidates:
        return candidates[wanted]
    close = difflib.get_close_matches(wanted, list(candidates), n=1, cutoff=0.6)
    return candidates[close[0]] if close else None


def check_known_options(options: Mapping[str, str], table: Table) -> None:
    """Refuse an option neither the source nor the table's format plugin reads.

    A plugin that does not declare its options (``known_options`` is ``None``)
    is handed every option, as before.

    Raises:
        OptionError: the first unknown option, with the nearest known name.
    """
    declared = getattr(table.view.fmt, "known_options", None)
    if declared is None:
        return
    known = [*SOURCE_OPTION_NAMES, *declared]
    for key in options:
        if key.lower() in SOURCE_OPTIONS:
            continue
        if any(key == n or (n.endswith(".") and key.startswith(n)) for n in declared):
            continue
        near = nearest_option(key, known)
        hint = f"did you mean {near}? " if near else ""
        shown = ", ".join(n + "*" if n.endswith(".") else n for n in known)
        raise OptionError(
            f"format('lakesieve') has no option {key!r} for {table.format} table {table.path}: "
            f"{hint}(options: {shown})"
        )


def _check_index_root(root: str | None) -> None:
    """Refuse an ``indexRoot`` that names nothing: it would silently read without indexes.

    Raises:
        OptionError: no folder at ``root``.
    """
    if root is None:
        return
    from pyarrow import fs as pafs

    try:
        filesystem, inner = paths.filesystem_and_path(root)
        found = filesystem.get_file_info(inner).type == pafs.FileType.Directory
    except Exception as exc:
        raise OptionError(f"option indexRoot {root!r} cannot be read: {exc}") from exc
    if not found:
        raise OptionError(
            f"option indexRoot {root!r}: no folder there (build an index with that root first, "
            "or leave the option out for the table's own .lakesieve folder)"
        )


def table_from_options(options: Mapping[str, str]) -> Table:
    """The table a data source's options name.

    Raises:
        OptionError: no path, an ``indexRoot`` that does not exist, or an option
            neither the source nor the table's format reads.
    """
    path = option(options, "path")
    if not path:
        raise OptionError(
            "spark.read.format('lakesieve') needs a table path: .load(path) or option('path', ...)"
        )
    index_root = option(options, "indexRoot")
    _check_index_root(index_root)
    table_options = {k: v for k, v in options.items() if k.lower() not in SOURCE_OPTIONS}
    table = open_table(
        path, format=option(options, "format"), index_root=index_root, options=table_options
    )
    check_known_options(options, table)
    return table


def describe_scan(
    plan: Plan, table: Table, pushed: str | None = None, log: LogSnapshot | None = None
) -> str:
    """One line saying what a scan reads: predicate, selected of total locations, indexes used.

    ``pushed`` is the filter as Spark pushed it (SQL text); without it the
    line shows the bound predicate. An index that could not help says why:
    stale (with the locations added for what changed since its instant) or
    unusable (with the reason, such as a corrupt file); when no index was
    used the line says whether the table has none, or none on the filtered
    columns (from ``log``, the index log the plan was made with, when given).
    """
    indexes = explain_indexes(plan)  # the selection's own figures are counted here, once
    used: list[str] = []
    notes: list[str] = []
    for i in indexes:
        name = f"{i['name']} ({i['type']})"
        stale = (
            f", stale: +{i.get('locations_added_for_staleness', 0)} locations changed since "
            f"its instant {i['instant']}"
            if i.get("stale")
            else ""
        )
        if i["status"] == "used":
            used.append(name + stale)
        elif i["status"] == "unusable":
            notes.append(f"{name} unusable, full scan: {i.get('reason', 'unreadable')}")
        else:
            why = "never built" if i["instant"] is None else "cannot answer this filter"
            notes.append(f"{name} on {i['column']}: {why}")
    if not indexes:
        notes.append(_why_no_index(plan, table, log))
    shown = pushed if pushed is not None else (to_sql(plan.bound) if plan.bound else None)
    instant = plan.table_instant.id if plan.table_instant else None
    every = plan.units is plan.snapshot.units
    selected_bytes = plan.snapshot.size_bytes if every else sum(u.size_bytes for u in plan.units)
    return (
        f"lakesieve scan of {table.format} table {table.path} at {instant}: "
        f"pushed predicate {shown or 'none'}; "
        f"selected {plan.locations_selected} of {plan.locations_total} locations "
        f"({selected_bytes} of {plan.snapshot.size_bytes} bytes); "
        f"indexes used: {', '.join(used) if used else 'none'}"
        + (f" ({'; '.join(notes)})" if notes else "")
    )


def _why_no_index(plan: Plan, table: Table, log: LogSnapshot | None) -> str:
    """Why a plan consulted no index: the table has none, or none on the filtered columns."""
    try:
        defined = list(log.indexes.values()) if log is not None else table.indexes()
    except Exception:  # an unreadable log: the plan already read without indexes
        defined = []
    if not defined:
        return "the table has no index"
    on = ", ".join(sorted({d.column for d in defined}))
    if plan.bound is None:
        return f"no filter to prune with; indexes on {on}"
    return f"no index on the filtered columns; indexes on {on}"


def frame_of_units(
    spark: SparkSession, table: Table, plan: Plan, columns: Sequence[str]
) -> DataFrame:
    """The rows of the plan's units in ``columns`` (none: rows without columns), as ``Table.read`` reads them."""
    instant = plan.table_instant.id if plan.table_instant else None
    fmt = table.view.fmt
    if columns:
        return read_columns(fmt, spark, plan.units, instant, columns, with_location=False)
    first = table.schema(instant).names[:1]
    return read_columns(fmt, spark, plan.units, instant, first, with_location=False).select()


def conform(frame: DataFrame, schema: StructType) -> DataFrame:
    """``frame`` in ``schema``'s columns and types (a cast only where a type differs)."""
    from pyspark.sql import functions as F

    if not schema.fields:
        return frame
    have = {f.name: f.dataType for f in frame.schema.fields}
    columns: list[Any] = []
    for fld in schema.fields:
        column = F.col(f"`{fld.name}`")
        if have.get(fld.name) != fld.dataType:
            column = column.cast(fld.dataType).alias(fld.name)
        columns.append(column)
    return frame.select(*columns)
