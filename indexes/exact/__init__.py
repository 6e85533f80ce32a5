"""The exact index type: every distinct key with the locations holding it (and counts).

Perfect pruning for points, IN lists, ranges and IS NULL; its size grows with
the distinct (key, location) pairs. It is the yardstick of the other types:
"locations selected by X / locations selected by exact" is X's false-positive
overhead. ``storage.py`` holds the stored form, ``build.py`` the Spark build,
``lookup.py`` lookups, ``delta.py`` incremental changes and ``plugin.py`` the
hooks.

What it shares with the zonemap and bloom types lives in the framework:
:mod:`lakesieve.key_order` (exact comparison forms of key values),
:mod:`lakesieve.index_options` (typed option parsing) and
:mod:`lakesieve.ipc_files` (stored sizes).
"""

from __future__ import annotations

from lakesieve.indexes.exact.lookup import ExactIndex, load_index
from lakesieve.indexes.exact.params import INDEX_TYPE, parse_exact_options

__all__ = ["INDEX_TYPE", "ExactIndex", "load_index", "parse_exact_options"]
