"""What one scan of ``format("lakesieve")`` reads: the table, the plan and the frame.

Shared by the JVM data source's planner (:mod:`lakesieve.spark_source.planner`)
and the Python data source (:mod:`lakesieve.python_source`): opening a table
from data source options, and the one line describing a scan.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.contract.format_read import read_columns
from lakesieve.errors import OptionError
from lakesieve.query.query_plan import Plan, explain_plan
from lakesieve.table import Table
from lakesieve.table import open as open_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger("lakesieve.python_source")
if log.level == logging.NOTSET:
    log.setLevel(logging.INFO)  # the scan line is INFO; handlers decide whether it is shown

#: Options the sources read themselves; every other option goes to the format plugin.
SOURCE_OPTIONS = frozenset({"path", "format", "asof", "indexroot", "columns", "prune"})
#: Options of the Python data source that the JVM source has no use for.
RETIRED_OPTIONS = frozenset({"columns", "prune"})


def option(options: Mapping[str, str], name: str) -> str | None:
    """An option's value, its name matched without regard to case (as Spark matches them)."""
    wanted = name.lower()
    return next((v for k, v in options.items() if k.lower() == wanted), None)


def table_from_options(options: Mapping[str, str]) -> Table:
    """The table a data source's options name.

    Raises:
        OptionError: no path.
    """
    path = option(options, "path")
    if not path:
        raise OptionError(
            "spark.read.format('lakesieve') needs a table path: .load(path) or option('path', ...)"
        )
    table_options = {k: v for k, v in options.items() if k.lower() not in SOURCE_OPTIONS}
    return open_table(
        path,
        format=option(options, "format"),
        index_root=option(options, "indexRoot"),
        options=table_options,
    )


def describe_scan(plan: Plan, table: Table) -> str:
    """One line saying what a scan reads: predicate, selected of total locations, indexes used.

    An index that could not help says why: stale (with the locations added
    for what changed since its instant) or unusable (with the reason, such as
    a corrupt file); a table without indexes says so.
    """
    info = explain_plan(plan, table.path, table.format, None, None)
    used: list[str] = []
    notes: list[str] = []
    for i in info["indexes"]:
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
    if not info["indexes"]:
        notes.append("the table has no index")
    return (
        f"lakesieve scan of {table.format} table {table.path} at {info['table_instant']}: "
        f"pushed predicate {info['predicate_sql'] or 'none'}; "
        f"selected {info['locations_selected']} of {info['locations_total']} locations "
        f"({info['bytes_selected']} of {info['bytes_total']} bytes); "
        f"indexes used: {', '.join(used) if used else 'none'}"
        + (f" ({'; '.join(notes)})" if notes else "")
    )


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
