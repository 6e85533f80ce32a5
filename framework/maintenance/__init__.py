"""Building indexes and keeping them in step with the table and healthy.

- :mod:`.index_build`: building an index and committing its state;
- :mod:`.refresh` (a package): folding the table's new commits into its indexes;
- :mod:`.compaction`: an index's delta chain folded into a new base;
- :mod:`.vacuum`: removing states and files nothing needs any more;
- :mod:`.index_health`: the health of a table's indexes (``lakesieve index list``);
- :mod:`.repair`: checking and repairing a table's index store.
"""
