"""Loading a stored Bloom index and answering key queries (driver-side, numpy only).

Points (``=`` and ``IN``) are hashed exactly as the build hashed the column
(:mod:`hashing`) and probed against every location's filter at once
(:func:`~lakesieve.indexes.bloom.filters.probe_locations`). IS NULL is
answered exactly from per-location null counts. Ranges get
``LookupResult.all()``: a Bloom filter knows nothing of order.

The filters' bytes are used in place: the stored ``large_binary`` column's
data buffer is the concatenation of every filter, its offsets say where
each one starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.bloom.filters import MAX_HASHES, probe_locations
from lakesieve.indexes.bloom.hashing import HASH_SCHEME, value_hashes
from lakesieve.indexes.bloom.params import INDEX_TYPE
from lakesieve.indexes.bloom.storage import FILTERS_SCHEMA, FORMAT_VERSION
from lakesieve.sdk import BuiltIndex, KeyQuery, LookupResult
from lakesieve.sdk.index_files import stored_size
from lakesieve.sdk.keys import KeyOrder, unique_ints


class BloomFormatError(ValueError):
    """A stored Bloom index does not decode or is inconsistent."""


@dataclass
class BloomIndex:
    """A loaded Bloom index.

    Attributes:
        order: the key type's forms (for hashing query values).
        params: build parameters.
        filters: the stored table (sorted by location).
        locations: location names (object array).
        num_bits: bits per filter.
        num_hashes: probes per filter.
        keys: distinct keys put in each filter (an upper bound after deltas).
        rows: rows per location.
        null_count: rows with a null key per location.
        as_built: per location, whether its filter is the one a build writes
            (false once a delta changed it).
        byte_offset: where each filter starts in ``data``.
        data: all filters' bytes plus one spare byte.
        size_bytes: bytes of the stored Arrow IPC file.
        meta: the stored meta dict.
    """

    order: KeyOrder
    params: dict[str, Any]
    filters: pa.Table
    locations: np.ndarray
    num_bits: np.ndarray
    num_hashes: np.ndarray
    keys: np.ndarray
    rows: np.ndarray
    null_count: np.ndarray
    as_built: np.ndarray
    byte_offset: np.ndarray
    data: np.ndarray
    size_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key_type(self) -> str:
        """Spark type string of the indexed column."""
        return self.order.key_type

    def filter_bytes(self, i: int) -> bytes:
        """The bytes of filter ``i``."""
        start = int(self.byte_offset[i])
        return bytes(self.data[start : start + int(self.num_bits[i]) // 8].tobytes())

    def points(self, values: list[Any]) -> frozenset[str]:
        """Locations whose filter may hold one of ``values``."""
        hashes = [h for v in values for h in value_hashes(v, self.order)]
        wanted = unique_ints(np.array(hashes, dtype=np.uint64))
        hit = probe_locations(wanted, self.num_bits, self.num_hashes, self.byte_offset, self.data)
        return frozenset(self.locations[hit].tolist())

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer ``=``/IN and IS NULL; every other query gets ``LookupResult.all()``."""
        if query.kind == "is_null":
            return LookupResult(frozenset(self.locations[self.null_count > 0].tolist()))
        if query.kind == "points":
            try:
                return LookupResult(self.points([v for v in query.values if v is not None]))
            except (TypeError, ValueError, ArithmeticError) as exc:
                return LookupResult.all(f"bloom index cannot hash the query's values: {exc}")
        return LookupResult.all("bloom filters answer only =, IN and IS NULL, not ranges")

    def describe(self) -> dict[str, Any]:
        """Size, counts, the bits' fill and the false-positive rate it implies."""
        with_filter = self.num_bits > 0
        ones = np.zeros(len(self.locations), np.int64)
        if len(self.data) > 1:
            per_byte = np.bitwise_count(self.data[:-1]).astype(np.int64)
            running = np.concatenate([[0], np.cumsum(per_byte)])
            ends = self.byte_offset + self.num_bits // 8
            ones = running[ends] - running[self.byte_offset]
        fill = np.where(with_filter, ones / np.maximum(self.num_bits, 1), 0.0)
        est = np.where(with_filter, fill**self.num_hashes, 0.0)
        keys = int(self.keys.sum())
        return {
            "index_type": INDEX_TYPE,
            "key_type": self.key_type,
            "size_bytes": self.size_bytes,
            "hash": self.meta.get("hash", HASH_SCHEME),
            "entries": len(self.locations),
            "locations": len(self.locations),
            "filters": int(with_filter.sum()),
            "filter_bits": int(self.num_bits.sum()),
            "keys": keys,
            "bits_per_key": round(float(self.num_bits.sum()) / keys, 3) if keys else 0.0,
            "estimated_fpp": round(float(est[with_filter].mean()), 6) if with_filter.any() else 0.0,
            "null_locations": int((self.null_count > 0).sum()),
            "rows": int(self.rows.sum()),
            "null_rows": int(self.null_count.sum()),
            "params": dict(self.params),
        }


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise BloomFormatError(f"bloom index is inconsistent: {what}")


