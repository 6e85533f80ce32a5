"""lakesieve's Hudi copy-on-write writer, checked by reading every instant back with hudi-rs.

Each test writes real tables with real Spark (``local[2]``) and compares what
hudi-rs (``hudi`` 0.5.0) returns, at the latest instant and by time travel at
every earlier one, with a plain-Python model of the expected rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import WriteError
from lakesieve.model import Instant, WriteOptions
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer import write_table
from lakesieve.plugins.hudi.writer.commit import next_instant
from lakesieve.plugins.hudi.writer.plan import assign_inserts, shuffle_keys, spark_int_hash
from lakesieve.plugins.hudi.writer.schema import META_COLUMNS, avro_schema
from lakesieve.plugins.hudi.writer.timeline import Slice
from pyspark.sql import functions as F
from pyspark.sql import types as T

from tests.conftest import SHARED_FIXTURES, unzip_fixture

pytestmark = pytest.mark.spark

SCHEMA = "id long, name string, p int, v long, b int"
DATA = ("id", "name", "p", "v", "b")
BASE_FILE = re.compile(
    r"^(?P<fid>[0-9a-f-]+-0)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{17})\.parquet$"
)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def hudi_rows(
    path: str | Path, as_of: str | None = None, columns: Sequence[str] = DATA
) -> list[tuple[Any, ...]]:
    """Rows hudi-rs returns (latest, or as of an instant), as sorted tuples of ``columns``."""
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    if not batches or not sum(b.num_rows for b in batches):
        return []
    data = pa.Table.from_batches(batches).select(list(columns)).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


def hudi_slices(path: str | Path, as_of: str | None = None) -> list[tuple[str, str, str]]:
    """``(partition path, file id, base file name)`` of every file slice hudi-rs sees."""
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    return sorted(
        (s.partition_path, s.file_id, s.base_file_name) for s in table.get_file_slices(options)
    )


def hudi_commits(path: str | Path) -> list[str]:
    """Completed commit instants as hudi-rs lists them."""
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    return [i.timestamp for i in table.get_timeline().get_completed_commits()]


def tree(path: str | Path) -> dict[str, str]:
    """Every file under ``path`` with a digest of its content (empty when missing)."""
    out: dict[str, str] = {}
    root = Path(path)
    if not root.exists():
        return out
    for file in root.rglob("*"):
        if file.is_file():
            out[str(file.relative_to(root))] = hashlib.sha1(file.read_bytes()).hexdigest()
    return out


def commit_json(path: str | Path, instant: str) -> dict[str, Any]:
    """The completed commit metadata of ``instant``."""
    return json.loads((Path(path) / ".hoodie" / f"{instant}.commit").read_text())


def rows_df(spark: Any, rows: Iterable[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    """A Spark DataFrame of ``rows``."""
    return spark.createDataFrame(list(rows), schema)


class Model:
    """The rows a table should hold, keyed by Hudi's record identity.

    Identity is (partition value, record key) — the index is not global. In a
    bucketed test table the bucket column is a function of ``id``, so it
    adds nothing to the identity.
    """

    def __init__(self, key: Sequence[str], partitioned: bool) -> None:
        self.key = tuple(key)
        self.partitioned = partitioned
        self.rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def ident(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        values = dict(zip(DATA, row, strict=True))
        part = values["p"] if self.partitioned else None
        return (part, *[values[k] for k in self.key])

    def insert(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for row in rows:
            assert self.ident(row) not in self.rows, "tests insert only new keys"
            self.rows[self.ident(row)] = row

    def upsert(self, rows: Iterable[tuple[Any, ...]]) -> None:
        best: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for row in rows:
            ident = self.ident(row)
            if ident not in best or row[3] >= best[ident][3]:
                best[ident] = row
        self.rows.update(best)

    def delete(self, keys: Iterable[dict[str, Any]]) -> None:
        for key in keys:
            for ident in list(self.rows):
                row = dict(zip(DATA, self.rows[ident], strict=True))
                if all(row[k] == v for k, v in key.items()):
                    del self.rows[ident]

    def snapshot(self) -> list[tuple[Any, ...]]:
        return sorted(self.rows.values())


def row(i: int, p: int = 0, v: int = 0, name: str | None = None) -> tuple[Any, ...]:
    """One row of the test schema; the bucket column ``b`` is ``id`` itself."""
    return (i, name if name is not None else f"n{i}", p, v, i)


# ---------------------------------------------------------------------------
# pure functions
# ---------------------------------------------------------------------------


def test_next_instant_is_strictly_increasing() -> None:
    now = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
    assert next_instant([], now) == "20260102030405678"
    assert next_instant(["20260102030405678"], now) == "20260102030405679"
    assert next_instant(["20260102030405999"], now) == "20260102030406000"
    assert next_instant(["20251231235959999"], now) == "20260102030405678"


def test_properties_roundtrip_and_checksum() -> None:
    props = {"a.b": "x:y=z#!", "hoodie.table.create.schema": '{"type":"record"}', "k": " lead"}
    assert cfg.parse_properties(cfg.format_properties(props)) == props
    assert cfg.table_checksum("v6_nonpartitioned") == 1363530505


def test_assign_inserts_fills_small_groups_first() -> None:
    small = Slice("p", "f1", "p/f1_0-0-0_1.parquet", "1", size=1000, records=10)
    big = Slice("p", "f2", "p/f2_0-0-0_1.parquet", "1", size=10_000, records=100)
    plan = assign_inserts({"p": 50}, {"p": [(0, small), (1, big)]}, 100, 5000, 3000)
    assert plan == {"p": [(0, 20), (None, 30)]}
    assert assign_inserts({"q": 7}, {}, 100, 5000, 300_000) == {"q": [(None, 7)]}


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    old_keys=st.lists(st.integers(0, 30), unique=True, max_size=20),
    new_keys=st.lists(st.integers(0, 40), unique=True, max_size=20),
)
def test_an_upsert_replaces_records_where_they_stand(
    old_keys: list[int], new_keys: list[int]
) -> None:
    """As Apache Hudi's merge handle writes a base file: records in place, then the inserts."""
    from lakesieve.plugins.hudi.writer.task import RECORD_KEY, merged_in_place

    def rows(keys: list[int], version: str) -> pa.Table:
        return pa.table(
            {
                RECORD_KEY: pa.array([str(k) for k in keys], pa.string()),
                "v": pa.array([version] * len(keys), pa.string()),
            }
        )

    old, new = rows(old_keys, "old"), rows(new_keys, "new")
    is_update = pa.chunked_array([pa.array([k in old_keys for k in new_keys], pa.bool_())])
    merged = merged_in_place(old, new, is_update).to_pylist()
    expected = [{RECORD_KEY: str(k), "v": "new" if k in new_keys else "old"} for k in old_keys]
    expected += [{RECORD_KEY: str(k), "v": "new"} for k in new_keys if k not in old_keys]
    assert merged == expected


