"""The contract every lakesieve format plugin must keep, as a pytest test kit.

A format plugin (built-in or third-party) runs the kit by subclassing
:class:`FormatContract` in its own tests, saying how to make a table and how
to read it *without lakesieve*::

    from lakesieve.testing.format_contract import FormatContract

    class TestMineContract(FormatContract):
        format_name = "mine"
        change_modes = ("append", "upsert", "delete")   # what change_table does, per step
        plugin = my_package.plugin                        # optional: registered if not yet

        def create_table(self, spark, path, rows):
            ...  # first commit(s): a new table at ``path`` holding ``rows``

        def change_table(self, spark, path, step, rows):
            ...  # later commit(s) number ``step`` (0-based), as change_modes[step] says

        def reference_rows(self, path, instant):
            ...  # the table's rows at ``instant`` as a pyarrow.Table, read by the
                 # format's own library, each naming its location in a "location" column

Rows are plain dicts with the columns of :data:`COLUMNS`: ``id`` (bigint,
unique, never NULL), ``k`` (bigint, ``id // 3``), ``s`` (string), ``x``
(double), ``d`` (date) and ``t`` (timestamp, zone-aware ``datetime`` in UTC).
All but ``id`` are sometimes NULL, and ``x`` holds NaN, -0.0, 0.0 and
infinities (:func:`~lakesieve.testing.format_data.contract_rows`). A format
that cannot store ``x``, ``d`` or ``t`` names them in :attr:`omit_columns`;
the kit then neither writes nor queries them. :data:`ARROW_SCHEMA` and
:data:`SPARK_SCHEMA` give the types to write with. A writer under the
author's control should write Parquet row groups of :data:`ROW_GROUP_ROWS`
rows, so that each data file holds several and a reader that skips one fails.

For an ``upsert`` step the rows carry existing ids with a new ``s``; for a
``delete`` step they are the rows to remove (only ``id`` matters). A format
that only appends lists ``("append", "append")``. A step may make more than
one commit; the kit follows the latest instant after each.

**The reference reader.** :meth:`FormatContract.reference_rows` is the truth
the kit holds the plugin to, so it must not go through lakesieve or the
plugin: use the format's own library (hudi-rs through ``hudi``, delta-rs
through ``deltalake``, pyiceberg), or for a format without one, a plain
reader of its files (pyarrow). It returns the rows visible at the instant
(the kit's columns; others are ignored) and should add a string column
:data:`REFERENCE_LOCATION` naming, as the plugin names locations, the
location each row lives in, taken from the format's own file listing
(hudi-rs file slices, delta-rs add actions, pyiceberg's planned scan tasks).
Without that column the kit checks rows as a whole and takes locations from
``read_unit``. The kit first checks the reference against the rows its
commits left, so a wrong reference reader fails on its own test.

The kit builds one table per test class (``create_table`` then one
``change_table`` per entry of ``change_modes``), builds a ``sieve`` index on
``k`` at the second instant and on ``k`` and ``s`` at the latest, and then
checks (rows always compared as multisets, NaN equal to NaN and -0.0 apart
from 0.0):

* ``test_reference_reader``: the reference rows at every instant are the
  rows the commits left, and name only locations of the snapshot.
* ``test_identify``: :func:`lakesieve.contract.registry.identify_format` names the
  format, an empty folder is claimed by nobody (yet opens as the format when
  ``options["format"]`` names it), and a table that a second
  (throwaway) plugin also claims is refused with
  :class:`~lakesieve.errors.AmbiguousFormatError`.
* ``test_timeline``: one completed instant per commit at least, unique ids
  and strictly increasing ``sort_key``.
* ``test_snapshot``: every instant's snapshot names that instant, has units
  with unique string locations, and the rows read unit by unit
  (``TableFormat.read_unit``) are the reference rows, location by location.
* ``test_changes_cover_differences``: for consecutive instants, every
  location whose reference rows differ is in ``changes(a, b).touched``;
  ``changes(None, first)`` covers every first location.
* ``test_spark_read_equals_reference``: ``TableFormat.read`` with locations
  returns the reference rows of those locations, for all units and for a
  subset; with no units it returns an empty frame with the table's columns.
* ``test_read_of_some_columns``: ``TableFormat.read`` asked for some
  columns (``columns=``, an optional parameter) returns exactly those, in
  order, with the reference's values.
* ``test_pruned_read_equals_full_read``: for random predicates (hypothesis)
  at random instants, Spark SQL evaluates the predicate over the reference
  rows; the planned locations include every location holding a match, and
  the pruned read (Spark), the full read and ``read_arrow`` (driver, Arrow)
  each return exactly the matching rows.
* ``test_time_travel_uses_older_index_state``: ``explain(as_of=old)`` uses
  the index state built at ``old`` (not stale) and the read at ``old``
  returns the reference's matching rows.
* ``test_table_id``: for a plugin with ``table_id``
  (:class:`~lakesieve.contract.protocols.HasTableId`), a non-empty identity
  that the index store recorded at the first build (so it held through the
  later commits), and another for a second table made the same way.

Spark comes from the project's session-scoped ``spark`` fixture when there is
one, else :func:`lakesieve.spark.session.get_spark` (``local[2]``). Hypothesis runs
``examples`` predicates (``LAKESIEVE_CONTRACT_EXAMPLES`` overrides).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import lakesieve
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.contract.hookspecs import hookimpl
from lakesieve.contract.plugin_base import TableFormatBase
from lakesieve.contract.protocols import HasTableId, TableFormat
from lakesieve.errors import AmbiguousFormatError, TableNotFoundError
from lakesieve.model import LOCATION_COLUMN, Instant, Snapshot
from lakesieve.table import Table
from lakesieve.testing.format_data import (
    ADVERSARIAL_PREDICATES,
    ARROW_SCHEMA,
    COLUMNS,
    OPTIONAL_COLUMNS,
    ROW_GROUP_ROWS,
    SPARK_SCHEMA,
    Row,
    arrow_rows,
    canonical_table,
    contract_rows,
    difference,
    predicates,
    rows_by_location,
    spark_rows,
)
from lakesieve.testing.pytest_plugin import kit_spark

__all__ = [
    "ARROW_SCHEMA",
    "COLUMNS",
    "REFERENCE_LOCATION",
    "ROW_GROUP_ROWS",
    "SPARK_SCHEMA",
    "ContractTable",
    "FormatContract",
    "contract_rows",
    "predicates",
]

#: The column of :meth:`FormatContract.reference_rows` naming each row's location.
REFERENCE_LOCATION = "location"


@dataclass
class ContractTable:
    """The table a contract class works on, and the truth kept beside it.

    Attributes:
        path: the table root.
        table: the opened table.
        instants: the latest instant after each commit step, oldest first.
        expected: the rows the commits left, per instant id (canonical multisets).
        old: the older instant that has its own index state.
        reference: the reference reader's rows per instant id, cast to the kit's types.
        by_location: the unit reads per instant id and location, as Arrow tables.
        frames: Spark DataFrames of the located rows per instant id (see
            :meth:`FormatContract.located_table`).
    """

    path: Path
    table: Table
    instants: list[Instant]
    expected: dict[str, Counter[Row]]
    old: Instant
    reference: dict[str, pa.Table] = field(default_factory=dict)
    by_location: dict[str, dict[str, pa.Table]] = field(default_factory=dict)
    frames: dict[str, Any] = field(default_factory=dict)


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
    """Subclass in a test module, set :attr:`format_name`, say how to write and how to read.

    Attributes:
        format_name: the format the plugin provides.
        change_modes: what ``change_table`` does at each later commit step, one of
            ``append``, ``upsert``, ``delete``.
        plugin: a plugin module or object registered with lakesieve's plugin
            manager for the class's tests (and unregistered after), for a plugin
            that is not installed with an entry point.
        plugin_name: the name :attr:`plugin` is registered under
            (default ``contract-<format_name>``).
        omit_columns: columns of :data:`~lakesieve.testing.format_data.OPTIONAL_COLUMNS`
            (``x``, ``d``, ``t``) the format cannot store; left out of the rows and predicates.
        index_type: the index type the pruning checks build.
        examples: hypothesis examples of the pruned-read check.
        initial_ids: the ids of the first commit.
    """

    format_name: ClassVar[str] = ""
    change_modes: ClassVar[tuple[str, ...]] = ("append", "upsert", "delete")
    plugin: ClassVar[object | None] = None
    plugin_name: ClassVar[str | None] = None
    omit_columns: ClassVar[tuple[str, ...]] = ()
    index_type: ClassVar[str] = "sieve"
    examples: ClassVar[int] = 6
    initial_ids: ClassVar[range] = range(0, 240)

    # ----------------------------------------------------------- to implement

    def create_table(self, spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
        """Create a new table at ``path`` holding ``rows`` (the first commit or commits)."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_table")

    def change_table(self, spark: Any, path: Path, step: int, rows: list[dict[str, Any]]) -> None:
        """Make commit step ``step`` (0-based): ``change_modes[step]`` applied with ``rows``."""
        raise NotImplementedError(f"{type(self).__name__} must implement change_table")

    def reference_rows(self, path: Path, instant: Instant) -> pa.Table:
        """The table's rows at ``instant``, read by the format's own library, not by lakesieve.

        Args:
            path: the table root.
            instant: an instant of the table's timeline, as the plugin gives it
                (``instant.id`` is the plugin's instant id).

        Returns:
            A ``pyarrow.Table`` with at least the kit's columns (:attr:`columns`;
            any types Arrow casts to the kit's, other columns ignored), one row
            per visible table row, and preferably a string column
            :data:`REFERENCE_LOCATION` naming each row's location exactly as the
            plugin's read units name it, taken from the format's own listing of
            its files.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement reference_rows: the table's rows read with "
            "the format's own library (see lakesieve.testing.format_contract)"
        )

    def step_rows(self, step: int, mode: str) -> list[dict[str, Any]]:
        """The rows of later commit step ``step``; override for other shapes of change."""
        top = self.initial_ids.stop
        if mode == "append":
            return self.make_rows(range(top + 60 * step, top + 60 * step + 60))
        if mode == "upsert":
            return self.make_rows(range(step, top, 7), tag=f"-u{step}")
        if mode == "delete":
            return self.make_rows(range(10 + step, top, 11))
        raise ValueError(f"the format contract kit has no rows for change mode {mode!r}")

    # ----------------------------------------------------------- data

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns this class's tables hold: :data:`COLUMNS` less :attr:`omit_columns`."""
        unknown = set(self.omit_columns) - set(OPTIONAL_COLUMNS)
        if unknown:
            raise TypeError(f"omit_columns may name only {OPTIONAL_COLUMNS}, not {sorted(unknown)}")
        return tuple(c for c in COLUMNS if c not in self.omit_columns)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of :attr:`columns`."""
        return pa.schema([ARROW_SCHEMA.field(c) for c in self.columns])

    def make_rows(self, ids: range | list[int], tag: str = "") -> list[dict[str, Any]]:
        """:func:`~lakesieve.testing.format_data.contract_rows` with only :attr:`columns`."""
        keep = self.columns
        return [{c: row[c] for c in keep} for row in contract_rows(ids, tag)]

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
        """One table per class: a first commit, then one commit step per change mode."""
        self = cls()
        if not self.format_name:
            raise TypeError(f"{type(self).__name__} must set format_name")
        path = tmp_path_factory.mktemp(f"contract-{self.format_name}") / "table"
        first = self.make_rows(self.initial_ids)
        self.create_table(contract_spark, path, first)
        truth: dict[int, dict[str, Any]] = {r["id"]: r for r in first}
        table = lakesieve.open(path)
        instants = [table.timeline()[-1]]
        expected = {instants[0].id: self.rows_of(truth.values())}
        for step, mode in enumerate(self.change_modes):
            rows = self.step_rows(step, mode)
            if step == 1:  # an older index state, built before the later commits
                table.build_index("k", type=self.index_type, spark=contract_spark)
            self.change_table(contract_spark, path, step, rows)
            for r in rows:
                if mode == "delete":
                    truth.pop(r["id"], None)
                else:
                    truth[r["id"]] = r
            instants.append(table.timeline()[-1])
            expected[instants[-1].id] = self.rows_of(truth.values())
        old = instants[1] if len(instants) > 2 else instants[0]
        if len(instants) <= 2:
            table.build_index("k", type=self.index_type, spark=contract_spark, as_of=old.id)
        for column in ("k", "s"):
            table.build_index(column, type=self.index_type, spark=contract_spark)
        return ContractTable(path, table, instants, expected, old)

    # ----------------------------------------------------------- helpers

    def rows_of(self, rows: Any) -> Counter[Row]:
        """Canonical rows of dicts as :meth:`make_rows` makes them."""
        return arrow_rows(pa.Table.from_pylist(list(rows), self.arrow_schema), self.columns)

    def format_of(self, ct: ContractTable) -> TableFormat:
        """The plugin's object for the contract table, as :func:`lakesieve.contract.registry.open_format` gives it."""
        fmt = registry.open_format(str(ct.path))
        assert isinstance(fmt, TableFormat), f"open gave {type(fmt).__name__}"
        assert fmt.name == self.format_name
        return fmt

    def reference_of(self, ct: ContractTable, instant: Instant) -> pa.Table:
        """:meth:`reference_rows` at ``instant``, cast to the kit's types (cached)."""
        if instant.id not in ct.reference:
            got = self.reference_rows(ct.path, instant)
            assert isinstance(got, pa.Table), (
                f"reference_rows must return a pyarrow.Table, not {type(got).__name__}"
            )
            extra = (REFERENCE_LOCATION,) if REFERENCE_LOCATION in got.column_names else ()
            ct.reference[instant.id] = canonical_table(got, self.columns, extra)
        return ct.reference[instant.id]

    def has_reference_locations(self, ct: ContractTable) -> bool:
        """Whether the reference reader names each row's location."""
        return REFERENCE_LOCATION in self.reference_of(ct, ct.instants[0]).column_names

    def unit_tables(self, ct: ContractTable, instant: Instant) -> dict[str, pa.Table]:
        """Every location's rows at ``instant``, read with ``TableFormat.read_unit`` (cached)."""
        if instant.id in ct.by_location:
            return ct.by_location[instant.id]
        snapshot: Snapshot = ct.table.snapshot(instant.id)
        fmt = self.format_of(ct)
        out: dict[str, pa.Table] = {}
        for unit in snapshot.units:
            batches = list(fmt.read_unit(unit, instant.id, None))
            read = pa.Table.from_batches(batches) if batches else self.arrow_schema.empty_table()
            out[unit.location] = canonical_table(read, self.columns)
        ct.by_location[instant.id] = out
        return out

    def unit_rows(self, ct: ContractTable, instant: Instant) -> dict[str, Counter[Row]]:
        """Every location's canonical rows at ``instant``, as ``read_unit`` gives them."""
        return {
            loc: arrow_rows(t, self.columns) for loc, t in self.unit_tables(ct, instant).items()
        }

    def located_table(self, ct: ContractTable, instant: Instant) -> pa.Table:
        """The rows at ``instant`` with a :data:`REFERENCE_LOCATION` column.

        The reference's when it names locations, else the unit reads' (whose
        rows :meth:`test_snapshot` holds to the reference).
        """
        reference = self.reference_of(ct, instant)
        if REFERENCE_LOCATION in reference.column_names:
            return reference
        parts = [
            t.append_column(REFERENCE_LOCATION, pa.array([loc] * t.num_rows, pa.string()))
            for loc, t in self.unit_tables(ct, instant).items()
        ]
        schema = self.arrow_schema.append(pa.field(REFERENCE_LOCATION, pa.string()))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def truth_by_location(self, ct: ContractTable, instant: Instant) -> dict[str, Counter[Row]]:
        """Canonical rows per location at ``instant``, from :meth:`located_table`."""
        rows = arrow_rows(self.located_table(ct, instant), self.columns, (REFERENCE_LOCATION,))
        return rows_by_location(rows)

    def truth_frame(self, ct: ContractTable, spark: Any, instant: Instant) -> Any:
        """A Spark DataFrame of :meth:`located_table` (the oracle's input; cached)."""
        if instant.id not in ct.frames:
            ct.frames[instant.id] = spark.createDataFrame(self.located_table(ct, instant))
        return ct.frames[instant.id]

    def matching(
        self, ct: ContractTable, spark: Any, instant: Instant, where: str
    ) -> tuple[Counter[Row], set[str]]:
        """The rows Spark SQL says match ``where`` at ``instant``, and the locations holding them."""
        located = spark_rows(
            self.truth_frame(ct, spark, instant).where(where), self.columns, (REFERENCE_LOCATION,)
        )
        rows: Counter[Row] = Counter()
        for row, n in located.items():
            rows[row[:-1]] += n
        if not self.has_reference_locations(ct):
            # the rows come from the reference itself; the locations above from read_unit
            frame = spark.createDataFrame(self.reference_of(ct, instant))
            rows = spark_rows(frame.where(where), self.columns)
        return rows, {str(row[-1]) for row in located}

    def read_rows(
        self, ct: ContractTable, spark: Any, instant: Instant, locations: set[str] | None
    ) -> Counter[Row]:
        """Canonical rows and location read with ``TableFormat.read``."""
        snapshot = ct.table.snapshot(instant.id)
        units = snapshot.units if locations is None else snapshot.units_for(locations)
        frame = self.format_of(ct).read(spark, units, instant.id, True)
        return spark_rows(frame, self.columns, (LOCATION_COLUMN,))

    # ----------------------------------------------------------- the contract

    def test_reference_reader(self, contract_table: ContractTable) -> None:
        """The reference reader gives the rows the commits left, in the snapshot's locations."""
        ct = contract_table
        for inst in ct.instants:
            reference = self.reference_of(ct, inst)
            got = arrow_rows(reference, self.columns)
            assert got == ct.expected[inst.id], (
                f"reference_rows at {inst.id} is not what the commits left "
                f"(fix the reference reader first): {difference(got, ct.expected[inst.id])}"
            )
            if REFERENCE_LOCATION in reference.column_names:
                named = set(reference.column(REFERENCE_LOCATION).to_pylist())
                units = {u.location for u in ct.table.snapshot(inst.id).units}
                assert named <= units, (
                    f"the reference names locations the snapshot at {inst.id} lacks: "
                    f"{sorted(map(str, named - units))[:5]} (snapshot: {sorted(units)[:5]})"
                )

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
        """Units with unique locations whose ``read_unit`` rows are the reference's rows."""
        ct = contract_table
        for inst in ct.instants:
            snap = ct.table.snapshot(inst.id)
            assert snap.instant is not None and snap.instant.id == inst.id
            locations = [u.location for u in snap.units]
            assert locations, f"no units at instant {inst.id}"
            assert all(isinstance(loc, str) and loc for loc in locations)
            assert len(set(locations)) == len(locations), f"repeated locations at {inst.id}"
            by_loc = self.unit_rows(ct, inst)
            got: Counter[Row] = sum(by_loc.values(), Counter())
            want = arrow_rows(self.reference_of(ct, inst), self.columns)
            assert got == want, (
                f"read_unit rows at {inst.id} are not the reference's: {difference(got, want)}"
            )
            if self.has_reference_locations(ct):
                truth = self.truth_by_location(ct, inst)
                for loc in sorted(set(by_loc) | set(truth)):
                    have, should = by_loc.get(loc, Counter()), truth.get(loc, Counter())
                    assert have == should, (
                        f"read_unit of {loc} at {inst.id} is not the reference's rows there: "
                        f"{difference(have, should)}"
                    )

    def test_changes_cover_differences(self, contract_table: ContractTable) -> None:
        """Every location whose reference rows differ between consecutive instants is reported."""
        ct = contract_table
        fmt = self.format_of(ct)
        first = ct.instants[0]
        changes = fmt.changes(None, first.id)
        present = set(self.truth_by_location(ct, first)) | set(self.unit_rows(ct, first))
        missing = present - changes.touched
        assert not missing, f"changes(None, {first.id}) miss {sorted(missing)}"
        for a, b in zip(ct.instants, ct.instants[1:], strict=False):
            before, after = self.truth_by_location(ct, a), self.truth_by_location(ct, b)
            differ = {loc for loc in set(before) | set(after) if before.get(loc) != after.get(loc)}
            changes = fmt.changes(a.id, b.id)
            missing = differ - changes.touched
            assert not missing, (
                f"changes({a.id}, {b.id}) miss locations whose rows differ: {sorted(missing)}"
            )

    def test_spark_read_equals_reference(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """The Spark read of some units is the reference's rows there, locations included."""
        ct = contract_table
        for inst in ct.instants:
            want = arrow_rows(self.located_table(ct, inst), self.columns, (REFERENCE_LOCATION,))
            got = self.read_rows(ct, contract_spark, inst, None)
            assert got == want, f"read of every unit at {inst.id}: {difference(got, want)}"
        last = ct.instants[-1]
        by_loc = self.truth_by_location(ct, last)
        some = set(sorted(by_loc)[::2])
        want = Counter(
            {
                (*row, loc): n
                for loc, rows in by_loc.items()
                if loc in some
                for row, n in rows.items()
            }
        )
        got = self.read_rows(ct, contract_spark, last, some)
        assert got == want, f"read of the units {sorted(some)}: {difference(got, want)}"
        empty = self.format_of(ct).read(contract_spark, (), last.id, False)
        assert set(self.columns) <= set(empty.columns) and empty.count() == 0

    def test_read_of_some_columns(self, contract_table: ContractTable, contract_spark: Any) -> None:
        """``read(columns=...)`` yields exactly those columns, in order, and the reference's values."""
        from lakesieve.contract.format_read import read_columns

        ct = contract_table
        fmt = self.format_of(ct)
        wanted = [c for c in ("s", "x", "id") if c in self.columns]
        pick = [self.columns.index(c) for c in wanted]
        for inst in ct.instants:
            by_loc = self.truth_by_location(ct, inst)
            want = Counter(
                {
                    (*(row[i] for i in pick), loc): n
                    for loc, rows in by_loc.items()
                    for row, n in rows.items()
                }
            )
            units = ct.table.snapshot(inst.id).units
            frame = read_columns(fmt, contract_spark, units, inst.id, wanted)
            assert frame.columns == [*wanted, LOCATION_COLUMN]
            got = spark_rows(frame, wanted, (LOCATION_COLUMN,))
            assert got == want, f"at {inst.id}: {difference(got, want)}"
            direct = fmt.read(contract_spark, units, inst.id, True, columns=wanted)
            assert direct.columns == [*wanted, LOCATION_COLUMN], "read(columns=...)"
            bare = fmt.read(contract_spark, units, inst.id, False, columns=wanted)
            assert bare.columns == wanted, "read(columns=..., with_location=False)"

    def test_pruned_read_equals_full_read(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """Random predicates at random instants: Spark SQL over the reference rows is the truth.

        The predicates of
        :data:`~lakesieve.testing.format_data.ADVERSARIAL_PREDICATES` run first. Pruning keeps every location the reference says holds a match, and the
        pruned read, the full read and the driver-side Arrow read each return
        exactly the matching rows.
        """
        ct = contract_table
        table = ct.table
        columns = list(self.columns)
        examples = int(os.environ.get("LAKESIEVE_CONTRACT_EXAMPLES", self.examples))
        top = max(row[0] for rows in ct.expected.values() for row in rows)

        def check(where: str, pick: int) -> None:
            inst = ct.instants[pick % len(ct.instants)]
            want, holding = self.matching(ct, contract_spark, inst, where)
            planned = {u.location for u in table.plan(where, inst.id).units}
            assert holding <= planned, (
                f"{where!r} at {inst.id}: pruned away {sorted(holding - planned)}, which hold "
                "matching rows"
            )
            got = spark_rows(table.read(contract_spark, where, inst.id), columns)
            assert got == want, (
                f"{where!r} at {inst.id}: the pruned read is not the matching rows: "
                f"{difference(got, want)}"
            )
            full = spark_rows(table.full_read(contract_spark, where, inst.id), columns)
            assert full == want, (
                f"{where!r} at {inst.id}: the full read is not the matching rows: "
                f"{difference(full, want)}"
            )
            arrow = table.read_arrow(where, inst.id, columns=columns, refresh=False)
            assert arrow.column_names == columns
            got_arrow = arrow_rows(arrow, columns)
            assert got_arrow == want, (
                f"{where!r} at {inst.id}: the driver-side Arrow read is not the matching rows: "
                f"{difference(got_arrow, want)}"
            )

        fixed = [w for w, needs in ADVERSARIAL_PREDICATES if set(needs) <= set(columns)]
        for pick, where in enumerate(fixed):
            check = example(where=where, pick=pick)(check)
        run = settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,
            phases=(Phase.explicit, Phase.reuse, Phase.generate),
            suppress_health_check=list(HealthCheck),
        )(given(where=predicates(max_id=top, columns=self.columns), pick=st.integers(0, 50))(check))
        run()

    def test_time_travel_uses_older_index_state(
        self, contract_table: ContractTable, contract_spark: Any
    ) -> None:
        """An older instant is planned with the index state built at that instant."""
        ct = contract_table
        table, old = ct.table, ct.old
        keys = sorted(row[1] for row in ct.expected[old.id] if row[1] is not None)
        key = keys[len(keys) // 2]
        where = f"k = {key}"
        report = table.explain(where, as_of=old.id)
        assert report["table_instant"] == old.id
        used = [e for e in report["indexes"] if e["column"] == "k" and e["status"] == "used"]
        assert used, f"no index on k was used at {old.id}: {report['indexes']}"
        assert all(e["instant"] == old.id and not e.get("stale") for e in used), (
            f"explain at {old.id} did not use the state built there: {used}"
        )
        want, _ = self.matching(ct, contract_spark, old, where)
        committed = Counter({r: n for r, n in ct.expected[old.id].items() if r[1] == key})
        assert want == committed and want, (
            f"{where} at {old.id}: the reference's matches are not the commits' rows: "
            f"{difference(want, committed)}"
        )
        got = spark_rows(table.read(contract_spark, where, old.id), self.columns)
        assert got == want, f"{where} at {old.id}: {difference(got, want)}"

    def test_table_id(
        self, contract_table: ContractTable, contract_spark: Any, tmp_path: Path
    ) -> None:
        """A lifelong identity, recorded by the store at the first build, another for another table."""
        fmt = contract_table.table.view.fmt
        if not isinstance(fmt, HasTableId):
            pytest.skip(f"format {self.format_name!r} gives no table identity (optional)")
        found = fmt.table_id()
        assert isinstance(found, str) and found, f"table_id() gave {found!r}"
        recorded = lakesieve.open(contract_table.path).store.read_log().table_fingerprint
        assert recorded is not None and recorded.endswith(found), (
            f"the store recorded {recorded!r} at the first build; the table now says {found!r}"
        )
        other = tmp_path / "other"
        self.create_table(contract_spark, other, self.make_rows(self.initial_ids))
        again = registry.open_format(str(other), {})
        assert isinstance(again, HasTableId) and again.table_id() not in (None, found)
