"""``lakesieve demo`` runs end to end (at a tiny scale factor here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lakesieve.demo import run_demo

pytestmark = pytest.mark.spark


def test_demo_runs_and_pruned_reads_match(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_demo(scale=0.01, workdir=str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "pruned reads equal full scans: yes" in out
    point_lines = [line for line in out.splitlines() if line.strip().startswith("point")]
    assert point_lines and all(line.split()[1] == "1/64" for line in point_lines)
