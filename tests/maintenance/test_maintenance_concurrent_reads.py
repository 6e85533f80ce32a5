"""Index maintenance beside running readers: every answer stays the native read's.

A reader plans and reads a Hudi table (our writer) with a Sieve index on
``k`` and an exact index on ``id``, on both read paths: the driver-side
Arrow read (what ``lakesieve query --engine arrow`` runs) and ``Table.read``
(Spark). Meanwhile another process maintains the store: refresh after each
table change the reader commits between its queries, compaction, vacuum at
grace 0, and repair, every other time of a log with a garbage newest commit
(so the repair swaps the log). Every answer must equal the rows hudi-rs
reads at the queried instant, filtered by hand (integer predicates without
NULLs, where Python and Spark SQL agree; the filters are checked against
Spark SQL at the end). No lakesieve code computes the truth.

What protects a reader: nothing keeps vacuum from deleting a state a reader
has chosen (a delta a compaction replaced, a base a rebuild replaced: both
go at once, whatever the grace period, which covers only files no state
names). Every failed read of an index file degrades the plan instead: a
missing delta cuts the chain back to the newest earlier state on the
timeline (stale, so the locations changed since are added), a missing base
leaves the index unused, a failed lookup reads every location it cannot
rule out; each with a warning, never a wrong row.
:func:`test_a_reader_whose_states_vacuum_removed_reads_exact_rows` pins that
down without timing, and a reader listing the log while a repair swaps it is
pinned down in :func:`test_a_reader_listing_the_log_while_a_repair_swaps_it_reads_the_new_log`.
:func:`test_readers_beside_maintenance_get_native_rows` runs the race; the
reader commits one table change, or more for ``LAKESIEVE_MAINTENANCE_SECONDS``
seconds after the maintenance process is up (by hand: a few minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakesieve.errors import LakesieveWarning
from lakesieve.maintenance.repair import check_store, repair
from lakesieve.store import IndexStore
from lakesieve.store.index_log import LogSnapshot
from lakesieve.store.log_swap import DAMAGED_PREFIX
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.conftest import child_spark_env
from tests.store_helpers import add_index, delta_table
from tests.tables import CHAINS, expected_rows, hudi_rs_rows, make_rows, sorted_rows, write_rows

COLUMNS = ("id", "k", "s", "d", "amount", "part", "version")
INDEXES = (("k", "sieve"), ("id", "exact"))
#: Keys the table changes move rows to (``k`` of a row moved by change ``c`` is ``MOVED + c``).
MOVED = 1000

#: Each predicate with the same filter written by hand (integers without NULLs).
QUERIES: dict[str, Callable[[Any], Any]] = {
    "k = 5": lambda f: f("k") == 5,
    "k = 205": lambda f: f("k") == 205,
    "k in (1, 100, 1001, 1002)": lambda f: f("k").isin([1, 100, 1001, 1002]),
    "k between 1000 and 1010": lambda f: (f("k") >= 1000) & (f("k") <= 1010),
    "k >= 240": lambda f: f("k") >= 240,
    "id = 620": lambda f: f("id") == 620,
    "id in (7, 57, 650, 707)": lambda f: f("id").isin([7, 57, 650, 707]),
}


def _changed_rows(cycle: int) -> list[dict[str, Any]]:
    """Change ``cycle``: 30 new rows and 5 old ones moved to key ``MOVED + cycle``."""
    start = 600 + 30 * cycle
    rows = make_rows(range(start, start + 30), seed=cycle, version=cycle)
    moved = make_rows([cycle + 50 * j for j in range(5)], seed=100 + cycle, version=cycle + 1)
    for row in moved:
        row["k"] = MOVED + cycle
    return rows + moved


def _change(spark: Any, path: Path, cycle: int) -> str:
    """Table change ``cycle`` as one commit: an upsert, or (every third) a delete of a few rows."""
    if cycle % 3 == 2:
        gone = make_rows([600 + 30 * (cycle - 1) + j for j in range(0, 30, 4)], seed=0)
        return write_rows(spark, path, gone, mode="delete")
    return write_rows(spark, path, _changed_rows(cycle), mode="upsert")


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table whose indexes (Sieve on ``k``, exact on ``id``) end in a delta at its latest instant."""
    path = tmp_path_factory.mktemp("maint") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    table = open_table(path)
    for column, typ in INDEXES:
        table.build_index(column, type=typ, spark=spark)
    _change(spark, path, 0)
    table.refresh(spark=spark, policy=CHAINS)
    assert all(d.latest().is_delta for d in table.indexes())  # type: ignore[union-attr]
    return path


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