def test_spark_hash_and_shuffle_keys_match_spark(spark: Any) -> None:
    values = [*range(-50, 50), 2**31 - 1, -(2**31)]
    df = spark.createDataFrame([(v,) for v in values], "v int")
    expected = [r[0] for r in df.selectExpr("hash(v)").collect()]
    assert spark_int_hash(np.array(values)).tolist() == expected
    keys = shuffle_keys(13)
    placed = (
        spark.createDataFrame([(k,) for k in keys], "k int")
        .repartition(13, "k")
        .select(F.spark_partition_id().alias("task"), "k")
        .collect()
    )
    assert sorted((r["task"], r["k"]) for r in placed) == [(t, keys[t]) for t in range(13)]


@pytest.mark.skipif(not SHARED_FIXTURES.is_dir(), reason="Hudi fixtures not available")
def test_avro_schema_matches_a_table_written_by_hudi(tmp_path: Path) -> None:
    root = unzip_fixture(SHARED_FIXTURES / "sample_table_cow_v6_nonpartitioned.zip", tmp_path)
    props = cfg.parse_properties((root / ".hoodie" / "hoodie.properties").read_bytes())
    assert int(props[cfg.CHECKSUM]) == cfg.table_checksum(props[cfg.NAME])
    latest = sorted((root / ".hoodie").glob("*.commit"))[-1]
    expected = json.loads(json.loads(latest.read_text())["extraMetadata"]["schema"])
    inner = T.StructType(
        [
            T.StructField("arr_struct_f1", T.StringType()),
            T.StructField("arr_struct_f2", T.IntegerType()),
        ]
    )
    value = T.StructType(
        [
            T.StructField("map_field_value_struct_f1", T.DoubleType()),
            T.StructField("map_field_value_struct_f2", T.BooleanType()),
        ]
    )
    child = T.StructType(
        [
            T.StructField("child_field1", T.DoubleType()),
            T.StructField("child_field2", T.BooleanType()),
        ]
    )
    struct = T.StructType(
        [
            T.StructField("id", T.IntegerType()),
            T.StructField("name", T.StringType()),
            T.StructField("isActive", T.BooleanType()),
            T.StructField("byteField", T.ByteType()),
            T.StructField("shortField", T.ShortType()),
            T.StructField("intField", T.IntegerType()),
            T.StructField("longField", T.LongType()),
            T.StructField("floatField", T.FloatType()),
            T.StructField("doubleField", T.DoubleType()),
            T.StructField("decimalField", T.DecimalType(10, 5)),
            T.StructField("dateField", T.DateType()),
            T.StructField("timestampField", T.TimestampType()),
            T.StructField("binaryField", T.BinaryType()),
            T.StructField("arrayField", T.ArrayType(inner, True)),
            T.StructField("mapField", T.MapType(T.StringType(), value, True)),
            T.StructField(
                "structField",
                T.StructType(
                    [
                        T.StructField("field1", T.StringType()),
                        T.StructField("field2", T.IntegerType()),
                        T.StructField("child_struct", child),
                    ]
                ),
            ),
        ]
    )
    assert avro_schema(struct, props[cfg.NAME]) == expected


