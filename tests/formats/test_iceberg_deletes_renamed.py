"""Iceberg position deletes on tables whose columns changed name or id: every read path.

A table whose history renamed a column, dropped and re-added one (or gave an
old name to a new field), or whose name mapping names its files' columns
otherwise than the schema does is read by field id
(``spark_read._read_by_field_id`` in Spark tasks, ``unit_reader`` on the
driver), not by Spark's Parquet reader by name. Position delete files must be
applied on that path too: a slip that dropped them would return deleted rows.
Each case (renamed; dropped, re-added and name reused; name mapping) writes
four snapshots with pyiceberg:

1. append file A (ids 1-6), in the first schema;
2. a position delete file naming A alone (path bounds: matched by path),
   deleting ids 2 and 5;
3. the schema change, then an append of file B (ids 11-16);
4. one position delete file over A and B (no path bounds: matched by
   partition), deleting ids 3, 12 and 16.

pyiceberg 0.12 cannot write delete files (``table.delete`` warns and falls
back to copy-on-write under ``write.delete.mode=merge-on-read``), so the
delete files are written here and committed with lakesieve's row delta
(:func:`lakesieve.plugins.iceberg.commit.row_delta`); the manifests are
checked to hold them and pyiceberg to apply them. At every snapshot (and the
current one), without an index and then with a zone map on ``id``,
``read_arrow`` (every predicate), ``Table.read`` and a ``USING lakesieve`` SQL
view (a few predicates: each costs a Spark job) must give exactly pyiceberg's
own scan of that snapshot filtered by Spark SQL.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve.plugins.iceberg import columns, commit
from lakesieve.plugins.iceberg.identify import latest_metadata_file
from lakesieve.plugins.iceberg.snapshot import DELETE_FILE_PATH_ID, DELETE_POS_ID
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable, Table
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from tests.tables import plain_types, spark_where

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

A_IDS = [1, 2, 3, 4, 5, 6]
B_IDS = [11, 12, 13, 14, 15, 16]
#: ids deleted by the first (A only) and the second (A and B) position delete file
FIRST_DELETE = {2, 5}
SECOND_DELETE = {3, 12, 16}
#: live ids at each snapshot, oldest first (checked against pyiceberg before anything else)
LIVE = [
    set(A_IDS),
    set(A_IDS) - FIRST_DELETE,
    set(A_IDS) - FIRST_DELETE | set(B_IDS),
    set(A_IDS) - FIRST_DELETE - SECOND_DELETE | set(B_IDS) - SECOND_DELETE,
]
#: Predicates of every read; ``None``: none. ``id`` keeps its name and field id in every
#: case; ``{evolved}`` stands for the case's predicate on the changed column(s).
WHERES: list[str | None] = [
    None,
    "id = 3",
    "id BETWEEN 2 AND 12",
    "id IN (5, 12, 13)",
    "{evolved}",
    "id <= 4 AND ({evolved})",
]
#: Predicates of the Spark reads (a Spark job each, where a ``read_arrow`` costs
#: milliseconds), per snapshot oldest first, the last read without ``as_of``:
#: without an index every row, so that no predicate hides a deleted row...
SPARK_FULL: list[list[str | None]] = [[None]] * 4
#: ... and with the zone map one predicate each, which the index prunes by.
SPARK_PRUNED: list[list[str | None]] = [
    ["{evolved}"],
    ["id BETWEEN 2 AND 12"],
    ["id <= 4 AND ({evolved})"],
    ["id = 3"],
]

#: Schema of a position delete file (Iceberg spec: reserved field ids).
DELETE_SCHEMA = pa.schema(
    [
        pa.field(
            "file_path",
            pa.string(),
            nullable=False,
            metadata={b"PARQUET:field_id": str(DELETE_FILE_PATH_ID).encode()},
        ),
        pa.field(
            "pos",
            pa.int64(),
            nullable=False,
            metadata={b"PARQUET:field_id": str(DELETE_POS_ID).encode()},
        ),
    ]
)


# ------------------------------------------------------------ the cases


def _long(i: int, name: str) -> NestedField:
    return NestedField(i, name, LongType(), required=False)


def _string(i: int, name: str) -> NestedField:
    return NestedField(i, name, StringType(), required=False)


def _append(table: Table, rows: dict[str, list[Any]]) -> None:
    """Append ``rows`` (columns in the current schema's order and types) as one data file."""
    arrow = table.schema().as_arrow()
    table.append(pa.table(rows).cast(pa.schema([arrow.field(n) for n in rows])))


def _rename(table: Table) -> None:
    """``s`` becomes ``label`` (same field id)."""
    with table.update_schema() as update:
        update.rename_column("s", "label")
    _append(table, {"id": B_IDS, "label": [f"b{i}" for i in B_IDS]})


def _readd_and_reuse(table: Table) -> None:
    """``v`` (a string) is dropped and a new ``v`` (a long, a new field id) added; ``s``
    becomes ``t``, and a new ``s`` (a long) takes the old name."""
    with table.update_schema() as update:
        update.delete_column("v")
    with table.update_schema() as update:
        update.add_column("v", LongType())
    with table.update_schema() as update:
        update.rename_column("s", "t")
    with table.update_schema() as update:
        update.add_column("s", LongType())
    _append(
        table,
        {"id": B_IDS, "t": [f"b{i}" for i in B_IDS], "v": [i * 10 for i in B_IDS], "s": B_IDS},
    )


def _name_mapping(table: Table) -> None:
    """File B has no field ids and other column names, which the table's name mapping resolves."""
    mapping = [
        {"field-id": 1, "names": ["id", "ident"]},
        {"field-id": 2, "names": ["s", "label"]},
    ]
    with table.transaction() as tx:
        tx.set_properties({columns.NAME_MAPPING: json.dumps(mapping)})
    path = f"{table.metadata.location}/data/b-without-field-ids.parquet"
    pq.write_table(
        pa.table(
            {"ident": pa.array(B_IDS, pa.int64()), "label": [f"b{i}" for i in B_IDS]},
        ),
        path,
    )
    assert not columns.file_field_ids(pq.read_schema(path))
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(B_IDS),
        file_size_in_bytes=os.path.getsize(path),
        sort_order_id=None,
        key_metadata=None,
    )
    data_file.spec_id = table.spec().spec_id
    with table.transaction() as tx, tx.update_snapshot().fast_append() as producer:
        producer.append_data_file(data_file)


