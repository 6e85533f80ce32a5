"""What the demo says: its introduction, the meaning of its figures, where its data is.

And the README's example keys: every ``l_orderkey`` literal it queries exists
in TPC-H lineitem as ``tpchgen-cli`` generates it (order keys are sparse).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakesieve.demo.run import INTRO, explain_results, folder_bytes, human_bytes, report_workdir

README = Path(__file__).resolve().parents[2] / "README.md"


def test_intro_says_what_sieve_is_and_what_the_demo_does() -> None:
    text = INTRO.format(scale=0.1)
    lines = text.splitlines()
    assert 3 <= len(lines) <= 5
    assert "Sieve is a data-skipping index" in text
    assert "SF0.1" in text and "l_orderkey" in text and "full scan" in text


def test_explanation_names_every_column_and_the_slow_rows() -> None:
    rows = [
        ("point", 1, 7, 0.90, 0.40),
        ("point", 1, 5, 0.20, 0.40),
        ("one-sided", 5, 900, 0.50, 0.45),
        ("no index", 64, 1000, 0.70, 0.60),
    ]
    text = explain_results(rows, 64)
    for column in ("selected", "rows", "indexed s", "full s"):
        assert re.search(rf"^\s+{re.escape(column)}\s", text, re.M), column
    assert "fixed costs" in text and "no index" in text
    # point (0.90 > 0.40) and one-sided (0.50 > 0.45) were slower; "no index" reads everything
    assert "2 indexed queries were slower than the full scan (point, one-sided)" in text
    assert f"{(1 + 1 + 5) / (3 * 64):.1%} of the file groups" in text


def test_explanation_without_slow_rows_does_not_claim_any() -> None:
    text = explain_results([("point", 1, 7, 0.1, 0.5)], 64)
    assert "slower than the full scan (" not in text
    assert "1.6% of the file groups" in text


def test_sizes_are_human() -> None:
    assert human_bytes(999) == "999 B"
    assert human_bytes(104_200_000) == "104.2 MB"
    assert human_bytes(3_500_000_000) == "3.5 GB"


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.bin").write_bytes(b"x" * 1500)
    (root / "b.bin").write_bytes(b"y" * 500)
    return root


def test_a_temporary_folder_is_removed_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _folder(tmp_path)
    assert folder_bytes(root) == 2000
    report_workdir(root, made_here=True, keep=False)
    out = capsys.readouterr().out
    assert not root.exists()
    assert f"data: {root} (2.0 KB) removed; run with --keep or --workdir DIR to keep it" in out


@pytest.mark.parametrize(("made_here", "keep"), [(True, True), (False, False)])
def test_a_kept_folder_is_named_with_how_to_remove_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made_here: bool, keep: bool
) -> None:
    root = _folder(tmp_path)
    report_workdir(root, made_here=made_here, keep=keep)
    assert root.exists() and folder_bytes(root) == 2000
    assert f"data: {root} (2.0 KB) kept; remove it with: rm -rf '{root}'" in capsys.readouterr().out


def _readme_keys() -> set[int]:
    """Every ``l_orderkey`` literal the README and the guide compare with ``=`` or list in ``IN (...)``."""
    pages = [README, *sorted((README.parent / "docs" / "guide").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    keys = {int(k) for k in re.findall(r"l_orderkey\s*=\s*(\d+)", text)}
    for group in re.findall(r"l_orderkey\s+IN\s*\(([^)]*)\)", text):
        keys |= {int(k) for k in re.findall(r"\d+", group)}
    return keys


def test_readme_example_keys_exist_in_tpch(tmp_path: Path) -> None:
    from lakesieve.demo.tpch import generate_lineitem

    keys = _readme_keys()
    assert keys, "the README queries no l_orderkey"
    data = pq.read_table(generate_lineitem(0.01, tmp_path), columns=["l_orderkey"])
    wanted = pa.array(sorted(keys), pa.int64())
    present = pc.is_in(wanted, value_set=data.column("l_orderkey").combine_chunks())
    missing = [k for k, ok in zip(sorted(keys), present.to_pylist(), strict=True) if not ok]
    assert not missing, f"README queries l_orderkey {missing}, absent from TPC-H lineitem"
