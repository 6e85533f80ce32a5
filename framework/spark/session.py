"""The execution layer: the one place that owns the SparkSession.

Embedded ``local[*]`` by default. ``LAKESIEVE_SPARK_MASTER`` picks another
master (``spark://host:7077``, ``yarn``...), ``LAKESIEVE_SPARK_REMOTE`` a Spark
Connect server, and ``LAKESIEVE_SPARK_CONF`` adds ``key=value`` settings
separated by commas. The same code runs on a laptop and on a cluster.

**Logging.** A classic session logs at ``ERROR`` so that Spark's routine
warnings do not bury lakesieve's output, except for the loggers in
:data:`WARN_LOGGERS`, which stay at ``WARN``: among them the task scheduler's
"Initial job has not accepted any resources", the only sign that a job is
waiting for cores a cluster does not have.

**Spark Connect.** A Connect session (``LAKESIEVE_SPARK_REMOTE``,
``SPARK_REMOTE``, ``spark.remote`` or ``spark.api.mode=connect``) runs on a
server that was configured when it started: settings such as
``spark.driver.memory`` cannot change afterwards, and pyspark warns
``CANNOT_MODIFY_CONFIG`` for each one it is handed. :func:`get_spark` hands
the builder only what selects the server and sets the rest one by one once
the session exists; lakesieve's own defaults that the server refuses are
dropped quietly, settings the user asked for are named in one warning.

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

**Quiet output.** The driver JVM starts with lakesieve's log4j 2 settings
(everything at ``ERROR`` from its first line, :data:`WARN_LOGGERS` at ``WARN``)
and its stderr is copied through a filter that drops the JVM's own start-up
notices; see :mod:`lakesieve.spark.jvm_output`.

**Start hooks.** This module depends on no other part of lakesieve (but
:mod:`~lakesieve.spark.jvm_output`, which depends on none). What a
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
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_T = TypeVar("_T")

_lock = threading.Lock()
_session: SparkSession | None = None
_start_hooks: list[Callable[[SparkSession], None]] = []
_conf_hooks: list[Callable[[bool], Mapping[str, str]]] = []

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


#: Spark loggers kept at ``WARN`` while the rest log at ``ERROR``: the task scheduler
#: ("Initial job has not accepted any resources", lost executors), the task set manager
#: ("Lost task ..." before a retry) and the standalone client ("Failed to connect to
#: master"). Without them a job on a cluster with no free core waits forever without a
#: word. ``log4j2.properties`` of this package names the same loggers.
WARN_LOGGERS: tuple[str, ...] = (
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.deploy.client",
)

#: A display choice (the command line asks for a progress bar): on a Connect server it is
#: the server's console that would show it, so a refusal is not worth a warning.
_DISPLAY = frozenset({"spark.ui.showConsoleProgress"})

#: Settings a Spark Connect builder needs before the session exists: they pick the server.
CONNECT_BUILDER_KEYS = frozenset({"spark.remote", "spark.api.mode"})


def is_connect(
    remote: str | None, settings: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> bool:
    """Whether the session for these settings is a Spark Connect session.

    True for a remote URL (``LAKESIEVE_SPARK_REMOTE``), ``spark.remote`` among the settings,
    ``SPARK_REMOTE`` in the environment, or ``spark.api.mode=connect`` (setting or
    ``SPARK_API_MODE``): the same signs pyspark's builder follows.
    """
    env = os.environ if environ is None else environ
    if remote or settings.get("spark.remote") or env.get("SPARK_REMOTE"):
        return True
    mode = settings.get("spark.api.mode", env.get("SPARK_API_MODE", ""))
    return mode.strip().lower() == "connect"


def is_connect_session(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def split_settings(
    settings: Mapping[str, str], connect: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """Split settings into those for the builder and those set once the session exists.

    A classic session takes every setting at builder time. A Connect session takes only
    :data:`CONNECT_BUILDER_KEYS` there: pyspark's Connect builder would try to set every
    other one on the running server, twice, warning for each the server refuses.
    """
    if not connect:
        return dict(settings), {}
    builder = {k: v for k, v in settings.items() if k in CONNECT_BUILDER_KEYS}
    later = {k: v for k, v in settings.items() if k not in CONNECT_BUILDER_KEYS}
    return builder, later


def worker_python(settings: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str:
    """The interpreter Spark's Python workers run: what ``PYSPARK_PYTHON`` is set to.

    ``spark.pyspark.python`` among the settings wins (pyspark itself reads only the
    environment variable unless the program runs under ``spark-submit``), then
    ``PYSPARK_PYTHON``, then this interpreter.
    """
    env = os.environ if environ is None else environ
    return settings.get("spark.pyspark.python") or env.get("PYSPARK_PYTHON") or sys.executable


PROGRESS_KEY = "spark.ui.showConsoleProgress"
#: the setting a command line asks for: Spark's console progress bar, where stderr is a terminal
PROGRESS = {PROGRESS_KEY: "true"}


def progress_setting(
    settings: Mapping[str, str], from_env: Mapping[str, str], terminal: bool
) -> str:
    """Whether Spark draws its console progress bar on stderr (``"true"``/``"false"``).

    ``LAKESIEVE_SPARK_CONF`` decides when it names the setting. Otherwise a request for
    the bar (the command line asks for one in long commands) holds only when stderr is a
    terminal: redrawn lines would litter a log file or a test's captured output.
    """
    if PROGRESS_KEY in from_env:
        return from_env[PROGRESS_KEY]
    asked = settings.get(PROGRESS_KEY, "false")
    return asked if terminal else "false"


def stderr_is_terminal() -> bool:
    """Whether file descriptor 2, the one the driver JVM writes to, is a terminal."""
    try:
        return os.isatty(2)
    except OSError:
        return False


def _refused(exc: Exception) -> bool:
    """Whether ``exc`` is the server refusing to change a setting of a running session."""
    condition = getattr(exc, "getCondition", None)
    name = condition() if callable(condition) else None
    return name == "CANNOT_MODIFY_CONFIG" or "CANNOT_MODIFY_CONFIG" in str(exc)


def apply_runtime_settings(spark: SparkSession, settings: Mapping[str, str]) -> list[str]:
    """Set ``settings`` on a running session one by one; return the keys it refused.

    A key is refused when the session cannot change it any more (a static or core
    setting on a Spark Connect server); any other failure is raised.
    """
    refused: list[str] = []
    for key, value in settings.items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:
            if not _refused(exc):
                raise
            refused.append(key)
    return refused


def keep_useful_warnings(spark: SparkSession) -> None:
    """Log at ``ERROR``, except the loggers of :data:`WARN_LOGGERS`, kept at ``WARN``.

    Where per-logger levels cannot be set (a logging back end other than Spark's
    log4j 2), everything stays at ``WARN``: noisier, but nothing useful is hidden.
    """
    context = spark.sparkContext
    context.setLogLevel("ERROR")
    try:
        log4j = context._jvm.org.apache.logging.log4j  # type: ignore[union-attr]
        for name in WARN_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.WARN)
    except Exception:
        context.setLogLevel("WARN")


def dealt_for_slices(items: Sequence[_T], slices: int, size: Callable[[_T], float]) -> list[_T]:
    """``items`` largest first, dealt round-robin into ``slices`` runs laid end to end.

    Spark cuts a local relation (``createDataFrame`` of a list) into
    contiguous slices without a shuffle; laid out this way each slice gets
    a like share of large and small items. Ties keep their given order.
    """
    ordered = sorted(items, key=lambda item: -size(item))
    k = max(1, min(slices, len(ordered)))
    return [item for i in range(k) for item in ordered[i::k]]


def default_parallelism(spark: SparkSession, fallback: int = 8) -> int:
    """Spark's default parallelism; on Spark Connect (no SparkContext) the setting, else ``fallback``."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect sessions have no SparkContext
        try:
            return max(
                1, int(spark.conf.get("spark.default.parallelism", str(fallback)) or fallback)
            )
        except Exception:
            return fallback


