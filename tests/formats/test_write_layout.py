"""Delta and Iceberg tables keep their file layout across writes, and explain counts right.

A table created with ``file_groups``/``bucket_column`` remembers the layout in
a table property: an upsert that does not repeat the options rewrites only
the files of the buckets it touches and the table keeps its file count; a
different layout is refused with the table untouched. The ``range`` rule
gives contiguous, non-overlapping key ranges per file. Truth comes from the
formats' own libraries (deltalake, pyiceberg) and from the Parquet footers.
"""

from __future__ import annotations

import itertools
import os
import random
import warnings
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from lakesieve.errors import WriteError
from lakesieve.files.bucket_layout import BucketLayout, LayoutWarning
from lakesieve.model import WriteOptions
from lakesieve.plugins.iceberg.identify import latest_metadata_file
from lakesieve.table import write
from pyiceberg.table import StaticTable

pytestmark = pytest.mark.spark

BUCKETS = 8
SCHEMA = "id bigint, v bigint, s string"
FORMATS = ("delta", "iceberg")


def _rows(ids: list[int], tag: str) -> list[tuple[int, int, str]]:
    return [(i, i * 7, f"{tag}-{i}") for i in ids]


def _frame(spark: Any, rows: list[tuple[int, int, str]], partitions: int = 2) -> Any:
    return spark.createDataFrame(rows, SCHEMA).repartition(partitions)


def _shuffled(n: int, seed: int = 7) -> list[int]:
    ids = list(range(n))
    random.Random(seed).shuffle(ids)
    return ids


def _path(tmp_path: Path, fmt: str) -> Path:
    # an Iceberg table's catalog lives beside it: one folder per table
    return tmp_path / fmt / "t"


def _native_files(path: Path, fmt: str) -> dict[str, str]:
    """Data files of the latest version, by the format's library: relative path -> absolute path."""
    root = os.path.abspath(path)
    if fmt == "delta":
        uris = DeltaTable(str(path)).file_uris()
    else:
        found = latest_metadata_file(str(path))
        assert found is not None
        tasks = list(StaticTable.from_metadata(found).scan().plan_files())
        assert all(not t.delete_files for t in tasks)
        uris = [t.file.file_path for t in tasks]
    out = {}
    for uri in uris:
        local = uri.removeprefix("file://")
        out[os.path.relpath(local, root)] = local
    return out


def _native_rows(path: Path, fmt: str) -> list[tuple[Any, ...]]:
    """Every row of the latest version read by the format's library, sorted."""
    if fmt == "delta":
        table = pa.table(DeltaTable(str(path)).to_pyarrow_dataset().to_table())
    else:
        found = latest_metadata_file(str(path))
        assert found is not None
        table = StaticTable.from_metadata(found).scan().to_arrow()
    cols = [table.column(n).to_pylist() for n in ("id", "v", "s")]
    return sorted(zip(*cols, strict=True))


def _version(path: Path, fmt: str) -> str:
    if fmt == "delta":
        return str(DeltaTable(str(path)).version())
    found = latest_metadata_file(str(path))
    assert found is not None
    return found


def _footer_range(local: str) -> tuple[int, int]:
    """Min and max ``id`` of a data file, from its Parquet footer's statistics."""
    meta = pq.read_metadata(local)
    index = meta.schema.to_arrow_schema().get_field_index("id")
    lows, highs = [], []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        assert stats is not None and stats.has_min_max
        lows.append(stats.min)
        highs.append(stats.max)
    return min(lows), max(highs)


def _file_ids(local: str) -> set[int]:
    return set(pq.read_table(local, columns=["id"]).column("id").to_pylist())