def load_index(built: BuiltIndex) -> BloomIndex:
    """Decode and check a stored Bloom index.

    Raises:
        BloomFormatError: the file is missing or malformed, it was hashed
            with another scheme, or a filter's size disagrees with its bits.
        UnsupportedKeyTypeError: the stored key type is not supported.
    """
    meta = dict(built.meta or {})
    _check(meta.get("format_version") == FORMAT_VERSION, f"format {meta.get('format_version')!r}")
    _check(meta.get("hash") == HASH_SCHEME, f"hash scheme {meta.get('hash')!r}")
    key_type = meta.get("key_type")
    _check(isinstance(key_type, str), "no key type")
    order = KeyOrder.of(str(key_type), INDEX_TYPE)
    params = meta.get("params") or {}
    _check(isinstance(params, dict), "params is not a dict")
    table = built.files.get("filters")
    if not isinstance(table, pa.Table):
        raise BloomFormatError("bloom index file 'filters' is missing")
    if "as_built" not in table.column_names:
        # stored before filters said whether a delta changed them: as if every one had
        table = table.append_column("as_built", pa.array(np.zeros(table.num_rows, bool)))
    try:
        table = table.select(FILTERS_SCHEMA.names).cast(FILTERS_SCHEMA)
    except (KeyError, pa.ArrowException) as exc:
        raise BloomFormatError(f"bloom index file 'filters' has the wrong columns: {exc}") from exc

    def ints(name: str) -> np.ndarray:
        col = table.column(name)
        _check(col.null_count == 0, f"column {name!r} has nulls")
        return np.asarray(col.combine_chunks(), dtype=np.int64)

    locations = np.array(table.column("location").to_pylist(), dtype=object)
    _check(None not in locations.tolist(), "a null location")
    _check(len(set(locations.tolist())) == len(locations), "a location appears twice")
    num_bits, num_hashes = ints("num_bits"), ints("num_hashes")
    rows, nulls, keys = ints("rows"), ints("null_count"), ints("keys")
    as_built_col = table.column("as_built")
    _check(as_built_col.null_count == 0, "column 'as_built' has nulls")
    as_built = np.asarray(as_built_col.combine_chunks(), dtype=bool)
    _check(bool(np.all((num_bits >= 0) & (num_bits % 64 == 0))), "bits not a multiple of 64")
    _check(
        bool(np.all((num_bits == 0) | ((num_hashes >= 1) & (num_hashes <= MAX_HASHES)))),
        "probes out of range",
    )
    _check(bool(np.all((nulls >= 0) & (nulls <= rows))), "null counts exceed rows")
    bits = table.column("bits").combine_chunks()
    _check(bits.null_count == 0, "a null filter")
    buffers = bits.buffers()
    n = len(bits)
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[bits.offset : bits.offset + n + 1]
    _check(
        bool(np.all(np.diff(offsets) * 8 == num_bits)), "a filter's bytes disagree with its bits"
    )
    raw = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    base = int(offsets[0]) if n else 0
    data = np.concatenate([raw[base : int(offsets[-1]) if n else base], np.zeros(1, np.uint8)])
    return BloomIndex(
        order=order,
        params=dict(params),
        filters=table,
        locations=locations,
        num_bits=num_bits,
        num_hashes=num_hashes.astype(np.int32),
        keys=keys,
        rows=rows,
        null_count=nulls,
        as_built=as_built,
        byte_offset=(offsets[:-1] - base).astype(np.int64),
        data=data,
        size_bytes=stored_size(built.files),
        meta=meta,
    )
