"""Opening Delta tables through delta-rs, and checking that lakesieve can read them.

``TableRef.options`` keys starting with ``storage.`` are passed to delta-rs as
storage options with the prefix removed (``storage.AWS_REGION`` ->
``AWS_REGION``).

Reader features lakesieve honours: deletion vectors (applied on read),
``timestampNtz``, ``v2Checkpoint``, ``vacuumProtocolCheck``, ``typeWidening``
(Spark's Parquet reader widens), and column mapping (by name or id) of
top-level columns, read by their physical names. Any other reader feature,
or column mapping of fields nested in structs, makes the table refused with
:class:`~lakesieve.plugins.delta.errors.DeltaFeatureError` rather than risk
returning wrong rows.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping

from deltalake import DeltaTable
from lakesieve.plugins.delta.errors import DeltaFeatureError
from lakesieve.sdk import InstantNotFoundError, TableNotFoundError, TableRef, paths
from lakesieve.sdk.paths import storage_of

#: table property (``configuration`` of the table's metaData) holding the record
#: key columns, comma-separated, so that later writes need not repeat them
RECORD_KEY_PROPERTY = "lakesieve.recordKey"

#: table property holding the file layout of a bucketed table (bucket column,
#: number of buckets, rule and range boundaries, as JSON), so that later writes
#: keep it (:class:`~lakesieve.sdk.writing.BucketLayout`)
LAYOUT_PROPERTY = "lakesieve.bucketLayout"

#: Reader features whose effect lakesieve honours.
SUPPORTED_READER_FEATURES = frozenset(
    {
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "columnMapping",
    }
)

_CACHE_SIZE = 8
_cache: OrderedDict[
    tuple[str, tuple[tuple[str, str], ...], int, tuple[int, int] | None], DeltaTable
] = OrderedDict()
_cache_lock = threading.Lock()


def storage_options(options: Mapping[str, str] | None) -> dict[str, str] | None:
    """delta-rs storage options from a table's lakesieve options (``storage.`` keys)."""
    return storage_of(options) or None


def parse_version(instant: str, table_path: str) -> int:
    """The Delta version an instant id names.

    Raises:
        InstantNotFoundError: ``instant`` is not a non-negative integer.
    """
    text = str(instant).strip()
    if not text.isdigit():
        raise InstantNotFoundError(
            f"instant {instant!r} is not a version of Delta table {table_path} "
            "(versions are whole numbers 0, 1, 2...)"
        )
    return int(text)


def _commit_stamp(path: str, version: int | None) -> tuple[int, int] | None:
    """Inode and modification time of a local table's commit file of ``version``.

    Part of the cache key: a table removed and written again at the same path
    has the same version numbers but new commit files.
    """
    local = paths.local_path(path)
    if version is None or local is None:
        return None
    try:
        found = os.stat(os.path.join(local, "_delta_log", f"{version:020d}.json"))
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


def open_table(table: TableRef, instant: str | None = None) -> DeltaTable:
    """The Delta table as of ``instant`` (a version; latest when ``None``).

    Tables at a fixed version are cached per process (their answer cannot change;
    a local table's key holds its commit file's inode and time, see :func:`_commit_stamp`).

    Raises:
        TableNotFoundError: no Delta table at the path.
        InstantNotFoundError: the version does not exist (or was cleaned up).
    """
    opts = storage_options(table.options)
    version = None if instant is None else parse_version(instant, table.path)
    key = (
        table.path,
        tuple(sorted((opts or {}).items())),
        version if version is not None else -1,
        _commit_stamp(table.path, version),
    )
    if version is not None:
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    try:
        dt = DeltaTable(table.path, version=version, storage_options=opts)
    except Exception as exc:
        if not DeltaTable.is_deltatable(table.path, storage_options=opts):
            raise TableNotFoundError(f"no Delta table at {table.path!r}: {exc}") from exc
        if version is not None:
            raise InstantNotFoundError(
                f"version {version} of Delta table {table.path} cannot be loaded "
                f"(not committed, or its log was cleaned up): {exc}"
            ) from exc
        raise
    if version is not None:
        with _cache_lock:
            _cache[key] = dt
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return dt


def check_readable(dt: DeltaTable, table_path: str) -> None:
    """Refuse a table whose reader features lakesieve cannot honour.

    Raises:
        DeltaFeatureError: naming the table and the feature.
    """
    protocol = dt.protocol()
    features = set(protocol.reader_features or ())
    if '"variant"' not in dt.schema().to_json():  # the feature is harmless without variant columns
        features -= {"variantType", "variantType-preview"}
    unknown = sorted(features - SUPPORTED_READER_FEATURES)
    if unknown:
        raise DeltaFeatureError(
            f"Delta table {table_path} needs reader feature(s) {', '.join(unknown)}, "
            "which lakesieve cannot honour; refusing to read it"
        )
    if protocol.min_reader_version > 3:
        raise DeltaFeatureError(
            f"Delta table {table_path} needs reader version {protocol.min_reader_version}; "
            "lakesieve reads up to 3"
        )
    if column_mapping_mode(dt) != "none":
        from lakesieve.plugins.delta.schema import nested_mapped_column

        nested = nested_mapped_column(dt)
        if nested is not None:
            raise DeltaFeatureError(
                f"Delta table {table_path} maps the nested fields of column {nested!r} to "
                "physical names (column mapping); lakesieve maps top-level columns only; "
                "refusing to read it"
            )


def column_mapping_mode(dt: DeltaTable) -> str:
    """The table's column mapping mode: ``none``, ``name`` or ``id``."""
    return dt.metadata().configuration.get("delta.columnMapping.mode", "none") or "none"


def has_deletion_vectors_feature(dt: DeltaTable) -> bool:
    """Whether the table's protocol allows deletion vectors (only then are they looked up)."""
    return "deletionVectors" in set(dt.protocol().reader_features or ())


def stored_record_key(dt: DeltaTable) -> tuple[str, ...]:
    """The record key columns kept in the table property ``lakesieve.recordKey`` (may be empty)."""
    raw = dt.metadata().configuration.get(RECORD_KEY_PROPERTY) or ""
    return tuple(c.strip() for c in raw.split(",") if c.strip())


def stored_layout(dt: DeltaTable) -> str | None:
    """The file layout kept in the table property ``lakesieve.bucketLayout`` (``None``: none)."""
    return dt.metadata().configuration.get(LAYOUT_PROPERTY) or None
