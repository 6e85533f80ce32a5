"""The execution layer's choices: log levels, Connect settings, the workers' Python."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from lakesieve.spark.session import (
    CONNECT_BUILDER_KEYS,
    DEFAULT_CONF,
    PROGRESS_KEY,
    WARN_LOGGERS,
    is_connect,
    progress_setting,
    split_settings,
    worker_python,
)


def test_a_remote_url_or_spark_remote_makes_a_connect_session() -> None:
    assert is_connect("sc://host:15002", {}, environ={})
    assert is_connect(None, {"spark.remote": "sc://host"}, environ={})
    assert is_connect(None, {}, environ={"SPARK_REMOTE": "sc://host"})
    assert is_connect(None, {"spark.api.mode": "connect"}, environ={})
    assert is_connect(None, {}, environ={"SPARK_API_MODE": "Connect"})


def test_a_master_alone_makes_a_classic_session() -> None:
    assert not is_connect(None, {}, environ={})
    assert not is_connect(None, dict(DEFAULT_CONF), environ={"SPARK_API_MODE": "classic"})
    assert not is_connect(
        None, {"spark.api.mode": "classic"}, environ={"SPARK_API_MODE": "connect"}
    )
    assert not is_connect("", {"spark.remote": ""}, environ={"SPARK_REMOTE": ""})


def test_a_classic_session_takes_every_setting_at_start() -> None:
    settings = {**DEFAULT_CONF, "spark.remote": "x"}
    assert split_settings(settings, connect=False) == (settings, {})


def test_a_connect_builder_gets_only_what_picks_the_server() -> None:
    settings = {**DEFAULT_CONF, "spark.remote": "sc://h", "spark.executor.memory": "2g"}
    at_start, later = split_settings(settings, connect=True)
    assert at_start == {"spark.remote": "sc://h"}
    assert set(at_start) <= CONNECT_BUILDER_KEYS
    # the static defaults that made pyspark warn CANNOT_MODIFY_CONFIG are not in the builder
    assert {"spark.ui.enabled", "spark.driver.memory", "spark.python.worker.reuse"} <= set(later)
    assert {**at_start, **later} == settings


def test_the_workers_python_prefers_the_spark_setting_then_the_environment() -> None:
    env = {"PYSPARK_PYTHON": "/opt/env/bin/python"}
    assert worker_python({"spark.pyspark.python": "/srv/py"}, env) == "/srv/py"
    assert worker_python({}, env) == "/opt/env/bin/python"
    assert worker_python({}, {}) == sys.executable


def test_the_progress_bar_is_drawn_only_on_a_terminal_unless_the_environment_says() -> None:
    asked = {**DEFAULT_CONF, PROGRESS_KEY: "true"}  # what the long CLI commands pass
    assert progress_setting(asked, {}, terminal=True) == "true"
    assert progress_setting(asked, {}, terminal=False) == "false"  # a log file, a test's pipe
    assert progress_setting(DEFAULT_CONF, {}, terminal=True) == "false"  # Python API, tests
    assert progress_setting(asked, {PROGRESS_KEY: "false"}, terminal=True) == "false"
    assert progress_setting(asked, {PROGRESS_KEY: "true"}, terminal=False) == "true"


@pytest.mark.spark
def test_a_classic_session_keeps_the_scheduler_warnings_visible(spark: Any) -> None:
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    assert str(log4j.LogManager.getRootLogger().getLevel()) == "ERROR"
    for name in WARN_LOGGERS:
        assert str(log4j.LogManager.getLogger(name).getLevel()) == "WARN", name
    # the logger that says a job waits for resources sits below one of them
    scheduler = log4j.LogManager.getLogger("org.apache.spark.scheduler.TaskSchedulerImpl")
    assert scheduler.isWarnEnabled()
    assert not log4j.LogManager.getLogger("org.apache.spark.storage.BlockManager").isWarnEnabled()
