"""lakesieve's plugin SDK: everything a table format plugin or an index type imports.

A plugin imports from this module and from the public API (:mod:`lakesieve`),
and its tests from the test kits (:mod:`lakesieve.testing`); the rest of the
package may change between releases. What is here:

- the hook marker :data:`hookimpl` and the two contracts, :class:`TableFormat`
  and :class:`IndexType` (typed protocols), with base classes to build on;
- the data model a plugin answers in (instants, snapshots, read units,
  changes, key queries, built indexes, write options);
- typed build options for index types (:class:`OptionSpec`,
  :func:`parse_options`);
- the order-preserving mapping of column values to ``int64`` keys, in Spark
  SQL's order (NaN above every number, ``-0.0 = 0.0``), one value at a time
  and for whole Arrow arrays;
- the naming rules of entries moved to new locations (:func:`renamed_locations`);
- the size of index files as the store writes them, and the errors a plugin
  raises.

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
    MultiPassBuild,
    ReadsChangeImages,
    RebuildsLocations,
    RenamesLocations,
    TableFormat,
)
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
from lakesieve.files.ipc_files import stored_size
from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.location_renames import renamed_locations
from lakesieve.keys.mapping import (
    INT64_MAX,
    INT64_MIN,
    KeyKind,
    map_bound,
    map_key,
    parse_key_type,
)
from lakesieve.keys.mapping import supported as key_type_supported
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
    "LookupResult",
    "MultiPassBuild",
    "OptionError",
    "OptionSpec",
    "PluginError",
    "ReadUnit",
    "ReadsChangeImages",
    "RebuildsLocations",
    "RenamesLocations",
    "Snapshot",
    "TableFormat",
    "TableFormatBase",
    "TableNotFoundError",
    "TableRef",
    "UnsupportedKeyTypeError",
    "WriteError",
    "WriteOptions",
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
