"""Refresh from Hudi change data files (``hoodie.table.cdc.enabled``, before and after images).

A copy-on-write table written with change data logging records, per file
group rewritten by a write, the old and new version of every changed row
(:mod:`lakesieve.plugins.hudi.cdc`). Refresh then reads only those files. The
oracle is independent of that path: hudi-rs' own read of the table filtered
by Spark SQL for the rows, and a fresh build for the selected locations.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import WriteError
from lakesieve.model import TableRef, WriteOptions
from lakesieve.plugins.hudi.cdc import image_values
from lakesieve.plugins.hudi.changes import compute_changes
from lakesieve.table import open as open_table
from lakesieve.table import write

from tests.tables import (
    CHAINS,
    check_compacted_exact,
    check_refreshed_k,
    df_of,
    expected_rows,
    hudi_rs_rows,
    k_ops,
    k_predicates,
    rows_with_random_k,
    selected_locations,
    sorted_rows,
)

CDC = {"hoodie.table.cdc.enabled": "true"}

OPS = k_ops(["upsert", "upsert", "delete", "insert", "bulk_insert"])
PREDICATE = k_predicates()


def _write(spark: Any, path: Path, mode: str, rows: list[dict[str, Any]], **extra: str) -> None:
    options = WriteOptions(
        mode=mode,
        record_key=("id",),
        precombine="version",
        file_groups=4 if mode == "bulk_insert" else None,
        extra=extra,
    )
    write(path, df_of(spark, rows), format="hudi", options=options, spark=spark)


def _cdc_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(".*.cdc") if ".hoodie" not in p.parts)


def _change_data_equals_fresh(
    spark: Any, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    work = Path(tempfile.mkdtemp(prefix="lakesieve-cdc-"))
    try:
        path = work / "t"
        _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 180)), 1), **CDC)
        table = open_table(path)
        table.build_index("k", type="exact", name="k_exact", spark=spark)
        table.build_index("k", type="sieve", name="k_sieve", spark=spark)
        for mode, ids, seed in ops:
            _write(spark, path, mode, rows_with_random_k(ids, seed))
        results = {r.index: r for r in table.refresh(spark=spark, policy=CHAINS)}
        refreshed = results["k_exact"]
        assert refreshed.action == "delta", refreshed
        # writes rewrite existing file groups (inserts go to the small ones): every touched
        # location is answered from its change data; a bulk insert (new file groups, no
        # change data) in the range sends the whole range to the other paths
        if all(mode != "bulk_insert" for mode, _, _ in ops):
            assert refreshed.locations_from_change_data > 0, refreshed
            assert refreshed.locations_read == 0, refreshed
        else:
            assert refreshed.locations_from_change_data == 0, refreshed
        check_refreshed_k(spark, table, path, predicates, ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(ops=OPS, predicates=st.lists(PREDICATE, min_size=4, max_size=8))
def test_refresh_from_change_data_equals_a_fresh_build(
    spark: Any, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    """Refreshed from change data files, the index answers as a fresh build (CI: two draws)."""
    _change_data_equals_fresh(spark, ops, predicates)


@pytest.mark.long
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(ops=OPS, predicates=st.lists(PREDICATE, min_size=4, max_size=8))
def test_refresh_from_change_data_equals_a_fresh_build_more_examples(
    spark: Any, ops: list[tuple[str, list[int], int]], predicates: list[str]
) -> None:
    """The long tier's draws of :func:`test_refresh_from_change_data_equals_a_fresh_build`."""
    _change_data_equals_fresh(spark, ops, predicates)


def _location_counts(rows_by_loc: dict[str, Any]) -> dict[tuple[str, Any], int]:
    out: dict[tuple[str, Any], int] = {}
    for loc, rows in rows_by_loc.items():
        for value in rows.column("k").to_pylist():
            out[(loc, value)] = out.get((loc, value), 0) + 1
    return out


