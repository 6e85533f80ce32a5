"""Finding an Iceberg table from a path: for reads, for writes, and where its indexes live.

**Configured catalog.** ``TableRef.options`` (or ``WriteOptions.extra``) keys
starting with ``catalog.`` configure any pyiceberg catalog (prefix removed:
``catalog.type``, ``catalog.uri``, ``catalog.warehouse``...; ``catalog.name``
names it), and ``table`` gives the identifier (``"ns.name"``). Reads and
writes then go through that catalog, which is authoritative.

**No catalog configured (the default).**

- Reads open the newest metadata file under ``<table>/metadata/`` directly
  (``pyiceberg.table.StaticTable``), the way a Hadoop-catalog table is read.
  A catalog commit writes a new, higher-numbered metadata file, so this is
  the committed state. (A writer that crashes between writing a metadata
  file and its catalog commit can leave a newer, uncommitted one behind;
  configure the catalog for tables where that may happen.)
- Writes go through a SQLite catalog kept beside the table:
  ``<parent>/.lakesieve/catalog.db`` (``<parent>`` is the folder holding the
  table), under namespace ``lakesieve``, with an identifier made from the
  table's folder name and a hash of its path. A table found on disk but not
  in that catalog (made by another engine), or registered at an older
  metadata file, is (re-)registered at its newest metadata file first; the
  commit itself is the catalog's optimistic compare-and-swap.

**Object storage.** A table on S3 read by location gets pyiceberg's ``s3.*``
FileIO properties from the standard ``AWS_*`` settings (the environment, then
the table's ``storage.`` options: :func:`s3_properties`). Writes without a
configured catalog are refused there: the default SQLite catalog is only ever
kept beside a local table.

**Relative locations.** Some writers record locations relative to a folder
(``data/persistent/t/...``) instead of absolute URIs. When the table's path
ends with its relative location, every relative path of its metadata is taken
from the folder that location is relative to (:class:`RootedFileIO`), so the
table reads the same from any current directory and inside Spark's workers;
otherwise relative paths are taken from the current directory, as pyiceberg
does.

**Indexes** of a table live in ``<parent>/.lakesieve/indexes/<table folder>/``
by default: outside the table location, so that orphan-file removal (which
deletes every file under the table location that its metadata does not
reach) cannot touch them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from lakesieve.plugins.iceberg.identify import latest_metadata_file
from lakesieve.sdk import OptionError, TableNotFoundError, WriteError, paths
from lakesieve.sdk.paths import aws_settings, storage_of
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

CATALOG_PREFIX = "catalog."
TABLE_OPTION = "table"
SIDE_DIR = ".lakesieve"
CATALOG_FILE = "catalog.db"
INDEX_DIR = "indexes"
NAMESPACE = "lakesieve"

_CACHE_SIZE = 16
_static: OrderedDict[str, Table] = OrderedDict()
_lock = threading.Lock()


def _parent_and_name(path: str) -> tuple[str, str]:
    trimmed = path.rstrip("/")
    parent, _, name = trimmed.rpartition("/")
    return parent or "/", name


def side_folder(path: str) -> str:
    """``<parent>/.lakesieve`` for the table at ``path``."""
    parent, _ = _parent_and_name(path)
    return paths.join(parent, SIDE_DIR)


def index_root(path: str) -> str:
    """The default index root of the table at ``path``: ``<parent>/.lakesieve/indexes/<name>``."""
    _, name = _parent_and_name(path)
    return paths.join(side_folder(path), f"{INDEX_DIR}/{name}")


def default_identifier(path: str) -> tuple[str, str]:
    """The identifier of the table at ``path`` in the default catalog."""
    _, name = _parent_and_name(path)
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name) or "table"
    digest = hashlib.sha256(os.path.abspath(path).encode("utf-8")).hexdigest()[:10]
    return NAMESPACE, f"{clean}_{digest}"


def catalog_options(*sources: Mapping[str, str] | None) -> tuple[dict[str, str], str | None]:
    """The ``catalog.`` properties and the ``table`` identifier from option mappings (later wins)."""
    props: dict[str, str] = {}
    ident: str | None = None
    for source in sources:
        for key, value in (source or {}).items():
            if key.startswith(CATALOG_PREFIX):
                props[key[len(CATALOG_PREFIX) :]] = str(value)
            elif key == TABLE_OPTION:
                ident = str(value)
    return props, ident


def configured_catalog(path: str, *sources: Mapping[str, str] | None) -> tuple[Catalog, str] | None:
    """The catalog and identifier the options configure, or ``None`` when none is.

    Raises:
        OptionError: catalog options without a ``table`` identifier.
    """
    props, ident = catalog_options(*sources)
    if not props:
        return None
    if not ident:
        raise OptionError(
            f"Iceberg table {path}: catalog options are set but option 'table' "
            "(the identifier, e.g. 'db.orders') is missing"
        )
    from pyiceberg.catalog import load_catalog

    name = props.pop("name", "lakesieve")
    return load_catalog(name, **props), ident


#: FileIO property: the folder relative locations are taken from.
RELATIVE_ROOT = "lakesieve.relative-root"


def is_relative(path: str) -> bool:
    """Whether a location is a relative path (no scheme, not absolute)."""
    return not paths.is_uri(path) and not path.startswith("/")


class RootedFileIO(PyArrowFileIO):
    """pyiceberg's Arrow FileIO, taking relative locations from :data:`RELATIVE_ROOT`."""

    def _rooted(self, location: str) -> str:
        root = self.properties.get(RELATIVE_ROOT)
        return os.path.join(root, location) if root and is_relative(location) else location

    def new_input(self, location: str) -> PyArrowFile:
        """An input file; a relative location is taken from the root."""
        return super().new_input(self._rooted(location))

    def new_output(self, location: str) -> PyArrowFile:
        """An output file; a relative location is taken from the root."""
        return super().new_output(self._rooted(location))


