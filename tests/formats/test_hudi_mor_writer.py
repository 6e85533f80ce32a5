"""lakesieve's Hudi merge-on-read writer, checked at every instant against a Python model.

Every write of a sequence is read back by hudi-rs (latest and by time travel
to each earlier instant), by lakesieve's own reader (``full_read`` as of each
instant), and the commit metadata's write stats are compared with what the
write really did to each file group.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.contract import registry
from lakesieve.errors import WriteError
from lakesieve.model import WriteOptions
from lakesieve.plugins.hudi.partitions import location_of
from lakesieve.plugins.hudi.writer import log_block as logs
from lakesieve.plugins.hudi.writer import table_config as cfg
from lakesieve.plugins.hudi.writer import write_table

pytestmark = pytest.mark.spark

SCHEMA = "id long, name string, p int, v long"
DATA = ("id", "name", "p", "v")
SLOW = os.environ.get("LAKESIEVE_SLOW") == "1"


# ---------------------------------------------------------------------------
# helpers shared with test_hudi_maintenance
# ---------------------------------------------------------------------------


def hudi_rows(path: str | Path, as_of: str | None = None) -> list[tuple[Any, ...]]:
    """Rows hudi-rs returns (latest, or as of an instant), sorted."""
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    if not batches or not sum(b.num_rows for b in batches):
        return []
    data = pa.Table.from_batches(batches).select(list(DATA)).to_pylist()
    return sorted(tuple(r[c] for c in DATA) for r in data)


def lakesieve_rows(spark: Any, path: str | Path, as_of: str | None) -> list[tuple[Any, ...]]:
    """Rows lakesieve's own reader returns as of an instant, sorted."""
    df = lakesieve.open(str(path)).full_read(spark, as_of=as_of)
    return sorted(tuple(r) for r in df.select(*DATA).collect())


def rows_by_location(path: str | Path, as_of: str) -> dict[str, set[tuple[Any, ...]]]:
    """Every file group's rows as of an instant, as hudi-rs reads its file slice (no lakesieve)."""
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of)
    reader = table.create_file_group_reader_with_options(options)
    out: dict[str, set[tuple[Any, ...]]] = {}
    for file_slice in table.get_file_slices(options):
        batch = reader.read_file_slice(file_slice, options)
        location = location_of(file_slice.partition_path, file_slice.file_id)
        out[location] = {tuple(r[c] for c in DATA) for r in batch.to_pylist()}
    return out


def df_of(spark: Any, rows: Iterable[tuple[Any, ...]]) -> Any:
    """A Spark DataFrame of ``(id, name, p, v)`` rows."""
    return spark.createDataFrame(list(rows), SCHEMA)


