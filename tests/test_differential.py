"""Differential suite: every lakesieve read path against Spark SQL over the format's own reader.

Each example draws a small table of adversarial values laid out over a few
locations (:mod:`tests.differential.data`), writes it with the format's own
writer, builds every index type on one column and one more index on another,
sometimes changes the table afterwards (append, delete, upsert) and
sometimes refreshes the indexes; then, with the session in a drawn time zone
(timestamp literals without a zone are read in it), checks a batch of predicate texts
(:mod:`tests.differential.predicates`) against the oracle: Spark SQL
evaluating the same text over the native full read held in memory
(:mod:`tests.differential.check`). One table per example, many predicates
per table: writing and indexing is the expensive part. A table's predicates
are drawn first and checked together: Spark SQL, ``Table.read`` and the data
source each answer up to 16 of them in one Spark job (:mod:`tests.differential.batch`).

In the default run a small, derandomised share runs (profile
``differential-ci``: 2 tables per format, the first the simplest one, 12
predicates each). For a long run::

    LAKESIEVE_HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/test_differential.py \\
        -s --hypothesis-show-statistics --hypothesis-seed=12345

(profile ``differential-long``: 100 tables per format, 100 predicates each;
``LAKESIEVE_DIFF_EXAMPLES`` and ``LAKESIEVE_DIFF_PREDICATES`` override the
counts of either profile). A failure is shrunk to a minimal table and
predicates; the assertion message names the read path and the rows. With
``LAKESIEVE_DIFF_KEEP_GOING=1`` a failure neither stops the run nor is
shrunk: every disagreement is printed as it is found and counted, a line of
running totals is printed after each table, and the test fails at the end if
there was any disagreement. ``LAKESIEVE_DIFF_MINUTES`` bounds a format's run:
once that many minutes have passed, the remaining examples are drawn but
not checked (the totals count only the tables checked). ``LAKESIEVE_DIFF_ONLY=7``
(comma-separated example numbers) checks only those examples, drawing the
others: with a long run's seed and settings it replays one of its tables. A
disagreement's message includes the table's full spec.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from .differential.check import INDEX_TYPES, Case, Tally
from .differential.data import VALUE_COLUMNS, table_specs
from .differential.formats import FORMATS
from .differential.predicates import predicates

pytestmark = pytest.mark.spark

# CI: a fixed draw (derandomised) and no shrinking (each shrink step writes and indexes a table;
# the failure message already names the table and the predicate)
settings.register_profile(
    "differential-ci",
    max_examples=2,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "differential-long",
    max_examples=100,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
PROFILE = (
    "differential-long"
    if os.environ.get("LAKESIEVE_HYPOTHESIS_PROFILE") == "long"
    else "differential-ci"
)
EXAMPLES = (
    int(os.environ.get("LAKESIEVE_DIFF_EXAMPLES", "0"))
    or settings.get_profile(PROFILE).max_examples
)
PREDICATES = int(os.environ.get("LAKESIEVE_DIFF_PREDICATES", "0")) or (
    100 if PROFILE == "differential-long" else 12
)
KEEP_GOING = os.environ.get("LAKESIEVE_DIFF_KEEP_GOING", "") not in ("", "0")
MINUTES = float(os.environ.get("LAKESIEVE_DIFF_MINUTES", "0")) or None
#: Check only these examples (1-based, comma-separated; the others are drawn, not checked):
#: replays one table of a long run with the run's seed and settings.
ONLY = {int(n) for n in os.environ.get("LAKESIEVE_DIFF_ONLY", "").split(",") if n.strip()}

#: Session time zones a table's predicates are checked in (timestamp literals
#: without a zone are read in it, by Spark and by lakesieve).
ZONES = ("UTC", "America/New_York", "+05:30")

TALLIES: dict[str, Tally] = {}
#: Tables checked, by format.
TABLES: dict[str, int] = {}
#: Disagreements found with ``KEEP_GOING``, by format: (table description, failure).
FOUND: dict[str, list[tuple[str, Any]]] = {}


@pytest.fixture(scope="module", autouse=True)
def _quiet_and_report() -> Any:
    """Silence Spark's logging of refused queries; print the refusal counts at the end."""
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    yield
    for fmt, t in sorted(TALLIES.items()):
        rate = t.lakesieve_only_refused / max(t.checked - t.spark_refused, 1)
        print(
            f"\n{fmt}: {TABLES.get(fmt, 0)} tables, {t.checked} predicates, Spark refused {t.spark_refused}, lakesieve alone "
            f"refused {t.lakesieve_only_refused} ({rate:.0%} of those Spark accepts), "
            f"{t.matched_rows} matching rows, {t.from_change_data} locations refreshed from "
            f"change data, {t.from_logs} from log files alone, "
            f"{len(FOUND.get(fmt, []))} disagreements"
        )
        for line in t.refusals[:5]:
            print(f"    refused: {line}")


