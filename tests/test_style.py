"""The code base stays ruff and mypy clean (checked as part of the test run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["framework", "plugins", "indexes", "tests"]


def _tool(name: str) -> str:
    found = Path(sys.executable).with_name(name)
    if found.exists():
        return str(found)
    which = shutil.which(name)
    if which is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return which


def test_ruff_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", *SOURCES], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "format", "--check", *SOURCES], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean() -> None:
    """mypy over the package as Python imports it, so calls between modules are checked."""
    from tests.mypy_package import run

    _tool("mypy")
    status, report = run()
    assert status == 0, report