# ---------------------------------------------------------------------------
# the on-disk layout of a first commit
# ---------------------------------------------------------------------------


def test_first_commit_layout(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "trips"
    rows = [row(i, p=i % 2) for i in range(400)]
    inst = write_table(
        spark,
        str(path),
        rows_df(spark, rows),
        WriteOptions(
            mode="bulk_insert",
            record_key=("id",),
            partition_by=("p",),
            file_groups=3,
            precombine="v",
        ),
    )
    assert isinstance(inst, Instant) and inst.action == "commit" and inst.id == inst.sort_key
    assert re.fullmatch(r"\d{17}", inst.id)
    props = cfg.parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
    assert props[cfg.NAME] == "trips"
    assert props[cfg.TYPE] == "COPY_ON_WRITE" and props[cfg.VERSION] == "6"
    assert props[cfg.LAYOUT_VERSION] == "1" and props[cfg.BASE_FORMAT] == "PARQUET"
    assert props[cfg.RECORD_KEY] == "id" and props[cfg.PARTITION_FIELDS] == "p"
    assert props[cfg.PRECOMBINE] == "v" and props[cfg.KEYGEN] == cfg.SIMPLE_KEYGEN
    assert props[cfg.HIVE_STYLE] == "false" and props[cfg.POPULATE_META] == "true"
    assert props[cfg.ARCHIVE_FOLDER] == "archived"
    assert int(props[cfg.CHECKSUM]) == cfg.table_checksum("trips")

    hoodie = path / ".hoodie"
    assert (hoodie / f"{inst.id}.commit.requested").read_bytes() == b""
    assert (
        json.loads((hoodie / f"{inst.id}.inflight").read_text())["operationType"] == "BULK_INSERT"
    )
    meta = commit_json(path, inst.id)
    assert meta["operationType"] == "BULK_INSERT" and meta["compacted"] is False
    schema = json.loads(meta["extraMetadata"]["schema"])
    assert schema["name"] == "trips_record" and [f["name"] for f in schema["fields"]] == list(DATA)
    assert set(meta["partitionToWriteStats"]) == {"0", "1"}
    assert not list((hoodie / ".temp").rglob("*")), "markers are removed after the commit"
    for partition, stats in meta["partitionToWriteStats"].items():
        assert len(stats) == 3, "file_groups new file groups per partition"
        assert (path / partition / ".hoodie_partition_metadata").read_text().splitlines()[2:] == [
            f"commitTime={inst.id}",
            "partitionDepth=1",
        ]
        for stat in stats:
            name = stat["path"].split("/")[-1]
            match = BASE_FILE.match(name)
            assert match and match["fid"] == stat["fileId"] and match["instant"] == inst.id
            assert stat["path"] == f"{partition}/{name}" and stat["partitionPath"] == partition
            assert stat["prevCommit"] == "null" and stat["numWrites"] == stat["numInserts"] > 0
            assert stat["numDeletes"] == stat["numUpdateWrites"] == stat["totalWriteErrors"] == 0
            assert (
                stat["fileSizeInBytes"]
                == stat["totalWriteBytes"]
                == (path / stat["path"]).stat().st_size
            )
            table = pq.read_table(path / stat["path"])
            assert table.column_names == [*META_COLUMNS, *DATA]
            first = table.slice(0, 1).to_pylist()[0]
            assert first["_hoodie_commit_time"] == inst.id
            assert re.fullmatch(rf"{inst.id}_\d+_\d+", first["_hoodie_commit_seqno"])
            assert first["_hoodie_record_key"] == str(first["id"])
            assert first["_hoodie_partition_path"] == partition == str(first["p"])
            assert first["_hoodie_file_name"] == name
    assert hudi_rows(path) == sorted(rows)
    assert hudi_commits(path) == [inst.id]


# ---------------------------------------------------------------------------
# modes over several commits
# ---------------------------------------------------------------------------


def test_modes_over_commits_with_time_travel(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",), "partition_by": ("p",), "precombine": "v"}
    model = Model(("id",), partitioned=True)
    history: list[tuple[str, list[tuple[Any, ...]]]] = []

    def commit(mode: str, df: Any, **extra: Any) -> Instant:
        inst = write_table(spark, path, df, WriteOptions(mode=mode, **opts, **extra))
        history.append((inst.id, model.snapshot()))
        return inst

    first = [row(i, p=i % 3) for i in range(30)]
    model.insert(first)
    c1 = commit("bulk_insert", rows_df(spark, first), file_groups=2)
    second = [row(i, p=i % 3) for i in range(30, 40)]
    model.insert(second)
    c2 = commit("insert", rows_df(spark, second))
    # updates (one key twice: largest v wins), a new key, and a known key in another partition
    upserts = [
        row(1, p=1, v=5, name="u1"),
        row(1, p=1, v=9, name="u1b"),
        row(2, p=2, v=1, name="u2"),
        row(100, p=0),
        row(3, p=1, v=1, name="moved"),
    ]
    model.upsert(upserts)
    c3 = commit("upsert", rows_df(spark, upserts))
    # delete by key and partition, then by key only (every partition holding it)
    model.delete([{"id": 4, "p": 1}, {"id": 3, "p": 0}])
    c4 = commit("delete", spark.createDataFrame([(4, 1), (3, 0)], "id long, p int"))
    model.delete([{"id": 5}, {"id": 3}])
    c5 = commit("delete", spark.createDataFrame([(5,), (3,)], "id long"))

    assert hudi_commits(path) == [c.id for c in (c1, c2, c3, c4, c5)]
    for instant, expected in history:
        assert hudi_rows(path, as_of=instant) == expected, instant
    assert hudi_rows(path) == model.snapshot()

    # every file group keeps its id across slices; old slices stay on disk for time travel
    meta3 = commit_json(path, c3.id)
    assert meta3["operationType"] == "UPSERT"
    stats = [s for v in meta3["partitionToWriteStats"].values() for s in v]
    assert sum(s["numUpdateWrites"] for s in stats) == 2  # ids 1 and 2
    assert sum(s["numInserts"] for s in stats) == 2  # id 100 and (3, p=1)
    for stat in stats:
        if stat["prevCommit"] != "null":
            assert stat["prevCommit"] in (c1.id, c2.id)
            old = [
                f
                for f in os.listdir(Path(path) / stat["partitionPath"])
                if f.startswith(stat["fileId"])
            ]
            assert len(old) >= 2
    meta4 = commit_json(path, c4.id)
    assert meta4["operationType"] == "DELETE"
    assert sum(s["numDeletes"] for v in meta4["partitionToWriteStats"].values() for s in v) == 2


def test_deleting_every_row_of_a_file_group_leaves_an_empty_slice(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",)}
    c1 = write_table(
        spark, path, rows_df(spark, [row(i) for i in range(5)]), WriteOptions(mode="insert", **opts)
    )
    c2 = write_table(
        spark,
        path,
        spark.createDataFrame([(i,) for i in range(5)], "id long"),
        WriteOptions(mode="delete", **opts),
    )
    assert hudi_rows(path) == []
    assert hudi_rows(path, as_of=c1.id) == sorted(row(i) for i in range(5))
    ((_, fid, name),) = hudi_slices(path)
    assert name.endswith(f"_{c2.id}.parquet") and pq.read_metadata(Path(path) / name).num_rows == 0
    assert hudi_slices(path, as_of=c1.id)[0][1] == fid
    # deleting keys that do not exist is an empty commit
    c3 = write_table(
        spark, path, spark.createDataFrame([(99,)], "id long"), WriteOptions(mode="delete", **opts)
    )
    assert commit_json(path, c3.id)["partitionToWriteStats"] == {}
    assert hudi_commits(path)[-1] == c3.id and hudi_rows(path) == []


def test_composite_key_hive_style_partitions(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = {
        "record_key": ("id", "name"),
        "partition_by": ("p", "b"),
        "extra": {"hive_style_partitioning": "true"},
    }
    rows = [row(i, p=i % 2) for i in range(6)]
    c1 = write_table(spark, str(path), rows_df(spark, rows), WriteOptions(mode="insert", **opts))
    props = cfg.parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
    assert props[cfg.KEYGEN] == cfg.COMPLEX_KEYGEN and props[cfg.HIVE_STYLE] == "true"
    assert props[cfg.PARTITION_FIELDS] == "p,b" and props[cfg.RECORD_KEY] == "id,name"
    meta = commit_json(path, c1.id)
    assert set(meta["partitionToWriteStats"]) == {f"p={i % 2}/b={i}" for i in range(6)}
    assert (
        (path / "p=1" / "b=3" / ".hoodie_partition_metadata")
        .read_text()
        .endswith("partitionDepth=2\n")
    )
    got = hudi_rows(path, columns=("_hoodie_record_key", "_hoodie_partition_path", "id"))
    assert got == sorted((f"id:{i},name:n{i}", f"p={i % 2}/b={i}", i) for i in range(6))
    # an upsert of (id, name) changes v; a new name for the same id is a new record
    write_table(
        spark,
        str(path),
        rows_df(spark, [row(1, p=1, v=7), row(1, p=1, name="other")]),
        WriteOptions(mode="upsert", **opts),
    )
    expected = sorted(
        [r for r in rows if r[0] != 1] + [row(1, p=1, v=7), row(1, p=1, name="other")]
    )
    assert hudi_rows(path) == expected
    assert hudi_rows(path, as_of=c1.id) == sorted(rows)


def test_nonpartitioned_tables_use_the_nonpartitioned_key_generator(
    spark: Any, tmp_path: Path
) -> None:
    simple, composite = tmp_path / "s", tmp_path / "c"
    write_table(
        spark,
        str(simple),
        rows_df(spark, [row(1)]),
        WriteOptions(mode="insert", record_key=("id",)),
    )
    write_table(
        spark,
        str(composite),
        rows_df(spark, [row(1)]),
        WriteOptions(mode="insert", record_key=("id", "name")),
    )
    for path, key in ((simple, "1"), (composite, "id:1,name:n1")):
        props = cfg.parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
        assert props[cfg.KEYGEN] == cfg.NONPARTITIONED_KEYGEN and cfg.PARTITION_FIELDS not in props
        assert (path / ".hoodie_partition_metadata").read_text().endswith("partitionDepth=0\n")
        assert hudi_rows(path, columns=("_hoodie_record_key", "_hoodie_partition_path")) == [
            (key, "")
        ]


def test_precombine_keeps_the_largest_value_per_key(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    batch = [row(1, v=3, name="a"), row(1, v=8, name="b"), row(1, v=5, name="c"), row(2, v=1)]
    write_table(
        spark,
        path,
        rows_df(spark, batch),
        WriteOptions(mode="bulk_insert", record_key=("id",), precombine="v"),
    )
    assert hudi_rows(path) == [row(1, v=8, name="b"), row(2, v=1)]
    # without a precombine field one of the duplicates is kept
    other = str(tmp_path / "u")
    write_table(
        spark, other, rows_df(spark, batch), WriteOptions(mode="upsert", record_key=("id",))
    )
    got = hudi_rows(other)
    assert len(got) == 2 and got[0][0] == 1 and got[0] in batch[:3]


def test_small_file_handling_packs_inserts_into_existing_groups(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",), "partition_by": ("p",)}
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(20)]),
        WriteOptions(mode="insert", **opts),
    )
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(20, 40)]),
        WriteOptions(mode="insert", **opts),
    )
    c3 = write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(40, 45)]),
        WriteOptions(mode="upsert", **opts),
    )
    slices = hudi_slices(path)
    assert len(slices) == 1 and slices[0][2].endswith(f"_{c3.id}.parquet")
    assert hudi_rows(path) == sorted(row(i) for i in range(45))
    assert commit_json(path, c3.id)["partitionToWriteStats"]["0"][0]["numInserts"] == 5
    # a group at the size limit takes no more inserts: a new group opens
    size = (Path(path) / "0" / slices[0][2]).stat().st_size
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(45, 50)]),
        WriteOptions(mode="insert", max_file_size_bytes=size, **opts),
    )
    assert len({s[1] for s in hudi_slices(path)}) == 2
    # small_file_limit_bytes=0 turns packing off
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(50, 55)]),
        WriteOptions(mode="insert", small_file_limit_bytes=0, **opts),
    )
    assert len({s[1] for s in hudi_slices(path)}) == 3
    assert hudi_rows(path) == sorted(row(i) for i in range(55))


