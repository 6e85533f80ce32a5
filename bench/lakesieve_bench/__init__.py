"""The benchmarks of lakesieve: the ``lakesieve-bench`` distribution (``bench/`` of the repository).

Not part of the product: ``pip install -e ./bench`` (from the repository's
root) installs it beside lakesieve and the ``bench`` extra; ``lakesieve
bench`` runs its suites and says what to install when it is absent. It
imports lakesieve like any user (the built-in index types by name included:
the Sieve benches measure its stored layouts and build stages), and TPC-H
data from :mod:`lakesieve.demo.tpch`.

Modules: ``runner`` (``lakesieve bench``: its options, and running a suite),
``skeleton`` and ``formats`` (the earlier suites), ``full`` (the full suite:
every format, layout and index type; its settings and per-layout phase), with
``full_formats`` (its per-format phase), ``full_reads`` (its timed reads),
``full_run`` (one run of it) and ``full_targets`` (its figures against the
targets), ``queries`` (the query kinds and their seeded sets), ``truth`` (the
true answer of each query), ``native`` (each format's own pruning),
``memory`` (peak memory of builds and lookups), ``timeline`` (a table growing
commit by commit), ``report`` (the markdown section and charts of the full
suite); the focused benches ``build_cost``, ``spark_paths``, ``sieve_layout``
with ``sieve_stages``, ``index_upkeep`` with ``upkeep_data``, and
``cli_upkeep``.
"""
