"""An exact index of key-range partitions, loaded one partition at a time (formats 2 and 3).

Loading reads the manifest only (:mod:`lakesieve.indexes.exact.partitions`).
A query picks the partitions whose ``[low, high]`` key range can hold one of
its keys, reads those (through the state's on-demand reader, which checks
each file's checksum), and asks each loaded partition — an
:class:`~lakesieve.indexes.exact.lookup.ExactIndex` of its own — for its
exact answer; the union is the index's answer. Loaded partitions stay in a
least-recently-used cache bounded by :data:`CACHE_BYTES` of stored bytes.

A partition that is missing, fails its checksum, or is inconsistent raises
:class:`~lakesieve.sdk.IndexCorruptError` from the lookup: the planner
then reads every location and warns, never answering from half an index.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.exact.lookup import ExactFormatError, ExactIndex, check
from lakesieve.indexes.exact.params import INDEX_TYPE
from lakesieve.indexes.exact.spark_files import partition_from_codes
from lakesieve.sdk import IndexCorruptError, KeyQuery, LookupResult
from lakesieve.sdk.index_files import ON_DEMAND_PREFIX
from lakesieve.sdk.keys import KeyOrder, LocationCodes

#: Stored bytes of partitions kept loaded at most (one partition is always kept).
CACHE_BYTES = 256 * 1024 * 1024


def partition_index(order: KeyOrder, table: pa.Table) -> ExactIndex:
    """Decode and check one partition file into an :class:`ExactIndex` of its pairs.

    Raises:
        ExactFormatError: columns are missing or of the wrong type, keys are
            out of order, a location or count is invalid.
    """
    check(set(table.column_names) >= {"key", "location", "count"}, "partition lacks its columns")
    keys = table.column("key").combine_chunks()
    locs = table.column("location").combine_chunks()
    if not pa.types.is_dictionary(locs.type):
        check(pa.types.is_string(locs.type), "partition locations are not strings")
        locs = locs.dictionary_encode()
    check(pa.types.is_string(locs.type.value_type), "partition locations are not strings")
    check(pa.types.is_integer(table.schema.field("count").type), "partition counts are not ints")
    counts = np.asarray(table.column("count").combine_chunks().fill_null(0), dtype=np.int64)
    indices = locs.indices
    check(indices.null_count == 0 and locs.dictionary.null_count == 0, "a null location")
    ids = np.asarray(indices, dtype=np.int64)
    names = np.array(locs.dictionary.to_pylist(), dtype=object)
    check(bool(np.all((ids >= 0) & (ids < len(names)))), "an entry names an unknown location")
    check(bool(np.all(counts > 0)), "a count is not positive")
    is_null = np.asarray(keys.is_null(), dtype=bool)
    valid = np.flatnonzero(~is_null)
    k = keys.take(pa.array(valid, pa.int64()))
    try:
        forms = order.array(k)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        raise ExactFormatError(
            f"exact index keys do not fit type {order.key_type!r}: {exc}"
        ) from exc
    if len(forms) > 1:
        check(bool(np.all(np.asarray(forms[1:] >= forms[:-1], dtype=bool))), "keys are not sorted")
    starts = np.flatnonzero(order.changes(forms)) if len(forms) else np.zeros(0, np.int64)
    return ExactIndex(
        order=order,
        locations=names,
        keys=k.take(pa.array(starts, pa.int64())),
        forms=forms[starts],
        first_entry=np.append(starts, len(k)).astype(np.int64),
        entry_loc=ids[valid].astype(np.int32),
        entry_count=counts[valid],
        null_loc=ids[is_null].astype(np.int32),
        null_count=counts[is_null],
    )


@dataclass
class PartitionedExactIndex:
    """A loaded exact index of format 2: the manifest, and partitions read as queries need them.

    Attributes:
        order: comparison forms of the key type.
        params: build parameters.
        manifest: the manifest table.
        files: partition file names, in manifest order.
        low: comparison form of each partition's least key (filler where ``has_keys`` is false).
        high: comparison form of each partition's greatest key.
        has_keys: whether each partition holds a non-null key.
        null_rows: rows with a null key per partition.
        size_bytes: bytes of the manifest and every partition file.
        read: reads a partition's table by file name.
        meta: the stored meta dict.
        codes: the locations' codes of a format-3 index, whose partitions
            hold raw ``key``, ``code`` rows (laid out when read); ``None``
            for format 2.
    """

    order: KeyOrder
    params: dict[str, Any]
    manifest: pa.Table
    files: list[str]
    low: np.ndarray
    high: np.ndarray
    has_keys: np.ndarray
    null_rows: np.ndarray
    size_bytes: int
    read: Callable[[str], pa.Table]
    meta: dict[str, Any] = field(default_factory=dict)
    codes: LocationCodes | None = None
    _cache: OrderedDict[int, ExactIndex] = field(default_factory=OrderedDict)
    _cached_bytes: int = 0

    @property
    def key_type(self) -> str:
        """Spark type string of the indexed column."""
        return self.order.key_type

    # ------------------------------------------------------------ partitions

    def _decode(self, name: str) -> ExactIndex:
        table = self.read(name)
        if self.codes is not None:
            try:
                table = partition_from_codes(self.order, table, self.codes)
            except ValueError as exc:
                raise ExactFormatError(str(exc)) from exc
        return partition_index(self.order, table)

    def partition(self, i: int) -> ExactIndex:
        """Partition ``i``, loaded (or from the cache).

        Raises:
            IndexCorruptError: the file is missing, fails its checksum, does
                not decode, or holds keys outside its manifest range.
        """
        hit = self._cache.get(i)
        if hit is not None:
            self._cache.move_to_end(i)
            return hit
        name = self.files[i]
        try:
            part = self._decode(name)
            if len(part.forms):
                inside = bool(self.has_keys[i]) and part.forms[0] >= self.low[i]
                check(inside and part.forms[-1] <= self.high[i], "keys outside the manifest range")
            else:
                check(not self.has_keys[i], "a partition lacks the keys its manifest lists")
            check(int(part.null_count.sum()) == int(self.null_rows[i]), "null rows differ")
        except (ExactFormatError, TypeError, pa.ArrowException) as exc:
            raise IndexCorruptError(f"exact index partition {name!r} is unusable: {exc}") from exc
        size = int(self.manifest.column("size_bytes")[i].as_py())
        self._cache[i] = part
        self._cached_bytes += size
        while len(self._cache) > 1 and self._cached_bytes > CACHE_BYTES:
            old, _ = self._cache.popitem(last=False)
            self._cached_bytes -= int(self.manifest.column("size_bytes")[old].as_py())
        return part

    def partitions(self) -> Iterator[ExactIndex]:
        """Every partition in key order, read one at a time (not kept in the cache)."""
        for i, name in enumerate(self.files):
            cached = self._cache.get(i)
            yield cached if cached is not None else self._decode(name)

    def _holding(self, wanted: np.ndarray) -> list[int]:
        if len(wanted) == 0:
            return []
        first = np.searchsorted(wanted, self.low, side="left")
        stop = np.searchsorted(wanted, self.high, side="right")
        return [int(i) for i in np.flatnonzero(self.has_keys & (stop > first))]

    def _bound(self, form: Any) -> np.ndarray:
        # a one-element array of the forms' dtype: numpy would turn a bare bytes
        # scalar into its fixed-width type, which drops trailing zero bytes
        out = np.empty(1, dtype=self.low.dtype)
        out[0] = form
        return out

    def _overlapping(self, query: KeyQuery) -> list[int]:
        keep = self.has_keys.copy()
        if query.low is not None:
            bound = self._bound(self.order.query(query.low).lower_bound())
            keep &= np.asarray(self.high >= bound, dtype=bool)
        if query.high is not None:
            bound = self._bound(self.order.query(query.high).upper_bound())
            keep &= np.asarray(self.low <= bound, dtype=bool)
        return [int(i) for i in np.flatnonzero(keep)]

    # --------------------------------------------------------------- queries

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer a key query with exactly the matching locations (a superset for inexact values)."""
        try:
            found: set[str] = set()
            if query.kind == "is_null":
                for at in np.flatnonzero(self.null_rows > 0).tolist():
                    found |= self.partition(at).null_locations()
                return LookupResult(frozenset(found))
            if query.kind == "points":
                forms = [
                    f for v in query.values if v is not None for f in self.order.query(v).points()
                ]
                if not forms:
                    return LookupResult(frozenset())
                for p in self._holding(self.order.sorted_unique(forms)):
                    found |= self.partition(p).points(forms)
                return LookupResult(frozenset(found))
            if query.kind == "range":
                for r in self._overlapping(query):
                    found |= self.partition(r).key_range(query)
                return LookupResult(frozenset(found))
        except (TypeError, ValueError, ArithmeticError) as exc:
            return LookupResult.all(f"exact index cannot compare the query's values: {exc}")
        return LookupResult.all(f"exact index does not answer {query.kind!r} queries")

    # -------------------------------------------------------------- describe

    def count_distinct_keys(self) -> int:
        """Distinct non-null keys, counted by reading every partition (ranges never share a key).

        Ranges of format 3 are Spark's range partitions, which never split
        equal keys (in Spark's ordering) between two ranges.
        """
        return sum(len(part.forms) for part in self.partitions())

    def describe(self) -> dict[str, Any]:
        """Size, entry counts, partitions and parameters (from the manifest; nothing is read)."""
        m = self.manifest

        def total(name: str) -> int:
            return int(np.asarray(m.column(name), dtype=np.int64).sum())

        return {
            "index_type": INDEX_TYPE,
            "key_type": self.key_type,
            "size_bytes": self.size_bytes,
            # format 3 does not count distinct keys at build time (count_distinct_keys does)
            "distinct_keys": (
                None
                if self.codes is not None
                else int(self.meta.get("distinct_keys", total("keys")))
            ),
            "entries": total("entries"),
            "locations": int(self.meta.get("locations", 0)),
            "partitions": len(self.files),
            "rows": total("rows"),
            "null_rows": total("null_rows"),
            "params": dict(self.params),
        }


