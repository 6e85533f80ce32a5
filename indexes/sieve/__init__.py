"""The Sieve index type: learned segments of fixed-width blocks over mapped keys.

See ``segments.py`` for the segmentation rule, ``storage.py`` for the stored
form, ``build.py`` for the Spark build, ``lookup.py`` for lookups and
``delta.py`` for folding a delta in; the hooks live in ``plugin.py``.
"""

from __future__ import annotations

from lakesieve.indexes.sieve.build import build_local, build_spark
from lakesieve.indexes.sieve.lookup import SieveIndex, load_index
from lakesieve.indexes.sieve.params import INDEX_TYPE, SieveParams, parse_options

__all__ = [
    "INDEX_TYPE",
    "SieveIndex",
    "SieveParams",
    "build_local",
    "build_spark",
    "load_index",
    "parse_options",
]
