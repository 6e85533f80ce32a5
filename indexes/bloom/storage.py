"""The stored form of a Bloom index: one Arrow table, one row per location.

==============  ===================================================================
``location``    string; rows sorted by it
``num_bits``    int64 bits of the filter (a multiple of 64; 0 = no non-null keys)
``num_hashes``  int32 probes per key
``keys``        int64 distinct keys put in the filter (after deltas an upper bound:
                a key added again, or removed, still counts)
``rows``        int64 rows at the location
``null_count``  int64 rows with a null key (IS NULL is answered from it)
``bits``        large_binary, ``num_bits / 8`` bytes (see :mod:`filters`)
``as_built``    bool: the filter is the one a build of the location's rows writes
                (false once a delta has changed it: still correct, but sized for
                the keys it first held, with removed keys' bits kept; compaction
                builds those again). Optional: an index stored without the
                column reads as every filter changed.
==============  ===================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.bloom.hashing import HASH_SCHEME
from lakesieve.sdk import BuiltIndex

FORMAT_VERSION = 1

FILTERS_SCHEMA = pa.schema(
    [
        pa.field("location", pa.string(), nullable=False),
        pa.field("num_bits", pa.int64(), nullable=False),
        pa.field("num_hashes", pa.int32(), nullable=False),
        pa.field("keys", pa.int64(), nullable=False),
        pa.field("rows", pa.int64(), nullable=False),
        pa.field("null_count", pa.int64(), nullable=False),
        pa.field("bits", pa.large_binary(), nullable=False),
        pa.field("as_built", pa.bool_(), nullable=False),
    ]
)

#: Spark DDL of the per-location rows the build computes (mirrors the table).
FILTER_ROW_DDL = (
    "location string, num_bits bigint, num_hashes int, keys bigint, rows bigint, "
    "null_count bigint, bits binary"
)


def to_built(
    key_type: str,
    params: Mapping[str, Any],
    locations: Sequence[str],
    num_bits: np.ndarray,
    num_hashes: np.ndarray,
    keys: np.ndarray,
    rows: np.ndarray,
    nulls: np.ndarray,
    bits: Sequence[bytes],
    as_built: np.ndarray | None = None,
) -> BuiltIndex:
    """Assemble the stored table and meta; rows are sorted by location here.

    ``as_built`` says per location whether its filter is the one a build
    writes (every one when not given: a build's rows).
    """
    sort = np.argsort(np.asarray(list(locations), dtype=object), kind="stable")
    num_bits = np.asarray(num_bits, dtype=np.int64)[sort]
    rows = np.asarray(rows, dtype=np.int64)[sort]
    nulls = np.asarray(nulls, dtype=np.int64)[sort]
    keys = np.asarray(keys, dtype=np.int64)[sort]
    built = (
        np.ones(len(sort), dtype=bool)
        if as_built is None
        else np.asarray(as_built, dtype=bool)[sort]
    )
    table = pa.table(
        [
            pa.array([locations[i] for i in sort], pa.string()),
            pa.array(num_bits, pa.int64()),
            pa.array(np.asarray(num_hashes, dtype=np.int32)[sort], pa.int32()),
            pa.array(keys, pa.int64()),
            pa.array(rows, pa.int64()),
            pa.array(nulls, pa.int64()),
            pa.array([bits[i] for i in sort], pa.large_binary()),
            pa.array(built, pa.bool_()),
        ],
        schema=FILTERS_SCHEMA,
    )
    meta = {
        "format_version": FORMAT_VERSION,
        "key_type": key_type,
        "params": dict(params),
        "hash": HASH_SCHEME,
        "locations": len(sort),
        "rows": int(rows.sum()),
        "null_rows": int(nulls.sum()),
        "keys": int(keys.sum()),
        "bits": int(num_bits.sum()),
    }
    return BuiltIndex(files={"filters": table}, meta=meta)
