"""Spark SQL as the oracle, and row multisets compared the way Spark compares values.

:class:`Oracle` loads the native rows (with their locations) into an in-memory
Spark DataFrame (no Parquet reader, so no filter pushdown; through ``frame_of``,
as pyspark's ``createDataFrame`` drops the chunks after an empty one) and lets
``SELECT * FROM view WHERE <text>`` decide which rows match; :meth:`Oracle.answer_all` asks about many texts in one Spark
job (:mod:`.batch`). :func:`canonical` turns any row set into a sorted list of tuples
in which NULL, NaN and ``-0.0`` have total, Spark-consistent keys: NaN equals
NaN, ``-0.0`` equals ``0.0``, timestamps compare as instants.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tests.tables import arrow_frame

from .batch import collect_each
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
        arrow_frame(spark, located).createOrReplaceTempView(self.view)  # naive stays NTZ

    def query(self, where: str) -> Any:
        """The DataFrame of ``SELECT * FROM view WHERE <where>`` (parsed and analysed, not run)."""
        return self.spark.sql(f"SELECT * FROM {self.view} WHERE {where}")

    def answer(self, where: str) -> Answer:
        """Evaluate ``where`` with Spark SQL; an analysis, parse or runtime error is a refusal."""
        from pyspark.errors.exceptions.captured import CapturedException

        try:
            got = self.query(where).toArrow()
        except CapturedException as exc:
            return _refusal(exc)
        return _answer(got)

    def answer_all(self, wheres: Sequence[str]) -> list[Answer]:
        """:meth:`answer` for each text, the accepted ones evaluated in one Spark job.

        Parse and analysis errors are found per text (creating the query
        analyses it); the texts Spark accepts run together. If that job fails
        (a runtime error), the failing texts are found by halving the batch and
        each one is answered on its own by :meth:`answer`.
        """
        from pyspark.errors.exceptions.captured import CapturedException

        if len(wheres) == 1:
            return [self.answer(wheres[0])]
        answers: dict[int, Answer] = {}
        frames: dict[int, Any] = {}
        for k, where in enumerate(wheres):
            try:
                frames[k] = self.query(where)
            except CapturedException as exc:
                answers[k] = _refusal(exc)
        answers.update(
            collect_each(frames, lambda k: self.answer(wheres[k]), lambda _k, got: _answer(got))
        )
        return [answers[k] for k in range(len(wheres))]

    def close(self) -> None:
        """Drop the temporary view."""
        self.spark.catalog.dropTempView(self.view)


def _answer(got: pa.Table) -> Answer:
    return Answer(canonical(got), set(got.column(LOC).to_pylist()))


def _refusal(exc: Exception) -> Answer:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Answer(None, set(), f"{type(exc).__name__}: {first}")