def time_zone_of(spark: SparkSession | None = None) -> str:
    """The session time zone of ``spark``; without one, the zone of the session a read would use.

    That is lakesieve's shared session once started, else the caller's active
    session (when pyspark is already imported), else the zone
    ``LAKESIEVE_SPARK_CONF`` names, else UTC (:data:`DEFAULT_CONF`). Starts nothing.
    """
    key = "spark.sql.session.timeZone"
    session = spark if spark is not None else _session
    if session is None and "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
    if session is not None:
        return str(session.conf.get(key))
    return conf_from_env().get(key) or DEFAULT_CONF[key]


def conf_from_env() -> dict[str, str]:
    """The settings ``LAKESIEVE_SPARK_CONF`` names (``key=value`` separated by commas)."""
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
def _launching_jvm(settings: Mapping[str, str]) -> Iterator[None]:
    """While the session starts, launch the driver JVM the way lakesieve wants it.

    On Linux, from the main thread, it dies with this process (see the module's
    docstring). On POSIX systems its stderr goes through
    :func:`lakesieve.spark.jvm_output.forward`, and it gets lakesieve's log4j 2
    settings unless the user has their own (:func:`~lakesieve.spark.jvm_output.quiet_logging_env`).
    """
    setter = _pdeathsig_setter(os.getpid())
    if threading.current_thread() is not threading.main_thread():
        setter = None
    if setter is None and os.name != "posix":
        yield
        return
    import pyspark.java_gateway as java_gateway
    from lakesieve.spark.jvm_output import forward, quiet_logging_env

    original = java_gateway.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        inner = kwargs.get("preexec_fn")

        def preexec() -> None:
            if inner is not None:
                inner()
            if setter is not None:
                setter()

        kwargs["preexec_fn"] = preexec
        if os.name != "posix" or kwargs.get("stderr") is not None:
            return original(*args, **kwargs)
        env = kwargs.get("env")
        kwargs["env"] = {
            **(os.environ if env is None else env),
            **quiet_logging_env(settings, os.environ if env is None else env),
        }
        write_end, _ = forward()
        kwargs["stderr"] = write_end
        try:
            return original(*args, **kwargs)
        finally:
            os.close(write_end)  # the child holds its own copy; its exit ends the copying

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


