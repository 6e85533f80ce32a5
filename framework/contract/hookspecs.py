"""Every hook lakesieve calls, in one module (the pluggy/pytest way).

A plugin is a module (or object) with functions named like these hooks and
marked with :data:`lakesieve.hookimpl`. Built-in plugins are registered through
the ``lakesieve`` entry-point group exactly like third-party ones.

There are three hooks. A format plugin answers
:func:`lakesieve_format_open` with an object bound to one table and
:func:`lakesieve_format_names` with the names it provides; an index plugin
answers :func:`lakesieve_index_types` with its index type objects. Everything
else is a method call on those objects, whose contracts are the protocols
:class:`lakesieve.contract.protocols.TableFormat` and
:class:`lakesieve.contract.protocols.IndexType`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from lakesieve.contract.protocols import IndexType, TableFormat

PROJECT = "lakesieve"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def lakesieve_format_open(path: str, options: Mapping[str, str]) -> TableFormat | None:
    """Return an object for the table at ``path`` if it is yours, else ``None``.

    Every plugin is asked and every answer collected; the framework refuses a
    table that two plugins claim, and a path no plugin claims. Must be cheap:
    look for marker files, read no log or metadata (the object reads them
    when a method needs them), never start Spark, never raise for a path that
    is not yours.

    When ``options["format"]`` is set, answer only if it names your format,
    and then answer even when no table exists at ``path`` yet (the caller is
    about to create one, or forces the format). The ``format`` entry is not
    one of the table's options.
    """


@hookspec
def lakesieve_format_names() -> list[str]:
    """Return the format names this plugin provides (e.g. ``["hudi"]``).

    :func:`lakesieve_format_open` answers for a path, so it cannot say which
    formats are installed; this cheap list can, for checking a ``format``
    option before any table exists and for naming the installed formats in
    error messages. Two plugins providing one name is an error naming both.
    """


@hookspec
def lakesieve_index_types() -> list[IndexType]:
    """Return the index type objects this plugin provides, each with a unique ``name``.

    Two plugins providing one name is an error naming both.
    """
