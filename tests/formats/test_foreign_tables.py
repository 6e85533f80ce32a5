"""Conformance over tables other engines wrote: read exactly as the format's own reader, or refuse.

Every table under ``../shared/fixtures/{hudi,delta,iceberg}`` (copied to a
temporary folder first) is read through lakesieve's four doors --
``Table.read_arrow``, ``Table.read``, ``spark.read.format("lakesieve")`` and
``lakesieve query`` -- and compared with the format's own reader (hudi-rs,
delta-rs, pyiceberg): the full table at its latest and at every older
version, then about fifteen predicates on an indexable column with a zone map and
then a Sieve index built. The truth for a predicate is the reference rows
loaded into Spark and filtered by Spark SQL with the same text. CI builds one
of the two index types per table and reads through one of the two Spark
doors, in turn (every type and door meets every format); ``pytest -m long``
runs every table with both types and all four doors.

A table (or one door of it) may instead be refused: the test then asserts
that the error is a one-line :class:`~lakesieve.errors.LakesieveError` naming
the feature listed in :data:`REFUSALS`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve import cli
from lakesieve.errors import LakesieveError
from lakesieve.files.arrow_frame import frame_of
from lakesieve.table import Table
from lakesieve.table import open as open_table

from tests.conftest import SHARED_FIXTURES, unzip_fixture

FIXTURES = SHARED_FIXTURES.parent
ICEBERG = FIXTURES / "iceberg"
DELTA = FIXTURES / "delta"
HUDI = FIXTURES / "hudi"

#: Doors of a read.
ARROW, SPARK, SOURCE, CLI = "read_arrow", "read", "data source", "cli"
DOORS = (ARROW, SPARK, SOURCE, CLI)

#: (format, table name) -> door -> text the refusal must contain. A table not
#: listed must pass through every door.
REFUSALS: dict[tuple[str, str], dict[str, str]] = {
    ("iceberg", "data/persistent/case_sensitive_names/default.db/case_sensitive_names"): {
        SPARK: "differ only in case",
        SOURCE: "differ only in case",
        "build": "differ only in case",
    },
}

#: Index types built, in order, before the predicate checks run again (CI: one per table).
INDEX_TYPES = ("zonemap", "sieve")
#: Indexed columns per table (one keeps the suite within a few minutes; AND/OR of two
#: columns is the planner's business, the same for every format).
MAX_COLUMNS = 1


@dataclass
class Foreign:
    """One foreign table: where its copy lives and how to read it with its own reader."""

    fmt: str
    name: str
    path: Path
    cwd: Path | None = None
    versions: list[str] = field(default_factory=list)
    reference: Callable[[str | None], pa.Table] | None = None


# ------------------------------------------------------------ discovery


def _iceberg_tables() -> list[str]:
    if not ICEBERG.is_dir():
        return []
    found = {p.parent.parent for p in ICEBERG.rglob("metadata/*.metadata.json")}
    return sorted(str(p.relative_to(ICEBERG)) for p in found)


def _delta_tables() -> list[str]:
    if not DELTA.is_dir():
        return []
    return sorted(p.parent.name for p in DELTA.glob("*/_delta_log"))


def _hudi_tables() -> list[str]:
    return sorted(p.stem for p in HUDI.glob("*.zip")) if HUDI.is_dir() else []


CASES = (
    [("iceberg", t) for t in _iceberg_tables()]
    + [("delta", t) for t in _delta_tables()]
    + [("hudi", t) for t in _hudi_tables()]
)
NEEDS_FIXTURES = pytest.mark.skipif(not CASES, reason=f"no foreign tables under {FIXTURES}")


# ------------------------------------------------------------ reference readers


def _iceberg_reference(metadata_dir: Path, snapshot: str | None) -> pa.Table:
    from lakesieve.plugins.iceberg.identify import latest_metadata_file
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(latest_metadata_file(str(metadata_dir.parent)) or "")
    return table.scan(snapshot_id=int(snapshot) if snapshot else None).to_arrow()


def _iceberg_versions(path: Path) -> list[str]:
    from lakesieve.plugins.iceberg.identify import latest_metadata_file
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(latest_metadata_file(str(path)) or "")
    current = table.current_snapshot()
    chain: list[str] = []
    while current is not None:
        chain.append(str(current.snapshot_id))
        parent = current.parent_snapshot_id
        current = table.snapshot_by_id(parent) if parent is not None else None
    return chain[::-1]


def _delta_reference(path: Path, version: str | None) -> pa.Table:
    """delta-kernel's answer through delta-rs' QueryBuilder (column mapping, deletion vectors).

    (``DeltaTable.to_pyarrow_table`` reads columns renamed by column mapping as nulls.)
    """
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(str(path), version=int(version) if version else None)
    reader = QueryBuilder().register("t", table).execute("SELECT * FROM t")
    return pa.table(reader.read_all())


def _delta_versions(path: Path) -> list[str]:
    from deltalake import DeltaTable

    latest = DeltaTable(str(path)).version()
    out = []
    for v in range(latest + 1):
        try:
            DeltaTable(str(path), version=v)
        except Exception:
            continue
        out.append(str(v))
    return out


def _hudi_reference(path: Path, instant: str | None) -> pa.Table:
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(instant) if instant else None
    batches = table.read(options)
    if batches:
        return pa.Table.from_batches(batches)
    # no rows: the columns a read returns (meta fields first unless the table drops them)
    populated = table.hudi_options().get("hoodie.populate.meta.fields", "true") != "false"
    schema = table.get_schema_with_meta_fields() if populated else table.get_schema()
    return pa.schema(schema).empty_table()


def _hudi_versions(path: Path) -> list[str]:
    table = open_table(path, format="hudi")
    return [i.id for i in table.timeline()]


@functools.cache
def _workdir() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="lakesieve-foreign-"))


def _prepare(fmt: str, name: str) -> Foreign:
    """Copy one fixture table to a fresh folder and describe it."""
    root = _workdir() / f"{fmt}-{name.replace('/', '_')}"
    if root.exists():
        shutil.rmtree(root)
    if fmt == "iceberg":
        shutil.copytree(ICEBERG, root)  # metadata names paths relative to this folder
        path = root / name
        versions = _with_cwd(root, lambda: _iceberg_versions(path))
        return Foreign(
            fmt, name, path, root, versions, lambda v: _iceberg_reference(path / "metadata", v)
        )
    if fmt == "delta":
        path = root / name
        shutil.copytree(DELTA / name, path)
        return Foreign(
            fmt, name, path, None, _delta_versions(path), functools.partial(_delta_reference, path)
        )
    path = unzip_fixture(HUDI / f"{name}.zip", root)
    return Foreign(
        fmt, name, path, None, _hudi_versions(path), functools.partial(_hudi_reference, path)
    )


def _with_cwd(cwd: Path | None, fn: Callable[[], Any]) -> Any:
    if cwd is None:
        return fn()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return fn()
    finally:
        os.chdir(before)


# ------------------------------------------------------------ comparing rows


def _plain_type(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return _plain_type(t.storage_type)
    if (
        pa.types.is_fixed_size_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return pa.binary()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in t])
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    return t


def plain(table: pa.Table) -> pa.Table:
    """``table`` with plain types Spark can hold (extension types as their storage)."""
    columns = []
    for column, fld in zip(table.columns, table.schema, strict=True):
        chunks = [c.storage if isinstance(c, pa.ExtensionArray) else c for c in column.chunks]
        storage = pa.chunked_array(chunks, type=_plain_type(fld.type) if not chunks else None)
        columns.append(storage.cast(_plain_type(fld.type)))
    return pa.table(columns, names=table.schema.names)


def _value(v: Any) -> Any:
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(v, decimal.Decimal):
        return v.normalize()
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_value(x) for x in v]
    return v


def rows(table: pa.Table) -> Counter[str]:
    """The rows of ``table`` as a multiset of comparable strings."""
    table = plain(table)
    return Counter(repr([_value(v) for v in row.values()]) for row in table.to_pylist())


def assert_same(got: pa.Table, want: pa.Table, what: str) -> None:
    """Same column names in the same order, and the same rows."""
    assert got.schema.names == want.schema.names, (
        f"{what}: columns {got.schema.names} != {want.schema.names}"
    )
    g, w = rows(got), rows(want)
    if g != w:
        extra, missing = g - w, w - g
        raise AssertionError(
            f"{what}: {sum(extra.values())} wrong rows, {sum(missing.values())} missing rows; "
            f"wrong e.g. {list(extra)[:2]}, missing e.g. {list(missing)[:2]}"
        )


# ------------------------------------------------------------ predicates


def _literal(v: Any, t: pa.DataType) -> str | None:
    if pa.types.is_boolean(t) or v is None:
        return None
    if pa.types.is_integer(t):
        return str(v)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if pa.types.is_date(t):
        return f"DATE '{v.isoformat()}'"
    if pa.types.is_decimal(t):
        return str(v)
    return None


INDEXABLE = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_date,
    pa.types.is_decimal,
)


def pick_columns(schema: pa.Schema, reference: pa.Table) -> list[str]:
    """Up to :data:`MAX_COLUMNS` indexable columns, those with most distinct values first."""
    candidates = []
    for fld in schema:
        if fld.name.startswith("_hoodie_") or fld.name not in reference.schema.names:
            continue
        if not any(test(fld.type) for test in INDEXABLE):
            continue
        distinct = len(set(reference.column(fld.name).to_pylist()))
        candidates.append((-distinct, schema.get_field_index(fld.name), fld.name))
    return [name for _, _, name in sorted(candidates)[:MAX_COLUMNS]]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def predicates(reference: pa.Table, schema: pa.Schema, columns: list[str]) -> list[str]:
    """About fifteen predicates over ``columns``: points, misses, ranges, IN, NULL tests, AND/OR."""
    out: list[str] = []
    firsts: list[str] = []
    for name in columns:
        t = schema.field(name).type
        c = _quote(name)
        values = sorted({v for v in reference.column(name).to_pylist() if v is not None})
        lits = [lit for lit in (_literal(v, t) for v in values) if lit is not None]
        out += [f"{c} IS NULL", f"{c} IS NOT NULL"]
        if not lits:
            continue
        lo, mid, hi = lits[0], lits[len(lits) // 2], lits[-1]
        firsts.append(f"{c} = {mid}")
        out += [
            f"{c} = {mid}",
            f"{c} = {lo}",
            f"{c} < {mid}",
            f"{c} >= {hi}",
            f"{c} BETWEEN {lo} AND {mid}",
            f"{c} IN ({lo}, {hi})",
            f"{c} != {mid}",
            f"NOT ({c} <= {mid})",
            f"{c} = {lo} OR {c} = {hi}",
        ]
        if pa.types.is_integer(t):
            out += [f"{c} = {int(values[-1]) + 1}", f"{c} < {int(values[0])}"]
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            out += [f"{c} = 'no such value'", f"{c} > {hi}"]
    if len(firsts) == 2:
        out += [f"{firsts[0]} AND {firsts[1]}", f"{firsts[0]} OR {firsts[1]}"]
    return out


# ------------------------------------------------------------ lakesieve's doors


def _spark_truth(spark: Any, reference: pa.Table, wheres: list[str]) -> list[pa.Table]:
    """The reference rows each predicate keeps, filtered by Spark SQL (one job for all)."""
    from pyspark.sql import functions as F

    names = [n.lower() for n in reference.schema.names]
    case_clash = len(set(names)) != len(names)
    if case_clash:  # Spark holds such names only case-sensitively
        spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        df = frame_of(spark, plain(reference))
        frames = [df.where(w).withColumn("__q", F.lit(i)) for i, w in enumerate(wheres)]
        return _split(_union(frames), len(wheres), reference.schema.names)
    finally:
        if case_clash:
            spark.conf.set("spark.sql.caseSensitive", "false")


def _union(frames: list[Any]) -> Any:
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _split(df: Any, n: int, names: list[str]) -> list[pa.Table]:
    """Split a unioned frame (``__q`` = predicate number) back into one table per predicate."""
    import pyarrow.compute as pc

    table = df.toArrow()
    return [table.filter(pc.equal(table.column("__q"), i)).select(names) for i in range(n)]


def door_rows(
    door: str,
    table: Table,
    spark: Any,
    wheres: list[str | None],
    as_ofs: list[str | None],
    tmp: Path,
) -> list[pa.Table]:
    """The rows lakesieve returns for each query through one door.

    Query ``i`` is predicate ``wheres[i]`` (``None``: the full table) at
    ``as_ofs[i]`` (``None``: the latest). Through Spark, queries giving the same
    columns run as one job.
    """
    from pyspark.sql import functions as F

    if door == ARROW:
        return [table.read_arrow(where=w, as_of=a) for w, a in zip(wheres, as_ofs, strict=True)]
    if door == CLI:
        out = []
        for i, (w, a) in enumerate(zip(wheres, as_ofs, strict=True)):
            first = _quote(table.schema(a).names[0])
            target = tmp / f"cli-{i}.parquet"
            argv = [
                "query",
                table.path,
                "--where",
                w or f"{first} IS NULL OR {first} IS NOT NULL",
                "--engine",
                "arrow",
                "--output",
                str(target),
                *(["--as-of", a] if a else []),
            ]
            assert cli.main(argv) == 0, f"lakesieve query exited non-zero for {w!r}"
            out.append(pq.read_table(target))
        return out
    groups: dict[tuple[str, ...], list[tuple[int, Any]]] = {}
    for i, (w, a) in enumerate(zip(wheres, as_ofs, strict=True)):
        if door == SPARK:
            df = table.read(spark, where=w, as_of=a)
        else:
            reader = spark.read.format("lakesieve")
            if a:
                reader = reader.option("asOf", a)
            df = reader.load(table.path)
            if w:
                df = df.where(w)
        groups.setdefault(tuple(df.columns), []).append((i, df.withColumn("__q", F.lit(i))))
    found: dict[int, pa.Table] = {}
    for names, members in groups.items():
        got = _split(_union([frame for _, frame in members]), len(wheres), list(names))
        found.update({i: got[i] for i, _ in members})
    return [found[i] for i in range(len(wheres))]


def check_door(
    door: str,
    case: Foreign,
    table: Table,
    spark: Any,
    wheres: list[str | None],
    truths: list[pa.Table],
    as_ofs: list[str | None],
    tmp: Path,
) -> None:
    """Compare one door with the truth, or check that it refuses in one line naming the feature."""
    expected = REFUSALS.get((case.fmt, case.name), {}).get(door)
    try:
        got = _with_cwd(case.cwd, lambda: door_rows(door, table, spark, wheres, as_ofs, tmp))
    except LakesieveError as exc:
        message = str(exc)
        assert expected is not None, f"{case.fmt} {case.name} {door}: unexpected refusal: {message}"
        assert "\n" not in message.strip(), f"refusal is not one line: {message!r}"
        assert expected in message, f"refusal does not name {expected!r}: {message}"
        return
    except Exception as exc:  # through Spark a refusal arrives inside Spark's own error
        if door != SOURCE or expected is None or expected not in str(exc):
            raise
        return
    for w, a, g, t in zip(wheres, as_ofs, got, truths, strict=True):
        assert_same(g, t, f"{case.fmt} {case.name} {door} as of {a} where {w}")


# ------------------------------------------------------------ the test


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("foreign")
    yield path
    shutil.rmtree(_workdir(), ignore_errors=True)


def _share(cases: list[tuple[str, str]]) -> list[Any]:
    """The CI share and the long tier's runs of :data:`CASES`.

    In CI every Iceberg and Delta table and every fourth Hudi table (the Hudi
    fixtures are each read by ``test_hudi_fixtures.py`` too) is read at every
    version through the Arrow doors and with one index type and one Spark
    door, taken in turn so that each index type and each Spark door meets
    every format; the long tier (``pytest -m long``) takes every table, builds
    both index types and reads through all four doors.
    """
    params = []
    hudi = kept = 0
    for fmt, name in cases:
        hudi += fmt == "hudi"
        if fmt != "hudi" or hudi % 4 == 1:
            one = ((INDEX_TYPES[kept % 2],), ((SPARK, SOURCE)[(kept // 2) % 2],))
            params.append(pytest.param(fmt, name, *one, id=f"{fmt}-{name}"))
            kept += 1
        params.append(
            pytest.param(
                fmt,
                name,
                INDEX_TYPES,
                (SPARK, SOURCE),
                id=f"{fmt}-{name}-every",
                marks=pytest.mark.long,
            )
        )
    return params


@NEEDS_FIXTURES
@pytest.mark.spark
@pytest.mark.parametrize(("fmt", "name", "index_types", "spark_doors"), _share(CASES))
def test_foreign_table(
    spark: Any,
    tmp_module: Path,
    fmt: str,
    name: str,
    index_types: tuple[str, ...],
    spark_doors: tuple[str, ...],
) -> None:
    case = _prepare(fmt, name)
    assert case.reference is not None
    ref = case.reference
    table = _with_cwd(case.cwd, lambda: open_table(case.path))
    assert table.format == fmt

    # every version: the full table through the Arrow doors; through Spark the oldest and the
    # latest, together with the predicates below (one Spark job per door)
    versions = case.versions or [None]
    wants: dict[str | None, pa.Table] = {}
    for version in versions:
        want = plain(_with_cwd(case.cwd, lambda v=version: ref(v)))
        as_of = None if version == versions[-1] else version
        wants[as_of] = want
        for door in (ARROW, CLI):
            check_door(door, case, table, spark, [None], [want], [as_of], tmp_module)
    latest = wants[None]

    # predicates, with each index type built in turn; the Spark doors once, with every index
    schema = _with_cwd(case.cwd, lambda: table.schema())
    columns = pick_columns(schema, latest) if latest.num_rows else []
    wheres = predicates(latest, schema, columns) if columns else []
    truths = _spark_truth(spark, latest, wheres) if wheres else []
    refused = REFUSALS.get((fmt, name), {})
    for index_type in index_types if wheres else ():
        for column in columns:
            try:
                _with_cwd(
                    case.cwd,
                    lambda c=column, t=index_type: table.build_index(c, type=t, spark=spark),
                )
            except LakesieveError as exc:
                assert "build" in refused, f"{fmt} {name}: index build refused: {exc}"
                assert refused["build"] in str(exc), f"refusal does not name {refused['build']!r}"
        latest_only: list[str | None] = [None] * len(wheres)
        check_door(ARROW, case, table, spark, list(wheres), truths, latest_only, tmp_module)
        check_door(
            CLI, case, table, spark, list(wheres[:4]), truths[:4], latest_only[:4], tmp_module
        )
    oldest = [] if len(versions) < 2 else [versions[0]]
    for door, count in ((d, 6 if d == SPARK else 3) for d in spark_doors):
        queries: list[str | None] = [None, *wheres[:count], *[None for _ in oldest]]
        as_ofs: list[str | None] = [None] * (1 + len(wheres[:count])) + list(oldest)
        want_rows = [latest, *truths[:count], *[wants[v] for v in oldest]]
        check_door(door, case, table, spark, queries, want_rows, as_ofs, tmp_module)


# ------------------------------------------------------------ Iceberg mechanisms on made tables


def _pyiceberg_table(tmp_path: Path, name: str, schema: pa.Schema) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    tmp_path.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    return catalog.create_table(f"db.{name}", schema=schema, location=str(tmp_path / name))


@pytest.mark.spark
def test_iceberg_renamed_and_readded_columns_resolve_by_field_id(
    spark: Any, tmp_path: Path
) -> None:
    """Rename ``b`` to ``c``, then add a new ``b``: old rows keep their values under ``c``."""
    from pyiceberg.types import LongType

    table = _pyiceberg_table(
        tmp_path, "evolved", pa.schema([("a", pa.int64()), ("b", pa.string())])
    )
    table.append(pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "y"]}))
    first = str(table.current_snapshot().snapshot_id)
    with table.update_schema() as update:
        update.rename_column("b", "c")
    with table.update_schema() as update:
        update.add_column("b", LongType())
    table = table.refresh()
    table.append(
        pa.table(
            {
                "a": pa.array([3], pa.int64()),
                "c": ["z"],
                "b": pa.array([30], pa.int64()),
            }
        )
    )
    lake = open_table(tmp_path / "evolved")
    for as_of, snapshot in ((None, None), (first, int(first))):
        want = plain(table.scan(snapshot_id=snapshot).to_arrow())
        assert_same(lake.read_arrow(as_of=as_of), want, f"read_arrow as of {as_of}")
        assert_same(lake.read(spark, as_of=as_of).toArrow(), want, f"read as of {as_of}")
    where = "c = 'x'"
    want = _spark_truth(spark, plain(table.scan().to_arrow()), [where])[0]
    assert want.num_rows == 1
    assert_same(lake.read_arrow(where=where), want, where)
    assert_same(lake.read(spark, where=where).toArrow(), want, where)


def test_iceberg_table_naming_missing_paths_is_refused_in_one_line(tmp_path: Path) -> None:
    """A table moved away from the paths its manifests name (another machine's) is refused."""
    table = _pyiceberg_table(tmp_path / "here", "t", pa.schema([("a", pa.int64())]))
    table.append(pa.table({"a": pa.array([1, 2], pa.int64())}))
    moved = tmp_path / "elsewhere" / "t"
    shutil.move(str(tmp_path / "here" / "t"), moved)
    lake = open_table(moved)
    with pytest.raises(LakesieveError) as info:
        lake.read_arrow()
    message = str(info.value)
    assert "\n" not in message and "does not exist here" in message
    assert str(tmp_path / "here" / "t") in message
