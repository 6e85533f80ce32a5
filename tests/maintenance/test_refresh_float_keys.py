"""Refreshed indexes keep NaN and -0.0 (issue 15, class 6).

A Delta table with a float and a double column is indexed by every index
type, then a commit appends rows holding NaN and -0.0 (each in a file of its
own). After ``Table.refresh`` the new rows live in the index's delta chain
(and, after ``Table.compact``, in a base folded by the index type's
``apply_delta``); at each stage every index must select the locations that
truly hold matching rows. The truth is Spark SQL evaluating the predicate
text over delta-rs's own read of the table, grouped by the file each row
came from, so neither lakesieve's evaluator nor its read paths decide it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from lakesieve.files.arrow_frame import frame_of
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.model import WriteOptions
from lakesieve.table import Table, write
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark

TYPES = ("sieve", "zonemap", "bloom", "exact")
SCHEMA = "id bigint, f float, d double"
COLUMNS = ("f", "d")
#: Predicates each column is asked, ``{c}`` standing for the column.
PREDICATES = (
    "{c} > 5",
    "{c} >= 100",
    "{c} > 1.0E300",
    "{c} = 0",
    "{c} = -0.0",
    "{c} in (0.0, 12)",
    "{c} between -0.0 and 0.0",
    "{c} >= 0 and {c} <= 0",
    "{c} < 0.5 and {c} > -0.5",
    "{c} > 0.1",
    "{c} <= -0.0",
    "{c} = CAST('NaN' AS DOUBLE)",
    "{c} >= CAST('Infinity' AS DOUBLE)",
    "{c} in (CAST('NaN' AS DOUBLE), 1)",
    "NOT ({c} < CAST('NaN' AS DOUBLE))",
)


def _rows_with_file(path: Path) -> pa.Table:
    """Every row of the table as delta-rs reads it, with the name of its data file."""
    ds = DeltaTable(str(path)).to_pyarrow_dataset()
    parts = []
    for frag in ds.get_fragments():
        rows = frag.to_table(schema=ds.schema)
        parts.append(rows.append_column("file", pa.array([Path(frag.path).name] * rows.num_rows)))
    return pa.concat_tables(parts)


def _truth(spark: Any, rows: pa.Table, where: str) -> set[str]:
    """Files holding a row that Spark SQL selects."""
    return _truths(spark, rows, [where])[0]


def _selected(table: Table, where: str, index: str) -> set[str] | None:
    for item in table.plan(where).indexes:
        if item.definition.name == index:
            return {Path(s).name for s in item.selected} if item.answered else None
    raise AssertionError(f"index {index} not consulted for {where}")


def _truths(spark: Any, rows: pa.Table, wheres: list[str]) -> list[set[str]]:
    """Per predicate, the files holding a row Spark SQL selects (one Spark job for all)."""
    flags = [
        f"max(CASE WHEN ({where}) THEN 1 ELSE 0 END) AS q{i}" for i, where in enumerate(wheres)
    ]
    hits = frame_of(spark, rows).groupBy("file").agg(*[F.expr(f) for f in flags]).collect()
    return [{r["file"] for r in hits if r[f"q{i}"] == 1} for i in range(len(wheres))]


def _check(spark: Any, table: Table, path: Path, stage: str) -> None:
    rows = _rows_with_file(path)
    asked = [(column, text.format(c=column)) for column in COLUMNS for text in PREDICATES]
    truths = _truths(spark, rows, [where for _, where in asked])
    for (column, where), truth in zip(asked, truths, strict=True):
        for typ in TYPES:
            name = f"{column}_{typ}"
            got = _selected(table, where, name)
            if got is None:
                continue
            missing = truth - got
            assert not missing, f"{stage}: {name} on {where!r} misses {sorted(missing)}"


@pytest.fixture()
def table(spark: Any, tmp_path: Path) -> tuple[Table, Path]:
    path = _write_base(spark, tmp_path)
    t = lakesieve.open(path)
    for column in COLUMNS:
        for typ in TYPES:
            t.build_index(column, type=typ, name=f"{column}_{typ}", spark=spark)
    return t, path


def _write_base(spark: Any, tmp_path: Path) -> Path:
    """The table before the special rows: 200 rows of -10.0 .. 29.0 in four files."""
    path = tmp_path / "floats"
    rows = [(i, float(i % 40) - 10.0, float(i % 40) - 10.0) for i in range(200)]
    write(
        path,
        spark.createDataFrame(rows, SCHEMA).repartition(4),
        format="delta",
        options=WriteOptions(mode="bulk_insert", table_name="floats"),
        spark=spark,
    )
    return path


def _append_specials(spark: Any, path: Path) -> None:
    """One commit adding a file of NaN rows and a file of -0.0 rows."""
    frame = spark.createDataFrame(
        [(1000, math.nan, math.nan), (1001, -0.0, -0.0)], SCHEMA
    ).repartition(2, "id")
    write(path, frame, options=WriteOptions(mode="append"), spark=spark)


def test_truth_sees_the_special_rows(spark: Any, tmp_path: Path) -> None:
    """The oracle itself: Spark SQL selects the NaN file for ``> 5`` and the -0.0 file for ``= 0``."""
    path = _write_base(spark, tmp_path)
    before = _rows_with_file(path)
    _append_specials(spark, path)
    after = _rows_with_file(path)
    full = DeltaTable(str(path)).to_pyarrow_table()
    assert full.num_rows == after.num_rows == before.num_rows + 2
    for column in COLUMNS:
        assert pc.sum(pc.is_nan(full[column])).as_py() == 1
        nan_file = _truth(spark, after, f"{column} > 5") - _truth(spark, before, f"{column} > 5")
        zero_file = _truth(spark, after, f"{column} = 0") - _truth(spark, before, f"{column} = 0")
        assert len(nan_file) == 1 and len(zero_file) == 1 and nan_file != zero_file


@pytest.mark.parametrize(
    "engine",
    # CI: the driver; Spark's fold of NaN and -0.0 keys is in CI through the
    # differential share (half its refreshes are Spark jobs) and here in the long tier
    ["driver", pytest.param("spark", marks=pytest.mark.long)],
)
def test_refresh_keeps_nan_and_negative_zero(
    spark: Any, table: tuple[Table, Path], engine: str
) -> None:
    """Delta states (overlay), compaction of the chain, and a refresh that compacts at once.

    Once with the changes read and folded on the driver (Arrow), once by Spark jobs.
    """
    t, path = table
    mb = 256.0 if engine == "driver" else 0.0
    _check(spark, t, path, "fresh build")
    _append_specials(spark, path)
    results = t.refresh(
        spark=spark, policy=RefreshPolicy(max_delta_share=math.inf, driver_max_mb=mb)
    )
    assert {r.action for r in results} == {"delta"}, [r.to_dict() for r in results]
    assert {r.engine for r in results} == {engine}, [r.to_dict() for r in results]
    _check(spark, t, path, "after refresh (delta states)")
    results = t.compact(spark=spark, policy=RefreshPolicy(driver_max_mb=mb))
    assert {r.action for r in results} <= {"compacted", "rebuilt"}, [r.to_dict() for r in results]
    assert any(r.action == "compacted" for r in results)
    assert engine in {r.engine for r in results}, [r.to_dict() for r in results]
    _check(spark, t, path, "after compact")
    _append_specials(spark, path)
    results = t.refresh(spark=spark, policy=RefreshPolicy(max_deltas=0, driver_max_mb=mb))
    assert any(r.action == "compacted" for r in results), [r.to_dict() for r in results]
    assert engine in {r.engine for r in results}, [r.to_dict() for r in results]
    _check(spark, t, path, "after a refresh folding the delta in")
