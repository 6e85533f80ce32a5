"""The Hudi plugin's read hooks against every real Apache Hudi fixture table.

Each zip in ``../shared/fixtures/hudi`` is a table written by Apache Hudi
itself (versions 6 and 8, copy-on-write and merge-on-read). For each one:
identify, timeline and snapshot agree with the fixtures' README; the Spark
read, the per-unit Arrow read and a time-travel read return exactly the rows
hudi-rs returns; and the changes between the first and the last instant cover
every location whose rows differ.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from lakesieve.model import LOCATION_COLUMN, ReadUnit, TableRef
from lakesieve.plugins.hudi import plugin as hudi_plugin

from tests.conftest import SHARED_FIXTURES, fixture_zips, unzip_fixture
from tests.tables import hudi_location

ZIPS = fixture_zips()
NEEDS_FIXTURES = pytest.mark.skipif(not ZIPS, reason=f"no Hudi fixture zips in {SHARED_FIXTURES}")


def _readme_rows() -> dict[str, dict[str, str]]:
    """The README's table: zip name -> its columns."""
    readme = SHARED_FIXTURES / "README.md"
    if not readme.is_file():
        return {}
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in readme.read_text().splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "zip":
            header = cells
        elif header and cells[0].endswith(".zip"):
            rows[cells[0]] = dict(zip(header, cells, strict=False))
    return rows


README = _readme_rows()


def _expected(zip_path: Path) -> dict[str, str]:
    if "instants" not in README.get(zip_path.name, {}):  # v9 tables: no figures (see foreign suite)
        pytest.skip(f"{zip_path.name} has no figures in the fixtures' README")
    return README[zip_path.name]


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture unzipped once, each into its own folder (several share a root name)."""
    out: dict[str, Path] = {}
    for zip_path in ZIPS:
        out[zip_path.name] = unzip_fixture(zip_path, tmp_path_factory.mktemp(zip_path.stem))
    return out


def _fmt(ref: TableRef) -> hudi_plugin.HudiFormat:
    """The plugin's object for ``ref``."""
    return hudi_plugin.HudiFormat(ref.path, ref.options)


def _ref(roots: dict[str, Path], zip_path: Path) -> TableRef:
    return TableRef(path=str(roots[zip_path.name]), format="hudi")


def _sorted_rows(table: pa.Table) -> list[str]:
    """Rows as comparable strings (Python values; map entries keep their order)."""
    return sorted(repr(row) for row in table.to_pylist())


def _hudi_rs_rows(path: str, instant: str | None) -> pa.Table:
    """hudi-rs's own snapshot read (the reference)."""
    table = HudiTableBuilder.from_base_uri(path).build()
    options = HudiReadOptions().with_as_of_timestamp(instant) if instant else None
    batches = table.read(options)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _unit_rows(ref: TableRef, unit: ReadUnit, instant: str | None) -> pa.Table | None:
    batches = list(_fmt(ref).read_unit(unit=unit, instant=instant, columns=None) or [])
    return pa.Table.from_batches(batches) if batches else None


def _rows_by_location(ref: TableRef, instant: str | None) -> dict[str, list[str]]:
    """Every file group's rows (meta columns included) as hudi-rs reads its file slice at ``instant``."""
    table = HudiTableBuilder.from_base_uri(ref.path).build()
    options = HudiReadOptions().with_as_of_timestamp(instant) if instant else HudiReadOptions()
    reader = table.create_file_group_reader_with_options(options)
    out: dict[str, list[str]] = {}
    for file_slice in table.get_file_slices(options):
        batch = reader.read_file_slice(file_slice, options)
        location = hudi_location(file_slice.partition_path, file_slice.file_id)
        out[location] = _sorted_rows(pa.Table.from_batches([batch])) if batch.num_rows else []
    return out


def _spark_rows_by_location(df: Any) -> dict[str, list[str]]:
    table = df.toArrow()
    locations = table.column(LOCATION_COLUMN).to_pylist()
    data = table.drop_columns([LOCATION_COLUMN])
    grouped: dict[str, list[str]] = {}
    for location, row in zip(locations, data.to_pylist(), strict=True):
        grouped.setdefault(location, []).append(repr(row))
    return {loc: sorted(rows) for loc, rows in grouped.items()}


@NEEDS_FIXTURES
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_identify_timeline_snapshot_match_readme(roots: dict[str, Path], zip_path: Path) -> None:
    expected = _expected(zip_path)
    ref = _ref(roots, zip_path)
    assert hudi_plugin.lakesieve_format_open(path=ref.path, options={}).name == "hudi"  # type: ignore[union-attr]

    instants = _fmt(ref).timeline()
    assert instants is not None
    count, _, actions = expected["instants"].partition("(")
    assert len(instants) == int(count), (
        "completed instants (requested/inflight/rolled back excluded)"
    )
    assert {i.action for i in instants} == {a for a in actions.rstrip(")").split(",") if a}
    assert [i.sort_key for i in instants] == sorted(i.sort_key for i in instants), "oldest first"
    assert all(i.id == i.sort_key and re.fullmatch(r"\d{17}", i.id) for i in instants)

    snapshot = _fmt(ref).snapshot(instant=None)
    assert snapshot is not None
    assert snapshot.instant == (instants[-1] if instants else None)
    assert len(snapshot.units) == int(expected["slices"])
    assert sum(len(u.log_files) for u in snapshot.units) == int(expected["logs"])
    assert len(snapshot.locations) == len(snapshot.units), "one unit per location"
    root = Path(ref.path)
    for unit in snapshot.units:
        file_id = unit.extra["file_id"]
        partition = unit.extra["partition_path"]
        assert unit.location == (f"{partition}/{file_id}" if partition else file_id)
        assert unit.base_file is not None and (root / unit.base_file).is_file()
        assert all((root / log).is_file() for log in unit.log_files)
        assert unit.size_bytes == (root / unit.base_file).stat().st_size + sum(
            (root / log).stat().st_size for log in unit.log_files
        )
        if expected["partition"]:
            assert set(unit.partition_values) == set(expected["partition"].split(","))
        else:
            assert dict(unit.partition_values) == {}


