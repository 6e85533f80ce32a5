"""Loading a stored exact index of format 2 or 3.

Format 2 (:mod:`lakesieve.indexes.exact.partitions`) holds a manifest read
at load and key-range partitions read when a query needs them; format 3
(:mod:`lakesieve.indexes.exact.spark_files`) likewise, with partitions of raw
rows that Spark wrote, and a ``locations`` file. A Spark build writes format
3 where it knows every location and ORC stores the key type exactly, format
2 otherwise; in-process builds and compaction write format 2. An index
stored in any other format version is refused with an :class:`~lakesieve.indexes.exact.lookup.ExactFormatError` naming the
version (the framework then reports the index unreadable, does not use it
and reads every location).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lakesieve.indexes.exact.lookup import ExactFormatError, check
from lakesieve.indexes.exact.params import INDEX_TYPE
from lakesieve.indexes.exact.partitioned import PartitionedExactIndex, load_partitioned
from lakesieve.indexes.exact.partitions import PARTITIONED_FORMAT
from lakesieve.indexes.exact.spark_files import SPARK_FILES_FORMAT, codes_of_table
from lakesieve.sdk import BuiltIndex
from lakesieve.sdk.index_files import ipc_size
from lakesieve.sdk.keys import KeyOrder


def load_index(built: BuiltIndex) -> PartitionedExactIndex:
    """Decode and check a stored exact index (its partitions are read later, on demand).

    Raises:
        ExactFormatError: a file is missing or malformed, or the format
            version is not 2 or 3 (the message names it).
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    version = meta.get("format_version")
    if version not in (PARTITIONED_FORMAT, SPARK_FILES_FORMAT):
        raise ExactFormatError(
            f"exact index is stored in format version {version!r}, which this version of "
            f"lakesieve does not read (it reads formats {PARTITIONED_FORMAT} and "
            f"{SPARK_FILES_FORMAT}); rebuild the index"
        )
    key_type = meta.get("key_type")
    check(isinstance(key_type, str), "no key type")
    order = KeyOrder.of(str(key_type), INDEX_TYPE)
    params = meta.get("params") or {}
    check(isinstance(params, dict), "params is not a dict")
    manifest = built.files.get("manifest")
    if not isinstance(manifest, pa.Table):
        raise ExactFormatError("exact index file 'manifest' is missing")
    in_memory = dict(built.files)
    fetch = built.fetch

    def read(name: str) -> pa.Table:
        table = in_memory.get(name)
        if table is not None:
            return table
        if fetch is None:
            raise ExactFormatError(f"exact index file {name!r} is missing")
        return fetch(name)

    codes = None
    size = ipc_size(manifest)
    if version == SPARK_FILES_FORMAT:
        located = built.files.get("locations")
        if not isinstance(located, pa.Table):
            raise ExactFormatError("exact index file 'locations' is missing")
        try:
            codes = codes_of_table(located)
        except ValueError as exc:
            raise ExactFormatError(f"exact index file 'locations' is unusable: {exc}") from exc
        size += ipc_size(located)
    return load_partitioned(order, dict(params), meta, manifest, size, read, codes)


def all_pairs(index: PartitionedExactIndex) -> tuple[list[pa.Array], list[pa.Array], list[Any]]:
    """Every ``(key, location, count)`` row of a loaded index, one chunk per partition."""
    keys, locations, counts = [], [], []
    for part in index.partitions():
        k, loc, cnt = part.pairs()
        keys.append(k)
        locations.append(loc)
        counts.append(cnt)
    return keys, locations, counts
