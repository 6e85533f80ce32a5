"""Differential testing of lakesieve against Spark SQL over each format's native reader.

- :mod:`.data`: adversarial column values and table layouts (hypothesis strategies).
- :mod:`.formats`: writing those tables with the formats' own writers (delta-rs,
  pyiceberg, lakesieve's Hudi copy-on-write and merge-on-read writer), mutating
  them, and reading them back natively, row by row with each row's location.
- :mod:`.predicates`: predicate texts over the whole grammar of
  :mod:`lakesieve.expressions`, adversarial literals included.
- :mod:`.oracle`: Spark SQL evaluating a predicate text over the native rows,
  and the NaN/NULL-safe multiset comparison of row sets.
- :mod:`.check`: one table checked on every read path against the oracle.
- :mod:`.pinned`: the CI share, pinned tables changed and refreshed in stages.
"""
