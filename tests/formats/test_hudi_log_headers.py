"""Log files written after an instant leave the read units of a snapshot as of it.

hudi-rs lists, in a merge-on-read slice as of an older instant, log files
written later; lakesieve leaves out those whose every block header names a
later instant, so the slice is read as a plain base file. Checked: block
headers as written, damaged files kept (assume the worst), and rows of every
snapshot equal hudi-rs' own time-travel read of the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
from lakesieve.plugins.hudi import log_headers
from lakesieve.plugins.hudi.writer.log_block import (
    INSTANT_TIME,
    SCHEMA,
    encode_block,
    rollback_block,
)
from lakesieve.table import open as open_table

from tests.tables import hudi_rs_rows, make_rows, write_rows


def _file(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / ".f1_20240101000000000.log.1_0-1-0"
    path.write_bytes(data)
    return str(path)


def test_block_instants_read_from_headers(tmp_path: Path) -> None:
    fs = pafs.LocalFileSystem()
    blocks = (
        encode_block(5, {INSTANT_TIME: "20240102000000000", SCHEMA: "{}"}, b"x" * 1000)
        + rollback_block("20240103000000000", "20240102000000000")
        + encode_block(1, {SCHEMA: "{}", INSTANT_TIME: "20240104000000000"}, b"")
    )
    path = _file(tmp_path, blocks)
    assert log_headers.block_instants(fs, path) == [
        "20240102000000000",
        "20240103000000000",
        "20240104000000000",
    ]
    assert log_headers.written_after(fs, path, "20240101000000000")
    assert not log_headers.written_after(fs, path, "20240102000000000")
    assert not log_headers.written_after(fs, path, "2024010100")  # ids of another length


def test_damaged_or_missing_log_files_are_kept(tmp_path: Path) -> None:
    fs = pafs.LocalFileSystem()
    whole = encode_block(5, {INSTANT_TIME: "20240102000000000"}, b"payload")
    for data in (whole[:-30], b"garbage" + whole, whole + b"#HUDI#", b""):
        path = _file(tmp_path, data)
        assert not log_headers.written_after(fs, path, "20240101000000000"), data[:12]
    no_instant = _file(tmp_path, encode_block(5, {SCHEMA: "{}"}, b""))
    assert log_headers.block_instants(fs, no_instant) is None
    assert not log_headers.written_after(fs, str(tmp_path / "absent"), "20240101000000000")


def test_snapshots_leave_later_logs_out_and_read_as_hudi_rs(spark: Any, tmp_path: Path) -> None:
    """Each snapshot's units, read by lakesieve (Spark and per unit), hold hudi-rs' rows then."""
    path = tmp_path / "t"
    write_rows(
        spark, path, make_rows(range(0, 90), 1), mode="bulk_insert", table_type="mor", file_groups=3
    )
    write_rows(
        spark, path, make_rows(range(0, 90, 4), 2, version=1), mode="upsert", table_type="mor"
    )
    write_rows(
        spark, path, make_rows(range(1, 90, 5), 3, version=2), mode="upsert", table_type="mor"
    )
    table = open_table(path)
    instants = [i.id for i in table.timeline()]
    assert len(instants) == 3
    logs = [sum(len(u.log_files) for u in table.snapshot(i).units) for i in instants]
    assert logs[0] == 0, "no log file existed at the bulk insert"
    assert 0 < logs[1] < logs[2], logs
    listed = table.snapshot(None).units
    assert sum(len(u.log_files) for u in listed) == logs[2]  # latest: nothing left out
    fmt = table.view.fmt
    for inst in instants:
        want = sorted(
            tuple(r.values()) for r in hudi_rs_rows(path, inst).select(["id", "k", "s"]).to_pylist()
        )
        units = table.snapshot(inst).units
        spark_rows = sorted(
            tuple(r)
            for r in fmt.read(spark, units, inst, False, columns=["id", "k", "s"]).collect()
        )
        assert spark_rows == want, inst
        unit_rows = sorted(
            tuple(r.values())
            for u in units
            for b in fmt.read_unit(u, inst, ["id", "k", "s"])
            for r in b.to_pylist()
        )
        assert unit_rows == want, inst
