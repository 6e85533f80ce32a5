"""Base classes that format and index plugins may build on.

:class:`TableFormatBase` holds what every :class:`~lakesieve.contract.protocols.TableFormat`
keeps (path, options, name) and the one identification check of
``lakesieve_format_open``; :class:`IndexTypeBase` holds what the index types
share (lookup and describe answered by the loaded index object, no folding of
changes and no compaction unless a subclass says otherwise). Neither is
required: any object satisfying the protocols will do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

from lakesieve.files import paths
from lakesieve.model import TableRef
from lakesieve.spark.object_storage import storage_of

if TYPE_CHECKING:
    from lakesieve.model import BuiltIndex, KeyQuery, LookupResult
    from pyspark.sql import DataFrame, SparkSession

#: The option naming a format: ``lakesieve_format_open`` answers only from the
#: plugin of that name (even for a table that does not exist yet).
FORMAT_OPTION = "format"


class TableFormatBase:
    """A table bound to its format plugin: path, options and the format's name.

    Subclasses set :attr:`name`, implement :meth:`identify` and the methods of
    :class:`~lakesieve.contract.protocols.TableFormat`, and answer the open hook with
    ``return MyFormat.open(path, options)``.
    """

    name: ClassVar[str] = ""
    #: The table options this format reads, for readers that refuse the rest (the
    #: ``format("lakesieve")`` sources): a name ending in ``.`` stands for every
    #: option under that prefix. ``None``: not declared, every option is passed on.
    known_options: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, path: str, options: Mapping[str, str] | None = None) -> None:
        """Bind to the table at ``path``; the ``format`` option is dropped from ``options``."""
        self.path = path
        self.options: dict[str, str] = {
            k: v for k, v in (options or {}).items() if k != FORMAT_OPTION
        }

    @classmethod
    def identify(cls, path: str) -> bool:
        """Whether ``path`` holds a table of this format; cheap (marker files) and never raises."""
        raise NotImplementedError

    @classmethod
    def open(cls, path: str, options: Mapping[str, str]) -> Self | None:
        """The object for ``path``, or ``None`` when the table is not this format's.

        With ``options["format"]`` only the named format answers, whether or
        not the table exists yet; without it the table's files decide.
        """
        forced = options.get(FORMAT_OPTION)
        if forced is not None:
            return cls(path, options) if forced == cls.name else None
        with paths.storage_scope(storage_of(options)):  # a table's own storage options
            found = cls.identify(path)
        return cls(path, options) if found else None

    @property
    def ref(self) -> TableRef:
        """The table as a plain value, for the plugin's own modules."""
        return TableRef(self.path, self.name, self.options)

    def index_root(self) -> str | None:
        """``None``: indexes live in ``<table>/.lakesieve`` unless a subclass says otherwise."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


class IndexTypeBase:
    """What the index types share; subclasses set :attr:`name` and implement validate, build, load.

    The loaded index object answers :meth:`lookup` and :meth:`describe`
    itself (methods ``lookup(query)`` and ``describe()``).
    """

    name: ClassVar[str] = ""
    #: How many times :meth:`build` reads its input (a range partitioning
    #: samples it first). Optional for an index type (1 when absent); with 2
    #: or more, the framework reads inputs that are costly to compute (rows
    #: merged in Python tasks) once, into Spark's cache.
    input_passes: ClassVar[int] = 1

    def lookup(self, index: Any, query: KeyQuery) -> LookupResult:
        """Ask the loaded index object."""
        result: LookupResult = index.lookup(query)
        return result

    def describe(self, index: Any) -> dict[str, Any]:
        """Ask the loaded index object."""
        details: dict[str, Any] = index.describe()
        return details

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """``None``: the framework rebuilds instead, unless a subclass folds changes in."""
        return None

    def compact(self, spark: SparkSession, index: Any, params: dict[str, Any]) -> BuiltIndex | None:
        """``None``: nothing to compact."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
