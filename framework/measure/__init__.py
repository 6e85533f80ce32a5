"""Measuring index types on a table: ``lakesieve compare`` and ``lakesieve advise``.

- :mod:`.compare`: build and query each index type on one column and compare them;
- :mod:`.advise`: recommend an index for a workload mix from such a comparison;
- :mod:`.compare_report`: the self-contained HTML report of ``lakesieve compare --html``,
  with :mod:`.compare_charts` (its charts; matplotlib, the ``bench`` extra).
"""
