"""The contract every lakesieve format plugin must keep, as a pytest test kit.

A format plugin (built-in or third-party) runs the kit by subclassing
:class:`FormatContract` in its own tests and saying how to make a table::

    from lakesieve.testing.format_contract import FormatContract

    class TestMineContract(FormatContract):
        format_name = "mine"
        change_modes = ("append", "upsert", "delete")   # what change_table does, per step
        plugin = my_package.plugin                        # optional: registered if not yet

        def create_table(self, spark, path, rows):
            ...  # first commit: a new table at ``path`` holding ``rows``

        def change_table(self, spark, path, step, rows):
            ...  # later commit number ``step`` (0-based), as change_modes[step] says

Rows are plain dicts with three columns: ``id`` (bigint, unique), ``k``
(bigint, repeating: ``id // 3``) and ``s`` (string). For an ``upsert`` step
the rows carry existing ids with a new ``s``; for a ``delete`` step they are
the rows to remove (only ``id`` matters). A format that only appends lists
``("append", "append")``.

The kit builds one table per test class (``create_table`` then one
``change_table`` per entry of ``change_modes``), builds a ``sieve`` index on
``k`` at the second instant and on ``k`` and ``s`` at the latest, and then
checks:

* ``test_identify``: :func:`lakesieve.registry.identify_format` names the
  format, an empty folder is claimed by nobody (yet opens as the format when
  ``options["format"]`` names it), and a table that a second
  (throwaway) plugin also claims is refused with
  :class:`~lakesieve.errors.AmbiguousFormatError`.
* ``test_timeline``: one completed instant per commit at least, unique ids
  and strictly increasing ``sort_key``.
* ``test_snapshot``: every instant's snapshot names that instant, has units
  with unique string locations, and the rows read unit by unit are the rows
  the commits left (the truth the kit keeps on the side).
* ``test_changes_cover_differences``: for consecutive instants, every
  location whose rows differ (read with ``TableFormat.read_unit``) is
  in ``changes(a, b).touched``; ``changes(None, first)`` covers every first
  location.
* ``test_spark_read_equals_unit_reads``: ``TableFormat.read`` with
  locations equals the union of the unit reads, for all units and for a
  subset; with no units it returns an empty frame with the table's columns.
* ``test_read_of_some_columns``: ``TableFormat.read`` asked for some
  columns (``columns=``, an optional parameter) returns exactly those, in
  order, with the unit reads' values.
* ``test_pruned_read_equals_full_read``: for random predicates (hypothesis)
  at random instants, the planned locations include every location holding
  a matching row, and ``read`` (Spark) and ``read_arrow`` (driver, Arrow)
  both return exactly the rows of ``full_read``.
* ``test_time_travel_uses_older_index_state``: ``explain(as_of=old)`` uses
  the index state built at ``old`` (not stale) and the read at ``old``
  equals the full read there.

Spark comes from the project's session-scoped ``spark`` fixture when there is
one, else :func:`lakesieve.session.get_spark` (``local[2]``). Hypothesis runs
``examples`` predicates (``LAKESIEVE_CONTRACT_EXAMPLES`` overrides).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import lakesieve
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lakesieve import registry
from lakesieve.contracts import TableFormat
from lakesieve.errors import AmbiguousFormatError, TableNotFoundError
from lakesieve.expressions import bind, to_arrow
from lakesieve.hookspecs import hookimpl
from lakesieve.model import LOCATION_COLUMN, Instant, Snapshot
from lakesieve.plugin_base import TableFormatBase
from lakesieve.table import Table
from lakesieve.testing.pytest_plugin import kit_spark

__all__ = ["COLUMNS", "ContractTable", "FormatContract", "contract_rows", "predicates"]

#: The columns of every contract table, in order.
COLUMNS = ("id", "k", "s")

#: One row as the kit compares them: ``(id, k, s)``.
Row = tuple[int, int, str]

_WORDS = ("amber", "birch", "cedar", "dune", "ember", "fjord")


def contract_rows(ids: Sequence[int] | range, tag: str = "") -> list[dict[str, Any]]:
    """Rows with a unique ``id``, a repeating ``k = id // 3`` and a string ``s``.

    Args:
        ids: the ids to make rows for.
        tag: appended to ``s`` so an upsert visibly changes a row.
    """
    return [
        {"id": i, "k": i // 3, "s": f"{_WORDS[(i // 5) % len(_WORDS)]}-{i // 40:02d}{tag}"}
        for i in ids
    ]


@st.composite
def predicates(draw: Any, max_id: int = 400) -> str:
    """SQL predicates over ``id``, ``k`` and ``s``: comparisons, BETWEEN, IN, AND/OR/NOT."""

    def literal(column: str) -> str:
        if column == "s":
            word = draw(st.sampled_from(_WORDS))
            return f"'{word}-{draw(st.integers(0, max_id // 40)):02d}'"
        top = max_id if column == "id" else max_id // 3
        return str(draw(st.integers(-2, top + 2)))

    def leaf() -> str:
        column = draw(st.sampled_from(COLUMNS))
        form = draw(st.sampled_from(["=", "<", ">=", "between", "in"]))
        if form == "between":
            low, high = literal(column), literal(column)
            return f"{column} BETWEEN {low} AND {high}"
        if form == "in":
            return f"{column} IN ({', '.join(literal(column) for _ in range(draw(st.integers(1, 3))))})"
        return f"{column} {form} {literal(column)}"

    text = leaf()
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["AND", "OR"]))
        neg = "NOT " if draw(st.booleans()) else ""
        text = f"({text}) {op} {neg}({leaf()})"
    return text


@dataclass
class ContractTable:
    """The table a contract class works on, and the truth kept beside it.

    Attributes:
        path: the table root.
        table: the opened table.
        instants: the latest instant after each commit, oldest first.
        expected: the rows the commits left, per instant id.
        old: the older instant that has its own index state.
    """

    path: Path
    table: Table
    instants: list[Instant]
    expected: dict[str, set[Row]]
    old: Instant
    by_location: dict[str, dict[str, list[Row]]] = field(default_factory=dict)


def _as_rows(tbl: pa.Table) -> list[Row]:
    data = tbl.select(list(COLUMNS)).to_pylist()
    return sorted((int(r["id"]), int(r["k"]), str(r["s"])) for r in data)


class _ImpostorFormat(TableFormatBase):
    """A format that claims every table and can do nothing with it."""

    def _refuse(self, *args: Any) -> Any:
        raise NotImplementedError("the impostor format only claims tables")

    timeline = schema = snapshot = changes = read = read_unit = write = _refuse


def _impostor(name: str) -> object:
    """A throwaway plugin that claims every path (for the ambiguity check)."""

    named = type("ImpostorFormat", (_ImpostorFormat,), {"name": name})

    class Impostor:
        @hookimpl
        def lakesieve_format_open(self, path: str, options: dict[str, str]) -> TableFormat | None:
            fmt: TableFormat = named(path, options)
            return fmt

    return Impostor()


class FormatContract:
    """Subclass in a test module, set :attr:`format_name` and say how to write.

    Attributes:
        format_name: the format the plugin provides.
        change_modes: what ``change_table`` does at each later commit, one of
            ``append``, ``upsert``, ``delete``; the kit makes one commit per entry.
        plugin: a plugin module or object registered with lakesieve's plugin
            manager for the class's tests (and unregistered after), for a plugin
            that is not installed with an entry point.
        plugin_name: the name :attr:`plugin` is registered under
            (default ``contract-<format_name>``).
        index_type: the index type the pruning checks build.
        examples: hypothesis examples of the pruned-read check.
        initial_ids: the ids of the first commit.
    """

    format_name: ClassVar[str] = ""
    change_modes: ClassVar[tuple[str, ...]] = ("append", "upsert", "delete")
    plugin: ClassVar[object | None] = None
    plugin_name: ClassVar[str | None] = None
    index_type: ClassVar[str] = "sieve"
    examples: ClassVar[int] = 6
    initial_ids: ClassVar[range] = range(0, 240)

    # ----------------------------------------------------------- to implement

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        """Create a new table at ``path`` holding ``rows`` (the first commit)."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_table")

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        """Make commit ``step`` (0-based): ``change_modes[step]`` applied with ``rows``."""
        raise NotImplementedError(f"{type(self).__name__} must implement change_table")

    def step_rows(self, step: int, mode: str) -> list[dict[str, Any]]:
        """The rows of later commit ``step``; override for other shapes of change."""
        top = self.initial_ids.stop
        if mode == "append":
            return contract_rows(range(top + 60 * step, top + 60 * step + 60))
        if mode == "upsert":
            return contract_rows(range(step, top, 7), tag=f"-u{step}")
        if mode == "delete":
            return contract_rows(range(10 + step, top, 11))
        raise ValueError(f"the format contract kit has no rows for change mode {mode!r}")

    # ----------------------------------------------------------- fixtures

    @pytest.fixture(scope="class")
    @classmethod
    def contract_spark(cls, request: pytest.FixtureRequest) -> Iterator[Any]:
        """The project's ``spark`` fixture, else lakesieve's ``lakesieve_spark`` (a ``local[2]`` session)."""
        yield kit_spark(request)

    @pytest.fixture(scope="class")
    @classmethod
    def contract_plugin(cls) -> Iterator[None]:
        """Register :attr:`plugin` for the class's tests when it is not registered yet."""
        pm = registry.get_plugin_manager()
        added = cls.plugin is not None and not pm.is_registered(cls.plugin)
        if added:
            pm.register(cls.plugin, name=cls.plugin_name or f"contract-{cls.format_name}")
        yield
        if added:
            pm.unregister(cls.plugin)

    @pytest.fixture(scope="class")
    @classmethod
    def contract_table(
        cls, contract_spark: Any, contract_plugin: None, tmp_path_factory: pytest.TempPathFactory
    ) -> ContractTable:
        """One table per class: a first commit, then one commit per change mode."""
        self = cls()
        if not self.format_name:
            raise TypeError(f"{type(self).__name__} must set format_name")
        path = tmp_path_factory.mktemp(f"contract-{self.format_name}") / "table"
        first = contract_rows(self.initial_ids)
        self.create_table(contract_spark, path, first)
        truth: dict[int, Row] = {r["id"]: (r["id"], r["k"], r["s"]) for r in first}
        table = lakesieve.open(path)
        instants = [table.timeline()[-1]]
        expected = {instants[0].id: set(truth.values())}
        for step, mode in enumerate(self.change_modes):
            rows = self.step_rows(step, mode)
            if step == 1:  # an older index state, built before the later commits
                table.build_index("k", type=self.index_type, spark=contract_spark)
            self.change_table(contract_spark, path, step, rows)
            for r in rows:
                if mode == "delete":
                    truth.pop(r["id"], None)
                else:
                    truth[r["id"]] = (r["id"], r["k"], r["s"])
            instants.append(table.timeline()[-1])
            expected[instants[-1].id] = set(truth.values())
        old = instants[1] if len(instants) > 2 else instants[0]
        if len(instants) <= 2:
            table.build_index("k", type=self.index_type, spark=contract_spark, as_of=old.id)
        for column in ("k", "s"):
            table.build_index(column, type=self.index_type, spark=contract_spark)
        return ContractTable(path, table, instants, expected, old)

    # ----------------------------------------------------------- helpers

    def format_of(self, ct: ContractTable) -> TableFormat:
        """The plugin's object for the contract table, as :func:`lakesieve.registry.open_format` gives it."""
        fmt = registry.open_format(str(ct.path))
        assert isinstance(fmt, TableFormat), f"open gave {type(fmt).__name__}"
        assert fmt.name == self.format_name
        return fmt

    def unit_rows(self, ct: ContractTable, instant: Instant) -> dict[str, list[Row]]:
        """Every location's rows at ``instant``, read with ``TableFormat.read_unit``."""
        if instant.id in ct.by_location:
            return ct.by_location[instant.id]
        snapshot: Snapshot = ct.table.snapshot(instant.id)
        out: dict[str, list[Row]] = {}
        for unit in snapshot.units:
            batches = list(self.format_of(ct).read_unit(unit, instant.id, None))
            out[unit.location] = _as_rows(pa.Table.from_batches(batches)) if batches else []
        ct.by_location[instant.id] = out
        return out

    def spark_rows(
        self, ct: ContractTable, spark: Any, instant: Instant, locations: set[str] | None
    ) -> list[tuple[Any, ...]]:
        """Rows ``(location, id, k, s)`` read with ``TableFormat.read``."""
        snapshot = ct.table.snapshot(instant.id)
        units = snapshot.units if locations is None else snapshot.units_for(locations)
        frame = self.format_of(ct).read(spark, units, instant.id, True)
        return sorted(tuple(r) for r in frame.select(LOCATION_COLUMN, *COLUMNS).collect())

    # ----------------------------------------------------------- the contract

    def test_identify(self, contract_table: ContractTable, tmp_path: Path) -> None:
        """The plugin claims its table, leaves other folders alone, and ties are refused."""
        path = str(contract_table.path)
        assert registry.identify_format(path) == self.format_name
        empty = tmp_path / "empty"
        empty.mkdir()
        with pytest.raises(TableNotFoundError):
            registry.identify_format(str(empty))  # no plugin may claim an empty folder
        forced = registry.open_format(str(empty), {"format": self.format_name})
        assert forced.name == self.format_name and "format" not in forced.options
        pm = registry.get_plugin_manager()
        impostor = _impostor(f"{self.format_name}-impostor")
        pm.register(impostor, name="format-contract-impostor")
        try:
            with pytest.raises(AmbiguousFormatError, match="impostor"):
                registry.identify_format(path)
        finally:
            pm.unregister(impostor)
        assert registry.identify_format(path) == self.format_name

    def test_timeline(self, contract_table: ContractTable) -> None:
        """Completed instants, one per commit at least, in strictly increasing order."""
        line = contract_table.table.timeline()
        keys = [i.sort_key for i in line]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), (
            f"sort keys not increasing: {keys}"
        )
        assert len({i.id for i in line}) == len(line), "instant ids repeat"
        ids = [i.id for i in line]
        for inst in contract_table.instants:
            assert inst.id in ids, f"commit instant {inst.id} missing from the timeline"
        assert len({i.id for i in contract_table.instants}) == len(contract_table.instants), (
            "a commit did not add an instant"
        )

    def test_snapshot(self, contract_table: ContractTable) -> None:
        """Units with unique locations, holding exactly the rows the commits left."""
        for inst in contract_table.instants:
            snap = contract_table.table.snapshot(inst.id)
            assert snap.instant is not None and snap.instant.id == inst.id
            locations = [u.location for u in snap.units]
            assert locations, f"no units at instant {inst.id}"
            assert all(isinstance(loc, str) and loc for loc in locations)
            assert len(set(locations)) == len(locations), f"repeated locations at {inst.id}"
            by_loc = self.unit_rows(contract_table, inst)
            got = [row for rows in by_loc.values() for row in rows]
            assert len(got) == len(set(got)), f"a row is in two units at {inst.id}"
            assert set(got) == contract_table.expected[inst.id], (
                f"unit rows at {inst.id} are not the table's rows"
            )

    def test_changes_cover_differences(self, contract_table: ContractTable) -> None:
        """Every location whose rows differ between consecutive instants is reported."""
        fmt = self.format_of(contract_table)
        first = contract_table.instants[0]
        changes = fmt.changes(None, first.id)
        missing = set(self.unit_rows(contract_table, first)) - changes.touched
        assert not missing, f"changes(None, {first.id}) miss {sorted(missing)}"
        for a, b in zip(contract_table.instants, contract_table.instants[1:], strict=False):
            before, after = self.unit_rows(contract_table, a), self.unit_rows(contract_table, b)
            differ = {loc for loc in set(before) | set(after) if before.get(loc) != after.get(loc)}
            changes = fmt.changes(a.id, b.id)
            missing = differ - changes.touched
            assert not missing, (
                f"changes({a.id}, {b.id}) miss locations whose rows differ: {sorted(missing)}"
            )

    def test_spark_read_equals_unit_reads(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """The Spark read of some units is the union of their unit reads, locations included."""
        for inst in contract_table.instants:
            by_loc = self.unit_rows(contract_table, inst)
            want = sorted((loc, *row) for loc, rows in by_loc.items() for row in rows)
            assert self.spark_rows(contract_table, contract_spark, inst, None) == want, (
                f"at {inst.id}"
            )
        last = contract_table.instants[-1]
        by_loc = self.unit_rows(contract_table, last)
        some = set(sorted(by_loc)[::2])
        want = sorted((loc, *row) for loc, rows in by_loc.items() if loc in some for row in rows)
        assert self.spark_rows(contract_table, contract_spark, last, some) == want, (
            "subset of units"
        )
        empty = self.format_of(contract_table).read(contract_spark, (), last.id, False)
        assert set(COLUMNS) <= set(empty.columns) and empty.count() == 0

    def test_read_of_some_columns(self, contract_table: ContractTable, contract_spark: Any) -> None:
        """``read(columns=...)`` yields exactly those columns, in order, and the unit reads' values."""
        from lakesieve.format_read import read_columns, takes_columns

        fmt = self.format_of(contract_table)
        wanted = [COLUMNS[2], COLUMNS[0]]
        for inst in contract_table.instants:
            by_loc = self.unit_rows(contract_table, inst)
            want = sorted((loc, row[2], row[0]) for loc, rows in by_loc.items() for row in rows)
            units = contract_table.table.snapshot(inst.id).units
            frame = read_columns(fmt, contract_spark, units, inst.id, wanted)
            assert frame.columns == [*wanted, LOCATION_COLUMN]
            got = sorted((r[2], r[0], r[1]) for r in frame.collect())
            assert got == want, f"at {inst.id}"
            if takes_columns(fmt):
                direct = fmt.read(contract_spark, units, inst.id, True, columns=wanted)
                assert direct.columns == [*wanted, LOCATION_COLUMN], "read(columns=...)"
                bare = fmt.read(contract_spark, units, inst.id, False, columns=wanted)
                assert bare.columns == wanted, "read(columns=..., with_location=False)"

    def test_pruned_read_equals_full_read(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """Random predicates at random instants: pruning keeps every match, rows equal a full read."""
        table = contract_table.table
        examples = int(os.environ.get("LAKESIEVE_CONTRACT_EXAMPLES", self.examples))
        top = max(r[0] for rows in contract_table.expected.values() for r in rows)

        @settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,
            phases=(Phase.explicit, Phase.reuse, Phase.generate),
            suppress_health_check=list(HealthCheck),
        )
        @given(where=predicates(max_id=top), pick=st.integers(0, 50))
        def check(where: str, pick: int) -> None:
            inst = contract_table.instants[pick % len(contract_table.instants)]
            by_loc = self.unit_rows(contract_table, inst)
            expr = to_arrow(bind(where, table.schema(inst.id)))
            schema = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("s", pa.string())])
            truth = {
                loc
                for loc, rows in by_loc.items()
                if rows
                and pa.Table.from_pylist([dict(zip(COLUMNS, r, strict=True)) for r in rows], schema)
                .filter(expr)
                .num_rows
            }
            planned = {u.location for u in table.plan(where, inst.id).units}
            assert truth <= planned, (
                f"{where!r} at {inst.id}: pruned away {sorted(truth - planned)}"
            )
            got = sorted(
                tuple(r)
                for r in table.read(contract_spark, where, inst.id).select(*COLUMNS).collect()
            )
            full = sorted(
                tuple(r)
                for r in table.full_read(contract_spark, where, inst.id).select(*COLUMNS).collect()
            )
            assert got == full, f"{where!r} at {inst.id}: pruned read differs from the full read"
            arrow = table.read_arrow(where, inst.id, columns=list(COLUMNS), refresh=False)
            assert arrow.column_names == list(COLUMNS)
            got_arrow = sorted(tuple(r.values()) for r in arrow.to_pylist())
            assert got_arrow == full, (
                f"{where!r} at {inst.id}: driver-side Arrow read differs from the full read"
            )

        check()

    def test_time_travel_uses_older_index_state(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """An older instant is planned with the index state built at that instant."""
        table, old = contract_table.table, contract_table.old
        key = sorted(contract_table.expected[old.id])[len(contract_table.expected[old.id]) // 2][1]
        where = f"k = {key}"
        report = table.explain(where, as_of=old.id)
        assert report["table_instant"] == old.id
        used = [e for e in report["indexes"] if e["column"] == "k" and e["status"] == "used"]
        assert used, f"no index on k was used at {old.id}: {report['indexes']}"
        assert all(e["instant"] == old.id and not e.get("stale") for e in used), (
            f"explain at {old.id} did not use the state built there: {used}"
        )
        got = sorted(
            tuple(r) for r in table.read(contract_spark, where, old.id).select(*COLUMNS).collect()
        )
        full = sorted(
            tuple(r)
            for r in table.full_read(contract_spark, where, old.id).select(*COLUMNS).collect()
        )
        assert got == full and got, f"{where} at {old.id}"
        assert {tuple(r) for r in got} == {
            r for r in contract_table.expected[old.id] if r[1] == key
        }