@dataclass(frozen=True)
class Case:
    """One schema change between the two deletes.

    Attributes:
        fields: the first schema.
        first: file A's rows, by column of the first schema.
        change: changes the schema and appends file B (one snapshot).
        old_where: a predicate on the changed column, in the first schema.
        new_where: a predicate on the changed column(s), in the last schema.
    """

    fields: tuple[NestedField, ...]
    first: dict[str, list[Any]]
    change: Callable[[Table], None]
    old_where: str
    new_where: str


CASES = {
    "renamed": Case(
        (_long(1, "id"), _string(2, "s")),
        {"id": A_IDS, "s": [f"a{i}" for i in A_IDS]},
        _rename,
        "s IN ('a2', 'a3', 'a4')",
        "label IN ('a3', 'a5', 'b12', 'b13')",
    ),
    "dropped-re-added-and-name-reused": Case(
        (_long(1, "id"), _string(2, "s"), _string(3, "v")),
        {"id": A_IDS, "s": [f"a{i}" for i in A_IDS], "v": [f"old{i}" for i in A_IDS]},
        _readd_and_reuse,
        "s IN ('a2', 'a3', 'a4') OR v = 'old6'",
        "t IN ('a3', 'a4') OR s = 13 OR v >= 150 OR (v IS NULL AND id = 6)",
    ),
    "name-mapping": Case(
        (_long(1, "id"), _string(2, "s")),
        {"id": A_IDS, "s": [f"a{i}" for i in A_IDS]},
        _name_mapping,
        "s IN ('a2', 'a3', 'a4')",
        "s IN ('a3', 'a5', 'b12', 'b13')",
    ),
}


# ------------------------------------------------------------ writing the table


def _positions(file_path: str, ids: set[int]) -> list[int]:
    """Row positions in a data file whose first column (``id``, with or without field ids) is in ``ids``."""
    values = pq.read_table(file_path).column(0).to_pylist()
    return [pos for pos, value in enumerate(values) if value in ids]


