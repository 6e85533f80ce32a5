"""Helpers that build small Hudi tables with our writer and check pruned reads.

Shared by the end-to-end, CLI and data-source tests. The expectations they
compute never go through lakesieve: rows come from hudi-rs, a row's location
from hudi-rs's meta columns, and which rows match a predicate from Spark SQL
evaluating the predicate text over those rows held in memory.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from lakesieve.files.arrow_frame import frame_of
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.model import WriteOptions
from lakesieve.table import Table, write

LOC = "__location"

#: The default policy without its byte rule: tests of how deltas are read,
#: stored and chained keep their delta states however small the base
#: (``max_delta_share`` has its own tests in test_refresh.py).
#: delta chains computed by Spark jobs: the stamped and change data tests check
#: Spark's paths (the driver's are checked where ``driver_max_mb`` is left on),
#: read as deltas however much of the small table a change rewrote
#: (``rebuild_share`` has its own tests in test_refresh_rebuild.py)
CHAINS = RefreshPolicy(max_delta_share=math.inf, driver_max_mb=0, rebuild_share=math.inf)
WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "iris", "juniper"]


def make_rows(ids: Sequence[int], seed: int, version: int = 0) -> list[dict[str, Any]]:
    """Rows with a unique ``id``, a repeating key ``k = id // 3`` and typed columns."""
    rng = random.Random(seed)
    out = []
    for i in ids:
        out.append(
            {
                "id": i,
                "k": i // 3,
                "s": f"{WORDS[(i // 7) % len(WORDS)]}-{i // 50:04d}",
                "d": dt.date(2024, 1, 1) + dt.timedelta(days=(i // 20) % 365),
                "amount": round(rng.uniform(0, 1000), 2),
                "part": f"p{i % 3}",
                "version": version,
            }
        )
    return out


def df_of(spark: Any, rows: list[dict[str, Any]]) -> Any:
    """A Spark DataFrame with a fixed schema."""
    schema = "id bigint, k bigint, s string, d date, amount double, part string, version int"
    return spark.createDataFrame([tuple(r.values()) for r in rows], schema=schema)


def write_rows(spark: Any, path: Path, rows: list[dict[str, Any]], **kw: Any) -> str:
    """One commit of ``rows``; keyword arguments go to :class:`WriteOptions`."""
    kw.setdefault("record_key", ("id",))
    kw.setdefault("precombine", "version")
    return write(
        path, df_of(spark, rows), format="hudi", options=WriteOptions(**kw), spark=spark
    ).id


def hudi_rs_rows(path: str | Path, as_of: str | None = None) -> pa.Table:
    """The snapshot of the Hudi table at ``path`` as hudi-rs reads it (meta columns included).

    ``as_of`` is an instant time (latest when ``None``). No lakesieve code runs.
    """
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    batches = table.read(options)
    if not batches:
        return pa.table({})
    return plain_types(pa.Table.from_batches(batches))


def plain_types(table: pa.Table) -> pa.Table:
    """``table`` with large strings and string views as plain strings (what Spark takes from Arrow)."""
    fields = [
        pa.field(f.name, pa.string())
        if pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type)
        else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def hudi_location(partition_path: str | None, file_name: str) -> str:
    """A row's location from hudi-rs's meta columns: ``<partition path>/<file id>`` (file id alone unpartitioned).

    The file id is what a base file's name starts with (``<fileId>_<token>_<instant>.parquet``)
    and what a log block's records carry as their file name.
    """
    file_id = file_name.split("_", 1)[0]
    part = (partition_path or "").strip("/")
    return f"{part}/{file_id}" if part else file_id


def rows_by_location(table: Table, as_of: str | None = None) -> dict[str, pa.Table]:
    """Every location's rows at an instant, read by the format's own reader (not by lakesieve's).

    Hudi: hudi-rs at ``as_of``, one file slice at a time. Delta and Iceberg: every
    live data file in delta-rs's or pyiceberg's file list at ``as_of`` (a version or
    snapshot id), read by pyarrow.
    """
    if table.format != "hudi":
        from tests.differential.formats import data_files

        files = data_files(table.format, Path(table.path), as_of)
        return {loc: plain_types(t) for loc, t in files if t.num_rows}
    return hudi_rs_rows_by_location(table.path, as_of)


def hudi_rs_rows_by_location(path: str | Path, as_of: str | None = None) -> dict[str, pa.Table]:
    """Every file group's rows at ``as_of`` as hudi-rs reads them, one file slice at a time.

    The location of a file group is ``<partition path>/<file id>`` (the file id
    alone when unpartitioned); the meta columns are dropped.
    """
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions()
    reader = table.create_file_group_reader_with_options(options)
    out: dict[str, pa.Table] = {}
    for fs in table.get_file_slices(options):
        batch = reader.read_file_slice(fs, options)
        if batch.num_rows:
            rows = plain_types(pa.Table.from_batches([batch]))
            loc = hudi_location(fs.partition_path, fs.file_id)
            out[loc] = rows.select([c for c in rows.column_names if not c.startswith("_hoodie")])
    return out


_views = itertools.count()


def arrow_frame(spark: Any, rows: pa.Table) -> Any:
    """A Spark DataFrame of ``rows`` with Arrow's types kept.

    Naive timestamps stay wall times (``TIMESTAMP_NTZ``): ``createDataFrame``
    without a schema makes them instants of the session's time zone, which
    shifts them in any zone but UTC.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    return frame_of(spark, rows, from_arrow_schema(rows.schema, prefer_timestamp_ntz=True))


def spark_where(spark: Any, rows: pa.Table, where: str) -> Any:
    """Spark SQL's ``SELECT * ... WHERE <where>`` over ``rows`` held in memory (no Parquet pushdown)."""
    view = f"oracle_rows_{next(_views)}"
    arrow_frame(spark, rows).createOrReplaceTempView(view)
    return spark.sql(f"SELECT * FROM {view} WHERE {where}")


def true_locations(spark: Any, where: str, by_loc: dict[str, pa.Table]) -> set[str]:
    """Locations holding at least one row that Spark SQL selects with ``where``."""
    return true_locations_each(spark, [where], by_loc)[where]


def true_locations_each(
    spark: Any, wheres: Sequence[str], by_loc: dict[str, pa.Table]
) -> dict[str, set[str]]:
    """Per condition of ``wheres``, what :func:`true_locations` gives, in one Spark job.

    Spark SQL evaluates every condition over the same rows (a condition that
    is NULL selects nothing, as in ``WHERE``); each location's flag is the
    ``max`` over its rows.
    """
    parts = [
        t.append_column(LOC, pa.array([loc] * t.num_rows, pa.string()))
        for loc, t in by_loc.items()
        if t.num_rows
    ]
    out: dict[str, set[str]] = {where: set() for where in wheres}
    if not parts or not wheres:
        return out
    view = f"oracle_rows_{next(_views)}"
    arrow_frame(spark, pa.concat_tables(parts)).createOrReplaceTempView(view)
    flags = ", ".join(
        f"max(CASE WHEN ({where}) THEN 1 ELSE 0 END) AS q{i}" for i, where in enumerate(wheres)
    )
    for row in spark.sql(f"SELECT {LOC}, {flags} FROM {view} GROUP BY {LOC}").collect():
        for i, where in enumerate(wheres):
            if row[i + 1] == 1:
                out[where].add(row[0])
    return out


def expected_from(
    spark: Any,
    by_loc: dict[str, pa.Table],
    where: str,
    columns: Sequence[str] = ("id", "k", "s", "d", "amount", "part", "version"),
) -> list[tuple]:
    """The rows of ``by_loc`` (see :func:`rows_by_location`) that Spark SQL selects, as sorted tuples."""
    parts = [t for t in by_loc.values() if t.num_rows]
    if not parts:
        return []
    rows = pa.concat_tables(parts, promote_options="permissive")
    return sorted_rows(spark_where(spark, rows, where), columns)


def expected_rows(
    spark: Any,
    path: str | Path,
    where: str,
    as_of: str | None = None,
    columns: Sequence[str] = ("id", "k", "s", "d", "amount", "part", "version"),
) -> list[tuple]:
    """The rows hudi-rs reads at ``as_of`` that Spark SQL selects with ``where``, as sorted tuples."""
    rows = hudi_rs_rows(path, as_of)
    if not rows.num_rows:
        return []
    return sorted_rows(spark_where(spark, rows, where), columns)


def sorted_rows(
    df: Any, columns: Sequence[str] = ("id", "k", "s", "d", "amount", "part", "version")
) -> list[tuple]:
    """Collect a Spark DataFrame's rows as sorted tuples of the given columns."""
    return sorted(tuple(r) for r in df.select(*columns).collect())


def native_rows(fmt: str, path: str | Path) -> pa.Table:
    """Every live row of the table at ``path`` as its format's own reader returns it.

    ``fmt`` is ``hudi`` (hudi-rs, meta columns dropped), ``delta`` (delta-rs) or
    ``iceberg`` (pyiceberg, newest metadata file). No lakesieve code runs.
    """
    if fmt.startswith("hudi"):
        rows = hudi_rs_rows(path)
        return rows.select([c for c in rows.column_names if not c.startswith("_hoodie")])
    if fmt == "delta":
        from deltalake import DeltaTable

        return plain_types(DeltaTable(str(path)).to_pyarrow_table())
    from tests.differential.formats import iceberg_static

    return plain_types(iceberg_static(Path(path)).scan().to_arrow())


def rows_repr(frame: Any, columns: Sequence[str]) -> list[str]:
    """A Spark DataFrame's rows of ``columns`` as a sorted list of reprs: a multiset to compare."""
    return sorted(repr(tuple(r)) for r in frame.select(*[f"`{c}`" for c in columns]).collect())


def native_where(spark: Any, fmt: str, path: str | Path, where: str) -> tuple[list[str], list[str]]:
    """(columns, rows) of the table's own read that Spark SQL selects with ``where`` (see :func:`rows_repr`)."""
    rows = native_rows(fmt, path)
    return rows.column_names, rows_repr(spark_where(spark, rows, where), rows.column_names)


def rows_with_random_k(ids: list[int], seed: int) -> list[dict[str, Any]]:
    """:func:`make_rows` whose non-key column ``k`` (0-40, 5% null) and ``version`` are drawn from ``seed``."""
    rng = random.Random(seed)
    rows = make_rows(sorted(ids), seed)
    for row in rows:
        row["k"] = None if rng.random() < 0.05 else rng.randint(0, 40)
        row["version"] = rng.randint(0, 6)
    return rows


def selected_locations(table: Any, where: str, index: str) -> set[str] | None:
    """The locations index ``index`` selects for ``where`` (``None``: it could not answer)."""
    for item in table.plan(where).indexes:
        if item.definition.name == index:
            return set(item.selected) if item.answered else None
    raise AssertionError(f"index {index} not consulted for {where}")


def check_refreshed_k(
    spark: Any, table: Any, path: Path, predicates: list[str], context: Any = None
) -> None:
    """After a refresh of indexes ``k_exact`` and ``k_sieve`` on column ``k``: rows and selections.

    Pruned reads of the first three predicates equal hudi-rs' rows filtered by
    Spark SQL; then :func:`check_compacted_exact`, ``k_sieve`` selecting at
    least what the fresh build selects.
    """
    last = table.timeline()[-1].id
    for where in predicates[:3]:
        assert sorted_rows(table.read(spark, where)) == expected_rows(spark, path, where, last), (
            where
        )
    check_compacted_exact(spark, table, path, predicates, context, sieve="k_sieve")


def check_compacted_exact(
    spark: Any,
    table: Any,
    path: Path,
    predicates: list[str] | tuple[str, ...],
    context: Any = None,
    sieve: str | None = None,
) -> None:
    """Compacted, the refreshed index ``k_exact`` selects exactly the locations of matching rows.

    The truth is hudi-rs' rows of each file group at the newest instant
    filtered by Spark SQL (:func:`true_locations`); a fresh exact build of
    ``k`` must select the same.
    """
    from lakesieve.table import open as open_table

    table.compact("k_exact", spark=spark)
    table.build_index("k", type="exact", name="k_fresh", spark=spark)
    table = open_table(path)
    by_loc = hudi_rs_rows_by_location(path, table.timeline()[-1].id)
    truths = true_locations_each(spark, list(predicates), by_loc)
    for where in predicates:
        truth = truths[where]
        fresh = selected_locations(table, where, "k_fresh")
        compacted = selected_locations(table, where, "k_exact")
        assert compacted == fresh, (where, context)
        assert fresh is None or fresh == truth, (where, sorted(fresh), sorted(truth), context)
        if sieve is not None:
            wide = selected_locations(table, where, sieve)
            assert fresh is None or wide is None or fresh <= wide, (where, context)


def k_ops(modes: list[str]) -> Any:
    """A hypothesis strategy: 1-3 writes ``(mode, ids, seed)`` of rows from :func:`rows_with_random_k`."""
    from hypothesis import strategies as st

    return st.lists(
        st.tuples(
            st.sampled_from(modes),
            st.lists(st.integers(0, 239), min_size=1, max_size=40, unique=True),
            st.integers(0, 10_000),
        ),
        min_size=1,
        max_size=3,
    )


def k_predicates() -> Any:
    """A hypothesis strategy of predicates on the column ``k`` (values 0-40 and null)."""
    from hypothesis import strategies as st

    return st.one_of(
        st.integers(-1, 41).map(lambda v: f"k = {v}"),
        st.tuples(st.integers(-1, 41), st.integers(0, 8)).map(
            lambda t: f"k between {t[0]} and {t[0] + t[1]}"
        ),
        st.lists(st.integers(0, 40), min_size=1, max_size=4).map(
            lambda vs: f"k in ({', '.join(map(str, vs))})"
        ),
        st.integers(0, 40).map(lambda v: f"k > {v}"),
        st.just("k is null"),
        st.just("k is not null"),
    )
