"""The Bloom filter index type: one filter per location over the column's keys.

Answers ``=`` and IN lists (with a configurable false-positive rate, option
``fpp``) and IS NULL (from per-location null counts); ranges are not its
business. ``hashing.py`` holds the hash shared by Spark workers and the
driver, ``filters.py`` the bit arrays, ``storage.py`` the stored form,
``build.py`` the Spark build, ``lookup.py`` lookups, ``delta.py``
incremental changes and ``plugin.py`` the hooks.
"""

from __future__ import annotations

from lakesieve.indexes.bloom.lookup import BloomIndex, load_index
from lakesieve.indexes.bloom.params import INDEX_TYPE, OPTIONS, parse_bloom_options

__all__ = ["INDEX_TYPE", "OPTIONS", "BloomIndex", "load_index", "parse_bloom_options"]
