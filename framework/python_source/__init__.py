"""``spark.read.format("lakesieve_python")``: the index-pruned reader as a Python data source.

In a classic session ``format("lakesieve")`` is the JVM data source
(:mod:`lakesieve.spark_source`), which prunes by default and reads through
Spark's own Parquet reader. This Python data source stays for sessions
without it: Spark Connect clients (where it takes the ``lakesieve`` name)
and machines without ``javac``.

Built on Spark's Python Data Source API (pyspark >= 4.1). Spark hands the
query's filters to :meth:`LakesieveReader.pushFilters`; the reader turns the
ones it understands into a predicate (:mod:`lakesieve.python_source.filters`),
plans with the table's indexes and makes one input partition per selected
read unit (:mod:`lakesieve.python_source.units`). Index pruning is per location,
not per row, so every filter is handed back to Spark to evaluate: a filter
kept by the reader would not be applied again.

What the scan reads is logged at INFO by the ``lakesieve.python_source`` logger
of the Python worker that plans the scan (the pushed predicate as SQL,
"selected N of M locations" and the indexes used; :func:`describe_scan`).
Spark's plan cannot show it: for a Python data source Spark's scan
description is the fixed text ``(Python)`` and its metadata lists only the
filters the source claims to apply itself, and this source claims none.

With pruning on, each task also keeps only the rows of its unit that can
match the pushed filters (evaluated with Spark SQL's semantics, as
``Table.read_arrow`` does), so a selective query hands Spark its matching
rows rather than every row of the selected units; Spark still applies its
own filter above the scan.

Index pruning, and with it that row filter, is off unless the ``prune``
option is ``true``, because of a Spark 4.x limit (seen in 4.3.0, fixed in later Spark sources): the JVM keeps
the read plan a filter pushdown produced on the *relation* (the loaded
DataFrame or SQL view), and a later query of the same relation that has no
filter Spark can hand to Python (``df.count()`` after
``df.where("k = 1").count()``, or a filter like ``k + 1 = 2``) runs on that
plan without asking the source again. A pruned plan would then drop rows. So
by default every scan reads every location (exact on any relation, reused or
not), and ``option("prune", "true")`` prunes with the indexes: use it only on
a relation loaded for one query (``spark.read.format("lakesieve")
.option("prune", "true").load(path).where(...)``, loaded again per query).
``Table.read`` prunes always and has no such limit: it hands Spark's own
Parquet reader the selected files.

Options: ``path`` (the table, or ``load(path)``), ``format`` (detected when
absent), ``asOf`` (an instant), ``indexRoot``, ``prune`` (``true`` or
``false``, the default; see above), ``columns`` (a comma-separated
list: the source then has only these columns and reads only them). Spark does
not tell a Python data source which columns a query needs, so without
``columns`` every column of every selected location is decoded in Python and
sent to the JVM; naming the columns is what makes a scan that the indexes
cannot narrow cost about what Spark's own Parquet scan costs. SQL::

    CREATE TEMPORARY VIEW t USING lakesieve OPTIONS (path '/data/lineitem');
    SELECT * FROM t WHERE l_orderkey = 42;
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from lakesieve import expressions as p
from lakesieve.errors import OptionError
from lakesieve.python_source.filters import filter_to_predicate
from lakesieve.python_source.units import RowFilter, UnitPartition, read_partition, unit_to_json
from lakesieve.sources.scan import describe_scan, table_from_options
from lakesieve.table import Table
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

__all__ = [
    "SOURCE_NAME",
    "LakesieveDataSource",
    "LakesieveReader",
    "describe_scan",
    "filter_to_predicate",
    "register_data_source",
]

SOURCE_NAME = "lakesieve_python"
DEFAULT_NAME = "lakesieve"

log = logging.getLogger("lakesieve.python_source")
if log.level == logging.NOTSET:
    log.setLevel(logging.INFO)  # the scan line is INFO; handlers decide whether it is shown


def register_data_source(spark: Any, as_default: bool = False) -> None:
    """Register the Python data source with a SparkSession as ``lakesieve_python``.

    With ``as_default`` (a session without the JVM data source) it is registered
    as ``lakesieve`` too.
    """
    spark.dataSource.register(LakesieveDataSource)
    if as_default:
        spark.dataSource.register(DefaultLakesieveDataSource)


def _table(options: dict[str, str]) -> Table:
    return table_from_options(options)


def chosen_columns(options: dict[str, str], schema: pa.Schema, table: str) -> list[str] | None:
    """The ``columns`` option as a list of the table's columns; ``None`` when absent (all of them).

    Raises:
        OptionError: a name the table does not have, or an empty list.
    """
    text = next((v for k, v in options.items() if k.lower() == "columns"), None)
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise OptionError("option columns of format('lakesieve') names no column")
    missing = [n for n in names if n not in schema.names]
    if missing:
        raise OptionError(f"option columns: table {table} has no column {missing[0]!r}")
    return list(dict.fromkeys(names))


def prune_requested(options: dict[str, str]) -> bool:
    """The ``prune`` option: ``True`` for ``true``, ``False`` for ``false`` or when absent.

    Raises:
        OptionError: any other value.
    """
    text = next((v for k, v in options.items() if k.lower() == "prune"), None)
    if text is None or text.strip().lower() == "false":
        return False
    if text.strip().lower() == "true":
        return True
    raise OptionError(f"option prune of format('lakesieve') must be true or false, not {text!r}")


class LakesieveDataSource(DataSource):
    """The ``lakesieve`` data source (batch reads)."""

    @classmethod
    def name(cls) -> str:
        """The format name used in ``spark.read.format(...)``."""
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The table's schema as a Spark struct."""
        from pyspark.sql.pandas.types import from_arrow_schema

        options = dict(self.options)
        table = _table(options)
        schema = table.schema(options.get("asOf") or options.get("asof"))
        columns = chosen_columns(options, schema, table.path)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        return from_arrow_schema(schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader that prunes with the table's indexes."""
        return LakesieveReader(dict(self.options), schema)


class DefaultLakesieveDataSource(LakesieveDataSource):
    """The Python data source under the ``lakesieve`` name, where no JVM source holds it."""

    @classmethod
    def name(cls) -> str:
        """The format name used in ``spark.read.format(...)``."""
        return DEFAULT_NAME


class LakesieveReader(DataSourceReader):
    """Plans with the pushed filters; reads one read unit per partition."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.pushed: list[Any] = []
        self.description = ""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Remember the filters we can plan with; hand every one back to Spark."""
        for f in filters:
            node = filter_to_predicate(f)
            if node is not None:
                self.pushed.append(node)
        return list(filters)

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per read unit the indexes could not rule out (every unit unless ``prune``)."""
        table = _table(self.options)
        where: Any = None
        if self.pushed and prune_requested(self.options):
            where = self.pushed[0] if len(self.pushed) == 1 else p.And(tuple(self.pushed))
        # the pushed literals are typed values (instants carry their zone): no session zone applies
        plan = table.plan(where, self.options.get("asOf") or self.options.get("asof"), "UTC")
        self.description = describe_scan(plan, table)
        if self.pushed and where is None:
            self.description += "; pruning off (option prune is not true)"
        log.info(self.description)
        instant = plan.table_instant.id if plan.table_instant else None
        opts = dict(table.ref.options)
        schema = table.schema(instant)
        columns = chosen_columns(self.options, schema, table.path)
        # pruning on: the relation serves one query, so its tasks may filter rows too
        rows = (
            RowFilter.for_plan(plan.bound, schema, columns)
            if where is not None and plan.bound is not None
            else None
        )
        parts = [
            UnitPartition(unit_to_json(u), table.path, table.format, instant, opts, columns, rows)
            for u in plan.units
        ]
        return parts or [UnitPartition("", table.path, table.format, instant, opts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one unit through its format plugin, as batches in Spark's schema of the table."""
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, UnitPartition):
            return iter(())
        # timestamps are instants: any zone names them exactly, and Spark insists on one
        return read_partition(partition, to_arrow_schema(self.schema, timezone="UTC"))
