"""lakesieve: pluggable data-skipping indexes for lakehouse tables.

Import mapping: ``framework/`` is ``lakesieve``; ``plugins/<format>/`` is
``lakesieve.plugins.<format>``; ``indexes/<type>/`` is
``lakesieve.indexes.<type>``.
"""

from __future__ import annotations

from lakesieve.errors import LakesieveError
from lakesieve.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["LakesieveError", "__version__", "hookimpl"]
