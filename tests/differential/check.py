"""One differential case: a written, indexed (maybe changed and refreshed) table and its oracle.

:class:`Case` holds what is expensive to make (the table, its indexes, the
Spark view of its native rows); :meth:`Case.check` runs one predicate text
through every lakesieve path and returns the disagreements with Spark SQL,
:meth:`Case.check_all` does the same for many texts at once, with one Spark
job per read path for all of them (:mod:`.batch`: each predicate's DataFrame
is made as :meth:`Case.check` makes it, and a failing job falls back to
predicates run one by one, so an error is reported against its predicate):

- ``explain``: the selected locations must contain every location holding a
  row Spark selects;
- ``read_arrow``, ``Table.read``, ``data source`` (``spark.read.format("lakesieve")``),
  ``SQL view`` (``SELECT * FROM <view USING lakesieve> WHERE <text>``): exactly
  Spark's rows (as a multiset, values compared the way Spark compares them);
- a text Spark refuses (parse, analysis or runtime error) must be refused by
  lakesieve with :class:`~lakesieve.errors.PredicateError`; lakesieve may
  refuse more (counted as a refusal, not a failure).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
from lakesieve.errors import PredicateError

from . import formats
from .batch import collect_each
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
    from_change_data: int = 0
    from_logs: int = 0
    refusals: list[str] = field(default_factory=list)


class Case:
    """A table of one format written from a :class:`TableSpec`, indexed, changed, refreshed."""

    def __init__(
        self,
        spark: Any,
        fmt: str,
        root: Path,
        spec: TableSpec,
        indexes: list[tuple[str, str]],
        zone: str = "UTC",
    ) -> None:
        self.spark, self.fmt, self.spec, self.indexes = spark, fmt, spec, indexes
        self.zone = zone  # the session time zone the predicates are checked in
        self.path = root / "t"
        formats.create(spark, fmt, self.path, spec)
        self.table = lakesieve.open(self.path)
        for column, index_type in indexes:
            self.table.build_index(column, type=index_type, spark=spark)
        for m in spec.mutations:
            formats.mutate(spark, fmt, self.path, spec, m)
        refreshed = self.table.refresh(spark=spark) if spec.refresh else []
        located = formats.rows_with_location(fmt, self.path)
        native = formats.native_rows(fmt, self.path)
        # the per-location reads are the native full read, split by location
        assert canonical(located) == canonical(native), (
            "native per-location rows differ from the full read"
        )
        self.oracle = Oracle(spark, located)
        self.tally = Tally()
        # locations whose refresh read their change data files (hudi-cow-cdc)
        self.tally.from_change_data = sum(r.locations_from_change_data for r in refreshed)
        # locations whose rows written since the index were read from log files alone (hudi-mor)
        self.tally.from_logs = sum(r.locations_from_logs for r in refreshed)

    def close(self) -> None:
        """Drop the oracle's view and the case's SQL view."""
        self.oracle.close()
        self.spark.catalog.dropTempView(self.view)

    @property
    def view(self) -> str:
        """A temporary view ``USING lakesieve`` over the table (created on first use)."""
        name = f"lakesieve_case_{id(self)}"
        if not getattr(self, "_view_made", False):
            self.spark.sql(
                f"CREATE OR REPLACE TEMPORARY VIEW {name} USING lakesieve OPTIONS (path '{self.path}')"
            )
            self._view_made = True
        return name

    def describe(self) -> str:
        """What the table is, for failure messages."""
        muts = ", ".join(m.kind for m in self.spec.mutations) or "none"
        return (
            f"format {self.fmt}, {len(self.spec.rows)} rows over {self.spec.locations} locations, "
            f"indexes {self.indexes}, changes after build: {muts}, refreshed: {self.spec.refresh}, "
            f"session time zone {self.zone}\n    spec: {self.spec!r}"
        )

    def check(self, where: str, data_source: bool = True) -> list[Failure]:
        """Every disagreement of lakesieve with Spark SQL on ``where``."""
        return self.check_all([where], data_source)

    def check_all(self, wheres: Sequence[str], data_source: bool = True) -> list[Failure]:
        """Every disagreement of lakesieve with Spark SQL on each text of ``wheres``, in order.

        The oracle, ``Table.read`` and the data source each run one Spark job
        for all the texts (falling back to one job per text when it fails);
        ``explain`` and ``read_arrow`` start no job and run per text. All of
        them run with the shared session in the case's time zone.
        """
        key = "spark.sql.session.timeZone"
        before = self.spark.conf.get(key)
        self.spark.conf.set(key, self.zone)
        try:
            return self._check_all(wheres, data_source)
        finally:
            self.spark.conf.set(key, before)

    def _check_all(self, wheres: Sequence[str], data_source: bool) -> list[Failure]:
        answers = self.oracle.answer_all(wheres)
        found: dict[int, list[Failure]] = {}
        accepted: dict[int, tuple[str, Answer]] = {}
        for k, (where, want) in enumerate(zip(wheres, answers, strict=True)):
            found[k], read_on = self._explain(where, want)
            if read_on:
                accepted[k] = (where, want)
                found[k] += self._rows(
                    "read_arrow", where, want, lambda w=where: self.table.read_arrow(where=w)
                )
        reads: list[tuple[str, Callable[[str], Any]]] = [
            ("Table.read", lambda w: self.table.read(self.spark, where=w))
        ]
        if data_source:
            reads.append(
                (
                    "data source",
                    lambda w: self.spark.read.format("lakesieve").load(str(self.path)).where(w),
                )
            )
            view = self.view
            reads.append(("SQL view", lambda w: self.spark.sql(f"SELECT * FROM {view} WHERE {w}")))
        for path, frame in reads:
            for k, failures in self._rows_all(path, accepted, frame).items():
                found[k] += failures
        return [f for k in sorted(found) for f in found[k]]

    def _explain(self, where: str, want: Answer) -> tuple[list[Failure], bool]:
        """Tally a refusal or check ``explain``'s locations; and whether to check the reads."""
        self.tally.checked += 1
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
            return [], False
        except Exception as exc:
            return [Failure("crash", "explain", where, f"{type(exc).__name__}: {exc}")], False
        if want.rows is None:
            return [
                Failure("accepted what Spark refuses", "explain", where, f"Spark: {want.error}")
            ], False
        self.tally.matched_rows += len(want.rows)
        dropped = want.locations - set(plan["selected"])
        if dropped:
            return [
                Failure(
                    "dropped location",
                    "explain",
                    where,
                    f"locations holding matching rows not selected: {sorted(dropped)}",
                )
            ], True
        return [], True

    def _rows(self, path: str, where: str, want: Answer, read: Any) -> list[Failure]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got_table: pa.Table = read()
        except Exception as exc:
            return [_crash(path, where, exc)]
        return _compare(path, where, want, got_table)

    def _rows_all(
        self,
        path: str,
        accepted: dict[int, tuple[str, Answer]],
        frame: Callable[[str], Any],
    ) -> dict[int, list[Failure]]:
        """:meth:`_rows` of ``frame(where)`` for every accepted text, collected in one job."""
        if len(accepted) == 1:
            ((k, (where, want)),) = accepted.items()
            return {k: self._rows(path, where, want, lambda: frame(where).toArrow())}
        out: dict[int, list[Failure]] = {}
        frames: dict[int, Any] = {}
        for k, (where, _want) in accepted.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    frames[k] = frame(where)
            except Exception as exc:
                out[k] = [_crash(path, where, exc)]

        def alone(k: int) -> list[Failure]:
            where, want = accepted[k]
            return self._rows(path, where, want, lambda: frame(where).toArrow())

        def split(k: int, got: pa.Table) -> list[Failure]:
            where, want = accepted[k]
            return _compare(path, where, want, got)

        out.update(collect_each(frames, alone, split))
        return out


def _crash(path: str, where: str, exc: Exception) -> Failure:
    text = str(exc).strip().splitlines()
    return Failure("crash", path, where, f"{type(exc).__name__}: {text[-1] if text else ''}")


def _compare(path: str, where: str, want: Answer, got_table: pa.Table) -> list[Failure]:
    """Missing and extra rows of ``got_table`` against Spark's answer."""
    got = canonical(got_table)
    assert want.rows is not None
    missing, extra = multiset_diff(want.rows, got)
    out = []
    if missing:
        out.append(Failure("missing rows", path, where, f"missing {describe(missing)}"))
    if extra:
        out.append(Failure("extra rows", path, where, f"extra {describe(extra)}"))
    return out
