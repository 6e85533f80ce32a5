"""``lakesieve demo`` runs end to end (at a tiny scale factor here).

The demo's own verdict ("pruned reads equal full scans") compares with
lakesieve's full read; this test checks each printed query's row count, and
the rows lakesieve reads for it, against hudi-rs filtered by Spark SQL.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.demo.run import run_demo

from tests.tables import native_where, rows_repr

pytestmark = pytest.mark.spark


def test_demo_runs_and_pruned_reads_match(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_demo(scale=0.01, workdir=str(tmp_path)) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "pruned reads equal full scans: yes" in out
    # it says what Sieve is first, explains its columns after, and where its data is (kept)
    assert out.startswith("Sieve is a data-skipping index")
    assert "What the columns mean:" in out and "fixed costs" in out
    assert f"data: {tmp_path} (" in out and "kept; remove it with: rm -rf" in out
    # step lines go to stderr, not among the results
    assert "[2/4] writing" in captured.err and "[2/4]" not in out
    point_lines = [line for line in out.splitlines() if line.strip().startswith("point")]
    assert point_lines and all(line.split()[1] == "1/64" for line in point_lines)
    query = re.compile(
        r"^\s+(.+?)\s+(\d+)/(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+(\S.*?)(\s+MISMATCH)?$"
    )
    printed = [m for m in map(query.match, out.splitlines()) if m]
    assert len(printed) == 6, out
    table = lakesieve.open(tmp_path / "lineitem_hudi")
    for m in printed:
        where = m.group(5)
        columns, want = native_where(spark, "hudi", table.path, where)
        assert int(m.group(4)) == len(want), m.group(0)
        assert rows_repr(table.read(spark, where=where), columns) == want, where
