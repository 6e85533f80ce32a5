"""Write, change and natively read the tables of :mod:`.data`, one format each.

Delta tables are written by delta-rs (``write_deltalake``, ``DeltaTable.delete``
and ``merge``), Iceberg tables by pyiceberg (``append``, ``delete``, ``upsert``
through a SQLite catalog), Hudi tables by lakesieve's Hudi writer in
copy-on-write or merge-on-read mode (there is no other Hudi writer in Python).

Reading back never goes through lakesieve: :func:`native_rows` is the format's
own full read (hudi-rs, delta-rs, pyiceberg), and :func:`rows_with_location`
attaches to each row the lakesieve location that holds it, computed from the
format's own file list (Delta, Iceberg: every live data file read by pyarrow)
or hudi-rs's meta columns (Hudi: ``_hoodie_partition_path`` and the file id
that starts ``_hoodie_file_name``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.tables import arrow_frame

from .data import SCHEMA, Mutation, TableSpec, to_arrow

#: ``hudi-cow-cdc``: copy-on-write logging change data, which refresh reads instead of the files.
FORMATS = ("delta", "iceberg", "hudi-cow", "hudi-mor", "hudi-cow-cdc")
LOC = "__location"


def plain(table: pa.Table, schema: pa.Schema = SCHEMA) -> pa.Table:
    """``table`` restricted to ``schema``'s columns and cast to its types (string views to strings)."""
    arrays = []
    for f in schema:
        col = table.column(f.name)
        arrays.append(col if col.type == f.type else col.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _chunks(rows: list[dict[str, Any]]) -> list[pa.Table]:
    """Rows grouped by their ``loc``, one Arrow table per location, in location order."""
    by_loc: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_loc.setdefault(int(r["loc"]), []).append(r)
    return [to_arrow(by_loc[k]) for k in sorted(by_loc)]


# ----------------------------------------------------------------- Delta


def _delta_create(path: Path, spec: TableSpec) -> None:
    from deltalake import write_deltalake

    chunks = _chunks(spec.rows) or [to_arrow([])]
    for n, chunk in enumerate(chunks):
        write_deltalake(str(path), chunk, mode="append" if n else "error")


def _delta_mutate(path: Path, m: Mutation) -> None:
    from deltalake import DeltaTable, write_deltalake

    if m.kind == "append":
        write_deltalake(str(path), to_arrow(m.rows), mode="append")
    elif m.kind == "delete":
        DeltaTable(str(path)).delete(f"id IN ({', '.join(str(i) for i in m.ids)})")
    else:
        (
            DeltaTable(str(path))
            .merge(to_arrow(m.rows), "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )


def _delta_native(path: Path) -> pa.Table:
    from deltalake import DeltaTable

    return plain(DeltaTable(str(path)).to_pyarrow_table())


def _delta_files(path: Path, version: str | None = None) -> list[tuple[str, pa.Table]]:
    from deltalake import DeltaTable

    table = DeltaTable(str(path), version=int(version) if version is not None else None)
    actions = pa.table(table.get_add_actions(flatten=True))
    assert (
        "deletionVector.storageType" not in actions.column_names
        or actions.column("deletionVector.storageType").null_count == actions.num_rows
    ), "delta-rs wrote a deletion vector; read it here first"
    out = []
    for uri in table.file_uris():
        local = uri.removeprefix("file://")
        out.append((os.path.relpath(local, os.path.abspath(path)), pq.read_table(local)))
    return out


# ----------------------------------------------------------------- Iceberg


def _iceberg_catalog(path: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    side = path.parent / f"{path.name}-catalog"
    side.mkdir(exist_ok=True)
    catalog = SqlCatalog("diff", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    return catalog


def _iceberg_table(path: Path) -> Any:
    return _iceberg_catalog(path).load_table(("diff", path.name))


def _iceberg_create(path: Path, spec: TableSpec) -> None:
    catalog = _iceberg_catalog(path)
    catalog.create_namespace_if_not_exists("diff")
    table = catalog.create_table(
        ("diff", path.name), schema=SCHEMA, location=str(path), properties={"format-version": "2"}
    )
    chunks = _chunks(spec.rows) or [to_arrow([])]
    for chunk in chunks:
        table.append(chunk)


def _iceberg_mutate(path: Path, m: Mutation) -> None:
    table = _iceberg_table(path)
    if m.kind == "append":
        table.append(to_arrow(m.rows))
    elif m.kind == "delete":
        table.delete(f"id IN ({', '.join(str(i) for i in m.ids)})")
    else:
        table.upsert(to_arrow(m.rows), join_cols=["id"])


def iceberg_static(path: Path) -> Any:
    """The Iceberg table at ``path`` as of its newest metadata file (pyiceberg, no catalog)."""
    from pyiceberg.table import StaticTable

    def version(p: Path) -> int:
        head = p.name.split("-", 1)[0].removeprefix("v").split(".", 1)[0]
        return int(head) if head.isdigit() else -1

    newest = max((path / "metadata").glob("*.metadata.json"), key=version)
    return StaticTable.from_metadata(str(newest))


def _iceberg_native(path: Path) -> pa.Table:
    return plain(iceberg_static(path).scan().to_arrow())


def _iceberg_files(path: Path, snapshot: str | None = None) -> list[tuple[str, pa.Table]]:
    out = []
    table = iceberg_static(path)
    scan = table.scan(snapshot_id=int(snapshot)) if snapshot is not None else table.scan()
    for task in scan.plan_files():
        assert not task.delete_files, "pyiceberg wrote a delete file; apply it here first"
        local = task.file.file_path.removeprefix("file://")
        out.append((os.path.relpath(local, os.path.abspath(path)), pq.read_table(local)))
    return out


# ----------------------------------------------------------------- Hudi


def _hudi_options(spec: TableSpec, table_type: str, mode: str, cdc: bool = False) -> Any:
    from lakesieve.model import WriteOptions

    return WriteOptions(
        mode=mode,
        record_key=("id",),
        precombine="v",
        table_type=table_type,
        file_groups=max(spec.locations, 1),
        bucket_column="loc",
        table_name="diff",
        extra={"hoodie.table.cdc.enabled": "true"} if cdc else {},
    )


def _hudi_write(spark: Any, path: Path, rows: pa.Table, options: Any) -> None:
    from lakesieve.table import write

    frame = (
        arrow_frame(spark, _instants(rows))
        if rows.num_rows
        else spark.createDataFrame([], _spark_schema(spark))
    )
    write(path, frame, format="hudi", options=options, spark=spark)


def _instants_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with naive timestamps as UTC instants."""
    return pa.schema(
        [
            pa.field(f.name, pa.timestamp(f.type.unit, "UTC"))
            if pa.types.is_timestamp(f.type) and f.type.tz is None
            else f
            for f in schema
        ]
    )


#: The differential schema as Hudi tables hold it: hudi-rs cannot read TIMESTAMP_NTZ
#: (lakesieve's Hudi writer refuses it), so ``tn`` is an instant there.
HUDI_SCHEMA = _instants_schema(SCHEMA)


def _instants(rows: pa.Table) -> pa.Table:
    """``rows`` with naive timestamps as UTC instants, for the Hudi writer."""
    return rows.cast(_instants_schema(rows.schema))


def _spark_schema(spark: Any) -> Any:
    return arrow_frame(spark, _instants(to_arrow([{"id": 0}]))).schema


def _hudi_native_raw(path: Path) -> pa.Table:
    from hudi import HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read()
    if not batches:
        return pa.table(
            {
                "_hoodie_partition_path": pa.array([], pa.string()),
                "_hoodie_file_name": pa.array([], pa.string()),
                **{f.name: pa.array([], f.type) for f in SCHEMA},
            }
        )
    return pa.Table.from_batches(batches)


def _hudi_located(path: Path, schema: pa.Schema = SCHEMA) -> pa.Table:
    raw = _hudi_native_raw(path)
    parts = raw.column("_hoodie_partition_path").to_pylist()
    names = raw.column("_hoodie_file_name").to_pylist()
    locs = []
    for part, name in zip(parts, names, strict=True):
        file_id = name.split("_", 1)[0]
        part = (part or "").strip("/")
        locs.append(f"{part}/{file_id}" if part else file_id)
    return plain(raw, schema).append_column(LOC, pa.array(locs, pa.string()))


# ----------------------------------------------------------------- entry points


def create(spark: Any, fmt: str, path: Path, spec: TableSpec) -> None:
    """Write ``spec``'s initial rows to a new table of format ``fmt`` at ``path``."""
    if fmt == "delta":
        _delta_create(path, spec)
    elif fmt == "iceberg":
        _iceberg_create(path, spec)
    else:
        table_type = fmt.split("-")[1]
        options = _hudi_options(spec, table_type, "bulk_insert", fmt.endswith("-cdc"))
        _hudi_write(spark, path, to_arrow(spec.rows), options)


def mutate(spark: Any, fmt: str, path: Path, spec: TableSpec, m: Mutation) -> None:
    """Apply one change to the table as one commit."""
    if fmt == "delta":
        _delta_mutate(path, m)
    elif fmt == "iceberg":
        _iceberg_mutate(path, m)
    else:
        table_type = fmt.split("-")[1]
        if m.kind == "delete":
            current = native_rows(fmt, path)
            rows = current.filter(pc.is_in(current.column("id"), pa.array(m.ids, pa.int64())))
            if rows.num_rows:
                _hudi_write(spark, path, rows, _hudi_options(spec, table_type, "delete"))
        else:
            mode = "insert" if m.kind == "append" else "upsert"
            _hudi_write(spark, path, to_arrow(m.rows), _hudi_options(spec, table_type, mode))


def native_rows(fmt: str, path: Path) -> pa.Table:
    """Every live row, as the format's own reader returns it (no lakesieve code)."""
    if fmt == "delta":
        return _delta_native(path)
    if fmt == "iceberg":
        return _iceberg_native(path)
    return plain(_hudi_native_raw(path), HUDI_SCHEMA)


def rows_with_location(fmt: str, path: Path, schema: pa.Schema | None = None) -> pa.Table:
    """Every live row (cast to ``schema``) with its location in column :data:`LOC`.

    Delta and Iceberg tables must be unpartitioned and free of deletion vectors
    and delete files (what delta-rs, pyiceberg and lakesieve's writers produce).
    """
    if fmt.startswith("hudi"):
        return _hudi_located(path, schema or HUDI_SCHEMA)
    schema = schema or SCHEMA
    files = _delta_files(path) if fmt == "delta" else _iceberg_files(path)
    parts = [
        plain(t, schema).append_column(LOC, pa.array([loc] * t.num_rows, pa.string()))
        for loc, t in files
    ]
    if not parts:
        return schema.empty_table().append_column(LOC, pa.array([], pa.string()))
    return pa.concat_tables(parts)


def data_files(fmt: str, path: Path, as_of: str | None = None) -> list[tuple[str, pa.Table]]:
    """Delta or Iceberg: every live data file's location and rows at ``as_of``, read by pyarrow.

    ``as_of`` is a Delta version or an Iceberg snapshot id (latest when ``None``).
    """
    return _delta_files(path, as_of) if fmt == "delta" else _iceberg_files(path, as_of)


def locations(fmt: str, path: Path) -> Sequence[str]:
    """Every location of the table (for Delta and Iceberg: every live data file)."""
    located = rows_with_location(fmt, path)
    return sorted(set(located.column(LOC).to_pylist()))
