"""The zone map index type: per location the minimum and maximum key, and null counts.

One entry per location, whatever the data; optimal for one-sided ranges,
weak for points and narrow ranges when a location's keys spread out. Serves
every range and point predicate and IS NULL. ``storage.py`` holds the stored
form, ``bounds.py`` how long string bounds are shortened, ``build.py`` the
Spark build, ``lookup.py`` lookups, ``delta.py`` incremental changes and
``plugin.py`` the hooks.
"""

from __future__ import annotations

from lakesieve.indexes.zonemap.lookup import ZoneMapIndex, load_index
from lakesieve.indexes.zonemap.params import INDEX_TYPE, OPTIONS, parse_zonemap_options

__all__ = ["INDEX_TYPE", "OPTIONS", "ZoneMapIndex", "load_index", "parse_zonemap_options"]
