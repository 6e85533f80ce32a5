"""The Delta plugin against delta-rs: writes, timeline, snapshots, changes, reads, VACUUM.

One table goes through the write hook over five commits (bucketed create,
append, bucketed upsert, delete, bucketed overwrite); at every version the
plugin's snapshot, Spark read and per-unit reads must equal what delta-rs
itself reads. Deletion vectors, which delta-rs 1.6 reads but never writes,
are added by hand the way Spark's Delta writer does (a RoaringBitmap file
named by a z85-encoded UUID) and must be honoured by every read path.
Finally an index built on the table must survive ``VACUUM``, full or not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import struct
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import lakesieve
import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import InstantNotFoundError, WriteError
from lakesieve.model import LOCATION_COLUMN, TableRef, WriteOptions
from lakesieve.table import write

from tests.tables import spark_where

pytestmark = pytest.mark.spark

BUCKETS = 4
SCHEMA = "id bigint, k bigint, s string, d date, amount double"
COLUMNS = ["id", "k", "s", "d", "amount"]


def _rows(ids: range | list[int], tag: str) -> list[tuple[Any, ...]]:
    return [
        (i, i // 3, f"{tag}-{i % 17:02d}", dt.date(2024, 1, 1) + dt.timedelta(days=i % 40), i * 0.5)
        for i in ids
    ]


def _frame(spark: Any, rows: list[tuple[Any, ...]], partitions: int = 2) -> Any:
    return spark.createDataFrame(rows, SCHEMA).repartition(partitions)


def _plain(table: pa.Table) -> pa.Table:
    """``table`` with plain string types and rows sorted by every column, for comparisons."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        fields.append(pa.field(f.name, t))
    cast = table.select([f.name for f in fields]).cast(pa.schema(fields))
    return cast.sort_by([(n, "ascending") for n in cast.column_names])


def _native(path: Path, version: int | None = None) -> pa.Table:
    dt_ = DeltaTable(str(path), version=version)
    return _plain(pa.table(dt_.scan()))


def _spark_rows(frame: Any, columns: list[str]) -> pa.Table:
    arrow = frame.select(*columns).toArrow()
    return _plain(arrow)


def _native_files(path: Path, version: int) -> set[str]:
    root = os.path.abspath(path)
    return {os.path.relpath(u, root) for u in DeltaTable(str(path), version=version).file_uris()}


def _read_units(table: Any, version: str) -> tuple[pa.Table, dict[str, int]]:
    """Every unit read without Spark, concatenated; and rows per location."""
    parts, counts = [], {}
    for unit in table.snapshot(version).units:
        batches = list(
            registry.table_format(table.ref).read_unit(
                unit=unit,
                instant=version,
                columns=None,
            )
        )
        got = pa.Table.from_batches(batches, schema=table.schema(version))
        counts[unit.location] = got.num_rows
        parts.append(got)
    if not parts:  # a version without data files
        return _plain(table.schema(version).empty_table()), counts
    return _plain(pa.concat_tables(parts)), counts