def on_session_conf(hook: Callable[[bool], Mapping[str, str]]) -> None:
    """Ask ``hook(connect)`` for settings of each session :func:`get_spark` starts from now on.

    ``connect`` says whether the session is a Spark Connect session. The
    settings join the session's before it starts: list settings
    (:data:`LIST_SETTINGS`, such as ``spark.jars``) are appended to, any other
    setting the user or the defaults already name keeps its value.
    """
    with _lock:
        if hook not in _conf_hooks:
            _conf_hooks.append(hook)


#: Comma-separated list settings: a start hook's entries are appended to the user's.
LIST_SETTINGS = frozenset({"spark.jars"})


def merge_settings(settings: dict[str, str], extra: Mapping[str, str]) -> None:
    """Add ``extra`` to ``settings``: appended for :data:`LIST_SETTINGS`, else only where absent."""
    for key, value in extra.items():
        if key in LIST_SETTINGS and settings.get(key):
            items = [v for v in settings[key].split(",") if v]
            if value not in items:
                settings[key] = ",".join([*items, value])
        else:
            settings.setdefault(key, value)


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
        from_env = conf_from_env()
        asked = {**from_env, **(conf or {})}
        settings = {**DEFAULT_CONF, **asked}
        settings[PROGRESS_KEY] = progress_setting(settings, from_env, stderr_is_terminal())
        # Workers must run a Python that imports pyarrow and lakesieve.
        os.environ["PYSPARK_PYTHON"] = worker_python(settings)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name)
        remote = os.environ.get("LAKESIEVE_SPARK_REMOTE")
        connect = is_connect(remote, settings)
        if remote:
            builder = builder.remote(remote)
        elif not connect:
            builder = builder.master(
                master or os.environ.get("LAKESIEVE_SPARK_MASTER") or "local[*]"
            )
        for conf_hook in list(_conf_hooks):
            merge_settings(settings, conf_hook(connect))
        at_start, later = split_settings(settings, connect)
        for key, value in at_start.items():
            builder = builder.config(key, value)
        with _launching_jvm(at_start):
            spark = builder.getOrCreate()
        if connect:
            refused = [
                k for k in apply_runtime_settings(spark, later) if k in asked and k not in _DISPLAY
            ]
            if refused:
                warnings.warn(
                    "the Spark Connect server cannot change "
                    + ", ".join(refused)
                    + " at run time; set them when the server starts (--conf)",
                    UserWarning,
                    stacklevel=2,
                )
        else:
            keep_useful_warnings(spark)
        for hook in list(_start_hooks):
            hook(spark)
        _session = spark
        return spark


def running_session() -> SparkSession | None:
    """The session :func:`get_spark` started, if it runs; starts nothing, takes no lock."""
    return _session


def stop_spark() -> None:
    """Stop the shared session if one was started."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


class SessionOnDemand:
    """The Spark session of a maintenance run, started the first time a step needs it.

    ``asked`` counts the steps that needed it, so a result can say whether
    its work ran on Spark.
    """

    def __init__(self, spark: SparkSession | None = None, conf: dict[str, str] | None = None):
        self._spark = spark
        self._conf = conf
        self.asked = 0

    def get(self) -> SparkSession:
        """The session, started now (with the run's configuration) if need be."""
        self.asked += 1
        if self._spark is None:
            self._spark = get_spark(conf=self._conf)
        return self._spark