def _create(spark: Any, path: Path, fmt: str, ids: list[int], **layout: Any) -> None:
    write(
        path,
        _frame(spark, _rows(ids, "a"), partitions=3),
        format=fmt,
        spark=spark,
        options=WriteOptions(mode="bulk_insert", record_key=("id",), **layout),
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_without_options_keeps_buckets_and_rewrites_only_touched_ones(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    path = _path(tmp_path, fmt)
    ids = _shuffled(400)
    _create(spark, path, fmt, ids, bucket_column="id", file_groups=BUCKETS)
    before = _native_files(path, fmt)
    assert len(before) == BUCKETS
    # updates and inserts in buckets 1 and 3 only (id mod 8)
    updates = [i for i in ids if i % BUCKETS in (1, 3)][:30]
    inserts = [401, 403, 409, 411]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(
            path,
            _frame(spark, _rows(updates + inserts, "u")),
            spark=spark,
            options=WriteOptions(mode="upsert"),
        )
    assert not [w for w in caught if issubclass(w.category, LayoutWarning)]
    after = _native_files(path, fmt)
    assert len(after) == BUCKETS, "the table keeps one file per bucket"
    removed, added = set(before) - set(after), set(after) - set(before)
    assert len(removed) == 2 and len(added) == 2, "only the files of buckets 1 and 3 changed"
    assert {b % BUCKETS for f in removed for b in _file_ids(before[f])} == {1, 3}
    for local in after.values():
        assert len({i % BUCKETS for i in _file_ids(local)}) == 1, "one bucket per file"
    truth = {r[0]: r for r in _rows(ids, "a")}
    truth.update({r[0]: r for r in _rows(updates + inserts, "u")})
    assert _native_rows(path, fmt) == sorted(truth.values())


@pytest.mark.parametrize("fmt", FORMATS)
def test_range_rule_gives_files_of_separate_key_ranges(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    path = _path(tmp_path, fmt)
    ids = _shuffled(400, seed=11)
    _create(spark, path, fmt, ids, bucket_column="id", file_groups=BUCKETS, bucket_rule="range")
    before = _native_files(path, fmt)
    assert len(before) == BUCKETS
    # an upsert that names no layout: updates at the low end, inserts past the top
    updates, inserts = list(range(0, 20)), list(range(1000, 1010))
    write(
        path,
        _frame(spark, _rows(updates + inserts, "u")),
        spark=spark,
        options=WriteOptions(mode="upsert"),
    )
    after = _native_files(path, fmt)
    assert len(after) == BUCKETS
    assert len(set(before) - set(after)) == 2, "only the lowest and the highest range changed"
    ranges = sorted(_footer_range(local) for local in after.values())
    for (_, high), (low, _) in itertools.pairwise(ranges):
        assert high < low, f"key ranges of two files overlap: {ranges}"
    assert ranges[0][0] == 0 and ranges[-1][1] == 1009
    truth = {r[0]: r for r in _rows(ids, "a")}
    truth.update({r[0]: r for r in _rows(updates + inserts, "u")})
    assert _native_rows(path, fmt) == sorted(truth.values())
    # the rule that placed each file's keys is the one the layout documents
    table = lakesieve.open(path)
    prop = "lakesieve.bucketLayout" if fmt == "delta" else "lakesieve.bucket-layout"
    if fmt == "delta":
        text = DeltaTable(str(path)).metadata().configuration[prop]
    else:
        found = latest_metadata_file(str(path))
        assert found is not None
        text = StaticTable.from_metadata(found).metadata.properties[prop]
    layout = BucketLayout.from_text(text, prop)
    assert layout.rule == "range" and len(layout.bounds) == BUCKETS - 1
    for local in after.values():
        assert len({layout.bucket(i) for i in _file_ids(local)}) == 1
    assert table.format == fmt


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_different_layout_is_refused_and_the_table_left_alone(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    path = _path(tmp_path, fmt)
    _create(spark, path, fmt, list(range(100)), bucket_column="id", file_groups=4)
    version, files = _version(path, fmt), _native_files(path, fmt)
    frame = _frame(spark, _rows([1, 2, 500], "u"))
    refused = [
        (WriteOptions(mode="upsert", bucket_column="id", file_groups=8), "4 buckets of id mod 4"),
        (WriteOptions(mode="upsert", bucket_column="v", file_groups=4), "differs from the table"),
        (WriteOptions(mode="upsert", bucket_rule="range"), "needs bucket_column"),
        (
            WriteOptions(mode="append", bucket_column="id", file_groups=4, bucket_rule="range"),
            "differs from the table's layout",
        ),
    ]
    for options, words in refused:
        with pytest.raises(WriteError, match=words) as err:
            write(path, frame, spark=spark, options=options)
        assert "\n" not in str(err.value)
        assert _version(path, fmt) == version and _native_files(path, fmt) == files
    # naming the table's own layout is fine
    write(
        path,
        frame,
        spark=spark,
        options=WriteOptions(mode="upsert", bucket_column="id", file_groups=4, bucket_rule="mod"),
    )
    assert len(_native_files(path, fmt)) == 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_write_without_layout_warns_once(spark: Any, tmp_path: Path, fmt: str) -> None:
    path = _path(tmp_path, fmt)
    with pytest.warns(LayoutWarning) as caught:
        write(
            path,
            _frame(spark, _rows(list(range(50)), "a"), partitions=3),
            format=fmt,
            spark=spark,
            options=WriteOptions(mode="bulk_insert"),
        )
    found = [w for w in caught if issubclass(w.category, LayoutWarning)]
    assert len(found) == 1 and "little to skip" in str(found[0].message)


def test_range_rule_is_refused_on_a_table_with_data(spark: Any, tmp_path: Path) -> None:
    path = _path(tmp_path, "delta")
    _create(spark, path, "delta", list(range(40)))
    version = _version(path, "delta")
    with pytest.raises(WriteError, match="fixes its key ranges"):
        write(
            path,
            _frame(spark, _rows([1, 2], "u")),
            spark=spark,
            options=WriteOptions(
                mode="upsert", bucket_column="id", file_groups=4, bucket_rule="range"
            ),
        )
    assert _version(path, "delta") == version
