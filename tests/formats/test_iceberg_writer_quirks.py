"""Iceberg tables whose manifest entries say less than what happened: reads at every snapshot.

Some writers do not set manifest entry statuses as the spec says: a
snapshot's new data files carry ``EXISTING`` instead of ``ADDED``, and the
entries it deletes keep the id of the snapshot that *added* them instead of
its own. A change record read from those entries finds no change at all, and
an index built at one snapshot then looked complete for every other: a time
travel read returned 0 rows where pyiceberg returned 1.

Each case writes a table with pyiceberg (an append, another append, an
overwrite, an append), rewrites every manifest with those quirks (as such a
writer would have written it), and builds an index at the first or at the
last snapshot. Every snapshot is then read through ``read_arrow``,
``Table.read`` and the ``lakesieve`` Spark data source, against pyiceberg's
own scan of that snapshot filtered by Spark SQL; ``explain`` must select
every location the index never saw.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import fastavro
import lakesieve
import pyarrow as pa
import pytest
from lakesieve.plugins.iceberg.identify import latest_metadata_file
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.types import LongType, NestedField, StringType

from tests.tables import spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
WHERES = ("id = 2", "id BETWEEN 1 AND 3", "id >= 5", "id IS NULL", None)
#: The conditions also read through the Spark data source (each read plans afresh).
DATA_SOURCE_WHERES = ("id = 2", "id >= 5")

EXISTING, ADDED, DELETED = 0, 1, 2


def _rows(ids: list[int | None], tag: str) -> pa.Table:
    return pa.table({"id": ids, "s": [f"{tag}{i}" for i in ids]}, schema=ARROW_SCHEMA)


def _write_table(root: Path, version: int, location: str) -> Path:
    """Append, append, overwrite, append, written by pyiceberg at format ``version``."""
    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("quirks", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("quirks")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StringType(), required=False),
    )
    table = catalog.create_table(
        ("quirks", "events"),
        schema=schema,
        location=location,
        properties={"format-version": str(version)},
    )
    table.append(_rows([1, 2, 3], "a"))
    table.append(_rows([4, 5, None], "b"))
    table.overwrite(_rows([2, 6, 7], "c"))  # every file replaced
    table.append(_rows([8, 2], "d"))
    return root / "events"


def _rewrite_avro(path: Path, change: Any) -> None:
    """Rewrite one Avro file with ``change(record)`` applied, keeping its schema and metadata."""
    with path.open("rb") as handle:
        reader = fastavro.reader(handle)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        codec = reader.metadata.get("avro.codec", "null")
        records = [change(dict(r)) for r in reader]
    with path.open("wb") as handle:
        fastavro.writer(handle, schema, records, codec=codec, metadata=meta)


def _local(path: str, table_dir: Path) -> Path:
    """A metadata path as a file here (absolute ``file:`` URIs or paths relative to the cwd)."""
    if path.startswith("file:"):
        path = path[len("file:") :]
        while path.startswith("//"):
            path = path[1:]
    found = Path(path)
    return found if found.is_absolute() else Path.cwd() / found


def _plant_quirks(table_dir: Path) -> int:
    """Rewrite every manifest as a writer with the quirks would have; the entries changed.

    ``ADDED`` becomes ``EXISTING`` (with the snapshot's own id kept), and a
    ``DELETED`` entry carries the id of the snapshot that added the file. The
    manifest lists get the new manifest lengths.
    """
    found = latest_metadata_file(str(table_dir))
    assert found is not None
    static = StaticTable.from_metadata(found)
    adder: dict[str, int] = {}
    lists: list[Path] = []
    manifests: dict[Path, int] = {}
    for snap in sorted(static.metadata.snapshots, key=lambda s: s.timestamp_ms):
        lists.append(_local(snap.manifest_list, table_dir))
        for manifest in snap.manifests(static.io):
            manifests.setdefault(_local(manifest.manifest_path, table_dir), snap.snapshot_id)
            for entry in manifest.fetch_manifest_entry(static.io, discard_deleted=False):
                if entry.status == ManifestEntryStatus.ADDED:
                    adder.setdefault(entry.data_file.file_path, entry.snapshot_id)
    changed = 0

    def quirk(record: dict[str, Any]) -> dict[str, Any]:
        nonlocal changed
        if record["status"] == ADDED:
            record["status"] = EXISTING
            changed += 1
        elif record["status"] == DELETED:
            record["snapshot_id"] = adder[record["data_file"]["file_path"]]
            changed += 1
        return record

    for manifest_path in manifests:
        _rewrite_avro(manifest_path, quirk)
    sizes = {str(p): p.stat().st_size for p in manifests}

    def new_length(record: dict[str, Any]) -> dict[str, Any]:
        local = str(_local(record["manifest_path"], table_dir))
        if local in sizes:
            record["manifest_length"] = sizes[local]
        return record

    for list_path in lists:
        _rewrite_avro(list_path, new_length)
    return changed


def _pairs(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        zip(table.column("id").to_pylist(), table.column("s").to_pylist(), strict=True),
        key=repr,
    )


def _spark_pairs(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.select("id", "s").collect()), key=repr)


def _expected(
    spark: Any, static: StaticTable, snapshot_ids: list[str]
) -> dict[tuple[str, str | None], list[tuple[Any, ...]]]:
    """pyiceberg's rows at each snapshot, filtered by Spark SQL with each of :data:`WHERES`."""
    natives = {
        i: static.scan(snapshot_id=int(i)).to_arrow().select(["id", "s"]).cast(ARROW_SCHEMA)
        for i in snapshot_ids
    }
    out: dict[tuple[str, str | None], list[tuple[Any, ...]]] = {}
    for i, rows in natives.items():
        for where in WHERES:
            if where is None:
                out[i, None] = _pairs(rows)
            else:
                out[i, where] = _spark_pairs(spark_where(spark, rows, where))
    return out


def _lineage(static: StaticTable) -> list[str]:
    out: list[str] = []
    snap = static.current_snapshot()
    while snap is not None:
        out.insert(0, str(snap.snapshot_id))
        parent = snap.parent_snapshot_id
        snap = static.metadata.snapshot_by_id(parent) if parent is not None else None
    return out


@pytest.mark.parametrize(
    ("version", "relative", "built_at", "kind"),
    [
        (1, True, "last", "sieve"),
        pytest.param(2, False, "last", "zonemap", marks=pytest.mark.long),
        (2, True, "first", "sieve"),
        pytest.param(1, False, "first", "bloom", marks=pytest.mark.long),
    ],
)
def test_quirky_manifests_read_like_pyiceberg(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: int,
    relative: bool,
    built_at: str,
    kind: str,
) -> None:
    """Every snapshot, through every read path, with the index at one end: pyiceberg's rows."""
    monkeypatch.chdir(tmp_path)
    location = "events" if relative else str(tmp_path / "events")
    path = _write_table(tmp_path, version, location)
    assert _plant_quirks(path) > 0
    found = latest_metadata_file(str(path))
    assert found is not None
    static = StaticTable.from_metadata(found)
    assert static.metadata.location == location
    lineage = _lineage(static)
    assert len(lineage) >= 4
    statuses = {
        e.status
        for snap in static.metadata.snapshots
        for m in snap.manifests(static.io)
        for e in m.fetch_manifest_entry(static.io, discard_deleted=False)
    }
    assert ManifestEntryStatus.ADDED not in statuses  # the quirk is in place

    table = lakesieve.open(str(path))
    assert [i.id for i in table.timeline()] == lineage
    at = lineage[0] if built_at == "first" else lineage[-1]
    built = table.build_index("id", type=kind, as_of=at, spark=spark)
    assert built["instant"] == at
    seen = table.snapshot(at).locations

    expected = _expected(spark, static, lineage)
    for as_of in lineage:
        snapshot_locations = table.snapshot(as_of).locations
        plan = table.explain("id = 2", as_of=as_of)
        assert set(plan["selected"]) >= snapshot_locations - seen, as_of
        for where in WHERES:
            want = expected[as_of, where]
            assert _pairs(table.read_arrow(where=where, as_of=as_of)) == want, (as_of, where)
            frame = table.read(spark, where=where, as_of=as_of)
            assert _spark_pairs(frame) == want, ("read", as_of, where)
            if where in DATA_SOURCE_WHERES:
                source = spark.read.format("lakesieve").option("asOf", as_of).load(str(path))
                got = _spark_pairs(source.where(where))
                assert got == want, ("data source", as_of, where)
    assert os.getcwd() == str(tmp_path)
