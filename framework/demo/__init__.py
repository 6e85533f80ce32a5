"""``lakesieve demo`` and the ``bench`` extra it needs: the main job, end to end.

The demo belongs to the product (the README's first command after the
install); the benchmarks live in their own distribution, ``lakesieve-bench``
(the repository's ``bench/`` folder), which imports :mod:`.tpch` from here.

Nothing here is needed to open tables, build, list or refresh indexes, query
or compare index types; running the demo needs what
``pip install 'lakesieve[bench]'`` adds (matplotlib, pandas and
``tpchgen-cli``). The core imports these modules only inside the commands
that use them (``lakesieve demo``, ``lakesieve bench``, ``lakesieve compare
--html``), each of which first calls :func:`require_extra`.

Modules: ``run`` (``lakesieve demo``) and ``tpch`` (TPC-H lineitem and the
table layouts the demo and the benchmarks use).
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
    from lakesieve.demo.tpch import tpchgen_program

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
