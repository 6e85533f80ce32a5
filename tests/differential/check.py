"""One differential case: a written, indexed (maybe changed and refreshed) table and its oracle.

:class:`Case` holds what is expensive to make (the table, its indexes, the
Spark view of its native rows); :meth:`Case.check` runs one predicate text
through every lakesieve path and returns the disagreements with Spark SQL:

- ``explain``: the selected locations must contain every location holding a
  row Spark selects;
- ``read_arrow``, ``Table.read``, ``data source``: exactly Spark's rows (as a
  multiset, values compared the way Spark compares them);
- a text Spark refuses (parse, analysis or runtime error) must be refused by
  lakesieve with :class:`~lakesieve.errors.PredicateError`; lakesieve may
  refuse more (counted as a refusal, not a failure).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
from lakesieve.errors import PredicateError

from . import formats
from .data import TableSpec
from .oracle import Answer, Oracle, canonical, describe, multiset_diff

INDEX_TYPES = ("sieve", "zonemap", "bloom", "exact")


@dataclass
class Failure:
    """One disagreement with Spark SQL."""

    kind: str  # missing rows, extra rows, crash, dropped location, accepted, refused differently
    path: str  # explain, read_arrow, Table.read, data source
    where: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.path}: WHERE {self.where}\n    {self.detail}"


@dataclass
class Tally:
    """Counts over the predicates checked: how many Spark refused, how many only lakesieve refused."""

    checked: int = 0
    spark_refused: int = 0
    lakesieve_only_refused: int = 0
    matched_rows: int = 0
    refusals: list[str] = field(default_factory=list)


class Case:
    """A table of one format written from a :class:`TableSpec`, indexed, changed, refreshed."""

    def __init__(
        self, spark: Any, fmt: str, root: Path, spec: TableSpec, indexes: list[tuple[str, str]]
    ) -> None:
        self.spark, self.fmt, self.spec, self.indexes = spark, fmt, spec, indexes
        self.path = root / "t"
        formats.create(spark, fmt, self.path, spec)
        self.table = lakesieve.open(self.path)
        for column, index_type in indexes:
            self.table.build_index(column, type=index_type, spark=spark)
        for m in spec.mutations:
            formats.mutate(spark, fmt, self.path, spec, m)
        if spec.refresh:
            self.table.refresh(spark=spark)
        located = formats.rows_with_location(fmt, self.path)
        native = formats.native_rows(fmt, self.path)
        # the per-location reads are the native full read, split by location
        assert canonical(located) == canonical(native), (
            "native per-location rows differ from the full read"
        )
        self.oracle = Oracle(spark, located)
        self.tally = Tally()

    def close(self) -> None:
        """Drop the oracle's view."""
        self.oracle.close()

    def describe(self) -> str:
        """What the table is, for failure messages."""
        muts = ", ".join(m.kind for m in self.spec.mutations) or "none"
        return (
            f"format {self.fmt}, {len(self.spec.rows)} rows over {self.spec.locations} locations, "
            f"indexes {self.indexes}, changes after build: {muts}, refreshed: {self.spec.refresh}"
        )

    def check(self, where: str, data_source: bool = True) -> list[Failure]:
        """Every disagreement of lakesieve with Spark SQL on ``where``."""
        self.tally.checked += 1
        want = self.oracle.answer(where)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plan = self.table.explain(where=where)
        except PredicateError as exc:
            if want.rows is None:
                self.tally.spark_refused += 1
            else:
                self.tally.lakesieve_only_refused += 1
                self.tally.refusals.append(f"{where}  -- {exc}")
            return []
        except Exception as exc:
            return [Failure("crash", "explain", where, f"{type(exc).__name__}: {exc}")]
        if want.rows is None:
            return [
                Failure("accepted what Spark refuses", "explain", where, f"Spark: {want.error}")
            ]
        self.tally.matched_rows += len(want.rows)
        failures: list[Failure] = []
        dropped = want.locations - set(plan["selected"])
        if dropped:
            failures.append(
                Failure(
                    "dropped location",
                    "explain",
                    where,
                    f"locations holding matching rows not selected: {sorted(dropped)}",
                )
            )
        failures += self._rows(
            "read_arrow", where, want, lambda: self.table.read_arrow(where=where)
        )
        failures += self._rows(
            "Table.read", where, want, lambda: self.table.read(self.spark, where=where).toArrow()
        )
        if data_source:
            failures += self._rows(
                "data source",
                where,
                want,
                lambda: (
                    self.spark.read.format("lakesieve").load(str(self.path)).where(where).toArrow()
                ),
            )
        return failures

    def _rows(self, path: str, where: str, want: Answer, read: Any) -> list[Failure]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got_table: pa.Table = read()
        except Exception as exc:
            text = str(exc).strip().splitlines()
            return [
                Failure("crash", path, where, f"{type(exc).__name__}: {text[-1] if text else ''}")
            ]
        got = canonical(got_table)
        assert want.rows is not None
        missing, extra = multiset_diff(want.rows, got)
        out = []
        if missing:
            out.append(Failure("missing rows", path, where, f"missing {describe(missing)}"))
        if extra:
            out.append(Failure("extra rows", path, where, f"extra {describe(extra)}"))
        return out