def relative_root(table_path: str, location: str) -> str | None:
    """The folder a relative table ``location`` is relative to, when ``table_path`` ends with it."""
    if not is_relative(location):
        return None
    local = paths.local_path(table_path)
    if local is None:
        return None
    full = os.path.abspath(local).rstrip("/")
    suffix = "/" + os.path.normpath(location).strip("/")
    return full[: -len(suffix)] or "/" if full.endswith(suffix) else None


def absolute(table: Table, path: str) -> str:
    """A location of the table's metadata as a path to open (relative ones rooted)."""
    root = table.io.properties.get(RELATIVE_ROOT)
    if root and is_relative(path):
        return os.path.join(root, path)
    return path


#: pyiceberg's S3 FileIO properties, each from the first standard ``AWS_*`` setting given.
_S3_PROPERTIES: dict[str, tuple[str, ...]] = {
    "s3.endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    "s3.access-key-id": ("AWS_ACCESS_KEY_ID",),
    "s3.secret-access-key": ("AWS_SECRET_ACCESS_KEY",),
    "s3.session-token": ("AWS_SESSION_TOKEN",),
    "s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}


def s3_properties(
    path: str,
    options: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """pyiceberg's ``s3.*`` FileIO properties from the standard ``AWS_*`` settings.

    pyiceberg's Arrow FileIO reads none of ``AWS_ENDPOINT_URL`` and the like
    (pyarrow's own ``from_uri`` does), so a table on S3 read by location gets
    them as properties: the environment's (``os.environ`` when ``None``), then
    the table's ``storage.``-prefixed options. Empty for a table not on S3.
    """
    if urlparse(path).scheme.lower() not in ("s3", "s3a", "s3n"):
        return {}
    values = aws_settings(storage_of(options), os.environ if environ is None else environ)
    out: dict[str, str] = {}
    for prop, names in _S3_PROPERTIES.items():
        found = next((values[n] for n in names if values.get(n)), None)
        if found:
            out[prop] = found
    return out


def _static_table(
    metadata_file: str, table_path: str = "", properties: Mapping[str, str] | None = None
) -> Table:
    from pyiceberg.table import StaticTable

    props = dict(properties or {})
    key = metadata_file + "\0" + "\0".join(f"{k}={v}" for k, v in sorted(props.items()))
    with _lock:
        if key in _static:
            _static.move_to_end(key)
            return _static[key]
    table = StaticTable.from_metadata(metadata_file, props)
    root = relative_root(table_path, table.metadata.location) if table_path else None
    if root is not None:
        table = StaticTable.from_metadata(
            metadata_file,
            {**props, "py-io-impl": f"{__name__}.RootedFileIO", RELATIVE_ROOT: root},
        )
    with _lock:
        _static[key] = table
        while len(_static) > _CACHE_SIZE:
            _static.popitem(last=False)
    return table


def load_for_read(path: str, options: Mapping[str, str] | None) -> Table:
    """The table for reading: through a configured catalog, else its newest metadata file.

    Raises:
        TableNotFoundError: no metadata file (and no catalog configured).
    """
    configured = configured_catalog(path, options)
    if configured is not None:
        catalog, ident = configured
        return catalog.load_table(ident)
    latest = latest_metadata_file(path)
    if latest is None:
        raise TableNotFoundError(f"no Iceberg table at {path!r}: no metadata/*.metadata.json")
    return _static_table(latest, path, s3_properties(path, options))


def default_catalog(path: str) -> Catalog:
    """The SQLite catalog beside the table (created on first use).

    Raises:
        WriteError: the table is not on the local file system.
    """
    from pyiceberg.catalog.sql import SqlCatalog

    local = paths.local_path(path)
    if local is None:
        raise WriteError(
            f"cannot write Iceberg table {path}: it is not on the local file system, so "
            "configure its catalog with 'catalog.*' and 'table' options"
        )
    folder = paths.local_path(side_folder(os.path.abspath(local))) or ""
    os.makedirs(folder, exist_ok=True)
    parent, _ = _parent_and_name(os.path.abspath(local))
    catalog = SqlCatalog(
        "lakesieve",
        uri=f"sqlite:///{os.path.join(folder, CATALOG_FILE)}",
        warehouse=f"file://{parent}",
    )
    if (NAMESPACE,) not in catalog.list_namespaces():
        with contextlib.suppress(Exception):  # a concurrent writer may create it first
            catalog.create_namespace(NAMESPACE)
    return catalog


def load_for_write(
    path: str, *sources: Mapping[str, str] | None
) -> tuple[Catalog, tuple[str, ...] | str, Table | None]:
    """The catalog, identifier and (if it exists) table to write through.

    Without a configured catalog the default one is used, and a table on
    disk is (re-)registered there at its newest metadata file.
    """
    configured = configured_catalog(path, *sources)
    if configured is not None:
        catalog, ident = configured
        return catalog, ident, catalog.load_table(ident) if catalog.table_exists(ident) else None
    catalog = default_catalog(path)
    ident_t = default_identifier(path)
    latest = latest_metadata_file(path)
    table: Table | None = None
    try:
        # some pyiceberg versions answer table_exists by loading the table,
        # which raises when the folder (and its metadata file) was deleted
        registered = catalog.table_exists(ident_t)
        if registered:
            table = catalog.load_table(ident_t)
    except Exception:  # registered, but its metadata file is gone
        registered, table = True, None
    if registered:
        if table is not None and latest is not None and _same_file(table.metadata_location, latest):
            return catalog, ident_t, table
        catalog.drop_table(ident_t)  # forgets the entry only; no file is deleted
    if latest is None:
        return catalog, ident_t, None
    return catalog, ident_t, catalog.register_table(ident_t, latest)


def _same_file(a: str, b: str) -> bool:
    la, lb = paths.local_path(a), paths.local_path(b)
    if la is not None and lb is not None:
        return os.path.abspath(la) == os.path.abspath(lb)
    return a == b
