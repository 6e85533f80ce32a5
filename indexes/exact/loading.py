"""Loading a stored exact index of either format.

Format 1 (:mod:`lakesieve.indexes.exact.storage`) holds every pair in four
files read at load; format 2 (:mod:`lakesieve.indexes.exact.partitions`)
holds a manifest read at load and key-range partitions read when a query
needs them; format 3 (:mod:`lakesieve.indexes.exact.spark_files`) likewise,
with partitions of raw rows that Spark wrote, and a ``locations`` file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lakesieve.files.ipc_files import ipc_size
from lakesieve.indexes.exact.lookup import ExactFormatError, ExactIndex, check, load_format1
from lakesieve.indexes.exact.params import INDEX_TYPE
from lakesieve.indexes.exact.partitioned import PartitionedExactIndex, load_partitioned
from lakesieve.indexes.exact.spark_files import SPARK_FILES_FORMAT, codes_of_table
from lakesieve.indexes.exact.storage import FORMAT_VERSION, PARTITIONED_FORMAT
from lakesieve.keys.key_order import KeyOrder
from lakesieve.model import BuiltIndex

#: A loaded exact index of either format.
AnyExactIndex = ExactIndex | PartitionedExactIndex


def load_index(built: BuiltIndex) -> AnyExactIndex:
    """Decode and check a stored exact index (partitions of format 2 are read later, on demand).

    Raises:
        ExactFormatError: a file is missing or malformed, or the format is unknown.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    version = meta.get("format_version")
    if version == FORMAT_VERSION:
        return load_format1(built)
    check(version in (PARTITIONED_FORMAT, SPARK_FILES_FORMAT), f"format {version!r}")
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


def all_pairs(index: Any) -> tuple[list[pa.Array], list[pa.Array], list[Any]]:
    """Every ``(key, location, count)`` row of a loaded index, one chunk per partition."""
    parts = index.partitions() if isinstance(index, PartitionedExactIndex) else [index]
    keys, locations, counts = [], [], []
    for part in parts:
        k, loc, cnt = part.pairs()
        keys.append(k)
        locations.append(loc)
        counts.append(cnt)
    return keys, locations, counts