# ------------------------------------------------------------------ the truth


class Truth:
    """The rows hudi-rs reads at an instant, filtered by the hand-written filters (cached per instant)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rows: dict[str, pa.Table] = {}

    def rows(self, instant: str, where: str) -> list[tuple[Any, ...]]:
        """The sorted rows of ``where`` at ``instant``."""
        if instant not in self._rows:
            self._rows[instant] = hudi_rs_rows(self.path, instant)
        table = self._rows[instant]
        return _tuples(table.filter(QUERIES[where](pc.field)))


def _tuples(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.select(list(COLUMNS)).to_pylist())


def _answers(
    reader: Table, spark: Any, where: str, instant: str
) -> tuple[Any, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The plan and rows of the Arrow path, and the rows of the Spark path (``Table.read``)."""
    plan = reader.plan(where, as_of=instant)
    arrow = _tuples(reader.read_plan_arrow(plan, columns=list(COLUMNS)))
    return plan, arrow, sorted_rows(reader.read(spark, where, as_of=instant), COLUMNS)


# ------------------------------------------------------------------ states gone under a reader


def _hold_log(reader: Table, maintenance: Callable[[], None]) -> None:
    """Make ``reader`` keep the log it reads first, while ``maintenance`` runs right after that read.

    Each plan of ``reader`` then works from that log: a reader that chose
    its index states just before the maintenance (a slow reader, stretched).
    """
    real = reader.store.read_log
    held: list[LogSnapshot] = []

    def read_log(strict: bool = True) -> LogSnapshot:
        if not held:
            held.append(real(strict=strict))
            maintenance()
        return held[0]

    reader.store.read_log = read_log  # type: ignore[method-assign]


def _read_all(reader: Table, spark: Any, truth: Truth) -> list[str]:
    """Run every query on both paths at the latest instant, checking rows; the warnings given."""
    instant = reader.timeline()[-1].id
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LakesieveWarning)
        for where in QUERIES:
            _, arrow, rows = _answers(reader, spark, where, instant)
            want = truth.rows(instant, where)
            assert arrow == want, f"arrow path, {where} at {instant}"
            assert rows == want, f"spark path, {where} at {instant}"
    return [str(w.message) for w in caught if issubclass(w.category, LakesieveWarning)]


def test_a_reader_whose_states_vacuum_removed_reads_exact_rows(
    spark: Any, source: Path, tmp_path: Path
) -> None:
    """Vacuum at grace 0 deletes the states a reader chose; the reader reads more, never wrong rows."""
    path = _copy(source, tmp_path / "t")
    truth = Truth(path)
    removed: dict[str, list[str]] = {}

    def compact_and_vacuum() -> None:
        other = open_table(path)
        other.compact(spark=spark)
        removed["compact"] = other.vacuum(grace_seconds=0).states_removed

    def rebuild_and_vacuum() -> None:
        other = open_table(path)
        for column, typ in INDEXES:
            other.build_index(column, type=typ, spark=spark)
        removed["rebuild"] = other.vacuum(grace_seconds=0).states_removed

    # 1. the reader chose each index's delta; a compaction replaced it and vacuum deleted it
    reader = open_table(path)
    heads = {d.name: d.latest() for d in reader.indexes()}
    _hold_log(reader, compact_and_vacuum)
    notes = _read_all(reader, spark, truth)
    assert sorted(removed["compact"]) == sorted(h.state_id for h in heads.values() if h)
    for name, head in heads.items():
        assert head is not None and head.is_delta
        assert not (reader.store.data_dir / name / head.state_id).exists()
        cut = f"index {name!r}: its state of instant {head.instant} is unreadable"
        assert any(cut in n for n in notes), notes

    # 2. the reader chose each index's base; a rebuild replaced it and vacuum deleted it
    reader = open_table(path)
    bases = {d.name: d.latest() for d in reader.indexes()}
    _hold_log(reader, rebuild_and_vacuum)
    notes = _read_all(reader, spark, truth)
    assert sorted(removed["rebuild"]) == sorted(b.state_id for b in bases.values() if b)
    for name in bases:  # unusable at load (its files read eagerly) or at lookup (on demand)
        assert any(f"index {name!r}" in n and "unreadable" in n for n in notes), notes

    # a reader that reads the log now uses the new states, without a warning
    fresh = open_table(path)
    assert not _read_all(fresh, spark, truth)


# ------------------------------------------------------------------ a log swap under a reader


