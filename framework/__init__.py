"""lakesieve: pluggable data-skipping indexes for lakehouse tables.

Import mapping: ``framework/`` is ``lakesieve``; ``plugins/<format>/`` is
``lakesieve.plugins.<format>``; ``indexes/<type>/`` is
``lakesieve.indexes.<type>``.

Typical use::

    import lakesieve
    table = lakesieve.open("/data/lineitem")
    table.build_index("l_orderkey", type="sieve")
    table.explain(where="l_orderkey = 42")          # no Spark needed
    table.read(spark, where="l_orderkey = 42").show()
"""

from __future__ import annotations

from typing import Any

from lakesieve.contract.hookspecs import hookimpl
from lakesieve.errors import LakesieveError, LakesieveWarning
from lakesieve.model import WriteOptions
from lakesieve.spark.session import get_spark, on_session_conf, on_session_start
from lakesieve.table import Plan, Table, open, write

__version__ = "0.1.0"


_jar_missing: list[str] = []  # why the JVM data source is not in the session, if it is not


def _data_source_jar(connect: bool) -> dict[str, str]:
    """``spark.jars`` with the JVM data source's jar, for a classic session :func:`get_spark` starts."""
    if connect:
        return {}
    from lakesieve.spark_source import JvmSourceError, jar

    try:
        return {"spark.jars": jar()}
    except JvmSourceError as exc:
        _jar_missing.append(str(exc))
        return {}


def _register_data_source(spark: Any) -> None:
    """Make ``spark.read.format("lakesieve")`` available in a session :func:`get_spark` started.

    A classic session gets the JVM data source (its jar was added by
    :func:`_data_source_jar`) and lakesieve's planner; the Python data source is
    registered as ``lakesieve_python``. A Spark Connect session, or a machine
    without ``javac``, gets the Python data source under the ``lakesieve`` name.
    """
    import warnings

    from lakesieve.python_source import register_data_source
    from lakesieve.spark.session import is_connect_session
    from lakesieve.spark_source import register

    if is_connect_session(spark) or _jar_missing:
        if _jar_missing:
            warnings.warn(
                f"{_jar_missing[-1]}; format('lakesieve') is the Python data source in this session",
                LakesieveWarning,
                stacklevel=3,
            )
        register_data_source(spark, as_default=True)
        return
    register(spark)
    register_data_source(spark, as_default=False)


# the session layer sits below the data sources (which open tables): wire them here, on top
on_session_conf(_data_source_jar)
on_session_start(_register_data_source)

__all__ = [
    "LakesieveError",
    "LakesieveWarning",
    "Plan",
    "Table",
    "WriteOptions",
    "__version__",
    "get_spark",
    "hookimpl",
    "open",
    "write",
]