def test_bulk_insert_never_packs_into_existing_groups(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",)}
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(10)]),
        WriteOptions(mode="bulk_insert", **opts),
    )
    write_table(
        spark,
        path,
        rows_df(spark, [row(i) for i in range(10, 20)]),
        WriteOptions(mode="bulk_insert", **opts),
    )
    assert len(hudi_slices(path)) == 2
    assert hudi_rows(path) == sorted(row(i) for i in range(20))


# ---------------------------------------------------------------------------
# bucketed tables
# ---------------------------------------------------------------------------


def bucket_id(bucket: int) -> str:
    return f"{bucket:08d}-0000-0000-0000-000000000000-0"


def test_bucketed_writes_keep_n_file_groups(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",), "bucket_column": "b", "file_groups": 4, "precombine": "v"}
    model = Model(("id",), partitioned=False)
    history = []
    steps: list[tuple[str, list[tuple[Any, ...]]]] = [
        ("bulk_insert", [row(i) for i in range(0, 12)]),
        ("insert", [row(i) for i in (12, 13, -3)]),
        ("upsert", [row(1, v=4), row(2, v=4), row(20)]),
        ("delete", [row(4), row(8)]),
    ]
    for mode, rows in steps:
        if mode == "delete":
            model.delete([{"id": r[0]} for r in rows])
            df = spark.createDataFrame([(r[0], r[4]) for r in rows], "id long, b int")
        else:
            model.upsert(rows) if mode == "upsert" else model.insert(rows)
            df = rows_df(spark, rows)
        inst = write_table(spark, path, df, WriteOptions(mode=mode, **opts))
        history.append((inst.id, model.snapshot()))
    for instant, expected in history:
        assert hudi_rows(path, as_of=instant) == expected
    slices = hudi_slices(path)
    assert {s[1] for s in slices} == {bucket_id(b) for b in range(4)}
    rows = hudi_rows(path, columns=("id", "_hoodie_file_name"))
    assert all(name.startswith(bucket_id(i % 4)) for i, name in rows), "row in bucket id mod N"
    # the delete touched only bucket 0 (ids 4 and 8); an untouched bucket keeps its slice
    delete_meta = commit_json(path, history[-1][0])
    assert [s["fileId"] for s in delete_meta["partitionToWriteStats"][""]] == [bucket_id(0)]
    props = cfg.parse_properties((Path(path) / ".hoodie" / "hoodie.properties").read_bytes())
    assert props[cfg.BUCKET_FIELD] == "b" and props[cfg.BUCKET_COUNT] == "4"


def test_bucketed_partitioned_and_delete_without_bucket_column(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {"record_key": ("id",), "partition_by": ("p",), "bucket_column": "b", "file_groups": 3}
    rows = [row(i, p=i % 2) for i in range(12)]
    write_table(spark, path, rows_df(spark, rows), WriteOptions(mode="insert", **opts))
    write_table(
        spark,
        path,
        rows_df(spark, [row(12, p=0), row(0, p=0, v=9)]),
        WriteOptions(mode="upsert", **opts),
    )
    assert {(s[0], s[1]) for s in hudi_slices(path)} == {
        (str(p), bucket_id(b)) for p in range(2) for b in range(3)
    }
    # no bucket column in the delete: keys are looked up in every file group
    write_table(
        spark,
        path,
        spark.createDataFrame([(1,), (12,)], "id long"),
        WriteOptions(mode="delete", record_key=("id",)),
    )
    expected = sorted([r for r in rows if r[0] not in (0, 1)] + [row(0, p=0, v=9)])
    assert hudi_rows(path) == expected


@pytest.mark.long  # CI: bucketed commits in test_write_layout.py and the state machines
def test_sixteen_bucketed_commits_into_sixty_four_groups(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        mode="insert",
        record_key=("id", "name"),
        bucket_column="b",
        file_groups=64,
        small_file_limit_bytes=0,
    )
    instants = []
    for c in range(16):
        rows = [row(c * 128 + i) for i in range(128)]
        instants.append(write_table(spark, path, rows_df(spark, rows), opts).id)
    assert hudi_commits(path) == instants
    slices = hudi_slices(path)
    assert len(slices) == 64 and {s[1] for s in slices} == {bucket_id(b) for b in range(64)}
    assert all(s[2].endswith(f"_{instants[-1]}.parquet") for s in slices)
    for c in (0, 7, 15):
        assert hudi_rows(path, as_of=instants[c], columns=("id",)) == [
            (i,) for i in range((c + 1) * 128)
        ]


# ---------------------------------------------------------------------------
# types
# ---------------------------------------------------------------------------


def test_column_types_round_trip(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    schema = T.StructType(
        [
            T.StructField("id", T.IntegerType()),
            T.StructField("tiny", T.ByteType()),
            T.StructField("small", T.ShortType()),
            T.StructField("f", T.FloatType()),
            T.StructField("ok", T.BooleanType()),
            T.StructField("amount", T.DecimalType(15, 2)),
            T.StructField("day", T.DateType()),
            T.StructField("at", T.TimestampType()),
            T.StructField("raw", T.BinaryType()),
            T.StructField("tags", T.ArrayType(T.StringType())),
            T.StructField("attrs", T.MapType(T.StringType(), T.LongType())),
            T.StructField(
                "pt",
                T.StructType(
                    [T.StructField("x", T.DoubleType()), T.StructField("y", T.StringType())]
                ),
            ),
        ]
    )
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    rows = [
        (
            1,
            1,
            300,
            1.5,
            True,
            decimal.Decimal("12.34"),
            dt.date(2024, 1, 31),
            when,
            b"\x00\x01",
            ["a", "b"],
            {"k": 1},
            (1.0, "s"),
        ),
        (2, None, None, None, None, None, None, None, None, None, None, None),
    ]
    write_table(
        spark,
        path,
        spark.createDataFrame(rows, schema),
        WriteOptions(mode="insert", record_key=("id",), partition_by=("day",)),
    )
    table = HudiTableBuilder.from_base_uri(path).build()
    got = pa.Table.from_batches(table.read()).select(schema.names).sort_by("id").to_pylist()
    assert (
        got[0]["tiny"] == 1
        and got[0]["small"] == 300
        and got[0]["f"] == 1.5
        and got[0]["ok"] is True
    )
    assert got[0]["amount"] == decimal.Decimal("12.34") and got[0]["day"] == dt.date(2024, 1, 31)
    assert got[0]["at"].replace(tzinfo=None) == when and got[0]["raw"] == b"\x00\x01"
    assert (
        got[0]["tags"] == ["a", "b"]
        and dict(got[0]["attrs"]) == {"k": 1}
        and got[0]["pt"] == {"x": 1.0, "y": "s"}
    )
    assert all(v is None for k, v in got[1].items() if k != "id")
    assert {s[0] for s in hudi_slices(path)} == {"2024-01-31", "__HIVE_DEFAULT_PARTITION__"}


# ---------------------------------------------------------------------------
# bad input, failures and foreign folders
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def existing_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("existing") / "tbl")
    df = spark.createDataFrame([row(i, p=i % 2) for i in range(6)], SCHEMA)
    write_table(
        spark, path, df, WriteOptions(mode="insert", record_key=("id",), partition_by=("p",))
    )
    return path


BAD_EXISTING = [
    ({"mode": "merge"}, "mode"),
    ({"table_type": "mor"}, "table_type"),
    ({"record_key": ("name",)}, "record_key"),
    ({"partition_by": ("b",)}, "partition_by"),
    ({"bucket_column": "b", "file_groups": 2}, "bucket_column"),
    ({"file_groups": 0}, "file_groups"),
    ({"precombine": "nope"}, "nope"),
    ({"extra": {"hive_style_partitioning": "true"}}, "hive_style_partitioning"),
    ({"table_name": "other"}, "table_name"),
]


@pytest.mark.parametrize(("changes", "named"), BAD_EXISTING)
def test_bad_options_on_an_existing_table_change_nothing(
    spark: Any, existing_table: str, changes: dict[str, Any], named: str
) -> None:
    before = tree(existing_table)
    options = {"mode": "upsert", "record_key": ("id",), "partition_by": ("p",), **changes}
    with pytest.raises(WriteError) as err:
        write_table(spark, existing_table, rows_df(spark, [row(50)]), WriteOptions(**options))
    message = str(err.value)
    assert existing_table in message and named in message and "\n" not in message
    assert tree(existing_table) == before


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ("id long, name string, p int, v long", "b"),
        ("id long, name string, p int, v long, b int, extra int", "extra"),
        ("id long, name string, p int, v string, b int", "v"),
    ],
)
def test_schema_mismatch_changes_nothing(
    spark: Any, existing_table: str, schema: str, named: str
) -> None:
    before = tree(existing_table)
    width = len(schema.split(","))
    values = (60, "x", 0, 1, 60, 1)[:width] if "v string" not in schema else (60, "x", 0, "1", 60)
    with pytest.raises(WriteError, match=named) as err:
        write_table(
            spark,
            existing_table,
            spark.createDataFrame([values], schema),
            WriteOptions(mode="insert", record_key=("id",), partition_by=("p",)),
        )
    assert existing_table in str(err.value)
    assert tree(existing_table) == before