@pytest.fixture(scope="module")
def delta(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("delta") / "orders"
    bucketed = {"bucket_column": "id", "file_groups": BUCKETS}
    versions = [
        write(
            path,
            _frame(spark, _rows(range(0, 300), "a")),
            format="delta",
            options=WriteOptions(mode="bulk_insert", table_name="orders", **bucketed),
            spark=spark,
        ),
        write(
            path,
            _frame(spark, _rows(range(300, 400), "b")),
            options=WriteOptions(mode="append"),
            spark=spark,
        ),
        write(
            path,
            _frame(spark, _rows(range(250, 350), "c")),
            options=WriteOptions(mode="upsert", record_key=("id",), **bucketed),
            spark=spark,
        ),
        write(
            path,
            _frame(spark, _rows(range(0, 400, 10), "x")),
            options=WriteOptions(mode="delete", record_key=("id",)),
            spark=spark,
        ),
    ]
    return {"path": path, "versions": versions, "table": lakesieve.open(path)}


def test_identify_and_timeline(delta: dict[str, Any]) -> None:
    path, table = delta["path"], delta["table"]
    assert registry.identify_format(str(path)) == "delta"
    assert table.format == "delta"
    line = table.timeline()
    # version 0 is the empty table keeping the bucket layout (table property
    # lakesieve.bucketLayout), version 4 the metadata-only commit keeping the
    # record key the upsert first named
    assert [i.id for i in line] == ["0", "1", "2", "3", "4", "5"]
    assert [i.sort_key for i in line] == [f"{v:020d}" for v in range(6)]
    assert line[0].action == "create table"
    assert [i.id for i in delta["versions"]] == ["1", "2", "3", "5"]
    with pytest.raises(InstantNotFoundError):
        table.snapshot("9")


def test_timeline_is_remembered_only_while_the_log_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plans ask for the latest version each time: one listing of _delta_log answers until it changes."""
    from lakesieve.plugins.delta import timeline

    path = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    write_deltalake(str(path), data)
    ref = TableRef(path=str(path), format="delta")
    reads: list[int] = []
    real = timeline._list_from_log

    def counted(table: TableRef) -> list[Any]:
        reads.append(1)
        return real(table)

    monkeypatch.setattr(timeline, "_list_from_log", counted)
    assert [i.id for i in timeline.list_instants(ref)] == ["0"]
    assert [i.id for i in timeline.list_instants(ref)] == ["0"]
    assert len(reads) == 1
    write_deltalake(str(path), data, mode="append")
    line = timeline.list_instants(ref)
    assert [i.id for i in line] == ["0", "1"] and line[1].action == "write"
    assert len(reads) == 2
    # a file of the log cleaned up (here: the first commit) changes the answer too
    os.remove(path / "_delta_log" / f"{0:020d}.json")
    assert len(reads) == 2 and timeline.log_fingerprint(ref) is not None
    try:
        after = [i.id for i in timeline.list_instants(ref)]
    except Exception:  # delta-rs may refuse a log without its first commit
        after = None
    assert len(reads) == 3 and after != ["0", "1"]
    # a table that is not on the local file system is never remembered
    assert timeline.log_fingerprint(TableRef(path="s3://bucket/t", format="delta")) is None


def test_bucketed_write_gives_one_file_per_bucket(delta: dict[str, Any]) -> None:
    table = delta["table"]
    # the create, the upsert and the delete (both keep the table's layout)
    for version in ("1", "3", "5"):
        _, counts = _read_units(table, version)
        assert len(counts) == BUCKETS, "one data file per bucket"
        buckets_per_file = {}
        for unit in table.snapshot(version).units:
            ids = (
                pa.Table.from_batches(
                    list(
                        registry.table_format(table.ref).read_unit(
                            unit=unit,
                            instant=version,
                            columns=["id"],
                        )
                    )
                )
                .column("id")
                .to_numpy()
            )
            buckets_per_file[unit.location] = set((ids % BUCKETS).tolist())
        assert all(len(b) == 1 for b in buckets_per_file.values()), buckets_per_file
        assert set().union(*buckets_per_file.values()) == set(range(BUCKETS))


def test_snapshot_matches_delta_rs_at_every_version(delta: dict[str, Any]) -> None:
    path, table = delta["path"], delta["table"]
    for version in range(6):
        snap = table.snapshot(str(version))
        assert snap.instant is not None and snap.instant.id == str(version)
        assert snap.locations == _native_files(path, version)
        for unit in snap.units:
            assert unit.base_file == unit.location
            assert unit.size_bytes == (path / unit.location).stat().st_size
            assert not unit.delete_files
        native_rows = DeltaTable(str(path), version=version).count()
        assert sum(u.num_records or 0 for u in snap.units) == native_rows


def test_reads_equal_delta_rs_at_every_version(spark: Any, delta: dict[str, Any]) -> None:
    path, table = delta["path"], delta["table"]
    for version in range(6):
        expected = _native(path, version)
        plan = table.plan(None, str(version))
        frame = (
            registry.table_format(table.ref)
            .read(
                spark=spark,
                units=plan.units,
                instant=str(version),
                with_location=True,
            )
            .cache()
        )
        assert _spark_rows(frame, COLUMNS).equals(expected), f"version {version}"
        by_location = {r[0]: r[1] for r in frame.groupBy(LOCATION_COLUMN).count().collect()}
        unit_rows, counts = _read_units(table, str(version))
        assert unit_rows.equals(expected)
        assert by_location == {k: v for k, v in counts.items() if v}
        frame.unpersist()
    assert _native(path).num_rows == 400 - 40  # ids 0..399 minus multiples of 10


def test_changes_between_versions(delta: dict[str, Any]) -> None:
    path, table = delta["path"], delta["table"]
    files = {v: _native_files(path, v) for v in range(6)}

    def changes(start: str | None, end: str) -> Any:
        return registry.table_format(table.ref).changes(start=start, end=end)

    for a in range(6):
        for b in range(a + 1, 6):
            forward, backward = changes(str(a), str(b)), changes(str(b), str(a))
            assert forward.touched >= files[a] ^ files[b]
            assert forward.added <= files[b] and not forward.removed & files[b]
            assert backward.touched == forward.touched
            assert (backward.added, backward.removed) == (forward.removed, forward.added)
    from_start = changes(None, "1")
    assert from_start.added == files[1] and not from_start.removed
    assert changes("2", "2").touched == frozenset()


def _z85(data: bytes) -> str:
    alphabet = (
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
    )
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        out.extend(alphabet[(value // 85**p) % 85] for p in range(4, -1, -1))
    return "".join(out)


def _roaring_bitmap_array(positions: list[int]) -> bytes:
    """Delta's RoaringBitmapArray serialisation (portable 32-bit Roaring maps under 64-bit keys)."""
    highs: dict[int, list[int]] = {}
    for p in sorted(set(positions)):
        highs.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = struct.pack("<iq", 1681511377, len(highs))
    for high, lows in sorted(highs.items()):
        containers: dict[int, list[int]] = {}
        for v in lows:
            containers.setdefault(v >> 16, []).append(v & 0xFFFF)
        keys = sorted(containers)
        head = struct.pack("<II", 12346, len(keys))
        head += b"".join(struct.pack("<HH", k, len(containers[k]) - 1) for k in keys)
        bodies = []
        for k in keys:
            values = containers[k]
            if len(values) <= 4096:
                bodies.append(struct.pack(f"<{len(values)}H", *values))
            else:
                bits = np.zeros(65536, dtype=bool)
                bits[values] = True
                bodies.append(np.packbits(bits, bitorder="little").tobytes())
        offset = len(head) + 4 * len(keys)
        offsets = b""
        for body in bodies:
            offsets += struct.pack("<I", offset)
            offset += len(body)
        out += struct.pack("<i", high) + head + offsets + b"".join(bodies)
    return out


def _add_deletion_vector(path: Path, location: str, positions: list[int]) -> None:
    """Commit a deletion vector on one data file, as Spark's Delta writer does."""
    dt_ = DeltaTable(str(path))
    version = dt_.version() + 1
    add = next(
        json.loads(line)["add"]
        for f in sorted((path / "_delta_log").glob("*.json"))
        for line in f.read_text().splitlines()
        if '"add"' in line and json.loads(line).get("add", {}).get("path") == location
    )
    data = _roaring_bitmap_array(positions)
    ident = uuid.uuid4()
    blob = b"\x01" + struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    (path / f"deletion_vector_{ident}.bin").write_bytes(blob)
    now = int(time.time() * 1000)
    vector = {
        "storageType": "u",
        "pathOrInlineDv": _z85(ident.bytes),
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": len(set(positions)),
    }
    actions = [
        {"commitInfo": {"timestamp": now, "operation": "DELETE", "operationParameters": {}}},
        {
            "remove": {
                "path": location,
                "deletionTimestamp": now,
                "dataChange": True,
                "extendedFileMetadata": True,
                "partitionValues": add["partitionValues"],
                "size": add["size"],
            }
        },
        {"add": {**add, "deletionVector": vector, "dataChange": True}},
    ]
    (path / "_delta_log" / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in actions) + "\n"
    )


