"""What the driver JVM prints: start-up noise left out, Spark's warnings that matter kept.

The unit tests feed :class:`~lakesieve.spark.jvm_output.NoiseFilter` the
lines a plain pyspark start printed, and check the shipped log4j 2 settings
against :data:`~lakesieve.spark.session.WARN_LOGGERS`. The Spark tests log
through the test session's own JVM and read this process's stderr (the
filter's thread writes to file descriptor 2): a scheduler warning ("Initial
job has not accepted any resources") and a lost task reach it, a start-up
warning of another logger does not.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from lakesieve.spark.jvm_output import (
    LOG4J_ENV,
    NoiseFilter,
    is_noise,
    log4j_config_path,
    pump,
    quiet_logging_env,
    user_log4j_config,
)
from lakesieve.spark.session import WARN_LOGGERS

#: what a plain pyspark 4 start printed on stderr before lakesieve's settings
PLAIN_START = (
    b"WARNING: Using incubator modules: jdk.incubator.vector\n"
    b"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
    b'Setting default log level to "WARN".\n'
    b"To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).\n"
)

#: Spark's warnings that must pass: a job waiting for cores, a lost task
KEPT = (
    b"26/11/27 22:53:14 WARN TaskSchedulerImpl: Initial job has not accepted any resources; "
    b"check your cluster UI to ensure that workers are registered and have sufficient resources\n"
    b"26/11/27 22:53:15 WARN TaskSetManager: Lost task 0.0 in stage 0.0 (TID 0) "
    b"(10.0.0.5 executor 1): ExecutorLostFailure (executor 1 exited)\n"
    b"Traceback (most recent call last):\n"
    b"WARNING: something else the JVM says\n"
)


def _feed_in_pieces(data: bytes, size: int) -> bytes:
    noise = NoiseFilter()
    out = b"".join(noise.feed(data[i : i + size]) for i in range(0, len(data), size))
    return out + noise.release()


@pytest.mark.parametrize("size", [1, 3, 17, 4096])
def test_the_start_up_noise_is_left_out_and_the_rest_passes_unchanged(size: int) -> None:
    assert _feed_in_pieces(PLAIN_START + KEPT + PLAIN_START, size) == KEPT


def test_spark_warnings_that_matter_are_not_noise() -> None:
    for line in KEPT.splitlines():
        assert not is_noise(line), line
    for line in PLAIN_START.splitlines():
        assert is_noise(line), line


def test_the_progress_bar_passes_at_once_without_waiting_for_a_line_end() -> None:
    noise = NoiseFilter()
    assert noise.feed(b"\r[Stage 0:>   (0 + 1) / 4]") == b"\r[Stage 0:>   (0 + 1) / 4]"
    assert noise.feed(b"\r[Stage 0:=>  (1 + 1) / 4]") == b"\r[Stage 0:=>  (1 + 1) / 4]"
    assert not noise.held()


def test_a_line_start_that_may_be_noise_is_held_then_released() -> None:
    noise = NoiseFilter()
    assert noise.feed(b"WARNING: Us") == b""
    assert noise.held()
    assert noise.release() == b"WARNING: Us"
    assert noise.feed(b"ing incubator modules: x\n") == b"ing incubator modules: x\n"
    assert noise.feed(b"WARNING: Using incubator modules: y") == b""
    assert not noise.held()  # known noise: held until its line ends, then dropped
    assert noise.release() == b""


def test_the_pump_copies_a_pipe_without_the_noise_and_releases_a_partial_line() -> None:
    source_read, source_write = os.pipe()
    target_read, target_write = os.pipe()
    thread = threading.Thread(target=pump, args=(source_read, target_write, 0.05), daemon=True)
    thread.start()
    os.write(source_write, PLAIN_START + b"kept\nUsing")  # "Using" may start a noise line
    got = b""
    deadline = time.monotonic() + 10
    while not got.endswith(b"Using") and time.monotonic() < deadline:
        got += os.read(target_read, 4096)
    assert got == b"kept\nUsing"  # released after the hold time, with no more data
    os.close(source_write)
    thread.join(10)
    assert not thread.is_alive()
    os.close(target_write)
    assert os.read(target_read, 4096) == b""
    os.close(target_read)


def _log4j_levels(path: Path) -> dict[str, str]:
    """Logger name -> level of a log4j 2 properties file (``""`` for the root)."""
    props = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = (p.strip() for p in line.split("=", 1))
            props[key] = value
    levels = {"": props["rootLogger.level"].upper()}
    for key, value in props.items():
        if key.startswith("logger.") and key.endswith(".name"):
            levels[value] = props[key[: -len(".name")] + ".level"].upper()
    return levels


def test_the_shipped_settings_log_errors_and_the_warn_loggers() -> None:
    levels = _log4j_levels(log4j_config_path())
    assert levels[""] == "ERROR"
    assert {name for name, level in levels.items() if level == "WARN"} == set(WARN_LOGGERS)
    assert "org.apache.spark.scheduler.TaskSchedulerImpl" in WARN_LOGGERS
    assert "org.apache.spark.scheduler.TaskSetManager" in WARN_LOGGERS


def test_a_users_log4j_configuration_wins(tmp_path: Path) -> None:
    ours = {LOG4J_ENV: str(log4j_config_path())}
    assert quiet_logging_env({}, {}) == ours
    assert (
        quiet_logging_env({"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}, {}) == ours
    )
    own = "-Dlog4j2.configurationFile=/etc/spark/log4j2.xml"
    assert quiet_logging_env({"spark.driver.extraJavaOptions": own}, {}) == {}
    assert quiet_logging_env({}, {"JAVA_TOOL_OPTIONS": own}) == {}
    assert quiet_logging_env({}, {LOG4J_ENV: "/etc/log4j2.xml"}) == {}
    conf = tmp_path / "conf"
    conf.mkdir()
    assert not user_log4j_config({}, {"SPARK_CONF_DIR": str(conf)})
    (conf / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert user_log4j_config({}, {"SPARK_CONF_DIR": str(conf)})
    assert user_log4j_config({}, {"SPARK_HOME": str(tmp_path)})


def _stderr_until(capfd: pytest.CaptureFixture[str], needle: str, seconds: float = 30) -> str:
    """This process's stderr until ``needle`` shows (the filter's thread copies it)."""
    seen = ""
    deadline = time.monotonic() + seconds
    while needle not in seen and time.monotonic() < deadline:
        time.sleep(0.1)
        seen += capfd.readouterr().err
    return seen


@pytest.mark.spark
def test_the_scheduler_warning_reaches_stderr_and_a_start_up_warning_does_not(
    spark: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    tag = uuid.uuid4().hex
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    log4j.LogManager.getLogger("org.apache.spark.util.Utils").warn(f"loopback address {tag}")
    log4j.LogManager.getLogger("org.apache.spark.scheduler.TaskSchedulerImpl").warn(
        f"Initial job has not accepted any resources {tag}"
    )
    err = _stderr_until(capfd, f"resources {tag}")
    assert f"WARN TaskSchedulerImpl: Initial job has not accepted any resources {tag}" in err
    assert f"loopback address {tag}" not in err


@pytest.mark.spark
def test_a_lost_task_reaches_stderr(spark: Any, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql import functions as F

    tag = uuid.uuid4().hex

    def fail(x):  # type: ignore[no-untyped-def]  # hints would make pyspark guess an eval type
        raise ValueError(tag)

    boom = F.udf(fail, "bigint")
    with pytest.raises(Exception, match=tag):
        spark.range(0, 1, numPartitions=1).select(boom("id").alias("v")).agg(F.sum("v")).first()
    err = _stderr_until(capfd, "Lost task")
    assert "WARN TaskSetManager: Lost task " in err and tag in err