def _position_delete(table: Table, ids: set[int], bounded: bool) -> None:
    """Commit one Parquet position delete file deleting ``ids`` from the current data files.

    With ``bounded`` the file names one data file and says so in its
    ``file_path`` bounds (matched by path); without, it has no bounds
    (matched by partition).
    """
    rows = sorted(
        (task.file.file_path, pos)
        for task in table.scan().plan_files()
        for pos in _positions(task.file.file_path, ids)
    )
    targets = {p for p, _ in rows}
    assert len(rows) == len(ids) and (len(targets) == 1 or not bounded), rows
    path = f"{table.metadata.location}/data/pos-delete-{uuid.uuid4()}.parquet"
    pq.write_table(
        pa.table(
            {"file_path": [p for p, _ in rows], "pos": [q for _, q in rows]}, schema=DELETE_SCHEMA
        ),
        path,
    )
    bounds = {DELETE_FILE_PATH_ID: next(iter(targets)).encode()} if bounded else None
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(rows),
        file_size_in_bytes=os.path.getsize(path),
        lower_bounds=bounds,
        upper_bounds=bounds,
        sort_order_id=None,
        key_metadata=None,
    )
    delete_file.spec_id = table.spec().spec_id
    commit.row_delta(table, [delete_file], [])


def _write_table(root: Path, case: Case) -> Path:
    """The case's four snapshots (append, delete, change and append, delete); the table's path."""
    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("dr", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("dr")
    path = root / "events"
    table = catalog.create_table(
        ("dr", "events"),
        schema=Schema(*case.fields),
        location=str(path),
        properties={"format-version": "2"},
    )
    _append(table, case.first)
    _position_delete(table, FIRST_DELETE, bounded=True)
    case.change(table)
    _position_delete(table, SECOND_DELETE, bounded=False)
    return path


def _static(path: Path) -> StaticTable:
    found = latest_metadata_file(str(path))
    assert found is not None
    return StaticTable.from_metadata(found)


def _added_position_deletes(static: StaticTable, snapshot_id: int) -> list[DataFile]:
    """The position delete files a snapshot added, read from its delete manifests."""
    snap = static.metadata.snapshot_by_id(snapshot_id)
    assert snap is not None
    out = []
    for manifest in snap.manifests(static.io):
        if manifest.content != ManifestContent.DELETES:
            continue
        for entry in manifest.fetch_manifest_entry(static.io, discard_deleted=True):
            if entry.snapshot_id == snapshot_id:
                assert entry.data_file.content == DataFileContent.POSITION_DELETES
                out.append(entry.data_file)
    return out


# ------------------------------------------------------------ comparing rows


Rows = list[tuple[Any, ...]]


def _sorted(rows: Rows) -> Rows:
    """Rows as a sorted list (a multiset: duplicates kept; ``None`` sorts by its text)."""
    return sorted(rows, key=repr)


def _arrow_rows(table: pa.Table) -> tuple[list[str], Rows]:
    """Column names and sorted rows of an Arrow table."""
    return table.column_names, _sorted([tuple(r.values()) for r in table.to_pylist()])


def _spark_rows(frame: Any) -> tuple[list[str], Rows]:
    """Column names and sorted rows of a Spark DataFrame (collected)."""
    return list(frame.columns), _sorted([tuple(r) for r in frame.collect()])


def _at(where: str | None, snapshot_index: int, case: Case) -> str | None:
    """``where`` with ``{evolved}`` replaced by the case's predicate in that snapshot's schema.

    The first two snapshots (0 and 1) have the first schema, the last two the changed one.
    """
    if where is None:
        return None
    return where.format(evolved=case.old_where if snapshot_index < 2 else case.new_where)


def _expected(
    spark: Any, static: StaticTable, lineage: list[str], case: Case
) -> dict[tuple[str, str | None], tuple[list[str], Rows]]:
    """pyiceberg's rows at each snapshot that Spark SQL selects with each of :data:`WHERES`.

    One Spark query per snapshot over its rows, each predicate a flag column
    (NULL selects nothing, as in ``WHERE``; ``None`` selects every row).
    """
    out: dict[tuple[str, str | None], tuple[list[str], Rows]] = {}
    for i, snapshot_id in enumerate(lineage):
        native = plain_types(static.scan(snapshot_id=int(snapshot_id)).to_arrow())
        names = native.column_names
        texts = [_at(where, i, case) or "true" for where in WHERES]
        flags = [f"coalesce(({text}), false) AS __flag_{k}" for k, text in enumerate(texts)]
        rows = spark_where(spark, native, "true").selectExpr("*", *flags).collect()
        for k, where in enumerate(WHERES):
            chosen = [tuple(r)[: len(names)] for r in rows if r[len(names) + k]]
            out[snapshot_id, where] = (names, _sorted(chosen))
    return out


def _check_reads(
    spark: Any,
    table: Any,
    path: Path,
    lineage: list[str],
    case: Case,
    spark_wheres: list[list[str | None]],
    expected: dict[tuple[str, str | None], tuple[list[str], Rows]],
    label: str,
) -> None:
    """Every read path gives the expected rows (names and rows, exactly) at every snapshot.

    ``read_arrow`` reads every snapshot with ``as_of`` and the current one
    without, each with every predicate of :data:`WHERES`. ``Table.read`` and a
    ``USING lakesieve`` view read the older snapshots with ``as_of`` and the
    current one without, with the predicates of ``spark_wheres``.
    """
    for i, as_of in enumerate([*lineage, None]):
        snapshot_id = as_of or lineage[-1]
        index = min(i, len(lineage) - 1)
        for where in WHERES:
            text = _at(where, index, case)
            got = _arrow_rows(table.read_arrow(where=text, as_of=as_of))
            assert got == expected[snapshot_id, where], ("read_arrow", label, as_of, text)
        if as_of == lineage[-1]:
            continue
        view = f"deletes_renamed_{uuid.uuid4().hex}"
        option = f", asOf '{as_of}'" if as_of else ""
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW {view} USING lakesieve "
            f"OPTIONS (path '{path}'{option})"
        )
        for where in spark_wheres[index]:
            want = expected[snapshot_id, where]
            text = _at(where, index, case)
            got = _spark_rows(table.read(spark, where=text, as_of=as_of))
            assert got == want, ("read", label, as_of, text)
            got = _spark_rows(spark.sql(f"SELECT * FROM {view} WHERE {text or 'true'}"))
            assert got == want, ("SQL view", label, as_of, text)
        spark.catalog.dropTempView(view)


