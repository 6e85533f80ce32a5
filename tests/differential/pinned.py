"""The CI share of the differential suite: pinned tables, changed and refreshed in stages.

A hypothesis draw of two tables per format (derandomised, the first one the
simplest: empty) checked almost nothing a user meets after the first
commit. The CI share is written out here instead, the same for every format
of :data:`~tests.differential.formats.FORMATS`: a table whose indexed columns
hold NULL, NaN and ``-0.0`` (and infinities, duplicates), every index type on
``f`` and one more on ``g`` (its type and the session time zone rotate over
the formats, :func:`for_format`), then **stages**, each a few changes (one
commit each), maybe a refresh of every index, maybe a check round:

1. an append, a delete and an upsert, not refreshed: checked with stale
   indexes (``explain``, ``read_arrow``, ``Table.read``);
2. a refresh (an incremental delta of those three commits): checked again,
   on every read path (the data source and the SQL view too).

The changes move NaN, ``-0.0`` and NULL into locations that held none of
them at the build, so a refresh that loses such a key from its delta drops a
location holding matching rows. Each round checks the hand-written
:data:`TARGETED` predicates (NaN, zeros of either sign, NULL, duplicates)
and its own share of a fixed draw from
:func:`~tests.differential.predicates.predicates` (:func:`drawn_predicates`:
derandomised, the same texts every run; each format gets other ones).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .check import INDEX_TYPES, Case, Tally
from .data import (
    DATES,
    DECIMALS,
    DOUBLES,
    FLOATS,
    INTS,
    NAIVE_TIMESTAMPS,
    STRINGS,
    UTC,
    VALUE_COLUMNS,
    Mutation,
    TableSpec,
)
from .formats import FORMATS
from .predicates import predicates

NAN = math.nan

#: Values of the columns a pinned row does not set: every pool of :mod:`.data`, NULL first.
POOLS: dict[str, list[Any]] = {
    "i": [None, *INTS],
    "f": [None, *DOUBLES],
    "g": [None, *FLOATS],
    "dec": [None, *DECIMALS],
    "s": [None, *STRINGS],
    "d": [None, *DATES],
    "ts": [None, *(t.replace(tzinfo=UTC) for t in NAIVE_TIMESTAMPS)],
    "tn": [None, *NAIVE_TIMESTAMPS],
    "b": [None, True, False],
}


def row(rid: int, loc: int, version: int = 0, **values: Any) -> dict[str, Any]:
    """Row ``rid`` at location ``loc``: ``values`` where given, else a pool value picked by ``rid``."""
    out: dict[str, Any] = {"id": rid, "v": version, "loc": loc}
    for n, (column, pool) in enumerate(POOLS.items()):
        out[column] = values[column] if column in values else pool[(3 * rid + n) % len(pool)]
    return out


@dataclass
class Stage:
    """Changes made to the table (one commit each), maybe a refresh, maybe a check round.

    ``check`` is the number of the check round run after the stage (``None``:
    none); each round checks :data:`TARGETED` and its own share of the drawn
    predicates, on every read path but those in ``skip``.
    """

    mutations: list[Mutation]
    refresh: bool
    check: int | None = None
    skip: frozenset[str] = frozenset()


@dataclass
class PinnedTable:
    """A table of the CI share: initial rows, indexes, session time zone and stages."""

    name: str
    spec: TableSpec
    indexes: list[tuple[str, str]]
    zone: str
    stages: list[Stage]

    def values(self) -> dict[str, list[Any]]:
        """Every value each column ever holds (predicate literals come from them)."""
        out: dict[str, list[Any]] = {}
        rows = [*self.spec.rows, *(r for s in self.stages for m in s.mutations for r in m.rows)]
        for r in rows:
            for c in VALUE_COLUMNS:
                out.setdefault(c, []).append(r[c])
        return out

    @property
    def rounds(self) -> int:
        """How many check rounds the stages run."""
        return len({s.check for s in self.stages if s.check is not None})


#: The CI table. At the build ``f`` is laid out sorted (NULL and the
#: negatives at 0, the zeros and 0.5 at 1, the large values and NaN at 2,
#: values from 0.75 to 1.5 at 3), so the ``f`` indexes prune; in ``g`` NaN is
#: at 0 only, ``-0.0`` at 2 only, NULL at 0 and 1. The changes move NaN,
#: ``-0.0`` and NULL into locations that held none at the build: in ``f`` NaN
#: to 0 (appended) and 1 (upserted), ``-0.0`` to 2, NULL to 1; in ``g`` NaN to
#: 1 (upserted) and 2 (appended), ``-0.0`` to 0. A delete takes one of two
#: rows holding a key at a location (NaN at 2, 0.5 at 1): the key stays there.
#: Location 3 is never changed: read stale, the indexes still prune it. (Delta
#: and Iceberg write the appended rows to a new file and rewrite the files of
#: deleted and upserted rows, new locations all; the file of location 3 stays.)
FLOATS_TABLE = PinnedTable(
    name="floats",
    spec=TableSpec(
        locations=4,
        rows=[
            row(0, 0, f=None, g=NAN),
            row(1, 0, f=None, g=1.0),
            row(2, 0, f=-math.inf, g=None),
            row(3, 0, f=-1e308, g=0.5),
            row(4, 1, f=-0.0, g=0.1),
            row(5, 1, f=0.0, g=None),
            row(6, 1, f=0.5, g=16777217.0),
            row(7, 1, f=0.5, g=-2.5),
            row(8, 2, f=2.0, g=-0.0),
            row(9, 2, f=1e308, g=math.inf),
            row(10, 2, f=NAN, g=0.0),
            row(11, 2, f=NAN, g=1.0),
            row(12, 3, f=1.0, g=3.0),
            row(13, 3, f=1.5, g=-1.0),
            row(14, 3, f=0.75, g=7.5),
        ],
        mutations=[],
        refresh=False,
    ),
    indexes=[("f", "sieve"), ("f", "zonemap"), ("f", "bloom"), ("f", "exact")],
    zone="UTC",
    stages=[
        # checked stale: the indexes are as built, the table three commits on.
        # The data source and the SQL view ask the planner Table.read asks
        # (from Spark's pushed filters instead of the text): they are read in
        # the next round only, where the view made in this one meets a
        # refreshed index.
        Stage(
            [
                Mutation(
                    "append",
                    rows=[row(15, 0, 1, f=NAN, g=-0.0), row(16, 2, 1, f=-0.0, g=NAN)],
                ),
                Mutation("delete", ids=[7, 10]),
                Mutation(
                    "upsert",
                    rows=[
                        row(5, 1, 2, f=NAN, g=NAN),  # 0.0 becomes NaN at 1
                        row(1, 0, 2, f=-2.5, g=2.0),  # a NULL becomes -2.5 at 0
                        row(17, 1, 2, f=None, g=None),  # a new NULL at 1
                    ],
                ),
            ],
            refresh=False,
            check=0,
            skip=frozenset({"data source", "SQL view"}),
        ),
        # checked refreshed: the delta of the three commits on top of the build
        Stage([], refresh=True, check=1),
    ],
)

#: The tables of the CI share, the same for every format.
TABLES = (FLOATS_TABLE,)

#: Predicates on the NaN, zero and NULL keys the changes move around, in both
#: floating-point columns; each matches rows of changed locations.
TARGETED = (
    "f = CAST('NaN' AS DOUBLE)",
    "f IN (CAST('NaN' AS FLOAT), -1e308)",
    "f > 1e300",
    "f < 0.0",
    "f = -0.0",
    "f BETWEEN -0.0 AND 0.0",
    "f = 0.5 OR f IS NULL",
    "NOT (f < 1.0)",
    "f IN (2.0, 1e308)",
    "g = CAST('NaN' AS FLOAT)",
    "g = 0.0 OR g IS NULL",
    "g IN (-0.0, 0.5)",
)


#: The index type on ``g`` by format: every type on some format. (On
#: ``hudi-cow-cdc`` a Sieve on ``g`` selects every location for ``g = NaN``,
#: so a refresh losing NaN keys would go unseen there: it gets a zone map.)
G_INDEX = {
    "delta": "sieve",
    "iceberg": "zonemap",
    "hudi-cow": "bloom",
    "hudi-mor": "exact",
    "hudi-cow-cdc": "zonemap",
}


def for_format(table: PinnedTable, fmt: str) -> PinnedTable:
    """``table`` as checked on format ``fmt``: one more index, on ``g``, and a session time zone.

    Both vary over the formats, as a draw would vary them: ``g`` gets the
    index type :data:`G_INDEX` names (another format: the types in turn),
    the session another zone on each format.
    """
    n = FORMATS.index(fmt)
    zones = ("UTC", "America/New_York", "+05:30")
    kind = G_INDEX.get(fmt, INDEX_TYPES[n % len(INDEX_TYPES)])
    return replace(table, indexes=[*table.indexes, ("g", kind)], zone=zones[n % len(zones)])


def drawn_predicates(table: PinnedTable, count: int, exclude: Collection[str] = ()) -> list[str]:
    """``count`` distinct predicate texts over ``table``'s values, the same ones every run.

    None of them is one of ``exclude``.

    Drawn by :func:`~tests.differential.predicates.predicates` in a
    derandomised hypothesis run (its seed is fixed by this function's
    source), indexed columns three times as often as the others, as the
    long run draws them.
    """
    indexed = sorted({c for c, _ in table.indexes})
    columns = [*indexed, *indexed, *VALUE_COLUMNS]
    strategy = predicates(table.values(), columns)
    out: list[str] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        for _ in range(4):
            text = data.draw(strategy)
            if text not in out and text not in exclude and len(out) < count:
                out.append(text)

    draw()
    assert len(out) == count, f"drew {len(out)} distinct predicates of {count}"
    return out


#: Drawn predicates by table name, indexed columns and count (a draw takes a second).
_DRAWN: dict[tuple[str, tuple[str, ...], int], list[str]] = {}


def round_predicates(table: PinnedTable, fmt: str, drawn_per_round: int) -> list[list[str]]:
    """Each check round's predicates on format ``fmt``: :data:`TARGETED` and its own drawn ones.

    One draw is shared out over the formats and rounds: each format checks
    other drawn texts, the share as a whole ``drawn_per_round`` times the
    rounds times the formats.
    """
    key = (table.name, tuple(sorted({c for c, _ in table.indexes})), drawn_per_round)
    if key not in _DRAWN:
        count = drawn_per_round * table.rounds * len(FORMATS)
        _DRAWN[key] = drawn_predicates(table, count, TARGETED)
    drawn = _DRAWN[key]
    first = FORMATS.index(fmt) * table.rounds
    return [
        [*TARGETED, *drawn[(first + k) * drawn_per_round : (first + k + 1) * drawn_per_round]]
        for k in range(table.rounds)
    ]


def special_values(rows: pa.Table, column: str) -> set[str]:
    """Which of NULL, NaN and ``-0.0`` ``column`` of ``rows`` holds."""
    out = set()
    for v in rows.column(column).to_pylist():
        if v is None:
            out.add("NULL")
        elif isinstance(v, float) and math.isnan(v):
            out.add("NaN")
        elif isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0:
            out.add("-0.0")
    return out


@dataclass
class PinnedRun:
    """What checking one pinned table did.

    Attributes:
        tally: the counts of the checks (:class:`~tests.differential.check.Tally`).
        failures: the disagreements with Spark SQL, each naming the table,
            what happened to it since the build and the check round.
        special: per indexed column, which of NULL, NaN and ``-0.0`` it held
            at every check round.
        history: the changes (their kinds) and refreshes since the build, in order.
    """

    tally: Tally
    failures: list[str]
    special: dict[str, set[str]]
    history: list[str]


def run_pinned(
    spark: Any, fmt: str, table: PinnedTable, root: Path, rounds: list[list[str]]
) -> PinnedRun:
    """Write ``table`` as ``fmt`` under ``root``, run its stages and check rounds."""
    case = Case(spark, fmt, root, table.spec, table.indexes, table.zone)
    failures: list[str] = []
    indexed = sorted({c for c, _ in table.indexes})
    special = {c: {"NULL", "NaN", "-0.0"} for c in indexed}
    try:
        for stage in table.stages:
            case.advance(stage.mutations, stage.refresh)
            if stage.check is None:
                continue
            for c in indexed:
                special[c] &= special_values(case.rows, c)
            failures += [
                f"table {table.name!r}, check round {stage.check}: {case.describe()}\n{f}"
                for f in case.check_all(rounds[stage.check], skip=stage.skip)
            ]
    finally:
        case.close()
    return PinnedRun(case.tally, failures, special, case.history)
