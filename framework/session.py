"""The execution layer: the one place that owns the SparkSession.

Embedded ``local[*]`` by default. ``LAKESIEVE_SPARK_MASTER`` picks another
master (``spark://host:7077``, ``yarn``...), ``LAKESIEVE_SPARK_REMOTE`` a Spark
Connect server, and ``LAKESIEVE_SPARK_CONF`` adds ``key=value`` settings
separated by commas. The same code runs on a laptop and on a cluster.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_lock = threading.Lock()
_session: SparkSession | None = None

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "4g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.ui.showConsoleProgress": "false",
    # lets spark.read.format("lakesieve") see the query's filters (pyspark >= 4.1)
    "spark.sql.python.filterPushdown.enabled": "true",
}


def _conf_from_env() -> dict[str, str]:
    raw = os.environ.get("LAKESIEVE_SPARK_CONF", "").strip()
    out: dict[str, str] = {}
    if not raw:
        return out
    for item in raw.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def get_spark(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "lakesieve",
) -> SparkSession:
    """Return the shared SparkSession, starting it on first use.

    Args:
        master: Spark master URL; defaults to ``LAKESIEVE_SPARK_MASTER`` or ``local[*]``.
        conf: extra Spark settings (override the defaults and the environment).
        app_name: application name shown by Spark.
    """
    global _session
    with _lock:
        if _session is not None:
            return _session
        # Workers must run this interpreter, or they cannot import pyarrow/lakesieve.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name)
        remote = os.environ.get("LAKESIEVE_SPARK_REMOTE")
        if remote:
            builder = builder.remote(remote)
        else:
            builder = builder.master(master or os.environ.get("LAKESIEVE_SPARK_MASTER") or "local[*]")
        settings = dict(DEFAULT_CONF)
        settings.update(_conf_from_env())
        settings.update(conf or {})
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR") if not remote else None
        from lakesieve.datasource import register_data_source

        register_data_source(spark)
        _session = spark
        return spark


def stop_spark() -> None:
    """Stop the shared session if one was started."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
