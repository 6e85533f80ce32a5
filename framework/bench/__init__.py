"""Benchmarks, the demo, TPC-H data and charts: the ``bench`` extra of lakesieve.

Nothing here is needed to open tables, build, list or refresh indexes, query
or compare index types; the modules of this package need what
``pip install 'lakesieve[bench]'`` adds (matplotlib, pandas and
``tpchgen-cli``). The core imports them only inside the commands that use
them (``lakesieve bench``, ``lakesieve demo``, ``lakesieve compare --html``),
each of which first calls :func:`require_extra`.

Modules: ``runner`` (``lakesieve bench``: its options, and running a suite),
``skeleton`` and ``formats`` (the earlier suites), ``full`` (the full suite:
every format, layout and index type; its settings and per-layout phase), with
``full_formats`` (its per-format phase), ``full_reads`` (its timed reads),
``full_run`` (one run of it) and ``full_targets`` (its figures against the
targets), ``queries``
(the query kinds and their seeded sets), ``truth`` (the true answer of each
query), ``native`` (each format's own pruning), ``memory`` (peak memory of
builds and lookups), ``timeline`` (a table growing commit by commit),
``report`` (the markdown section and charts of the full suite), ``demo``
(``lakesieve demo``), ``tpch`` (TPC-H lineitem and its layouts),
``compare_report`` (the self-contained HTML report of ``lakesieve compare``)
with ``compare_charts`` (its charts).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from lakesieve.errors import LakesieveError

#: the Python modules the extra installs (``tpchgen-cli`` is a program, found on the path)
EXTRA_MODULES = ("matplotlib", "pandas")

#: what a command prints when the extra is missing
EXTRA_MESSAGE = "{command} needs the 'bench' extra: pip install 'lakesieve[bench]'"


class MissingExtraError(LakesieveError):
    """A command of the ``bench`` extra ran where the extra is not installed."""


def _importable(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _tpchgen_found() -> bool:
    """Whether the ``tpchgen-cli`` program is on the path or beside this Python."""
    from lakesieve.bench.tpch import tpchgen_program

    try:
        tpchgen_program()
    except LakesieveError:
        return False
    return True


def extra_installed(modules: Sequence[str] = EXTRA_MODULES, program: bool = True) -> bool:
    """Whether ``modules`` (default: all of the extra's) and, with ``program``, ``tpchgen-cli`` are installed."""
    return all(_importable(m) for m in modules) and (not program or _tpchgen_found())


def require_extra(
    command: str, modules: Sequence[str] = EXTRA_MODULES, program: bool = True
) -> None:
    """Raise a one-line :class:`MissingExtraError` naming ``command`` unless the extra is installed.

    ``modules`` and ``program`` narrow the check to what the command uses
    (``lakesieve compare --html`` only draws charts: ``modules=("matplotlib",),
    program=False``).

    Raises:
        MissingExtraError: one of ``modules``, or ``tpchgen-cli``, is missing.
    """
    if not extra_installed(modules, program):
        raise MissingExtraError(EXTRA_MESSAGE.format(command=command))
