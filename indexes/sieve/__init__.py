"""The Sieve index type: learned segments of fixed-width blocks over mapped keys.

See ``segments.py`` for the segmentation rule, ``storage.py`` for the stored
form, ``build.py`` for the Spark build, ``lookup.py`` for lookups and
``delta.py`` for folding a delta in; ``codec.py`` and ``loading.py`` for the
stored form; the hooks live in ``plugin.py``.
"""

from __future__ import annotations

from lakesieve.indexes.sieve.build import build_local, build_spark
from lakesieve.indexes.sieve.loading import load_index
from lakesieve.indexes.sieve.lookup import SieveIndex
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