def test_change_data_files_hold_each_rows_before_and_after(spark: Any, tmp_path: Path) -> None:
    """hudi-rs' rows per file group after = rows before - before images + after images."""
    from tests.tables import hudi_rs_rows_by_location

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 160)), 1), **CDC)
    table = open_table(path)
    instants = [table.timeline()[-1].id]
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 200, 3)), 2))
    _write(spark, path, "delete", rows_with_random_k(list(range(1, 160, 11)), 3))
    _write(spark, path, "insert", rows_with_random_k(list(range(300, 310)), 4))
    instants += [i.id for i in open_table(path).timeline()[1:]]
    assert len(instants) == 4
    ref = TableRef(str(path), "hudi")
    for start, end in itertools.pairwise(instants):
        changes = compute_changes(ref, start, end)
        assert changes.change_images and set(changes.change_images) == changes.touched
        expected = _location_counts(hudi_rs_rows_by_location(path, start))
        for loc, images in changes.change_images.items():
            records = 0
            for rel in images.files:
                before, after, held = image_values((path / rel).read_bytes(), "k")
                records += held
                for value in before:
                    expected[(loc, value)] = expected.get((loc, value), 0) - 1
                for value in after:
                    expected[(loc, value)] = expected.get((loc, value), 0) + 1
            assert records == images.records
        assert {k: v for k, v in expected.items() if v} == _location_counts(
            hudi_rs_rows_by_location(path, end)
        ), (start, end)
    # the data files' readers skip the change data files
    ids = (set(range(0, 200, 3)) | set(range(160)) | set(range(300, 310))) - set(range(1, 160, 11))
    assert hudi_rs_rows(path).num_rows == len(ids)


def test_changes_use_change_data_only_for_plain_writes(spark: Any, tmp_path: Path) -> None:
    from lakesieve.plugins.hudi import services as maintenance

    plain = tmp_path / "plain"
    _write(spark, plain, "bulk_insert", rows_with_random_k(list(range(0, 80)), 1))
    first = open_table(plain).timeline()[-1].id
    _write(spark, plain, "upsert", rows_with_random_k(list(range(0, 80, 3)), 2))
    last = open_table(plain).timeline()[-1].id
    assert not compute_changes(TableRef(str(plain), "hudi"), first, last).change_images
    assert not _cdc_files(plain)

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 80)), 1), **CDC)
    ref = TableRef(str(path), "hudi")
    built = open_table(path).timeline()[-1].id
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 80, 3)), 2))
    upserted = open_table(path).timeline()[-1].id
    changes = compute_changes(ref, built, upserted)
    assert set(changes.change_images) == changes.touched
    # from the beginning, backwards, or over a bulk insert: no change data
    assert not compute_changes(ref, None, upserted).change_images
    assert not compute_changes(ref, upserted, built).change_images
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(500, 540)), 3))
    bulk = open_table(path).timeline()[-1].id
    assert not (compute_changes(ref, built, bulk).change_images.keys() - changes.touched)
    assert not compute_changes(ref, upserted, bulk).change_images
    maintenance.cluster(spark, str(path), sort_by="d")
    clustered = open_table(path).timeline()[-1].id
    assert not compute_changes(ref, bulk, clustered).change_images