@NEEDS_FIXTURES
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_spark_read_equals_hudi_rs(spark: Any, roots: dict[str, Path], zip_path: Path) -> None:
    expected = _expected(zip_path)
    ref = _ref(roots, zip_path)
    snapshot = _fmt(ref).snapshot(instant=None)
    assert snapshot is not None
    reference = _hudi_rs_rows(ref.path, None)
    assert reference.num_rows == int(expected["rows"])

    df = _fmt(ref).read(spark=spark, units=snapshot.units, instant=None, with_location=True)
    assert df is not None
    schema = _fmt(ref).schema(instant=None)
    assert schema is not None
    assert df.columns == [*schema.names, LOCATION_COLUMN]
    if reference.num_rows:
        assert schema.names == reference.schema.names, "same columns as hudi-rs, meta columns too"

    by_location = _spark_rows_by_location(df)
    assert sorted(r for rows in by_location.values() for r in rows) == _sorted_rows(reference)
    assert set(by_location) <= snapshot.locations
    # Each row carries the location of the unit it was read from.
    per_unit = _rows_by_location(ref, None)
    assert {loc: rows for loc, rows in per_unit.items() if rows} == by_location

    plain = _fmt(ref).read(spark=spark, units=snapshot.units, instant=None, with_location=False)
    assert plain is not None and LOCATION_COLUMN not in plain.columns
    assert plain.count() == reference.num_rows


@NEEDS_FIXTURES
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_read_units_without_spark_equal_hudi_rs(roots: dict[str, Path], zip_path: Path) -> None:
    ref = _ref(roots, zip_path)
    snapshot = _fmt(ref).snapshot(instant=None)
    assert snapshot is not None
    schema = _fmt(ref).schema(instant=None)
    rows: list[str] = []
    for unit in snapshot.units:
        table = _unit_rows(ref, unit, None)
        if table is not None:
            assert table.schema == schema, "every unit yields the table's read schema"
            rows.extend(_sorted_rows(table))
    assert sorted(rows) == _sorted_rows(_hudi_rs_rows(ref.path, None))


@NEEDS_FIXTURES
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_time_travel_to_first_instant(spark: Any, roots: dict[str, Path], zip_path: Path) -> None:
    ref = _ref(roots, zip_path)
    instants = _fmt(ref).timeline()
    if not instants:
        pytest.skip("table has no commits")
    first = instants[0].id
    snapshot = _fmt(ref).snapshot(instant=first)
    assert snapshot is not None and snapshot.instant == instants[0]
    reference = _sorted_rows(_hudi_rs_rows(ref.path, first))

    df = _fmt(ref).read(spark=spark, units=snapshot.units, instant=first, with_location=True)
    assert df is not None
    by_location = _spark_rows_by_location(df)
    assert sorted(r for rows in by_location.values() for r in rows) == reference
    per_unit = _rows_by_location(ref, first)
    assert sorted(r for rows in per_unit.values() for r in rows) == reference
    assert {loc: rows for loc, rows in per_unit.items() if rows} == by_location


@NEEDS_FIXTURES
@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_changes_cover_every_location_that_differs(roots: dict[str, Path], zip_path: Path) -> None:
    ref = _ref(roots, zip_path)
    instants = _fmt(ref).timeline()
    if not instants:
        pytest.skip("table has no commits")
    first, last = instants[0].id, instants[-1].id
    before = _rows_by_location(ref, first)
    after = _rows_by_location(ref, last)
    differ = {
        loc
        for loc in set(before) | set(after)
        if Counter(before.get(loc, [])) != Counter(after.get(loc, []))
    }

    forward = _fmt(ref).changes(start=first, end=last)
    assert forward is not None
    assert differ <= forward.touched, f"missed: {sorted(differ - forward.touched)}"
    assert (set(after) - set(before)) <= forward.added | forward.rewritten
    assert (set(before) - set(after)) <= forward.removed | forward.rewritten

    backward = _fmt(ref).changes(start=last, end=first)
    assert backward is not None
    assert backward.touched == forward.touched, "order of the bounds does not matter"
    assert backward.added == forward.removed and backward.removed == forward.added

    from_start = _fmt(ref).changes(start=None, end=last)
    assert from_start is not None
    assert set(after) <= from_start.touched, "everything visible was written since the start"

    same = _fmt(ref).changes(start=last, end=last)
    assert same is not None and not same.touched
