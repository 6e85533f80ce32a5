"""Building indexes and keeping them in step with the table and healthy.

- :mod:`.index_build`: building an index and committing its state;
- :mod:`.refresh`, :mod:`.refresh_plan`, :mod:`.refresh_stamped`: folding the table's new
  commits into its indexes;
- :mod:`.vacuum`: removing states and files nothing needs any more;
- :mod:`.index_health`: the health of a table's indexes (``lakesieve index list``);
- :mod:`.repair`: checking and repairing a table's index store.
"""
