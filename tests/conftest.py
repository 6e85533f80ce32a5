"""Shared fixtures: one SparkSession per test run, fixture tables, temp dirs."""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

SHARED_FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "hudi"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One embedded SparkSession (``local[2]``, few shuffle partitions) for the whole run."""
    from lakesieve.session import get_spark, stop_spark

    session = get_spark(
        master=os.environ.get("LAKESIEVE_SPARK_MASTER", "local[2]"),
        conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"},
    )
    yield session
    stop_spark()


def fixture_zips() -> list[Path]:
    """The real Apache Hudi tables shipped in ``../shared/fixtures/hudi`` (may be absent)."""
    if not SHARED_FIXTURES.is_dir():
        return []
    return sorted(SHARED_FIXTURES.glob("*.zip"))


def unzip_fixture(zip_path: Path, dest: Path) -> Path:
    """Unzip one fixture into ``dest`` and return the table root (the folder with ``.hoodie``)."""
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(dest)
    for hoodie in sorted(dest.rglob(".hoodie")):
        if "__MACOSX" not in hoodie.parts:
            return hoodie.parent
    raise FileNotFoundError(f"no .hoodie folder inside {zip_path.name}")
