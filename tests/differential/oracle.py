"""Spark SQL as the oracle, and row multisets compared the way Spark compares values.

:class:`Oracle` loads the native rows (with their locations) into an in-memory
Spark DataFrame (``spark.createDataFrame(arrow)``: no Parquet reader, so no
filter pushdown) and lets ``SELECT * FROM view WHERE <text>`` decide which
rows match. :func:`canonical` turns any row set into a sorted list of tuples
in which NULL, NaN and ``-0.0`` have total, Spark-consistent keys: NaN equals
NaN, ``-0.0`` equals ``0.0``, timestamps compare as instants.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .data import SCHEMA
from .formats import LOC, plain

_views = itertools.count()


def _key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, float):
        if math.isnan(value):
            return (2, 0)
        return (1, value + 0.0)  # -0.0 + 0.0 == 0.0: compare as values
    return (1, value)


def canonical(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of ``table`` (cast to the differential schema) as sorted, comparable tuples."""
    t = plain(table)
    cols = []
    for f in SCHEMA:
        col = t.column(f.name)
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.int64())
        cols.append(col.to_pylist())
    rows = [tuple(_key(v) for v in r) for r in zip(*cols, strict=True)]
    return sorted(rows)


def describe(rows: list[tuple[Any, ...]], limit: int = 6) -> str:
    """A short rendering of canonical rows for failure messages."""
    shown = [
        tuple(None if k[0] == 0 else ("NaN" if k[0] == 2 else k[1]) for k in r)
        for r in rows[:limit]
    ]
    more = f" ... ({len(rows)} rows)" if len(rows) > limit else ""
    return f"{shown}{more}"


def multiset_diff(
    want: list[tuple[Any, ...]], got: list[tuple[Any, ...]]
) -> tuple[list[Any], list[Any]]:
    """(rows missing from ``got``, rows ``got`` has in excess), as multisets."""
    from collections import Counter

    w, g = Counter(want), Counter(got)
    return sorted((w - g).elements()), sorted((g - w).elements())


@dataclass
class Answer:
    """What Spark SQL says about a predicate: the rows and their locations, or why it refused."""

    rows: list[tuple[Any, ...]] | None
    locations: set[str]
    error: str | None = None


class Oracle:
    """Spark SQL over one table's native rows."""

    def __init__(self, spark: Any, located: pa.Table) -> None:
        self.spark = spark
        self.view = f"diff_oracle_{next(_views)}"
        spark.createDataFrame(located).createOrReplaceTempView(self.view)

    def answer(self, where: str) -> Answer:
        """Evaluate ``where`` with Spark SQL; an analysis, parse or runtime error is a refusal."""
        from pyspark.errors.exceptions.captured import CapturedException

        try:
            got = self.spark.sql(f"SELECT * FROM {self.view} WHERE {where}").toArrow()
        except CapturedException as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return Answer(None, set(), f"{type(exc).__name__}: {first}")
        return Answer(canonical(got), set(got.column(LOC).to_pylist()))

    def close(self) -> None:
        """Drop the temporary view."""
        self.spark.catalog.dropTempView(self.view)