class Model:
    """The rows a table should hold: one row per (partition, id); later writes win."""

    def __init__(self, partitioned: bool) -> None:
        self.partitioned = partitioned
        self.rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def ident(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return (row[2] if self.partitioned else None, row[0])

    def apply(self, mode: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if mode == "delete":
            for row in rows:
                if self.partitioned:
                    self.rows.pop(self.ident(row), None)
                else:
                    self.rows = {k: v for k, v in self.rows.items() if k[1] != row[0]}
            return
        best: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for row in rows:  # duplicates in one batch: largest v, else the last
            key = self.ident(row)
            if key not in best or row[3] >= best[key][3]:
                best[key] = row
        self.rows.update(best)

    def expected(self) -> list[tuple[Any, ...]]:
        return sorted(self.rows.values())


class History:
    """Expected rows after every completed instant, and checks of every reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.states: list[tuple[str, list[tuple[Any, ...]]]] = []

    def record(self, instant: str, rows: list[tuple[Any, ...]]) -> None:
        self.states.append((instant, rows))

    def check_hudi(self, retained: int | None = None) -> None:
        """hudi-rs: the latest read and a time-travel read of every (retained) instant."""
        states = self.states if retained is None else self.states[-retained:]
        assert hudi_rows(self.path) == self.states[-1][1]
        for instant, rows in states:
            assert hudi_rows(self.path, instant) == rows, f"hudi-rs as of {instant}"

    def check_lakesieve(self, spark: Any, retained: int | None = None) -> None:
        """lakesieve's reader as of every (retained) instant."""
        states = self.states if retained is None else self.states[-retained:]
        for instant, rows in states:
            assert lakesieve_rows(spark, self.path, instant) == rows, f"lakesieve as of {instant}"

    def check_changes(self) -> None:
        """``TableFormat.changes`` names every location whose rows changed."""
        table = lakesieve.open(str(self.path))
        before: dict[str, set[tuple[Any, ...]]] = {}
        previous: str | None = None
        for instant, _rows in self.states:
            now = rows_by_location(self.path, instant)
            changes = registry.table_format(table.ref).changes(start=previous, end=instant)
            touched = changes.added | changes.rewritten | changes.removed
            for loc in set(now) | set(before):
                if now.get(loc, set()) != before.get(loc, set()):
                    assert loc in touched, f"{loc} changed in ({previous}, {instant}]"
            for loc in changes.updated_in_place:
                keys_now = {r[0] for r in now.get(loc, set())}
                keys_before = {r[0] for r in before.get(loc, set())}
                assert keys_now == keys_before, f"{loc} reported as updated in place"
            before, previous = now, instant


def meta(path: Path, instant: str, action: str = "deltacommit") -> dict[str, Any]:
    """The completed metadata of an instant."""
    return json.loads((path / ".hoodie" / f"{instant}.{action}").read_text())


def stats_of(path: Path, instant: str, action: str = "deltacommit") -> list[dict[str, Any]]:
    """Every write stat of an instant."""
    return [s for ss in meta(path, instant, action)["partitionToWriteStats"].values() for s in ss]


def check_counts(
    path: Path, instant: str, before: dict[str, set[Any]], after: dict[str, set[Any]], action: str
) -> None:
    """The write stats' counts agree with the keys each file group held before and after."""
    for stat in stats_of(path, instant, action):
        loc = location_of(stat["partitionPath"], stat["fileId"])
        old = {r[0] for r in before.get(loc, set())}
        new = {r[0] for r in after.get(loc, set())}
        assert stat["numInserts"] == len(new - old), (loc, stat)
        assert stat["numDeletes"] == len(old - new), (loc, stat)
        assert stat["numUpdateWrites"] >= 0 and stat["numWrites"] >= stat["numInserts"]
        if stat["numInserts"] == 0 and stat["numDeletes"] == 0:
            assert old == new


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


def test_log_block_round_trip() -> None:
    rows = pa.table({"_hoodie_record_key": ["a", "b"], "x": [1, 2]})
    data = logs.parquet_data_block(rows, "20240101000000000", '{"type":"record","fields":[]}')
    gone = logs.delete_block([("b", "p=1")], "20240101000000001", '{"fields":[]}')
    back = logs.rollback_block("20240101000000003", "20240101000000002")
    blocks = list(logs.iter_blocks(data + gone + back))
    assert [b.block_type for b in blocks] == [5, 1, 0]
    assert logs.delete_block_keys(blocks[1].content) == ["b"]
    events = logs.read_log_events([data + gone], {"20240101000000000", "20240101000000001"})
    assert [(e.deleted, e.keys) for e in events] == [(False, ("a", "b")), (True, ("b",))]
    assert logs.read_log_events([data + gone], {"20240101000000001"})[0].deleted
    name = logs.log_file_name("f-0", "20240101000000000", 3, "0-1-2")
    assert name == ".f-0_20240101000000000.log.3_0-1-2"
    parsed = logs.parse_log_file_name(f"p/{name}")
    assert parsed is not None and parsed.version == 3 and parsed.file_id == "f-0"
    with pytest.raises(logs.LogFormatError):
        list(logs.iter_blocks(b"#HUDI#\x00"))


def test_mor_sequence_layout_counts_and_readers(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = dict(record_key=("id",), precombine="v", partition_by=("p",), table_type="mor")
    model, hist = Model(partitioned=True), History(path)
    steps: list[tuple[str, list[tuple[Any, ...]], dict[str, Any]]] = [
        ("bulk_insert", [(i, f"a{i}", i % 2, 10) for i in range(20)], {"file_groups": 2}),
        ("upsert", [(1, "u1", 1, 1), (2, "u2", 0, 1), (100, "n100", 0, 1)], {}),
        ("delete", [(3, "", 1, 0), (4, "", 0, 0), (999, "", 0, 0)], {}),
        ("upsert", [(3, "back3", 1, 5), (5, "u5", 1, 5), (5, "u5b", 1, 6)], {}),
        ("insert", [(200, "i200", 1, 5)], {}),
    ]
    before: dict[str, set[Any]] = {}
    for mode, rows, extra in steps:
        inst = write_table(
            spark, str(path), df_of(spark, rows), WriteOptions(mode=mode, **opts, **extra)
        )
        assert inst.action == "deltacommit"
        model.apply(mode, rows)
        hist.record(inst.id, model.expected())
        after = rows_by_location(path, inst.id)
        check_counts(path, inst.id, before, after, "deltacommit")
        before = after
    props = cfg.parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
    assert props[cfg.TYPE] == "MERGE_ON_READ" and props[cfg.PAYLOAD_CLASS] == cfg.LATEST_PAYLOAD
    upsert = stats_of(path, hist.states[1][0])
    log_stats = [s for s in upsert if "logVersion" in s]
    assert log_stats, "an upsert of existing keys appends log files"
    for s in log_stats:
        name = s["path"].rsplit("/", 1)[-1]
        parsed = logs.parse_log_file_name(name)
        assert parsed is not None and parsed.base_instant == s["prevCommit"] == hist.states[0][0]
        assert s["logFiles"] == [name] and s["baseFile"].endswith(f"_{s['prevCommit']}.parquet")
        assert (path / s["path"]).stat().st_size == s["totalWriteBytes"] == s["fileSizeInBytes"]
    deletes = stats_of(path, hist.states[2][0])
    assert sum(s["numDeletes"] for s in deletes) == 2 and all(s["numWrites"] == 0 for s in deletes)
    hist.check_hudi()
    hist.check_lakesieve(spark)
    hist.check_changes()


def test_mor_bucketed_updates_go_to_logs(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "b"
    opts = dict(
        record_key=("id",), bucket_column="id", file_groups=4, table_type="mor", precombine="v"
    )
    model, hist = Model(partitioned=False), History(path)
    for mode, rows in [
        ("upsert", [(i, f"a{i}", 0, 1) for i in range(12)]),
        ("upsert", [(1, "b1", 0, 0), (40, "b40", 0, 0)]),
        ("delete", [(2, "", 0, 0)]),
    ]:
        inst = write_table(spark, str(path), df_of(spark, rows), WriteOptions(mode=mode, **opts))
        model.apply(mode, rows)
        hist.record(inst.id, model.expected())
    assert len(list(path.glob("*.parquet"))) == 4, "buckets keep their base files"
    assert len(list(path.glob(".*.log.*"))) == 3
    hist.check_hudi()
    hist.check_lakesieve(spark)


def test_table_type_mismatch_and_bad_value_are_refused(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "c"
    write_table(spark, str(path), df_of(spark, [(1, "a", 0, 0)]), WriteOptions(record_key=("id",)))
    with pytest.raises(WriteError, match="table_type='mor' differs from the table's type"):
        write_table(
            spark, str(path), df_of(spark, [(1, "a", 0, 0)]), WriteOptions(table_type="mor")
        )
    with pytest.raises(WriteError, match="table_type='xyz'"):
        write_table(spark, str(tmp_path / "d"), df_of(spark, []), WriteOptions(table_type="xyz"))


def test_cow_counts_are_accurate(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "cow"
    opts = dict(record_key=("id",), partition_by=("p",))
    before: dict[str, set[Any]] = {}
    for mode, rows in [
        ("bulk_insert", [(i, "a", i % 2, 0) for i in range(10)]),
        ("upsert", [(1, "u", 1, 1), (50, "n", 0, 1)]),
        ("upsert", [(1, "u2", 1, 2)]),
        ("delete", [(2, "", 0, 0), (3, "", 1, 0)]),
    ]:
        inst = write_table(spark, str(path), df_of(spark, rows), WriteOptions(mode=mode, **opts))
        after = rows_by_location(path, inst.id)
        check_counts(path, inst.id, before, after, "commit")
        before = after


_ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "upsert", "upsert", "delete", "bulk_insert"]),
        st.lists(st.integers(0, 60), min_size=1, max_size=25),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=40 if SLOW else 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=_ops, partitioned=st.booleans())
def test_random_mor_sequences_match_the_model(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ops: list[Any], partitioned: bool
) -> None:
    path = tmp_path_factory.mktemp("mor") / "t"
    opts: dict[str, Any] = dict(record_key=("id",), precombine="v", table_type="mor")
    if partitioned:
        opts["partition_by"] = ("p",)
    model, hist = Model(partitioned), History(path)
    for n, (mode, ids, version) in enumerate(ops):
        if mode in ("insert", "bulk_insert"):  # inserts of new keys only
            ids = [i for i in ids if (i % 2 if partitioned else None, i) not in model.rows]
            ids = sorted(set(ids))
        rows = [(i, f"r{n}-{i}", i % 2, version) for i in ids]
        if not rows:
            continue
        if mode == "delete" and not hist.states:
            continue
        inst = write_table(spark, str(path), df_of(spark, rows), WriteOptions(mode=mode, **opts))
        model.apply(mode, rows)
        hist.record(inst.id, model.expected())
    if hist.states:
        hist.check_hudi()
        hist.check_lakesieve(spark)
        hist.check_changes()


def test_log_files_name_their_slice(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "n"
    opts = dict(record_key=("id",), table_type="mor")
    first = write_table(
        spark,
        str(path),
        df_of(spark, [(i, "a", 0, 0) for i in range(4)]),
        WriteOptions(mode="bulk_insert", **opts),
    )
    for k in range(2):
        write_table(spark, str(path), df_of(spark, [(1, f"x{k}", 0, k)]), WriteOptions(**opts))
    names = sorted(p.name for p in path.glob(".*.log.*"))
    assert [re.sub(r"_\d+-\d+-\d+$", "", n).rsplit(".", 1)[-1] for n in names] == ["1", "2"]
    assert all(f"_{first.id}.log." in n for n in names)
