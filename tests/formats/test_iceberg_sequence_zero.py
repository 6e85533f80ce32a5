"""Iceberg tables whose snapshots all carry sequence number 0: reads at every snapshot.

A table written at format version 1 has no sequence numbers; upgraded (here
to version 2 by pyiceberg, then to version 3 by editing the metadata, as
pyiceberg cannot write version 3) its old snapshots keep sequence number 0,
as the spec assigns on upgrade. Nothing then orders those snapshots but
their lineage (each snapshot's ``parent-snapshot-id``): commit times may tie
(two commits in one millisecond) or run backwards (writers' clocks differ).

Each case writes an append, an overwrite (a delete and an append snapshot)
and another append, makes every snapshot sequence 0 with the given commit
times, builds a zone map at the current snapshot, and checks
``read_arrow`` and ``read`` at every snapshot (and the current one) against
pyiceberg's own scan filtered by Spark SQL.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve.contract import registry
from lakesieve.plugins.iceberg.identify import latest_metadata_file, metadata_files
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.types import LongType, NestedField, StringType

from tests.tables import spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
WHERES = ("id = 2", "id BETWEEN 1 AND 3", "id > 1000", None)

#: Commit-time offsets (ms) of the four snapshots, oldest first, per case.
CLOCKS = {
    # all four commits in one millisecond
    "same-millisecond": (0, 0, 0, 0),
    # the first writer's clock ran ahead: time order is 2nd, 3rd, 1st, 4th
    "skewed": (30, 0, 10, 40),
}


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "s": [f"{tag}{i}" for i in ids]}, schema=ARROW_SCHEMA)


def _write_v1_table(root: Path) -> Path:
    """A format-version-1 table: append, overwrite, append; then upgraded to version 2."""
    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("seq0", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("seq0")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StringType(), required=False),
    )
    path = root / "events"
    table = catalog.create_table(
        ("seq0", "events"), schema=schema, location=str(path), properties={"format-version": "1"}
    )
    table.append(_rows([1, 2, 3], "a"))
    table.overwrite(_rows([4, 5], "b"))  # a delete snapshot, then an append snapshot
    table.append(_rows([2, 6], "c"))
    with table.transaction() as tx:
        tx.upgrade_table_version(2)
    return path


def _upgrade_to_v3_with_sequence_zero(path: Path, offsets: tuple[int, ...]) -> None:
    """Commit a version-3 metadata file: every snapshot sequence 0, commit times ``offsets``."""
    newest = max(metadata_files(str(path)))[2]
    meta = json.loads(Path(newest).read_text())
    snaps = meta["snapshots"]
    assert len(snaps) == len(offsets)
    base = min(s["timestamp-ms"] for s in snaps)
    when = {}
    for snap, offset in zip(snaps, offsets, strict=True):
        snap["sequence-number"] = 0
        snap["timestamp-ms"] = when[snap["snapshot-id"]] = base + offset
    for entry in meta.get("snapshot-log", []):
        entry["timestamp-ms"] = when[entry["snapshot-id"]]
    meta["format-version"] = 3
    meta["last-sequence-number"] = 0
    meta.setdefault("next-row-id", 0)
    meta["last-updated-ms"] = base + max(offsets) + 1
    version = max(v for v, _, _ in metadata_files(str(path))) + 1
    (path / "metadata" / f"{version:05d}-{uuid.uuid4()}.metadata.json").write_text(
        json.dumps(meta, indent=2)
    )


def _pairs(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("s").to_pylist(), strict=True))


def _spark_pairs(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.select("id", "s").collect())


def _expected(
    spark: Any, static: StaticTable, snapshot_ids: list[str]
) -> dict[tuple[str, str | None], list[tuple[Any, ...]]]:
    """pyiceberg's rows at each snapshot that Spark SQL selects with each of :data:`WHERES`.

    One Spark query per predicate, over every snapshot's rows tagged with its id.
    """
    natives = {
        i: static.scan(snapshot_id=int(i)).to_arrow().select(["id", "s"]).cast(ARROW_SCHEMA)
        for i in snapshot_ids
    }
    tagged = pa.concat_tables(
        t.append_column("snap", pa.array([i] * t.num_rows, pa.string())) for i, t in natives.items()
    )
    out: dict[tuple[str, str | None], list[tuple[Any, ...]]] = {}
    for where in WHERES:
        if where is None:
            out.update({(i, None): _pairs(t) for i, t in natives.items()})
            continue
        selected = spark_where(spark, tagged, where).collect()
        for i in snapshot_ids:
            out[i, where] = sorted((r["id"], r["s"]) for r in selected if r["snap"] == i)
    return out


@pytest.mark.parametrize("clock", sorted(CLOCKS))
def test_sequence_zero_table_reads_like_pyiceberg(spark: Any, tmp_path: Path, clock: str) -> None:
    """Every snapshot, pruned by an index built at the current one, reads as pyiceberg reads it."""
    path = _write_v1_table(tmp_path)
    _upgrade_to_v3_with_sequence_zero(path, CLOCKS[clock])
    found = latest_metadata_file(str(path))
    assert found is not None
    static = StaticTable.from_metadata(found)
    assert static.metadata.format_version == 3
    assert {s.sequence_number for s in static.metadata.snapshots} == {0}
    lineage: list[str] = []  # oldest first, by parent-snapshot-id
    snap = static.current_snapshot()
    while snap is not None:
        lineage.insert(0, str(snap.snapshot_id))
        parent = snap.parent_snapshot_id
        snap = static.metadata.snapshot_by_id(parent) if parent is not None else None
    assert len(lineage) == 4

    table = lakesieve.open(str(path))
    line = table.timeline()
    assert [i.id for i in line] == lineage
    keys = [i.sort_key for i in line]
    assert keys == sorted(keys) and len(set(keys)) == len(keys), keys
    first, last = lineage[0], lineage[-1]
    first_files = table.snapshot(first).locations
    changes = registry.table_format(table.ref).changes(start=last, end=first)
    assert changes.added == first_files - table.snapshot(last).locations

    built = table.build_index("id", type="zonemap", spark=spark)
    assert built["instant"] == last

    expected = _expected(spark, static, lineage)
    for as_of in [*lineage, None]:
        for where in WHERES:
            want = expected[as_of or last, where]
            got = table.read_arrow(where=where, as_of=as_of)
            assert _pairs(got) == want, ("read_arrow", as_of, where)
            frame = table.read(spark, where=where, as_of=as_of)
            assert _spark_pairs(frame) == want, ("read", as_of, where)