BAD_NEW = [
    ({"mode": "upsert", "record_key": ()}, "record_key"),
    ({"mode": "upsert", "record_key": ("missing",)}, "missing"),
    ({"mode": "upsert", "record_key": ("id",), "partition_by": ("zone",)}, "zone"),
    ({"mode": "upsert", "record_key": ("id",), "bucket_column": "zone", "file_groups": 2}, "zone"),
    ({"mode": "upsert", "record_key": ("id",), "bucket_column": "name", "file_groups": 2}, "name"),
    ({"mode": "upsert", "record_key": ("id",), "bucket_column": "b"}, "file_groups"),
    ({"mode": "bulk_insert", "record_key": ("id",), "file_groups": -1}, "file_groups"),
    ({"mode": "delete", "record_key": ("id",)}, "delete"),
    ({"mode": "insert", "record_key": ("id",), "max_file_size_bytes": 0}, "max_file_size_bytes"),
]


@pytest.mark.parametrize(("options", "named"), BAD_NEW)
def test_bad_options_on_a_new_table_write_nothing(
    spark: Any, tmp_path: Path, options: dict[str, Any], named: str
) -> None:
    path = str(tmp_path / "new")
    with pytest.raises(WriteError) as err:
        write_table(spark, path, rows_df(spark, [row(1)]), WriteOptions(**options))
    assert path in str(err.value) and named in str(err.value)
    assert tree(path) == {}


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "insert", "record_key": ("id",)},
        {"mode": "upsert", "record_key": ("id",), "bucket_column": "b", "file_groups": 2},
        {"mode": "bulk_insert", "record_key": ("id",), "partition_by": ("p",), "file_groups": 2},
    ],
)
def test_null_record_keys_are_refused_and_rolled_back(
    spark: Any, tmp_path: Path, options: dict[str, Any]
) -> None:
    path = str(tmp_path / "t")
    write_table(
        spark, path, rows_df(spark, [row(i, p=i % 2) for i in range(4)]), WriteOptions(**options)
    )
    before = tree(path)
    bad = rows_df(spark, [row(10), (None, "x", 0, 0, 11)])
    with pytest.raises(WriteError, match="null or empty record key") as err:
        write_table(spark, path, bad, WriteOptions(**options))
    assert path in str(err.value)
    assert tree(path) == before
    assert hudi_rows(path) == sorted(row(i, p=i % 2) for i in range(4))


