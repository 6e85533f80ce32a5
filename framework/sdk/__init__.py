"""lakesieve's plugin SDK: everything a table format plugin or an index type imports.

A plugin imports from this module and from the public API (:mod:`lakesieve`),
and its tests from the test kits (:mod:`lakesieve.testing`); the rest of the
package may change between releases. What is here:

- the hook marker :data:`hookimpl` and the two contracts, :class:`TableFormat`
  and :class:`IndexType` (typed protocols), with base classes to build on,
  and the process's plugin manager (:func:`get_plugin_manager`), to register a
  plugin module by hand where it is not installed (tests, a notebook);
- the data model a plugin answers in (instants, snapshots, read units,
  changes, key queries, built indexes, write options);
- typed build options for index types (:class:`OptionSpec`,
  :func:`parse_options`);
- the order-preserving mapping of column values to ``int64`` keys, in Spark
  SQL's order (NaN above every number, ``-0.0 = 0.0``), one value at a time
  and for whole Arrow arrays;
- the naming rules of entries moved to new locations (:func:`renamed_locations`);
- a format's own data skipping for ``lakesieve compare``
  (:class:`NativeSkipping`, answered by a :class:`SkipsFiles`), and the
  framework's model of skipping by per-file statistics to answer with
  (:class:`MinMaxSkipping`, :func:`footer_statistics`);
- the size of index files as the store writes them, and the errors a plugin
  raises.

The built-in plugins share more than a plugin's first version needs; that
lives in submodules, each for one kind of work, which the built-in format
plugins and index types import exactly as a third-party plugin would:

- :mod:`lakesieve.sdk.keys`: key order (exact comparison forms), key mapping,
  distinct values, locations as codes and ids in a build's shuffles, renamed
  locations (index types);
- :mod:`lakesieve.sdk.index_files`: index files' stored sizes, files written
  by Spark tasks into a state's folder (staging), ORC footers (index types);
- :mod:`lakesieve.sdk.paths`: table paths and URIs, storage settings (format
  plugins);
- :mod:`lakesieve.sdk.arrow`: read units' Arrow batches and plain schemas
  (format plugins);
- :mod:`lakesieve.sdk.writing`: copy-on-write writes: modes, layouts, Parquet
  files from Spark tasks, deletes and upserts by key (format plugins with a
  writer);
- :mod:`lakesieve.sdk.spark`: sizing Spark jobs, object storage on a session,
  scanning Parquet data files (both).

The key mapping and :func:`renamed_locations` are here and in
:mod:`~lakesieve.sdk.keys`, :func:`stored_size` here and in
:mod:`~lakesieve.sdk.index_files`: the same objects under both names.

See ``docs/writing-a-format-plugin.md`` and ``docs/writing-an-index-type.md``.
"""

from __future__ import annotations

from lakesieve.contract.format_read import select_columns
from lakesieve.contract.hookspecs import hookimpl
from lakesieve.contract.index_options import OptionSpec, parse_options
from lakesieve.contract.plugin_base import IndexTypeBase, TableFormatBase
from lakesieve.contract.protocols import (
    ChecksWrites,
    FoldsOnDriver,
    HasTableId,
    IndexType,
    LoadedIndex,
    MultiPassBuild,
    NativeSkipping,
    ReadsChangeImages,
    RebuildsLocations,
    RenamesLocations,
    SkipsFiles,
    TableFormat,
)
from lakesieve.contract.registry import get_plugin_manager
from lakesieve.errors import (
    ColumnNotFoundError,
    IndexCorruptError,
    InstantNotFoundError,
    LakesieveError,
    OptionError,
    PluginError,
    TableNotFoundError,
    UnsupportedKeyTypeError,
    WriteError,
)
from lakesieve.files.footer_stats import footer_statistics
from lakesieve.model import (
    LOCATION_COLUMN,
    BuiltIndex,
    ChangeImageFiles,
    Changes,
    Instant,
    KeyQuery,
    LookupResult,
    ReadUnit,
    Snapshot,
    TableRef,
    WriteOptions,
)
from lakesieve.query.min_max import MinMaxSkipping
from lakesieve.sdk.index_files import stored_size
from lakesieve.sdk.keys import (
    INT64_MAX,
    INT64_MIN,
    KeyKind,
    key_type_supported,
    map_bound,
    map_key,
    map_keys_arrow,
    parse_key_type,
    renamed_locations,
)

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "LOCATION_COLUMN",
    "BuiltIndex",
    "ChangeImageFiles",
    "Changes",
    "ChecksWrites",
    "ColumnNotFoundError",
    "FoldsOnDriver",
    "HasTableId",
    "IndexCorruptError",
    "IndexType",
    "IndexTypeBase",
    "Instant",
    "InstantNotFoundError",
    "KeyKind",
    "KeyQuery",
    "LakesieveError",
    "LoadedIndex",
    "LookupResult",
    "MinMaxSkipping",
    "MultiPassBuild",
    "NativeSkipping",
    "OptionError",
    "OptionSpec",
    "PluginError",
    "ReadUnit",
    "ReadsChangeImages",
    "RebuildsLocations",
    "RenamesLocations",
    "SkipsFiles",
    "Snapshot",
    "TableFormat",
    "TableFormatBase",
    "TableNotFoundError",
    "TableRef",
    "UnsupportedKeyTypeError",
    "WriteError",
    "WriteOptions",
    "footer_statistics",
    "get_plugin_manager",
    "hookimpl",
    "key_type_supported",
    "map_bound",
    "map_key",
    "map_keys_arrow",
    "parse_key_type",
    "parse_options",
    "renamed_locations",
    "select_columns",
    "stored_size",
]
