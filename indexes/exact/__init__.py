"""The exact index type: every distinct key with the locations holding it (and counts).

Perfect pruning for points, IN lists, ranges and IS NULL; its size grows with
the distinct (key, location) pairs. It is the yardstick of the other types:
"locations selected by X / locations selected by exact" is X's false-positive
overhead. ``partitions.py`` holds the stored form (key-range partitions written by
Spark tasks, and a manifest), ``spark_files.py`` its variant of ORC files
Spark writes, ``build.py`` the Spark build, ``lookup.py`` and
``partitioned.py`` lookups, ``loading.py`` loading, ``delta.py`` incremental changes and ``plugin.py`` the
hooks.

What it shares with the zonemap and bloom types comes from the plugin SDK:
:class:`~lakesieve.sdk.keys.KeyOrder` (exact comparison forms of key values),
:func:`~lakesieve.sdk.parse_options` (typed option parsing) and
:mod:`lakesieve.sdk.index_files` (stored sizes, files written by Spark tasks).
"""

from __future__ import annotations

from lakesieve.indexes.exact.loading import load_index
from lakesieve.indexes.exact.lookup import ExactIndex
from lakesieve.indexes.exact.params import INDEX_TYPE, parse_exact_options

__all__ = ["INDEX_TYPE", "ExactIndex", "load_index", "parse_exact_options"]