@pytest.mark.parametrize(
    "name",
    # a plain rename is also inside the re-added case; the long tier runs it alone
    [pytest.param(n, marks=pytest.mark.long) if n == "renamed" else n for n in sorted(CASES)],
)
def test_position_deletes_with_changed_columns_read_like_pyiceberg(
    spark: Any, tmp_path: Path, name: str
) -> None:
    """Every snapshot, by every read path, with and without an index, reads as pyiceberg does."""
    case = CASES[name]
    path = _write_table(tmp_path, case)
    static = _static(path)
    assert not columns.by_name_is_exact(static.metadata), "the table must be read by field id"

    lineage = [str(s.snapshot_id) for s in static.metadata.snapshots]
    assert len(lineage) == 4
    schema_ids = [static.metadata.snapshot_by_id(int(i)).schema_id for i in lineage]  # type: ignore[union-attr]
    changed = name != "name-mapping"  # the name mapping is a table property, not a schema
    assert (schema_ids[1] != schema_ids[2]) == changed, schema_ids

    # the delete snapshots added one Parquet position delete file each, in a delete
    # manifest: the first names file A in its path bounds, the second has no bounds
    for snapshot_id, bounded in ((lineage[1], True), (lineage[3], False)):
        (added,) = _added_position_deletes(static, int(snapshot_id))
        assert added.file_format == FileFormat.PARQUET
        assert (DELETE_FILE_PATH_ID in (added.lower_bounds or {})) == bounded
    assert not _added_position_deletes(static, int(lineage[0]))
    assert not _added_position_deletes(static, int(lineage[2]))
    # pyiceberg matches them to the data files and applies them
    for snapshot_id, deletes, live in zip(lineage, (0, 1, 1, 3), LIVE, strict=True):
        tasks = list(static.scan(snapshot_id=int(snapshot_id)).plan_files())
        assert sum(len(t.delete_files) for t in tasks) == deletes, snapshot_id
        ids = static.scan(snapshot_id=int(snapshot_id)).to_arrow().column("id").to_pylist()
        assert sorted(ids) == sorted(live), snapshot_id

    table = lakesieve.open(str(path))
    assert [i.id for i in table.timeline()] == lineage
    units = table.snapshot(lineage[-1]).units
    assert len(units) == 2 and all(u.delete_files for u in units)

    expected = _expected(spark, static, lineage, case)
    _check_reads(spark, table, path, lineage, case, SPARK_FULL, expected, "no index")

    built = table.build_index("id", type="zonemap", spark=spark)
    assert built["instant"] == lineage[-1]
    explained = table.explain("id = 3")
    assert explained["indexes"][0]["status"] == "used"
    assert explained["locations_selected"] == 1 < explained["locations_total"] == 2
    _check_reads(spark, table, path, lineage, case, SPARK_PRUNED, expected, "zone map on id")
