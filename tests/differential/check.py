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

import math
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
from lakesieve.errors import PredicateError
from lakesieve.maintenance.refresh import RefreshPolicy

from . import formats
from .batch import collect_each
from .data import Mutation, TableSpec
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
    """Counts over the predicates checked: how many Spark refused, how many only lakesieve refused.

    And what the checks exercised: the table's changes, the indexes
    refreshed by a delta (``refreshed``), the predicates answered while an
    index used was older than the table (``stale``), those whose plan read
    fewer locations than the table has (``pruned``; ``stale_pruned``: both),
    and per read path the predicates whose rows were compared (``paths``).
    """

    checked: int = 0
    spark_refused: int = 0
    lakesieve_only_refused: int = 0
    matched_rows: int = 0
    from_change_data: int = 0
    from_logs: int = 0
    #: rewritten files whose index entries a refresh moved to the files replacing them
    renamed: int = 0
    refusals: list[str] = field(default_factory=list)
    changes: int = 0
    refreshed: int = 0
    #: indexes refreshed by a delta, per engine ("driver": Arrow, no Spark job; "spark")
    engines: Counter[str] = field(default_factory=Counter)
    stale: int = 0
    stale_pruned: int = 0
    pruned: int = 0
    paths: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts to these."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, Counter):
                mine.update(theirs)
            elif isinstance(mine, list):
                mine += theirs
            else:
                setattr(self, f.name, mine + theirs)


class Case:
    """A table of one format written from a :class:`TableSpec`, indexed, changed, refreshed.

    :meth:`advance` changes (and refreshes) it further, between checks.
    """

    #: Spark SQL over the table's rows as they are now
    oracle: Oracle
    #: the table's rows as its own reader returns them, each with its location
    rows: pa.Table

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
        self.tally = Tally()
        #: what happened to the table since the build, for failure messages
        self.history: list[str] = []
        self._loaded = False
        formats.create(spark, fmt, self.path, spec)
        self.table = lakesieve.open(self.path)
        for column, index_type in indexes:
            self.table.build_index(column, type=index_type, spark=spark)
        self.advance(spec.mutations, spec.refresh)

    def advance(self, mutations: Sequence[Mutation], refresh: bool) -> None:
        """Apply ``mutations`` (one commit each), refresh the indexes if asked, reload the oracle.

        Without ``refresh`` the indexes stay as they were: the next checks read
        with indexes older than the table (stale).
        """
        for m in mutations:
            formats.mutate(self.spark, self.fmt, self.path, self.spec, m)
        self.tally.changes += len(mutations)
        self.history += [m.kind for m in mutations]
        if refresh:
            self.history.append("refresh")
            # deltas kept however small the base and however much a change rewrote: the
            # share exercises the delta overlay;
            # every other index's changes are read on the driver (Arrow), the rest by
            # Spark jobs, starting with the one or the other by format, so that each
            # index type meets both engines over the formats
            refreshed = []
            first = sum(map(ord, self.fmt)) % 2
            for i, definition in enumerate(self.table.indexes()):
                mb = 256.0 if (i + first) % 2 == 0 else 0.0
                policy = RefreshPolicy(
                    max_delta_share=math.inf, driver_max_mb=mb, rebuild_share=math.inf
                )
                refreshed += self.table.refresh(definition.name, spark=self.spark, policy=policy)
            # indexes brought up to date by a delta (not rebuilt, not skipped)
            by_delta = [r for r in refreshed if r.action in ("delta", "compacted")]
            self.tally.refreshed += len(by_delta)
            self.tally.engines.update(r.engine for r in by_delta)
            # locations whose refresh read their change data files (hudi-cow-cdc)
            self.tally.from_change_data += sum(r.locations_from_change_data for r in refreshed)
            # locations whose rows written since the index were read from log files alone (hudi-mor)
            self.tally.from_logs += sum(r.locations_from_logs for r in refreshed)
            # rewritten files followed to their new names (Delta, Iceberg copy-on-write)
            self.tally.renamed += sum(r.locations_renamed for r in refreshed)
        if self._loaded and not mutations:
            return  # the table is as it was: so are its rows
        located = formats.rows_with_location(self.fmt, self.path)
        native = formats.native_rows(self.fmt, self.path)
        # the per-location reads are the native full read, split by location
        assert canonical(located) == canonical(native), (
            "native per-location rows differ from the full read"
        )
        if self._loaded:
            self.oracle.close()
        self.oracle = Oracle(self.spark, located)
        self.rows = located
        self._loaded = True

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
        muts = ", ".join(self.history) or "none"
        return (
            f"format {self.fmt}, {len(self.spec.rows)} rows over {self.spec.locations} locations, "
            f"indexes {self.indexes}, after build: {muts}, refreshed: {self.history[-1:] == ['refresh']}, "
            f"session time zone {self.zone}\n    spec: {self.spec!r}"
        )

    def check(self, where: str, data_source: bool = True) -> list[Failure]:
        """Every disagreement of lakesieve with Spark SQL on ``where``."""
        return self.check_all([where], data_source)

    def check_all(
        self, wheres: Sequence[str], data_source: bool = True, skip: Collection[str] = ()
    ) -> list[Failure]:
        """Every disagreement of lakesieve with Spark SQL on each text of ``wheres``, in order.

        The oracle, ``Table.read`` and the data source each run one Spark job
        for all the texts (falling back to one job per text when it fails);
        ``explain`` and ``read_arrow`` start no job and run per text. All of
        them run with the shared session in the case's time zone. Without
        ``data_source`` neither the data source nor the SQL view is read; the
        Spark read paths named in ``skip`` (``Table.read``, ``data source``,
        ``SQL view``) are not read either.
        """
        key = "spark.sql.session.timeZone"
        before = self.spark.conf.get(key)
        self.spark.conf.set(key, self.zone)
        try:
            return self._check_all(wheres, data_source, skip)
        finally:
            self.spark.conf.set(key, before)

    def _check_all(
        self, wheres: Sequence[str], data_source: bool, skip: Collection[str]
    ) -> list[Failure]:
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
                self.tally.paths["read_arrow"] += 1
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
        reads = [(path, frame) for path, frame in reads if path not in skip]
        for path, frame in reads:
            for k, failures in self._rows_all(path, accepted, frame).items():
                found[k] += failures
            self.tally.paths[path] += len(accepted)
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
        self.tally.paths["explain"] += 1
        pruned = plan["locations_selected"] < plan["locations_total"]
        self.tally.pruned += pruned
        if any(i.get("stale") and i["status"] == "used" for i in plan["indexes"]):
            self.tally.stale += 1
            self.tally.stale_pruned += pruned
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
