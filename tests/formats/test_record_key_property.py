"""Delta and Iceberg tables remember their record key between writes, as a table property.

The property is checked with the format's own library (delta-rs, pyiceberg),
and the rows with a full read compared against what the writes should leave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.errors import WriteError
from lakesieve.model import WriteOptions
from lakesieve.table import write

pytestmark = pytest.mark.spark


def _frame(spark: Any, ids: range, tag: str) -> Any:
    return spark.createDataFrame([(i, f"{tag}{i}") for i in ids], "id bigint, s string")


def _rows(spark: Any, path: Path) -> dict[int, str]:
    frame = lakesieve.open(path).full_read(spark)
    return {int(r["id"]): r["s"] for r in frame.collect()}


def _delta_key(path: Path) -> str | None:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).metadata().configuration.get("lakesieve.recordKey")


def _iceberg_key(path: Path) -> str | None:
    import json

    metadata = sorted((path / "metadata").glob("*.metadata.json"))[-1]
    from pyiceberg.table import StaticTable

    props = StaticTable.from_metadata(str(metadata)).metadata.properties
    assert json.loads(metadata.read_text())["properties"] == props
    return props.get("lakesieve.record-key")


KEY_OF = {"delta": _delta_key, "iceberg": _iceberg_key}


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_the_key_given_at_creation_is_kept_and_used(spark: Any, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / fmt
    write(
        path,
        _frame(spark, range(0, 20), "a"),
        format=fmt,
        options=WriteOptions(mode="upsert", record_key=("id",)),
        spark=spark,
    )
    assert KEY_OF[fmt](path) == "id"
    # an upsert and a delete that give no key use the one the table keeps
    write(path, _frame(spark, range(10, 30), "b"), options=WriteOptions(mode="upsert"), spark=spark)
    write(path, _frame(spark, range(0, 5), "x"), options=WriteOptions(mode="delete"), spark=spark)
    want = {i: ("a" if i < 10 else "b") + str(i) for i in range(5, 30)}
    assert _rows(spark, path) == want
    assert KEY_OF[fmt](path) == "id"
    # a different key is refused in one line, and nothing is written
    before = [i.id for i in lakesieve.open(path).timeline()]
    with pytest.raises(WriteError, match=r"record key s \(--record-key\) differs .* record key id"):
        write(
            path,
            _frame(spark, range(0, 3), "y"),
            options=WriteOptions(mode="upsert", record_key=("s",)),
            spark=spark,
        )
    assert [i.id for i in lakesieve.open(path).timeline()] == before
    assert _rows(spark, path) == want


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_keyed_write_without_any_key_names_the_flag(spark: Any, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / fmt
    write(
        path,
        _frame(spark, range(0, 5), "a"),
        format=fmt,
        options=WriteOptions(mode="append"),
        spark=spark,
    )
    assert KEY_OF[fmt](path) is None
    with pytest.raises(WriteError, match="no record key given \\(--record-key\\)"):
        write(
            path, _frame(spark, range(0, 2), "b"), options=WriteOptions(mode="upsert"), spark=spark
        )
    assert _rows(spark, path) == {i: f"a{i}" for i in range(5)}


def _create_then_upsert_with_a_key(spark: Any, path: Path, fmt: str) -> None:
    """A table created without a record key, then an upsert that names one (``id``)."""
    write(
        path,
        _frame(spark, range(0, 10), "a"),
        format=fmt,
        options=WriteOptions(mode="append"),
        spark=spark,
    )
    assert KEY_OF[fmt](path) is None
    write(
        path,
        _frame(spark, range(5, 12), "b"),
        options=WriteOptions(mode="upsert", record_key=("id",)),
        spark=spark,
    )
    assert KEY_OF[fmt](path) == "id"


def test_iceberg_remembers_a_key_first_given_later_without_an_extra_snapshot(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "ice"
    _create_then_upsert_with_a_key(spark, path, "iceberg")
    assert len(lakesieve.open(path).timeline()) == 2
    write(path, _frame(spark, range(0, 2), "x"), options=WriteOptions(mode="delete"), spark=spark)
    assert _rows(spark, path) == {i: ("a" if i < 5 else "b") + str(i) for i in range(2, 12)}


def test_delta_learns_a_key_first_given_later(spark: Any, tmp_path: Path) -> None:
    """A Delta table created without a key keeps the first key a later write names."""
    from deltalake import DeltaTable

    path = tmp_path / "delta"
    _create_then_upsert_with_a_key(spark, path, "delta")
    # the data commit, then one metadata-only commit that adds and removes no file
    history = DeltaTable(str(path)).history()
    assert [h["operation"] for h in history[:1]] == ["SET TBLPROPERTIES"]
    assert _rows(spark, path) == {i: ("a" if i < 5 else "b") + str(i) for i in range(12)}
    write(path, _frame(spark, range(0, 2), "x"), options=WriteOptions(mode="delete"), spark=spark)
    assert _rows(spark, path) == {i: ("a" if i < 5 else "b") + str(i) for i in range(2, 12)}
    with pytest.raises(WriteError, match="differs from the table's record key id"):
        write(
            path,
            _frame(spark, range(0, 2), "y"),
            options=WriteOptions(mode="upsert", record_key=("s",)),
            spark=spark,
        )
