"""Deletion vectors of a Delta table version, as deleted row positions per data file.

delta-rs (delta-kernel) decodes every deletion vector of the version it was
opened at, inline or stored in files, into a keep-mask per data file; this
module turns those masks into the sorted positions of the deleted rows, keyed
by the file's location (its path relative to the table root). A mask shorter
than the file keeps the rows past its end, as the protocol says.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable
from lakesieve.plugins.delta import tables
from lakesieve.sdk import paths

_CACHE_SIZE = 8
_cache: OrderedDict[tuple[str, int], dict[str, np.ndarray]] = OrderedDict()
_lock = threading.Lock()


def deleted_rows(dt: DeltaTable) -> dict[str, np.ndarray]:
    """Deleted row positions (sorted ``int64``) per location, for files with a deletion vector.

    Args:
        dt: the table, opened at the version to read.
    """
    if not tables.has_deletion_vectors_feature(dt):
        return {}
    key = (dt.table_uri, dt.version())
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    out: dict[str, np.ndarray] = {}
    for batch in dt.deletion_vectors():
        rb = pa.record_batch(batch)
        file_paths = rb.column(rb.schema.get_field_index("filepath")).to_pylist()
        masks = rb.column(rb.schema.get_field_index("selection_vector"))
        for i, path in enumerate(file_paths):
            keep = np.asarray(masks[i].values.to_numpy(zero_copy_only=False), dtype=bool)
            location = paths.relative_to(dt.table_uri, path)
            out[location] = np.flatnonzero(~keep).astype(np.int64)
    with _lock:
        _cache[key] = out
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return out
