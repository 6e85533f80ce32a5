"""ORC footer statistics against the rows the ORC readers return.

The truth is pyarrow's ORC reader (the Apache ORC C++ library) reading the
rows back and pyarrow's compute kernels taking their least and greatest
value; files come from pyarrow's ORC writer (three compressions, small
compression blocks and stripes) and from Spark's (the Java ORC library, the
writer the exact index uses).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.files.orc_footer import ColumnStats, OrcFooterError, read_file_stats, read_stats
from pyarrow import orc

_TYPES = {
    "byte": (pa.int8(), -(2**7), 2**7 - 1),
    "short": (pa.int16(), -(2**15), 2**15 - 1),
    "int": (pa.int32(), -(2**31), 2**31 - 1),
    "long": (pa.int64(), -(2**63), 2**63 - 1),
    "date": (pa.date32(), -719162, 2932896),
}


def _orc_bytes(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    orc.write_table(table, sink, **options)
    return sink.getvalue()


def _expected(column: pa.ChunkedArray) -> tuple[int, bool, Any, Any]:
    bounds = pc.min_max(column.cast(pa.int32()) if pa.types.is_date(column.type) else column)
    return (
        len(column) - column.null_count,
        column.null_count > 0,
        bounds["min"].as_py(),
        bounds["max"].as_py(),
    )


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    kinds = draw(st.lists(st.sampled_from(sorted(_TYPES)), min_size=1, max_size=4))
    rows = draw(st.integers(0, 300))
    columns: dict[str, pa.Array] = {}
    for i, kind in enumerate(kinds):
        arrow_type, low, high = _TYPES[kind]
        values = draw(
            st.lists(
                st.one_of(st.none(), st.integers(low, high), st.sampled_from([low, high, 0])),
                min_size=rows,
                max_size=rows,
            )
        )
        if arrow_type == pa.date32():
            columns[f"c{i}"] = pa.array(values, pa.int32()).cast(pa.date32())
        else:
            columns[f"c{i}"] = pa.array(values, arrow_type)
    columns["text"] = pa.array([str(i) for i in range(rows)], pa.string())
    return pa.table(columns)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    table=_tables(),
    compression=st.sampled_from(["uncompressed", "zlib", "zstd"]),
    block=st.sampled_from([None, 65536]),
)
def test_pyarrow_written_files(table: pa.Table, compression: str, block: int | None) -> None:
    """Row counts and integer bounds equal the rows' own, every compression."""
    options: dict[str, Any] = {"compression": compression}
    if block is not None:
        options.update(compression_block_size=block, stripe_size=1024, batch_size=16)
    data = _orc_bytes(table, **options)
    stats = read_stats(data)
    read = orc.ORCFile(pa.BufferReader(data)).read()
    assert stats.rows == read.num_rows == table.num_rows
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "t.orc")
        with open(path, "wb") as fh:
            fh.write(data)
        assert read_file_stats(path) == stats
    assert set(stats.columns) == {n for n in table.column_names if n != "text"}
    for name, found in stats.columns.items():
        assert (found.values, found.has_null, found.minimum, found.maximum) == _expected(
            read.column(name)
        ), name


@pytest.mark.spark
def test_spark_written_files(spark: Any, tmp_path: Any) -> None:
    """Files Spark's ORC writer wrote (zstd, its default) give each file's bounds."""
    from pyspark.sql import functions as F

    longs = [-(2**63), 2**63 - 1, None, 0, -5, 7, None] * 40
    dates = [dt.date(1, 1, 1), dt.date(9999, 12, 31), None, dt.date(1970, 1, 1)] * 70
    frame = spark.createDataFrame(
        [(longs[i], dates[i], i % 3) for i in range(len(longs))],
        "key bigint, day date, bucket int",
    )
    frame = frame.unionByName(
        spark.createDataFrame([(None, None, 9)], "key bigint, day date, bucket int")
    )
    out = str(tmp_path / "orc")
    frame.repartition(4, F.col("bucket")).write.orc(out)
    files = [f for f in sorted(os.listdir(out)) if f.endswith(".orc")]
    assert files
    seen = 0
    for name in files:
        with open(os.path.join(out, name), "rb") as fh:
            data = fh.read()
        stats = read_stats(data)
        read = orc.ORCFile(pa.BufferReader(data)).read()
        seen += stats.rows
        assert stats.rows == read.num_rows
        assert {"key", "day", "bucket"} <= set(stats.columns) or read.num_rows == 0
        for column in ("key", "day", "bucket"):
            if column in stats.columns:
                found = stats.columns[column]
                got = (found.values, found.has_null, found.minimum, found.maximum)
                assert got == _expected(read.column(column)), (name, column)
    assert seen == frame.count()


