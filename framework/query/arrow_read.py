"""Reading a plan on the driver with Arrow, without Spark.

A selective query that the indexes cut down to a few read units does not need
a Spark job: starting one costs more than reading a handful of Parquet files.
:func:`read_plan_arrow` reads each selected unit through its
format's ``read_unit`` method (the same reader the ``lakesieve`` Spark
data source runs in its workers, so log-file merging, deletion vectors and
delete files are applied exactly as there), keeps the rows matching the plan's
predicate, and returns one :class:`pyarrow.Table` in the table's schema.

The rows are gathered in the driver's memory: this path is for selective
queries. ``max_bytes`` refuses plans whose selected units exceed a size, so a
query the indexes could not narrow fails fast with a clear message instead of
filling the driver.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
from lakesieve.errors import LakesieveError
from lakesieve.files.arrow_frame import without_empty_chunks
from lakesieve.files.batches import conform
from lakesieve.query.query_plan import Plan
from lakesieve.query.row_filter import RowFilter
from lakesieve.query.table_view import TableView


def _columns(schema: pa.Schema, columns: Sequence[str] | None, table: str) -> list[str]:
    if columns is None:
        return list(schema.names)
    wanted = list(columns)
    missing = [c for c in wanted if c not in schema.names]
    if missing:
        raise LakesieveError(f"table {table} has no column {missing[0]!r}")
    return wanted


def read_plan_arrow(
    table: TableView,
    plan: Plan,
    columns: Sequence[str] | None = None,
    max_bytes: int | None = None,
    threads: int | None = None,
) -> pa.Table:
    """The rows of ``plan`` (its units, filtered by its predicate) as one Arrow table.

    Args:
        table: the view of the table the plan was made for (``Table.view``).
        plan: from :meth:`lakesieve.table.Table.plan`.
        columns: columns to return (default: every column of the table's schema at the plan's instant).
        max_bytes: refuse a plan whose selected units hold more bytes than this.
        threads: units read at once (default: the CPU count); Parquet decoding releases the GIL.

    Raises:
        LakesieveError: an unknown column, or the plan is larger than ``max_bytes``.
    """
    instant = plan.table_instant.id if plan.table_instant else None
    schema = plan.schema if plan.schema is not None else table.schema(instant)
    out_cols = _columns(schema, columns, table.path)
    out_schema = pa.schema([schema.field(c) for c in out_cols])
    rows = RowFilter.for_plan(plan.bound, schema, out_cols) if plan.bound is not None else None
    need = list(rows.read_schema.names) if rows is not None else out_cols
    selected = sum(u.size_bytes for u in plan.units)
    if max_bytes is not None and selected > max_bytes:
        raise LakesieveError(
            f"table {table.path}: the query selects {len(plan.units)} locations, {selected} bytes, "
            "more than {argument} for a driver-side read; read them with Spark",
            argument="max_bytes",
            value=max_bytes,
        )

    def one(unit: Any) -> pa.Table:
        batches = table.fmt.read_unit(unit, instant, need)
        if rows is not None:
            return pa.Table.from_batches(list(rows.apply(batches)), schema=out_schema)
        return pa.Table.from_batches(
            [conform(b, out_schema) for b in batches if b.num_rows], schema=out_schema
        )

    units = list(plan.units)
    if not units:
        return out_schema.empty_table()
    workers = max(1, min(len(units), threads or os.cpu_count() or 1))
    if workers == 1:
        parts = [one(u) for u in units]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(one, units))
    # no empty chunks in the result (a filter can empty a batch inside a unit's table):
    # pyspark's createDataFrame drops the chunks after an empty one
    return without_empty_chunks(pa.concat_tables(parts))