def test_deletion_vectors_are_honoured(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "dv"
    data = pa.table({"id": pa.array(range(200), pa.int64()), "s": [f"v{i}" for i in range(200)]})
    write_deltalake(str(path), data, configuration={"delta.enableDeletionVectors": "true"})
    location = DeltaTable(str(path)).get_add_actions(flatten=True).column("path")[0].as_py()
    _add_deletion_vector(path, location, [0, 3, 7, 100, 199])
    table = lakesieve.open(path)
    assert [i.id for i in table.timeline()] == ["0", "1"]

    (unit,) = table.snapshot().units
    assert unit.delete_files == ("deletion_vector:5",) and unit.extra["deleted_rows"] == "5"
    assert not table.snapshot("0").units[0].delete_files
    expected = _native(path)
    assert expected.num_rows == 195
    frame = table.full_read(spark)
    assert _spark_rows(frame, ["id", "s"]).equals(expected)
    with_loc = registry.table_format(table.ref).read(
        spark=spark,
        units=[unit],
        instant="1",
        with_location=True,
    )
    assert with_loc.count() == 195
    assert _read_units(table, "1")[0].equals(expected)
    assert _read_units(table, "0")[0].equals(_native(path, 0))
    changes = registry.table_format(table.ref).changes(start="0", end="1")
    assert changes.rewritten == {location} and not changes.added and not changes.removed

    # rewriting a file that carries a deletion vector is refused before anything is written
    with pytest.raises(WriteError, match="deletion vector"):
        write(
            path,
            spark.createDataFrame([(5, "x")], "id bigint, s string"),
            options=WriteOptions(mode="delete", record_key=("id",)),
            spark=spark,
        )
    assert [i.id for i in table.timeline()] == ["0", "1"]


def test_partitioned_table_with_awkward_values(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "parts"
    rows = [(i, ["a b", "x/y=z%", None][i % 3], dt.date(2024, 1, 1 + i % 2)) for i in range(30)]
    frame = spark.createDataFrame(rows, "id bigint, part string, day date")
    write(
        path,
        frame,
        format="delta",
        spark=spark,
        options=WriteOptions(mode="append", partition_by=("part", "day")),
    )
    table = lakesieve.open(path)
    snap = table.snapshot()
    assert snap.locations == _native_files(path, 0)
    assert {u.partition_values.get("part") for u in snap.units} == {"a b", "x/y=z%", None}
    expected = _native(path)
    assert _spark_rows(table.full_read(spark), ["id", "part", "day"]).equals(expected)
    assert _read_units(table, "0")[0].equals(expected)


def test_column_mapping_reads_physical_columns(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "mapped"
    data = pa.table(
        {
            "id": pa.array(range(20), pa.int64()),
            "s": [f"v{i}" for i in range(20)],
            "p": ["a", "b"] * 10,
        }
    )
    write_deltalake(
        str(path), data, partition_by=["p"], configuration={"delta.columnMapping.mode": "name"}
    )
    table = lakesieve.open(path)
    expected = _native(path)
    assert _spark_rows(table.full_read(spark), ["id", "s", "p"]).equals(expected)
    assert _read_units(table, "0")[0].equals(expected)
    with pytest.raises(WriteError, match="column mapping"):
        write(
            path,
            spark.createDataFrame([(1, "x", "a")], "id bigint, s string, p string"),
            options=WriteOptions(mode="append"),
            spark=spark,
        )


def test_write_refuses_bad_input(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad"
    frame = spark.createDataFrame([(1, "a")], "id bigint, s string")
    ref = TableRef(str(path), "delta", {})
    cases = [
        (WriteOptions(mode="merge"), "unknown mode"),
        (WriteOptions(mode="upsert"), "no record key"),
        (WriteOptions(mode="append", bucket_column="s", file_groups=2), "integer"),
        (WriteOptions(mode="append", bucket_column="id"), "file_groups"),
        (WriteOptions(mode="append", file_groups=4), "needs an integer bucket_column"),
        (WriteOptions(mode="delete", record_key=("id",)), "no Delta table"),
    ]
    for options, message in cases:
        with pytest.raises(WriteError, match=message):
            registry.table_format(ref).write(spark=spark, df=frame, options=options)
    assert not path.exists()


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _where(draw: Any) -> str:
    kind = draw(st.sampled_from(["eq", "in", "between", "ge", "lt", "k"]))
    a, b = sorted(draw(st.lists(st.integers(-5, 1110), min_size=2, max_size=2)))
    if kind == "eq":
        return f"id = {a}"
    if kind == "in":
        return f"id IN ({a}, {b}, {a + 7})"
    if kind == "between":
        return f"id BETWEEN {a} AND {min(b, a + 40)}"
    if kind == "ge":
        return f"id >= {b}"
    if kind == "lt":
        return f"id < {a // 4}"
    return f"k = {a // 3} OR id = {b}"


def test_index_survives_vacuum_and_pruned_reads_equal_full_reads(
    spark: Any, delta: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "vacuumed"
    shutil.copytree(delta["path"], path)
    # runs of 25 consecutive ids per file: a layout the Sieve index prunes perfectly
    runs = [(i, i // 25, *rest) for i, _, *rest in _rows(range(1000, 1100), "o")]
    write(
        path,
        _frame(spark, runs),
        spark=spark,
        options=WriteOptions(mode="overwrite", bucket_column="k", file_groups=BUCKETS),
    )
    table = lakesieve.open(path)
    assert table.store.root == path / ".lakesieve"
    table.build_index("id", type="sieve", spark=spark)
    before = _tree_digest(table.store.root)
    assert before

    dt_ = DeltaTable(str(path))
    gone = dt_.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    (path / "stray.parquet").write_bytes(b"not referenced by the log")
    gone += DeltaTable(str(path)).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True
    )
    assert gone, "vacuum removed the files of older versions"
    assert "stray.parquet" in gone and not (path / "stray.parquet").exists()
    assert not any(g.startswith(".lakesieve") for g in gone)
    assert _tree_digest(table.store.root) == before

    table = lakesieve.open(path)
    described = table.describe_index("id_sieve")
    # the overwrite (version 6) laid the table out anew: version 7 keeps the new layout
    assert "error" not in described and described["instant"] == "7"
    explained = table.explain("id = 1042")
    assert explained["indexes"][0]["status"] == "used"
    assert explained["locations_selected"] == 1 < explained["locations_total"] == BUCKETS
    expected_all = _native(path)
    through_source = spark.read.format("lakesieve").load(str(path)).where("id = 1042 OR id = 1077")
    assert sorted(r.id for r in through_source.collect()) == [1042, 1077]

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: Any) -> None:
        where = _where(data.draw)
        # truth: Spark SQL over delta-rs's rows held in memory
        expected = _spark_rows(spark_where(spark, expected_all, where), COLUMNS)
        assert _spark_rows(table.read(spark, where=where), COLUMNS).equals(expected), where

    check()
