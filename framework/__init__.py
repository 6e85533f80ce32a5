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

from lakesieve.errors import LakesieveError
from lakesieve.hookspecs import hookimpl
from lakesieve.model import WriteOptions
from lakesieve.planner import LakesieveWarning
from lakesieve.session import get_spark, on_session_start
from lakesieve.table import Plan, Table, open, write

__version__ = "0.1.0"


def _register_data_source(spark: Any) -> None:
    """Make ``spark.read.format("lakesieve")`` available in a session :func:`get_spark` started."""
    from lakesieve.datasource import register_data_source

    register_data_source(spark)


# the session layer sits below the data source (which opens tables): wire them here, on top
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