def test_a_reader_listing_the_log_while_a_repair_swaps_it_reads_the_new_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repair moves ``_log`` aside between a reader's check of the folder and its listing.

    The reader must not fail (it once raised ``FileNotFoundError``): it
    finishes the swap itself, as after a kill, and reads the new log. No Spark.
    """
    path = delta_table(tmp_path / "t")
    store = lakesieve.open(path).store
    for name in ("a_sieve", "b_sieve"):
        add_index(store, name)
    garbage = store.log_dir / f"{store.read_log().version + 1:020d}.json"
    garbage.write_text("{garbage")  # a damaged newest commit: repair swaps the log
    moved_aside, go_on = threading.Event(), threading.Event()
    repairer: list[threading.Thread] = []
    outcome: dict[str, Any] = {}
    real_rename, real_scandir = os.rename, os.scandir

    def rename(src: Any, dst: Any, *args: Any, **kw: Any) -> Any:
        done = real_rename(src, dst, *args, **kw)
        if threading.current_thread() in repairer and Path(dst).name.startswith(DAMAGED_PREFIX):
            moved_aside.set()  # the old log is aside, the new one not yet in place
            assert go_on.wait(10)
        return done

    def run_repair() -> None:
        outcome["repair"] = repair(lakesieve.open(path))

    def scandir(target: Any = ".") -> Any:
        if not repairer and os.fspath(target) == os.fspath(store.log_dir):
            repairer.append(threading.Thread(target=run_repair, daemon=True))
            repairer[0].start()
            assert moved_aside.wait(10)  # the reader checked the folder; now the swap begins
        return real_scandir(target)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "scandir", scandir)
    reader = IndexStore(store.root)
    try:
        snap = reader.read_log(strict=False)
    finally:
        go_on.set()
        if repairer:
            repairer[0].join(10)
    assert repairer and not repairer[0].is_alive()
    assert not snap.problems and set(snap.indexes) == {"a_sieve", "b_sieve"}
    assert outcome["repair"].damaged_log_moved_to is not None  # the repair did finish
    assert not garbage.exists() and store.read_log().version == 0
    assert not list(store.root.glob("_log.repair-*"))


# ------------------------------------------------------------------ the race


def maintain(path: str, stop: str, report: str) -> None:
    """The maintenance process: rounds of refresh, compact, vacuum and repair until ``stop`` exists.

    Each round refreshes every index to the table's latest instant, compacts
    an index whose chain holds two deltas, vacuums at grace 0 and repairs;
    every other round first writes a garbage newest commit, so that the
    repair swaps the log. One JSON line per step goes to ``report``.
    """
    from lakesieve.spark.session import get_spark

    spark = get_spark(conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    table = open_table(path)
    with open(report, "a", encoding="utf-8") as out:

        def note(**kw: Any) -> None:
            out.write(json.dumps({"t": time.time(), **kw}) + "\n")
            out.flush()

        note(step="start")
        rounds = 0
        while not os.path.exists(stop):
            rounds += 1
            results = table.refresh(spark=spark, policy=CHAINS)  # chains for compact to fold
            note(
                step="refresh",
                instants=[r.to_instant for r in results],
                actions=[r.action for r in results],
            )
            if any(len(d.chain(d.latest())) > 2 for d in table.indexes() if d.latest()):
                note(step="compact", actions=[r.action for r in table.compact(spark=spark)])
            note(step="vacuum", removed=len(table.vacuum(grace_seconds=0).states_removed))
            if rounds % 2:
                version = table.store.read_log().version + 1
                (table.store.log_dir / f"{version:020d}.json").write_text("{garbage")
            note(step="repair", swapped=repair(table).damaged_log_moved_to is not None)
            time.sleep(0.05)
        note(step="done", rounds=rounds)


def _steps(report: Path) -> list[dict[str, Any]]:
    """The maintenance's steps so far (a line still being written is left for the next look)."""
    if not report.exists():
        return []
    out = []
    for line in report.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            break
    return out


