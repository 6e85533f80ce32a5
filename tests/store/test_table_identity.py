"""A table removed and written again at the same path never answers from the old table's indexes.

A Delta table whose files are removed with a glob keeps ``.lakesieve`` (a
dot folder), and its new versions start at 0 again: before the store
recorded the table's identity, the old zone map said ``k = 350`` lived in a
file of the old table, and the read returned no row where delta-rs returns
one. Iceberg keeps its index store beside the table, so removing the table
folder leaves it too. The truth is each format's own reader filtered by
Spark SQL.
"""

from __future__ import annotations

import glob
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.errors import LakesieveWarning
from lakesieve.store.index_log import IndexDefinition, apply_action, table_id_fingerprint
from lakesieve.store.table_store import TableStore
from lakesieve.table import open as open_table

from tests.differential.formats import _iceberg_catalog
from tests.tables import native_where, rows_repr

WHERE = "k = 350"


def _keys(values: range | list[int]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(list(values), pa.int64()),
            "v": pa.array([str(x) for x in values], pa.string()),
        }
    )


def _write_delta(path: Path, chunks: list[range | list[int]]) -> None:
    from deltalake import write_deltalake

    for chunk in chunks:
        write_deltalake(str(path), _keys(chunk), mode="append")


def _write_iceberg(path: Path, chunks: list[range | list[int]]) -> None:
    catalog = _iceberg_catalog(path)
    catalog.create_namespace_if_not_exists("diff")
    table = catalog.create_table(
        ("diff", path.name),
        schema=_keys([]).schema,
        location=str(path),
        properties={"format-version": "2"},
    )
    for chunk in chunks:
        table.append(_keys(chunk))


def _remove(fmt: str, path: Path) -> None:
    if fmt == "delta":  # a glob: the dot folder of indexes survives
        for entry in glob.glob(str(path / "*")):
            shutil.rmtree(entry) if os.path.isdir(entry) else os.remove(entry)
        assert os.listdir(path) == [".lakesieve"]
    else:  # the table folder and its catalog; the index store beside them survives
        shutil.rmtree(path)
        shutil.rmtree(path.parent / f"{path.name}-catalog")


def _read(spark: Any, table: Any) -> list[str]:
    return rows_repr(table.read(spark, WHERE), ["k", "v"])


@pytest.mark.spark
# CI: Delta (its versions repeat: the wrong row); Iceberg (random snapshot ids, its
# identity also checked by the format kit) in the long tier
@pytest.mark.parametrize("fmt", ["delta", pytest.param("iceberg", marks=pytest.mark.long)])
def test_a_table_written_again_at_the_path_never_uses_the_old_indexes(
    spark: Any, tmp_path: Path, fmt: str
) -> None:
    write = _write_delta if fmt == "delta" else _write_iceberg
    path = tmp_path / "t"
    write(path, [range(i * 100, i * 100 + 100) for i in range(4)])
    old = open_table(str(path))
    old.build_index("k", "zonemap", name="k_zm", spark=spark)
    old.build_index("v", "bloom", name="v_bloom", spark=spark)
    assert len(old.plan(WHERE).units) == 1  # the old index prunes
    old_ids = [i.id for i in old.timeline()]

    _remove(fmt, path)
    # 350 now lives in the first file: at the same version ids, on Delta
    write(path, [[350, 351], range(1000, 1100), range(1100, 1200), range(1200, 1300)])
    table = open_table(str(path))
    if fmt == "delta":
        assert [i.id for i in table.timeline()] == old_ids
    columns, truth = native_where(spark, fmt, path, WHERE)
    assert len(truth) == 1 and columns[:2] == ["k", "v"]

    with pytest.warns(LakesieveWarning, match="belongs to another table"):
        assert _read(spark, table) == truth
    with pytest.warns(LakesieveWarning, match="belongs to another table"):
        assert table.indexes() == []
    with pytest.warns(LakesieveWarning, match="belongs to another table"):
        assert len(table.plan(WHERE).units) == 4  # no index: every file

    # a build starts the store anew: the old table's definitions are gone
    with pytest.warns(LakesieveWarning, match="belongs to another table"):
        table.build_index("k", "zonemap", name="k_zm", spark=spark)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        again = open_table(str(path))
        assert [d.name for d in again.indexes()] == ["k_zm"]
        assert len(again.plan(WHERE).units) == 1
        assert _read(spark, again) == truth


def _definition(name: str) -> dict[str, Any]:
    return {
        "op": "define",
        "index": name,
        "type": "zonemap",
        "column": "k",
        "key_type": "bigint",
        "params": {},
    }


def test_a_new_identity_in_the_log_clears_the_definitions_before_it() -> None:
    indexes: dict[str, IndexDefinition] = {}
    first, second = table_id_fingerprint("delta", "a"), table_id_fingerprint("delta", "b")
    fingerprint = apply_action(indexes, {"op": "table", "fingerprint": first}, None)
    apply_action(indexes, _definition("x"), fingerprint)
    assert apply_action(indexes, {"op": "table", "fingerprint": first}, fingerprint) == first
    assert list(indexes) == ["x"]  # the same table: kept
    fingerprint = apply_action(indexes, {"op": "table", "fingerprint": second}, fingerprint)
    assert fingerprint == second and indexes == {}


def test_an_older_store_learns_the_identity_and_keeps_its_indexes() -> None:
    indexes: dict[str, IndexDefinition] = {}
    fingerprint = apply_action(indexes, {"op": "table", "fingerprint": "delta:0"}, None)
    apply_action(indexes, _definition("x"), fingerprint)
    mine = table_id_fingerprint("delta", "a")
    assert apply_action(indexes, {"op": "table", "fingerprint": mine}, fingerprint) == mine
    assert list(indexes) == ["x"]


def test_a_store_without_an_identity_is_read_as_it_is(tmp_path: Path) -> None:
    """An older store (fingerprint of the first instant) or a format without identities: no check."""
    store = TableStore(tmp_path / "store", lambda: table_id_fingerprint("delta", "a"))
    store.commit([{"op": "table", "fingerprint": "delta:0"}, _definition("x")], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        assert list(store.read_log().indexes) == ["x"]
    other = TableStore(tmp_path / "other", lambda: None)
    other.commit(
        [{"op": "table", "fingerprint": table_id_fingerprint("delta", "b")}, _definition("y")], -1
    )
    assert list(other.read_log().indexes) == ["y"]
