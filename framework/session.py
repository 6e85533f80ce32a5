"""The execution layer: the one place that owns the SparkSession.

Embedded ``local[*]`` by default. ``LAKESIEVE_SPARK_MASTER`` picks another
master (``spark://host:7077``, ``yarn``...), ``LAKESIEVE_SPARK_REMOTE`` a Spark
Connect server, and ``LAKESIEVE_SPARK_CONF`` adds ``key=value`` settings
separated by commas. The same code runs on a laptop and on a cluster.

**The JVM dies with its Python parent.** pyspark starts the driver JVM as a
child process that exits when its stdin closes, but that exit runs Spark's
shutdown hooks and can outlive a killed parent by seconds. On Linux, when the
session is started from the main thread, the JVM is launched with
``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills it the moment this
process dies, however it dies. This is done by wrapping the ``Popen`` that
``pyspark.java_gateway`` uses, only while :func:`get_spark` starts the
session (under this module's lock), and restoring it afterwards. From
another thread it is skipped, because the kernel ties the signal to the
thread that started the child, not to the process.

**Start hooks.** This module depends on no other part of lakesieve. What a
new session needs from the layers above (the ``lakesieve`` Spark data
source registers itself with every session :func:`get_spark` starts) is
added with :func:`on_session_start`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_lock = threading.Lock()
_session: SparkSession | None = None
_start_hooks: list[Callable[[SparkSession], None]] = []

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


_PR_SET_PDEATHSIG = 1


def _pdeathsig_setter(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` body that makes the child get SIGKILL when ``parent`` dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return die_with_parent


@contextlib.contextmanager
def _jvm_dies_with_parent() -> Iterator[None]:
    """While the session starts, launch the gateway JVM so that it dies with this process."""
    setter = _pdeathsig_setter(os.getpid())
    if setter is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    import pyspark.java_gateway as java_gateway

    original = java_gateway.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        inner = kwargs.get("preexec_fn")

        def preexec() -> None:
            if inner is not None:
                inner()
            setter()

        kwargs["preexec_fn"] = preexec
        return original(*args, **kwargs)

    java_gateway.Popen = popen  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        java_gateway.Popen = original  # type: ignore[misc]


def on_session_start(hook: Callable[[SparkSession], None]) -> None:
    """Call ``hook(spark)`` with each session :func:`get_spark` starts from now on.

    A hook added twice runs once. Hooks run in the order they were added,
    under this module's lock, before :func:`get_spark` returns the session.
    """
    with _lock:
        if hook not in _start_hooks:
            _start_hooks.append(hook)


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
            builder = builder.master(
                master or os.environ.get("LAKESIEVE_SPARK_MASTER") or "local[*]"
            )
        settings = dict(DEFAULT_CONF)
        settings.update(_conf_from_env())
        settings.update(conf or {})
        for key, value in settings.items():
            builder = builder.config(key, value)
        with _jvm_dies_with_parent():
            spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR") if not remote else None
        for hook in list(_start_hooks):
            hook(spark)
        _session = spark
        return spark


def stop_spark() -> None:
    """Stop the shared session if one was started."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