def test_bad_bytes_raise() -> None:
    """Bytes that are no readable ORC file raise OrcFooterError, never a wrong answer."""
    good = _orc_bytes(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), compression="zstd")
    with pytest.raises(OrcFooterError, match="not an ORC file"):
        read_stats(b"PAR1" + good[4:])
    with pytest.raises(OrcFooterError):
        read_stats(good[:-3] + good[-1:])
    with pytest.raises(OrcFooterError):
        read_stats(good[:2])
    snappy = _orc_bytes(pa.table({"k": pa.array([1], pa.int64())}), compression="snappy")
    with pytest.raises(OrcFooterError, match="compression kind 2"):
        read_stats(snappy)


def test_strings_and_floats_are_not_read() -> None:
    """Columns whose ORC bounds are not exact (text, floating point) are left out."""
    table = pa.table(
        {
            "s": pa.array(["b", "a"], pa.string()),
            "d": pa.array([float("nan"), 1.0], pa.float64()),
            "k": pa.array([3, None], pa.int64()),
        }
    )
    stats = read_stats(_orc_bytes(table))
    assert list(stats.columns) == ["k"]
    assert (stats.columns["k"].minimum, stats.columns["k"].maximum) == (3, 3)


def test_file_footer_larger_than_the_first_read(tmp_path: Any) -> None:
    """A footer longer than the tail read at first is read in full from the file."""
    table = pa.table({f"c{i}": pa.array([i, -i, None], pa.int64()) for i in range(3000)})
    data = _orc_bytes(table, compression="uncompressed")
    path = tmp_path / "wide.orc"
    path.write_bytes(data)
    found = read_file_stats(str(path))
    assert found == read_stats(data)
    assert len(found.columns) == 3000 and found.rows == 3
    assert (found.columns["c2999"].minimum, found.columns["c2999"].maximum) == (-2999, 2999)
    (tmp_path / "short.orc").write_bytes(data[:-10])
    with pytest.raises(OrcFooterError, match=r"short\.orc"):
        read_file_stats(str(tmp_path / "short.orc"))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _hand_made(rows: bool, values: bool) -> bytes:
    """An uncompressed ORC tail of one ``long`` column ``k`` (3 rows, -2..5), fields optional."""
    root = _field(1, 12) + _field(2, 1) + _field(3, b"k")
    long_type = _field(1, 4)
    bounds = _field(1, 3) + _field(2, 10)  # zigzag of -2 and 5
    column = (_field(1, 3) if values else b"") + _field(2, bounds)
    footer = (
        _field(4, root)
        + _field(4, long_type)
        + _field(7, _field(1, 3))
        + _field(7, column)
        + (_field(6, 3) if rows else b"")
    )
    postscript = _field(1, len(footer)) + _field(2, 0) + _field(8000, b"ORC")
    return b"ORC" + footer + postscript + bytes([len(postscript)])


def test_missing_counts_raise() -> None:
    """A footer without its row count or a column without its count of values is unreadable, not empty."""
    found = read_stats(_hand_made(rows=True, values=True))
    assert found.rows == 3
    assert found.columns["k"] == ColumnStats("k", "long", 3, False, -2, 5)
    with pytest.raises(OrcFooterError, match="row count is missing"):
        read_stats(_hand_made(rows=False, values=True))
    with pytest.raises(OrcFooterError, match="count of values is missing"):
        read_stats(_hand_made(rows=True, values=False))