def test_writer_refuses_change_data_it_cannot_log(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "m"
    options = WriteOptions(
        mode="bulk_insert", record_key=("id",), table_type="mor", extra=dict(CDC)
    )
    with pytest.raises(WriteError, match=r"hoodie\.table\.cdc\.enabled.*copy-on-write"):
        write(
            path,
            df_of(spark, rows_with_random_k([1, 2], 1)),
            format="hudi",
            options=options,
            spark=spark,
        )
    assert not path.exists() or not any(path.iterdir())
    bad = WriteOptions(
        mode="bulk_insert", record_key=("id",), extra={"hoodie.table.cdc.enabled": "yes"}
    )
    with pytest.raises(
        WriteError, match=r"hoodie\.table\.cdc\.enabled='yes' must be true or false"
    ):
        write(
            path,
            df_of(spark, rows_with_random_k([1, 2], 1)),
            format="hudi",
            options=bad,
            spark=spark,
        )

    plain = tmp_path / "plain"
    _write(spark, plain, "bulk_insert", rows_with_random_k(list(range(0, 10)), 1))
    before = sorted(p.name for p in plain.rglob("*"))
    with pytest.raises(WriteError, match="differs from the table's setting"):
        _write(spark, plain, "upsert", rows_with_random_k([1], 2), **CDC)
    assert sorted(p.name for p in plain.rglob("*")) == before

    # a table logging another mode (written elsewhere) is refused, not left half-logged
    props = plain / ".hoodie" / "hoodie.properties"
    props.write_text(
        props.read_text()
        + "hoodie.table.cdc.enabled=true\nhoodie.table.cdc.supplemental.logging.mode=OP_KEY_ONLY\n"
    )
    with pytest.raises(WriteError, match="mode OP_KEY_ONLY"):
        _write(spark, plain, "upsert", rows_with_random_k([1], 2))


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_unreadable_change_data_falls_back_to_whole_reads(
    spark: Any, tmp_path: Path, damage: str
) -> None:
    """A lost file, or one holding fewer records than its commit wrote, never shrinks a delta."""
    from lakesieve.errors import LakesieveWarning
    from lakesieve.plugins.hudi.cdc import block_content, encode_records
    from lakesieve.plugins.hudi.writer.log_block import (
        INSTANT_TIME,
        SCHEMA,
        encode_block,
        iter_blocks,
    )

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 120)), 1), **CDC)
    table = open_table(path)
    table.build_index("k", type="exact", name="k_exact", spark=spark)
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 120, 5)), 2))
    victim = _cdc_files(path)[0]
    if damage == "missing":
        victim.unlink()
    else:  # drop the last change record, keep the file well-formed
        import io

        from fastavro import parse_schema, schemaless_reader

        block = next(iter_blocks(victim.read_bytes()))
        schema = json.loads(block.header[SCHEMA])
        from lakesieve.plugins.hudi.cdc import split_records

        parsed = parse_schema(schema)
        records = [
            schemaless_reader(io.BytesIO(r), parsed, None) for r in split_records(block.content)
        ]
        content = block_content(encode_records(schema, records[:-1]))
        victim.write_bytes(
            encode_block(
                6, {INSTANT_TIME: block.header[INSTANT_TIME], SCHEMA: block.header[SCHEMA]}, content
            )
        )
    with pytest.warns(LakesieveWarning, match=r"change data of .* cannot be read"):
        result = table.refresh(spark=spark, policy=CHAINS)[0]
    assert result.action == "delta" and result.locations_from_change_data == 0, result
    assert result.locations_read > 0
    check_compacted_exact(
        spark, table, path, ("k = 3", "k between 10 and 14", "k is null", "k > 30")
    )


def test_clean_deletes_change_data_with_its_slice(spark: Any, tmp_path: Path) -> None:
    from lakesieve.plugins.hudi import services as maintenance

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 60)), 1), **CDC)
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 60, 2)), 2))
    first_logged = set(_cdc_files(path))
    _write(spark, path, "upsert", rows_with_random_k(list(range(1, 60, 2)), 3))
    second_logged = set(_cdc_files(path)) - first_logged
    assert first_logged and second_logged
    maintenance.clean(str(path), retain_commits=1)
    # slices of the first upsert are no longer read by any retained instant
    remaining = set(_cdc_files(path))
    assert remaining == second_logged
    assert hudi_rs_rows(path).num_rows == 60