def draw_indexes(data: st.DataObject) -> list[tuple[str, str]]:
    """Every index type on one column, one more index on another column."""
    first, second = data.draw(
        st.lists(st.sampled_from(VALUE_COLUMNS), min_size=2, max_size=2, unique=True)
    )
    return [*((first, t) for t in INDEX_TYPES), (second, data.draw(st.sampled_from(INDEX_TYPES)))]


def run_case(
    spark: Any,
    fmt: str,
    data: st.DataObject,
    n_predicates: int,
    stop_at_first: bool = True,
    data_source: bool = True,
    check: bool = True,
) -> list[Any]:
    """Draw one table and ``n_predicates`` predicates; return (or raise on) the disagreements.

    Without ``check`` only the draws are made.
    """
    spec = data.draw(table_specs(), label="table")
    indexes = draw_indexes(data)
    zone = data.draw(st.sampled_from(ZONES), label="session time zone")
    indexed = sorted({c for c, _ in indexes})
    values: dict[str, list[Any]] = {}
    for row in [*spec.rows, *(r for m in spec.mutations for r in m.rows)]:
        for c in VALUE_COLUMNS:
            values.setdefault(c, []).append(row[c])
    # indexed columns are tested three times as often as the others
    columns = [*indexed, *indexed, *VALUE_COLUMNS]
    wheres = [data.draw(predicates(values, columns), label="where") for _ in range(n_predicates)]
    found: list[Any] = []
    if not check:
        return found
    with tempfile.TemporaryDirectory(prefix=f"diff-{fmt}-") as root:
        case = Case(spark, fmt, Path(root), spec, indexes, zone)
        try:
            failures = case.check_all(wheres, data_source=data_source)
            if failures and stop_at_first:
                raise AssertionError(f"{case.describe()}\n" + "\n".join(str(f) for f in failures))
            found += [(case.describe(), f) for f in failures]
        finally:
            case.close()
            total = TALLIES.setdefault(fmt, Tally())
            for name in (
                "checked",
                "spark_refused",
                "lakesieve_only_refused",
                "matched_rows",
                "from_change_data",
                "from_logs",
            ):
                setattr(total, name, getattr(total, name) + getattr(case.tally, name))
            total.refusals += case.tally.refusals
            event(
                f"lakesieve alone refused {min(case.tally.lakesieve_only_refused, 5)}+ predicates"
            )
    return found


@pytest.mark.parametrize("fmt", FORMATS)
def test_pruned_reads_equal_spark_sql_over_the_native_reader(spark: Any, fmt: str) -> None:
    """read_arrow, Table.read, the data source and explain agree with Spark SQL."""

    found = FOUND.setdefault(fmt, [])
    started = time.monotonic()
    drawn = 0
    profile = settings.get_profile(PROFILE)
    phases = [p for p in profile.phases if p != Phase.shrink] if KEEP_GOING else profile.phases

    @settings(profile, max_examples=EXAMPLES, phases=phases)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        nonlocal drawn
        drawn += 1
        # past the time bound (or outside ONLY) an example still draws (hypothesis wants
        # the same draws from a replayed example) but checks nothing
        late = MINUTES is not None and time.monotonic() - started > 60 * MINUTES
        if late or (ONLY and drawn not in ONLY):
            run_case(spark, fmt, data, PREDICATES, check=False)
            return
        for table, failure in run_case(spark, fmt, data, PREDICATES, stop_at_first=not KEEP_GOING):
            print(f"\nDISAGREEMENT {table}\n{failure}", flush=True)
            found.append((table, failure))
        TABLES[fmt] = TABLES.get(fmt, 0) + 1
        if KEEP_GOING:
            t = TALLIES[fmt]
            print(
                f"\nPROGRESS {fmt}: {TABLES[fmt]} tables, {t.checked} predicates, Spark refused "
                f"{t.spark_refused}, lakesieve alone refused {t.lakesieve_only_refused}, "
                f"{t.matched_rows} matching rows, {t.from_change_data} locations refreshed "
                f"from change data, {t.from_logs} from log files alone, "
                f"{len(found)} disagreements, "
                f"{time.monotonic() - started:.0f} s",
                flush=True,
            )

    run()
    assert not found, f"{len(found)} disagreements with Spark SQL (printed above)"
