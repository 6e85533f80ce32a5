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

from lakesieve.errors import LakesieveError
from lakesieve.hookspecs import hookimpl
from lakesieve.model import WriteOptions
from lakesieve.planner import LakesieveWarning
from lakesieve.session import get_spark
from lakesieve.table import Plan, Table, open, write

__version__ = "0.1.0"

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