def _nan_free(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with NaN spelled out (NaN != NaN would fail equal rows)."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r) for r in rows]


def test_typed_and_partition_columns(spark: Any, tmp_path: Path) -> None:
    """Strings, dates and doubles come from change data; a partition column is read as before."""
    import warnings

    from lakesieve.errors import LakesieveWarning

    path = tmp_path / "t"
    options = WriteOptions(
        mode="bulk_insert",
        record_key=("id",),
        partition_by=("part",),
        precombine="version",
        file_groups=2,
        extra=CDC,
    )
    rows = rows_with_random_k(list(range(0, 150)), 1)
    write(path, df_of(spark, rows), format="hudi", options=options, spark=spark)
    table = open_table(path)
    for column in ("s", "d", "amount", "part"):
        table.build_index(column, type="exact", name=f"x_{column}", spark=spark)
    changed = rows_with_random_k(list(range(0, 150, 4)), 2)
    for i, row in enumerate(changed):
        row["s"], row["amount"] = f"new-{i % 5}", float("nan") if i % 7 == 0 else -0.0
        row["d"] = row["d"].replace(year=2030)
    upsert = WriteOptions(
        mode="upsert", record_key=("id",), partition_by=("part",), precombine="version"
    )
    write(path, df_of(spark, changed), format="hudi", options=upsert, spark=spark)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LakesieveWarning)
        results = {r.index: r for r in table.refresh(spark=spark, policy=CHAINS)}
    for column in ("s", "d", "amount"):
        assert results[f"x_{column}"].locations_from_change_data > 0, results[f"x_{column}"]
        assert results[f"x_{column}"].locations_read == 0, results[f"x_{column}"]
    assert results["x_part"].locations_from_change_data == 0, results["x_part"]
    for column in ("s", "d", "amount", "part"):
        table.compact(f"x_{column}", spark=spark)
        table.build_index(column, type="exact", name=f"fresh_{column}", spark=spark)
    table = open_table(path)
    wheres = {
        "s": ["s = 'new-3'", "s > 'new'", "s is null"],
        "d": ["d = DATE '2030-01-01'", "d < DATE '2024-02-01'"],
        "amount": [
            "amount = 0.0",
            "amount = -0.0",
            "amount = CAST('NaN' AS DOUBLE)",
            "amount > 500",
        ],
        "part": ["part = 'p1'", "part <> 'p0'"],
    }
    last = table.timeline()[-1].id
    for column, items in wheres.items():
        for where in items:
            assert selected_locations(table, where, f"x_{column}") == selected_locations(
                table, where, f"fresh_{column}"
            ), where
            got = _nan_free(sorted_rows(table.read(spark, where)))
            assert got == _nan_free(expected_rows(spark, path, where, last)), where


def test_change_data_beside_new_file_groups(spark: Any, tmp_path: Path) -> None:
    """One upsert rewrites file groups (change data) and creates others (read whole)."""
    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 120)), 1), **CDC)
    table = open_table(path)
    table.build_index("k", type="exact", name="k_exact", spark=spark)
    rows = rows_with_random_k(list(range(0, 120, 4)) + list(range(500, 560)), 2)
    options = WriteOptions(
        mode="upsert", record_key=("id",), precombine="version", small_file_limit_bytes=0
    )
    write(path, df_of(spark, rows), format="hudi", options=options, spark=spark)
    result = table.refresh(spark=spark, policy=CHAINS)[0]
    assert result.locations_from_change_data > 0 and result.locations_read > 0, result
    table.compact("k_exact", spark=spark)
    table.build_index("k", type="exact", name="k_fresh", spark=spark)
    table = open_table(path)
    last = table.timeline()[-1].id
    for where in ("k = 3", "k between 10 and 14", "k is null", "k > 30", "k < 5"):
        assert selected_locations(table, where, "k_exact") == selected_locations(
            table, where, "k_fresh"
        ), where
        assert sorted_rows(table.read(spark, where)) == expected_rows(spark, path, where, last)


