"""Arrow tables handed to Spark keep every row, whatever their chunks.

pyspark 4.3's ``createDataFrame(<pyarrow.Table>)`` drops every chunk after an
empty one. hudi-rs returns one batch per file slice, in no fixed order, and a
file group emptied by a delete reads as an empty batch: the differential
suite's oracle (Spark SQL over the native rows) then lost a file group's rows
on about one copy-on-write table in seventy, and reported lakesieve's right
answers as extra rows. :func:`lakesieve.files.arrow_frame.frame_of` is what
every Arrow-to-Spark hand-over in lakesieve and its tests uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.files.arrow_frame import frame_of, without_empty_chunks

from tests.differential.data import VALUE_COLUMNS, to_arrow
from tests.differential.formats import LOC
from tests.differential.oracle import Oracle
from tests.tables import arrow_frame, hudi_rs_rows, make_rows, spark_where, write_rows

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("loc", pa.string())])


def _chunked(sizes: list[int]) -> pa.Table:
    """A table with one batch per entry of ``sizes``; ids number the rows 0, 1, 2..."""
    batches, start = [], 0
    for n in sizes:
        ids = list(range(start, start + n))
        batches.append(
            pa.record_batch(
                [pa.array(ids, pa.int64()), pa.array([f"fg-{len(batches)}"] * n)], schema=SCHEMA
            )
        )
        start += n
    return pa.Table.from_batches(batches, schema=SCHEMA)


@pytest.mark.xfail(
    strict=True, reason="pyspark 4.3 createDataFrame drops the chunks after an empty one"
)
def test_pyspark_create_data_frame_keeps_rows_after_an_empty_chunk(spark: Any) -> None:
    """Records the pyspark bug; passes (and so fails this strict xfail) once pyspark fixes it."""
    assert spark.createDataFrame(_chunked([2, 0, 3])).count() == 5


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 3), max_size=6))
def test_frame_of_keeps_every_row(spark: Any, sizes: list[int]) -> None:
    table = _chunked(sizes)
    got = sorted(r.id for r in frame_of(spark, table).collect())
    assert got == list(range(sum(sizes)))


def test_without_empty_chunks_copies_nothing_when_none_are_empty() -> None:
    table = _chunked([2, 3])
    assert without_empty_chunks(table) is table
    assert [b.num_rows for b in without_empty_chunks(_chunked([0, 2, 0, 3, 0])).to_batches()] == [
        2,
        3,
    ]


def test_oracle_sees_the_rows_after_an_empty_file_group(spark: Any) -> None:
    """The shape that broke the differential oracle: a deleted-empty group between two others."""
    groups = []
    for fg, ids in enumerate([[0, 1], [], [2, 3, 4]]):
        rows = to_arrow([{**dict.fromkeys(VALUE_COLUMNS), "id": i, "v": 0, "loc": fg} for i in ids])
        groups.append(rows.append_column(LOC, pa.array([f"fg-{fg}"] * len(ids), pa.string())))
    located = pa.concat_tables(groups)
    assert [b.num_rows for b in located.to_batches()] == [2, 0, 3]
    assert arrow_frame(spark, located).count() == 5
    oracle = Oracle(spark, located)
    try:
        answer = oracle.answer("id >= 0")
        assert answer.rows is not None and len(answer.rows) == 5
        assert answer.locations == {"fg-0", "fg-2"}
    finally:
        oracle.close()


@pytest.mark.parametrize("where", ["k = 1", "amount < 100", "id < 0"])
def test_read_arrow_result_reaches_spark_whole(spark: Any, tmp_path: Path, where: str) -> None:
    """read_arrow's table has no empty chunk, so createDataFrame keeps all of it.

    Truth: Spark SQL over hudi-rs's rows.
    """
    path = tmp_path / "t"
    write_rows(spark, path, make_rows(range(60), seed=3), mode="bulk_insert", file_groups=4)
    got = lakesieve.open(path).read_arrow(where=where)
    assert all(b.num_rows for b in got.to_batches())
    want = spark_where(spark, hudi_rs_rows(path), where).count()
    assert spark.createDataFrame(got).count() == got.num_rows == want
