"""Planning a query and reading what it needs.

- :mod:`.planner`: a bound predicate to the set of locations to read;
- :mod:`.key_ranges`: one key range per column from a conjunction's comparisons;
- :mod:`.overlay`: key queries answered from the deltas stacked on an index's base;
- :mod:`.query_plan`: the read units a query needs, why, and its JSON explanation;
- :mod:`.table_view`: a table as its format plugin shows it (timeline, schema, read units);
- :mod:`.row_filter`, :mod:`.arrow_read`: reading a plan's rows with Arrow, without Spark.
"""
