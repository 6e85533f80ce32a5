"""The rows of a read unit that a bound predicate can match, with Spark SQL's semantics.

Shared by the two readers that filter rows outside Spark: ``Table.read_arrow``
(:mod:`lakesieve.query.arrow_read`) and the data source's tasks with pruning on
(:mod:`lakesieve.python_source.units`). The predicate is rendered once as an
Arrow expression (:func:`lakesieve.expressions.to_arrow`, whose NULL, NaN and
-0.0 handling follows Spark SQL); a row where it is NULL is dropped, as in a
WHERE clause.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from lakesieve.expressions import BoundPredicate, to_arrow
from lakesieve.files.batches import conform


class RowFilter:
    """The predicate a task applies to its unit's rows, and the columns it reads for it.

    Attributes:
        bound: the plan's bound predicate.
        read_schema: the table's schema (at the plan's instant) of the
            columns the task reads: the partition's columns (every column
            when those are ``None``), then any other column the predicate needs.
        keep: the columns handed to Spark, in order.
    """

    def __init__(self, bound: BoundPredicate, read_schema: pa.Schema, keep: list[str]) -> None:
        self.bound = bound
        self.read_schema = read_schema
        self.keep = list(keep)

    @classmethod
    def for_plan(
        cls, bound: BoundPredicate, schema: pa.Schema, columns: list[str] | None
    ) -> RowFilter:
        """The filter of ``bound`` for a read of ``columns`` (all when ``None``) of ``schema``."""
        keep = list(schema.names) if columns is None else list(columns)
        need = keep + [c for c in bound.columns if c not in keep]
        return cls(bound, pa.schema([schema.field(c) for c in need]), keep)

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The rows of ``batches`` the predicate can match (NULL drops a row, as in WHERE)."""
        expr = to_arrow(self.bound)
        for batch in batches:
            if not batch.num_rows:
                continue
            got = pa.Table.from_batches([conform(batch, self.read_schema)]).filter(expr)
            for out in got.select(self.keep).to_batches():
                if out.num_rows:
                    yield out