def test_readers_skip_change_data_files_in_a_merge_on_read_slice(
    spark: Any, tmp_path: Path
) -> None:
    """Apache Hudi logs a merge-on-read table's change data at compaction, into the new slice.

    hudi-rs lists such ``.cdc`` files among the slice's log files; neither it
    nor lakesieve may read their blocks as data.
    """
    from lakesieve.plugins.hudi.cdc import CDC_SUFFIX, block_content, cdc_schema, encode_records
    from lakesieve.plugins.hudi.writer.log_block import INSTANT_TIME, SCHEMA, encode_block

    def sorted_rows_of(rows: Any) -> list[tuple[Any, ...]]:
        return sorted(
            zip(*(rows.column(c).to_pylist() for c in ("id", "k", "version")), strict=True)
        )

    path = tmp_path / "m"
    options = WriteOptions(
        mode="bulk_insert",
        record_key=("id",),
        precombine="version",
        table_type="mor",
        file_groups=2,
    )
    write(
        path,
        df_of(spark, rows_with_random_k(list(range(40)), 1)),
        format="hudi",
        options=options,
        spark=spark,
    )
    upsert = WriteOptions(mode="upsert", record_key=("id",), precombine="version", table_type="mor")
    write(
        path,
        df_of(spark, rows_with_random_k(list(range(0, 40, 3)), 2)),
        format="hudi",
        options=upsert,
        spark=spark,
    )
    expected = sorted_rows_of(hudi_rs_rows(path))
    base = sorted(p for p in path.glob("*.parquet"))[0]
    file_id, instant = base.name.split("_")[0], base.name.rsplit("_", 1)[1].split(".")[0]
    schema = {
        "type": "record",
        "name": "row",
        "fields": [
            {"name": "id", "type": ["null", "long"]},
            {"name": "k", "type": ["null", "long"]},
        ],
    }
    cdc = cdc_schema(schema)
    content = block_content(
        encode_records(
            cdc, [{"op": "i", "ts_ms": instant, "before": None, "after": {"id": 999, "k": 5}}]
        )
    )
    block = encode_block(6, {INSTANT_TIME: instant, SCHEMA: json.dumps(cdc)}, content)
    (path / f".{file_id}_{instant}.log.1_0-0-0{CDC_SUFFIX}").write_bytes(block)
    from hudi import HudiTableBuilder

    listed = [
        name
        for fs in HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices()
        for name in fs.log_files_relative_paths()
    ]
    assert any(name.endswith(CDC_SUFFIX) for name in listed), listed  # hudi-rs 0.5.0 lists it
    assert sorted_rows_of(hudi_rs_rows(path)) == expected
    table = open_table(path)
    assert sorted_rows_of(table.read_arrow()) == expected
    assert table.read(spark).count() == len(expected)


def test_change_data_delta_on_the_driver_or_in_spark_alike(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within the bound the change-image delta comes back as a table, past it as a frame: same rows.

    The truth is hudi-rs' rows per file group at both instants.
    """
    from lakesieve.maintenance.refresh import plan as refresh_plan

    from tests.tables import hudi_rs_rows_by_location

    path = tmp_path / "t"
    _write(spark, path, "bulk_insert", rows_with_random_k(list(range(0, 160)), 1), **CDC)
    table = open_table(path)
    start = table.timeline()[-1]
    _write(spark, path, "upsert", rows_with_random_k(list(range(0, 200, 3)), 2))
    _write(spark, path, "delete", rows_with_random_k(list(range(1, 160, 11)), 3))
    end = open_table(path).timeline()[-1]
    table = open_table(path)
    want = _location_counts(hudi_rs_rows_by_location(path, end.id))
    for key, n in _location_counts(hudi_rs_rows_by_location(path, start.id)).items():
        want[key] = want.get(key, 0) - n
    expected = sorted(((loc, k, n) for (loc, k), n in want.items() if n), key=repr)
    for bound, on_driver in ((10**6, True), (0, False)):
        monkeypatch.setattr(refresh_plan, "COLLECT_ROWS", bound)
        plan = refresh_plan.plan_delta(table.states, "k", start, end)
        assert plan.images and not plan.new_units and not plan.stamped_new_units, plan
        rows, held = refresh_plan.summed_frame(table.states, spark, "k", start, end, plan)
        try:
            assert rows is not None and (rows.table is not None) == on_driver, bound
            got_rows = rows.table.to_pylist() if rows.table is not None else rows.frame.collect()
            got = sorted(((r["location"], r["key"], r["count"]) for r in got_rows), key=repr)
            assert got == expected, bound
        finally:
            for frame in [*plan.held, *([held] if held is not None else [])]:
                frame.unpersist()
