"""Refresh: an index brought from its newest state to the table's latest instant.

- :mod:`.run`: the refresh itself (result, the commit of a new state;
  how refresh works, and why it is exact and safe to race, in its docstring);
- :mod:`.policy`: when refresh folds deltas, reads on the driver, or builds afresh;
- :mod:`.plan`: what a refresh reads between two instants, and why it is exact;
- :mod:`.stamped`: the stamped locations, both sides read in one Spark task;
- :mod:`.driver`: a small refresh read and summed on the driver with Arrow;
- :mod:`.fold`: a delta chain folded into a new base, on the driver or by Spark;
- :mod:`.pairs` and :mod:`.pairs_spark`: rewritten files followed to the files
  that replaced them (on the driver, or by Spark jobs).

Compaction (:mod:`lakesieve.maintenance.compaction`) sits beside this package
and folds the chain with :mod:`.fold`. The names refresh's callers use are
importable from here.
"""

from __future__ import annotations

from lakesieve.maintenance.refresh.run import RefreshPolicy, RefreshResult, refresh_index

__all__ = ["RefreshPolicy", "RefreshResult", "refresh_index"]