class Maintenance:
    """What the maintenance process has done, from its report."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps
        self.started = next((s["t"] for s in steps if s["step"] == "start"), None)
        self.refreshed = {i for s in steps if s["step"] == "refresh" for i in s["instants"]}
        self.compacted = any(
            "compacted" in s.get("actions", ()) for s in steps if s["step"] == "compact"
        )
        self.vacuumed = any(s["step"] == "vacuum" and s["removed"] for s in steps)
        self.swapped = any(s["step"] == "repair" and s["swapped"] for s in steps)

    def rounds_after(self, instant: str) -> int:
        """Whole rounds (ending in a repair) finished since the refresh that reached ``instant``."""
        seen, rounds = False, 0
        for s in self.steps:
            seen = seen or (s["step"] == "refresh" and instant in s["instants"])
            rounds += seen and s["step"] == "repair"
        return rounds


#: Seconds the reader goes on committing table changes once the maintenance process is up
#: (``LAKESIEVE_MAINTENANCE_SECONDS``; at least one change is made, each once the last was refreshed).
SECONDS = float(os.environ.get("LAKESIEVE_MAINTENANCE_SECONDS", "0"))
#: How long the race may take before the test gives up on the maintenance process.
LIMIT_SECONDS = 300 + SECONDS
#: How long the reader holds the log it read before loading the states it chose (a slow reader).
SLOW_SECONDS = 0.1


def _slow(reader: Table) -> None:
    """Make ``reader`` pause after each read of the log, as a reader on slow storage would."""
    real = reader.store.read_log

    def read_log(strict: bool = True) -> LogSnapshot:
        snap = real(strict=strict)
        time.sleep(SLOW_SECONDS)
        return snap

    reader.store.read_log = read_log  # type: ignore[method-assign]


def test_readers_beside_maintenance_get_native_rows(
    spark: Any, source: Path, tmp_path: Path
) -> None:
    """A reader loops over both read paths, committing table changes, while another process maintains the store."""
    path = _copy(source, tmp_path / "t")
    report, stop, stderr = (tmp_path / n for n in ("maintenance.jsonl", "stop", "maintenance.err"))
    env = child_spark_env({**os.environ, "LAKESIEVE_SPARK_MASTER": "local[1]"})
    code = "import sys; from tests.maintenance.test_maintenance_concurrent_reads import maintain; maintain(*sys.argv[1:])"
    truth = Truth(path)
    reader = open_table(path)  # one reader for the whole run: its loaded states stay cached
    _slow(reader)
    queries: list[dict[str, Any]] = []
    changes: list[str] = []
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(stop), str(report)],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    started = time.monotonic()
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < LIMIT_SECONDS, _steps(report)[-3:]
            done = Maintenance(_steps(report))
            if done.started is None:  # its Spark session is starting: leave it the machine
                time.sleep(0.25)
                continue
            if not changes or done.rounds_after(changes[-1]) >= 2:
                if not changes or time.time() - done.started < SECONDS:
                    changes.append(_change(spark, path, len(changes) + 1))
                elif done.vacuumed and done.swapped:
                    stop.touch()
            where = list(QUERIES)[len(queries) % len(QUERIES)]
            instant = reader.timeline()[-1].id
            at = time.time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LakesieveWarning)
                plan, arrow, rows = _answers(reader, spark, where, instant)
            want = truth.rows(instant, where)
            assert arrow == want, f"arrow path, {where} at {instant}"
            assert rows == want, f"spark path, {where} at {instant}"
            queries.append(
                {
                    "t": at,
                    "instant": instant,
                    "pruned": plan.locations_selected < plan.locations_total,
                    "warnings": list(plan.warnings),
                }
            )
    finally:
        stop.touch()
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, stderr.read_text()[-3000:]
    done = Maintenance(_steps(report))
    assert done.started is not None and done.steps[-1]["step"] == "done"
    # each change was refreshed, some chain compacted, vacuum removed states, a repair swapped the log
    assert changes and set(changes) <= done.refreshed
    assert done.compacted and done.vacuumed and done.swapped
    # the reader read all along, at every instant of the race, and its indexes pruned
    during = [q for q in queries if q["t"] >= done.started]
    assert {q["instant"] for q in during} >= set(changes)
    assert len(during) >= 10, len(during)
    assert any(q["pruned"] for q in during)

    # once the maintenance is over: indexes current, no warning, Spark SQL agrees with the filters
    latest = reader.timeline()[-1].id
    assert latest == changes[-1]
    assert {d.latest().instant for d in reader.indexes()} == {latest}  # type: ignore[union-attr]
    for where in QUERIES:
        with warnings.catch_warnings():
            warnings.simplefilter("error", LakesieveWarning)
            _, arrow, rows = _answers(reader, spark, where, latest)
        want = expected_rows(spark, path, where, latest, COLUMNS)
        assert want == truth.rows(latest, where), where
        assert arrow == want and rows == want, where
    assert check_store(reader)["ok"]
    print(
        f"\n{len(during)} queries over {len(done.steps)} maintenance steps in "
        f"{time.time() - done.started:.0f} s; {sum(q['pruned'] for q in during)} pruned, "
        f"{sum(bool(q['warnings']) for q in during)} with warnings"
    )