def test_an_unfinished_write_is_rolled_back_before_the_next(spark: Any, tmp_path: Path) -> None:
    path = Path(tmp_path / "t")
    opts = WriteOptions(mode="insert", record_key=("id",))
    write_table(spark, str(path), rows_df(spark, [row(1)]), opts)
    ((_, fid, _name),) = hudi_slices(path)
    crashed = "20990101000000000"
    stray = f"{fid}_0-1-0_{crashed}.parquet"
    shutil.copy(next(path.glob("*.parquet")), path / stray)
    (path / ".hoodie" / f"{crashed}.commit.requested").write_bytes(b"")
    (path / ".hoodie" / f"{crashed}.inflight").write_text("{}")
    marker = path / ".hoodie" / ".temp" / crashed / f"{stray}.marker.MERGE"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")
    inst = write_table(spark, str(path), rows_df(spark, [row(2)]), opts)
    assert not (path / stray).exists() and not (path / ".hoodie" / ".temp" / crashed).exists()
    assert not list((path / ".hoodie").glob(f"{crashed}*"))
    assert inst.id < crashed or inst.id > crashed
    assert hudi_rows(path) == [row(1), row(2)]


def test_a_lakesieve_folder_in_the_table_is_ignored(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(mode="upsert", record_key=("id",), partition_by=("p",))
    write_table(spark, str(path), rows_df(spark, [row(1), row(2, p=1)]), opts)
    index = path / ".lakesieve" / "idx"
    index.mkdir(parents=True)
    (index / "00000.json").write_text("{}")
    (index / "base.arrow").write_bytes(b"ARROW1")
    inst = write_table(spark, str(path), rows_df(spark, [row(1, v=3), row(3, p=2)]), opts)
    assert set(commit_json(path, inst.id)["partitionToWriteStats"]) == {"0", "2"}
    assert (index / "00000.json").read_text() == "{}"
    assert hudi_rows(path) == [row(1, v=3), row(2, p=1), row(3, p=2)]


def test_an_empty_dataframe_makes_an_empty_commit(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(mode="upsert", record_key=("id",))
    c1 = write_table(spark, path, rows_df(spark, []), opts)
    assert commit_json(path, c1.id)["partitionToWriteStats"] == {}
    assert hudi_rows(path) == []
    write_table(spark, path, rows_df(spark, [row(1)]), opts)
    assert hudi_rows(path) == [row(1)]


# ---------------------------------------------------------------------------
# random operation sequences
# ---------------------------------------------------------------------------

LAYOUTS = st.fixed_dictionaries(
    {
        "key": st.sampled_from([("id",), ("id", "name")]),
        "partitioned": st.booleans(),
        "bucketed": st.booleans(),
    }
)
OPERATION = st.tuples(
    st.sampled_from(["bulk_insert", "insert", "upsert", "upsert", "delete"]),
    st.lists(st.tuples(st.integers(0, 15), st.integers(0, 2)), min_size=1, max_size=8),
    st.booleans(),
)


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(layout=LAYOUTS, operations=st.lists(OPERATION, min_size=2, max_size=3))
def test_random_operation_sequences(
    spark: Any, layout: dict[str, Any], operations: list[Any]
) -> None:
    key = layout["key"]
    options: dict[str, Any] = {"record_key": key, "precombine": "v"}
    if layout["partitioned"]:
        options["partition_by"] = ("p",)
    if layout["bucketed"]:
        options.update(bucket_column="b", file_groups=3)
    model = Model(key, layout["partitioned"])
    history = []
    path = tempfile.mkdtemp(prefix="lsw_hypo_")
    try:
        for step, (mode, picks, with_partition) in enumerate(operations):
            if mode == "delete" and not model.rows:
                mode = "upsert"
            if mode == "delete":
                existing = sorted(model.rows.values())
                victims = [existing[i % len(existing)] for i, _ in picks]
                keys = []
                for r in victims:
                    values = dict(zip(DATA, r, strict=True))
                    wanted = list(key) + (["p"] if with_partition and layout["partitioned"] else [])
                    keys.append({c: values[c] for c in wanted})
                model.delete(keys)
                columns = list(dict.fromkeys(c for k in keys for c in k))
                types = {"id": "long", "name": "string", "p": "int"}
                df = spark.createDataFrame(
                    [tuple(k[c] for c in columns) for k in keys],
                    ", ".join(f"{c} {types[c]}" for c in columns),
                )
            else:
                rows = [
                    row(i, p=p, v=step * 100 + n, name=f"n{i % 4}")
                    for n, (i, p) in enumerate(picks)
                ]
                if mode != "upsert":
                    fresh: dict[tuple[Any, ...], tuple[Any, ...]] = {}
                    for r in rows:
                        if model.ident(r) not in model.rows:
                            fresh.setdefault(model.ident(r), r)
                    rows = list(fresh.values())
                    model.insert(rows)
                else:
                    model.upsert(rows)
                df = rows_df(spark, rows)
            inst = write_table(spark, path, df, WriteOptions(mode=mode, **options))
            history.append((inst.id, model.snapshot()))
        assert hudi_commits(path) == [h[0] for h in history]
        for instant, expected in history:
            assert hudi_rows(path, as_of=instant) == expected
        if layout["bucketed"]:
            assert {s[1] for s in hudi_slices(path)} <= {bucket_id(b) for b in range(3)}
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_timestamp_ntz_columns_are_refused_by_name(spark: Any, tmp_path: Path) -> None:
    """hudi-rs cannot read local-timestamp-micros: such a table could not be opened afterwards."""
    import datetime as dt

    path = str(tmp_path / "ntz")
    frame = spark.createDataFrame(
        [(1, dt.datetime(2024, 1, 1, 12, 0))], "id bigint, wall timestamp_ntz"
    )
    with pytest.raises(WriteError, match=r"wall.*timestamp_ntz.*cast it to timestamp"):
        write_table(spark, path, frame, WriteOptions(mode="insert", record_key=("id",)))
    assert tree(path) == {}
