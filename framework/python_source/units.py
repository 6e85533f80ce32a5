"""The input partitions of the ``lakesieve`` data source and how a Spark task reads one.

``partitions()`` and ``read()`` run in different Python workers, so a
:class:`UnitPartition` carries everything a task needs: the read unit (as
JSON), the table's path, format, options and instant, and the columns to
read (all when ``None``).

A task reads its unit through the format plugin's ``read_unit`` (log merging,
deletes and schema evolution are the plugin's) and hands Spark batches in the
schema Spark expects, casting only the columns whose type differs (a batch
whose schema already matches goes as it is).

Spark applies the query's filters to whatever a task hands it. By default
every row of the unit goes to Spark: Spark 4.x caches the partitions a filter
pushdown produced on the loaded relation and hands them, unplanned, to a later
query of the same DataFrame or view that has no filter to push, so a partition
of a relation that may be reused must not carry one query's predicate (see
:mod:`lakesieve.python_source`). With pruning on (the ``prune`` option, for a
relation loaded for one query) the partition carries the bound predicate and
the task keeps only the rows it can match, evaluated with Spark SQL's
semantics (:class:`lakesieve.query.row_filter.RowFilter`, the ``Table.read_arrow``
filter): a selective query then hands Spark the matching rows instead of
every row of the selected units.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from lakesieve.contract import registry
from lakesieve.model import ReadUnit
from lakesieve.query.row_filter import RowFilter
from pyspark.sql.datasource import InputPartition


class UnitPartition(InputPartition):
    """One read unit to read in one Spark task, with the table it belongs to.

    ``unit_json`` is empty for the single partition of a read that selects
    nothing (Spark needs at least one partition).
    """

    def __init__(
        self,
        unit_json: str,
        table_path: str,
        table_format: str,
        instant: str | None,
        table_options: dict[str, str] | None = None,
        columns: list[str] | None = None,
        row_filter: RowFilter | None = None,
    ) -> None:
        super().__init__(unit_json)
        self.unit_json = unit_json
        self.table_path = table_path
        self.table_format = table_format
        self.instant = instant
        self.table_options = dict(table_options or {})
        self.columns = list(columns) if columns is not None else None
        self.row_filter = row_filter


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


def unit_from_json(text: str) -> ReadUnit:
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


def to_target(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` in ``target``'s columns and types; as it is when it already matches."""
    if batch.schema.equals(target):
        return batch
    names = batch.schema.names
    columns = []
    for fld in target:
        column = batch.column(names.index(fld.name))
        columns.append(column if column.type == fld.type else column.cast(fld.type))
    return pa.RecordBatch.from_arrays(columns, schema=target)


def read_partition(partition: UnitPartition, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one partition's unit as batches of ``target``, Spark's Arrow schema."""
    if not partition.unit_json:
        return
    table = registry.open_format(
        partition.table_path, {**partition.table_options, "format": partition.table_format}
    )
    unit = unit_from_json(partition.unit_json)
    row_filter = partition.row_filter
    if row_filter is None:
        batches = table.read_unit(unit, partition.instant, partition.columns)
    else:
        need = list(row_filter.read_schema.names)
        batches = row_filter.apply(table.read_unit(unit, partition.instant, need))
    for batch in batches:
        if batch.num_rows:
            yield to_target(batch, target)
