"""Exceptions raised by lakesieve.

Every error a user can cause derives from :class:`LakesieveError` and carries a
one-line message naming what is wrong (table, column, index, plugin, option).
The CLI prints that line and exits with status 2; it never shows a traceback
for these.
"""

from __future__ import annotations

from collections.abc import Callable


class LakesieveWarning(UserWarning):
    """Pruning fell back to reading more (or all) locations; the rows are still exact."""


class LakesieveError(Exception):
    """Base class of every error lakesieve reports to a user.

    An error about one argument carries it as data: ``argument`` (its Python
    API name, e.g. ``record_key``) and ``value`` (what was given, or ``None``),
    and the message writes ``{argument}`` where it names it. ``str()`` spells
    the argument as a Python caller writes it (``max_bytes=1048576``); a front
    end with its own names (the CLI's flags) spells it its own way through
    :meth:`spelled`, without rewording the message.
    """

    def __init__(self, message: str = "", *, argument: str | None = None, value: object = None):
        self.template = message
        self.argument = argument
        self.value = value
        super().__init__(self.spelled(python_spelling))

    def spelled(self, spell: Callable[[str, object], str]) -> str:
        """The message with its ``{argument}`` written by ``spell(argument, value)``."""
        if self.argument is None:
            return self.template
        return self.template.replace("{argument}", spell(self.argument, self.value))


def python_spelling(argument: str, value: object) -> str:
    """An argument as a Python caller writes it: ``record_key``, ``max_bytes=1048576``."""
    return argument if value is None else f"{argument}={value!r}"


class TableNotFoundError(LakesieveError):
    """No table at the path, or no plugin recognises it."""


class AmbiguousFormatError(LakesieveError):
    """Two or more format plugins claim the same table."""


class UnknownPluginError(LakesieveError):
    """A format or index type was asked for that no installed plugin provides."""


class PluginError(LakesieveError):
    """A plugin misbehaved (wrong return type, missing hook); names the plugin."""


class ColumnNotFoundError(LakesieveError):
    """A predicate or index names a column the table does not have."""


class UnsupportedKeyTypeError(LakesieveError):
    """An index type cannot index a column of this data type."""


class PredicateError(LakesieveError):
    """A ``where`` string could not be parsed or bound to the table schema."""


class OptionError(LakesieveError):
    """An index, write or config option is unknown or has a value of the wrong kind."""


class IndexNotFoundError(LakesieveError):
    """No index of that name exists on the table."""


class IndexCorruptError(LakesieveError):
    """An index file is missing, fails its checksum, or cannot be decoded.

    Readers never surface this to a query: they degrade to a full scan and warn.
    """


class CommitConflictError(LakesieveError):
    """Another writer committed the same index-log version first."""


class InstantNotFoundError(LakesieveError):
    """An ``as_of`` instant that is not a completed instant of the table."""


class WriteError(LakesieveError):
    """A table write was refused (bad mode, missing record key, schema mismatch...)."""


class IndexBuildError(LakesieveError):
    """The Spark job that builds an index failed (the index log is left as it was)."""


class StoreWriteError(LakesieveError):
    """A write to the index store failed (read-only, full or forbidden); names the path and the fix."""


class StoreBusyError(LakesieveError):
    """The index store is locked: a repair runs, or (for a repair) another writer does."""


class ConcurrentBuildError(LakesieveError):
    """Another process created an index of the same name while this build ran; names its definition."""
