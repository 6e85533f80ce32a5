"""A table's indexes at an instant: the states the log holds, their delta chains and overlays, loaded.

Below :mod:`lakesieve.query` (which asks the loaded indexes) and
:mod:`lakesieve.maintenance` (which writes new states), above
:mod:`lakesieve.store` (which keeps the log and the files):

- :mod:`.table_indexes`: one table's index store with the table's metadata,
  the states chosen for a query's instant, stale ones widened, unusable ones
  reported;
- :mod:`.overlay`: a delta chain summed on top of its base;
- :mod:`.loaded`: an index state ready for lookups, or why it is not.
"""