def load_partitioned(
    order: KeyOrder,
    params: dict[str, Any],
    meta: dict[str, Any],
    manifest: pa.Table,
    manifest_bytes: int,
    read: Callable[[str], pa.Table],
    codes: LocationCodes | None = None,
) -> PartitionedExactIndex:
    """Check a format-2 or format-3 manifest and wrap it for lookups (``codes``: format 3's).

    Raises:
        ExactFormatError: the manifest lacks columns, names a bad file, or its ranges are invalid.
    """
    need = {"file", "low", "high", "keys", "entries", "rows", "null_rows", "size_bytes"}
    check(set(manifest.column_names) >= need, "manifest lacks its columns")
    files = manifest.column("file").to_pylist()
    check(all(isinstance(f, str) and f.startswith(ON_DEMAND_PREFIX) for f in files), "file name")
    check(len(set(files)) == len(files), "a partition file is listed twice")
    ints = {}
    for name in ("keys", "entries", "rows", "null_rows", "size_bytes"):
        col = manifest.column(name)
        check(pa.types.is_integer(col.type) and col.null_count == 0, f"manifest column {name!r}")
        ints[name] = np.asarray(col.combine_chunks(), dtype=np.int64)
        check(bool(np.all(ints[name] >= 0)), f"manifest column {name!r} is negative")
    low_col = manifest.column("low").combine_chunks()
    high_col = manifest.column("high").combine_chunks()
    has_keys = ~np.asarray(low_col.is_null(), dtype=bool)
    check(bool(np.array_equal(has_keys, ~np.asarray(high_col.is_null(), dtype=bool))), "bounds")
    check(bool(np.array_equal(has_keys, ints["keys"] > 0)), "bounds and key counts disagree")
    try:
        low, high = order.array(low_col), order.array(high_col)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        raise ExactFormatError(
            f"exact index keys do not fit type {order.key_type!r}: {exc}"
        ) from exc
    check(
        bool(np.all(np.asarray(low <= high, dtype=bool) | ~has_keys)),
        "a range ends before it starts",
    )
    return PartitionedExactIndex(
        order=order,
        params=params,
        manifest=manifest,
        files=files,
        low=low,
        high=high,
        has_keys=has_keys,
        null_rows=ints["null_rows"],
        size_bytes=manifest_bytes + int(ints["size_bytes"].sum()),
        read=read,
        meta=meta,
        codes=codes,
    )
