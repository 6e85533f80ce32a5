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
# no heartbeat lines (lakesieve.spark.heartbeat) in the commands tests run, in this
# process or in children: a slow machine would add lines to output a test reads
# whole; the tests of the heartbeat set the variable themselves
os.environ.setdefault("LAKESIEVE_HEARTBEAT_SECONDS", "0")

SHARED_FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "hudi"


#: JVM options of the tests' Spark drivers: the tests run thousands of small jobs,
#: and the JVM's optimising JIT compiler spent a third of a run's CPU on code it
#: ran a few times. Stopping at the first tier changes no result. The serial
#: garbage collector (no concurrent collector threads beside the tests' two
#: workers on two cores) saved 2.8-2.9% of the JVM's CPU time over four
#: Spark-heavy files run as CI runs them (paired runs, G1 and serial alternated).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Spark settings of the tests' sessions (the fixture's and child processes').
#: The tests run thousands of jobs over a few hundred rows: compiling a
#: whole-stage Java class per query shape and scheduling four tasks per stage
#: cost more than the rows. With whole-stage code generation off (expressions
#: are still compiled) and two partitions, two files of Spark-heavy tests ran
#: in 144 s against 166 s (13% less), the same tests passing.
TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
}

#: Spark's S3 connector (hadoop-aws and the AWS SDK bundle), put there by
#: ``.ci/fetch-s3a``; on the tests' driver class path when present, for the
#: tests of tables on object storage (they skip without it, and fail in CI).
S3A_JARS = sorted((Path(__file__).resolve().parents[1] / ".jars" / "s3a").glob("*.jar"))
if S3A_JARS:
    TEST_SPARK_CONF["spark.driver.extraClassPath"] = ":".join(str(j) for j in S3A_JARS)


def in_ci() -> bool:
    """True when ``CI`` says this is a CI run (``.ci/run`` sets ``CI=true``)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def pytest_configure(config: pytest.Config) -> None:
    """In CI, missing conformance fixtures fail the run instead of skipping ~180 tests."""
    if not in_ci():
        return
    shared = SHARED_FIXTURES.parent
    missing = [
        str(shared / name) for name in ("hudi", "delta", "iceberg") if not (shared / name).is_dir()
    ]
    if missing:
        raise pytest.UsageError(
            f"CI=true but the conformance fixtures are missing: {', '.join(missing)} "
            "(clone the project beside ../shared, or unset CI to let those tests skip)"
        )


#: words of the skip reasons that mean "a dependency of the tests is missing":
#: in CI such a skip fails (CI installs every extra and runs beside the fixtures)
MISSING_DEPENDENCY = (
    "not installed",
    "is absent",
    "no foreign tables",
    "no hudi fixture",
    "no s3 connector",
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI, a test skipped for a missing extra, program or fixture fails instead."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(word in reason.lower() for word in MISSING_DEPENDENCY):
        report.outcome = "failed"
        report.longrepr = f"CI=true, and this test skipped for a missing dependency: {reason}"


def child_spark_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child process that starts Spark: the tests' Spark settings
    (:data:`TEST_SPARK_CONF`) unless it sets its own ``LAKESIEVE_SPARK_CONF``."""
    env.setdefault("LAKESIEVE_SPARK_CONF", ",".join(f"{k}={v}" for k, v in TEST_SPARK_CONF.items()))
    return env


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One embedded SparkSession (``local[2]``, few shuffle partitions) for the whole run."""
    from lakesieve.spark.session import get_spark, stop_spark

    session = get_spark(
        master=os.environ.get("LAKESIEVE_SPARK_MASTER", "local[2]"),
        conf=dict(TEST_SPARK_CONF),
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


#: Seconds each of the slowest test files takes in a CI run (pytest
#: ``--durations=0`` summed per file: the mean of two idle two-worker clean
#: clones of 2026-11-28 08:55 and 09:18, sixteenth session; the Sieve delta
#: file less the 15 s its kit helpers lost since). With xdist's ``--dist
#: loadfile`` and ``--no-loadscope-reorder`` (pyproject's ``addopts``) the
#: files go to the workers in collection order, so the slowest are collected
#: first and the short ones fill in at the end: the workers finish together.
SLOW_FILES = {
    # summed seconds per file in a full CI run (2026-11-29, twenty-first session: a
    # clean clone of 0941f49 with --durations=0, .ci/run 34 min 45 s on this machine)
    "test_differential.py": 267,
    # 237: 7% less since the kit copies builds of the same rows (2026-11-29, paired runs)
    "test_index_contract.py": 237,
    "test_refresh.py": 201,
    "test_refresh_change_data.py": 163,
    "test_format_contract.py": 158,
    "test_refresh_stamped.py": 154,
    "test_refresh_rewrites.py": 150,
    "test_spark_source.py": 131,
    "test_differential_regressions.py": 95,
    "test_object_storage_tables.py": 91,
    "test_exact.py": 89,
    "test_foreign_tables.py": 87,
    "test_hudi_writer.py": 86,
    # 45: its server got the tests' JVM settings (2026-11-29: 92.8 s -> 54.4 s alone)
    "test_session_connect.py": 45,
    "test_datasource_python.py": 75,
    "test_maintenance_concurrent_reads.py": 70,
    # 90: the refresh rule's tests (175 s in a clean-clone CI run of 873b572; 104 s alone,
    # idle, after its paired-rewrite test kept one format and two index types)
    "test_refresh_rebuild.py": 90,
    "test_hudi_maintenance.py": 58,
    "test_exact_spark_files.py": 58,
    "test_bloom.py": 57,
    "test_build_hints.py": 56,
    "test_sieve_delta.py": 53,
    "test_hudi_timeline_quirks.py": 49,
    "test_example_index_type.py": 49,
    "test_cli_front.py": 47,
    "test_cli.py": 47,
    "test_end_to_end.py": 47,
    "test_refresh_state_machine.py": 46,
    "test_hudi_fixtures.py": 46,
    "test_demo.py": 45,
    "test_compare_report.py": 45,
    "test_delta_log_quirks.py": 42,
    "test_cli_validation.py": 42,
    "test_hudi_mor_writer.py": 40,
    "test_sieve_spark.py": 40,
    "test_iceberg_plugin.py": 39,
    "test_write_layout.py": 38,
    "test_object_storage_formats.py": 35,
    "test_index_health.py": 34,
    "test_heartbeat.py": 33,
    "test_time_zone.py": 29,
    "test_refresh_float_keys.py": 27,
    "test_delta_plugin.py": 25,
    "test_iceberg_writer_quirks.py": 24,
    "test_iceberg_deletes_renamed.py": 23,
    "test_refresh_kill.py": 22,
    "test_cli_interrupt.py": 22,
    # new in the twenty-second session (its clean-clone run of 46233ab)
    "test_spark_source_formats.py": 47,
    "test_hudi_spark_written.py": 25,
    # new in the twenty-third session (its file alone: 64 s at load 5, Spark start included)
    "test_compare_native.py": 45,
    "test_parquet_read.py": 50,  # alone: about 72 s at load 6-7
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the slowest test files first (a stable sort: each file's tests keep their order)."""
    items.sort(key=lambda item: -SLOW_FILES.get(item.path.name, 0))
