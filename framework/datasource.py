"""``spark.read.format("lakesieve")``: the index-pruned reader as a Spark data source.

Built on Spark's Python Data Source API (pyspark >= 4.1). Spark hands the
query's filters to :meth:`LakesieveReader.pushFilters`; the reader turns the
ones it understands into a predicate, plans with the table's indexes and
makes one input partition per selected read unit. Index pruning is per
location, not per row, so every filter is handed back to Spark to evaluate:
a filter kept by the reader would not be applied again and the other rows of a
selected location would leak into the result.

Options: ``path`` (the table, or ``load(path)``), ``format`` (detected when
absent), ``asOf`` (an instant), ``indexRoot``. SQL::

    CREATE TEMPORARY VIEW t USING lakesieve OPTIONS (path '/data/lineitem');
    SELECT * FROM t WHERE l_orderkey = 42;
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from lakesieve import expressions as p
from lakesieve import registry
from lakesieve.errors import OptionError
from lakesieve.expressions import Literal
from lakesieve.model import ReadUnit
from lakesieve.table import Table
from lakesieve.table import open as open_table
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

SOURCE_NAME = "lakesieve"


def register_data_source(spark: Any) -> None:
    """Register the ``lakesieve`` data source with a SparkSession."""
    spark.dataSource.register(LakesieveDataSource)


def _table(options: dict[str, str]) -> Table:
    path = options.get("path")
    if not path:
        raise OptionError(
            "spark.read.format('lakesieve') needs a table path: .load(path) or option('path', ...)"
        )
    reserved = {"path", "format", "asof", "indexroot"}
    table_options = {k: v for k, v in options.items() if k.lower() not in reserved}
    return open_table(
        path,
        format=options.get("format"),
        index_root=options.get("indexRoot") or options.get("indexroot"),
        options=table_options,
    )


def _literal(value: Any) -> Any:
    """Our predicate literal for a filter value, or ``None`` when it is not safe to plan on."""
    if isinstance(value, bool):
        return Literal("bool", "TRUE" if value else "FALSE")
    if isinstance(value, int):
        return Literal("number", str(value))
    if isinstance(value, decimal.Decimal):
        return Literal("number", format(value, "f")) if value.is_finite() else None
    if isinstance(value, float):
        # the filter's value already has the column's type: keep it exact, NaN and inf included
        if value != value or abs(value) == float("inf"):
            return Literal("string", "NaN" if value != value else repr(value), ("DOUBLE", ()))
        return Literal("number", repr(value))
    if isinstance(value, str):
        return Literal("string", value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return None  # ambiguous time zone: do not prune on it
        return Literal(
            "timestamp", value.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")
        )
    if isinstance(value, dt.date):
        return Literal("date", value.isoformat())
    return None


def filter_to_predicate(f: Filter) -> Any:
    """Translate one Spark filter into our predicate tree, or ``None`` if we cannot."""
    attr = getattr(f, "attribute", None)
    if attr is None or len(attr) != 1:
        return None
    column = attr[0]
    ops = {
        EqualTo: "=",
        GreaterThan: ">",
        GreaterThanOrEqual: ">=",
        LessThan: "<",
        LessThanOrEqual: "<=",
    }
    for cls, op in ops.items():
        if isinstance(f, cls):
            lit = _literal(getattr(f, "value", None))
            return None if lit is None else p.Compare(column, op, lit)
    if isinstance(f, In):
        lits = [_literal(v) for v in getattr(f, "value", ())]
        if not lits or any(lit is None for lit in lits):
            return None
        return p.InList(column, tuple(lits))
    if isinstance(f, IsNull):
        return p.IsNull(column)
    return None


class UnitPartition(InputPartition):
    """One read unit to read in one Spark task, with the table it belongs to.

    ``partitions()`` and ``read()`` run in different Python workers, so
    everything ``read()`` needs travels in the partition.
    """

    def __init__(
        self,
        unit_json: str,
        table_path: str,
        table_format: str,
        instant: str | None,
        table_options: dict[str, str] | None = None,
    ) -> None:
        super().__init__(unit_json)
        self.unit_json = unit_json
        self.table_path = table_path
        self.table_format = table_format
        self.instant = instant
        self.table_options = dict(table_options or {})


def unit_to_json(unit: Any) -> str:
    """Serialise a read unit for a Spark task."""
    return json.dumps(
        {
            "location": unit.location,
            "base_file": unit.base_file,
            "log_files": list(unit.log_files),
            "delete_files": list(unit.delete_files),
            "partition_values": dict(unit.partition_values),
            "num_records": unit.num_records,
            "size_bytes": unit.size_bytes,
            "extra": dict(unit.extra),
        }
    )


def unit_from_json(text: str) -> Any:
    """Inverse of :func:`unit_to_json`."""
    d = json.loads(text)
    return ReadUnit(
        location=d["location"],
        base_file=d["base_file"],
        log_files=tuple(d["log_files"]),
        delete_files=tuple(d["delete_files"]),
        partition_values=d["partition_values"],
        num_records=d["num_records"],
        size_bytes=d["size_bytes"],
        extra=d["extra"],
    )


class LakesieveDataSource(DataSource):
    """The ``lakesieve`` data source (batch reads)."""

    @classmethod
    def name(cls) -> str:
        """The format name used in ``spark.read.format(...)``."""
        return SOURCE_NAME

    def schema(self) -> StructType:
        """The table's schema as a Spark struct."""
        from pyspark.sql.pandas.types import from_arrow_schema

        table = _table(dict(self.options))
        return from_arrow_schema(table.schema(self.options.get("asOf") or self.options.get("asof")))

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader that prunes with the table's indexes."""
        return LakesieveReader(dict(self.options), schema)


class LakesieveReader(DataSourceReader):
    """Plans with the pushed filters; reads one read unit per partition."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.pushed: list[Any] = []

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Remember the filters we can plan with; hand every one back to Spark."""
        for f in filters:
            node = filter_to_predicate(f)
            if node is not None:
                self.pushed.append(node)
        return list(filters)

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per read unit the indexes could not rule out."""
        table = _table(self.options)
        where: Any = None
        if self.pushed:
            where = self.pushed[0] if len(self.pushed) == 1 else p.And(tuple(self.pushed))
        plan = table.plan(where, self.options.get("asOf") or self.options.get("asof"))
        instant = plan.table_instant.id if plan.table_instant else None
        opts = dict(table.ref.options)
        parts = [
            UnitPartition(unit_to_json(u), table.path, table.format, instant, opts)
            for u in plan.units
        ]
        return parts or [UnitPartition("", table.path, table.format, instant, opts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one unit through its format plugin, as batches in the table schema."""
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, UnitPartition) or not partition.unit_json:
            return
        # timestamps are instants: any zone names them exactly, and Spark insists on one
        target = to_arrow_schema(self.schema, timezone="UTC")
        table = registry.open_format(
            partition.table_path, {**partition.table_options, "format": partition.table_format}
        )
        batches = table.read_unit(unit_from_json(partition.unit_json), partition.instant, None)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = [batch.column(batch.schema.get_field_index(f.name)).cast(f.type) for f in target]
            yield pa.RecordBatch.from_arrays(cols, schema=target)
